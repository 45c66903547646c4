"""experiments/cupti_resolution.py: the clock behind ``--timing kernel-duration``, on the committed
H100 and H200 recordings and on synthetic clocks of a known tick."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import experiment_script

resolution = experiment_script("cupti_resolution")
ARCHIVE = resolution.DEFAULT.parent


def _ticking(true_ns: np.ndarray, tick_ns: int, rng) -> np.ndarray:
    """Synthetic durations read off a clock ticking every ``tick_ns``, each converted to ns with +-1 ns rounding."""
    return (np.floor(true_ns / tick_ns) * tick_ns + rng.integers(-1, 2, size=len(true_ns))).astype(np.int64)


@pytest.mark.parametrize("tick", [32, 40, 1000])
def test_the_step_between_duration_clusters_is_the_clocks_tick(tick):
    rng = np.random.default_rng(7)
    true = np.linspace(800, 800 + 300 * tick, 5000)  # a spin sweep: true durations far finer than a tick
    durations = _ticking(true, tick, rng)
    steps = resolution.clock_steps(durations, merge_ns=2)
    assert np.median(steps) == pytest.approx(tick, abs=2)
    # unmerged, the +-1 ns rounding shows as 1 ns gaps: the raw gaps alone would not say the tick
    assert resolution.gap_counts(durations)[0][0] in (1, 2)


def test_a_nanosecond_clock_has_nanosecond_steps():
    durations = np.arange(900, 2000, 1, dtype=np.int64)
    assert resolution.clock_steps(durations, merge_ns=0).max() == 1


def test_the_line_fit_recovers_the_cycles_clock():
    cycles = np.arange(0, 20001, 5)
    a, b, resid = resolution.line_fit(cycles, 850 + cycles / 1.98)
    assert (a, 1 / b) == pytest.approx((850, 1.98)) and np.abs(resid).max() < 1e-6


@pytest.mark.parametrize("folder", ["H100-SXM-cupti-resolution", "H200-cupti-resolution",
                                    "H100-SXM-cupti-resolution-run2"])
def test_the_recorded_hopper_clocks_tick_every_32_ns(folder):
    """The recordings (lent devices, 2026-11-27): durations come in steps of 32 ns, the empty kernel's
    shortest under a microsecond, and the spin sweep's slope is the SM clock nvidia-smi read (1980 MHz)."""
    spans = resolution.read_spans(ARCHIVE / folder)
    sweep = spans[spans["kernel"] == "spin"]
    steps = resolution.clock_steps(sweep["duration_ns"].to_numpy(), merge_ns=2)
    assert np.median(steps) == pytest.approx(32, abs=1)
    empty = spans.loc[spans["kernel"] == "empty", "duration_ns"]
    assert len(empty) == 2000 and 0 < empty.min() < 1000
    _, b, _ = resolution.line_fit(sweep["cycles"].to_numpy(), sweep["duration_ns"].to_numpy())
    assert 1 / b == pytest.approx(1.98, rel=0.02)


def test_a_folder_whose_spans_lack_a_column_or_run_backwards_is_refused(tmp_path):
    pd.DataFrame({"kernel": ["empty"], "start_ns": [10]}).to_csv(tmp_path / "spans.csv.gz", index=False)
    with pytest.raises(SystemExit, match=r"\['cycles', 'end_ns'\] missing"):
        resolution.read_spans(tmp_path)
    pd.DataFrame({"kernel": ["empty"], "cycles": [0], "start_ns": [10], "end_ns": [5]}).to_csv(
        tmp_path / "spans.csv.gz", index=False)
    with pytest.raises(SystemExit, match="ends before it starts"):
        resolution.read_spans(tmp_path)
