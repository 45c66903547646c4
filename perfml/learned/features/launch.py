"""The launch group: block and grid dimensions of every row (inputs of the other groups)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfml._grouping import group_positions
from perfml.apps import get_app
from perfml.closed_form._inputs import LAUNCH_COLUMNS
from perfml.learned.features._common import described


def launch_frame(X: pd.DataFrame) -> pd.DataFrame:
    """Block/grid dims per row: the row's own where given, else the description's default.

    A kernel without a description (e.g. the Rodinia kernels) keeps the row's own launch.

    Raises
    ------
    UnknownAppError
        For rows of an undescribed app that lack a launch configuration.
    """
    # per kernel, written by position into arrays, one frame at the end (a one-row query passes here too)
    out = {c: np.full(len(X), np.nan) for c in LAUNCH_COLUMNS}
    given_all = {c: X[c].to_numpy(dtype=float) for c in LAUNCH_COLUMNS if c in X}
    sizes = X["input_size"].to_numpy(dtype=float)
    for app_id, pos in group_positions(X["app_id"]).items():
        given = {c: given_all[c][pos] if c in given_all else None for c in LAUNCH_COLUMNS}
        if not described(app_id):
            if any(given[c] is None or not np.all(np.isfinite(given[c])) for c in ("block_x", "grid_x")):
                from perfml.errors import UnknownAppError

                raise UnknownAppError(
                    f"app {app_id!r} has no kernel description (a [model] table in perfml/kernels/cuda) and its rows lack a launch "
                    "configuration; give block_x/block_y/grid_x/grid_y for every row, or describe the kernel"
                )
            for c in LAUNCH_COLUMNS:
                if given[c] is not None:
                    out[c][pos] = given[c]
            continue
        dims = get_app(app_id).launch_dims(sizes[pos], **given)
        for c, values in zip(LAUNCH_COLUMNS, dims):
            out[c][pos] = values
    return pd.DataFrame(out, index=X.index, columns=list(LAUNCH_COLUMNS))
