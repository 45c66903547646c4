"""Leave-one-architecture-out and newest-architecture: generation-level splits from the board registry (issue 11 §3)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from perfml.boards import get_board
from perfml.boards._registry import default_registry
from perfml.errors import PerfmlError
from perfml.evaluation import LeaveOneArchitectureOut, NewestArchitectureSplit, cross_val_predictions, get_protocol

# The nine-app boards of runtimes.csv (gpuperfpredict-nca); their architectures are the
# registry's (perfml/data/boards.toml), so the expectations below are read from it too.
BOARDS = ["GTX-680", "GTX-750", "GTX-970", "GTX-980", "GTX-Titan", "Tesla-K20", "Tesla-K40"]


def _rows(boards=BOARDS, per_board=3) -> pd.DataFrame:
    return pd.DataFrame({
        "board": np.repeat(boards, per_board),
        "app_id": "vectorAdd",
        "input_size": np.tile(np.arange(1, per_board + 1) * 1024, len(boards)),
    })


def _registry_with(board: str, **changes):
    """The default registry with one board's fields changed (a user's own registry)."""
    reg = default_registry()
    boards = dict(reg.boards)
    boards[board] = dataclasses.replace(boards[board], **changes)
    return dataclasses.replace(reg, boards=boards)


def test_one_fold_per_registry_architecture_with_disjoint_boards():
    rows = _rows()
    splitter = get_protocol("leave-one-architecture-out")
    assert isinstance(splitter, LeaveOneArchitectureOut)
    expected = {get_board(b).architecture for b in BOARDS}
    folds = list(splitter.split(rows))
    assert len(folds) == splitter.get_n_splits(rows) == len(expected) >= 2
    seen = set()
    for train, test in folds:
        test_arch = {get_board(b).architecture for b in rows.board.iloc[test]}
        train_arch = {get_board(b).architecture for b in rows.board.iloc[train]}
        assert len(test_arch) == 1 and test_arch.isdisjoint(train_arch)
        assert set(rows.board.iloc[test]).isdisjoint(rows.board.iloc[train])
        seen |= set(test)
    assert seen == set(range(len(rows)))  # every row predicted exactly once


def test_architecture_is_read_from_the_given_registry_not_a_board_list():
    # Moving GTX-680 to a made-up architecture in a user's registry gives it its own fold.
    reg = _registry_with("GTX-680", architecture="Imaginary")
    groups = LeaveOneArchitectureOut(registry=reg).groups_of(_rows())
    assert set(groups[_rows().board == "GTX-680"]) == {"Imaginary"}
    assert LeaveOneArchitectureOut(registry=reg).get_n_splits(_rows()) == 3


def test_newest_architecture_trains_only_on_older_generations():
    rows = _rows()
    splitter = get_protocol("newest-architecture")
    assert isinstance(splitter, NewestArchitectureSplit)
    ccs = {get_board(b).architecture: get_board(b).compute_capability for b in BOARDS}
    newest = max(ccs, key=lambda a: tuple(map(int, ccs[a].split("."))))
    assert splitter.newest(rows) == newest
    (train, test), = splitter.split(rows)
    assert {get_board(b).architecture for b in rows.board.iloc[test]} == {newest}
    for b in rows.board.iloc[train].unique():
        assert tuple(map(int, get_board(b).compute_capability.split("."))) < tuple(map(int, get_board(rows.board.iloc[test[0]]).compute_capability.split(".")))
    assert len(train) + len(test) == len(rows)


def test_newest_follows_the_registry_compute_capability():
    # With GTX-680 declared as a compute capability 9.0 board of its own architecture, it becomes the newest.
    reg = _registry_with("GTX-680", architecture="Future", compute_capability="9.0")
    (train, test), = NewestArchitectureSplit(registry=reg).split(_rows())
    assert set(_rows().board.iloc[test]) == {"GTX-680"}


@pytest.mark.parametrize("splitter", [LeaveOneArchitectureOut(), NewestArchitectureSplit()])
def test_one_architecture_is_a_typed_error(splitter):
    with pytest.raises(PerfmlError, match="at least two architectures"):
        list(splitter.split(_rows(["GTX-680", "Tesla-K20"])))


def test_board_without_architecture_inherits_its_compute_capability_s():
    # the registry's per-compute-capability tables carry the architecture (CC 3.0 -> Kepler)
    reg = _registry_with("GTX-680", architecture=None)
    groups = LeaveOneArchitectureOut(registry=reg).groups_of(_rows(["GTX-680", "GTX-980"]))
    assert set(groups) == {"Kepler", "Maxwell"}


def test_board_without_architecture_or_compute_capability_is_a_typed_error():
    reg = _registry_with("GTX-680", architecture=None, compute_capability=None)
    with pytest.raises(PerfmlError, match="no architecture and no compute capability"):
        LeaveOneArchitectureOut(registry=reg).groups_of(_rows())


def test_same_first_compute_capability_is_a_typed_error():
    reg = _registry_with("GTX-680", architecture="Twin", compute_capability="5.0")
    with pytest.raises(PerfmlError, match="same compute capability"):
        NewestArchitectureSplit(registry=reg).newest(_rows(["GTX-680", "GTX-750", "Tesla-K20"]))


def test_the_harness_never_lets_the_held_out_generation_into_training():
    """A model that memorizes its training boards' mean predicts the held-out generation from the others only."""
    from sklearn.base import BaseEstimator, RegressorMixin

    class TrainBoards(RegressorMixin, BaseEstimator):
        def fit(self, X, y):
            self.boards_ = set(X["board"])
            return self

        def predict(self, X):
            assert self.boards_.isdisjoint(set(X["board"]))
            return np.ones(len(X))

    rows = _rows()
    for protocol in ("leave-one-architecture-out", "newest-architecture"):
        pred = cross_val_predictions(TrainBoards(), rows, np.ones(len(rows)), protocol)
        assert len(pred) > 0


def test_experiment_files_accept_the_new_protocols(tmp_path):
    from perfml.experiments.spec import load_experiment

    for protocol in ("leave-one-architecture-out", "newest-architecture"):
        path = tmp_path / f"{protocol}.toml"
        path.write_text(
            f'name = "x"\ndescription = "y"\nprotocol = "{protocol}"\n'
            '[[models]]\nname = "roofline"\nkind = "closed_form"\nmodel = "roofline"\n'
        )
        assert load_experiment(path).protocol == protocol
