"""The closed-form models' hardware numbers are data files with sources.

* perfml/data/bsp_latencies.toml: the typical latencies of seed 003
  (../shared/seeds/003_75f9c814dfb7125c.txt, line 151 and line 306), checked here against
  the seed's own text;
* perfml/data/hongkim_hardware.toml: see tests/test_hongkim.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perfml.closed_form._bsp_latencies import paper_latencies, paper_latency_sources
from perfml.closed_form._data_files import read_packaged_toml
from perfml.errors import DatasetSchemaError

SEED_003 = Path(__file__).resolve().parents[2] / "shared" / "seeds" / "003_75f9c814dfb7125c.txt"


def test_bsp_latencies_are_the_numbers_printed_in_seed_003():
    if not SEED_003.exists():
        pytest.skip(f"seed file not found at {SEED_003}")
    line = SEED_003.read_text(encoding="utf-8").splitlines()[150]  # line 151
    printed = {
        "shared": r"(\d+) cycles for\s+\$g_\{SM\}\$",
        "global": r"(\d+) cycles for\s+\$g_\{GM\}\$",
        "l2": r"(\d+) cycles for\s+\$g_\{L2\}\$",
    }
    lat = paper_latencies()
    for level, pattern in printed.items():
        assert lat[level] == float(re.search(pattern, line).group(1)), level
    # "5 cycles for g_SM and g_L1": L1 takes the shared-memory latency.
    assert "and  $g_{L1}$" in line and lat["l1"] == lat["shared"]
    assert all("seed 003 line 151" in paper_latency_sources()[k] for k in lat)


def test_bsp_registry_constants_use_the_data_file():
    # H100-SXM has no row in bsp_inputs.csv (nobody fitted lambda on it): registry + seed 003.
    from perfml.closed_form._bsp_constants import registry_constants

    c = registry_constants("H100-SXM", "matMul_gpu")
    lat = paper_latencies()
    assert (c.lat_shared, c.lat_global, c.lat_l1, c.lat_l2) == (
        lat["shared"], lat["global"], lat["l1"], lat["l2"]) == (5.0, 500.0, 5.0, 250.0)


def test_packaged_file_with_another_format_or_version_is_refused():
    # the message (perfml._files, the one reader) names the file, what it holds and what is read
    with pytest.raises(DatasetSchemaError, match=r"bsp_latencies\.toml.*version 1.*reads version\(s\) \[2\]"):
        read_packaged_toml("bsp_latencies.toml", format="perfml-bsp-latencies", version=2)
    with pytest.raises(DatasetSchemaError, match=r"bsp_latencies\.toml.*perfml-bsp-latencies.*perfml-hongkim-hardware"):
        read_packaged_toml("bsp_latencies.toml", format="perfml-hongkim-hardware", version=1)


def test_latencies_are_read_only():
    with pytest.raises(TypeError):
        paper_latencies()["global"] = 1.0  # type: ignore[index]
