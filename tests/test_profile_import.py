"""``--profile FILE``: Nsight Compute / nvprof CSV exports mapped onto perfml's profile counters (issue 10, sections 2 and 4).

Every CSV here is SYNTHETIC: written by the test in the layouts of real exports (ncu
details page: columns of the microsoft/superbenchmark and nsightful fixtures; ncu raw
page: header + units line; nvprof: the ``==<pid>==`` preamble and the header of
``nvprof --csv --metrics``), with made-up kernels and values. The expected numbers follow
from the values written and the unit rules of :mod:`perfml.learned.profile_import`.
"""

from __future__ import annotations

import math
import types

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfml.errors import ProfileImportError
from perfml.learned.profile_import import (
    COUNTERS,
    PROFILED_WORK,
    attach_profile,
    kernel_base_name,
    read_profile,
    use_reference_profile,
    with_profiled_work,
)

NCU_HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
              '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
KERNEL = "void my_kernel<int=4>(float const*, float*, int)"


def ncu_row(metric, unit, value, *, launch_id=0, kernel=KERNEL, block="(256, 1, 1)", grid="(16, 1, 1)", device="0",
            cc=""):
    # cc: the device's compute capability, left empty here (it was an arbitrary 8.0 beside boards of
    # other compute capabilities, which the import now refuses when the device is only an index)
    return (f'"{launch_id}","4242","app","host","{kernel}","1","7","{block}","{grid}","{device}","{cc}",'
            f'"Command line profiler metrics","{metric}","{unit}","{value}"')


def write(tmp_path, text, name="profile.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def ncu_file(tmp_path, *rows, preamble=True):
    lines = (["==PROF== Connected to process 4242 (/home/u/app)"] if preamble else []) + [NCU_HEADER, *rows]
    return write(tmp_path, "\n".join(lines) + "\n")


def nvprof_file(tmp_path, *rows, events=()):
    lines = ["==4242== NVPROF is profiling process 4242, command: ./app", "==4242== Profiling application: ./app",
             "==4242== Profiling result:"]
    if events:
        lines += ["==4242== Event result:", '"Device","Kernel","Invocations","Event Name","Min","Max","Avg","Total"', *events]
    lines += ["==4242== Metric result:", '"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"', *rows]
    return write(tmp_path, "\n".join(lines) + "\n")


def nv_metric(name, value, *, kernel="my_kernel(float*, int)", device="Tesla K40c (0)"):
    return f'"{device}","{kernel}",3,"{name}","{name} description",{value},{value},{value}'


# ---------------------------------------------------------------- happy paths ----
def test_ncu_details_export_gives_perfml_counters_in_perfml_units(tmp_path):
    path = ncu_file(
        tmp_path,
        ncu_row("dram__sectors_read.sum", "Msector", "1.5"),
        ncu_row("smsp__inst_executed.sum", "inst", "1,048,576"),
        ncu_row("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", "%", "87.5"),
        ncu_row("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sector", "4096"),
        ncu_row("gpu__time_duration.sum", "usecond", "12.5"),
        ncu_row("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "73.2"),
    )
    prof = read_profile(path)
    assert len(prof) == 1
    row = prof.iloc[0]
    assert row["app_id"] == "my_kernel" and row["kernel"] == KERNEL
    assert (row["block_x"], row["block_y"], row["grid_x"]) == (256, 1, 16)
    assert row["m.Device Memory Read Transactions"] == 1.5e6  # Msector -> sectors
    assert row["e.inst_executed"] == 1048576  # thousands separators removed
    assert row["m.Global Memory Load Efficiency"] == 87.5  # percent stays percent (profiles_nca stores percent)
    assert row["m.Global Load Transactions"] == 4096
    assert math.isnan(row["m.Global Store Transactions"])  # not profiled
    assert row["line"] == 3  # the preamble is line 1, the header line 2
    assert prof.attrs["format"] == "ncu-details"
    assert prof.attrs["ignored_metrics"] == ["gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed"]


def test_ncu_dram_bytes_give_the_dram_sectors_where_no_sector_metric_was_exported(tmp_path):
    """dram__bytes_read/write.sum (what many exports ask for) read as sectors of 32 bytes."""
    prof = read_profile(ncu_file(tmp_path, ncu_row("dram__bytes_read.sum", "Mbyte", "3.2"),
                                 ncu_row("dram__bytes_write.sum", "byte", "6,400")))
    assert prof.iloc[0]["m.Device Memory Read Transactions"] == pytest.approx(1e5)
    assert prof.iloc[0]["m.Device Memory Write Transactions"] == pytest.approx(200)
    assert prof.attrs["ignored_metrics"] == []


def test_ncu_dram_sectors_win_over_bytes_when_both_were_exported(tmp_path):
    prof = read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "100"),
                                 ncu_row("dram__bytes_read.sum", "byte", "3,300")))
    assert prof.iloc[0]["m.Device Memory Read Transactions"] == 100
    # a sector count exported as n/a leaves the bytes to give it
    prof = read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "", "n/a"),
                                 ncu_row("dram__bytes_read.sum", "byte", "3,200")))
    assert prof.iloc[0]["m.Device Memory Read Transactions"] == 100


def test_ncu_raw_page_with_units_line_and_repeated_launches_takes_the_median(tmp_path):
    ident = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC"'
    header = ident + ',"dram__sectors_write.sum","sm__cycles_elapsed.sum","launch__registers_per_thread"'
    units = '"","","","","","","","","","","","Ksector","cycle","register/thread"'
    rows = [f'"{i}","1","app","h","saxpy(int, float, float*)","1","7","(128, 2, 1)","(64, 1, 1)","0","7.5","{w}","{c}","32"'
            for i, (w, c) in enumerate([("2", "1,000"), ("4", "3,000"), ("3", "2,000")])]
    prof = read_profile(write(tmp_path, "\n".join(["==PROF== Connected", header, units, *rows]) + "\n"))
    assert prof.attrs["format"] == "ncu-raw"
    row = prof.iloc[0]
    assert row["n_launches"] == 3
    assert row["m.Device Memory Write Transactions"] == 3000.0  # median of 2, 4, 3 Ksector
    assert row["e.elapsed_cycles_sm"] == 2000.0
    assert (row["block_x"], row["block_y"]) == (128, 2)
    assert prof.attrs["ignored_metrics"] == ["launch__registers_per_thread"]


def test_nvprof_metrics_and_events_export(tmp_path):
    path = nvprof_file(
        tmp_path,
        nv_metric("gld_transactions", "100"),
        nv_metric("gld_efficiency", "50.000000%"),
        nv_metric("gld_transactions_per_request", "4.000000"),
        nv_metric("achieved_occupancy", "0.994450"),
        nv_metric("dram_read_throughput", "1.1655GB/s"),  # not used by perfml: ignored, its unit unchecked
        events=['"Tesla K40c (0)","my_kernel(float*, int)",3,"elapsed_cycles_sm",10,30,20,60',
                '"Tesla K40c (0)","my_kernel(float*, int)",3,"gld_inst_32bit",7,7,7,21'],
    )
    prof = read_profile(path)
    assert len(prof) == 1
    row = prof.iloc[0]
    assert row["device"] == "Tesla K40c"
    assert row["m.Global Load Transactions"] == 100
    assert row["m.Global Memory Load Efficiency"] == 50.0
    assert row["m.Global Load Transactions Per Request"] == 4.0
    assert row["e.elapsed_cycles_sm"] == 20  # Avg over invocations, not Total
    assert row["e.gld_inst_32bit"] == 7
    assert np.isnan(row["block_x"])  # an nvprof summary has no launch
    assert prof.attrs["format"] == "nvprof"
    assert prof.attrs["ignored_metrics"] == ["achieved_occupancy", "dram_read_throughput"]


@pytest.mark.parametrize(("unit", "value", "expected"), [
    ("sector", "1000", 1000.0), ("", "7", 7.0), ("Ksector", "1.5", 1500.0), ("Msector", "2", 2e6),
    ("Gsector", "0.25", 2.5e8), ("sector", "12,345,678", 12345678.0), ("sector", "1.5e3", 1500.0),
])
def test_ncu_count_units_are_scaled_to_plain_counts(tmp_path, unit, value, expected):
    prof = read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_write.sum", unit, value)))
    assert prof["m.Device Memory Write Transactions"].iloc[0] == expected


def test_a_sum_counter_adds_its_weighted_terms(tmp_path):
    # flop_count_sp = fadd + fmul + 2 * ffma, flop_count_dp = dadd + dmul + 2 * dfma (Metric Comparison table)
    rows = [ncu_row(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum", "inst", v)
            for op, v in (("fadd", "10"), ("fmul", "20"), ("ffma", "30"), ("dadd", "1"), ("dmul", "2"), ("dfma", "3"))]
    prof = read_profile(ncu_file(tmp_path, *rows))
    assert prof["m.Floating Point Operations(Single Precision)"].iloc[0] == 10 + 20 + 2 * 30
    assert prof["m.Floating Point Operations(Double Precision)"].iloc[0] == 1 + 2 + 2 * 3


def test_the_mapping_names_a_source_for_every_counter_perfml_uses():
    from perfml.learned.features._common import PROFILE_METRICS

    used = set(PROFILE_METRICS.values()) | {"e.elapsed_cycles_sm", "m.Floating Point Operations(Single Precision)",
                                            "m.Floating Point Operations(Double Precision)"}
    assert used == set(COUNTERS)
    assert all(c.source for c in COUNTERS.values())
    assert all(c.ncu_units for c in COUNTERS.values() if c.ncu)


@pytest.mark.parametrize(("name", "base"), [
    ("void my_kernel<int=4>(float const*, float*, int)", "my_kernel"),
    ("Bitonic_Sort(int*, int, int, int)", "Bitonic_Sort"),
    ("saxpy", "saxpy"),
    ("void ns::inner::k<(anonymous namespace)::T, 2>(T*)", "k"),
])
def test_kernel_base_name(name, base):
    assert kernel_base_name(name) == base


# ------------------------------------------------------------------ bad input ----
@pytest.mark.parametrize(("metric", "unit", "value"), [
    ("dram__sectors_read.sum", "byte", "64"),  # a byte count is not a sector count
    ("dram__sectors_read.sum", "sector/second", "64"),
    ("dram__bytes_read.sum", "sector", "64"),  # the bytes metric in sectors
    ("dram__bytes_write.sum", "byte/second", "64"),
    ("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", "", "87.5"),  # a percentage needs %
])
def test_an_unknown_ncu_unit_on_a_used_metric_names_file_line_metric_and_units(tmp_path, metric, unit, value):
    path = ncu_file(tmp_path, ncu_row(metric, unit, value))
    with pytest.raises(ProfileImportError) as err:
        read_profile(path)
    message = str(err.value)
    assert str(path) in message and "line 3" in message and metric in message and repr(unit) in message
    assert "accepted units" in message and "\n" not in message


@pytest.mark.parametrize(("metric", "value"), [
    ("gld_transactions", "1.2GB/s"), ("gld_efficiency", "50.0"), ("gld_transactions", "Low (1)"), ("gld_transactions", "inf"),
])
def test_an_unknown_nvprof_unit_on_a_used_metric_is_refused(tmp_path, metric, value):
    with pytest.raises(ProfileImportError, match=rf"line 6, metric {metric}: unknown unit or value"):
        read_profile(nvprof_file(tmp_path, nv_metric(metric, value)))


@pytest.mark.parametrize("value", ["27.595.520", "1_000", "inf", "nan", "12 34", "0x10"])  # European locale, Python-only forms
def test_a_non_numeric_ncu_value_is_refused(tmp_path, value):
    with pytest.raises(ProfileImportError, match="is not a number"):
        read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", value)))


def test_only_unknown_metrics_is_an_error_listing_the_accepted_names(tmp_path):
    path = ncu_file(tmp_path, ncu_row("gpu__time_duration.sum", "usecond", "12.5"), ncu_row("foo__bar.sum", "", "1"))
    with pytest.raises(ProfileImportError) as err:
        read_profile(path)
    message = str(err.value)
    assert "no counter perfml uses" in message and "foo__bar.sum" in message and "gpu__time_duration.sum" in message
    assert "dram__sectors_read.sum" in message and "gld_transactions" in message  # the fix: the accepted names


def test_an_unknown_metric_next_to_used_ones_is_ignored_and_counted(tmp_path):
    prof = read_profile(nvprof_file(tmp_path, nv_metric("gst_transactions", "5"), nv_metric("made_up_metric", "?!")))
    assert prof["m.Global Store Transactions"].iloc[0] == 5
    assert prof.attrs["ignored_metrics"] == ["made_up_metric"]


def test_a_partial_sum_names_the_missing_terms(tmp_path):
    path = ncu_file(tmp_path, ncu_row("lts__t_sectors_op_read.sum", "sector", "10"))
    with pytest.raises(ProfileImportError, match="lts__t_sectors_op_atom.sum, lts__t_sectors_op_red.sum is missing"):
        read_profile(path)


@pytest.mark.parametrize("text", [
    "",  # empty
    "==PROF== Connected to process 1\n==PROF== Disconnected from process 1\n",  # only log lines
    "board,app_id,input_size,time_ms\nGTX-680,k,1024,0.5\n",  # a reference, not a profile: wrong column set
    '"ID","Process ID","Kernel"\n"0","1","k"\n',  # neither layout
    "\x89PNG\r\n\x1a\n",
])
def test_a_file_that_is_no_profiler_export_is_refused(tmp_path, text):
    path = write(tmp_path, text)
    with pytest.raises(ProfileImportError, match=r"no Nsight Compute or nvprof CSV header|not UTF-8") as err:
        read_profile(path)
    assert str(path) in str(err.value)


def test_a_truncated_ncu_export_names_the_line(tmp_path):
    good = ncu_row("dram__sectors_read.sum", "sector", "10")
    path = ncu_file(tmp_path, good, good.replace('"dram__sectors_read.sum"', '"dram__sectors_write.sum"')[:60])
    with pytest.raises(ProfileImportError, match=r"line 4: \d+ columns where the header \(line 2\) needs 15"):
        read_profile(path)


def test_a_truncated_nvprof_export_names_the_line(tmp_path):
    path = nvprof_file(tmp_path, nv_metric("gld_transactions", "1"), '"Tesla K40c (0)","my_kernel(float*, int)",3,"gst_tr')
    with pytest.raises(ProfileImportError, match="line 7: 4 columns where the header has 8"):
        read_profile(path)


def test_garbage_csv_quoting_is_refused(tmp_path):
    path = ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "10") + '"x"\x00')
    with pytest.raises(ProfileImportError):
        read_profile(path)


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(ProfileImportError, match="does not exist"):
        read_profile(tmp_path / "nope.csv")
    with pytest.raises(ProfileImportError, match="is a directory"):
        read_profile(tmp_path)


def test_a_duplicate_ncu_metric_of_one_launch_is_refused(tmp_path):
    row = ncu_row("dram__sectors_read.sum", "sector", "10")
    with pytest.raises(ProfileImportError, match=r"line 4: metric dram__sectors_read.sum of launch ID 0 appears again \(first at line 3\)"):
        read_profile(ncu_file(tmp_path, row, row))


def test_a_duplicate_nvprof_kernel_metric_is_refused(tmp_path):
    with pytest.raises(ProfileImportError, match=r"line 7: gld_transactions .* appears again \(first at line 6\)"):
        read_profile(nvprof_file(tmp_path, nv_metric("gld_transactions", "1"), nv_metric("gld_transactions", "2")))


def test_two_launches_of_one_kernel_at_different_launches_are_two_rows(tmp_path):
    prof = read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "10", launch_id=0),
                                 ncu_row("dram__sectors_read.sum", "sector", "20", launch_id=1, grid="(32, 1, 1)")))
    assert sorted(prof["grid_x"]) == [16, 32] and (prof["n_launches"] == 1).all()


def test_bad_launch_dims_are_refused(tmp_path):
    with pytest.raises(ProfileImportError, match=r"column 'Block Size': expected launch dimensions"):
        read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "10", block="(0, 1, 1)")))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400))
def test_arbitrary_bytes_give_a_frame_or_a_typed_error(tmp_path, data):
    path = tmp_path / "fuzz.csv"
    path.write_bytes(data)
    try:
        frame = read_profile(path)
    except ProfileImportError as exc:
        assert "\n" not in str(exc)
    else:
        assert isinstance(frame, pd.DataFrame)


_TOKENS = st.sampled_from([NCU_HEADER, '"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"',
                           ncu_row("dram__sectors_read.sum", "sector", "10"), ncu_row("smsp__inst_executed.sum", "Kinst", "1"),
                           nv_metric("gld_efficiency", "5%"), nv_metric("gld_transactions", "3"), "==PROF== x", '"', ",,,",
                           "\x00", '"0","1"', "é"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_TOKENS, max_size=8))
def test_arbitrary_mixes_of_export_lines_give_a_frame_or_a_typed_error(tmp_path, lines):
    path = tmp_path / "mix.csv"
    path.write_text("\n".join(lines), encoding="utf-8")
    try:
        frame = read_profile(path)
    except ProfileImportError as exc:
        assert "\n" not in str(exc)
    else:
        assert frame[list(COUNTERS)].notna().to_numpy().any()


# --------------------------------------------------------- attach to reference ----
def reference(**extra):
    rows = [{"board": "GTX-680", "app_id": "my_kernel", "input_size": 4096.0, "time_ms": 0.25,
             "block_x": 256.0, "block_y": 1.0, "grid_x": 16.0, "grid_y": 1.0}]
    return pd.DataFrame(rows).assign(**extra)


def test_the_profile_attaches_to_the_reference_run_of_the_same_kernel_and_launch(tmp_path):
    prof = read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "10")))
    attached = attach_profile(prof, reference())
    assert attached[["board", "app_id", "input_size", "block_x", "block_y"]].iloc[0].tolist() == ["GTX-680", "my_kernel", 4096.0, 256.0, 1.0]
    assert attached["m.Device Memory Read Transactions"].iloc[0] == 10
    assert attached.attrs["reference_rows"] == 1


def test_a_profiled_kernel_matching_no_reference_row_is_named(tmp_path):
    prof = read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "10", kernel="other_kernel(int)")))
    with pytest.raises(ProfileImportError, match=r"profiled kernel\(s\) 'other_kernel\(int\)' \(line 3\) match no row of --reference .*kernels there: my_kernel"):
        attach_profile(prof, reference(), where="--profile p.csv")


def test_a_launch_that_disagrees_with_the_reference_does_not_match(tmp_path):
    prof = read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "10", block="(128, 1, 1)")))
    with pytest.raises(ProfileImportError, match="match no row"):
        attach_profile(prof, reference())


def test_a_kernel_name_column_of_the_reference_names_the_profiled_kernel(tmp_path):
    prof = read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "10", kernel="Bitonic_Sort(int*, int)")))
    ref = reference(app_id="bitonic")
    attached = attach_profile(prof, ref, reference_raw=pd.DataFrame({"kernel_name": ["Bitonic_Sort"]}))
    assert attached["app_id"].iloc[0] == "bitonic"


def test_an_nvprof_profile_matching_two_sizes_is_ambiguous(tmp_path):
    prof = read_profile(nvprof_file(tmp_path, nv_metric("gld_transactions", "3", device="GeForce GTX 680 (0)")))
    ref = pd.concat([reference(), reference(input_size=8192.0)], ignore_index=True)
    with pytest.raises(ProfileImportError, match="a profile carries no input size"):
        attach_profile(prof, ref)


def test_the_profiled_device_selects_the_reference_board(tmp_path):
    prof = read_profile(nvprof_file(tmp_path, nv_metric("gld_transactions", "3", device="GeForce GTX 680 (0)")))
    ref = pd.concat([reference(), reference(board="GTX-980")], ignore_index=True)
    attached = attach_profile(prof, ref)
    assert attached["board"].tolist() == ["GTX-680"]
    with pytest.raises(ProfileImportError, match="profiled on 'GeForce GTX 680'"):
        attach_profile(prof, reference(board="GTX-980"))


def test_the_compute_capability_of_an_unnamed_device_selects_the_reference_board(tmp_path):
    """ncu names the device by its index: its CC column (9.0) was ignored, and a GTX-680 reference
    row (3.0) took an H100's counters (thirty-third session)."""
    prof = read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "10", cc="5.2")))
    both = pd.concat([reference(), reference(board="GTX-980")], ignore_index=True)
    assert attach_profile(prof, both)["board"].tolist() == ["GTX-980"]  # the GTX-980 is 5.2, the GTX-680 3.0
    with pytest.raises(ProfileImportError, match=r"profiled on a device of compute capability 5.2 \('0'\), but "
                                                 r"--reference has this kernel and launch only on GTX-680 \(3.0\)"):
        attach_profile(prof, reference())
    unknown = read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "10", cc="")))
    assert len(attach_profile(unknown, reference())) == 1  # no CC given: any board of the reference


def test_an_nvprof_profile_needs_the_block_from_the_reference(tmp_path):
    prof = read_profile(nvprof_file(tmp_path, nv_metric("gld_transactions", "3", device="GeForce GTX 680 (0)")))
    with pytest.raises(ProfileImportError, match="the launch block is in neither file"):
        attach_profile(prof, reference().drop(columns=["block_x", "block_y", "grid_x", "grid_y"]))


def test_two_profiles_of_one_reference_run_are_refused(tmp_path):
    prof = read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "10", launch_id=0),
                                 ncu_row("dram__sectors_read.sum", "sector", "20", launch_id=1, kernel="my_kernel(double*)")))
    with pytest.raises(ProfileImportError, match="both profile --reference"):
        attach_profile(prof, reference())


# ------------------------------------- one launch at several sizes (grid-stride) ----
def three_sizes(tmp_path, *, repeat=1):
    """One kernel and launch profiled at three sizes (instructions 1e4, 8e4, 6.4e5), each `repeat` times."""
    rows, launch = [], 0
    for inst in (10000, 80000, 640000):
        for _ in range(repeat):
            rows += [ncu_row("smsp__inst_executed.sum", "inst", str(inst + launch % 2), launch_id=launch),
                     ncu_row("dram__sectors_read.sum", "sector", str(inst // 10), launch_id=launch)]
            launch += 1
    return ncu_file(tmp_path, *rows)


def test_launches_of_one_kernel_and_launch_that_differ_in_work_are_separate_runs(tmp_path):
    prof = read_profile(three_sizes(tmp_path, repeat=2))
    assert prof["runs"].tolist() == [3, 3, 3] and prof["run"].tolist() == [0, 1, 2]
    assert prof["n_launches"].tolist() == [2, 2, 2]
    assert prof["e.inst_executed"].tolist() == [10000.5, 80000.5, 640000.5]  # the median of each run's launches


def test_launches_within_the_run_tolerance_are_one_run(tmp_path):
    rows = [ncu_row("smsp__inst_executed.sum", "inst", str(v), launch_id=i) for i, v in enumerate((1000, 1100, 1200))]
    prof = read_profile(ncu_file(tmp_path, *rows))
    assert len(prof) == 1 and prof["n_launches"].iloc[0] == 3 and prof["e.inst_executed"].iloc[0] == 1100


def test_runs_pair_with_the_reference_sizes_in_order_of_work(tmp_path):
    ref = pd.concat([reference(input_size=s) for s in (65536.0, 4096.0, 1048576.0)], ignore_index=True)
    attached = attach_profile(read_profile(three_sizes(tmp_path)), ref)
    assert attached.sort_values("input_size")["e.inst_executed"].tolist() == [10000, 80001, 640000]
    assert len(attached.attrs["paired_by_work"]) == 3


def test_several_runs_against_one_reference_size_are_refused(tmp_path):
    with pytest.raises(ProfileImportError, match=r"holds 3 runs of this kernel and launch .* has 1 run\(s\) of it"):
        attach_profile(read_profile(three_sizes(tmp_path)), reference())


def test_an_nvprof_average_over_runs_of_different_work_is_refused(tmp_path):
    row = '"GeForce GTX 680 (0)","my_kernel(float*, int)",3,"inst_executed","Instructions Executed",1000,64000,21000'
    with pytest.raises(ProfileImportError, match="nvprof averaged 3 invocations .* ranges from 1000 to 64000"):
        read_profile(nvprof_file(tmp_path, row))


# ------------------------------------------------- the counters become features ----
def test_the_users_counters_are_the_profile_features_of_their_runs_on_other_boards(tmp_path):
    from perfml.learned.features.profiles import ProfileFeatures, profile_feature_values

    # a fitted profile table holding one training run of my_kernel (synthetic) on two boards
    training = pd.DataFrame({"board": ["GTX-970", "Tesla-K40"], "app_id": "my_kernel", "input_size": 4096.0,
                             "block_x": 256.0, "block_y": 1.0, "m.Global Load Transactions": [1e9, 1e9]})
    model = types.SimpleNamespace(registry=None, features_=types.SimpleNamespace(
        profiles=True, profile_values_=profile_feature_values(training)))
    prof = read_profile(ncu_file(tmp_path, ncu_row("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sector", "4096")))
    assert use_reference_profile(model, attach_profile(prof, reference())) is None
    group = ProfileFeatures()
    group.profile_values_ = model.features_.profile_values_
    query = pd.DataFrame({"board": ["GTX-980", "GTX-680"], "app_id": "my_kernel", "input_size": [4096, 4096]})
    launch = pd.DataFrame({"block_x": [256.0, 256.0], "block_y": [1.0, 1.0]})
    feats = group.transform(query, launch=launch)
    # the user's profile replaced the training boards' counters of the same run, and describes the
    # kernel on every board, the profiled one (GTX-680) included: a --reference ratio compares rows
    # that both see it
    assert feats["prof_gld_transactions"].tolist() == pytest.approx([math.log(4096)] * 2)


def test_a_model_without_profile_features_says_the_profile_is_unused(tmp_path):
    prof = read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "10")))
    model = types.SimpleNamespace(features_=types.SimpleNamespace(profiles=False))
    assert "no profile features" in use_reference_profile(model, attach_profile(prof, reference()))


# ------------------------------------------------------------------------ CLI ----
def test_a_profile_without_reference_exits_2_with_one_line_and_writes_nothing(tmp_path, capsys):
    from perfml.cli import main

    queries = tmp_path / "q.csv"
    pd.DataFrame([{"board": "GTX-980", "app_id": "my_kernel", "input_size": 4096}]).to_csv(queries, index=False)
    profile = ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "10"))
    out = tmp_path / "p.csv"
    code = main(["predict", "--model", str(tmp_path / "no-model"), "--queries", str(queries), "--output", str(out),
                 "--profile", str(profile)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().count("\n") == 0 and "needs --reference" in err and "Traceback" not in err
    assert not out.exists()


@pytest.fixture(scope="module")
def small_model_dir(tmp_path_factory):
    """A small xgboost model (10 trees) on vectorAdd and matMul_gpu of three boards of runtimes.csv.gz, profile group on."""
    from conftest import shared_data_home
    from perfml.learned.persistence import save_model
    from perfml.learned.regressors import RuntimeRegressor
    from perfml.learned.training import training_runtimes

    home = shared_data_home()
    rt = training_runtimes(data_home=home)
    rt = rt[rt.board.isin(["GTX-680", "GTX-970", "Tesla-K40"]) & rt.app_id.isin(["vectorAdd", "matMul_gpu"])]
    rt = rt[rt.groupby(["board", "app_id"]).input_size.rank(method="dense") % 4 == 0].reset_index(drop=True)
    model = RuntimeRegressor(data_home=home, learner_params={"n_estimators": 10, "max_depth": 2}, n_jobs=1,
                             shrinkage=1.0, board_features="relative").fit(rt, rt["measured_ms"])
    return save_model(model, tmp_path_factory.mktemp("profile") / "model", training_rows=rt), home


def _predict_cli(model_dir, tmp_path, *extra):
    from perfml.cli import main

    queries, ref, out = tmp_path / "q.csv", tmp_path / "ref.csv", tmp_path / "p.csv"
    pd.DataFrame([{"board": b, "app_id": "my_kernel", "input_size": 4096} for b in ("GTX-970", "Tesla-K40")]).to_csv(queries, index=False)
    reference().to_csv(ref, index=False)
    code = main(["predict", "--model", str(model_dir), "--queries", str(queries), "--output", str(out),
                 "--reference", str(ref), *extra])
    return code, out


def test_predict_with_a_profile_uses_the_users_counters(small_model_dir, tmp_path, capsys):
    from perfml.learned.persistence import load_model
    from perfml.learned.profile_import import read_reference_profile
    from perfml.learned.queries import predict_queries, read_reference

    model_dir, home = small_model_dir
    profile = ncu_file(tmp_path, ncu_row("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sector", "4096"),
                       ncu_row("dram__sectors_read.sum", "Ksector", "2"), ncu_row("smsp__inst_executed.sum", "inst", "65536"))
    code, out = _predict_cli(model_dir, tmp_path, "--profile", str(profile), "--data-home", str(home.path))
    err = capsys.readouterr().err
    assert code == 0, err
    assert "profile: counters of 1 reference run(s), 3 of the 18 counters perfml uses; 0 metric(s)" in err
    written = pd.read_csv(out)
    # the same through the library: the profile is in the profile features of the query rows
    model = load_model(model_dir, data_home=home)
    ref = read_reference(tmp_path / "ref.csv")
    attached = read_reference_profile(profile, ref, tmp_path / "ref.csv")
    assert use_reference_profile(model, attached) is None
    rows = pd.DataFrame({"board": ["GTX-970"], "app_id": ["my_kernel"], "input_size": [4096],
                         "block_x": [256.0], "block_y": [1.0], "grid_x": [16.0], "grid_y": [1.0]})
    feats = model.features_.transform(rows)
    assert feats["prof_gld_transactions"].iloc[0] == pytest.approx(math.log(4096))
    assert feats["prof_dram_read_tx"].iloc[0] == pytest.approx(math.log(2000))
    queries = pd.read_csv(tmp_path / "q.csv", dtype=str)
    # and the work it counted (here the warp instructions: the DRAM bytes need the writes too) carries the kernel
    expected = predict_queries(model, queries, "q.csv", reference=with_profiled_work(ref, attached))
    assert np.allclose(written["predicted_ms"], expected["predicted_ms"], rtol=1e-12)
    without_work = predict_queries(model, queries, "q.csv", reference=ref)
    assert not np.allclose(written["predicted_ms"], without_work["predicted_ms"], rtol=1e-3)


def test_predict_with_a_profile_of_another_kernel_exits_2_and_writes_nothing(small_model_dir, tmp_path, capsys):
    model_dir, home = small_model_dir
    profile = ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "10", kernel="their_kernel(int*)"))
    code, out = _predict_cli(model_dir, tmp_path, "--profile", str(profile), "--data-home", str(home.path))
    err = capsys.readouterr().err
    assert code == 2 and err.strip().count("\n") == 0 and "their_kernel" in err and "match no row" in err
    assert not out.exists()


def test_the_documented_mapping_is_the_code_mapping():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "profile_import.md").read_text()
    for counter in COUNTERS.values():
        row = next(line for line in doc.splitlines() if line.startswith(f"| `{counter.column}` |"))
        assert f"`{counter.nvprof}`" in row
        assert all(f"`{name}`" in row for name, _ in counter.ncu + counter.ncu_alternative)
        assert all(f"`{unit}`" in row for unit in counter.ncu_units + counter.ncu_alternative_units)


def test_used_counters_that_are_all_n_a_are_refused(tmp_path):
    with pytest.raises(ProfileImportError, match="every counter perfml uses is n/a"):
        read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "", "n/a")))


def test_an_n_a_counter_next_to_a_value_is_missing_not_an_error(tmp_path):
    prof = read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "", "n/a"),
                                 ncu_row("dram__sectors_write.sum", "sector", "8")))
    assert math.isnan(prof["m.Device Memory Read Transactions"].iloc[0])
    assert prof["m.Device Memory Write Transactions"].iloc[0] == 8


def test_the_device_name_metric_of_ncu_names_the_board(tmp_path):
    prof = read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "10"),
                                 ncu_row("device__attribute_display_name", "", "NVIDIA GeForce GTX 980")))
    assert prof["device"].iloc[0] == "NVIDIA GeForce GTX 980"
    assert prof.attrs["ignored_metrics"] == []
    with pytest.raises(ProfileImportError, match=r"\(board GTX-980\), but --reference has this kernel and launch only on GTX-680"):
        attach_profile(prof, reference())


def test_a_negative_counter_is_refused(tmp_path):
    with pytest.raises(ProfileImportError, match="negative value '-5'"):
        read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "-5")))
    with pytest.raises(ProfileImportError, match="negative value '-3'"):
        read_profile(nvprof_file(tmp_path, nv_metric("gld_transactions", "-3")))


def test_a_counter_beyond_any_kernel_call_is_refused(tmp_path):
    # 1e308 overflowed the derived counters: the profile's features came out infinite and the
    # profile was silently not used
    with pytest.raises(ProfileImportError, match="beyond any kernel call"):
        read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "1e308")))
    with pytest.raises(ProfileImportError, match="beyond any kernel call"):
        read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "Gsector", "1e10")))
    with pytest.raises(ProfileImportError, match="beyond any kernel call"):
        read_profile(nvprof_file(tmp_path, nv_metric("gld_transactions", "2e18")))
    assert read_profile(nvprof_file(tmp_path, nv_metric("gld_transactions", "9e17")))["m.Global Load Transactions"].iloc[0] == 9e17


def test_ncu_details_lines_may_leave_off_the_rule_columns(tmp_path):
    # ncu 2023+ adds "Rule Name" ... "Estimated Speedup" to the header; metric lines may stop
    # after "Metric Value" (with a trailing comma), as in the ncu output of public test fixtures
    header = NCU_HEADER + ',"Rule Name","Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup"'
    lines = [header, ncu_row("dram__sectors_read.sum", "sector", "10") + ",",
             ncu_row("dram__sectors_write.sum", "sector", "7") + ',"","","",""']
    prof = read_profile(write(tmp_path, "\n".join(lines) + "\n"))
    assert prof[["m.Device Memory Read Transactions", "m.Device Memory Write Transactions"]].iloc[0].tolist() == [10, 7]


def test_read_reference_profile_takes_the_kernel_name_column_of_the_reference_file(tmp_path):
    from perfml.learned.profile_import import read_reference_profile
    from perfml.learned.queries import read_reference

    ref_path = tmp_path / "ref.csv"
    reference(app_id="sorter", kernel_name="Bitonic_Sort").to_csv(ref_path, index=False)
    prof = ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "10", kernel="Bitonic_Sort(int*, int, int, int)"))
    attached = read_reference_profile(prof, read_reference(ref_path), ref_path)
    assert attached["app_id"].tolist() == ["sorter"] and attached["m.Device Memory Read Transactions"].tolist() == [10]
    with pytest.raises(ProfileImportError, match="needs --reference"):
        read_reference_profile(prof, None)


# ------------------------------------------- values a locale or a missing quote changes ----
def test_an_unquoted_value_with_commas_is_refused_not_cut(tmp_path):
    """`1,048,576` without quotes splits into three fields; the first (1) was read as the
    counter, silently (sixteenth session's hostile-input pass)."""
    ncu = ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "10")[:-4] + "1,048,576")
    with pytest.raises(ProfileImportError, match=r"line 3: 17 fields where the header has 15; a value with a comma"):
        read_profile(ncu)
    nvprof = nvprof_file(tmp_path, '"Tesla K40c (0)","my_kernel(float*, int)",3,"gld_transactions","d",1,048,576,1,048,576,1,048,576')
    with pytest.raises(ProfileImportError, match=r"fields where the header has 8"):
        read_profile(nvprof)


@pytest.mark.parametrize("metric, unit, value", [
    ("dram__sectors_read.sum", "sector", "0,500"),  # a comma-decimal 0.5, never thousands notation
    ("dram__sectors_read.sum", "sector", "012,345"),
    ("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", "%", "77,500"),  # 77.5 %, not 77500 %
])
def test_a_comma_decimal_value_is_not_read_as_thousands(tmp_path, metric, unit, value):
    with pytest.raises(ProfileImportError, match="is not a number.*English"):
        read_profile(ncu_file(tmp_path, ncu_row(metric, unit, value)))


def test_thousands_separators_of_an_english_export_still_read(tmp_path):
    frame = read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "1,048,576")))
    assert frame.filter(like="Device Memory Read Transactions").iloc[0, 0] == 1_048_576


def test_a_value_beyond_a_float_is_called_too_large_not_a_unit_problem(tmp_path):
    with pytest.raises(ProfileImportError, match="value '1e400' is beyond any kernel call"):
        read_profile(ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "1e400")))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(work=st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=8),
       sizes=st.lists(st.integers(min_value=1, max_value=2**30), min_size=1, max_size=5, unique=True))
def test_any_runs_against_any_reference_sizes_pair_in_order_or_raise_a_typed_error(tmp_path, work, sizes):
    """One kernel and launch profiled at arbitrary work counts, a reference at arbitrary sizes:
    either every pair is (k-th least work, k-th smallest size), one per reference run, or a
    ProfileImportError; never anything else."""
    rows = [ncu_row("smsp__inst_executed.sum", "inst", str(w), launch_id=i) for i, w in enumerate(work)]
    path = tmp_path / f"p{len(work)}_{len(sizes)}.csv"
    path.write_text("\n".join([NCU_HEADER, *rows]) + "\n")
    ref = pd.concat([reference(input_size=float(s)) for s in sizes], ignore_index=True)
    prof = read_profile(path)
    runs = int(prof["runs"].iloc[0])
    assert len(prof) == runs
    if runs != len(sizes):  # which run is which size cannot be told: refused, never guessed
        with pytest.raises(ProfileImportError):
            attach_profile(prof, ref)
        return
    attached = attach_profile(prof, ref)
    assert len(attached) == runs and attached["input_size"].is_unique
    ordered = attached.sort_values("input_size")["e.inst_executed"].to_numpy()
    assert (np.diff(ordered) > 0).all()


def test_profiled_work_is_flops_dram_sectors_times_32_and_warp_instructions(tmp_path):
    """The work a profile counted, on the reference row it describes; the DRAM bytes need both counts."""
    ref = pd.concat([reference(), reference(input_size=8192.0, grid_x=32.0)], ignore_index=True)
    both = ncu_file(tmp_path, ncu_row("dram__sectors_read.sum", "sector", "100", grid="(32, 1, 1)"),
                    ncu_row("dram__sectors_write.sum", "sector", "50", grid="(32, 1, 1)"),
                    ncu_row("smsp__inst_executed.sum", "inst", "7000", grid="(32, 1, 1)"))
    out = with_profiled_work(ref, attach_profile(read_profile(both), ref))
    assert out[["profiled_dram_bytes", "profiled_warp_instructions"]].iloc[1].tolist() == [32.0 * 150, 7000.0]
    assert out[list(PROFILED_WORK)].iloc[0].isna().all()
    assert np.isnan(out["profiled_flops"].iloc[1]) and np.isnan(out["profiled_dp_flops"].iloc[1])  # not in the export
    reads_only = tmp_path / "reads"
    reads_only.mkdir()
    out = with_profiled_work(ref, attach_profile(read_profile(ncu_file(reads_only, ncu_row(
        "dram__sectors_read.sum", "sector", "100", grid="(32, 1, 1)"))), ref))
    assert np.isnan(out["profiled_dram_bytes"].iloc[1])


def test_an_own_kernels_profile_carries_it_by_the_geometric_mean_of_the_model_and_its_roofline(small_model_dir):
    """For a kernel the model knows nothing of, the carried time is sqrt(model carry x roofline carry),
    the roofline carry being t_ref x R(query board) / R(reference board) of the profiled work; a
    streaming kernel (DRAM bytes only) is so carried by the bandwidth ratio. A kernel the model
    knows keeps the model's carry. (The interval: tests/test_profile_measured.py, with a model
    that has one.)"""
    from perfml.boards import get_board, peak_bandwidth
    from perfml.learned.persistence import load_model
    from perfml.learned.queries import predict_queries

    model_dir, home = small_model_dir
    model = load_model(model_dir, data_home=home)
    queries = pd.DataFrame([{"board": b, "app_id": "my_kernel", "input_size": 4096, "block_x": 256, "block_y": 1,
                             "grid_x": 16, "grid_y": 1} for b in ("GTX-970", "Tesla-K40")])
    plain = predict_queries(model, queries, "q", reference=reference())["predicted_ms"].to_numpy()
    streaming = reference(profiled_flops=np.nan, profiled_dram_bytes=1e9, profiled_warp_instructions=np.nan)
    got = predict_queries(model, queries, "q", reference=streaming)
    bw = {b: peak_bandwidth(get_board(b)) for b in ("GTX-680", "GTX-970", "Tesla-K40")}
    roof = np.array([0.25 * bw["GTX-680"] / bw[b] for b in ("GTX-970", "Tesla-K40")])
    np.testing.assert_allclose(got["predicted_ms"], np.sqrt(plain * roof), rtol=1e-9)
    assert (got["basis"] == "reference+profile").all()
    # a kernel the model was trained on keeps the model's carry, profile or not
    known = queries.assign(app_id="vectorAdd", input_size=1048576)
    ref_known = reference(app_id="vectorAdd", input_size=1048576.0)
    with_work = predict_queries(model, known, "q", reference=ref_known.assign(profiled_dram_bytes=1e9))
    np.testing.assert_allclose(with_work["predicted_ms"],
                               predict_queries(model, known, "q", reference=ref_known)["predicted_ms"], rtol=1e-12)
    assert (with_work["basis"] == "reference").all()
