"""The manifest of a data home: row count, checksum and time scale of every table.

A data home is trusted only as far as it can be checked. Before a table is used, its
data rows are counted and its sha256 computed, and both are compared with the
manifest; a table cut short, re-compressed, edited or exchanged is refused with a
:class:`~perfml.errors.DatasetSchemaError` naming the file, what was expected, what
was found and how to fix it.

Which manifest
--------------
1. ``manifest.csv`` in the data home (columns ``file, rows, bytes, sha256``), the
   machine-readable manifest that ``shared/datasets`` carries (its README, section
   "Machine-readable manifest"); an empty one, or one listing a file twice with other
   values, is refused, and in a copy of ``shared/datasets`` a file it does not list is
   checked against the shipped manifest (2.);
2. otherwise, for a copy of ``shared/datasets`` (a data home holding its
   ``README.md``), the manifest shipped with perfml,
   ``perfml/data/datasets_manifest.toml``, parsed once from the tables "Files" and
   "Files (dlops)" of that README (:func:`manifest_from_readme`);
3. otherwise (a user's own data home without a manifest) only the schema and the
   unit checks below apply.

Units
-----
Every time column of the shared tables is in milliseconds. A table whose times were
converted (a whole column multiplied by 1000 keeps every row positive and every
checksum-free check happy) is caught by its median: the shipped manifest records the
median of each time column of the shared files, and a table whose median is more
than :data:`MEDIAN_FACTOR` times off is refused. Without a recorded median, a time
column must still look like milliseconds of a GPU kernel: its smallest value at least
:data:`MIN_KERNEL_MS` (no kernel launch takes less than half a microsecond) and its
median at most :data:`MAX_MEDIAN_MS`.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from perfml._files import read_versioned
from perfml.errors import DataHomeError, DatasetSchemaError

__all__ = [
    "MANIFEST_FILE",
    "MAX_MEDIAN_MS",
    "MEDIAN_FACTOR",
    "MIN_KERNEL_MS",
    "ManifestEntry",
    "check_row_count",
    "check_sha256",
    "check_time_units",
    "manifest_entry",
    "manifest_from_readme",
    "shipped_manifest",
]

#: the manifest a data home may carry (the format of shared/datasets/manifest.csv)
MANIFEST_FILE = "manifest.csv"
#: a time column's median may differ from the recorded one by at most this factor
MEDIAN_FACTOR = 10.0
#: the smallest plausible kernel time (ms): half a microsecond, below any launch overhead
#: (the shortest time of the data home is 3.2 us); also the floor of every measured time a
#: user gives and of every prediction (perfml.characterize.limits.MIN_MEASURED_MS)
MIN_KERNEL_MS = 5e-4
#: the longest plausible single kernel call (ms): 1e9 ms, about 11.6 days; a longer time is
#: a wrong column or unit, and it would overflow the ratios perfml forms from times
MAX_KERNEL_MS = 1e9
#: the largest plausible median kernel time (ms) of a table without a recorded median
MAX_MEDIAN_MS = 1e4

_FORMAT = "perfml-datasets-manifest"


@dataclass(frozen=True)
class ManifestEntry:
    """What the manifest records about one file of the data home."""

    file: str
    rows: int
    sha256: str
    source: str
    bytes: int | None = None
    #: (column, median in ms) of the time columns, where recorded
    median_ms: tuple[tuple[str, float], ...] = ()


@functools.lru_cache(maxsize=1)
def shipped_manifest() -> dict[str, ManifestEntry]:
    """The manifest of ``shared/datasets`` shipped with perfml (file name -> entry)."""
    raw = read_versioned(resources.files("perfml") / "data" / "datasets_manifest.toml",
                         _FORMAT, (1,), error=DataHomeError)
    out = {}
    for item in raw.get("file", []):
        out[item["file"]] = ManifestEntry(
            file=item["file"], rows=int(item["rows"]), sha256=str(item["sha256"]),
            source=str(item["source"]), bytes=item.get("bytes"),
            median_ms=tuple(sorted((str(k), float(v)) for k, v in item.get("median_ms", {}).items())),
        )
    return out


@functools.lru_cache(maxsize=8)
def _home_manifest(path: str, mtime_ns: int, size: int) -> dict[str, ManifestEntry]:
    shipped = shipped_manifest()
    out = {}
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:  # a spreadsheet's byte-order mark
            reader = csv.DictReader(fh)
            rows = list(reader)
            header = [str(name).strip() for name in reader.fieldnames or ()]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataHomeError(f"{path}: the data home's manifest cannot be read ({exc}); restore it "
                            "from shared/datasets or delete it") from None
    if not {"file", "rows", "sha256"} <= set(header):
        raise DataHomeError(f"{path}: the header is {','.join(header) or 'empty'!s}, not 'file,rows,bytes,sha256'; "
                            "restore the manifest from shared/datasets or delete it")
    if not rows:
        # an emptied manifest would switch every check of every table off without a word
        raise DataHomeError(f"{path}: the data home's manifest lists no file; restore it from shared/datasets "
                            "or delete it")
    for i, row in enumerate(rows, start=2):
        try:
            file, n, sha = _file_name(row["file"]), int(row["rows"]), row["sha256"].strip().lower()
            size_b = int(row["bytes"]) if row.get("bytes") else None
        except (KeyError, TypeError, ValueError, AttributeError):
            raise DataHomeError(
                f"{path}: line {i} is not 'file,rows,bytes,sha256' with whole numbers; restore "
                "the manifest from shared/datasets or delete it"
            ) from None
        if not re.fullmatch(r"[0-9a-f]{64}", sha):
            raise DataHomeError(f"{path}: line {i} has sha256 {sha!r}, not 64 hex digits; "
                                "restore the manifest from shared/datasets or delete it")
        known = shipped.get(file)
        # the recorded medians belong to the shared file: keep them only for that file
        medians = known.median_ms if known is not None and known.sha256 == sha else ()
        entry = ManifestEntry(file, n, sha, f"{path}", size_b, medians)
        if file in out and out[file] != entry:
            raise DataHomeError(f"{path}: line {i} lists {file} again, with other values than an earlier line; "
                                "keep one line per file (restore the manifest from shared/datasets or delete it)")
        out[file] = entry
    return out


def _file_name(name) -> str:
    """A manifest's file name as the tables are named: surrounding spaces and a leading ``./`` dropped."""
    name = str(name).strip()
    while name.startswith("./"):
        name = name[2:]
    return name


def manifest_entry(home: Path, file: str) -> ManifestEntry | None:
    """The manifest entry of ``file`` in data home ``home``, or None (see module docstring).

    In a copy of ``shared/datasets`` (a data home holding its ``README.md``) a file its own
    manifest does not list (a deleted or misspelt line) is checked against the shipped
    manifest: a damaged manifest never switches the checks of a table off.
    """
    own = home / MANIFEST_FILE
    copy_of_shared = (home / "README.md").is_file()
    if own.is_file():
        stat = own.stat()
        entry = _home_manifest(str(own), stat.st_mtime_ns, stat.st_size).get(file)
        if entry is None and copy_of_shared:
            return shipped_manifest().get(file)
        return entry
    if copy_of_shared:
        return shipped_manifest().get(file)
    return None


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fix(entry: ManifestEntry) -> str:
    return (f"restore {entry.file} from shared/datasets (or, if you changed it on purpose, update "
            f"the manifest: {entry.source})")


def check_row_count(df: pd.DataFrame, entry: ManifestEntry, path: str) -> None:
    """Raise if the table does not have the recorded number of data rows."""
    if len(df) != entry.rows:
        what = "cut short" if len(df) < entry.rows else "longer than recorded"
        raise DatasetSchemaError(
            f"{path}: has {len(df)} data rows, the manifest records {entry.rows}: the file is "
            f"{what}; {_fix(entry)}"
        )


def check_sha256(entry: ManifestEntry, path: str) -> None:
    """Raise if the file's sha256 differs from the recorded one."""
    found = file_sha256(path)
    if found != entry.sha256:
        raise DatasetSchemaError(
            f"{path}: sha256 {found[:12]}... differs from the manifest's {entry.sha256[:12]}...: "
            f"the file was modified (edited or re-compressed); {_fix(entry)}"
        )


def check_time_units(df: pd.DataFrame, time_columns, entry: ManifestEntry | None, path: str, *,
                     ceiling: bool = True) -> None:
    """Raise if a millisecond column does not look like milliseconds (see module docstring),
    or (``ceiling``) holds a time beyond :data:`MAX_KERNEL_MS`."""
    recorded = dict(entry.median_ms) if entry is not None else {}
    for col in time_columns:
        if col not in df:
            continue
        values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
        values = values[np.isfinite(values) & (values > 0)]
        if values.size == 0:
            continue
        median = float(np.median(values))
        ref = recorded.get(col)
        if ref is not None and not ref / MEDIAN_FACTOR <= median <= ref * MEDIAN_FACTOR:
            raise DatasetSchemaError(
                f"{path}: column {col!r} has median {median:.6g} ms, {median / ref:.3g} times the "
                f"{ref:.6g} ms the manifest records: the times are not in milliseconds (a unit "
                f"conversion?); write them in ms ({_fix(entry)})"  # type: ignore[arg-type]
            )
        if float(values.min()) < MIN_KERNEL_MS:
            raise DatasetSchemaError(
                f"{path}: column {col!r} holds {float(values.min()):.3g} ms, below the "
                f"{MIN_KERNEL_MS} ms any kernel launch takes: the times are not in milliseconds; "
                "write them in ms"
            )
        if ceiling and float(values.max()) > MAX_KERNEL_MS:
            row = int(np.flatnonzero(pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float) > MAX_KERNEL_MS)[0])
            raise DatasetSchemaError(
                f"{path}: column {col!r} holds {float(values.max()):.3g} ms in row {row + 2}, beyond any kernel call "
                f"(at most {MAX_KERNEL_MS:.0e} ms): drop the row or fix the measurement"
            )
        if ref is None and median > MAX_MEDIAN_MS:
            raise DatasetSchemaError(
                f"{path}: column {col!r} has median {median:.6g} ms, above the plausible "
                f"{MAX_MEDIAN_MS:g} ms for kernel times: the times are not in milliseconds; "
                "write them in ms"
            )


_HEADING = re.compile(r"^#{1,6}\s+(.*\S)\s*$")


def manifest_from_readme(text: str, source: str = "shared/datasets/README.md") -> list[dict]:
    """Entries (file, rows, bytes, sha256, source) of every markdown table of the README
    whose header has the columns ``file``, ``rows`` and ``sha256``.

    ``source`` names the README; each entry's source adds the section heading the table
    is under (``"shared/datasets/README.md, section 'Files'"``).
    """
    entries: list[dict] = []
    section = ""
    header: list[str] | None = None
    for line in text.splitlines():
        m = _HEADING.match(line)
        if m:
            section, header = m.group(1), None
            continue
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(cells) <= {"---", ":---", "---:", ""} or not {"file", "rows", "sha256"} <= set(header):
            continue
        row = dict(zip(header, cells))
        entry = {"file": row["file"], "rows": int(row["rows"]), "sha256": row["sha256"],
                 "source": f"{source}, section {section!r}"}
        if row.get("bytes", "").isdigit():
            entry["bytes"] = int(row["bytes"])
        entries.append(entry)
    return entries
