"""Describe the current CUDA device as a :class:`~perfml.boards.Board` (through CuPy).

CuPy is imported inside the function, so perfml works without it; without CuPy or
without a device, :class:`~perfml.errors.DeviceUnavailableError` says how to get them.
"""

from __future__ import annotations

from typing import Any

from perfml.boards._board import Board
from perfml.boards._registry import Registry, default_registry
from perfml.errors import DeviceUnavailableError, UnknownBoardError

__all__ = ["board_from_device", "board_from_properties"]

_INSTALL_HINT = 'install the GPU extra: pip install "perfml[gpu]" (CuPy for CUDA 13 and NVML)'

# cudaDeviceAttr values still present in CUDA 13 (cudaDeviceProp lost clockRate and
# memoryClockRate there, so these are read as attributes).
_ATTR_CLOCK_RATE = 13
_ATTR_MEMORY_CLOCK_RATE = 36
_ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37


def board_from_device(device_id: int = 0, *, registry: Registry | None = None) -> Board:
    """Board of CUDA device ``device_id``: the registry board of that name, else one built
    from the device attributes.

    Raises
    ------
    DeviceUnavailableError
        If CuPy is missing or the device cannot be queried.
    """
    try:
        import cupy  # noqa: F401
        from cupy.cuda import runtime
    except ImportError as exc:
        raise DeviceUnavailableError(
            f"reading the current GPU needs CuPy, which is not installed; {_INSTALL_HINT}"
        ) from exc
    try:
        count = runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError when there is no driver or device
        raise DeviceUnavailableError(
            f"no CUDA device is available ({exc}); run on a machine with an NVIDIA GPU and driver, "
            f"and {_INSTALL_HINT}"
        ) from exc
    if device_id < 0 or device_id >= count:
        raise DeviceUnavailableError(
            f"CUDA device {device_id} does not exist ({count} device(s) present); "
            "pick a device index below the count"
        )
    props = dict(runtime.getDeviceProperties(device_id))
    for key, attr in (
        ("clockRate", _ATTR_CLOCK_RATE),
        ("memoryClockRate", _ATTR_MEMORY_CLOCK_RATE),
        ("memoryBusWidth", _ATTR_GLOBAL_MEMORY_BUS_WIDTH),
    ):
        if not props.get(key):
            try:
                props[key] = runtime.deviceGetAttribute(attr, device_id)
            except Exception:  # pragma: no cover - attribute missing in this runtime
                props[key] = None
    return board_from_properties(props, registry=registry)


def board_from_properties(props: dict[str, Any], *, registry: Registry | None = None) -> Board:
    """Board from a ``cudaGetDeviceProperties`` dictionary (CuPy's key names).

    The device name is looked up in the registry first; when it is not there the
    board is built from the properties, inheriting per-compute-capability facts.
    """
    reg = registry or default_registry()
    name = props.get("name", b"")
    name = name.decode() if isinstance(name, bytes) else str(name)
    try:
        return reg.get(name)
    except UnknownBoardError:
        pass

    cc = f"{props.get('major')}.{props.get('minor')}"
    source = f"cudaGetDeviceProperties via CuPy on {name!r}"

    def _mhz(khz: Any) -> int | None:
        return int(round(khz / 1000)) if khz else None

    def _kib(nbytes: Any) -> int | None:
        return int(nbytes) // 1024 if nbytes else None

    device_values: dict[str, Any] = {
        "device_name": name,
        "compute_capability": cc,
        "sms": props.get("multiProcessorCount"),
        "boost_clock_mhz": _mhz(props.get("clockRate")),
        "memory_clock_mhz": _mhz(props.get("memoryClockRate")),
        "bus_width_bits": props.get("memoryBusWidth"),
        "l2_bytes": props.get("l2CacheSize"),
        "shared_mem_per_sm_kb": _kib(props.get("sharedMemPerMultiprocessor")),
        "shared_mem_per_block_kb": _kib(props.get("sharedMemPerBlockOptin") or props.get("sharedMemPerBlock")),
        "registers_per_sm": props.get("regsPerMultiprocessor"),
        "registers_per_block": props.get("regsPerBlock"),
        "max_threads_per_sm": props.get("maxThreadsPerMultiProcessor"),
        "max_threads_per_block": props.get("maxThreadsPerBlock"),
        "max_blocks_per_sm": props.get("maxBlocksPerMultiProcessor"),
        "warp_size": props.get("warpSize"),
        "global_mem_bytes": props.get("totalGlobalMem"),
    }
    if device_values["max_threads_per_sm"] and device_values["warp_size"]:
        device_values["max_warps_per_sm"] = (
            device_values["max_threads_per_sm"] // device_values["warp_size"]
        )
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for field_name, (value, cc_source) in reg.cc_defaults(cc).items():
        values[field_name] = value
        sources[field_name] = cc_source or ""
    for field_name, value in device_values.items():
        if value is not None and value != 0:
            values[field_name] = int(value) if isinstance(value, (int, float)) else value
            sources[field_name] = source
    sources["full_name"] = source
    return Board(name=name, full_name=name, sources=sources, **values)
