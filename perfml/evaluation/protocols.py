"""Every evaluation protocol as a scikit-learn splitter over runtime rows.

A protocol says which rows train a model and which rows it predicts. Each one is a
splitter with scikit-learn's interface (``split(X, y, groups)``, ``get_n_splits``)
that reads the groups it needs from the columns of X (a runtimes DataFrame), so one
harness (:func:`perfml.evaluation.cross_val_predictions`) scores every predictor,
closed-form or learned, under every protocol:

* ``leave-one-board-out`` (:class:`LeaveOneBoardOut`, the headline): every board is
  predicted by a model that never saw one of its runtimes;
* ``leave-one-app-out`` (:class:`LeaveOneAppOut`): the same over app ids;
* ``size-extrapolation`` (:class:`SizeExtrapolationSplit`): per app, train on the
  smaller input sizes and predict the larger ones;
* ``grouped-kfold`` (:class:`GroupedKFold`): k folds grouped by (board, app);
* ``size-cv`` (:class:`SizeCV`): k folds grouped by input size (the BSP lambda of a
  (board, app) fitted on its other sizes);
* ``reference-board`` (:class:`ReferenceBoardSplit`): train on one board, predict
  every row (seed 003's "lambda from GTX-680" scenario);
* ``leave-one-architecture-out`` (:class:`LeaveOneArchitectureOut`): one fold per
  architecture of the board registry (Kepler, Maxwell, ...): a whole generation is
  predicted by a model that never saw one of its boards (issue 11 §3);
* ``newest-architecture`` (:class:`NewestArchitectureSplit`): one split, train on the
  boards of the older architectures only and predict every board of the newest one
  (ordered by compute capability, from the registry);
* ``in-sample`` (:class:`InSampleSplit`): train and predict the same rows (what seed
  003's Figure 7 reports; for models that learn nothing it is their plain prediction);
* ``newest-board`` (:class:`NewestBoardSplit`): train on the boards of older
  architectures only, predict the boards of the newest generation (issue 10 §3); the
  order is the registry's (:func:`perfml.boards.board_generation`), no list is written here;
* ``leave-one-board-and-block-size-out`` (:class:`LeaveOneBoardAndBlockSizeOut`): one fold
  per (board, threads per block): the held-out board's runs at a block size that no
  training row has (a known kernel at an unmeasured launch on an unseen board);
  ``leave-one-board-and-kernel-block-size-out``, the same with the block size held out for
  half of the kernels at a time (the others' runs at that size train);
* :class:`TrainOnBoardsSplit`: train on named boards, predict named boards (the generic
  form of the two above and of the one-reference-board setting).

:class:`CappedTrainSplit` wraps any splitter and keeps at most ``max_rows`` training rows
per group (fixed seed), to bound the training cost; the test rows are never touched.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.model_selection import BaseCrossValidator, GroupKFold, LeaveOneGroupOut

from perfml.errors import ExperimentSpecError, PerfmlError

__all__ = [
    "PROTOCOLS",
    "CappedTrainSplit",
    "GroupedKFold",
    "InSampleSplit",
    "LeaveOneAppOut",
    "LeaveOneArchitectureOut",
    "LeaveOneBoardAndBlockSizeOut",
    "LeaveOneBoardOut",
    "NewestBoardSplit",
    "NewestArchitectureSplit",
    "ReferenceBoardSplit",
    "TrainOnBoardsSplit",
    "SizeCV",
    "SizeExtrapolationSplit",
    "get_protocol",
    "make_splitter",
]

PROTOCOLS = (
    "leave-one-board-out",
    "leave-one-app-out",
    "size-extrapolation",
    "grouped-kfold",
    "size-cv",
    "reference-board",
    "in-sample",
    "leave-one-architecture-out",
    "newest-board",
    "newest-architecture",
    "leave-one-board-and-block-size-out",
    "leave-one-board-and-kernel-block-size-out",
)


def _column(X, name: str) -> np.ndarray:
    if not isinstance(X, pd.DataFrame) or name not in X.columns:
        got = f"a DataFrame without it (columns {', '.join(map(str, X.columns[:8]))})" if isinstance(X, pd.DataFrame) \
            else type(X).__name__
        raise PerfmlError(f"this protocol needs X as a DataFrame with a {name!r} column (runtime rows), got {got}")
    return X[name].to_numpy()


class _RowSplitter(BaseCrossValidator):
    """A splitter whose groups come from the columns of X (``groups`` is ignored unless said)."""

    def groups_of(self, X) -> np.ndarray | None:
        """The group label of every row (None when the protocol has no groups)."""
        return None

    def _iter_test_masks(self, X=None, y=None, groups=None):  # pragma: no cover - split() is overridden
        raise NotImplementedError


class LeaveOneBoardOut(_RowSplitter):
    """One fold per board: train on the other boards, test on this one."""

    def groups_of(self, X):
        return _column(X, "board")

    def get_n_splits(self, X=None, y=None, groups=None):
        return len(np.unique(self.groups_of(X))) if X is not None else LeaveOneGroupOut().get_n_splits(groups=groups)

    def split(self, X, y=None, groups=None):
        yield from LeaveOneGroupOut().split(X, y, self.groups_of(X))


class LeaveOneAppOut(LeaveOneBoardOut):
    """One fold per app id: train on the other apps, test on this one."""

    def groups_of(self, X):
        return _column(X, "app_id")


class GroupedKFold(_RowSplitter):
    """:class:`sklearn.model_selection.GroupKFold` over (board, app), at most ``n_splits`` folds."""

    def __init__(self, n_splits: int = 5):
        self.n_splits = n_splits

    def groups_of(self, X):
        return (X["board"].astype(str) + "|" + X["app_id"].astype(str)).to_numpy()

    def _kfold(self, groups) -> GroupKFold:
        return GroupKFold(n_splits=min(self.n_splits, len(np.unique(groups))))

    def get_n_splits(self, X=None, y=None, groups=None):
        return self._kfold(self.groups_of(X)).get_n_splits()

    def split(self, X, y=None, groups=None):
        groups = self.groups_of(X)
        yield from self._kfold(groups).split(X, y, groups)


class SizeCV(GroupedKFold):
    """:class:`~sklearn.model_selection.GroupKFold` over input sizes (at most ``n_splits`` folds).

    Each fold fits on the other input sizes, so a per-(board, app) BSP lambda is scored
    out of sample.
    """

    def groups_of(self, X):
        return _column(X, "input_size")

    def _kfold(self, groups) -> GroupKFold:
        n_splits = min(self.n_splits, len(np.unique(groups)))
        if n_splits < 2:
            raise PerfmlError("size-cv needs at least two distinct input sizes; use --protocol in-sample")
        return GroupKFold(n_splits=n_splits)


class SizeExtrapolationSplit(_RowSplitter):
    """One split: for each app, the sizes up to the ``train_fraction`` quantile train, the rest test.

    ``groups`` (when given) are the app ids, else X's ``app_id`` column; X must have an
    ``input_size`` column.
    """

    def __init__(self, train_fraction: float = 0.7):
        self.train_fraction = train_fraction

    def groups_of(self, X):
        return _column(X, "app_id")

    def get_n_splits(self, X=None, y=None, groups=None):
        return 1

    def _iter_test_masks(self, X, y=None, groups=None):
        sizes = np.asarray(_column(X, "input_size"), dtype=float)
        apps = np.asarray(groups if groups is not None else X["app_id"])
        test = np.zeros(len(sizes), dtype=bool)
        for app in np.unique(apps):
            mask = apps == app
            distinct = np.unique(sizes[mask])
            if len(distinct) < 2:
                continue
            cut = distinct[max(0, int(np.ceil(self.train_fraction * len(distinct))) - 1)]
            test |= mask & (sizes > cut)
        yield test

    def split(self, X, y=None, groups=None):
        yield from BaseCrossValidator.split(self, X, y, groups)


class ReferenceBoardSplit(_RowSplitter):
    """One split: train on the rows of ``reference_board``, test on every row."""

    def __init__(self, reference_board: str = "GTX-680"):
        self.reference_board = reference_board

    def get_n_splits(self, X=None, y=None, groups=None):
        return 1

    def split(self, X, y=None, groups=None):
        boards = _column(X, "board")
        train = np.flatnonzero(boards == self.reference_board)
        if train.size == 0:
            raise PerfmlError(f"no runtimes of the reference board {self.reference_board!r} in the selection")
        yield train, np.arange(len(boards))


class InSampleSplit(_RowSplitter):
    """One split: train and test on every row (in-sample fit, or a model that learns nothing)."""

    def get_n_splits(self, X=None, y=None, groups=None):
        return 1

    def split(self, X, y=None, groups=None):
        rows = np.arange(len(X))
        yield rows, rows


class LeaveOneBoardAndBlockSizeOut(_RowSplitter):
    """One fold per (board, threads per block): an unseen board *and* a block size no training row has.

    The question of a user who launches a kernel with a block size nobody measured it at,
    on a board nobody measured: fold (b, s) tests the rows of board b launched with s
    threads per block, and trains on the rows of the other boards launched with any other
    block size (rows without a launch train too). A test row's app must have a training
    row of another block size, so the fold scores an unseen *launch* of a known kernel, not
    an unseen kernel. The threads per block are ``block_x * block_y * block_z`` (an empty
    ``block_y`` / ``block_z`` counts 1).

    ``other_apps_keep_it=True`` (protocol ``leave-one-board-and-kernel-block-size-out``): the
    block size is held out for half of the apps only (names sorted, every other one), so the
    other half's runs at that size train, and the next fold swaps the halves: the user's
    case of a kernel at a launch other kernels were measured at.
    """

    def __init__(self, other_apps_keep_it: bool = False):
        self.other_apps_keep_it = other_apps_keep_it

    @staticmethod
    def threads_per_block(X) -> np.ndarray:
        if "block_x" not in X.columns:
            raise PerfmlError("this protocol needs X with a block_x column (the launch of each runtime row)")
        out = np.ones(len(X))
        for c in ("block_x", "block_y", "block_z"):
            if c in X.columns:
                out *= pd.to_numeric(X[c], errors="coerce").fillna(1.0).to_numpy(dtype=float)
        return np.where(pd.to_numeric(X["block_x"], errors="coerce").notna().to_numpy(), out, np.nan)

    def groups_of(self, X):
        return _column(X, "board")

    def _folds(self, X):
        boards, apps = _column(X, "board"), _column(X, "app_id")
        tpb = self.threads_per_block(X)
        names = sorted(map(str, pd.unique(apps)))
        halves = [names[0::2], names[1::2]] if self.other_apps_keep_it else [names]
        for board in pd.unique(boards):
            mine = boards == board
            for s in np.unique(tpb[mine & np.isfinite(tpb)]):
                for half in halves:
                    held = np.isin(apps, half)
                    train = ~mine & ~(held & (tpb == s))  # NaN != s: rows without a launch train
                    known = set(apps[train & (tpb != s)])  # apps with a training run of another size
                    test = mine & held & (tpb == s) & np.isin(apps, list(known))
                    if test.any():
                        yield np.flatnonzero(train), np.flatnonzero(test)

    def get_n_splits(self, X=None, y=None, groups=None):
        if X is None:
            raise PerfmlError("this protocol counts its folds from X (runtime rows with board, app_id and the launch)")
        return sum(1 for _ in self._folds(X))

    def split(self, X, y=None, groups=None):
        yield from self._folds(X)


class LeaveOneArchitectureOut(_RowSplitter):
    """One fold per GPU architecture: train on the boards of the other architectures.

    The architecture of each row's board comes from the board registry
    (:attr:`perfml.boards.Board.architecture`), so any corpus whose boards are in the
    registry is split the same way (Kepler vs Maxwell on the nine apps and Rodinia;
    Pascal, Volta, Turing, Ampere on the DL operators).

    Parameters
    ----------
    registry : perfml.boards.Registry, optional
        Where boards are looked up (the default registry when None).
    """

    def __init__(self, registry=None):
        self.registry = registry

    def groups_of(self, X):
        from perfml.boards import board_architecture

        boards = _column(X, "board")
        names = {b: board_architecture(str(b), registry=self.registry) for b in pd.unique(boards)}
        return np.array([names[b] for b in boards], dtype=object)

    def get_n_splits(self, X=None, y=None, groups=None):
        return len(np.unique(self.groups_of(X))) if X is not None else LeaveOneGroupOut().get_n_splits(groups=groups)

    def split(self, X, y=None, groups=None):
        groups = self.groups_of(X)
        if len(np.unique(groups)) < 2:
            raise PerfmlError(
                f"leave-one-architecture-out needs boards of at least two architectures, found only {groups[0]!r}; "
                "use leave-one-board-out"
            )
        yield from LeaveOneGroupOut().split(X, y, groups)


class TrainOnBoardsSplit(_RowSplitter):
    """One split: train on the rows of ``train_boards``, test on the rows of ``test_boards``.

    Parameters
    ----------
    train_boards, test_boards : tuple of str
        Board names as in X's ``board`` column; the two must not overlap.
    """

    def __init__(self, train_boards: tuple[str, ...] = (), test_boards: tuple[str, ...] = ()):
        self.train_boards = train_boards
        self.test_boards = test_boards

    def get_n_splits(self, X=None, y=None, groups=None):
        return 1

    def _boards(self, X) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return tuple(self.train_boards), tuple(self.test_boards)

    def split(self, X, y=None, groups=None):
        boards = _column(X, "board").astype(str)
        train_boards, test_boards = self._boards(X)
        overlap = sorted(set(train_boards) & set(test_boards))
        if overlap:
            raise ExperimentSpecError(f"boards {overlap} are both trained on and predicted; a board is one or the other")
        train = np.flatnonzero(np.isin(boards, list(train_boards)))
        test = np.flatnonzero(np.isin(boards, list(test_boards)))
        if train.size == 0 or test.size == 0:
            raise ExperimentSpecError(
                f"no rows of the {'training' if train.size == 0 else 'test'} boards "
                f"{list(train_boards if train.size == 0 else test_boards)} in the selection; "
                f"boards present: {', '.join(sorted(set(boards)))}"
            )
        yield train, test


class NewestBoardSplit(TrainOnBoardsSplit):
    """One split: predict the boards of the newest generation, train on older architectures only.

    The newest generation is the largest :func:`perfml.boards.board_generation` among the
    boards of X (compute capability, from the registry); its boards are predicted, and
    every board of an *older* architecture trains (a board of the same architecture as a
    predicted one, but an older revision, is left out of both: it would not be a
    generation never seen). :class:`NewestArchitectureSplit` asks the wider question
    (every board of the newest architecture predicted).

    Parameters
    ----------
    registry : perfml.boards.Registry, optional
    """

    def __init__(self, registry=None):
        self.registry = registry

    def _boards(self, X):
        from perfml.boards import board_architecture, board_generation

        boards = sorted(set(_column(X, "board").astype(str)))
        generation = {b: board_generation(b, registry=self.registry) for b in boards}
        architecture = {b: board_architecture(b, registry=self.registry) for b in boards}
        newest = max(generation.values())
        test = tuple(b for b in boards if generation[b] == newest)
        test_arch = {architecture[b] for b in test}
        train = tuple(b for b in boards if architecture[b] not in test_arch and generation[b] < newest)
        return train, test


class NewestArchitectureSplit(_RowSplitter):
    """One split: train on the older architectures, predict every board of the newest one.

    Architectures are ordered by the lowest compute capability of their boards in X
    (from the board registry): the newest is the one with the highest; every row of
    another architecture trains. It answers "a generation the model has never seen"
    (issue 11 §3, newest board).

    Parameters
    ----------
    registry : perfml.boards.Registry, optional
        Where boards are looked up (the default registry when None).

    Raises
    ------
    PerfmlError
        Fewer than two architectures, or two architectures with the same compute capability.
    """

    def __init__(self, registry=None):
        self.registry = registry

    def groups_of(self, X):
        return LeaveOneArchitectureOut(self.registry).groups_of(X)

    def newest(self, X) -> str:
        """The newest architecture among the boards of X."""
        from perfml.boards import board_architecture, board_generation

        first_cc: dict[str, tuple[int, ...]] = {}
        for board in pd.unique(_column(X, "board")):
            arch, cc = board_architecture(str(board), registry=self.registry), board_generation(str(board), registry=self.registry)
            first_cc[arch] = min(cc, first_cc.get(arch, cc))
        if len(first_cc) < 2:
            raise PerfmlError(
                f"newest-architecture needs boards of at least two architectures, found {sorted(first_cc)}; "
                "use leave-one-board-out"
            )
        ranked = sorted(first_cc.items(), key=lambda item: item[1])
        if ranked[-1][1] == ranked[-2][1]:
            raise PerfmlError(
                f"architectures {ranked[-2][0]!r} and {ranked[-1][0]!r} start at the same compute capability "
                f"{'.'.join(map(str, ranked[-1][1]))}; fix the registry or choose the boards with [data] boards"
            )
        return ranked[-1][0]

    def get_n_splits(self, X=None, y=None, groups=None):
        return 1

    def split(self, X, y=None, groups=None):
        groups = self.groups_of(X)
        test = groups == self.newest(X)
        yield np.flatnonzero(~test), np.flatnonzero(test)


class CappedTrainSplit(_RowSplitter):
    """Any splitter, with at most ``max_rows`` training rows per group of ``columns`` (fixed seed).

    Each row draws a uniform random number (seeded by ``random_state``); a group keeps its
    ``max_rows`` rows with the smallest numbers, the same whatever the fold. With
    ``same_rows_by``, rows equal in those columns (e.g. the same operator call on
    different boards) draw the same number, so the same calls are kept on every board.
    The test rows are those of the inner splitter, unchanged.

    Parameters
    ----------
    splitter : splitter
    max_rows : int
    columns : tuple of str
        Columns of X whose values form the groups (e.g. ``("board", "op", "split")``).
    random_state : int, default=0
    same_rows_by : tuple of str, optional
        Columns naming a row's identity across groups (missing columns are skipped).
    """

    def __init__(self, splitter, max_rows: int, columns: tuple[str, ...], random_state: int = 0,
                 same_rows_by: tuple[str, ...] | None = None):
        self.splitter = splitter
        self.max_rows = max_rows
        self.columns = columns
        self.random_state = random_state
        self.same_rows_by = same_rows_by

    def groups_of(self, X):
        return self.splitter.groups_of(X) if hasattr(self.splitter, "groups_of") else None

    def get_n_splits(self, X=None, y=None, groups=None):
        return self.splitter.get_n_splits(X, y, groups)

    def _draws(self, X) -> np.ndarray:
        rng = np.random.RandomState(self.random_state)
        if not self.same_rows_by:
            return rng.random_sample(len(X))
        identity = X[[c for c in self.same_rows_by if c in X.columns]].astype("string").fillna("")
        codes = identity.groupby(list(identity.columns), sort=True, dropna=False).ngroup().to_numpy()
        return rng.random_sample(int(codes.max()) + 1 if len(codes) else 0)[codes]

    def kept(self, X) -> np.ndarray:
        """Boolean mask of the rows that may train (at most ``max_rows`` per group)."""
        draws = self._draws(X)
        order = np.argsort(draws, kind="stable")
        shuffled = X.iloc[order][list(self.columns)].astype(str)
        rank = shuffled.groupby(list(self.columns), sort=False).cumcount().to_numpy()
        keep = np.zeros(len(X), dtype=bool)
        keep[order] = rank < self.max_rows
        return keep

    def split(self, X, y=None, groups=None):
        keep = self.kept(X)
        for train, test in self.splitter.split(X, y, groups):
            yield train[keep[train]], test


_BY_NAME = {
    "leave-one-board-out": lambda n_splits, **_: LeaveOneBoardOut(),
    "leave-one-app-out": lambda n_splits, **_: LeaveOneAppOut(),
    "size-extrapolation": lambda n_splits, **_: SizeExtrapolationSplit(),
    "grouped-kfold": lambda n_splits, **_: GroupedKFold(n_splits=n_splits),
    "size-cv": lambda n_splits, **_: SizeCV(n_splits=n_splits),
    "reference-board": lambda n_splits, reference_board="GTX-680", **_: ReferenceBoardSplit(reference_board),
    "in-sample": lambda n_splits, **_: InSampleSplit(),
    "leave-one-architecture-out": lambda n_splits, **_: LeaveOneArchitectureOut(),
    "newest-board": lambda n_splits, **_: NewestBoardSplit(),
    "newest-architecture": lambda n_splits, **_: NewestArchitectureSplit(),
    "leave-one-board-and-block-size-out": lambda n_splits, **_: LeaveOneBoardAndBlockSizeOut(),
    "leave-one-board-and-kernel-block-size-out": lambda n_splits, **_: LeaveOneBoardAndBlockSizeOut(
        other_apps_keep_it=True),
}


def get_protocol(protocol, *, n_splits: int = 5, reference_board: str = "GTX-680"):
    """The splitter of a protocol name (a splitter passes through unchanged).

    Raises
    ------
    ExperimentSpecError
        For an unknown protocol name.
    """
    if not isinstance(protocol, str):
        if not hasattr(protocol, "split"):
            raise ExperimentSpecError(f"a protocol is a name ({', '.join(PROTOCOLS)}) or a splitter with split(); got {type(protocol).__name__}")
        return protocol
    if protocol not in _BY_NAME:
        raise ExperimentSpecError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    return _BY_NAME[protocol](n_splits, reference_board=reference_board)


def make_splitter(protocol: str, X: pd.DataFrame, n_splits: int = 5):
    """(splitter, groups) for a protocol name (kept for callers of the former ``perfml.learned.protocols``)."""
    splitter = get_protocol(protocol, n_splits=n_splits)
    return splitter, splitter.groups_of(X)
