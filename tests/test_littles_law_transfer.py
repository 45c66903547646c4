"""experiments/littles_law_transfer.py: its resident-thread count follows the boards' residency limits.

Truth: the registry's SM counts and the occupancy rules (perfml.boards.wave_size).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from conftest import experiment_script


def _script():
    return experiment_script("littles_law_transfer")


def test_resident_threads_are_the_launch_up_to_one_wave():
    from perfml.boards import get_board, wave_size

    rows = pd.DataFrame({"board": ["GTX-980", "GTX-980", "GTX-750"], "block_x": [256, 256, 256],
                         "block_y": [1, 1, 1], "grid_x": [32, 100000, 100000], "grid_y": [1, 1, 1]})
    got = _script().resident_threads(rows)
    assert got[0] == 32 * 256  # the whole launch fits
    assert got[1] == wave_size(get_board("GTX-980"), 256) * 256  # one wave of the board
    assert got[2] == wave_size(get_board("GTX-750"), 256) * 256 < got[1]  # a smaller board holds fewer
    assert np.isnan(_script().resident_threads(rows.assign(block_x=np.nan))).all()
