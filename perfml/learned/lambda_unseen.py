"""Lambda of the BSP model for a board with no runtimes, and the T_k that follows.

Seed 003 fits lambda per (board, app) from measured times, so a board nobody has
measured has no lambda. perfml predicts it from the boards that were measured: log
lambda is fitted per (board, app) as the median over that board's runs of
log(T_k(lambda=1) / T_measured), with registry constants (cores x clock, the paper's
latencies), and the unseen board gets, per app, the median log lambda of the measured
boards of its architecture, or of all measured boards when none shares it (the same
cross-fitting as the ``bsp_*`` features of :mod:`perfml.learned.features`). The board's
own runtimes are never used, even when the data home has some.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def predict_lambda(board: str, app_ids=None, sizes=None, *, data_home=None, source=None) -> pd.DataFrame:
    """lambda(board, app) and T_k (ms) at ``sizes`` for a board treated as unseen.

    Returns one row per (app, size): ``lambda``, ``lambda_from`` (which boards it came
    from), ``input_size``, ``roofline_bound_ms`` (the board's physical lower bound of the
    run's work, :func:`perfml.closed_form.roofline.roofline_bound_ms`), ``bsp_tk_ms`` (the
    description's default launch; raised to that bound, and to
    :data:`perfml.datasets.MIN_KERNEL_MS`, where the model gives less, and then
    ``clamped_to_bound`` is True).

    Why the bound: seed 003 eq. 3 charges cores x clock only; the bandwidth enters through
    lambda, fitted on the measured boards. Carried to a board of another FLOP per byte, the
    median lambda gives times its DRAM cannot stream: the L4 (300 GB/s, 30 TFLOP/s) got a
    vectorAdd of 113,246,208 elements (1.36 GB moved) in 1.16 ms, 3.9x faster than its
    bandwidth allows, where `perfml predict` answers 7.11 ms (helper probe, 2026-11-28).
    """
    from perfml.apps import get_app
    from perfml.boards import resolve_board_name
    from perfml.evaluation.closed_form import describable_runtimes
    from perfml.datasets import as_data_home
    from perfml.learned.features import FeatureBuilder
    from perfml.closed_form.bsp import BSPModel

    data_home = as_data_home(data_home, what="predict_lambda")  # one DataHome for every table read below
    name = resolve_board_name(board)
    rt = describable_runtimes(data_home, source=source)
    rt = rt[rt["board"] != name]
    builder = FeatureBuilder(profiles=False, app_identity=False, data_home=data_home).fit(rt, rt["measured_ms"])
    apps = list(app_ids) if app_ids else sorted(builder.apps_)
    rows = []
    for app_id in apps:
        app = get_app(app_id)
        measured = rt.loc[rt["app_id"] == app.app_id, "input_size"]
        if not len(measured):
            from perfml.errors import InvalidValueError

            raise InvalidValueError(
                f"no runtimes of app {app.app_id!r} on boards other than {name}"
                + (f" in source {source!r}" if source else "")
                + "; lambda is carried from the boards that ran the app: choose another --source or --app")
        n_values = list(sizes) if sizes else [int(measured.median())]
        for n in n_values:
            rows.append({"board": name, "app_id": app.app_id, "input_size": float(n)})
    q = pd.DataFrame(rows)
    # Sizes are positive integers whose default launch fits CUDA's limits on the board
    # (perfml.learned.queries); anything else is a typed error naming the --size value.
    from perfml.learned.queries import check_queries

    check_queries(q, lambda i: f"--size {q['input_size'].iloc[i]:.17g} for app {q['app_id'].iloc[i]} on {name}", apps=apps)
    F = builder.transform(q)
    t1 = BSPModel(constants_sources=(), data_home=data_home).model_terms(q)["t1_ms"].to_numpy()
    out = q.assign(
        **{
            "lambda": np.exp(F["bsp_log_lambda"].to_numpy()),
            "lambda_from": q["app_id"].map(lambda a: _lambda_from(rt, a, name)).to_numpy(),
            "bsp_t1_ms": t1,
        }
    )
    out["bsp_tk_ms"] = out["bsp_t1_ms"] / out["lambda"]
    # no kernel call takes less than its work's roofline bound on the board, nor than
    # MIN_KERNEL_MS (the launch alone takes longer): a T_k below either is raised and flagged,
    # as `perfml predict` does with its predictions
    from perfml.closed_form.roofline import roofline_bound_ms
    from perfml.datasets import MIN_KERNEL_MS

    out["roofline_bound_ms"] = roofline_bound_ms(q)
    floor = np.fmax(out["roofline_bound_ms"].to_numpy(dtype=float), MIN_KERNEL_MS)  # fmax: a NaN bound is no bound
    with np.errstate(invalid="ignore"):
        out["clamped_to_bound"] = out["bsp_tk_ms"].to_numpy(dtype=float) < floor
    out["bsp_tk_ms"] = np.where(out["clamped_to_bound"], floor, out["bsp_tk_ms"].to_numpy(dtype=float))
    numbers = out[["lambda", "bsp_t1_ms", "bsp_tk_ms"]].to_numpy(dtype=float)
    if not np.all(np.isfinite(numbers) & (numbers > 0)):
        from perfml.errors import QueryValidationError

        i = int(np.flatnonzero(~np.all(np.isfinite(numbers) & (numbers > 0), axis=1))[0])
        raise QueryValidationError(
            f"lambda or T_k for app {out['app_id'].iloc[i]} at size {out['input_size'].iloc[i]:.17g} on {name} is not a "
            "finite positive number; the app has no usable runtimes on the other boards: choose another app or source"
        )
    return out


def _lambda_from(rt: pd.DataFrame, app_id: str, board: str) -> str:
    """The boards whose lambda of ``app_id`` carries to ``board``: those of its architecture that ran
    the app, else every board that did (the cross-fitted offsets of the feature builder)."""
    from perfml.learned.features import architecture

    ran = sorted(set(rt.loc[rt["app_id"] == app_id, "board"].astype(str)))
    same = [b for b in ran if architecture(b) == architecture(board)]
    return ",".join(same) if same else "all measured boards (" + ",".join(ran) + ")"
