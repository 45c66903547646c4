"""Operator work model (FLOPs, bytes, op classes) and its roofline lower bound.

Truth: the operator semantics of shared/datasets/README.md (NeuSight section, "Operator
semantics"): bmm/linear FLOPs 2BMNK (+ bias), element-wise ops move 3 (binary) or 2
(unary/scalar) tensors of B*H floats, ln also weight/bias (H) and mean/rstd (B), conv2d
is torch.nn.Conv2d (bias=False, output side floor((S + 2p - k)/s) + 1). The small cases
below are worked by hand in the comments. The physical check runs over every measured row
of dlops_runtimes.csv.gz.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfml.boards import get_board, peak_bandwidth, peak_flops
from perfml.datasets import DLOPS_OP_DIMS, DLOPS_OPS, load_dlops_runtimes
from perfml.errors import OperatorWorkError, UnknownBoardError
from perfml.operators import OP_CLASS, OP_CLASSES, operator_work, roofline_lower_bound_ms

from conftest import shared_data_home

HOME = shared_data_home()  # the shared datasets, resolved here as the CLI would (tests are entry points)


def one(op, **dims):
    return operator_work(pd.DataFrame([{"op": op, **dims}])).iloc[0]


# --------------------------------------------------------------------------- formulas
def test_bmm_by_hand():
    # (2,3,4) x (2,4,5): 2*2*3*4*5 = 240 FLOP; 4 * (2*3*4 + 2*4*5 + 2*3*5) = 4 * 94 = 376 bytes
    w = one("bmm", B=2, M=3, N=4, K=5)
    assert (w.flops, w.bytes, w.op_class) == (240.0, 376.0, "BMM")
    assert w.arithmetic_intensity == pytest.approx(240 / 376)
    assert w.reductions_per_row == 0


def test_linear_by_hand():
    # x (2,3,4), Linear(4, 5): 240 FLOP + bias 2*3*5 = 30 -> 270;
    # bytes 4 * (2*3*4 input + 5*4 weight + 5 bias + 2*3*5 output) = 4 * 79 = 316
    w = one("linear", B=2, M=3, N=4, K=5)
    assert (w.flops, w.bytes, w.op_class) == (270.0, 316.0, "FC")


@pytest.mark.parametrize("op", ["add", "mul", "pow", "div"])
def test_binary_elementwise_moves_three_tensors(op):
    # (8, 16): 128 elements; 3 tensors x 128 x 4 bytes = 1536
    w = one(op, B=8, H=16)
    assert (w.flops, w.bytes, w.op_class) == (128.0, 1536.0, "EW")


@pytest.mark.parametrize("op", ["addu", "mulu", "powu", "divu", "relu", "gelu", "tanh"])
def test_unary_and_scalar_elementwise_move_two_tensors(op):
    # 2 tensors x 128 x 4 bytes = 1024
    w = one(op, B=8, H=16)
    assert (w.flops, w.bytes, w.op_class) == (128.0, 1024.0, "EW")


def test_softmax_and_layernorm_reduction_structure():
    # softmax over H=16 of (8,16): two passes, 2 reductions per row of 16; x in, y out: 1024 bytes
    s = one("softmax", B=8, H=16)
    assert (s.bytes, s.reductions_per_row, s.reduction_length, s.op_class) == (1024.0, 2, 16.0, "Softmax")
    assert s.flops == 5 * 128  # compare; subtract, exp, add; divide
    # ln: + weight and bias (2 x 16 floats) + mean and rstd (2 x 8 floats): 4 * (256 + 32 + 16) = 1216
    ln = one("ln", B=8, H=16)
    assert (ln.bytes, ln.reductions_per_row, ln.reduction_length, ln.op_class) == (1216.0, 2, 16.0, "LN")
    assert ln.flops == 7 * 128


def test_conv_by_hand():
    # x (2, 3, 7, 7), Conv2d(3, 4, 3, stride=2, padding=1): S_out = floor((7 + 2 - 3) / 2) + 1 = 4
    # FLOPs 2 * 2 * 4 * 4^2 * 3 * 3^2 = 6912
    # bytes 4 * (2*3*49 input + 4*3*9 weight + 2*4*16 output) = 4 * (294 + 108 + 128) = 2120
    w = one("conv", B=2, in_channels=3, out_channels=4, kernel_size=3, input_size=7, stride=2, padding=1)
    assert (w.flops, w.bytes, w.op_class) == (6912.0, 2120.0, "Conv")
    # no padding, stride 1: S_out = 7 - 3 + 1 = 5; FLOPs 2*1*1*25*1*9 = 450
    assert one("conv", B=1, in_channels=1, out_channels=1, kernel_size=3, input_size=7, stride=1, padding=0).flops == 450


def test_op_classes_are_neusights():
    # NeuSight (ASPLOS 2025) op classes: BMM, FC (linear), EW, Softmax, LN; conv on its own
    assert set(OP_CLASS) == set(DLOPS_OPS)
    assert OP_CLASSES == ("BMM", "FC", "EW", "Softmax", "LN", "Conv")
    assert sorted(op for op, c in OP_CLASS.items() if c == "EW") == sorted(
        ["add", "mul", "pow", "div", "addu", "mulu", "powu", "divu", "relu", "gelu", "tanh"]
    )


def test_work_keeps_the_index_and_ignores_unneeded_columns():
    rows = pd.DataFrame(
        {"op": ["relu", "bmm"], "B": [8, 2], "H": [16, np.nan], "M": [np.nan, 3], "N": [None, 4], "K": [-1, 5]},
        index=["a", "b"],
    )
    work = operator_work(rows)  # K = -1 on the relu row is not used
    assert list(work.index) == ["a", "b"] and work.loc["b", "flops"] == 240.0


_VECTOR_OPS = [op for op, dims in DLOPS_OP_DIMS.items() if dims == ("B", "H")]


@settings(max_examples=60, deadline=None)
@given(
    op=st.sampled_from(["bmm", "linear", *_VECTOR_OPS]),
    dims=st.fixed_dictionaries({d: st.integers(1, 4096) for d in ("B", "M", "N", "K", "H")}),
    grow=st.sampled_from(["B", "M", "N", "K", "H"]),
    factor=st.integers(2, 8),
)
def test_work_is_positive_and_grows_with_every_dimension(op, dims, grow, factor):
    small = one(op, **dims)
    large = one(op, **{**dims, grow: dims[grow] * factor})
    assert small.flops > 0 and small.bytes > 0 and np.isfinite([small.flops, small.bytes]).all()
    assert large.flops >= small.flops and large.bytes >= small.bytes
    if grow in DLOPS_OP_DIMS[op]:
        assert large.bytes > small.bytes


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "row, match",
    [
        ({"op": "matmul", "B": 1}, r"row 'r1': column 'op' holds unknown operator 'matmul'; expected one of bmm"),
        ({"op": "bmm", "B": 2, "M": 3, "N": 0, "K": 5}, r"row 'r1': column 'N' must be a positive whole number for operator 'bmm'"),
        ({"op": "bmm", "B": 2, "M": 3, "N": 4, "K": None}, r"row 'r1': column 'K' must be a positive whole number"),
        ({"op": "add", "B": 2, "H": 2.5}, r"row 'r1': column 'H' must be a positive whole number for operator 'add'"),
        ({"op": "softmax", "B": -3, "H": 4}, r"row 'r1': column 'B' must be a positive whole number"),
        (
            {"op": "conv", "B": 1, "in_channels": 1, "out_channels": 1, "kernel_size": 3, "input_size": 7, "stride": 1, "padding": -1},
            r"row 'r1': column 'padding' must be a whole number >= 0 for operator 'conv'",
        ),
        (
            {"op": "conv", "B": 1, "in_channels": 1, "out_channels": 1, "kernel_size": 9, "input_size": 3, "stride": 1, "padding": 0},
            r"row 'r1': .*empty conv output",
        ),
    ],
)
def test_bad_rows_name_row_and_column(row, match):
    good = {"op": "relu", "B": 1, "H": 1}
    frame = pd.DataFrame([good, row], index=["r0", "r1"])
    with pytest.raises(OperatorWorkError, match=match):
        operator_work(frame)


_VALID_ROWS = {
    "bmm": {"B": 2, "M": 3, "N": 4, "K": 5},
    "linear": {"B": 2, "M": 3, "N": 4, "K": 5},
    **{op: {"B": 8, "H": 16} for op in _VECTOR_OPS},
    "conv": {"B": 1, "in_channels": 3, "out_channels": 4, "kernel_size": 3, "input_size": 7, "stride": 1, "padding": 1},
}


@settings(max_examples=60, deadline=None)
@given(
    op=st.sampled_from(DLOPS_OPS),
    data=st.data(),
    bad=st.sampled_from([0, -1, -7, 0.5, 3.25, np.nan, None, float("inf"), "abc"]),
)
def test_any_bad_needed_dimension_is_named(op, data, bad):
    """Property: corrupting any dimension a row's operator needs raises OperatorWorkError naming
    that row and that column (padding 0 is valid, so it is not drawn as 0 for padding)."""
    dims = dict(_VALID_ROWS[op])
    column = data.draw(st.sampled_from(sorted(dims)))
    if column == "padding" and bad == 0:
        bad = -1
    dims[column] = bad
    frame = pd.DataFrame([{"op": "relu", "B": 1, "H": 1}, {"op": op, **dims}], index=["ok", "broken"])
    with pytest.raises(OperatorWorkError, match=rf"row 'broken': column '{column}' must be"):
        operator_work(frame)


def test_missing_columns_are_named():
    with pytest.raises(OperatorWorkError, match="need an 'op' column"):
        operator_work(pd.DataFrame({"B": [1]}))
    with pytest.raises(OperatorWorkError, match=r"row 0: column 'H' is missing; operator 'gelu' needs B, H"):
        operator_work(pd.DataFrame({"op": ["gelu"], "B": [4]}))
    with pytest.raises(OperatorWorkError, match="no board given and the rows have no 'board' column"):
        roofline_lower_bound_ms(pd.DataFrame({"op": ["gelu"], "B": [4], "H": [4]}))
    with pytest.raises(UnknownBoardError):
        roofline_lower_bound_ms(pd.DataFrame({"op": ["gelu"], "B": [4], "H": [4]}), "Tesla-P5")


# --------------------------------------------------------------------------- roofline
def test_roofline_is_the_max_of_compute_and_memory_time():
    a100 = get_board("A100-PCIe-40GB")
    rows = pd.DataFrame(
        [
            {"op": "bmm", "B": 8, "M": 2048, "N": 2048, "K": 2048},  # compute-bound
            {"op": "add", "B": 8192, "H": 8192},  # memory-bound
        ]
    )
    bound = roofline_lower_bound_ms(rows, a100)
    # bmm: 2 * 8 * 2048^3 FLOP at the registry peak (108 SMs x 64 x 2 x 1.41 GHz)
    assert bound[0] == pytest.approx(2 * 8 * 2048**3 / peak_flops(a100) * 1e3)
    # add: 3 tensors x 8192^2 x 4 bytes at the stated 1555 GB/s
    assert bound[1] == pytest.approx(3 * 8192**2 * 4 / peak_bandwidth(a100) * 1e3)
    assert bound[1] == pytest.approx(3 * 8192**2 * 4 / 1555e9 * 1e3)
    # per-row boards: the same rows on the P4 take longer
    per_row = roofline_lower_bound_ms(rows.assign(board=["Tesla-P4", "A100-PCIe-40GB"]))
    assert per_row[0] > bound[0] and per_row[1] == pytest.approx(bound[1])


def test_conv_compute_term_is_optional():
    row = pd.DataFrame(
        [{"op": "conv", "B": 64, "in_channels": 256, "out_channels": 256, "kernel_size": 3, "input_size": 56, "stride": 1, "padding": 1}]
    )
    memory_only = roofline_lower_bound_ms(row, "Tesla-T4")[0]
    with_compute = roofline_lower_bound_ms(row, "Tesla-T4", conv_compute_bound=True)[0]
    assert with_compute > memory_only > 0


@pytest.fixture(scope="module")
def measured():
    rt = load_dlops_runtimes(data_home=HOME)
    work = operator_work(rt)
    return rt.assign(
        op_class=work["op_class"],
        ratio=roofline_lower_bound_ms(rt) / rt["time_ms"],
        ratio_direct_conv=roofline_lower_bound_ms(rt, conv_compute_bound=True) / rt["time_ms"],
    )


def test_no_measured_call_beats_its_roofline_lower_bound(measured):
    """Physical check over all 267230 rows on the five GPUs: measured time >= roofline bound.

    Measured: the largest bound / time ratio is 0.992 (V100 linear) and no row exceeds 1.0;
    small calls whose operands sit in the L2 are held above the DRAM bound by the launch
    floor of 0.024-0.031 ms (README), so no L2 bandwidth is needed.
    """
    assert len(measured) == 267230
    assert np.isfinite(measured["ratio"]).all()
    violations = measured[measured["ratio"] > 1.02]
    assert violations.empty, violations.groupby(["board", "op_class"]).size().to_dict()
    # the bound is not vacuous: large calls of every class come within 2x of it on every board
    best = measured.groupby(["board", "op_class"])["ratio"].max()
    assert (best > 0.38).all(), best.to_dict()


def test_direct_conv_flops_are_not_a_bound_because_of_winograd_and_fft(measured):
    # README "Sanity check": conv calls above the direct-FLOP peak all run Winograd / FFT kernels.
    conv = measured[measured["op"] == "conv"]
    above = conv[conv["ratio_direct_conv"] > 1.05]
    assert len(above) > 0
    assert above["kernels"].str.lower().str.contains("winograd|fft").all()


def test_the_l2_resident_bound_only_forgives_the_l2s_bytes():
    """``l2_resident=True`` takes up to the board's L2 off the byte term (a warm cache), nothing more."""
    t4 = get_board("Tesla-T4")
    frame = pd.DataFrame({"op": ["add", "add"], "B": [64, 8192], "H": [1024, 65536]})
    dram = roofline_lower_bound_ms(frame, "Tesla-T4").to_numpy()
    warm = roofline_lower_bound_ms(frame, "Tesla-T4", l2_resident=True).to_numpy()
    nbytes = 3 * 4 * frame["B"].to_numpy(dtype=float) * frame["H"].to_numpy(dtype=float)
    flops = frame["B"].to_numpy(dtype=float) * frame["H"].to_numpy(dtype=float)
    # the small call fits the 4 MiB L2: only its FP32 work bounds it
    assert nbytes[0] < t4.l2_bytes and warm[0] == pytest.approx(1e3 * flops[0] / peak_flops(t4))
    # the large one still streams all but the L2's bytes
    assert warm[1] == pytest.approx(1e3 * (nbytes[1] - t4.l2_bytes) / peak_bandwidth(t4))
    assert np.all(warm <= dram)


def test_no_measured_call_beats_its_l2_resident_bound_by_the_refusal_margin():
    """The --reference / --calibration refusal (perfml.characterize.limits.first_unphysical_time)
    rejects no real measurement: every call of dlops_runtimes.csv.gz and every described-app
    run of runtimes.csv.gz is slower than its L2-resident roofline bound on its board."""
    from perfml.apps import list_apps
    from perfml.characterize.limits import first_unphysical_time
    from perfml.datasets import load_runtimes
    from perfml.learned.operator_queries import _bounds
    from perfml.learned.queries import roofline_bound_ms

    ops = load_dlops_runtimes(HOME)
    bound = _bounds(ops, l2_resident=True)
    assert np.isfinite(bound).all()
    assert first_unphysical_time(ops["time_ms"], bound) is None
    positive = bound > 0  # a conv call that fits the L2 has no bound left (its FLOP term is not one)
    assert np.min(ops["time_ms"].to_numpy(dtype=float)[positive] / bound[positive]) > 1.0
    rt = load_runtimes(HOME)
    apps = rt[rt["app_id"].isin(list_apps())].reset_index(drop=True)
    bound = roofline_bound_ms(apps)
    for column in ("time_ms_median", "time_ms_min"):
        assert first_unphysical_time(apps[column], bound) is None
    # and the check can fail: the same calls 2x faster than their bound are caught
    assert first_unphysical_time(0.5 * bound, bound) == int(np.flatnonzero(np.isfinite(bound) & (bound > 0))[0])


@pytest.mark.parametrize("value", [1e200, 2.0**60, True, 1 + 2j, 2.5])
def test_a_dimension_no_float_holds_as_a_whole_number_is_refused(value):
    """B = H = 1e200 gave flops = inf and an arithmetic intensity of NaN (a RuntimeWarning only);
    True was taken as 1 and 1+2j as 1."""
    from perfml.errors import OperatorWorkError
    from perfml.operators import operator_work

    with pytest.raises(OperatorWorkError, match=r"column 'B' must be a positive whole number for operator 'add' \(it needs B, H; at most 2\*\*53\)"):
        operator_work(pd.DataFrame({"op": ["add"], "B": [value], "H": [4]}))
    assert operator_work(pd.DataFrame({"op": ["add"], "B": [2**52], "H": [2]}))["flops"].iloc[0] == 2.0**53
