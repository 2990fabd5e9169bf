#!/usr/bin/env python3
"""Compiles and links every C snippet (```c fences) of the given Markdown files against the public header and
libpsdp, so that a renamed constant or function in a README cannot go unnoticed. No snippet is skipped. Each
becomes the body of a function of one C99 translation unit, after readme_snippets_prelude.h, which declares the
variables the snippets use without declaring them; #line directives make errors name the Markdown file and line.

usage: check_readme_snippets.py CC INCLUDE_DIR LIBRARY PRELUDE MARKDOWN..."""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

FENCE = re.compile(r"^(\s*)```(\w*)\s*$")


def snippets(path):
    """Yields (first line number, text) of every ```c block, its fence's indentation removed."""
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or m.group(2) != "c":
            i += 1
            continue
        indent = len(m.group(1))
        body = []
        i += 1
        while i < len(lines) and not FENCE.match(lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        if i == len(lines):
            sys.exit(f"{path}: a ```c block is never closed")
        yield i - len(body) + 1, "\n".join(body)
        i += 1


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    cc, include_dir, library, prelude = sys.argv[1:5]
    unit = [f'#include "{Path(prelude).resolve()}"', ""]
    count = 0
    for markdown in map(Path, sys.argv[5:]):
        for line, text in snippets(markdown):
            count += 1
            unit += [f"void readme_snippet_{count}(void) {{", f'#line {line} "{markdown}"', text, "}", ""]
    if count == 0:
        sys.exit("no C snippets found: the check would prove nothing")
    unit.append("int main(void) { return 0; }")
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / "readme_snippets.c"
        source.write_text("\n".join(unit) + "\n")
        result = subprocess.run([cc, "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-I", include_dir,
                                 str(source), library, "-o", str(Path(work) / "readme_snippets")],
                                capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stdout + result.stderr)
        sys.exit(f"{count} README C snippets: compiling or linking them failed (above)")
    print(f"{count} README C snippets compile and link")


if __name__ == "__main__":
    main()
