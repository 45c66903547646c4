"""Describe the current CUDA device as a :class:`~perfml.boards.Board` (through CuPy).

CuPy is imported inside the function, so perfml works without it; without CuPy or
without a device, :class:`~perfml.errors.DeviceUnavailableError` says how to get them.
"""

from __future__ import annotations

import re

from typing import Any

from perfml.boards._board import Board
from perfml.boards._registry import Registry, default_registry
from perfml.errors import DeviceUnavailableError, UnknownBoardError

__all__ = ["board_from_device", "board_from_properties", "device_property_values"]

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
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for field_name, (value, cc_source) in reg.cc_defaults(cc).items():
        values[field_name] = value
        sources[field_name] = cc_source or ""
    for field_name, value in device_property_values(props).items():
        values[field_name] = value
        sources[field_name] = source
    sources["full_name"] = source
    return Board(name=name, full_name=name, sources=sources, **values)


#: registry field -> (cudaGetDeviceProperties key(s), first one present wins; divisor)
_PROPERTY_FIELDS: dict[str, tuple[tuple[str, ...], int]] = {
    "sms": (("multiProcessorCount",), 1),
    "boost_clock_mhz": (("clockRate",), 1000),  # kHz
    "memory_clock_mhz": (("memoryClockRate",), 1000),  # kHz, half the data rate (deviceQuery)
    "bus_width_bits": (("memoryBusWidth",), 1),
    "l2_bytes": (("l2CacheSize",), 1),
    "shared_mem_per_sm_kb": (("sharedMemPerMultiprocessor",), 1024),
    "shared_mem_per_block_kb": (("sharedMemPerBlockOptin", "sharedMemPerBlock"), 1024),
    "registers_per_sm": (("regsPerMultiprocessor",), 1),
    "registers_per_block": (("regsPerBlock",), 1),
    "max_threads_per_sm": (("maxThreadsPerMultiProcessor",), 1),
    "max_threads_per_block": (("maxThreadsPerBlock",), 1),
    "max_blocks_per_sm": (("maxBlocksPerMultiProcessor",), 1),
    "warp_size": (("warpSize",), 1),
    "global_mem_bytes": (("totalGlobalMem",), 1),
}


def device_property_values(props: dict[str, Any], *, strict: bool = False, where: str = "the properties") -> dict[str, Any]:
    """Registry fields read from a ``cudaGetDeviceProperties`` dictionary (CuPy's key names).

    Only what the device states: ``device_name``, ``compute_capability`` (``major.minor``)
    and the fields of :data:`_PROPERTY_FIELDS` that are present, positive whole numbers
    (clocks kHz -> MHz rounded, shared memory bytes -> KiB), plus ``max_warps_per_sm`` =
    threads per SM / warp size. A property that is missing is left out, never guessed; one
    that is present but unusable (not a whole number, not positive, a clock under 1 MHz)
    is left out too, or, with ``strict`` (a file the user gives), refused.

    Raises
    ------
    DatasetSchemaError
        With ``strict``: a present property that is unusable, naming ``where`` and the key.
    """
    from perfml.errors import DatasetSchemaError

    def unusable(key: str, value: Any, expected: str) -> None:
        if strict:
            raise DatasetSchemaError(f"{where}: {key} = {value!r} is not {expected}; record the device's "
                                     "properties again, or remove the key to leave the value out")

    def whole(value: Any) -> bool:
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value == value and value.is_integer())

    name = props.get("name")
    name = name.decode(errors="replace") if isinstance(name, bytes) else name
    if isinstance(name, str):
        # CuPy gives the name as bytes; a recording made with str(bytes) holds "b'NVIDIA H200'"
        quoted = re.fullmatch(r"\s*b(['\"])(.*)\1\s*", name)
        name = quoted.group(2) if quoted else name
    out: dict[str, Any] = {}
    if isinstance(name, str) and name.strip():
        out["device_name"] = name.strip()
    elif name is not None:
        unusable("name", name, "the device's name (text)")
    major, minor = props.get("major"), props.get("minor")
    if all(whole(v) and v >= 0 for v in (major, minor)):
        out["compute_capability"] = f"{int(major)}.{int(minor)}"
    elif major is not None or minor is not None:
        unusable("major/minor", (major, minor), "a compute capability (two whole numbers)")
    for field_name, (keys, divisor) in _PROPERTY_FIELDS.items():
        key = next((k for k in keys if props.get(k) is not None), None)
        if key is None:
            continue
        raw = props[key]
        if not (whole(raw) and raw > 0):
            unusable(key, raw, "a positive whole number")
            continue
        value = int(round(raw / divisor)) if divisor == 1000 else int(raw) // divisor
        if value > 0:
            out[field_name] = value
        else:
            unusable(key, raw, f"at least {divisor} (the unit of {field_name})")
    if out.get("max_threads_per_sm") and out.get("warp_size"):
        out["max_warps_per_sm"] = out["max_threads_per_sm"] // out["warp_size"]
    return out
