"""Figures logged with every experiment run (matplotlib, Agg backend, PNG files).

* the T_k/T_m box plots per board of seed 003 (Figures 6-8): the ratio predicted /
  measured, one box per board, one panel per app, with the 0.8-1.2 band;
* predicted vs measured (log-log) and the residual log(predicted / measured) histogram;
* feature importances of learned models.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def ratio_boxplots(frame: pd.DataFrame, path: Path, title: str) -> Path:
    """Seed 003 Figures 6-8 style: T_k/T_m per board (boxes), one panel per app."""
    plt = _plt()
    apps = sorted(frame["app_id"].unique())
    cols = min(3, len(apps))
    rows = int(np.ceil(len(apps) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.2 * rows), squeeze=False)
    ratio = frame["predicted_ms"] / frame["measured_ms"]
    for ax, app in zip(axes.ravel(), apps):
        part = frame[frame["app_id"] == app]
        boards = sorted(part["board"].unique())
        data = [ratio[part.index[part["board"] == b]].to_numpy() for b in boards]
        ax.boxplot(data, showfliers=False)
        ax.set_xticks(range(1, len(boards) + 1), boards, rotation=60, fontsize=7)
        ax.axhspan(0.8, 1.2, color="tab:green", alpha=0.15)
        ax.axhline(1.0, color="k", lw=0.7)
        ax.set_title(app, fontsize=9)
        ax.set_ylabel("T_k / T_m")
    for ax in axes.ravel()[len(apps):]:
        ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def predicted_vs_measured(frame: pd.DataFrame, path: Path, title: str) -> Path:
    """Log-log scatter of predicted vs measured time, coloured by board."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 6))
    for board, part in frame.groupby("board"):
        ax.scatter(part["measured_ms"], part["predicted_ms"], s=4, alpha=0.5, label=board)
    lo = float(min(frame["measured_ms"].min(), frame["predicted_ms"].min()))
    hi = float(max(frame["measured_ms"].max(), frame["predicted_ms"].max()))
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    ax.plot([lo, hi], [0.8 * lo, 0.8 * hi], "k:", lw=0.6)
    ax.plot([lo, hi], [1.2 * lo, 1.2 * hi], "k:", lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured (ms)")
    ax.set_ylabel("predicted (ms)")
    ax.set_title(title)
    ax.legend(fontsize=6, markerscale=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def residual_histogram(frame: pd.DataFrame, path: Path, title: str) -> Path:
    """Histogram of log(predicted / measured)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.hist(np.log(frame["predicted_ms"] / frame["measured_ms"]), bins=80)
    ax.axvline(np.log(0.8), color="k", ls=":")
    ax.axvline(np.log(1.2), color="k", ls=":")
    ax.set_xlabel("log(predicted / measured)")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def feature_importances(importances: pd.Series, path: Path, title: str, top: int = 25) -> Path:
    """Horizontal bar chart of the ``top`` most important features."""
    plt = _plt()
    imp = importances.head(top)[::-1]
    fig, ax = plt.subplots(figsize=(7, 0.25 * len(imp) + 1.2))
    ax.barh(imp.index, imp.to_numpy())
    ax.set_title(title)
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
