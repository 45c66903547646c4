"""experiments/partition_camping.py: the camping it documents is in the data, and its patch leaves nothing behind.

Truth: the measured runtimes of shared/datasets (matrix_sum_normal vs matrix_sum_coalesced,
same board and size) and the registry's bus widths.
"""

from __future__ import annotations

import pytest

from conftest import experiment_script


@pytest.fixture(scope="module")
def script():
    return experiment_script("partition_camping")


@pytest.fixture(scope="module")
def slowdown(script):
    from perfml.learned.training import corpus_rows

    from conftest import shared_data_home

    return script.slowdown_table(corpus_rows(shared_data_home(), corpora=["described"])["described"])


def test_the_256_bit_kepler_boards_camp_where_the_wider_buses_do_not(slowdown):
    """At N = 1536, 3072, ..., 7680 the strided sum is 20-34x the coalesced one on the GTX-680
    and Quadro-K5200, and under 8x on every 320/384-bit Kepler and every Maxwell board."""
    sizes = [1536, 3072, 4608, 6144, 7680]
    for board in ("GTX-680", "Quadro-K5200"):
        assert (slowdown.loc[sizes, board] > 19).all(), board
    for board in ("GTX-Titan", "GTX-Titan-Black", "Tesla-K20", "Tesla-K40", "GTX-750", "GTX-970", "GTX-980"):
        assert (slowdown[board].dropna() < 8).all(), board


def test_memory_twins_share_architecture_and_bus_width(script):
    key = script.memory_twin_key
    assert key("GTX-680") == key("Quadro-K5200") == "Kepler|256"
    assert key("GTX-Titan") == key("Tesla-K40") != key("Tesla-K20")
    assert key("GTX-970") == key("GTX-980") != key("GTX-750")


@pytest.mark.parametrize("mode", ["twin_feature", "twin_first", "twin_auto"])
def test_the_twin_patch_is_undone_after_its_block(script, mode):
    from perfml.learned.features.closed_form import ClosedFormFeatures

    original = ClosedFormFeatures.transform
    with script.twin_transfer(mode):
        assert ClosedFormFeatures.transform is not original
    assert ClosedFormFeatures.transform is original


def test_twin_auto_takes_the_twins_for_the_camping_app_on_the_kepler_boards(script):
    """The inner leave-one-board-out gives matrix_sum_normal to the twins when the GTX-680 is
    held out: its twin, the Quadro-K5200, camps as it does; the other boards do not."""
    from perfml.learned.features.builder import FeatureBuilder
    from perfml.learned.training import corpus_rows

    from conftest import shared_data_home

    rows = corpus_rows(shared_data_home(), corpora=["described"])["described"]
    rows = rows[rows["board"] != "GTX-680"].reset_index(drop=True)
    builder = FeatureBuilder(data_home=shared_data_home(), compute_rate="issue").fit(rows, rows["measured_ms"])
    closed = builder._closed_form()
    assert "matrix_sum_normal" in script.twin_apps(closed, closed.transfer_)
