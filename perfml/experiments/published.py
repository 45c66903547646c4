"""Published accuracy figures (Amaris et al., NCA 2016 and HiPC 2015), for side-by-side tables.

They come from ``published_accuracy_summary.csv`` of the data home: per board and kernel
MAPE of the upstream result files. They are *reported*, not recomputed: the upstream
predictions' protocol (which boards trained which model) is the upstream one.
"""

from __future__ import annotations

import pandas as pd


def published_summary(suite: str = "NCA", methods=None, data_home=None) -> pd.DataFrame:
    """One row per published method: MAPE over all its predictions (recomputed from the rows upstream)."""
    from perfml.datasets import load_published_accuracy

    table = load_published_accuracy(data_home)
    table = table[table["suite"] == suite]
    if methods:
        table = table[table["method"].isin(methods)]
    rows = []
    for method, part in table.groupby("method", sort=True):
        n = part["n_predictions"].sum()
        rows.append(
            {
                "model": f"published:{method}",
                "kind": "published",
                "n": int(n),
                "mape": float((part["mape_recomputed"] * part["n_predictions"]).sum() / n),
                "mape_mean_over_board_kernel": float(part["mape_recomputed"].mean()),
                "boards": ",".join(sorted(part["board"].unique())),
                "source": "published_accuracy_summary.csv (" + ", ".join(sorted(part["upstream_path"].unique())) + ")",
            }
        )
    return pd.DataFrame(rows)
