"""Row positions per distinct key, on numpy: the grouping the models' per-kernel and per-board loops need.

``DataFrame.groupby(...).indices`` costs about a millisecond whatever the number of rows
(a one-row query passes through a dozen such loops) and goes through pyarrow for text
columns; :func:`group_positions` gives the same positions with one hash factorization per
column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def group_positions(*columns) -> dict:
    """Per distinct key, the ascending row positions that hold it, keys in order of first appearance.

    ``columns``: one or more equally long sequences (Series, arrays, lists). A key is the
    value of the single column, or the tuple of the columns' values. A row with a missing
    value in any column belongs to no group, as in ``DataFrame.groupby(..., sort=False).indices``,
    which this equals.
    """
    if not columns:
        raise ValueError("group_positions needs at least one column")
    arrays = [np.asarray(c.to_numpy(dtype=object) if isinstance(c, pd.Series) else c, dtype=object) for c in columns]
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise ValueError("group_positions: the columns differ in length")
    if n == 0:
        return {}
    code = np.zeros(n, dtype=np.int64)
    missing = np.zeros(n, dtype=bool)
    for values in arrays:
        codes, uniques = pd.factorize(values)
        missing |= codes < 0
        # compacted after each column, so that the combined code stays below n (no overflow)
        code = pd.factorize(code * max(len(uniques), 1) + codes)[0]
    kept = np.flatnonzero(~missing)
    if not kept.size:
        return {}
    group = np.full(n, -1, dtype=np.int64)
    group[kept] = pd.factorize(code[kept])[0]  # 0, 1, ... in order of first appearance
    order = kept[np.argsort(group[kept], kind="stable")]
    bounds = np.cumsum(np.bincount(group[kept]))[:-1]
    out = {}
    for rows in np.split(order, bounds):
        first = rows[0]
        key = arrays[0][first] if len(arrays) == 1 else tuple(a[first] for a in arrays)
        out[key] = rows
    return out
