"""``--profile FILE``: the user's profiler counters for their ``--reference`` runs.

:func:`read_profile` reads a profiler CSV export and returns the counters perfml's
profile feature group (:mod:`perfml.learned.features.profiles`) uses, under the column
names and in the units of the ``profiles_nca`` table of the data home (nvprof metric
*descriptions* ``m.<...>`` and nvprof events ``e.<...>``; datasets README, section
``profiles_nca``). :func:`attach_profile` attaches them to the reference rows, and
:func:`use_reference_profile` makes them the profile features of the queries.

Accepted exports
----------------
* **Nsight Compute, details page** (``ncu --csv ...``, the default ``--page details``):
  one row per kernel launch and metric, header ``"ID","Process ID","Process Name",
  "Host Name","Kernel Name",["Kernel Time",]"Context","Stream",["Block Size","Grid Size",
  "Device","CC",]"Section Name","Metric Name","Metric Unit","Metric Value"`` (newer
  versions add rule columns, which are ignored). Real examples, found with the code search
  in public repositories: the ncu output in the test fixture of a cuBLASLt GEMM benchmark
  (``/opt/superbench/bin/cublaslt_gemm``, with ``==PROF==`` lines and "Block Size"/"Grid
  Size" ``"(384, 1, 1)"``), test fixtures of ncu CSV parsers showing ``"Metric Unit"``
  values ``byte``, ``hz``, ``%``, ``ns`` and thousands separators (``"2,816"``); NVIDIA
  Nsight Compute CLI documentation, options ``--csv``, ``--page`` and ``--print-units``.
  Only metrics asked for by name (``--metrics``, section "Command line profiler metrics")
  carry their raw names there; section exports (``--set``, ``--section``) use display names
  ("Elapsed Cycles"), which are not mapped (they count as unknown names). Rule lines (empty
  "Metric Name") and the rule columns, which metric lines may leave off, are ignored.
* **Nsight Compute, raw page** (``ncu --csv --page raw``): one row per kernel launch,
  the metric names as columns after the same identification columns, and a second line
  with each column's unit (empty for the identification columns).
* **nvprof** (``nvprof --csv --metrics ...`` / ``--events ...``): ``==<pid>==`` preamble
  lines, then per section the header ``"Device","Kernel","Invocations","Metric Name",
  "Metric Description","Min","Max","Avg"`` (events, as recalled, not seen in a real file
  here: ``"Event Name","Min","Max","Avg","Total"``); the value used is ``Avg`` (the mean
  over the kernel's invocations). Real example, found with the code search: nvprof CSV logs
  of FORMA stencil kernels on "Tesla K20c (0)" (``__kernel___forma_kernel__0__(...)``), counts
  printed as plain integers and percentages as ``77.591463%``; the summary (non-CSV) logs of
  sankarmanoj/thrust2D show the same units (``100.00%``, ``1.1655GB/s``, ``Low (1)``).
  nvprof ``--print-gpu-trace`` is not accepted.

Lines starting with ``==`` (``==PROF==`` and ``==<pid>==``) and anything before the
header are skipped, as ncu and nvprof write their log lines into the same stream.

The mapping (:data:`COUNTERS`)
------------------------------
One entry per counter perfml uses. The Nsight Compute equivalents are those of NVIDIA's
"nvprof Transition Guide, Metric Comparison" table (Nsight Compute CLI documentation,
docs.nvidia.com/nsight-compute/NsightComputeCli, section "Metric Comparison"), for
devices of compute capability >= 7.0; counters the table marks ``n/a`` (no equivalent:
``ldst_executed``, ``shared_load_transactions_per_request``) and the 32-bit global and
shared load/store instruction *events* have no Nsight Compute name here and are read from
nvprof exports only. The Metric Comparison rows were checked against a public copy of the
table (found with the code search). ``e.elapsed_cycles_sm`` = ``sm__cycles_elapsed.sum`` is
the same document's "Event Comparison" table as recalled, not re-read here; it agrees with an
ncu-to-nvprof converter found with the code search and with elapsed_cycles_sm being the sum
over the SMs (NVIDIA developer forum, "relation of elapsed_cycles_sm and kernel execution
time"); a real H100 export (``sweeps/results/H100-SXM/ncu/``) confirms the sum over the SMs:
cycles / (SMs x duration) is the SM clock. docs/profile_import.md has the table.

Units (strict)
--------------
* nvprof: counts and ratios are plain numbers; ``gld_efficiency`` must carry ``%``.
  A value with any other suffix (``1.2GB/s``, ``Low (1)``) on a counter perfml uses is
  an error.
* Nsight Compute: counts may be auto-scaled by ncu (unit ``Ksector``, ``Minst``...;
  ``--print-units base`` turns that off): the SI prefix ``K``/``M``/``G``/``T`` multiplies
  by 1e3/1e6/1e9/1e12; ``.pct`` metrics must be in ``%``. Thousands separators
  (``1,048,576``) are removed; ``n/a`` is a missing value.
* Percentages stay percentages: ``profiles_nca`` stores ``gld_efficiency`` in percent
  (0-100, up to 200 as nvprof reports), exactly what both tools print.

The rule for unknown names and units (issue 10, section 4)
----------------------------------------------------------
* a metric perfml does not use is ignored and counted (``frame.attrs["ignored_metrics"]``):
  a full ``--set full`` export has hundreds of them;
* an export in which *no* metric is one perfml uses is an error
  (:class:`~perfml.errors.ProfileImportError`) that names the file and lists the names
  perfml accepts (a profile of the wrong metrics, or of a tool version whose names differ);
* an unknown unit, or a value that is not a number, on a metric perfml uses is an error
  naming the file, line, metric, unit and the accepted units;
* a Nsight Compute counter that is a sum of terms (FLOPs, L2 reads) needs every term: a
  partial sum is an error naming the missing terms.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from perfml.errors import ProfileImportError

_TABLE = "NVIDIA Nsight Compute CLI docs, nvprof Transition Guide, Metric Comparison table"
_EVENTS = "NVIDIA Nsight Compute CLI docs, nvprof Transition Guide, Event Comparison table"
_NA = "no Nsight Compute equivalent (Metric Comparison table: n/a); nvprof only"
_EVENT_ONLY = "nvprof event; no Nsight Compute equivalent mapped here; nvprof only"


@dataclass(frozen=True)
class Counter:
    """How one counter of ``profiles_nca`` is read from nvprof and Nsight Compute exports.

    Attributes
    ----------
    column : str
        perfml's name (the ``profiles_nca`` column).
    nvprof : str
        nvprof metric or event name (``--metrics`` / ``--events``).
    kind : {"count", "ratio", "percent"}
    ncu : tuple of (str, float)
        Nsight Compute metrics whose weighted sum is the counter (empty: none).
    ncu_units : tuple of str
        Accepted Nsight Compute base units (an SI prefix is allowed for counts).
    source : str
        Where the equivalence is documented.
    ncu_alternative : tuple of (str, float)
        Other Nsight Compute metrics whose weighted sum is the same counter, read only where
        no metric of ``ncu`` was exported (``dram__bytes_read.sum`` / 32 for the DRAM read
        sectors: many exports ask for bytes).
    ncu_alternative_units : tuple of str
        Accepted base units of ``ncu_alternative``.
    """

    column: str
    nvprof: str
    kind: str
    ncu: tuple = ()
    ncu_units: tuple = ()
    source: str = ""
    ncu_alternative: tuple = ()
    ncu_alternative_units: tuple = ()


def _c(column, nvprof, kind, ncu=(), units=(), source=_TABLE, alternative=(), alternative_units=()):
    return column, Counter(column, nvprof, kind, tuple(ncu), tuple(units), source, tuple(alternative),
                           tuple(alternative_units))


#: perfml column -> how it is read. Every counter of ``PROFILE_METRICS`` plus the
#: inputs of ``prof_memthr`` / ``prof_ariththr`` (elapsed cycles, DRAM transactions, FLOPs).
COUNTERS: dict[str, Counter] = dict([
    _c("e.inst_executed", "inst_executed", "count", [("smsp__inst_executed.sum", 1.0)], ["inst"]),
    _c("e.gld_inst_32bit", "gld_inst_32bit", "count", source=_EVENT_ONLY),
    _c("e.gst_inst_32bit", "gst_inst_32bit", "count", source=_EVENT_ONLY),
    _c("e.shared_load", "shared_load", "count", source=_EVENT_ONLY),
    _c("e.shared_store", "shared_store", "count", source=_EVENT_ONLY),
    _c("e.elapsed_cycles_sm", "elapsed_cycles_sm", "count", [("sm__cycles_elapsed.sum", 1.0)], ["cycle"], _EVENTS),
    _c("m.Global Load Transactions", "gld_transactions", "count",
       [("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 1.0)], ["sector"]),
    _c("m.Global Store Transactions", "gst_transactions", "count",
       [("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 1.0)], ["sector"]),
    _c("m.Global Load Transactions Per Request", "gld_transactions_per_request", "ratio",
       [("l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_ld.ratio", 1.0)], ["sector", "sector/request"]),
    _c("m.Global Store Transactions Per Request", "gst_transactions_per_request", "ratio",
       [("l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_st.ratio", 1.0)], ["sector", "sector/request"]),
    _c("m.Shared Memory Load Transactions Per Request", "shared_load_transactions_per_request", "ratio", source=_NA),
    # ncu's dram__bytes_* are its dram__sectors_* x 32 bytes (SECTOR_BYTES): an H200 export
    # of both holds them so, launch by launch (tests/test_profile_measured.py)
    _c("m.Device Memory Read Transactions", "dram_read_transactions", "count", [("dram__sectors_read.sum", 1.0)], ["sector"],
       alternative=[("dram__bytes_read.sum", 1 / 32)], alternative_units=["byte"]),
    _c("m.Device Memory Write Transactions", "dram_write_transactions", "count", [("dram__sectors_write.sum", 1.0)], ["sector"],
       alternative=[("dram__bytes_write.sum", 1 / 32)], alternative_units=["byte"]),
    _c("m.L2 Read Transactions", "l2_read_transactions", "count",
       [("lts__t_sectors_op_read.sum", 1.0), ("lts__t_sectors_op_atom.sum", 1.0), ("lts__t_sectors_op_red.sum", 1.0)], ["sector"]),
    _c("m.Global Memory Load Efficiency", "gld_efficiency", "percent",
       [("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", 1.0)], ["%"]),
    _c("m.Executed Load/Store Instructions", "ldst_executed", "count", source=_NA),
    _c("m.Floating Point Operations(Single Precision)", "flop_count_sp", "count",
       [("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 1.0),
        ("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 1.0),
        ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 2.0)], ["inst"]),
    _c("m.Floating Point Operations(Double Precision)", "flop_count_dp", "count",
       [("smsp__sass_thread_inst_executed_op_dadd_pred_on.sum", 1.0),
        ("smsp__sass_thread_inst_executed_op_dmul_pred_on.sum", 1.0),
        ("smsp__sass_thread_inst_executed_op_dfma_pred_on.sum", 2.0)], ["inst"]),
])

_BY_NVPROF = {c.nvprof: c for c in COUNTERS.values()}
#: Nsight Compute metric -> (the counter it enters, its accepted base units)
_NCU_TERMS = {**{name: (c, c.ncu_units) for c in COUNTERS.values() for name, _ in c.ncu},
              **{name: (c, c.ncu_alternative_units) for c in COUNTERS.values() for name, _ in c.ncu_alternative}}
#: SI prefixes of Nsight Compute's auto-scaled units
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
LAUNCH = ("block_x", "block_y", "block_z", "grid_x", "grid_y", "grid_z")

#: the ncu metric holding the GPU's marketing name (used to find the board, not a counter)
_DEVICE_NAME = "device__attribute_display_name"
#: identification columns of ncu's raw page (never metrics)
_RAW_ID = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context", "Stream",
           "Block Size", "Grid Size", "Device", "CC"}


_NCU_ID = ("ID", "Kernel Name")
_NCU_DETAILS = ("Metric Name", "Metric Unit", "Metric Value")
_NVPROF = ("Device", "Kernel", "Invocations", "Avg")
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")
_PLAIN = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")
#: English thousands notation ("2,816", "1,048,576.5"): a first group of 1-3 digits not
#: starting with 0 ("0,500" is a comma-decimal 0.5, never a thousands-grouped number)
_THOUSANDS = re.compile(r"^[-+]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?$")


def accepted_names() -> str:
    """The metric names perfml reads, for messages (nvprof; Nsight Compute)."""
    ncu = sorted(_NCU_TERMS)
    return f"nvprof {', '.join(sorted(_BY_NVPROF))}; Nsight Compute {', '.join(ncu)}"


def kernel_base_name(name: str) -> str:
    """``void ns::k<int=1>(float*, int)`` -> ``k``: the kernel's name without return type,
    namespace, template arguments and parameters (how a reference's ``app_id`` names it)."""
    text = str(name).strip()
    depth, cut = 0, len(text)
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif ch == "(" and depth == 0 and i > 0:
            cut = i
            break
    head = text[:cut].strip()
    depth, out = 0, []
    for ch in head:  # drop template arguments
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    head = "".join(out).strip()
    head = head.split()[-1] if head.split() else head  # drop the return type ("void k")
    return head.split("::")[-1]


def _dims(text: str, path, line: int, column: str) -> tuple[float, float, float]:
    """``(256, 1, 1)`` -> (256.0, 1.0, 1.0); empty -> NaNs."""
    text = str(text).strip()
    if not text:
        return (np.nan, np.nan, np.nan)
    parts = [p.strip() for p in text.strip("()[] ").split(",")]
    try:
        values = [float(p) for p in parts if p]
    except ValueError:
        values = []
    if not 1 <= len(values) <= 3 or not all(np.isfinite(v) and v >= 1 and v == int(v) for v in values):
        raise ProfileImportError(f"{path}: line {line}, column {column!r}: expected launch dimensions like '(256, 1, 1)', "
                                 f"found {text!r}; export with a Nsight Compute version that writes them, or remove the column")
    values += [1.0] * (3 - len(values))
    return tuple(values)


def _ncu_value(value: str, unit: str, counter: Counter, metric: str, path, line: int, units: tuple) -> float:
    """One Nsight Compute value in perfml's unit (strict about the unit; ``units``: the metric's
    accepted base units, from :data:`_NCU_TERMS`)."""
    text = str(value).strip()
    if text.lower() in ("n/a", ""):
        return np.nan
    # a percentage has no thousands ("77,500" % is a comma-decimal 77.5, not 77500 %)
    if _THOUSANDS.match(text) and counter.kind != "percent":
        text = text.replace(",", "")
    if not _PLAIN.match(text):
        raise ProfileImportError(f"{path}: line {line}, metric {metric}: value {value!r} is not a number; "
                                 "export with `ncu --csv` in an English (C) locale")
    number = float(text)
    if not np.isfinite(number):  # e.g. 1e400: beyond a float, not a unit problem
        raise ProfileImportError(f"{path}: line {line}, metric {metric}: value {value!r} is beyond any kernel call "
                                 f"(at most {MAX_COUNTER_VALUE:.0e}); export the profile again")
    unit = str(unit).strip()
    if counter.kind == "percent":
        scale = 1.0 if unit == "%" else None
    else:
        scale = None
        for prefix, factor in _PREFIX.items():
            base = unit[len(prefix):] if unit.startswith(prefix) else None
            if base is not None and (base in units or (base == "" and prefix == "")):
                scale = factor
                break
    if scale is None or not np.isfinite(number):
        accepted = "%" if counter.kind == "percent" else ", ".join(["(none)", *units]) + " with an optional K/M/G/T prefix"
        raise ProfileImportError(f"{path}: line {line}, metric {metric}: unknown unit {unit!r} (value {value!r}) for perfml's "
                                 f"{counter.column!r}; accepted units: {accepted}")
    return _non_negative(number * scale, metric, value, path, line)


#: no counter of one kernel call reaches this: a call of the longest accepted time
#: (:data:`perfml.characterize.limits.MAX_MEASURED_MS`, 1e6 s) at 1e12 events per second.
#: Larger values are a corrupt export, and they overflowed the derived counters (a 1e308
#: count made the profile's features infinite and the profile was silently not used).
MAX_COUNTER_VALUE = 1e18


def _non_negative(number: float, metric: str, value, path, line: int) -> float:
    """Counts, ratios and percentages are never negative, nor beyond :data:`MAX_COUNTER_VALUE`:
    either is a corrupt export."""
    if number < 0:
        raise ProfileImportError(f"{path}: line {line}, metric {metric}: negative value {str(value)!r}; a counter is "
                                 ">= 0: export the profile again")
    if number > MAX_COUNTER_VALUE:
        raise ProfileImportError(f"{path}: line {line}, metric {metric}: value {str(value)!r} is beyond any kernel call "
                                 f"(at most {MAX_COUNTER_VALUE:.0e}); export the profile again")
    return number


def _nvprof_value(value: str, counter: Counter, metric: str, path, line: int) -> float:
    """One nvprof value in perfml's unit: plain numbers for counts and ratios, ``%`` for percentages."""
    m = _NUMBER.match(str(value))
    suffix = m.group(2) if m else None
    expected = "%" if counter.kind == "percent" else ""
    if m is None or suffix != expected or not np.isfinite(float(m.group(1))):
        what = "a percentage like 77.59%" if expected == "%" else "a plain number (no unit)"
        raise ProfileImportError(f"{path}: line {line}, metric {metric}: unknown unit or value {str(value)!r} for perfml's "
                                 f"{counter.column!r}; expected {what} as `nvprof --csv` prints it")
    return _non_negative(float(m.group(1)), metric, value, path, line)


def _lines(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, CSV fields) of every line that is not a profiler log line or empty."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ProfileImportError(f"{path}: not UTF-8 text; give the CSV that `ncu --csv` or `nvprof --csv` writes") from None
    except OSError as exc:
        raise ProfileImportError(f"{path}: cannot be read ({exc.strerror}); give a readable profiler CSV file") from None
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("=="):
            continue
        if "\x00" in line:
            raise ProfileImportError(f"{path}: line {number} contains NUL bytes; give the CSV that `ncu --csv` or `nvprof --csv` writes")
        try:
            fields = next(csv.reader(io.StringIO(line)))
        except (csv.Error, StopIteration):
            raise ProfileImportError(f"{path}: line {number} is not valid CSV; give the CSV that `ncu --csv` or "
                                     "`nvprof --csv` writes") from None
        out.append((number, [f.strip() for f in fields]))
    return out


def _extra_fields(path, line: int, found: int, header: int) -> ProfileImportError:
    """A line with more fields than its header: an unquoted value holding a comma (a thousands
    separator, "1,048,576") was split, and reading the first part only gave a wrong counter."""
    return ProfileImportError(f"{path}: line {line}: {found} fields where the header has {header}; a value with a comma "
                              "(e.g. a thousands separator) is not quoted; export again with `ncu --csv` / `nvprof --csv`, "
                              "which quote every field")


def _header_kind(fields: list[str]) -> str | None:
    names = set(fields)
    if set(_NCU_ID) <= names:
        return "ncu-details" if set(_NCU_DETAILS) <= names else "ncu-raw"
    if set(_NVPROF) <= names and ("Metric Name" in names or "Event Name" in names):
        return "nvprof"
    return None


def _launch_record(row: dict, path, line: int) -> dict:
    rec = {c: np.nan for c in LAUNCH}
    if "Block Size" in row:
        rec["block_x"], rec["block_y"], rec["block_z"] = _dims(row["Block Size"], path, line, "Block Size")
    if "Grid Size" in row:
        rec["grid_x"], rec["grid_y"], rec["grid_z"] = _dims(row["Grid Size"], path, line, "Grid Size")
    return rec


def _read_ncu(lines, header, kind, path):
    """Per launch ID: kernel, device, first line, launch dims and ``values`` {ncu metric: value in perfml's unit};
    and the set of metric names perfml does not use."""
    cols = lines[0][1]
    body = lines[1:]
    units = None
    if kind == "ncu-raw":
        if not body or any(body[0][1][cols.index(c)] for c in _NCU_ID if cols.index(c) < len(body[0][1])):
            raise ProfileImportError(f"{path}: line {header + 1}: expected the units line of `ncu --csv --page raw` after "
                                     "the header (empty cells under the identification columns); export the raw page again")
        units = dict(zip(cols, body[0][1]))
        body = body[1:]
    # the details page's rule columns ("Rule Name" ... "Estimated Speedup") may be left off a
    # metric's line: only the columns up to "Metric Value" are required there
    needed = (max(cols.index(c) for c in cols if c in _RAW_ID or c in _NCU_DETAILS) + 1
              if kind == "ncu-details" else len(cols))
    launches: dict[str, dict] = {}
    ignored: set[str] = set()
    seen: dict[tuple, int] = {}
    for line, fields in body:
        if _header_kind(fields) is not None:
            raise ProfileImportError(f"{path}: line {line}: a second header; give one export per file")
        if len(fields) < needed:
            raise ProfileImportError(f"{path}: line {line}: {len(fields)} columns where the header (line {header}) needs "
                                     f"{needed}; the file is truncated or not one ncu export")
        if len(fields) > len(cols):
            raise _extra_fields(path, line, len(fields), len(cols))
        row = dict(zip(cols, fields + [""] * (len(cols) - len(fields))))
        launch_id = row["ID"]
        if launch_id not in launches:
            launches[launch_id] = {"kernel": row["Kernel Name"], "device": row.get("Device", ""),
                                   "cc": str(row.get("CC", "")).strip(), "line": line,
                                   **_launch_record(row, path, line), "values": {}}
        rec = launches[launch_id]
        if rec["kernel"] != row["Kernel Name"]:
            raise ProfileImportError(f"{path}: line {line}: launch ID {launch_id} names kernel {row['Kernel Name']!r} but "
                                     f"line {rec['line']} names {rec['kernel']!r}; give one export per file")
        if kind == "ncu-details":
            items = [(row["Metric Name"], row["Metric Unit"], row["Metric Value"])]
        else:
            items = [(c, units.get(c, ""), row[c]) for c in cols if c not in _RAW_ID]
        for metric, unit, value in items:
            if metric == _DEVICE_NAME:  # the GPU's name (ncu raw page, or --metrics device__attribute_display_name)
                rec["device"] = str(value).strip() or rec["device"]
                continue
            term = _NCU_TERMS.get(metric)
            if term is None:
                ignored.add(metric)
                continue
            counter, metric_units = term
            key = (launch_id, metric)
            if key in seen:
                raise ProfileImportError(f"{path}: line {line}: metric {metric} of launch ID {launch_id} appears again "
                                         f"(first at line {seen[key]}); give each launch's metric once")
            seen[key] = line
            rec["values"][metric] = _ncu_value(value, unit, counter, metric, path, line, metric_units)
    return launches, ignored


def _ncu_counters(values: dict, path, line: int, kernel: str) -> dict:
    """perfml's counters from one launch's Nsight Compute metrics (sums need every term)."""
    out = {}
    for counter in COUNTERS.values():
        # the counter's own metrics where they give a value, else its alternative (bytes for sectors)
        value = None
        for terms in (counter.ncu, counter.ncu_alternative):
            present = [name for name, _ in terms if name in values]
            if not present:
                continue
            missing = [name for name, _ in terms if name not in values]
            if missing:
                raise ProfileImportError(f"{path}: line {line}, kernel {kernel!r}: perfml's {counter.column!r} is the sum of "
                                         f"{' + '.join(f'{w:g} * {n}' for n, w in terms)}, but {', '.join(missing)} "
                                         "is missing; add it to the ncu --metrics list")
            value = float(sum(w * values[n] for n, w in terms))
            if not np.isnan(value):  # n/a: the alternative may have it
                break
        if value is not None:
            out[counter.column] = value
    return out


#: deterministic counters that grow with a run's work, in the order tried to tell runs apart
#: (DRAM and L2 counts depend on what the cache held, so they are not used)
WORK_COUNTERS = ("e.inst_executed", "m.Floating Point Operations(Single Precision)",
                 "m.Global Load Transactions", "m.Global Store Transactions")
#: launches of one kernel and launch whose work counter differs by more than this factor
#: are different runs. Wide on purpose: the launches of one run can differ a little (the
#: phases of bitonic, data-dependent branches), sizes of a sweep differ by 2x or more.
RUN_SPLIT_FACTOR = 1.25


def _different_runs(low: float, high: float) -> bool:
    """Whether two work counts (``low <= high``) belong to different runs (:data:`RUN_SPLIT_FACTOR`)."""
    return high > RUN_SPLIT_FACTOR * max(low, 0.0) and high - low > 1


def _split_runs(counters: list[dict]) -> list[list[int]]:
    """Launches (indices into ``counters``) grouped into runs, in increasing order of work.

    A kernel launched with one block and grid at several input sizes (a grid-stride loop)
    gives launches that the export tells apart by nothing but their counters; the median
    over them would describe none. The first :data:`WORK_COUNTERS` entry every launch has
    orders them; a gap above :data:`RUN_SPLIT_FACTOR` between neighbours starts a new run.
    Without such a counter all launches are one run.
    """
    for column in WORK_COUNTERS:
        values = np.array([c.get(column, np.nan) for c in counters], dtype=float)
        if np.isfinite(values).all():
            break
    else:
        return [list(range(len(counters)))]
    order = np.argsort(values, kind="stable")
    runs = [[int(order[0])]]
    for prev, cur in zip(order[:-1], order[1:]):
        if _different_runs(values[prev], values[cur]):
            runs.append([])
        runs[-1].append(int(cur))
    return [sorted(r) for r in runs]


def _read_nvprof(lines, path):
    """Per (device, kernel): kernel, device, first line and ``counters`` {perfml column: Avg in perfml's unit};
    and the set of metric names perfml does not use."""
    records: dict[tuple, dict] = {}
    ignored: set[str] = set()
    seen: dict[tuple, int] = {}
    cols = None
    for line, fields in lines:
        if _header_kind(fields) == "nvprof":
            cols = fields
            continue
        if _header_kind(fields) is not None:
            raise ProfileImportError(f"{path}: line {line}: an Nsight Compute header inside an nvprof export; give one export per file")
        if len(fields) < len(cols):
            raise ProfileImportError(f"{path}: line {line}: {len(fields)} columns where the header has {len(cols)}; "
                                     "the file is truncated or not one nvprof export")
        if len(fields) > len(cols):
            raise _extra_fields(path, line, len(fields), len(cols))
        row = dict(zip(cols, fields))
        name = row.get("Metric Name", row.get("Event Name", ""))
        counter = _BY_NVPROF.get(name)
        if counter is None:
            ignored.add(name)
            continue
        device = re.sub(r"\s*\(\d+\)\s*$", "", row["Device"])
        key = (device, row["Kernel"])
        if (key, name) in seen:
            raise ProfileImportError(f"{path}: line {line}: {name} of kernel {row['Kernel']!r} on {row['Device']!r} appears "
                                     f"again (first at line {seen[(key, name)]}); give each kernel's metric once (one run per file)")
        seen[(key, name)] = line
        rec = records.setdefault(key, {"kernel": row["Kernel"], "device": device, "line": line,
                                       **{c: np.nan for c in LAUNCH}, "counters": {}})
        rec["counters"][counter.column] = _nvprof_value(row["Avg"], counter, name, path, line)
        if counter.column in WORK_COUNTERS and row.get("Min", "").strip() and row.get("Max", "").strip():
            low, high = (_nvprof_value(row[c], counter, name, path, line) for c in ("Min", "Max"))
            if _different_runs(low, high):
                raise ProfileImportError(
                    f"{path}: line {line}: nvprof averaged {row.get('Invocations', 'several')} invocations of "
                    f"{row['Kernel']!r} whose {name} ranges from {low:g} to {high:g}: different runs (sizes), and "
                    "their average describes none; profile the reference's one run (nvprof --kernels "
                    "::NAME:INVOCATION picks one invocation) or use ncu, which keeps launches apart")
    return records, ignored


def read_profile(path) -> pd.DataFrame:
    """The counters perfml uses from an Nsight Compute or nvprof CSV export, one row per kernel launch configuration.

    Returns
    -------
    DataFrame
        Columns ``kernel`` (as the profiler names it), ``app_id`` (:func:`kernel_base_name`),
        ``device``, ``block_x .. grid_z`` (NaN where the export has no launch: nvprof),
        ``line`` (first line of the kernel in the file), ``n_launches`` and one column per
        :data:`COUNTERS` entry (perfml's names and units; NaN where not profiled). Several
        Nsight Compute launches of the same kernel and launch are one *run* combined by
        the median (as ``profiles_nca`` does for bitonic), unless their work counters
        tell them apart (:func:`_split_runs`: one kernel at several sizes with one launch,
        a grid-stride loop); then each run is a row of its own, ``run`` numbering them in
        order of work (0 = least) out of ``runs``. ``attrs``: ``format`` (ncu-details,
        ncu-raw, nvprof), ``ignored_metrics`` (sorted names perfml does not use), ``path``.

    Raises
    ------
    ProfileImportError
        Not a profiler CSV, a wrong column set, truncated or duplicate rows, an unknown
        unit on a used counter, or no counter perfml uses at all.
    """
    from perfml._files import not_a_file

    path = Path(path)
    what = not_a_file(path)
    if what is not None:
        raise ProfileImportError(f"--profile {str(path)!r} {what}; give the CSV of `ncu --csv` or `nvprof --csv`")
    lines = _lines(path)
    start = next((i for i, (_, f) in enumerate(lines) if _header_kind(f) is not None), None)
    if start is None:
        first = f"line {lines[0][0]} reads {','.join(lines[0][1])[:80]!r}" if lines else "the file has no CSV lines"
        raise ProfileImportError(
            f"{path}: no Nsight Compute or nvprof CSV header ({first}); expected the columns "
            f"{', '.join(_NCU_ID + _NCU_DETAILS)} (`ncu --csv`), {', '.join(_NCU_ID)} + metric columns (`ncu --csv --page raw`) "
            f"or {', '.join(_NVPROF[:3])}, Metric Name, Avg (`nvprof --csv --metrics ...`)")
    header_line, header = lines[start]
    kind = _header_kind(header)
    lines = lines[start:]
    rows = []
    if kind == "nvprof":
        records, ignored = _read_nvprof(lines, path)
        used_seen = bool(records)
        for rec in records.values():
            rows.append({k: rec[k] for k in ("kernel", "device", "line", *LAUNCH)} | {"cc": ""}  # nvprof gives no CC
                        | {"n_launches": 1, "run": 0, "runs": 1} | rec["counters"])
    else:
        launches, ignored = _read_ncu(lines, header_line, kind, path)
        used_seen = any(rec["values"] for rec in launches.values())
        groups: dict[tuple, list] = {}
        for rec in launches.values():
            counters = _ncu_counters(rec["values"], path, rec["line"], rec["kernel"])
            key = (rec["kernel"], rec["device"], *[("nan" if np.isnan(rec[c]) else rec[c]) for c in LAUNCH])
            groups.setdefault(key, []).append((rec, counters))
        for items in groups.values():
            runs = _split_runs([c for _, c in items])
            for run, members in enumerate(runs):
                rec = items[members[0]][0]
                table = pd.DataFrame([items[i][1] for i in members], dtype=float)
                rows.append({k: rec[k] for k in ("kernel", "device", "cc", "line", *LAUNCH)}
                            | {"n_launches": len(members), "run": run, "runs": len(runs)}
                            | table.median(skipna=True).to_dict())
    frame = pd.DataFrame(rows, columns=["kernel", "device", "cc", "line", *LAUNCH, "n_launches", "run", "runs"])
    frame[["run", "runs"]] = frame[["run", "runs"]].astype(int)  # every row sets both
    for column in COUNTERS:
        frame[column] = [r.get(column, np.nan) for r in rows] if rows else pd.Series(dtype=float)
    frame[list(COUNTERS)] = frame[list(COUNTERS)].astype(float)
    if frame.empty or not frame[list(COUNTERS)].notna().to_numpy().any():
        found = sorted(n for n in ignored if n)
        if used_seen:  # used metrics were there, every value n/a
            raise ProfileImportError(f"{path}: every counter perfml uses is n/a in this export (ncu writes n/a for a metric "
                                     "the device or the tool version does not support); profile at least one of: "
                                     f"{accepted_names()}")
        shown = ", ".join(found[:8]) + (f" (+{len(found) - 8} more)" if len(found) > 8 else "") if found else "none"
        raise ProfileImportError(f"{path}: no counter perfml uses (metrics found: {shown}); profile at least one of: "
                                 f"{accepted_names()}")
    frame.insert(1, "app_id", [kernel_base_name(k) for k in frame["kernel"]])
    frame.attrs.update(format=kind, ignored_metrics=sorted(n for n in ignored if n), path=str(path))
    return frame.reset_index(drop=True)


_CC = re.compile(r"\d{1,2}\.\d")


def _board_cc(board: str) -> str | None:
    """The registry's compute capability of ``board`` ("9.0"), or None where it does not give one."""
    from perfml.boards import get_board
    from perfml.errors import PerfmlError

    try:
        return get_board(board).compute_capability or None
    except PerfmlError:
        return None


def _device_board(device: str):
    """The registry board a profile's device string names, or None (ncu often gives only an index)."""
    from perfml.boards import resolve_board_name
    from perfml.errors import PerfmlError

    text = str(device or "").strip()
    if not text or text.isdigit():
        return None
    for candidate in (text, text.removeprefix("NVIDIA ").strip()):
        try:
            return resolve_board_name(candidate)
        except PerfmlError:
            continue
    return None


def attach_profile(profile: pd.DataFrame, reference: pd.DataFrame, *, reference_raw: pd.DataFrame | None = None,
                   where: str = "--profile", reference_where: str = "--reference") -> pd.DataFrame:
    """The profile's counters attached to the ``--reference`` rows of the same kernel and launch.

    A profiled kernel matches a reference row when the row's ``app_id`` (or its optional
    ``kernel_name`` / ``kernel`` column, from ``reference_raw``) is the kernel's base name
    (:func:`kernel_base_name`) or its full name, and every launch dimension both give
    agrees. Where the profile names its device and the device resolves in the board
    registry (nvprof writes ``"Tesla K20c (0)"``), only reference rows of that board match;
    where it does not (ncu's ``Device`` is an index), ncu's ``CC`` column does the same by
    compute capability (rows of boards of another CC do not match).

    Returns
    -------
    DataFrame
        One row per matched reference run: ``board``, ``app_id``, ``input_size``,
        ``block_x``, ``block_y`` (the reference's launch, else the profile's) and the
        :data:`COUNTERS` columns: the rows ``profiles_nca`` would hold for that run.

    Raises
    ------
    ProfileImportError
        A profiled kernel matches no reference row (naming the kernels, their lines and
        the reference's kernels), matches runs of several boards or sizes (a profile
        carries no input size), a reference run is matched twice, or the launch block
        is known from neither file. A profile holding k runs of one kernel and launch
        (:func:`read_profile` ``runs``) pairs them with the reference's sizes of it in
        increasing order (``attrs["paired_by_work"]`` lists each pair), and only when
        the reference holds exactly k sizes of it on one board: the run that does the
        least work is the smallest size.
    """
    names = [{str(a)} for a in reference["app_id"]]
    if reference_raw is not None:
        for column in ("kernel_name", "kernel"):
            if column in reference_raw.columns:
                for i, value in enumerate(reference_raw[column].astype(str).str.strip()):
                    if value:
                        names[i] |= {value, kernel_base_name(value)}
    boards = reference["board"].to_numpy()
    sizes = reference["input_size"].to_numpy(dtype=float)
    second = (np.nan_to_num(reference["input_size_2"].to_numpy(dtype=float), nan=0.0)
              if "input_size_2" in reference.columns else np.zeros(len(reference)))
    launch = {c: reference[c].to_numpy(dtype=float) if c in reference.columns else np.full(len(reference), np.nan)
              for c in LAUNCH}
    unmatched, out, owner, paired, positions = [], [], {}, [], []
    for _, p in profile.iterrows():
        hit = np.array([p["app_id"] in n or p["kernel"] in n for n in names], dtype=bool)
        for c in LAUNCH:
            if np.isfinite(p[c]):
                hit &= ~(np.isfinite(launch[c]) & (launch[c] != p[c]))
        board = _device_board(p["device"])
        if board is not None and hit.any():
            if not (hit & (boards == board)).any():
                raise ProfileImportError(
                    f"{where}: line {p['line']}, kernel {p['kernel']!r}: profiled on {p['device']!r} (board {board}), but "
                    f"{reference_where} has this kernel and launch only on {', '.join(sorted(set(boards[hit])))}; "
                    "profile on the reference's board or add the reference measurement of this board")
            hit &= boards == board
        elif board is None and hit.any() and _CC.fullmatch(str(p.get("cc", "") or "")):
            # the device named no registry board (an index, a name it does not know): its compute capability
            # still tells which reference boards it can be (a CC 9.0 export was attached to a GTX-680's row)
            same = np.array([_board_cc(b) in (None, str(p["cc"])) for b in boards], dtype=bool)
            if not (hit & same).any():
                raise ProfileImportError(
                    f"{where}: line {p['line']}, kernel {p['kernel']!r}: profiled on a device of compute capability "
                    f"{p['cc']} ({p['device']!r}), but {reference_where} has this kernel and launch only on "
                    f"{', '.join(f'{b} ({_board_cc(b)})' for b in sorted(set(boards[hit])))}; profile on the reference's "
                    "board or add the reference measurement of this board")
            hit &= same
        rows = np.flatnonzero(hit)
        if rows.size == 0:
            unmatched.append(p)
            continue
        runs = sorted({(boards[i], sizes[i], second[i]) for i in rows}, key=lambda r: (r[1], r[2], r[0]))
        listed = ", ".join(f"row {i + 1} ({boards[i]}, input_size {sizes[i]:g})" for i in rows[:5])
        n_runs = int(p.get("runs", 1))
        if n_runs > 1:
            # a grid-stride kernel profiled at several sizes: runs pair with sizes in order of work
            if len({r[0] for r in runs}) > 1 or len(runs) != n_runs:
                raise ProfileImportError(
                    f"{where}: line {p['line']}, kernel {p['kernel']!r}: the profile holds {n_runs} runs of this kernel and "
                    f"launch (their work counters differ), and {reference_where} has {len(runs)} run(s) of it: {listed}; "
                    "perfml pairs them in order of size only when the reference holds as many sizes of it on one board: "
                    "profile exactly the reference's runs (ncu --launch-skip / --launch-count), or add the reference "
                    "times of the other profiled sizes")
            board_, size_, second_ = runs[int(p["run"])]
            rows = np.array([i for i in rows if (boards[i], sizes[i], second[i]) == (board_, size_, second_)])
            paired.append(f"{p['kernel']} run {int(p['run']) + 1} of {n_runs} -> input_size {size_:g}")
        elif len(runs) > 1:
            raise ProfileImportError(
                f"{where}: line {p['line']}, kernel {p['kernel']!r}: a profile carries no input size, and this kernel and "
                f"launch match several runs of {reference_where}: {listed}; profile each of these sizes (perfml tells "
                "the launches apart by their work counters and pairs them with the sizes in order), keep one of them "
                "in the reference, or use launches (ncu Block/Grid Size, reference block_x/grid_x) that tell them apart")
        for i in rows:
            if i in owner:
                raise ProfileImportError(
                    f"{where}: lines {owner[i]} and {p['line']} both profile {reference_where} row {i + 1} "
                    f"({boards[i]}, {reference['app_id'].iloc[i]}, input_size {sizes[i]:g}); keep one profile per run")
            owner[i] = p["line"]
        i = rows[0]
        block = {}
        for c in ("block_x", "block_y"):
            block[c] = launch[c][i] if np.isfinite(launch[c][i]) else p[c]
        if not np.isfinite(block["block_x"]):
            raise ProfileImportError(
                f"{where}: line {p['line']}, kernel {p['kernel']!r}: the launch block is in neither file (nvprof summaries "
                f"carry none); add block_x and block_y to {reference_where} row {i + 1}, or profile with ncu")
        if not np.isfinite(block["block_y"]):
            block["block_y"] = 1.0
        out.append({"board": boards[i], "app_id": str(reference["app_id"].iloc[i]), "input_size": sizes[i], **block,
                    **{c: p[c] for c in COUNTERS}})
        positions.append([int(j) for j in rows])
    if unmatched:
        listed = ", ".join(f"{q['kernel']!r} (line {q['line']})" for q in unmatched[:5])
        more = f" and {len(unmatched) - 5} more" if len(unmatched) > 5 else ""
        known = ", ".join(sorted(set().union(*names)))[:200]
        raise ProfileImportError(
            f"{where}: profiled kernel(s) {listed}{more} match no row of {reference_where} (kernels there: {known}); name "
            "each kernel in the reference's app_id (or a kernel_name column) as the profiler does, with the same launch, "
            "or filter the export to the reference's kernels (ncu --kernel-name, nvprof --kernels)")
    frame = pd.DataFrame(out, columns=["board", "app_id", "input_size", "block_x", "block_y", *COUNTERS])
    frame.attrs.update(profile.attrs, reference_rows=len(owner), paired_by_work=paired, reference_positions=positions)
    return frame


#: The work a profile counted on a reference run, as columns of that reference row
#: (:func:`with_profiled_work`): FP32 FLOPs, DRAM bytes (read and write sectors x 32 B),
#: warp instructions executed and FP64 FLOPs (the order of
#: :func:`perfml.closed_form.roofline.profiled_roofline_terms`' arguments).
PROFILED_WORK = ("profiled_flops", "profiled_dram_bytes", "profiled_warp_instructions", "profiled_dp_flops")
#: bytes per DRAM transaction of nvprof's dram_read/write_transactions and ncu's dram__sectors (a sector)
SECTOR_BYTES = 32.0


def profiled_work(attached: pd.DataFrame) -> pd.DataFrame:
    """The :data:`PROFILED_WORK` of each attached run, from its counters; NaN where a counter is missing.

    DRAM bytes need both the read and the write count (a profile of reads alone would
    make a kernel that writes look lighter than it is).
    """
    def counter(column):  # an export of another tool version may lack a column: NaN
        return attached[column].to_numpy(dtype=float) if column in attached else np.full(len(attached), np.nan)

    reads, writes = counter("m.Device Memory Read Transactions"), counter("m.Device Memory Write Transactions")
    return pd.DataFrame({"profiled_flops": counter("m.Floating Point Operations(Single Precision)"),
                         "profiled_dram_bytes": SECTOR_BYTES * (reads + writes),
                         "profiled_warp_instructions": counter("e.inst_executed"),
                         "profiled_dp_flops": counter("m.Floating Point Operations(Double Precision)")},
                        index=attached.index)


def with_profiled_work(reference: pd.DataFrame, attached: pd.DataFrame) -> pd.DataFrame:
    """``reference`` with the :data:`PROFILED_WORK` columns of the runs ``attached`` covers (NaN elsewhere).

    ``attached`` is :func:`attach_profile` of the same reference (its
    ``attrs["reference_positions"]`` says which reference rows each profiled run is).
    """
    out = reference.copy()
    work = profiled_work(attached).to_numpy(dtype=float)
    values = np.full((len(reference), len(PROFILED_WORK)), np.nan)
    for k, rows in enumerate(attached.attrs.get("reference_positions", [])):
        values[rows] = work[k]
    for j, column in enumerate(PROFILED_WORK):
        out[column] = values[:, j]
    return out


#: the board under which the user's counters join the profile table: no board's name ("<" is
#: not allowed in one), so no query row's own board leaves them out
PROFILE_BOARD = "<--profile>"


def use_reference_profile(model, attached: pd.DataFrame) -> str | None:
    """Make the attached counters the profile features of the same runs; return a warning, or None.

    The model's profile table (:class:`~perfml.learned.features.profiles.ProfileFeatures`,
    ``profile_values_``: per board and run, the training boards' counters) gains the user's
    rows; the training boards' rows of the same runs (app, input size, block) are dropped,
    so the user's profile of their kernel is what describes it (their ``--reference`` comes
    first in the order of knowledge, issue 10 section 2).

    The user's counters describe the kernel, not a board: they join the table under
    :data:`PROFILE_BOARD`, so every board's row of the run sees them, the profiled board's
    own included. (A training row sees the other boards' counters only,
    :func:`~perfml.learned.features._common.other_boards_median`; kept under the profiled
    board's name, the user's counters were hidden from that board's own row, and a
    ``--reference`` prediction's board ratio compared a target row that saw them with a
    reference row that saw none. On the H200 from the H100's measurements and its Nsight
    Compute export that cost 0.5 points, 10.47 -> 10.98 % MAPE on 56 application runs;
    with the counters on both rows every prediction stays within 0.1 % of the one without
    the profile, ``tests/test_profile_measured.py``.)
    The model is changed in memory only (the CLI loads it for one call).
    """
    from perfml.learned.features._common import PROFILE_KEY
    from perfml.learned.features.profiles import profile_feature_values

    features = getattr(model, "features_", None)
    if features is None or not getattr(features, "profiles", False) or getattr(features, "profile_values_", None) is None:
        return ("the model has no profile features (trained with profiles off); the --profile counters were checked "
                "but do not change the predictions")
    user = profile_feature_values(attached, getattr(model, "registry", None))  # MEMTHR / ARITHTHR on the profiled board
    user["board"] = PROFILE_BOARD
    table = features.profile_values_
    keys = user[PROFILE_KEY].astype({"input_size": float}).drop_duplicates()
    flagged = table[PROFILE_KEY].astype({"input_size": float}).merge(keys, how="left", indicator=True)
    keep = (flagged["_merge"] == "left_only").to_numpy()
    features.profile_values_ = pd.concat([table[keep], user], ignore_index=True)
    return None


def read_reference_profile(path, reference: pd.DataFrame | None, reference_path=None) -> pd.DataFrame:
    """``--profile PATH`` for the CLI: read it (:func:`read_profile`) and attach it to the reference rows.

    Raises
    ------
    ProfileImportError
        No ``--reference`` was given (a profile describes the user's measured runs), or
        :func:`read_profile` / :func:`attach_profile` refuse the file.
    """
    if reference is None:
        raise ProfileImportError(f"--profile {path}: a profile needs --reference R.csv with application rows (your measured "
                                 "times of the profiled runs, query columns + time_ms); add --reference, or drop --profile")
    # the reference as text, for its optional kernel_name column (read_reference keeps only what it checks;
    # it has already read this file, so it is a readable CSV)
    from perfml._csv_header import read_text_csv

    raw = read_text_csv(reference_path) if reference_path is not None else None
    if raw is not None and "file_rows" in reference.attrs:  # a mixed file: the application rows only
        raw = raw.iloc[reference.attrs["file_rows"]].reset_index(drop=True)
    attached = attach_profile(read_profile(path), reference, reference_raw=raw, where=f"--profile {path}",
                              reference_where=f"--reference {reference_path}")
    check_profiled_work(attached, reference, f"--profile {path}", f"--reference {reference_path}")
    return attached


def check_profiled_work(attached: pd.DataFrame, reference: pd.DataFrame, where: str, reference_where: str) -> None:
    """Refuse a profiled run that did no work, or more than its board can do in the reference's time.

    * ``inst_executed`` 0: a kernel that ran executed instructions; a profile of none is of
      a launch that did nothing (or a metric of another kernel), and its counters were
      taken as the kernel's work.
    * Work above the board's roofline in the measured time: the reference row's time
      below :func:`perfml.closed_form.roofline.profiled_roofline_ms` of the counted work,
      divided by :data:`~perfml.characterize.limits.MAX_OVER_SPEC` (the rule of
      :func:`~perfml.characterize.limits.first_unphysical_time` for a measured time);
      a ``flop_count_sp`` of 1e17 on a 0.11 ms GTX-680 run was taken as the kernel's work.
      The counted DRAM bytes are DRAM traffic, so no cache discount applies.
    """
    from perfml.characterize.limits import MAX_OVER_SPEC
    from perfml.closed_form.roofline import profiled_roofline_terms

    work = profiled_work(attached)
    instructions = work["profiled_warp_instructions"].to_numpy(dtype=float)
    positions = attached.attrs.get("reference_positions", [[k] for k in range(len(attached))])
    for k in np.flatnonzero(instructions == 0):
        row = positions[k][0]
        raise ProfileImportError(
            f"{where}: kernel {attached['app_id'].iloc[k]!r} ({reference_where} row {row + 1}) executed no instruction "
            "(inst_executed 0): a kernel that ran executes some; export the counters of the launch you timed")
    terms = profiled_roofline_terms(attached["board"].to_numpy(), *(work[c].to_numpy(dtype=float) for c in PROFILED_WORK))
    names = ("FP32 FLOPs", "DRAM bytes", "warp instructions", "FP64 FLOPs")
    for k, rows in enumerate(positions):
        if np.isnan(terms[k]).all():
            continue
        bound_ms = 1e3 * float(np.nanmax(terms[k]))
        slowest = int(np.nanargmax(terms[k]))
        for row in rows:
            time_ms = float(reference["time_ms"].iloc[row])
            if time_ms * MAX_OVER_SPEC < bound_ms:
                raise ProfileImportError(
                    f"{where}: kernel {attached['app_id'].iloc[k]!r}: its {names[slowest]} "
                    f"({work.iloc[k, slowest]:.4g}) take at least {bound_ms:.4g} ms on {attached['board'].iloc[k]} at "
                    f"its peak, and {reference_where} row {row + 1} measured it in {time_ms:.4g} ms, "
                    f"{bound_ms / time_ms:.3g}x faster (more than {MAX_OVER_SPEC}x is not physical); the profile is of "
                    "another run, or its counters' units are wrong (counts, not thousands)")


def describe_profile(attached: pd.DataFrame) -> str:
    """One line for the CLI: what the profile gave (runs, counters) and how many metrics were ignored."""
    given = [c for c in COUNTERS if attached[c].notna().any()]
    ignored = attached.attrs.get("ignored_metrics", [])
    paired = attached.attrs.get("paired_by_work", [])
    order = (f"; {len(paired)} run(s) of kernels profiled at several sizes with one launch were paired with the "
             "reference's sizes in order of their work counters" if paired else "")
    return (f"profile: counters of {len(attached)} reference run(s), {len(given)} of the {len(COUNTERS)} counters perfml "
            f"uses; {len(ignored)} metric(s) perfml does not use were ignored{order}")
