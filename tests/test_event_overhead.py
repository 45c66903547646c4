"""experiments/event_overhead.py on the committed H100 data: the same launches timed between CUDA
events (perfml sweep run) and by Nsight Compute's kernel duration, on one machine."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import experiment_script

overhead = experiment_script("event_overhead")


def test_every_event_time_is_its_kernel_plus_a_launch_overhead():
    table = overhead.side_by_side(overhead.DEFAULT)
    assert len(table) == 18 and table["N"].is_monotonic_increasing
    diff_us = (table["events_ms"] - table["kernel_ms"]).to_numpy() * 1e3
    assert (diff_us > 0).all() and np.median(diff_us) < 50  # microseconds, never negative
    # the kernel's own time follows the bytes at the top: 1.6 GB at 2-3.35 TB/s
    top = table.iloc[-1]
    assert 12 * top["N"] / (top["kernel_ms"] * 1e-3) == pytest.approx(2.75e12, rel=0.25)


def test_a_duration_in_an_unknown_unit_is_refused(tmp_path):
    raw = tmp_path / "raw.csv"
    raw.write_text('"Kernel Name","Grid Size","gpu__time_duration.sum"\n"","","fortnight"\n"vectorAdd","(4, 1, 1)","1"\n')
    with pytest.raises(SystemExit, match="fortnight"):
        overhead.kernel_durations(raw)
