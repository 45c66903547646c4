"""The ``char_*`` feature group and the calibrated-tier experiment (issue 11 §2-§3)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfml.boards import get_board
from perfml.characterize import Characterization, CharacterizedValue, board_characterization, spec_values
from perfml.errors import CharacterizationBoardError, EstimatorParameterError, ExperimentSpecError
from perfml.experiments.runner import build_estimator, calibration_apps
from perfml.experiments.spec import load_experiment
from perfml.learned.features.characterization import CHARACTERIZATION_COLUMNS, CharacterizationFeatures
from perfml.learned.regressors import RuntimeRegressor

ROOT = Path(__file__).resolve().parents[1]
SYNTHETIC = "synthetic test value (not a measurement)"


def synthetic(board: str, bandwidth_share: float) -> Characterization:
    spec = get_board(board).memory_bandwidth_gbs * 1e9
    values = (*spec_values(get_board(board)),
              CharacterizedValue("dram_bandwidth", bandwidth_share * spec, "B/s", "measured", SYNTHETIC))
    return Characterization(board=board, source=SYNTHETIC, synthetic=True, values=values)


X = pd.DataFrame({"board": ["GTX-980", "GTX-750", "GTX-980"], "app_id": "vectorAdd", "input_size": [1e6, 1e6, 2e6]})


def test_char_columns_carry_each_boards_achieved_figures_beside_the_spec():
    chs = {"GTX-980": synthetic("GTX-980", 0.8), "GTX-750": synthetic("GTX-750", 0.5)}
    F = CharacterizationFeatures(characterizations=chs).fit(X).transform(X)
    assert list(F.columns) == list(CHARACTERIZATION_COLUMNS)
    np.testing.assert_allclose(F["char_dram_over_spec"], [0.8, 0.5, 0.8])
    np.testing.assert_allclose(np.exp(F["char_log_dram_bandwidth"][1]), 0.5 * 80.16e9)
    # no FP32 measurement: the spec value, ratio 1; no launch floor: NaN
    np.testing.assert_allclose(F["char_fp32_over_spec"], 1.0)
    assert F["char_log_launch_floor_ms"].isna().all()


def test_committed_characterization_gives_the_calibrated_launch_floor():
    F = CharacterizationFeatures().fit(X).transform(X.iloc[[1]])
    floor = board_characterization("GTX-750").value("launch_overhead", "ms")
    np.testing.assert_allclose(np.exp(F["char_log_launch_floor_ms"]), floor)


def test_a_characterization_of_another_board_is_refused_by_the_feature_group():
    with pytest.raises(CharacterizationBoardError):
        CharacterizationFeatures(characterizations={"GTX-980": synthetic("GTX-750", 0.5)}).fit(X).transform(X)


def test_the_group_is_off_by_default_and_on_when_asked():
    rows = pd.concat([X.assign(board=b) for b in ("GTX-980", "GTX-750", "GTX-970")], ignore_index=True)
    y = np.linspace(0.1, 0.2, len(rows))
    off = RuntimeRegressor(learner="linear", target="log", analytical=False, profiles=False).fit(rows, y)
    on = RuntimeRegressor(learner="linear", target="log", analytical=False, profiles=False, characterization=True).fit(rows, y)
    assert not any(c.startswith("char_") for c in off.feature_names_)
    assert {c for c in on.feature_names_ if c.startswith("char_")} == set(CHARACTERIZATION_COLUMNS)


@pytest.mark.parametrize("bad", [{"characterization": "yes"}, {"closed_form_peaks": "achieved"}, {"characterizations": 3}])
def test_bad_characterization_parameters_of_the_regressor(bad):
    with pytest.raises(EstimatorParameterError):
        RuntimeRegressor(**bad).fit(X, np.ones(len(X)))


def test_the_calibrated_experiment_declares_its_tier_and_hands_the_characterizations_on():
    spec = load_experiment(ROOT / "experiments" / "unseen_boards_characterized.toml")
    assert spec.characterization["tier"] == "calibrated" and calibration_apps(spec) == ["vectorAdd"]
    chs = {"GTX-980": synthetic("GTX-980", 0.8)}
    by_name = {m.name: m for m in spec.models}
    roof = build_estimator(by_name["roofline_characterized"], characterizations=chs)
    assert roof.peaks == "characterized" and roof.characterizations is chs
    assert build_estimator(by_name["roofline"], characterizations=chs).peaks == "spec"
    learned = build_estimator(by_name["hybrid_xgboost_characterized"], characterizations=chs)
    assert learned.characterization and learned.characterizations is chs
    assert build_estimator(by_name["hybrid_xgboost"], characterizations=chs).characterizations is None


def test_an_experiment_using_characterizations_without_the_calibrated_tier_is_refused(tmp_path):
    text = (ROOT / "experiments" / "unseen_boards_characterized.toml").read_text()
    path = tmp_path / "leaky.toml"
    path.write_text(text.replace('tier = "calibrated"', 'tier = "spec"'))
    with pytest.raises(ExperimentSpecError, match="calibrated"):
        load_experiment(path)
