"""Kernel descriptions of the applications come from the [model] tables of the sidecars.

Where the expected numbers come from:

* matMul (seed 003, Figure 3 / Section V-A): one thread per element of the N x N result,
  16 x 16 blocks, N fused multiply-adds (2N flops), a row of M and a column of N read
  (2N global loads), one store. The shared-memory variants (Figure 4) load 2N/bx global
  elements per thread and read 2N shared ones; the BSP convention still counts 2N global
  reads (seed 003 Section V; kernels/cuda/SIDECAR.md, "[model]").
* dotProd / vectorAdd: the gpuperfpredict kernels in perfml/kernels/cuda (grid-stride loop,
  256-thread blocks, ceil(N/256) blocks).

That the loaded descriptions equal those of the deleted perfml/data/apps.toml was checked
once when the tables moved (repr of every description and of its counts at four sizes,
identical); the pinned figures of tests/test_bsp.py (Table II cells), tests/test_hongkim_inputs.py
and tests/test_learn.py go through these descriptions and keep that true.
"""

from __future__ import annotations

import tomllib
from importlib import resources

import numpy as np
import pytest

import perfml.apps as apps
from perfml.apps import get_app, list_apps
from perfml.errors import KernelDescriptionError, UnknownAppError

from conftest import data_home_path, needs_data_home


DATA = data_home_path()

#: The NCA application kernels of the datasets (shared/datasets runtimes app_id).
NCA_APPS = {
    "matMul_gpu", "matMul_gpu_uncoalesced", "matMul_gpu_sharedmem",
    "matMul_gpu_sharedmem_uncoalesced", "matrix_sum_normal", "matrix_sum_coalesced",
    "dotProd", "vectorAdd", "subSeqMax",
}


def _sidecars() -> dict[str, dict]:
    folder = resources.files("perfml") / "kernels" / "cuda"
    return {f.name[:-5]: tomllib.loads(f.read_text(encoding="utf-8"))
            for f in folder.iterdir() if f.name.endswith(".toml")}


def test_every_application_sidecar_describes_its_dataset_app():
    sidecars = _sidecars()
    with_model = {name for name, doc in sidecars.items() if "model" in doc}
    applications = {name for name, doc in sidecars.items() if doc.get("kind") == "application"}
    assert with_model == applications == NCA_APPS
    for name in with_model:
        assert sidecars[name]["model"]["app_id"] == name
    assert set(apps.list_apps()) == NCA_APPS
    matmul = {a for a in apps.list_apps() if apps.get_app(a).app == "matMul"}
    assert matmul == {"matMul_gpu", "matMul_gpu_uncoalesced", "matMul_gpu_sharedmem",
                      "matMul_gpu_sharedmem_uncoalesced"}


def test_apps_toml_is_gone():
    assert not (resources.files("perfml") / "data" / "apps.toml").is_file()


def test_matmul_counts_follow_seed_003():
    n = np.array([1024.0])
    mm = apps.get_app("matMul_gpu")
    assert (mm.label, mm.variant) == ("MMGC", "global_coalesced")
    bx, by, gx, gy = mm.launch_dims(n)
    assert (bx[0], by[0], gx[0], gy[0]) == (16, 16, 64, 64)  # 1024 / 16 = 64 blocks a side
    w = mm.work_per_thread(n)
    assert (w["threads"][0], w["flops"][0], w["gld"][0], w["gst"][0]) == (1024 ** 2, 2048, 2048, 1)
    shared = apps.get_app("matMul_gpu_sharedmem")
    w = shared.work_per_thread(n)
    assert (w["gld"][0], w["sld"][0], w["sst"][0]) == (2 * 1024 / 16, 2048, 2 * 1024 / 16)
    b = shared.bsp_counts(n)
    assert (b["ld_global"][0], b["ld_shared"][0], b["st_shared"][0]) == (2048, 2048, 1)
    assert shared.bsp["uses_shared"] is True and mm.bsp["uses_shared"] is False


def test_explicit_launch_wins_and_missing_values_fall_back():
    dot = apps.get_app("dotProd")
    n = np.array([2.0 ** 20, 2.0 ** 20])
    bx, _, gx, _ = dot.launch_dims(n, block_x=np.array([64.0, np.nan]))
    assert bx.tolist() == [64, 256] and gx.tolist() == [2 ** 14, 2 ** 12]
    w = dot.work_per_thread(n[:1])
    assert (w["flops"][0], w["gld"][0], w["gst"][0]) == (2, 2, 1 / 256)


def test_unknown_app_names_the_sidecars():
    with pytest.raises(UnknownAppError, match="did you mean matMul_gpu.*kernels/cuda"):
        apps.get_app("matMul_gpux")


def _with_sidecars(monkeypatch, tmp_path, texts: dict[str, str]):
    files = []
    for name, text in texts.items():
        path = tmp_path / f"{name}.toml"
        path.write_text(text)
        files.append(path)
    monkeypatch.setattr(apps, "_kernel_sidecars", lambda: sorted(files))
    apps._load.cache_clear()


_GOOD = """
schema_version = 1
[model]
app_id = "{app_id}"
app = "toy"
variant = "default"
label = "T"
paper = "synthetic test description"
[model.launch]
block_x = 32
block_y = 1
grid_x = "ceil(N/bx)"
grid_y = 1
[model.work]
flops = "{flops}"
int_ops = 0
gld = 1
gst = 1
sld = 0
sst = 0
elem_bytes = 4
dram_bytes_total = "8*N"
[model.bsp]
comp_cycles = 1
ld_global = 1
st_global = 1
ld_shared = 0
st_shared = 0
uses_shared = false
"""


@pytest.fixture
def restore_cache():
    yield
    apps._load.cache_clear()


def test_sidecar_descriptions_are_validated(monkeypatch, tmp_path, restore_cache):
    _with_sidecars(monkeypatch, tmp_path, {"toy": _GOOD.format(app_id="toy", flops="N"),
                                           "micro": 'name = "micro"\n'})
    assert apps.list_apps() == ["toy"]  # a sidecar without [model] is a microbenchmark
    assert apps.get_app("toy").work_per_thread(np.array([64.0]))["flops"][0] == 64

    _with_sidecars(monkeypatch, tmp_path, {"toy": _GOOD.format(app_id="toy", flops="N").replace(
        "gld = 1\n", "")})
    with pytest.raises(KernelDescriptionError, match=r"toy.toml \[model.work\] lacks gld"):
        apps.list_apps()

    _with_sidecars(monkeypatch, tmp_path, {"a": _GOOD.format(app_id="toy", flops="N"),
                                           "b": _GOOD.format(app_id="toy", flops="N")})
    with pytest.raises(KernelDescriptionError, match="already described"):
        apps.list_apps()

    _with_sidecars(monkeypatch, tmp_path, {"toy": _GOOD.format(app_id="toy", flops="N +* 2")})
    with pytest.raises(KernelDescriptionError, match=r"toy.toml \[model.work\] flops"):
        apps.get_app("toy").work_per_thread(np.array([64.0]))

    _with_sidecars(monkeypatch, tmp_path, {"toy": _GOOD.format(app_id="toy", flops="N").replace(
        "schema_version = 1", "schema_version = 7")})
    with pytest.raises(KernelDescriptionError, match="schema_version 7"):
        apps.list_apps()


def test_kernel_catalog_accepts_the_model_table():
    from perfml.kernels.catalog import load_catalog

    catalog = load_catalog()
    assert NCA_APPS <= set(catalog)


def test_grid_stride_kernels_count_every_element_a_thread_handles():
    """dotProd loops over ceil(N / threads) elements per thread: its BSP and work counts scale with that.

    The datasets launch it both one element per thread (grid = N / block) and with 32 blocks
    (a grid-stride loop, e.g. GTX-750 rows): the total global loads are 2N either way.
    """
    dot = apps.get_app("dotProd")
    n = np.array([2.0 ** 22, 2.0 ** 22])
    launch = {"block_x": np.array([256.0, 256.0]), "grid_x": np.array([2.0 ** 14, 32.0])}
    b = dot.bsp_counts(n, **launch)
    w = dot.work_per_thread(n, **launch)
    np.testing.assert_allclose(b["threads"] * b["ld_global"], 2 * n)
    np.testing.assert_allclose(w["threads"] * w["gld"], 2 * n)
    assert b["comp_cycles"][1] == b["comp_cycles"][0] * 2 ** 14 / 32


def test_the_footprint_is_the_sidecars_buffers():
    """vectorAdd holds A, B, C of N floats; matMul three N x N matrices; dotProd two vectors
    and one partial sum per block (the [[args]] of their sidecars)."""
    n = np.array([1024.0, 8192.0])
    np.testing.assert_allclose(get_app("vectorAdd").footprint_bytes(n), 3 * 4 * n)
    np.testing.assert_allclose(get_app("matMul_gpu").footprint_bytes(n), 3 * 4 * n**2)
    dot = get_app("dotProd")
    _, _, gx, gy = dot.launch_dims(n)
    np.testing.assert_allclose(dot.footprint_bytes(n), 2 * 4 * n + 4 * gx * gy)


@needs_data_home()
def test_every_measured_run_fits_in_its_boards_memory():
    """The check perfml predict makes (a kernel whose buffers exceed the board's memory cannot
    run) refuses no run of runtimes.csv.gz: the largest holds 0.97 of its board's memory."""
    from perfml.boards import get_board
    from perfml.datasets import load_runtimes

    rt = load_runtimes(DATA)
    rt = rt[rt["app_id"].isin(list_apps())]
    worst = 0.0
    for app, part in rt.groupby("app_id"):
        launch = {c: part[c].to_numpy(dtype=float) for c in ("block_x", "block_y", "grid_x", "grid_y")}
        footprint = get_app(app).footprint_bytes(part["input_size"].to_numpy(dtype=float), **launch)
        memory = part["board"].map(lambda b: get_board(b).global_mem_bytes).to_numpy(dtype=float)
        worst = max(worst, float(np.nanmax(footprint / memory)))
    assert 0.5 < worst <= 1.0


@pytest.mark.parametrize("size", [-5, 0, float("nan"), float("inf"), [1024, -1]])
def test_a_size_that_is_no_problem_size_is_refused_naming_the_size_not_the_sidecar(size):
    """A negative size gave negative FLOPs (or a sidecar expression failed on it and the message
    said to fix the sidecar)."""
    from perfml.apps import get_app
    from perfml.errors import InvalidValueError

    app = get_app("vectorAdd")
    for method in (app.work_per_thread, app.bsp_counts, app.footprint_bytes):
        with pytest.raises(InvalidValueError, match="problem size N must be a positive finite number"):
            method(size)
