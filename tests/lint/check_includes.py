#!/usr/bin/env python3
"""Checks the include rule of ARCHITECTURE.md and STYLE.md: each room of src/ includes only itself and
the rooms below it, SDK headers such as hwloc's only in the rooms that own them (SDK_HEADERS), and tools, perf
and bindings include only the public header (and header-only RAII helpers, TOOLS_MAY_USE). Prints every violation
and exits 1 if there is any."""
import re
import sys
from pathlib import Path

# The interfaces above the transport: point-to-point messages and peer memory (what the collectives see).
TRANSPORT_INTERFACE = ["transport/transport.h", "transport/peer_memory.h"]
# How peer memory is made (memfd segments mapped through /proc, CMA reads), how peers are watched and what
# they leave to be read when they exit: helpers every backend may share, which know no backend. Nothing above
# transport/ but core and api (which own the transport) names them.
TRANSPORT_SHARED = TRANSPORT_INTERFACE + [
    "transport/peer_liveness.h", "transport/team_transport.h", "transport/process_identity.h",
    "transport/shared_segment.h", "transport/peer_segment_map.h", "transport/cross_memory.h",
    "transport/exit_notes.h"]

# room -> rooms (path prefixes under src/) it may include, itself included.
ALLOWED = {
    "base": ["base/"],
    "transport": ["base/"] + TRANSPORT_SHARED,
    "transport/ucx": ["base/", "transport/ucx/"] + TRANSPORT_SHARED,
    "transport/nccl": ["base/", "transport/nccl/"] + TRANSPORT_SHARED,
    "transport/registry": ["base/", "transport/"],
    "topo": ["base/", "topo/"],
    "coll": ["base/", "coll/"] + TRANSPORT_INTERFACE,
    "shard": ["base/", "shard/"],
    "tune": ["base/", "tune/"],
    "engine": ["base/", "coll/", "shard/", "tune/", "engine/"] + TRANSPORT_INTERFACE,
    "core": ["base/", "topo/", "transport/", "coll/", "shard/", "tune/", "engine/", "core/"],
    "api": ["base/", "topo/", "transport/", "coll/", "shard/", "tune/", "engine/", "core/", "api/"],
}
# Third-party SDK headers (system includes by path prefix) -> the only rooms that may include them, so that
# e.g. hwloc never leaks into the pure-logic rooms (shard, tune) or the engine.
SDK_HEADERS = {
    "hwloc.h": ["topo"],
    "hwloc/": ["topo"],
    "libxml/": ["topo"],
}
# Header-only helpers with no library state that tools may share with src/ instead of copying them.
TOOLS_MAY_USE = {"base/raii.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s+<([^>]+)>')
SOURCES = {".h", ".hpp", ".cc", ".cpp", ".c", ".cu", ".cuh"}


def room_of(rel: str) -> str:
    """The room a file under src/ belongs to: the longest matching folder (or registry file)."""
    if rel.startswith("transport/registry."):
        return "transport/registry"
    for room in sorted(ALLOWED, key=len, reverse=True):
        if rel.startswith(room + "/"):
            return room
    return ""


def check_src(src: Path) -> list:
    problems = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in SOURCES:
            continue
        rel = path.relative_to(src).as_posix()
        room = room_of(rel)
        if not room:
            problems.append(f"src/{rel}: not inside a known room {sorted(ALLOWED)}")
            continue
        for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            problems += check_sdk_include(rel, room, lineno, line)
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            if "/" not in target:
                continue  # a file next to this one (generated or local)
            if not any(target == a or (a.endswith("/") and target.startswith(a)) for a in ALLOWED[room]):
                problems.append(f"src/{rel}:{lineno}: room '{room}' includes \"{target}\" from a room above it")
    return problems


def check_sdk_include(rel: str, room: str, lineno: int, line: str) -> list:
    """A third-party SDK header included outside the rooms that own that SDK."""
    m = SYSTEM_INCLUDE.match(line)
    if not m:
        return []
    for prefix, rooms in SDK_HEADERS.items():
        if m.group(1).startswith(prefix) and room not in rooms:
            return [f"src/{rel}:{lineno}: room '{room}' includes <{m.group(1)}>, which only {rooms} may use"]
    return []


def check_public_only(root: Path, folder: str) -> list:
    problems = []
    base = root / folder
    if not base.exists():
        return problems
    rooms = tuple(r.split("/")[0] + "/" for r in ALLOWED)
    for path in sorted(base.rglob("*")):
        if path.suffix not in SOURCES:
            continue
        for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if m and m.group(1).startswith(rooms) and m.group(1) not in TOOLS_MAY_USE:
                problems.append(f"{path.relative_to(root)}:{lineno}: {folder}/ may use only the public header, "
                                f"not \"{m.group(1)}\"")
    return problems


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
    problems = check_src(root / "src")
    for folder in ("tools", "perf", "bindings"):
        problems += check_public_only(root, folder)
    for p in problems:
        print(p)
    print(f"include rule: {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
