"""Reproduce Table II of seed 003 (lambda per board and app) from the raw runtimes.

Three sets of measurements can be fitted, all raw upstream times:

* ``curated``: the BSPGPU runs of ``runtimes.csv`` (mean over the repetitions kept by the
  dataset curation; Tesla-K20 keeps only its own repetitions 11-30, see the datasets
  README, "BSPGPU GTX-680 vs Tesla-K20 duplicate runs");
* ``script``: the exact cells the upstream R scripts averaged (``bspgpu_script_inputs.csv``,
  ``used_by_r_script = 1``), i.e. the measurements Table II was fitted on;
* ``gpuperfpredict``: the 2016 gpuperfpredict runs (block_16 launches), a different code
  version measured on more boards (the only data for the Tesla-K40).

Lambda is fitted with :class:`perfml.closed_form.BSPModel` and the constants of the BSPGPU
scripts (``bsp_inputs.csv``, model source ``BSPGPU-2015``).
"""

from __future__ import annotations

from importlib import resources

import numpy as np
import pandas as pd

from perfml._files import read_versioned
from perfml.errors import DatasetSchemaError
from perfml.evaluation.metrics import BAND
from perfml.closed_form.bsp import BSPModel

from perfml.errors import InvalidValueError

RUNS = ("curated", "script", "gpuperfpredict")
TABLE2_SOURCES = ("BSPGPU-2015",)
TOLERANCE = 0.10


def paper_table2() -> pd.DataFrame:
    """Table II of seed 003 as rows (board, app_id, lambda_paper)."""
    raw = read_versioned(resources.files("perfml").joinpath("data/seed003_table2.toml"),
                         "perfml-seed003-table2", (1,), error=DatasetSchemaError)
    rows = [
        {"board": board, "app_id": app_id, "lambda_paper": float(value)}
        for board, values in raw["lambda"].items()
        for app_id, value in zip(raw["apps"], values)
    ]
    return pd.DataFrame(rows)


def table2_runs(runs: str = "script", data_home=None) -> pd.DataFrame:
    """Measured times (ms) of the Table II apps, one row per (board, app, size)."""
    from perfml.datasets import load_bspgpu_script_inputs, load_runtimes

    apps = paper_table2()["app_id"].unique()
    if runs == "script":
        cells = load_bspgpu_script_inputs(data_home)
        cells = cells[(cells["used_by_r_script"] == 1) & cells["app_id"].isin(apps)]
        frame = cells.groupby(["board", "app_id", "input_size"], as_index=False)["time_ms"].mean()
    elif runs == "curated":
        rt = load_runtimes(data_home, source="BSPGPU")
        rt = rt[rt["app_id"].isin(apps) & (rt["gpu_config"] == "default")]
        frame = rt.rename(columns={"time_ms_mean": "time_ms"})[["board", "app_id", "input_size", "time_ms"]]
    elif runs == "gpuperfpredict":
        rt = load_runtimes(data_home, source="gpuperfpredict-nca")
        block = rt["block_x"] * rt["block_y"].fillna(1)
        default_block = np.where(rt["app_id"] == "subSeqMax", 128, 256)
        rt = rt[rt["app_id"].isin(apps) & (rt["gpu_config"] == "default") & (block == default_block)]
        frame = rt.groupby(["board", "app_id", "input_size"], as_index=False)["time_ms_mean"].median()
        frame = frame.rename(columns={"time_ms_mean": "time_ms"})
    else:
        raise InvalidValueError(f"runs must be one of {RUNS}, got {runs!r}")
    return frame.reset_index(drop=True)


def reproduce_table2(runs: str = "script", data_home=None) -> pd.DataFrame:
    """Fit lambda per (board, app) and compare it with Table II, cell by cell.

    Returns one row per Table II cell: ``lambda_paper``, ``lambda_fitted`` (NaN when the
    data do not cover the cell), ``rel_diff`` = fitted / paper - 1, ``n_sizes`` and
    ``within_tolerance`` (|rel_diff| <= 10 %).
    """
    paper = paper_table2()
    measured = table2_runs(runs, data_home)
    measured = measured[measured["board"].isin(paper["board"])]
    model = BSPModel(constants_sources=TABLE2_SOURCES, data_home=data_home)
    model.fit(measured, measured["time_ms"])
    fitted = model.lambda_.rename("lambda_fitted").reset_index()
    sizes = model.n_sizes_.rename("n_sizes").reset_index()
    out = paper.merge(fitted, on=["board", "app_id"], how="left").merge(sizes, on=["board", "app_id"], how="left")
    out["n_sizes"] = out["n_sizes"].fillna(0).astype(int)
    out["rel_diff"] = out["lambda_fitted"] / out["lambda_paper"] - 1.0
    out["covered"] = out["lambda_fitted"].notna()
    out["within_tolerance"] = out["covered"] & (out["rel_diff"].abs() <= TOLERANCE)
    out["runs"] = runs
    return out


def band_shares(data_home=None, reference_board: str = "GTX-680", runs: str = "curated") -> pd.DataFrame:
    """Share of predictions within 0.8-1.2 of the measured time, per board and app.

    Two scenarios of seed 003 Section VI: ``lambda_from_reference`` fits one lambda per
    app on ``reference_board`` (over all its sizes) and applies it to every board;
    ``lambda_per_board`` fits lambda per (board, app) on that board's own sizes.
    """
    measured = table2_runs(runs, data_home)
    y = measured["time_ms"].to_numpy()
    reference_board = _measured_board(reference_board, measured)
    ref = measured[measured["board"] == reference_board]
    shared = BSPModel(group_by=("app_id",), constants_sources=TABLE2_SOURCES, data_home=data_home)
    shared.fit(ref, ref["time_ms"])
    per_board = BSPModel(constants_sources=TABLE2_SOURCES, data_home=data_home).fit(measured, y)
    frame = measured.assign(
        pred_reference=shared.predict(measured),
        pred_per_board=per_board.predict(measured),
    )
    rows = []
    for (board, app_id), part in frame.groupby(["board", "app_id"], sort=True):
        m = part["time_ms"].to_numpy()
        rows.append(
            {
                "board": board,
                "app_id": app_id,
                "n": len(part),
                "lambda_reference": float(shared.lambda_.loc[app_id]) if app_id in shared.lambda_.index else np.nan,
                "within_band_reference": _band(part["pred_reference"].to_numpy(), m),
                "lambda_per_board": float(per_board.lambda_.loc[(board, app_id)]),
                "within_band_per_board": _band(part["pred_per_board"].to_numpy(), m),
            }
        )
    return pd.DataFrame(rows)


def _measured_board(name: str, measured: pd.DataFrame) -> str:
    """``name`` as a board of the runs (registry aliases resolved); a board without runs is refused:
    a lambda fitted on no rows predicted nothing, and every share came out 0 without a word."""
    from perfml.boards import same_board
    from perfml.errors import ExperimentSpecError

    boards = sorted(map(str, measured["board"].unique()))
    match = [b for b in boards if same_board(b, str(name))]
    if not match:
        raise ExperimentSpecError(f"[table2] reference_board {name!r} has no runs in the Table II data; "
                                  f"choose one of {', '.join(boards)}")
    return match[0]


def _band(p, m) -> float:
    r = p / m
    return float(np.mean((r >= BAND[0]) & (r <= BAND[1])))
