"""Leave one (board, block size) out: a known kernel at an unmeasured launch on an unseen board.

The rows below are synthetic (made-up boards' runs of two apps at three block sizes); the
protocol only reads their board, app and launch columns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfml.errors import PerfmlError
from perfml.evaluation import LeaveOneBoardAndBlockSizeOut, get_protocol


def _rows() -> pd.DataFrame:
    rows = []
    for board in ("A", "B", "C"):
        for block in (64, 256, 1024):
            rows.append({"board": board, "app_id": "vectorAdd", "input_size": 4096, "block_x": block, "block_y": 1})
        rows.append({"board": board, "app_id": "matMul_gpu", "input_size": 512, "block_x": 16, "block_y": 16})
        rows.append({"board": board, "app_id": "subSeqMax", "input_size": 512, "block_x": 128, "block_y": ""})
        rows.append({"board": board, "app_id": "quicksort", "input_size": 512, "block_x": None, "block_y": None})
    return pd.DataFrame(rows)


def test_each_fold_holds_out_one_board_and_that_block_size_everywhere():
    rows = _rows()
    splitter = get_protocol("leave-one-board-and-block-size-out")
    assert isinstance(splitter, LeaveOneBoardAndBlockSizeOut)
    tpb = splitter.threads_per_block(rows)
    folds = list(splitter.split(rows))
    assert splitter.get_n_splits(rows) == len(folds)
    tested = np.concatenate([test for _, test in folds])
    assert len(tested) == len(set(tested))  # every row tested at most once
    for train, test in folds:
        (board,), (size,) = rows.board.iloc[test].unique(), np.unique(tpb[test])
        assert not (rows.board.iloc[train] == board).any()
        assert not (tpb[train] == size).any()  # the block size is unseen on every training board
        assert set(rows.app_id.iloc[test]) <= set(rows.app_id.iloc[train])
    # matMul_gpu (256 threads, its only launch) shares vectorAdd's 256: that fold trains on no run
    # of it, so it is never scored; nor are subSeqMax and quicksort (one launch, or none)
    assert set(rows.app_id.iloc[tested]) == {"vectorAdd"}
    assert len(tested) == 9 and len(folds) == 9
    # rows without a launch train (they are no launch of the held-out size)
    train, _ = folds[0]
    assert "quicksort" in set(rows.app_id.iloc[train])


def test_threads_per_block_multiply_the_block_dimensions():
    rows = _rows()
    tpb = LeaveOneBoardAndBlockSizeOut.threads_per_block(rows)
    assert tpb[(rows.app_id == "matMul_gpu").to_numpy()].tolist() == [256.0] * 3
    assert tpb[(rows.app_id == "subSeqMax").to_numpy()].tolist() == [128.0] * 3  # empty block_y counts 1
    assert np.isnan(tpb[(rows.app_id == "quicksort").to_numpy()]).all()


def test_rows_without_any_launch_column_are_refused_by_name():
    with pytest.raises(PerfmlError, match="block_x"):
        list(LeaveOneBoardAndBlockSizeOut().split(_rows().drop(columns=["block_x", "block_y"])))


def test_the_kernel_variant_keeps_the_other_half_of_the_apps_at_the_held_out_block_size():
    rows = _rows()
    extra = rows[rows.app_id == "vectorAdd"].assign(app_id="matrix_sum_normal")  # a second app at 64/256/1024
    rows = pd.concat([rows, extra], ignore_index=True)
    splitter = get_protocol("leave-one-board-and-kernel-block-size-out")
    assert isinstance(splitter, LeaveOneBoardAndBlockSizeOut) and splitter.other_apps_keep_it
    tpb = splitter.threads_per_block(rows)
    folds = list(splitter.split(rows))
    tested = np.concatenate([test for _, test in folds])
    assert len(tested) == len(set(tested))
    assert set(rows.app_id.iloc[tested]) == {"vectorAdd", "matrix_sum_normal"} and len(tested) == 18
    for train, test in folds:
        (board,), (size,), (app,) = (rows.board.iloc[test].unique(), np.unique(tpb[test]),
                                     rows.app_id.iloc[test].unique())
        assert not (rows.board.iloc[train] == board).any()
        at_size = rows.iloc[train][tpb[train] == size]
        assert app not in set(at_size.app_id)  # unseen for the tested kernel ...
        other = {"vectorAdd": "matrix_sum_normal", "matrix_sum_normal": "vectorAdd"}[app]
        assert other in set(at_size.app_id)  # ... measured for the other half's (sorted names, every other one)
