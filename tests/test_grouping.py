"""perfml._grouping.group_positions: the positions DataFrame.groupby(sort=False).indices gives, on numpy."""

import numpy as np
import pandas as pd
import pytest

from perfml._grouping import group_positions


@pytest.mark.parametrize("seed", range(20))
def test_positions_equal_groupby_indices_missing_values_included(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 80))
    frame = pd.DataFrame({
        "board": pd.Series(rng.choice(["GTX-980", "Tesla-K40", "H100-SXM", None], n), dtype="str"),
        "app_id": pd.Series(rng.choice(["vectorAdd", "dotProd", np.nan], n), dtype=object),
        "input_size": rng.choice([1024.0, 2048.0, np.nan], n),
    })
    for columns in (["board"], ["board", "app_id"], ["app_id", "board", "input_size"]):
        expected = frame.groupby(columns, sort=False).indices
        got = group_positions(*(frame[c] for c in columns))
        assert list(got) == list(expected)
        for key, rows in expected.items():
            np.testing.assert_array_equal(got[key], rows)


def test_many_distinct_values_per_column_do_not_overflow_the_combined_code():
    n = 50_000
    columns = [np.arange(n) % 49_999, np.arange(n) % 49_997, np.arange(n) % 49_991, np.arange(n)]
    got = group_positions(*columns)
    assert len(got) == n and all(len(rows) == 1 for rows in got.values())


def test_columns_of_unequal_length_are_refused():
    with pytest.raises(ValueError, match="differ in length"):
        group_positions(["a", "b"], ["c"])
