"""Characterization functions, summaries, reference data and the characterize command.

Golden values of the GTX 980 reference come from seed 001 Tables 3 and 4
(../shared/seeds/001_37d900892b579193.txt lines 164-187); the measured-data tests use
the synthetic recording of tests/conftest.py, whose timing model is known exactly.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfml.characterize import (
    FUNCTION_NAMES,
    Characterization,
    CharacterizationFunction,
    characterize_results,
    load_characterization,
    reference_characterization,
    sample_quantize_interpolate,
)
from perfml.errors import ResultFileExistsError, ResultSchemaError, UnknownBoardError

SEED001 = Path(__file__).resolve().parents[2] / "shared" / "seeds" / "001_37d900892b579193.txt"

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


# -- sampling, quantization, interpolation --------------------------------------------------
def test_quantization_takes_the_median_per_level_and_normalizes():
    x = [0.0, 0.001, 0.002, 0.5, 0.5, 0.5, 1.0]
    y = [1.0, 2.0, 30.0, 5.0, 6.0, 7.0, 10.0]
    f = sample_quantize_interpolate("shmem", x, y, levels=33)
    assert f.x == (0.0, 0.5, 1.0)
    assert f.y == (0.2, 0.6, 1.0)  # medians 2, 6, 10 over the best, 10
    assert f(0.25) == pytest.approx(0.4)  # linear between levels
    assert f(-1.0) == 0.2 and f(2.0) == 1.0  # clamped outside [0, 1]
    assert f.n_samples == 7


def test_drops_unusable_samples_and_needs_two_levels():
    f = sample_quantize_interpolate("dram_thr", [0.1, 0.9, 0.5], [1.0, 2.0, float("nan")])
    assert f.n_samples == 2
    with pytest.raises(ValueError, match="at least two intensities"):
        sample_quantize_interpolate("dram_thr", [0.5, 0.5], [1.0, 2.0])
    with pytest.raises(ValueError):
        CharacterizationFunction("x", x=(0.5, 0.2), y=(1, 1))
    with pytest.raises(ValueError, match="NaN"):
        CharacterizationFunction.identity("x")(float("nan"))


@given(
    st.lists(st.tuples(unit, st.floats(min_value=1e-3, max_value=1e3)), min_size=2, max_size=40),
    unit,
)
def test_function_values_stay_within_the_normalized_samples(samples, probe):
    xs, ys = zip(*samples)
    try:
        f = sample_quantize_interpolate("arith_thr", xs, ys)
    except ValueError:  # all samples fell on one level
        return
    value = f(probe)
    assert min(f.y) - 1e-12 <= value <= 1.0 + 1e-12
    assert max(f.y) == pytest.approx(1.0)


@given(unit)
def test_identity_is_one_everywhere(x):
    ch = Characterization.identity()
    assert ch.f_divergence(x) == ch.f_shmem(x) == ch.f_dram_thr(x) == ch.f_arith_thr(x) == 1.0
    assert not any(ch.has_function(n) for n in FUNCTION_NAMES)


def test_vectorized_call():
    f = CharacterizationFunction("divergence", x=(0.0, 1.0), y=(0.2, 1.0))  # F > 0: a measured share of the peak
    assert np.allclose(f([0.25, 0.75]), [0.4, 0.8])


# -- files ----------------------------------------------------------------------------------
def test_json_round_trip_and_refusals(tmp_path):
    f = CharacterizationFunction("shmem", x=(0.0, 1.0), y=(0.5, 1.0), n_samples=4, source="s")
    ch = Characterization(board="B", functions={"shmem": f}, source="t", synthetic=True)
    path = ch.save(tmp_path / "synthetic.characterization.json")
    back = load_characterization(path)
    assert back == ch and back.synthetic and back.f_shmem(0.5) == pytest.approx(0.75)
    with pytest.raises(ResultFileExistsError):
        ch.save(path)
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "version": 7}))
    with pytest.raises(ResultSchemaError, match="unknown characterization version 7"):
        load_characterization(path)
    with pytest.raises(ResultSchemaError, match="does not exist"):
        load_characterization(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="unknown characterization function"):
        Characterization(functions={"bogus": f})


# -- reference data: seed 001 Tables 3 and 4 ---------------------------------------------------
def test_gtx980_reference_matches_seed001_tables():
    ch = reference_characterization("GTX-980")
    assert ch.board == "GTX-980" and not ch.synthetic
    assert len([s for s in ch.summary if s.kind == "instruction"]) == 10  # Table 3 columns
    assert [s.name for s in ch.summary if s.kind == "memory"] == ["dram", "l2", "shared", "constant"]
    fp32 = ch.summary_for("fp32_simple")  # Table 3, lines 167-173
    assert (fp32.spec_per_cycle_per_sm, fp32.achieved_per_cycle_per_sm) == (128, 116.3)
    assert fp32.fraction_of_spec == pytest.approx(116.3 / 128)
    assert (fp32.avg_power_w, fp32.max_power_w, fp32.energy_j, fp32.nj_per_op) == (72.2, 86, 0.6, 0.04)
    assert ch.summary_for("int32_rem").fraction_of_spec is None  # "n.a." spec, line 167
    dram = ch.summary_for("dram")  # Table 4, lines 180-185
    assert (dram.achieved_per_cycle_per_sm, dram.nj_per_op) == (0.09, 62.9)
    assert "Table 4" in dram.source and "line 187" in dram.source
    assert all(not ch.has_function(n) for n in FUNCTION_NAMES)  # figures only in the paper
    assert reference_characterization("gtx 980") == ch


@pytest.mark.skipif(not SEED001.exists(), reason="seed papers not checked out next to the repo")
def test_reference_file_agrees_with_the_seed_text():
    """Re-read Table 3's and 4's rows from the seed file and compare every number."""
    lines = SEED001.read_text().splitlines()

    def row(lineno: int) -> list[float]:
        cells = lines[lineno - 1].split("\t")[1:]
        return [float(c.split()[0].replace(",", "")) if c.split()[0] != "n.a." else None for c in cells]

    ch = reference_characterization("GTX-980")
    t3 = [s for s in ch.summary if s.kind == "instruction"]
    assert [s.achieved_per_cycle_per_sm for s in t3] == row(168)
    assert [s.spec_per_cycle_per_sm for s in t3] == row(167)
    assert [s.avg_power_w for s in t3] == row(169)
    assert [s.nj_per_op for s in t3] == row(173)
    t4 = [s for s in ch.summary if s.kind == "memory"]
    assert [s.achieved_per_cycle_per_sm for s in t4] == row(180)
    assert [s.energy_j for s in t4] == row(183)
    assert [s.nj_per_op for s in t4] == row(185)


def test_unknown_reference_board():
    with pytest.raises(UnknownBoardError, match="GTX-980"):
        reference_characterization("Voodoo 2")


# -- characterization of recorded (synthetic) data -------------------------------------------
def test_characterize_recorded_synthetic_sweep(synthetic_recording):
    ch = characterize_results(synthetic_recording)
    assert ch.synthetic and ch.device["name"].endswith("(synthetic data)")
    # the synthetic model makes time proportional to 32 / GROUP_SIZE (intensity GROUP_SIZE/32)
    # and to WAYS (intensity 1/WAYS): both functions are the identity line at sampled levels
    assert ch.has_function("divergence") and ch.has_function("shmem")
    for x in (1 / 32, 0.25, 0.5, 1.0):
        assert ch.f_divergence(x) == pytest.approx(x, rel=0.03)
    for ways in (1, 2, 4, 8):
        assert ch.f_shmem(1 / ways) == pytest.approx(1 / ways, rel=0.03)
    # occupancy: full throughput from a quarter of the largest load on, linear below it
    for x in (1 / 8, 0.25, 0.5, 1.0):
        assert ch.f_dram_thr(x) == pytest.approx(min(1.0, 4 * x), rel=0.03)
        assert ch.f_arith_thr(x) == pytest.approx(min(1.0, 4 * x), rel=0.03)
    names = {s.name: s for s in ch.summary}
    assert set(names) == {"syn_fp32", "syn_dram", "syn_noisy", "syn_latency"}
    assert names["syn_latency"].kind == "latency"
    assert names["syn_latency"].latency_cycles == 500  # the synthetic model's cycles per hop
    assert names["syn_dram"].kind == "memory" and names["syn_fp32"].kind == "instruction"
    assert names["syn_fp32"].fraction_of_spec is None  # no registry board for a synthetic GPU
    assert names["syn_noisy"].nj_per_op is None  # no energy recorded for it
    assert names["syn_fp32"].nj_per_op > 0


def test_characterize_with_a_registry_board(synthetic_recording):
    ch = characterize_results(synthetic_recording, board="H100-SXM")
    fp32 = next(s for s in ch.summary if s.name == "syn_fp32")
    assert fp32.spec_per_cycle_per_sm == 128  # fp32_cores_per_sm of the H100 registry entry
    assert fp32.fraction_of_spec == pytest.approx(fp32.achieved_per_cycle_per_sm / 128)
    dram = next(s for s in ch.summary if s.name == "syn_dram")
    assert dram.fraction_of_spec == pytest.approx(dram.achieved_per_s / dram.spec_per_s)


def test_load_characterization_accepts_a_result_set(synthetic_recording):
    assert load_characterization(synthetic_recording).has_function("shmem")


# -- the command line ------------------------------------------------------------------------
def test_cli_characterize(synthetic_recording, tmp_path, capsys, monkeypatch):
    from perfml.cli import main

    monkeypatch.setenv("COLUMNS", "200")  # rich tables: no truncated names

    out = tmp_path / "synthetic.characterization.json"
    assert main(["characterize", str(synthetic_recording), "--json", "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text())
    assert printed["synthetic"] is True
    assert math.isclose(load_characterization(out).f_shmem(0.5), 0.5, rel_tol=0.03)
    assert main(["characterize", str(synthetic_recording), "--out", str(out)]) == 2  # no overwrite
    assert main(["characterize", "--reference", "GTX-980"]) == 0
    assert "fp32_simple" in capsys.readouterr().out
    assert main(["characterize"]) == 2


@pytest.mark.parametrize("args, said", [
    (["--reference", "GTX-980", "--board", "H100-SXM"], "--board does not apply to --reference"),
    (["--board", "H100-SXM", "--source", "foo"], "--source applies to --from-runtimes only"),
    (["--board", "H100-SXM", "--allow-incomplete"], "--allow-incomplete applies to a result set (RESULTS) only"),
    (["--reference", "GTX-980", "--allow-incomplete"], "--allow-incomplete applies to a result set (RESULTS) only"),
])
def test_an_option_that_would_do_nothing_is_refused(args, said, capsys):
    """``--reference GTX-980 --board H100-SXM`` printed the GTX-980 reference; ``--source`` and
    ``--allow-incomplete`` beside ``--board`` alone were ignored (probe 37)."""
    from perfml.cli import main

    assert main(["characterize", *args]) == 2
    assert "".join(said.split()) in "".join(capsys.readouterr().err.split())


H100_SET = Path(__file__).resolve().parents[1] / "sweeps" / "results" / "H100-SXM"


@pytest.mark.parametrize("board", [None, "H100-SXM", " h100-sxm ", "NVIDIA H100 80GB HBM3"])
def test_a_characterized_result_set_names_its_board_by_the_registry_name(board):
    """``--board ' H100-SXM '`` was written with its spaces, no ``--board`` as the device name (probe 37)."""
    assert characterize_results(H100_SET, board=board).board == "H100-SXM"


def test_sweep_summaries_become_measured_values(synthetic_recording):
    """The measured tier: each static family's best throughput as the quantity it measures."""
    ch = characterize_results(synthetic_recording, board="H100-SXM")
    by_name = {s.name: s for s in ch.summary}
    fp32 = ch.best("fp32_throughput", "instructions/cycle/SM", tiers=("measured",))
    assert fp32.value == by_name["syn_fp32"].achieved_per_cycle_per_sm and "syn_fp32" in fp32.source
    dram = ch.best("dram_bandwidth", "B/s", tiers=("measured",))
    assert dram.value == by_name["syn_dram"].achieved_per_s
    assert ch.values_for("dram_bandwidth", tier="spec")  # checked against the H100's registry entry
    assert ch.functions["shmem"].tier == "measured" and ch.functions["shmem"].source


def _sfu_rows(work_json: str):
    """Two synthetic SFU rows: 1e9 instructions of the target class in 1 ms on 10 SMs at 1 GHz."""
    import pandas as pd

    base = dict(kind="static", family="sfu", kernel="sfu.sin", component="SFU", noisy=False,
                sm_clock_mhz=1000.0, max_sm_clock_mhz=1000.0, time_median_s=1e-3, sms=10,
                instructions=1e9, threads=1000, work_json=work_json, energy_j=None,
                power_w=None, n=10)
    return pd.DataFrame([base, dict(base, time_median_s=2e-3)])


def test_summary_rates_a_unit_by_its_own_instructions_when_the_sidecar_declares_them():
    """sin.approx = FMUL + MUFU: the SFU's rate counts the MUFU half (unit_instructions)."""
    import json

    from perfml.characterize.summary import summarize_results

    pair = _sfu_rows(json.dumps({"target_instructions": 1e6}))
    mufu = _sfu_rows(json.dumps({"target_instructions": 1e6, "unit_instructions": 5e5}))
    (whole,) = summarize_results(pair)
    (half,) = summarize_results(mufu)
    assert whole.achieved_per_s == pytest.approx(1e12)  # the recorded count, best point
    assert half.achieved_per_s == pytest.approx(5e5 * 1000 / 1e-3)
    assert half.achieved_per_cycle_per_sm == pytest.approx(whole.achieved_per_cycle_per_sm / 2)


def test_shipped_sfu_sidecar_counts_one_mufu_per_sin():
    from perfml.kernels.catalog import load_catalog
    from perfml.kernels.launch import LaunchConfig

    sfu = load_catalog()["sfu"]
    launch = LaunchConfig((1, 1, 1), (256, 1, 1))
    per_kernel = {k.name: sfu.work(k.params, launch) for k in sfu.kernels()}
    for kernel, pair in (("sfu.sin", 2), ("sfu.cos", 2), ("sfu.ex2", 1), ("sfu.rcp", 1)):
        work = per_kernel[kernel]
        assert work["target_instructions"] == pair * work["unit_instructions"]


def test_characterize_never_writes_into_the_result_set(synthetic_recording, tmp_path, capsys):
    # --out SET/manifest.json --overwrite replaced the set's own manifest (the set then read as
    # "changed outside perfml"); a file anywhere inside the set is refused, and nothing changes
    import shutil

    from perfml.cli import main

    rs = tmp_path / "set"
    shutil.copytree(synthetic_recording, rs)
    before = {p.name: p.read_bytes() for p in rs.iterdir() if p.is_file()}
    for target in (rs / "manifest.json", rs / "sub" / "c.json"):
        assert main(["characterize", str(rs), "--out", str(target), "--overwrite"]) == 2
        assert "lies inside the result set" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in rs.iterdir() if p.is_file()} == before
    assert not (rs / "sub").exists()
    # a folder that is no result set is called that, not a result set the file lies in
    plain = tmp_path / "plain"
    plain.mkdir()
    assert main(["characterize", str(plain), "--out", str(plain / "c.json")]) == 2
    err = capsys.readouterr().err
    assert "is not a perfml result set" in err and "lies inside" not in err


def test_rows_of_one_family_at_other_work_are_not_mixed_into_a_function(synthetic_recording):
    # 1/time compares rows of the same work: a user's spec on the shipped divergence family with
    # another REPS joined the shipped rows and moved F_divergence without a word
    from perfml.characterize.build import characterize_frame
    from perfml.errors import ResultSchemaError
    from perfml.measure.store import ResultSet

    frame = ResultSet.open(synthetic_recording).read()
    characterize_frame(frame, board=None, board_name="synthetic")  # as recorded: one setting
    rows = frame.index[frame["family"] == "divergence"]
    params = json.loads(frame.loc[rows[0], "params_json"])
    frame.loc[rows[0], "params_json"] = json.dumps({**params, "REPS": 2 * int(params.get("REPS", 1))})
    frame.loc[rows[0], "spec"] = "my-divergence"
    with pytest.raises(ResultSchemaError, match=r"family 'divergence' \(F_divergence\) were measured with REPS = .*"
                                                r"specs my-divergence, synthetic-suite"):
        characterize_frame(frame, board=None, board_name="synthetic")


def _dram_rows(times_fast, times_slow):
    """Two synthetic DRAM rows moving 1 GB: the faster one's repetitions are ``times_fast``."""
    import numpy as np
    import pandas as pd

    def row(kernel, times):
        times = np.asarray(times, dtype=float)
        cv = times.std() / times.mean()
        return dict(kind="static", family="dram", kernel=kernel, component="DRAM", sm_clock_mhz=1000.0,
                    max_sm_clock_mhz=1000.0, time_median_s=float(np.median(times)), sms=10, bytes=1e9,
                    bytes_per_s=1e9 / float(np.median(times)), threads=1000, work_json="{}", energy_j=None,
                    power_w=None, n=len(times), times_s=list(times), time_cv=cv, cv_threshold=0.05,
                    noisy=bool(cv > 0.05))
    return pd.DataFrame([row("dram.load", times_fast), row("dram.store", times_slow)])


def test_one_slow_repetition_does_not_drop_a_point_whose_median_holds():
    """19 repetitions at 1.00 ms and one at 1.30 ms: CV 6.5 % (flagged noisy), median 1.00 ms.
    The summary takes the median, so the point stays (an H200 repeat lost its dram.load so)."""
    from perfml.characterize.summary import summarize_results, unsteady_median

    rows = _dram_rows([1e-3] * 19 + [1.3e-3], [1.05e-3] * 20)
    assert rows["noisy"].tolist() == [True, False]
    assert unsteady_median(rows).tolist() == [False, False]
    (dram,) = summarize_results(rows)
    assert dram.achieved_per_s == pytest.approx(1e12)  # the load kernel's, not the store's 0.95e12


def test_a_point_whose_repetitions_spread_is_still_left_out():
    from perfml.characterize.summary import summarize_results, unsteady_median

    spread = [0.7e-3, 0.8e-3, 0.9e-3, 1.0e-3, 1.1e-3] * 4  # robust spread 14 % of the median
    rows = _dram_rows(spread, [1.05e-3] * 20)
    assert unsteady_median(rows).tolist() == [True, False]
    (dram,) = summarize_results(rows)
    assert dram.achieved_per_s == pytest.approx(1e9 / 1.05e-3)
    # rows recorded without their repetitions keep the stored flag
    assert unsteady_median(rows.drop(columns="times_s")).tolist() == rows["noisy"].tolist()
