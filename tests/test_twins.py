"""The criteria model checked on kernel twins that differ by one optimization.

Data: ``profiles_nca.csv.gz`` (block_16 profiles) and ``runtimes.csv.gz`` (source
gpuperfpredict-nca, 16x16 launches) of the shared data home. Seed 000 Sec. VI validates
the model the same way (reduction: 5.8x potential predicted, 4.98x measured after tuning).

The two share thresholds (75 %) were fixed before the table was first computed; the
figures the data gave are written beside them. The other real-data checks (L1 and
shared-memory verdicts, measured speedups > 1) state what the data showed when first
computed, so they flag a change of the model or of the data.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from perfml.diagnosis import TWIN_PAIRS, twin_summary, twin_table

from conftest import shared_data_home

HOME = shared_data_home()  # the shared datasets, resolved here as the CLI would (tests are entry points)


@pytest.fixture(scope="module")
def twin_results():
    from perfml.diagnosis import twin_check
    from perfml.errors import DataHomeError

    try:
        return twin_check(data_home=HOME)
    except DataHomeError as exc:  # pragma: no cover - data home absent
        pytest.skip(str(exc))


@pytest.mark.slow
def test_every_pair_is_checked_on_every_profiled_board(twin_results):
    cases, table = twin_results
    assert set(table["pair"]) == {p.name for p in TWIN_PAIRS}
    # 9 boards hold block_16 profiles of all six apps (profiles_nca: GTX-680 ... Tesla-K40)
    assert len(table) == 3 * 9
    assert (cases["error"] == "").all()


@pytest.mark.slow
def test_targeted_criterion_improves_for_most_pair_board_cases(twin_results):
    _, table = twin_results
    share = table["a_holds"].mean()
    # threshold 75 %; the data give 26 of 27 (96 %): the exception is MMGU->MMGC on the
    # GTX-980, whose unified cache absorbs the uncoalesced reads before L2
    assert share >= 0.75, table[~table["a_holds"]][["pair", "board", "a_L2_GRANULARITY"]]


@pytest.mark.slow
def test_l1_granularity_improves_wherever_supported(twin_results):
    _, table = twin_results
    verdicts = table["a_L1_GRANULARITY"]
    supported = verdicts[verdicts != "unsupported"]
    assert len(supported) == 3 * 6  # six Kepler boards (CC 3.0/3.5); Maxwell has no 128-byte count
    assert supported.str.startswith("yes").all(), supported


@pytest.mark.slow
def test_shared_memory_twin_reduces_bank_conflicts(twin_results):
    _, table = twin_results
    shm = table[table["pair"] == "MMSU->MMSC"]["a_SHMEMEFFICIENCY"]
    assert shm.str.startswith("yes").all(), shm


@pytest.mark.slow
def test_measured_speedups_are_speedups(twin_results):
    # the optimized twin is faster on every board (runtimes.csv.gz medians)
    _, table = twin_results
    assert (table["measured_speedup"] > 1.0).all()


@pytest.mark.slow
def test_predicted_potential_bounds_the_measured_speedup_in_most_cases(twin_results):
    _, table = twin_results
    summary = twin_summary(table)
    # the potential speedup is an upper bound on what one optimization can give (Sec. V);
    # threshold 75 %; the data give 22 of 27 (81 %): the five exceptions are MAU->MAC on
    # Kepler boards (predicted 0.72-0.97 x measured)
    assert summary["potential_ge_measured_share"] >= 0.75, table[["pair", "board", "ratio"]]


def test_twin_table_aggregation_rules():
    # synthetic per-size cases, numbers made up for the aggregation only
    cases = pd.DataFrame(
        {
            "pair": ["MAU->MAC"] * 3,
            "board": ["B"] * 3,
            "compute_capability": ["3.5"] * 3,
            "input_size": [1, 2, 3],
            "error": [""] * 3,
            "L2_GRANULARITY_unopt": [0.25, 0.5, 1.0],
            "L2_GRANULARITY_opt": [1.0, 1.0, 1.0],  # better at 2 of 3 sizes -> majority -> holds
            "L1_GRANULARITY_unopt": [math.nan] * 3,
            "L1_GRANULARITY_opt": [math.nan] * 3,
            "predicted_potential": [2.0, 4.0, math.nan],
            "bound": ["memory", "memory", "unknown"],
            "predicted_targeted": [1.5, 1.2, 1.0],
            "measured_speedup": [1.0, 2.0, 10.0],
            "kernel_matched": [True] * 3,
        }
    )
    row = twin_table(cases).iloc[0]
    assert row["a_L2_GRANULARITY"] == "yes 2/3" and bool(row["a_holds"])
    assert row["a_L1_GRANULARITY"] == "unsupported"
    # medians over the sizes where both predicted and measured exist: 3 / 1.5
    assert row["n_predicted"] == 2
    assert row["predicted_potential"] == pytest.approx(3.0)
    assert row["measured_speedup"] == pytest.approx(1.5)
    assert row["ratio"] == pytest.approx(2.0)
    assert row["inverse_targeted"] == pytest.approx(2.0)  # median of 4, 2, 1
    assert row["bound"] == "memory"


@pytest.mark.slow
def test_cli_twins_json(capsys):
    import json

    from perfml.cli import main

    assert main(["diagnose", "twins", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["table"]) == 27 and out["summary"]["cases"] == 27
