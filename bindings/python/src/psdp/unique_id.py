"""`UniqueId`: the rendezvous of Communicator.init (psdp_unique_id_t), made by `get_unique_id`."""

import ctypes

from ._c_types import UNIQUE_ID_BYTES, UNIQUE_ID_STRING_BYTES, UniqueIdStruct
from ._check import check
from ._library import lib


class UniqueId:
    """One rendezvous: the root's address and a random job secret. Copy it to every rank (as bytes with
    `bytes(uid)` / `UniqueId.from_bytes`, or as text with `to_string` / `from_string`) and pass it to
    `Communicator.init`. It holds the job secret, so its repr does not show it: do not log its text."""

    def __init__(self, struct: UniqueIdStruct) -> None:
        self._struct = struct

    @classmethod
    def from_bytes(cls, data: bytes) -> "UniqueId":
        """The id whose `bytes()` were `data` (PSDP_UNIQUE_ID_BYTES of them)."""
        data = bytes(data)
        if len(data) != UNIQUE_ID_BYTES:
            raise ValueError(f"data: a unique id is {UNIQUE_ID_BYTES} bytes, got {len(data)}")
        struct = UniqueIdStruct()
        ctypes.memmove(ctypes.addressof(struct), data, UNIQUE_ID_BYTES)
        return cls(struct)

    @classmethod
    def from_string(cls, text: str) -> "UniqueId":
        """Parses the text of `to_string` (psdp_unique_id_from_string)."""
        struct = UniqueIdStruct()
        check(lib.psdp_unique_id_from_string(text.encode(), ctypes.byref(struct)), None)
        return cls(struct)

    def to_string(self) -> str:
        """Printable text ("psdp1:<host>:<port>:<secret hex>"), e.g. for an environment variable."""
        text = ctypes.create_string_buffer(UNIQUE_ID_STRING_BYTES)
        check(lib.psdp_unique_id_to_string(ctypes.byref(self._struct), text, UNIQUE_ID_STRING_BYTES), None)
        return text.value.decode()

    def __bytes__(self) -> bytes:
        return ctypes.string_at(ctypes.addressof(self._struct), UNIQUE_ID_BYTES)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UniqueId) and bytes(self) == bytes(other)

    def __hash__(self) -> int:
        return hash(bytes(self))

    def __repr__(self) -> str:
        return "<psdp.UniqueId (holds a job secret: not shown)>"


def get_unique_id() -> UniqueId:
    """Creates a rendezvous on this process (psdp_get_unique_id): a listening socket and a root thread that
    serves one Communicator.init of all ranks, then exits (or at PSDP_TIMEOUT). Call it on one process."""
    struct = UniqueIdStruct()
    check(lib.psdp_get_unique_id(ctypes.byref(struct)), None)
    return UniqueId(struct)
