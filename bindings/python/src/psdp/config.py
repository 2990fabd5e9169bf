"""`Config`: the communicator configuration (psdp_config_t) as a Python dataclass."""

import ctypes
from dataclasses import dataclass, fields

from ._c_types import CONFIG_MAGIC, ConfigStruct
from .constants import HEADER_VERSION_CODE, Algorithm, CheckMode, LogLevel, ProgressMode


@dataclass
class Config:
    """Communicator configuration. Every field left None is unset: psdp takes it from the PSDP_* variable
    named beside it, then from its built-in default (`psdp-info` lists them).

    Attributes:
        timeout_s: PSDP_TIMEOUT, seconds any blocking call may wait.
        fragment_bytes: PSDP_FRAGMENT_BYTES, fragment size of pipelined transfers.
        log_level: PSDP_LOG_LEVEL.
        log_file: PSDP_LOG_FILE, "%r" is replaced by the rank.
        socket_ifname: PSDP_SOCKET_IFNAME, the interface the bootstrap binds to.
        port_range: PSDP_PORT_RANGE, "lo-hi" ports the bootstrap root may listen on.
        progress_mode: PSDP_PROGRESS, a progress thread per communicator or progress inside the calls.
        algorithm: PSDP_ALGORITHM.
        deterministic: PSDP_DETERMINISTIC, True fixes the algorithm (ring).
        topo_file: PSDP_TOPO_FILE, hwloc or NCCL topology XML to map ranks with.
        host_id: PSDP_HOST_ID, which ranks share a host for the mapper.
        gpu_bus_id: PSDP_GPU_BUS_ID, PCI bus id of this rank's GPU.
        max_in_flight: PSDP_MAX_IN_FLIGHT, operations of one communicator posted and not yet complete.
        split_share: PSDP_SPLIT_SHARE, whether split communicators share the parent's transport.
        check: PSDP_CHECK, whether every collective first agrees its call across ranks.
        algorithms: PSDP_ALGORITHMS, rules choosing each call's algorithm.
        tuning_file: PSDP_TUNING_FILE, measured rules per interconnect ("none": no file).
    """

    timeout_s: float | None = None
    fragment_bytes: int | None = None
    log_level: LogLevel | None = None
    log_file: str | None = None
    socket_ifname: str | None = None
    port_range: str | None = None
    progress_mode: ProgressMode | None = None
    algorithm: Algorithm | None = None
    deterministic: bool | None = None
    topo_file: str | None = None
    host_id: str | None = None
    gpu_bus_id: str | None = None
    max_in_flight: int | None = None
    split_share: bool | None = None
    check: CheckMode | None = None
    algorithms: str | None = None
    tuning_file: str | None = None


# What psdp.h's PSDP_CONFIG_INITIALIZER puts in each field to mean "unset".
_UNSET = {
    "timeout_s": -1.0,
    "fragment_bytes": 0,
    "log_level": -1,
    "progress_mode": -1,
    "algorithm": -1,
    "deterministic": -1,
    "max_in_flight": 0,
    "split_share": -1,
    "check": -1,
}


def to_struct(config: Config | None) -> ConfigStruct | None:
    """The psdp_config_t for `config` (None stays None: the C calls take NULL for "nothing set")."""
    if config is None:
        return None
    if not isinstance(config, Config):
        raise TypeError(f"config: expected a psdp.Config or None, got {type(config).__name__}")
    struct = ConfigStruct(size=ctypes.sizeof(ConfigStruct), magic=CONFIG_MAGIC, version=HEADER_VERSION_CODE)
    for field in fields(Config):
        value = getattr(config, field.name)
        if value is None:
            value = _UNSET.get(field.name)
        elif isinstance(value, str):
            value = value.encode()  # the struct keeps the bytes alive; psdp copies them during the call
        elif isinstance(value, bool):
            value = int(value)
        setattr(struct, field.name, value)
    return struct
