"""The launch group: block and grid dimensions of every row (inputs of the other groups)."""

from __future__ import annotations

import numpy as np
import pandas as pd

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
    out = pd.DataFrame(index=X.index, columns=list(LAUNCH_COLUMNS), dtype=float)
    for app_id, part in X.groupby("app_id", sort=False):
        given = {c: part[c].to_numpy(dtype=float) if c in part else None for c in LAUNCH_COLUMNS}
        if not described(app_id):
            if any(given[c] is None or not np.all(np.isfinite(given[c])) for c in ("block_x", "grid_x")):
                from perfml.errors import UnknownAppError

                raise UnknownAppError(
                    f"app {app_id!r} has no kernel description (a [model] table in perfml/kernels/cuda) and its rows lack a launch "
                    "configuration; give block_x/block_y/grid_x/grid_y for every row, or describe the kernel"
                )
            for c in LAUNCH_COLUMNS:
                out.loc[part.index, c] = given[c] if given[c] is not None else np.nan
            continue
        app = get_app(app_id)
        bx, by, gx, gy = app.launch_dims(part["input_size"].to_numpy(dtype=float), **given)
        out.loc[part.index, "block_x"], out.loc[part.index, "block_y"] = bx, by
        out.loc[part.index, "grid_x"], out.loc[part.index, "grid_y"] = gx, gy
    return out
