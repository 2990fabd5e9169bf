"""The C structs and handle types of psdp.h that the bindings pass, laid out as the header declares them."""

import ctypes

# Opaque handles (psdp_comm_h, psdp_request_h) travel as void pointers; enums as int, which is what a C
# compiler gives them (each psdp enum is kept 32 bits wide by its *_MAX_ENUM member).
Handle = ctypes.c_void_p
StatusC = ctypes.c_int
EnumC = ctypes.c_int

UNIQUE_ID_BYTES = 128  # PSDP_UNIQUE_ID_BYTES
UNIQUE_ID_STRING_BYTES = 160  # PSDP_UNIQUE_ID_STRING_BYTES
CONFIG_MAGIC = 0x70736470  # PSDP_CONFIG_MAGIC, "psdp"


class UniqueIdStruct(ctypes.Structure):
    """psdp_unique_id_t."""

    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


class ConfigStruct(ctypes.Structure):
    """psdp_config_t, field for field. Its size field tells the library which fields this caller knows."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("magic", ctypes.c_uint),
        ("version", ctypes.c_uint),
        ("timeout_s", ctypes.c_double),
        ("fragment_bytes", ctypes.c_size_t),
        ("log_level", ctypes.c_int),
        ("log_file", ctypes.c_char_p),
        ("socket_ifname", ctypes.c_char_p),
        ("port_range", ctypes.c_char_p),
        ("progress_mode", ctypes.c_int),
        ("algorithm", ctypes.c_int),
        ("deterministic", ctypes.c_int),
        ("topo_file", ctypes.c_char_p),
        ("host_id", ctypes.c_char_p),
        ("gpu_bus_id", ctypes.c_char_p),
        ("max_in_flight", ctypes.c_int),
        ("split_share", ctypes.c_int),
        ("check", ctypes.c_int),
        ("algorithms", ctypes.c_char_p),
        ("tuning_file", ctypes.c_char_p),
    ]
