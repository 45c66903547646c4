"""Write a boards file entry (docs/boards.md) from a device's recorded CUDA properties.

``perfml boards from-properties PROPS.json --name NAME --out FILE`` turns what
``cudaGetDeviceProperties`` said about a GPU (a JSON object with CuPy's key names, as
``sweeps/results/H200/device_properties.json``) into a ``[[board]]`` table whose every
value cites that file; the per-SM units and the other per-compute-capability facts come
from the registry's ``[cc."X.Y"]`` table when it has one. The entry is checked by loading
it beside the registry before it is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

from perfml._files import read_json_object
from perfml.boards._device import device_property_values
from perfml.boards._registry import default_registry, load_registry, user_board_files
from perfml.errors import DatasetSchemaError, UnknownBoardError

__all__ = ["boards_file_from_properties"]

#: the fields a prediction needs that no device property gives
_NOT_FROM_THE_DEVICE = (
    "memory_bandwidth_gbs (datasheet; without it, 2 x memory_clock_mhz x bus_width_bits / 8 is used)",
    "fp32_cores_per_sm, fp64_units_per_sm, sfu_per_sm (CUDA C Programming Guide throughput table; "
    "inherited when the registry has the compute capability)",
)


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string here


def boards_file_from_properties(properties: str | os.PathLike[str], *, name: str) -> tuple[str, list[str]]:
    """The text of a boards file with one board, ``name``, described by a properties file.

    Returns
    -------
    (text, missing)
        The TOML text, checked by loading it beside the registry (and the user's boards
        files in use), and the fields a prediction needs that it lacks.

    Raises
    ------
    DatasetSchemaError
        The properties file is unreadable, not a JSON object, lacks the device's compute
        capability or SM count, or the entry would clash with a board already known.
    """
    path = Path(properties)
    props = read_json_object(path, "cudaGetDeviceProperties", error=DatasetSchemaError)
    values = device_property_values(props, strict=True, where=str(path))
    device = values.get("device_name", "")
    for needed in ("compute_capability", "sms"):
        if needed not in values:
            raise DatasetSchemaError(
                f"{path}: no usable {'major and minor' if needed == 'compute_capability' else 'multiProcessorCount'} "
                "(whole numbers); record the device's cudaGetDeviceProperties again"
            )
    registry = default_registry()
    if device:
        try:
            known = registry.resolve(device)
        except UnknownBoardError:
            known = None
        if known is not None:
            raise DatasetSchemaError(
                f"{path}: the device {device!r} is the registry's board {known!r} already; use that name "
                f"(`perfml boards show {known}`)"
            )
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    # one source name per file: several generated files are used together, and [sources] names are shared
    source_key = "properties-" + (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "board") + "-" + digest[:8]
    lines = [
        f"# A boards file for perfml (docs/boards.md), written by `perfml boards from-properties {path.name}`.",
        "# Every value below is what the device reported; add the fields it lacks with their sources.",
        'format = "perfml-boards"',
        "schema_version = 1",
        "",
        "[sources]",
        f"{source_key} = {_toml_string(f'cudaGetDeviceProperties of the device, recorded in {path.name} (sha256 {digest}...)')}",
        "",
        "[[board]]",
        f"name = {_toml_string(name)}",
        f"full_name = {_toml_string(device or name)}",
        f'source = "@{source_key}"',
    ]
    for field_name, value in values.items():
        lines.append(f"{field_name} = {_toml_string(value) if isinstance(value, str) else value}")
    text = "\n".join(lines) + "\n"

    with tempfile.TemporaryDirectory(prefix="perfml-boards-") as tmp:
        candidate = Path(tmp) / "boards.toml"
        candidate.write_text(text, encoding="utf-8")
        try:
            loaded = load_registry(extra=[*user_board_files(), candidate])
        except DatasetSchemaError as exc:  # name the user's input, not the scratch file
            raise DatasetSchemaError(str(exc).replace(str(candidate), f"the board entry built from {path} (nothing written)")) from None
    board = loaded.boards[name]
    missing = []
    if not device:
        missing.append("device_name (the properties have no `name`: the board cannot be recognised by "
                       "`perfml sweep`, nor checked against the registry's boards)")
    if board.memory_bandwidth_gbs is None:
        missing.append(_NOT_FROM_THE_DEVICE[0])
    if board.fp32_cores_per_sm is None:
        missing.append(_NOT_FROM_THE_DEVICE[1])
    return text, missing
