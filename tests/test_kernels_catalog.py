"""The kernel catalog: sidecar schema, safe expressions, launch configurations, host
arguments and numpy references.

Where the truth comes from:
* the required families are the rows of seed 001 Table 1 (static) and Table 2 (dynamic),
  the latency levels of seed 000 Section III (P1) and the nine applications of
  /work/shared/datasets/README.md ("Application ids");
* launch configurations are rows of /work/shared/datasets/runtimes.csv.gz (grid_*/block_*
  columns), quoted below with their app_id and input_size;
* the subSeqMax interval summaries are checked against a brute-force maximum subarray.
"""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest

from perfml.errors import PerfmlError
from perfml._expr import ExpressionError
from perfml._expr import evaluate_sidecar as evaluate
from perfml.kernels.catalog import (
    KernelSidecarError,
    UnknownKernelError,
    default_kernels_dir,
    get_family,
    get_kernel,
    iter_kernels,
    load_catalog,
    load_family,
)
from perfml.kernels.reference import (
    KernelValidationError,
    build_arguments,
    subseqmax,
    validate,
)

# seed 001 Table 1 rows (plus FP16x2), as family[.variant]
STATIC = {
    "int32_addsub.add", "int32_addsub.sub", "int32_mul.mul", "int32_mul.mad",
    "int32_bitops.clz", "int32_bitops.brev", "int32_bitops.bfi", "int32_bitops.bfe",
    "int32_shift.shl", "int32_shift.shr", "int32_popc", "int32_rem", "int64_add.add",
    "fp32_simple.add", "fp32_simple.mul", "fp32_simple.fma", "fp32_div.full",
    "fp32_div.approx", "fp32_div.rn", "sfu.sin", "sfu.cos", "sfu.ex2", "sfu.lg2", "sfu.rsqrt",
    "sfu.rcp", "fp64_simple.add", "fp64_simple.fma", "fp16x2_fma", "dram.load", "dram.store",
    "l2_cache.load", "l2_cache.store", "shared_mem.load", "shared_mem.store", "constant_mem",
}
LATENCY = {"latency_global.l1", "latency_global.l2", "latency_global.dram", "latency_shared"}
# seed 001 Table 2 rows
DYNAMIC = {"divergence", "bank_conflicts", "access_size", "coalescence", "occupancy", "ilp",
           "unrolling", "device_sync"}
# /work/shared/datasets/README.md "Application ids" (the nine NCA apps)
APPS = {"matMul_gpu_uncoalesced", "matMul_gpu", "matMul_gpu_sharedmem_uncoalesced",
        "matMul_gpu_sharedmem", "matrix_sum_normal", "matrix_sum_coalesced", "dotProd",
        "vectorAdd", "subSeqMax"}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


# --------------------------------------------------------------------------- contents


def test_catalog_covers_the_suite(catalog):
    names = {k.name for k in iter_kernels(catalog)}
    assert STATIC <= names
    assert LATENCY <= names
    assert DYNAMIC <= set(catalog)
    assert APPS <= set(catalog)
    kinds = {name: fam.kind for name, fam in catalog.items()}
    assert {kinds[k.split(".")[0]] for k in STATIC} == {"static"}
    assert {kinds[k.split(".")[0]] for k in LATENCY} == {"latency"}
    assert {kinds[k] for k in DYNAMIC} == {"dynamic"}
    assert {kinds[k] for k in APPS} == {"application"}


def test_every_family_is_consistent(catalog):
    for name, fam in catalog.items():
        assert fam.sidecar_path.stem == name
        assert fam.source_path.is_file()
        text = fam.read_source()
        for pname, param in fam.params.items():
            if param.define:
                # the .cu compiles alone: same default behind #ifndef
                assert f"#define {pname} {param.default}" in text, (name, pname)
        assert set(fam.archs) >= {"sm_75", "sm_80", "sm_90"}
        for k in fam.kernels():
            opts = k.compile_options()
            assert opts[0] == "-std=c++17"
            assert opts == k.compile_options()  # deterministic: usable as a cache key
        if fam.kind == "dynamic":
            assert fam.sweep is not None and len(fam.sweep_points()) >= 5


def test_sweep_grids_match_table_2(catalog):
    # seed 001 Table 2 / the issue: group size 1..32, 0..31 extra conflicts (1..32-way),
    # access sizes 1..16 bytes, ILP chains 1..8
    assert catalog["divergence"].sweep.grid["GROUP_SIZE"] == (1, 2, 4, 8, 16, 32)
    assert catalog["bank_conflicts"].sweep.grid["WAYS"] == tuple(range(1, 33))
    assert catalog["access_size"].sweep.grid["BYTES"] == (1, 2, 4, 8, 16)
    assert catalog["ilp"].sweep.grid["CHAINS"] == tuple(range(1, 9))
    occ = catalog["occupancy"].sweep_points()
    assert len(occ) == 6 * 5 and {"WARPS", "SM_PCT"} <= set(occ[0])


def test_launch_only_params_are_not_compiled_in(catalog):
    opts = catalog["matMul_gpu"].compile_options({"N": 4096})
    assert "-DTILE=16" in opts and not any(o.startswith("-DN=") for o in opts)
    assert catalog["occupancy"].compile_options() == catalog["occupancy"].compile_options(
        {"WARPS": 4, "SM_PCT": 50})


@pytest.mark.parametrize(
    ("app", "params", "grid", "block"),
    [
        # runtimes.csv.gz: matMul_gpu, input_size 128 -> grid 8 x 8, block 16 x 16
        ("matMul_gpu", {"N": 128}, (8, 8, 1), (16, 16, 1)),
        # runtimes.csv.gz: matMul_gpu_uncoalesced, input_size 4096 -> grid 256 x 256
        ("matMul_gpu_uncoalesced", {"N": 4096}, (256, 256, 1), (16, 16, 1)),
        # runtimes.csv.gz: matrix_sum_normal, input_size 256, block 8 x 8 -> grid 32 x 32
        ("matrix_sum_normal", {"N": 256, "TILE": 8}, (32, 32, 1), (8, 8, 1)),
        # runtimes.csv.gz: dotProd, input_size 131072, block 64 -> grid 2048
        ("dotProd", {"N": 131072, "TPB": 64}, (2048, 1, 1), (64, 1, 1)),
        # runtimes.csv.gz: vectorAdd, input_size 4194304, block 64 -> grid 65536
        ("vectorAdd", {"N": 4194304, "TPB": 64}, (65536, 1, 1), (64, 1, 1)),
        # runtimes.csv.gz: subSeqMax, input_size 131072 -> grid 32, block 128
        ("subSeqMax", {"N": 131072}, (32, 1, 1), (128, 1, 1)),
    ],
)
def test_app_launch_matches_datasets(catalog, app, params, grid, block):
    cfg = catalog[app].launch(params, sms=15)
    assert cfg.grid == grid and cfg.block == block


def test_microbenchmark_grid_scales_with_sms(catalog):
    fam = catalog["fp32_simple"]
    assert fam.grid(None, sms=132) == (8 * 132, 1, 1)
    cfg = fam.launch(None, sms=132)
    assert fam.buffer_elements("out", None, cfg) == cfg.threads == 8 * 132 * 256
    work = fam.work({"OP": 2}, cfg)
    assert work["target_instructions"] == 64 * 256 * 4 and work["flops"] == 2 * 64 * 256 * 4
    occ = catalog["occupancy"]
    assert occ.launch({"WARPS": 4, "SM_PCT": 50}, sms=80).grid == (40, 1, 1)
    assert occ.launch({"WARPS": 4, "SM_PCT": 12}, sms=4).grid == (1, 1, 1)


def test_get_kernel_and_unknown_names(catalog):
    assert get_kernel("sfu.rcp").target == "MUFU.RCP"
    assert get_family("vectorAdd").entry == "vectorAdd"
    with pytest.raises(UnknownKernelError, match="no kernel family 'nope'"):
        get_family("nope")
    with pytest.raises(UnknownKernelError, match="sfu.sin"):
        get_kernel("sfu.tan")
    with pytest.raises(KernelSidecarError, match="unknown parameter 'ITER'"):
        catalog["fp32_simple"].compile_options({"ITER": 3})


def test_kernels_dir_is_an_argument_and_the_env_is_read_only_by_the_cli(tmp_path, monkeypatch, capsys):
    """issue 9: a user directory is passed down; the library ignores $PERFML_KERNELS_DIR."""
    from perfml.cli import main

    src = default_kernels_dir()
    for stem in ("vectorAdd",):
        for ext in (".cu", ".toml"):
            (tmp_path / f"{stem}{ext}").write_text((src / f"{stem}{ext}").read_text())
    assert list(load_catalog(tmp_path)) == ["vectorAdd"]
    monkeypatch.setenv("PERFML_KERNELS_DIR", str(tmp_path))
    assert len(load_catalog()) > 1  # the library does not read the environment
    assert main(["kernels", "list", "--json"]) == 0  # the CLI does
    assert {r["family"] for r in json.loads(capsys.readouterr().out)} == {"vectorAdd"}
    monkeypatch.delenv("PERFML_KERNELS_DIR")
    assert main(["kernels", "list", "--json", "--kernels-dir", str(tmp_path)]) == 0
    assert {r["family"] for r in json.loads(capsys.readouterr().out)} == {"vectorAdd"}
    with pytest.raises(KernelSidecarError, match="--kernels-dir"):
        load_catalog(tmp_path / "missing")
    assert main(["kernels", "list", "--kernels-dir", str(tmp_path / "missing")]) == 2
    assert "--kernels-dir" in capsys.readouterr().err


# --------------------------------------------------------------------------- malformed sidecars

GOOD = """
name = "k"
kind = "static"
source = "k.cu"
entry = "k"
component = "FPU"
target = "FFMA"
description = "d"
archs = ["sm_90"]
[params]
ITERS = { default = 4 }
[launch]
threads_per_block = 32
blocks_per_sm = 1
[[args]]
name = "out"
kind = "buffer"
dtype = "float32"
elements = "threads"
[validation]
kind = "untouched"
buffer = "out"
"""


def _write(tmp_path: Path, toml: str) -> Path:
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k(float* out) {}\n')
    path = tmp_path / "k.toml"
    path.write_text(textwrap.dedent(toml))
    return path


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (('kind = "static"', 'kind = "statik"'), "kind"),
        (('name = "k"', 'name = "q"'), "name"),
        (('entry = "k"', 'entry = "kk"'), "entry"),
        (('elements = "threads"', 'elements = "__import__(\'os\')"'), "args[0].elements"),
        (('elements = "threads"', 'elements = "ITER * 2"'), "args[0].elements"),
        (('dtype = "float32"', 'dtype = "float"'), "args[0].dtype"),
        (('archs = ["sm_90"]', 'archs = ["90"]'), "archs"),
        (("blocks_per_sm = 1", "blocks_per_mp = 1"), "launch"),
        (('buffer = "out"', 'buffer = "in"'), "validation.buffer"),
        (('target = "FFMA"\n', 'target = "FFMA"\ncolour = 1\n'), "colour"),
        (('description = "d"\n', ''), "description"),
    ],
)
def test_malformed_sidecar_names_file_key_and_fix(tmp_path, change, key):
    path = _write(tmp_path, GOOD.replace(*change))
    with pytest.raises(KernelSidecarError) as info:
        load_family(path)
    msg = str(info.value)
    assert str(path) in msg and key in msg and ";" in msg  # "<file>: <key>: <problem>; <fix>"
    assert isinstance(info.value, PerfmlError)


def test_good_sidecar_loads_and_dynamic_needs_sweep(tmp_path):
    fam = load_family(_write(tmp_path, GOOD))
    assert fam.kernels()[0].name == "k" and fam.sweep_points() == [{"ITERS": 4}]
    with pytest.raises(KernelSidecarError, match="sweep"):
        load_family(_write(tmp_path, GOOD.replace('kind = "static"', 'kind = "dynamic"')))
    with pytest.raises(KernelSidecarError, match="not valid TOML"):
        load_family(_write(tmp_path, GOOD + "\n[[["))


# --------------------------------------------------------------------------- expressions


def test_expression_evaluator_is_a_whitelist():
    names = {"N": 1000, "TILE": 16}
    assert evaluate("ceil(N/TILE)**2", names) == math.ceil(1000 / 16) ** 2
    assert evaluate("max(1, N // 3) + (N == 1000)", names) == 334
    for bad in ("__import__('os').system('true')", "N.__class__", "(lambda: 1)()",
                "[1][0]", "open('x')", "2**1000", "M + 1", "1/0"):
        with pytest.raises(ExpressionError):
            evaluate(bad, names)


# --------------------------------------------------------------------------- host arguments


def test_chase_buffer_is_a_ring_of_byte_offsets(catalog):
    fam = catalog["latency_global"]
    params = dict(get_kernel("latency_global.l1").params)
    cfg = fam.launch(params)
    chain = build_arguments(fam, params, cfg)["chain"]
    assert chain.dtype == np.uint64 and chain.size == params["CHASE_ELEMS"]
    seen, off = [], 0
    for _ in range(params["CHASE_ELEMS"] // params["STRIDE_ELEMS"]):
        seen.append(off)
        off = int(chain[off // 8])
    assert off == 0 and len(set(seen)) == len(seen)  # closes after one lap, no repeats


def test_untouched_and_equals_validation(catalog):
    fam = catalog["fp32_simple"]
    cfg = fam.launch(None, sms=1)
    args = build_arguments(fam, None, cfg)
    validate(fam, None, cfg, args, {"out": args["out"].copy()})
    fired = args["out"].copy()
    fired[3] = -1.0
    with pytest.raises(KernelValidationError, match="1 of 2048 elements of 'out'.*index 3"):
        validate(fam, None, cfg, args, {"out": fired})
    lat = catalog["latency_shared"]
    lcfg = lat.launch(None)
    largs = build_arguments(lat, None, lcfg)
    validate(lat, None, lcfg, largs, {"out": np.zeros(1, np.int32), "cycles": np.ones(1)})
    with pytest.raises(KernelValidationError):
        validate(lat, None, lcfg, largs, {"out": np.ones(1, np.int32)})


@pytest.mark.parametrize("app", ["matMul_gpu", "matMul_gpu_sharedmem", "matrix_sum_normal",
                                 "vectorAdd", "dotProd", "access_size"])
def test_reference_validation_of_simulated_outputs(catalog, app):
    fam = catalog[app]
    params = {"N": 48} if app.startswith("mat") else {"N": 1000} if app != "access_size" \
        else {"ITERS": 2}
    cfg = fam.launch(params, sms=2)
    args = build_arguments(fam, params, cfg, random_state=7)
    n = params.get("N")
    if app.startswith("matMul"):
        out = {"Pd": (args["Md"].reshape(n, n) @ args["Nd"].reshape(n, n)).ravel()}
    elif app == "matrix_sum_normal":
        out = {"C": args["A"] + args["B"]}
    elif app == "vectorAdd":
        out = {"C": args["A"] + args["B"]}
    elif app == "dotProd":
        # simulate the kernel: grid-stride loop then block sums (block = TPB threads)
        prod = (args["a"] * args["b"]).astype(np.float32)
        owner = (np.arange(n) % cfg.threads) // cfg.threads_per_block
        out = {"c": np.bincount(owner, weights=prod, minlength=cfg.blocks).astype(np.float32)}
        assert math.isclose(out["c"].sum(), float(args["a"] @ args["b"]), rel_tol=1e-4)
    else:
        out = {"dst": args["src"].copy()}
    validate(fam, params, cfg, args, out)
    wrong = {k: v.copy() for k, v in out.items()}
    next(iter(wrong.values()))[0] += 1
    with pytest.raises(KernelValidationError):
        validate(fam, params, cfg, args, wrong)


def _brute_force_max_subarray(x):
    best = -(1 << 62)
    for i in range(len(x)):
        s = 0
        for j in range(i, len(x)):
            s += int(x[j])
            best = max(best, s)
    return best


def test_subseqmax_summaries_combine_to_the_brute_force_answer():
    from perfml.kernels.catalog import LaunchConfig

    rng = np.random.default_rng(3)
    launch = LaunchConfig((2, 1, 1), (4, 1, 1))  # 8 threads, 6 elements each
    vet = rng.integers(-10, 10, 48).astype(np.int32)
    s = subseqmax({"vet": vet}, {"N": 48}, launch).reshape(8, 5)
    for t in range(8):  # per interval: best / prefix / suffix / sum by brute force
        x = vet[6 * t:6 * t + 6]
        assert s[t, 0] == _brute_force_max_subarray(x)
        assert s[t, 1] == max(np.cumsum(x))
        assert s[t, 2] == max(np.cumsum(x[::-1]))
        assert s[t, 3] == x.sum() and s[t, 4] == 6
    # host-side CGM combination of the summaries gives the global answer
    best, run_suffix = -(1 << 62), -(1 << 62)
    for b, p, suf, tot, _ in s.astype(int).tolist():
        best = max(best, b, run_suffix + p)
        run_suffix = max(suf, run_suffix + tot)
    assert best == _brute_force_max_subarray(vet)


def test_random_chase_ring_visits_its_slots_in_a_seeded_random_order(catalog):
    """chase_random: one lap over the slots 0, stride, 2 stride, ..., not in address order."""
    fam = catalog["latency_global"]
    params = dict(get_kernel("latency_global.l2").params)
    cfg = fam.launch(params)
    chains = [build_arguments(fam, params, cfg, random_state=seed)["chain"] for seed in (0, 0, 1)]
    assert np.array_equal(chains[0], chains[1]) and not np.array_equal(chains[0], chains[2])
    stride_bytes = params["STRIDE_ELEMS"] * 8
    seen, off = [], 0
    for _ in range(params["CHASE_ELEMS"] // params["STRIDE_ELEMS"]):
        seen.append(off)
        off = int(chains[0][off // 8])
    assert off == 0 and sorted(seen) == list(range(0, params["CHASE_ELEMS"] * 8, stride_bytes))
    steps = np.diff(seen)
    assert np.mean(steps == stride_bytes) < 0.01  # hops do not walk the buffer in order


def test_shipped_dram_chase_outgrows_every_registry_l2():
    """The DRAM latency ring must touch >= 4x the L2 of every board perfml knows.

    Its earlier ring (16 MiB of lines) fit in an H100's 50 MB L2 and measured the L2
    (sweeps/results/H100-SXM, first run): such a chase says nothing about DRAM.
    """
    import json

    from perfml import boards
    from perfml.characterize.limits import L2_FACTOR
    from perfml.characterize.summary import _chase_footprint_bytes

    params = dict(get_kernel("latency_global.dram").params)
    footprint = _chase_footprint_bytes("latency_global", json.dumps(params))
    largest_l2 = max(b.l2_bytes or 0 for b in boards.list_boards())
    assert footprint is not None and footprint >= L2_FACTOR * largest_l2


@pytest.mark.parametrize("family, params_json", [
    ("no_such_family", "{}"),              # a family the catalog does not ship
    ("latency_global", "not json"),        # parameters that are not JSON
    ("latency_global", "[1, 2]"),          # JSON that is not an object of parameters
    ("latency_global", '{"CHASE_ELEMS": "many"}'),  # a value the sidecar's expressions cannot use
])
def test_a_chase_footprint_of_foreign_parameters_is_unknown_not_an_error(family, params_json):
    """The L2-residency guard is skipped (None) for what it cannot read; it raises for nothing else."""
    from perfml.characterize.summary import _chase_footprint_bytes

    assert _chase_footprint_bytes(family, params_json) is None


def test_a_bug_in_the_catalog_is_not_hidden_by_the_chase_footprint(monkeypatch):
    """Only a foreign parameter set means "footprint unknown"; any other failure propagates
    (the guard caught every exception before, which could hide a broken catalog)."""
    from perfml.characterize import summary
    from perfml.kernels import catalog

    def broken():
        raise RuntimeError("catalog bug")

    monkeypatch.setattr(catalog, "load_catalog", broken)
    with pytest.raises(RuntimeError, match="catalog bug"):
        summary._chase_footprint_bytes("latency_global", "{}")
