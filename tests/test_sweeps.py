"""Sweep specs, plans, the runner and result sets, without a GPU.

All measurements here come from the synthetic backend or a synthetic recording
(tests/conftest.py); every row they produce carries ``synthetic=True``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import SYNTHETIC_DEVICE, SYNTHETIC_SPEC, CrashAfter, SyntheticBackend

from perfml.measure import DeviceInfo, ReplayBackend
from perfml.errors import (
    MixedDeviceError,
    ResultFileExistsError,
    ResultSchemaError,
    SweepSpecError,
)
from perfml.measure.store import SCHEMA_VERSION, ResultSet
from perfml.measure.runner import run_sweeps
from perfml.measure.spec import load_spec, load_specs, parse_spec, plan_spec

# fp32 variants, dram grid, 2 sweeps, occupancy (2 variants x 4 x 2), latency, noisy
N_SYNTHETIC_POINTS = 2 + 2 + 6 + 6 + 16 + 1 + 1


# -- specs ---------------------------------------------------------------------------------
def test_parse_spec_defaults(synthetic_spec):
    assert synthetic_spec.name == "synthetic-suite"
    assert synthetic_spec.repetitions == 8 and synthetic_spec.warmup == 1
    assert synthetic_spec.families[1].params == {"ITERS": (32, 64)}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"colour": "red"}, "unknown key"),
        ({"version": 2}, "unknown spec version"),
        ({"families": []}, "at least one"),
        ({"name": ""}, "name"),
        ({"repetitions": 0}, "repetitions must be an integer > 0"),
        ({"repetitions": 2.5}, "repetitions must be an integer"),
        ({"warmup": -1}, "warmup must be an integer >= 0"),
        ({"cv_threshold": True}, "cv_threshold"),
        ({"time_budget_s": -1}, "time_budget_s"),
        # TOML has nan and inf: a NaN budget or threshold compared as in range and disabled its check
        ({"time_budget_s": float("nan")}, "time_budget_s must be a finite number > 0"),
        ({"time_budget_s": float("inf")}, "time_budget_s must be a finite number > 0"),
        ({"cv_threshold": float("nan")}, "cv_threshold must be a finite number > 0"),
        ({"max_point_s": float("nan")}, r"max_point_s must be a number \(or inf: no limit\) > 0"),
        ({"families": [{"name": "x", "colour": 1}]}, "unknown key"),
        ({"families": [{"name": "x", "launch": 3}]}, "list of tables"),
        # stored as 32-bit integers: a larger warmup failed when the part was written, as "truncated"
        ({"warmup": 2**63 - 1}, "warmup must be at most"),
        ({"repetitions": 2**40}, "repetitions must be at most"),
        # planned nothing, and sweep run wrote an empty set
        ({"families": [{"name": "x", "variants": []}]}, "`variants` is empty"),
        # a newline garbled every line that names the spec; both given, blocks_per_sm was ignored
        ({"name": "two\nlines"}, "holds a control character"),
        ({"families": [{"name": "x", "launch": [{"grid": 64, "blocks_per_sm": 4}]}]}, "not both"),
        # true == 1 in Python: read as version 1; a table was stored as its Python repr
        ({"version": True}, "unknown spec version True"),
        ({"description": {"text": "x"}}, "`description` must be text, found dict"),
        ({"description": 3}, "`description` must be text, found int"),
        # a percentage written as the fraction's value: 5 (meaning 5 %) let no point be noisy
        ({"cv_threshold": 5}, r"cv_threshold is a fraction \(0.05 is 5 %\), found 5 \(500%\)"),
        ({"cv_threshold": 100.0}, "cv_threshold is a fraction"),
        ({"time_budget_s": 1e308}, "time_budget_s must be at most 3.1536e\\+07, found 1e\\+308"),
    ],
)
def test_bad_specs_are_refused(change, message):
    with pytest.raises(SweepSpecError, match=message):
        parse_spec({**SYNTHETIC_SPEC, **change})


def test_max_point_s_inf_means_no_limit():
    assert parse_spec({**SYNTHETIC_SPEC, "max_point_s": float("inf")}).max_point_s == float("inf")


def test_spec_file_errors(tmp_path):
    with pytest.raises(SweepSpecError, match="no such sweep spec"):
        load_spec(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [")
    with pytest.raises(SweepSpecError, match="not valid TOML"):
        load_spec(bad)
    one = tmp_path / "a.toml"
    one.write_text('name = "same"\n[[families]]\nname = "x"\n')
    (tmp_path / "b.toml").write_text('name = "same"\n[[families]]\nname = "y"\n')
    with pytest.raises(SweepSpecError, match="must be unique"):
        load_specs([tmp_path / "a.toml", tmp_path / "b.toml"])


# -- planning ------------------------------------------------------------------------------
def test_plan_points_and_launches(synthetic_spec, synthetic_catalog):
    plan = plan_spec(synthetic_spec, synthetic_catalog, sms=4)
    assert len(plan.points) == N_SYNTHETIC_POINTS
    kernels = [p.kernel for p in plan.points]
    assert kernels[:2] == ["syn_fp32.add", "syn_fp32.fma"]
    groups = [p.launch.params["GROUP_SIZE"] for p in plan.points if p.launch.family == "divergence"]
    assert groups == [1, 2, 4, 8, 16, 32]
    fma = plan.points[1]
    assert fma.launch.grid == (16, 1, 1) and fma.launch.block == (256, 1, 1)  # 4 blocks/SM x 4 SMs
    assert fma.work["instructions"] == 256 * 16 * 256
    assert fma.work["flops"] == 2 * fma.work["instructions"]
    assert plan.estimated_s > 0 and not plan.over_budget
    # one compilation per distinct compiled variant
    assert len({p.compile_key for p in plan.points}) == N_SYNTHETIC_POINTS


def test_plan_launch_configs_and_variants(synthetic_catalog):
    spec = parse_spec(
        {
            "name": "cfg",
            "families": [
                {"name": "syn_fp32", "variants": ["fma"],
                 "launch": [{"blocks_per_sm": 1}, {"blocks_per_sm": 2, "block": 128}]},
            ],
        }
    )
    points = plan_spec(spec, synthetic_catalog, sms=10).points
    assert [(p.launch.grid[0], p.launch.block[0]) for p in points] == [(10, 256), (20, 128)]


def test_plan_refuses_unknown_family_and_parameter(synthetic_catalog):
    spec = parse_spec({"name": "u", "families": [{"name": "nope"}]})
    with pytest.raises(SweepSpecError, match="unknown kernel family 'nope'"):
        plan_spec(spec, synthetic_catalog, sms=4)
    spec = parse_spec({"name": "u", "families": [{"name": "syn_dram", "params": {"BOGUS": [1]}}]})
    with pytest.raises(SweepSpecError, match="cannot be launched"):
        plan_spec(spec, synthetic_catalog, sms=4)
    spec = parse_spec({"name": "u", "families": [{"name": "syn_fp32", "variants": ["div"]}]})
    with pytest.raises(SweepSpecError, match="no variant"):
        plan_spec(spec, synthetic_catalog, sms=4)


def test_variants_named_for_a_family_without_variants_say_so():
    """The message read "family 'ilp' has no variant(s) ['zzz']; it has []"."""
    from perfml.kernels.catalog import load_catalog

    spec = parse_spec({"name": "u", "families": [{"name": "ilp", "variants": ["zzz"]}]})
    with pytest.raises(SweepSpecError, match=r"has no variant\(s\) \['zzz'\]; it has no variants: leave `variants` out"):
        plan_spec(spec, load_catalog(), sms=4)


def test_a_spec_value_a_work_formula_cannot_take_is_blamed_on_the_values_too(tmp_path):
    """SYNC_EVERY = 0 in a spec's grid divides device_sync's work.barriers by zero: the message
    said only "fix the expression" (the shipped sidecar's, which is right); it names the
    point's values and the spec's params as the other fix."""
    import re
    import shutil

    from perfml.kernels.catalog import default_kernels_dir, load_catalog

    # device_sync declares SYNC_EVERY >= 1 (refused before its formulas run); a sidecar of the
    # user's may declare no range, and then its formula's failure is what answers
    for ext in (".cu", ".toml"):
        shutil.copy(default_kernels_dir() / f"device_sync{ext}", tmp_path / f"device_sync{ext}")
    sidecar = tmp_path / "device_sync.toml"
    sidecar.write_text(re.sub(r"(min|max) = -?\d+, ", "", sidecar.read_text()))
    spec = parse_spec({"name": "u", "families": [{"name": "device_sync", "params": {"SYNC_EVERY": [0]}}]})
    with pytest.raises(SweepSpecError, match=r"cannot be launched with params \{'SYNC_EVERY': 0.*divides by zero.*"
                                             r"or choose parameter values it accepts \(a sweep spec's params"):
        plan_spec(spec, load_catalog(tmp_path), sms=132)
    with pytest.raises(SweepSpecError, match=r"SYNC_EVERY = 0 is not >= 1, the values its kernel is written for"):
        plan_spec(spec, load_catalog(), sms=132)


@pytest.mark.parametrize("families", [[{"name": "ilp", "params": {"CHAINS": [2, 2]}}], [{"name": "ilp"}, {"name": "ilp"}]],
                         ids=["a value twice", "a family twice"])
def test_a_launch_planned_twice_names_the_family_the_points_and_the_fix(families):
    """The message said only "the same launch is planned twice: <key>": not which entry, nor what to change."""
    from perfml.kernels.catalog import load_catalog

    spec = parse_spec({"name": "u", "families": families})
    with pytest.raises(SweepSpecError, match=r"family 'ilp' plans the same launch twice \(points \d+ and \d+: params "
                                             r".*remove the repeat"):
        plan_spec(spec, load_catalog(), sms=132)


def test_over_budget_plan_is_flagged(synthetic_catalog):
    spec = parse_spec({**SYNTHETIC_SPEC, "time_budget_s": 0.01})
    assert plan_spec(spec, synthetic_catalog, sms=4).over_budget


# -- running -------------------------------------------------------------------------------
def _run(out, catalog, spec=None, backend=None, **kw):
    spec = spec or parse_spec(SYNTHETIC_SPEC)
    return run_sweeps([spec], backend or SyntheticBackend(), out, catalog=catalog, **kw)


def test_run_writes_rows_with_metadata(tmp_path, synthetic_catalog):
    rs, (report,) = _run(tmp_path / "synthetic-run", synthetic_catalog, flush_every=4)
    assert report.measured == N_SYNTHETIC_POINTS and report.complete
    frame = rs.read()
    assert len(frame) == N_SYNTHETIC_POINTS
    assert frame["point_id"].is_unique
    assert (frame["schema_version"] == SCHEMA_VERSION).all()
    assert frame["synthetic"].all()  # synthetic data is labelled in the data itself
    row = frame[frame["kernel"] == "syn_fp32.fma"].iloc[0]
    assert json.loads(row["params_json"]) == {"ITERS": 256, "OP": 2}
    assert row["device_name"] == SYNTHETIC_DEVICE.name and row["sms"] == 4
    assert row["compute_capability"] == "9.0" and row["driver_version"] == "0.0-synthetic"
    assert row["cupy_version"] == "synthetic" and row["num_regs"] == 32
    assert row["target"] == "FFMA" and row["component"] == "FPU" and row["kind"] == "static"
    assert row["time_min_s"] <= row["time_median_s"] and row["n"] == 8
    assert row["instructions_per_s"] == pytest.approx(row["instructions"] / row["time_median_s"])
    assert row["flops_per_s"] == pytest.approx(2 * row["instructions_per_s"])
    assert row["instructions_per_cycle_per_sm"] == pytest.approx(
        row["instructions"] / (row["time_median_s"] * 1000e6 * 4)
    )
    # 34 rows in batches of 4: nine append-only parts
    assert len(rs.parts()) == 9
    lat = frame[frame["family"] == "syn_latency"].iloc[0]
    assert json.loads(lat["work_json"]) == {"hops": 256.0, "target_instructions": 256.0}
    manifest = json.loads((rs.path / "manifest.json").read_text())
    assert manifest["schema_version"] == SCHEMA_VERSION and manifest["synthetic"] is True
    assert manifest["fingerprint"] == SYNTHETIC_DEVICE.fingerprint
    assert pq.read_schema(rs.parts()[0]).metadata[b"perfml.schema_version"] == b"1"


def test_noisy_points_are_flagged(tmp_path, synthetic_catalog):
    rs, (report,) = _run(tmp_path / "synthetic-noise", synthetic_catalog)
    frame = rs.read()
    noisy = frame[frame["noisy"]]
    assert list(noisy["family"]) == ["syn_noisy"]  # 30 % spread vs a 5 % threshold
    assert (noisy["time_cv"] > 0.05).all() and (frame[~frame["noisy"]]["time_cv"] < 0.05).all()
    assert report.noisy == 1
    assert "nvidia-smi -lgc" in report.advice(0.05)[0]


def test_resume_after_a_crash_loses_and_duplicates_nothing(tmp_path, synthetic_catalog):
    out = tmp_path / "synthetic-crash"
    with pytest.raises(RuntimeError, match="simulated crash"):
        _run(out, synthetic_catalog, backend=CrashAfter(SyntheticBackend(), k=7), flush_every=3)
    rs = ResultSet.open(out)
    before = rs.read()
    assert len(before) == 7  # the measured rows were flushed before the crash propagated
    parts_before = {p.name: p.read_bytes() for p in rs.parts()}

    inner = SyntheticBackend()
    rs, (report,) = _run(out, synthetic_catalog, backend=inner, resume=True)
    assert report.already_done == 7 and report.measured == N_SYNTHETIC_POINTS - 7
    assert inner.calls == N_SYNTHETIC_POINTS - 7  # nothing measured twice
    after = rs.read()
    assert len(after) == N_SYNTHETIC_POINTS and after["point_id"].is_unique
    planned = {p.launch.key for p in plan_spec(parse_spec(SYNTHETIC_SPEC), synthetic_catalog, sms=4).points}
    assert set(after["launch_key"]) == planned
    # append-only: the parts written before the crash are untouched
    assert all((rs.path / n).read_bytes() == b for n, b in parts_before.items())
    # a second resume has nothing left to do
    again = SyntheticBackend()
    _, (report,) = _run(out, synthetic_catalog, backend=again, resume=True)
    assert again.calls == 0 and report.already_done == N_SYNTHETIC_POINTS


def test_time_budget_stops_a_spec_and_resume_continues(tmp_path, synthetic_catalog, monkeypatch):
    from perfml.measure import runner

    ticks = iter(range(10_000))
    spec = parse_spec({**SYNTHETIC_SPEC, "time_budget_s": 4})
    plans = runner.plan_specs([spec], synthetic_catalog, sms=4)
    rs = ResultSet.create(tmp_path / "synthetic-budget", SYNTHETIC_DEVICE, synthetic=True)
    (report,) = runner.run_plans(plans, SyntheticBackend(), rs, clock=lambda: next(ticks))
    assert 0 < report.measured < N_SYNTHETIC_POINTS
    assert report.skipped_budget == N_SYNTHETIC_POINTS - report.measured
    assert "--resume" in report.advice(0.05)[0]
    _, (report2,) = _run(rs.path, synthetic_catalog, resume=True)
    assert report2.measured == report.skipped_budget
    assert len(rs.read()) == N_SYNTHETIC_POINTS


def test_refuses_to_overwrite(tmp_path, synthetic_catalog):
    out = tmp_path / "synthetic-once"
    _run(out, synthetic_catalog)
    with pytest.raises(ResultFileExistsError, match="--resume"):
        _run(out, synthetic_catalog)


def test_refuses_to_mix_devices(tmp_path, synthetic_catalog):
    out = tmp_path / "synthetic-mixed"
    _run(out, synthetic_catalog)
    other = DeviceInfo(**{**SYNTHETIC_DEVICE.to_dict(), "name": "Another Synthetic GPU", "sms": 8})
    with pytest.raises(MixedDeviceError, match="sms: 4 here vs 8 now"):
        _run(out, synthetic_catalog, backend=SyntheticBackend(other), resume=True)
    rs = ResultSet.open(out)
    row = rs.read().iloc[0].to_dict()
    row.update(device_name="Another Synthetic GPU")
    with pytest.raises(MixedDeviceError):
        rs.append([row])
    # same model, other driver, clocks and card: the same result set
    same_model = DeviceInfo(**{**SYNTHETIC_DEVICE.to_dict(), "driver_version": "1.1", "uuid": "card-2"})
    _run(out, synthetic_catalog, backend=SyntheticBackend(same_model), resume=True)


def test_unknown_schema_versions_are_rejected(tmp_path, synthetic_catalog):
    out = tmp_path / "synthetic-version"
    rs, _ = _run(out, synthetic_catalog)
    manifest = out / "manifest.json"
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**data, "schema_version": 99}))
    with pytest.raises(ResultSchemaError, match="unknown result schema version 99"):
        ResultSet.open(out)
    manifest.write_text(json.dumps({**data, "format": "something-else"}))
    with pytest.raises(ResultSchemaError, match="expected format"):
        ResultSet.open(out)
    manifest.write_text(json.dumps(data))
    part = rs.parts()[0]
    table = pq.read_table(part)
    pq.write_table(table.replace_schema_metadata({b"perfml.schema_version": b"99"}), part)
    with pytest.raises(ResultSchemaError, match="99"):
        ResultSet.open(out).read()


@pytest.mark.parametrize("edit, match", [
    (lambda data: [], "expected a JSON object"),
    (lambda data: "perfml", "expected a JSON object"),
    (lambda data: {**data, "device": 3}, "expected a 'device' object, found int"),
    (lambda data: {**data, "device": {}}, "needs name and compute_capability"),
    (lambda data: {**data, "device": {**data["device"], "sms": "132"}}, "sms"),
    # internal errors (TypeError, ValueError) or silent use before
    (lambda data: {**data, "device": {**data["device"], "total_memory_bytes": None}}, r"total_memory_bytes = None"),
    (lambda data: {**data, "device": {**data["device"], "l2_cache_bytes": "abc"}}, r"l2_cache_bytes = 'abc'"),
    (lambda data: {**data, "device": {**data["device"], "l2_cache_bytes": -5}}, r"l2_cache_bytes = -5"),
    (lambda data: {**data, "device": {**data["device"], "l2_cache_bytes": 1e12}}, r"l2_cache_bytes = 1000000000000.0, expected a whole number"),
    (lambda data: {**data, "synthetic": "false"}, r"synthetic = 'false', expected true or false"),
])
def test_a_damaged_manifest_is_a_typed_error(tmp_path, synthetic_catalog, edit, match):
    out = tmp_path / "synthetic-damaged"
    _run(out, synthetic_catalog)
    manifest = out / "manifest.json"
    manifest.write_text(json.dumps(edit(json.loads(manifest.read_text()))))
    with pytest.raises(ResultSchemaError, match=match):
        ResultSet.open(out)


def test_a_manifest_that_is_not_text_is_a_typed_error(tmp_path, synthetic_catalog):
    out = tmp_path / "synthetic-binary"
    _run(out, synthetic_catalog)
    (out / "manifest.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ResultSchemaError, match="not valid JSON"):
        ResultSet.open(out)


def test_synthetic_and_measured_rows_never_mix(tmp_path, synthetic_catalog):
    rs = ResultSet.create(tmp_path / "measured", SYNTHETIC_DEVICE, synthetic=False)
    rec, _ = _run(tmp_path / "synthetic-src", synthetic_catalog)
    with pytest.raises(ResultSchemaError, match="synthetic"):
        rs.append([rec.read().iloc[0].to_dict()])


# -- replay through the same runner ---------------------------------------------------------
def test_replay_reproduces_a_recorded_sweep(tmp_path, synthetic_catalog, synthetic_recording):
    rs, (report,) = _run(tmp_path / "synthetic-replayed", synthetic_catalog,
                         backend=ReplayBackend(synthetic_recording))
    assert report.measured == N_SYNTHETIC_POINTS
    a = ResultSet.open(synthetic_recording).read().set_index("point_id")
    b = rs.read().set_index("point_id")
    assert set(a.index) == set(b.index)
    for col in ("time_median_s", "time_cv", "noisy", "instructions_per_s", "num_regs"):
        assert (a[col].sort_index() == b[col].sort_index()).all(), col
    assert (b["backend"] == "replay").all() and b["synthetic"].all() and rs.synthetic


# -- the command line ----------------------------------------------------------------------
@pytest.fixture
def cli(monkeypatch, synthetic_catalog):
    from perfml.cli import main

    root = next(iter(synthetic_catalog.values())).sidecar_path.parent
    monkeypatch.setenv("PERFML_KERNELS_DIR", str(root))
    return main


@pytest.fixture
def spec_file(tmp_path):
    path = tmp_path / "synthetic_suite.toml"
    lines = [f'name = "{SYNTHETIC_SPEC["name"]}"', "repetitions = 8", "warmup = 1",
             "time_budget_s = 60", "cv_threshold = 0.05"]
    for fam in SYNTHETIC_SPEC["families"]:
        lines += ["", "[[families]]", f'name = "{fam["name"]}"']
        if "params" in fam:
            lines.append("params = { " + ", ".join(f"{k} = {v}" for k, v in fam["params"].items()) + " }")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_plan(cli, spec_file, capsys):
    assert cli(["sweep", "plan", str(spec_file), "--sms", "4", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["specs"][0]["points"] == N_SYNTHETIC_POINTS
    assert doc["estimated_s"] > 0
    assert cli(["sweep", "plan", str(spec_file), "--sms", "4", "--points"]) == 0
    assert "divergence" in capsys.readouterr().out


def test_cli_run_from_replay_and_resume(cli, spec_file, synthetic_recording, tmp_path, capsys):
    out = tmp_path / "synthetic-cli"
    args = ["sweep", "run", str(spec_file), "--backend", "replay", "--replay",
            str(synthetic_recording), "--out", str(out)]
    assert cli(args) == 0
    assert len(ResultSet.open(out).read()) == N_SYNTHETIC_POINTS
    assert cli(args) == 2  # refuses to overwrite
    assert "--resume" in capsys.readouterr().err
    assert cli(args + ["--resume"]) == 0
    assert len(ResultSet.open(out).read()) == N_SYNTHETIC_POINTS


def test_cli_run_without_gpu_says_what_to_do(cli, spec_file, tmp_path, capsys):
    from perfml.measure import cupy_device_available

    if cupy_device_available():
        pytest.skip("a GPU is visible here")
    assert cli(["sweep", "run", str(spec_file), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "--backend replay" in err and not (tmp_path / "x").exists()


# -- the shipped specs ---------------------------------------------------------------------
def test_shipped_specs_plan_within_ten_minutes():
    """Every shipped spec plans against the real catalog; the suite fits 10 min on an H100.

    The runner stops a spec once its budget is spent, so the budgets (plus at most one
    point's ``max_point_s`` overrun per spec) bound the wall time whatever the estimates.
    """
    from perfml.kernels.catalog import load_catalog
    from perfml.measure.spec import default_spec_paths, plan_specs

    paths = default_spec_paths()
    if not paths:
        pytest.skip("no sweeps/*.toml yet")
    specs = load_specs(paths)
    assert sum(s.time_budget_s for s in specs) <= 600
    from perfml import boards

    board = boards.get_board("H100-SXM")
    plans = plan_specs(specs, load_catalog(), sms=board.sms, board=board)
    for plan in plans:
        assert plan.points, plan.spec.name
        assert not plan.over_budget, (plan.spec.name, plan.estimated_s, plan.spec.time_budget_s)
    assert sum(p.estimated_s for p in plans) <= 600
    overrun = sum(s.max_point_s + 1.0 for s in specs)  # one point past the budget, + set-up
    assert sum(s.time_budget_s for s in specs) + overrun <= 600
    # every kernel family of the catalog is swept by some spec
    swept = {run.name for s in specs for run in s.families}
    assert swept == set(load_catalog())


def test_failed_points_are_reported_and_retried_on_resume(tmp_path, synthetic_catalog):
    from perfml.measure import KernelValidationError

    class RejectsDivergence(SyntheticBackend):
        def run(self, launch):
            if launch.family == "divergence":
                raise KernelValidationError("synthetic: the never-true store fired")
            return super().run(launch)

    out = tmp_path / "synthetic-failing"
    rs, (report,) = _run(out, synthetic_catalog, backend=RejectsDivergence())
    assert len(report.failed) == 6 and "never-true" in report.failed[0][1]
    assert report.measured == N_SYNTHETIC_POINTS - 6 and not report.complete
    assert "--resume" in report.advice(0.05)[-1]
    _, (report,) = _run(out, synthetic_catalog, resume=True)
    assert report.measured == 6 and len(rs.read()) == N_SYNTHETIC_POINTS


def test_two_writers_are_refused(tmp_path, synthetic_catalog):
    rs = ResultSet.create(tmp_path / "synthetic-locked", SYNTHETIC_DEVICE, synthetic=True)
    with rs.writing():
        with pytest.raises(ResultFileExistsError, match="another perfml sweep"):
            _run(rs.path, synthetic_catalog, resume=True)
    _run(rs.path, synthetic_catalog, resume=True)  # released: the sweep runs


# -- layering (issue 9: one measurement layer, imports run downward) -----------------------
def _perfml_imports(path):
    """Every ``perfml.*`` module a file imports, at module level or inside functions."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m == "perfml" or m.startswith("perfml.")}


def test_measure_imports_run_downward():
    import perfml

    root = Path(perfml.__file__).parent
    rank = {"backend": 0, "kernel_timing": 0, "store": 1, "replay": 2, "cupy_backend": 2, "runtime_rows": 2, "spec": 3, "runner": 4,
            "__init__": 5}
    assert {p.stem for p in (root / "measure").glob("*.py")} == set(rank)
    for path in (root / "measure").glob("*.py"):
        for module in _perfml_imports(path):
            assert not module.startswith(("perfml.cli", "perfml.learned", "perfml.evaluation",
                                          "perfml.experiments")), (path.name, module)
            if module.startswith("perfml.measure."):
                other = module.split(".")[2]
                assert rank[other] < rank[path.stem], f"{path.name} imports {module} (upward)"
    for package in ("kernels", "closed_form"):
        for path in (root / package).rglob("*.py"):
            for module in _perfml_imports(path):
                assert not module.startswith(("perfml.measure", "perfml.cli")), (path, module)


def test_planner_estimate_is_the_closed_form_roofline():
    """The planner's whole-device bound is perfml.closed_form.roofline's, not a copy."""
    from perfml import boards
    from perfml.closed_form.roofline import roofline_time_ms
    from perfml.measure.spec import MIN_LAUNCH_S, _kernel_seconds

    board = boards.get_board("H100-SXM")
    work = {"flops": 4e12, "instructions": 1e9, "bytes": 2e9}
    expected = roofline_time_ms(4e12, 2e9, boards.peak_flops(board, "fp32"),
                                boards.peak_bandwidth(board)) / 1e3
    assert _kernel_seconds(work, {}, board) == pytest.approx(max(MIN_LAUNCH_S, expected))
    memory_bound = {"flops": 0.0, "instructions": 0.0, "bytes": 3e12}
    assert _kernel_seconds(memory_bound, {}, board) == pytest.approx(
        3e12 / boards.peak_bandwidth(board))


def test_a_bare_name_is_the_shipped_spec_of_that_name(tmp_path, monkeypatch):
    """`perfml sweep run calibration`: a name that is no file is the shipped spec; a file of
    that name in the working directory wins; an unknown name lists the shipped ones."""
    from perfml.errors import SweepSpecError
    from perfml.measure.spec import default_spec_paths

    monkeypatch.chdir(tmp_path)
    (spec,) = load_specs(["calibration"])
    assert spec.name == "calibration" and spec.path == next(p for p in default_spec_paths() if p.stem == "calibration")
    with pytest.raises(SweepSpecError, match="no shipped spec of that name.*calibration"):
        load_specs(["calibraton"])
    with pytest.raises(SweepSpecError):  # a path with a suffix is a path, never a shipped name
        load_specs(["calibration.toml"])
    other = next(p for p in default_spec_paths() if p.stem == "divergence")
    (tmp_path / "calibration").write_text(other.read_text())  # a file of that name is a file
    (own,) = load_specs(["calibration"])
    assert own.path == Path("calibration") and own.name != "calibration"


def test_a_shipped_spec_is_also_known_by_the_name_plan_prints():
    """`sweep plan` prints a spec's `name` (static-arith); that name runs it as its file's stem
    (static_arith) does, for every shipped spec."""
    from perfml.measure.spec import default_spec_paths

    for path in default_spec_paths():
        name = load_spec(path).name
        assert [s.path for s in load_specs([name])] == [path]
        assert [s.path for s in load_specs([path.stem])] == [path]


def test_a_fault_record_with_other_kinds_of_values_is_refused(tmp_path, synthetic_catalog):
    # {"point_id": ..., "error": 5} made --resume fail with TypeError ('int' object is not subscriptable)
    rs, _ = _run(tmp_path / "synthetic-faults", synthetic_catalog)
    (rs.path / "faults.jsonl").write_text('{"point_id": "abc", "error": 5}\n')
    with pytest.raises(ResultSchemaError, match=r"faults.jsonl, line 1: not a fault record"):
        _run(rs.path, synthetic_catalog, resume=True)


@pytest.mark.parametrize("existing_empty_folder", [False, True])
def test_a_sweep_that_fails_before_its_first_point_leaves_no_result_set(tmp_path, synthetic_catalog,
                                                                        existing_empty_folder):
    # the manifest-only set it left made the same command refuse to run again ("pass --resume")
    out = tmp_path / "synthetic-failed"
    if existing_empty_folder:
        out.mkdir()
    with pytest.raises(RuntimeError, match="simulated crash after 0 points"):
        _run(out, synthetic_catalog, backend=CrashAfter(SyntheticBackend(), k=0))
    assert out.is_dir() == existing_empty_folder and not (out.exists() and any(out.iterdir()))
    rs, (report,) = _run(out, synthetic_catalog)  # the same command runs again
    assert report.measured == N_SYNTHETIC_POINTS


def test_a_failure_after_measured_points_keeps_them(tmp_path, synthetic_catalog, monkeypatch):
    out = tmp_path / "synthetic-partial"
    rs, _ = _run(out, synthetic_catalog)
    assert not rs.discard_if_empty(remove_directory=True) and (out / "manifest.json").exists()


def test_a_folder_of_other_files_is_not_made_a_result_set(tmp_path, synthetic_catalog):
    out = tmp_path / "synthetic-other"
    out.mkdir()
    (out / "keep.txt").write_text("keep")
    with pytest.raises(ResultFileExistsError, match="holds other files and no result set"):
        _run(out, synthetic_catalog)
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_the_points_done_are_read_under_the_writer_lock(tmp_path, synthetic_catalog, monkeypatch):
    # read before the lock, a --resume that started while another finished measured every
    # point again (the set held each twice and could not be characterized)
    import fcntl

    rs, _ = _run(tmp_path / "synthetic-done", synthetic_catalog)
    real = ResultSet.completed_point_ids
    held = []

    def probe(self):
        with open(self.path / "manifest.json", "rb") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                held.append(True)
            else:
                fcntl.flock(handle, fcntl.LOCK_UN)
                held.append(False)
        return real(self)

    monkeypatch.setattr(ResultSet, "completed_point_ids", probe)
    _, (report,) = _run(rs.path, synthetic_catalog, resume=True)
    assert held == [True] and report.measured == 0 and len(rs.read()) == N_SYNTHETIC_POINTS


def test_a_new_set_another_sweep_is_writing_is_not_discarded(tmp_path, synthetic_catalog):
    # the sweep that created a set failed (refused by the lock of a --resume started beside it)
    # and removed the manifest under the other sweep, which then lost all it measured
    rs = ResultSet.create(tmp_path / "synthetic-shared", SYNTHETIC_DEVICE, synthetic=True)
    with rs.writing():
        assert not rs.discard_if_empty(remove_directory=True)
        assert (rs.path / "manifest.json").exists()
    assert rs.discard_if_empty(remove_directory=True) and not rs.path.exists()


def test_sigterm_during_a_sweep_stops_it_as_ctrl_c_does(tmp_path, synthetic_catalog, monkeypatch):
    # timeout/kill/a batch scheduler send SIGTERM, which ended the process before the runner
    # wrote what it had measured; inside a perfml command it raises KeyboardInterrupt, which the
    # runner turns into a final flush (as for Ctrl-C)
    import os
    import signal

    from perfml.cli import terminate_as_interrupt
    from perfml.measure import runner

    before = signal.getsignal(signal.SIGTERM)
    spec = parse_spec(SYNTHETIC_SPEC)
    plans = runner.plan_specs([spec], synthetic_catalog, sms=4)
    rs = ResultSet.create(tmp_path / "synthetic-term", SYNTHETIC_DEVICE, synthetic=True)
    backend, calls = SyntheticBackend(), []
    real_run = backend.run

    def run_then_terminate(launch):
        calls.append(launch)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return real_run(launch)

    monkeypatch.setattr(backend, "run", run_then_terminate)
    with pytest.raises(KeyboardInterrupt), terminate_as_interrupt():
        runner.run_plans(plans, backend, rs, flush_every=100)
    assert signal.getsignal(signal.SIGTERM) == before
    assert 2 <= len(rs.read()) <= 3  # measured before the signal: written, not lost


def test_an_interrupt_right_after_a_part_is_written_stores_no_point_twice(tmp_path, synthetic_catalog, monkeypatch):
    # SIGTERM between the write of a part and the emptying of the buffer: the final flush wrote the
    # same rows again, and the set could not be read ("point ... is stored twice"); 4 of 10 sets
    # interrupted with --flush-every 1
    from perfml.measure import runner

    spec = parse_spec(SYNTHETIC_SPEC)
    plans = runner.plan_specs([spec], synthetic_catalog, sms=4)
    rs = ResultSet.create(tmp_path / "synthetic-race", SYNTHETIC_DEVICE, synthetic=True)
    real_append, calls = ResultSet.append, []

    def append_then_interrupt(self, rows):
        calls.append(len(rows))
        written = real_append(self, rows)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the part is on disk; the interrupt lands before the write returns
        return written

    monkeypatch.setattr(ResultSet, "append", append_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        runner.run_plans(plans, SyntheticBackend(), rs, flush_every=2)
    rows = rs.read()  # refused a point stored twice before
    assert len(rows) == 4 and rows["point_id"].is_unique


def test_an_interrupt_swallowed_by_a_finalizer_is_delivered_again(monkeypatch):
    # a SIGTERM that landed in xgboost's DMatrix.__del__ during `perfml train` was printed as
    # "Exception ignored in ..." and training went on; inside a command it comes again
    import gc
    import signal
    import sys
    import time

    from perfml.cli import terminate_as_interrupt

    class Finalized:
        def __del__(self):
            raise KeyboardInterrupt  # what the signal handler raises when it lands here

    before = (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGALRM), sys.unraisablehook)
    with pytest.raises(KeyboardInterrupt), terminate_as_interrupt():
        Finalized()
        gc.collect()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # the interrupt must end this loop
            time.sleep(0.001)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGALRM), sys.unraisablehook) == before
    # outside a command Python's own handling is left alone
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: seen.append(info.exc_type))
    Finalized()
    gc.collect()
    assert seen == [KeyboardInterrupt]


def test_a_set_its_time_budget_stopped_is_not_characterized_until_resumed(tmp_path, synthetic_catalog):
    # each function is normalized by the largest intensity measured: the stopped set's curves
    # differed from the full one's without a word (F_DRAMThr(0.125) 0.147 instead of 0.683)
    from perfml.characterize import characterize_results
    from perfml.errors import ResultSchemaError
    from perfml.measure import runner

    ticks = iter(range(10_000))
    spec = parse_spec({**SYNTHETIC_SPEC, "time_budget_s": 4})
    plans = runner.plan_specs([spec], synthetic_catalog, sms=4)
    rs = ResultSet.create(tmp_path / "synthetic-stopped", SYNTHETIC_DEVICE, synthetic=True)
    (report,) = runner.run_plans(plans, SyntheticBackend(), rs, clock=lambda: next(ticks), catalog=synthetic_catalog)
    assert report.skipped_budget > 0
    assert rs.missing_points() == {spec.name: report.skipped_budget}
    with pytest.raises(ResultSchemaError, match=rf"lacks planned points of {spec.name} \({report.skipped_budget} "
                                                r"point\(s\)\).*--resume.*--allow-incomplete"):
        characterize_results(rs.path)
    partial = characterize_results(rs.path, allow_incomplete=True)  # asked for: what was measured
    _run(rs.path, synthetic_catalog, resume=True)
    assert rs.missing_points() == {}
    assert characterize_results(rs.path).to_dict() != partial.to_dict()


def test_a_resume_of_a_changed_spec_or_kernel_is_refused(tmp_path, synthetic_catalog):
    # point ids are made from the spec name and the launch: a changed grid, or a kernel whose
    # sidecar or source was edited, would have put two sweeps' rows under one spec
    from perfml.errors import ResultSchemaError

    rs, _ = _run(tmp_path / "synthetic-changed", synthetic_catalog)
    smaller = {**SYNTHETIC_SPEC, "families": [f if f["name"] != "syn_dram" else {**f, "params": {"ITERS": [32]}}
                                              for f in SYNTHETIC_SPEC["families"]]}
    with pytest.raises(ResultSchemaError, match="now plans other points"):
        _run(rs.path, synthetic_catalog, spec=parse_spec(smaller), resume=True)
    plans = rs.plans()[SYNTHETIC_SPEC["name"]]
    rs.record_plans({"other": {"points": ["p1"], "kernels": {"k": "aaaa"}}})
    with pytest.raises(ResultSchemaError, match=r"the kernel\(s\) k of spec 'other' changed"):
        rs.record_plans({"other": {"points": ["p1"], "kernels": {"k": "bbbb"}}})
    assert rs.plans()[SYNTHETIC_SPEC["name"]] == plans  # a refusal changes no record
    _run(rs.path, synthetic_catalog, resume=True)  # the unchanged spec resumes


def test_a_kernels_fingerprint_follows_its_sidecar_and_source(tmp_path):
    from types import SimpleNamespace

    from perfml.measure.runner import _kernel_fingerprints
    from perfml.measure.spec import PlannedPoint, SweepPlan

    (tmp_path / "k.toml").write_text("sidecar")
    (tmp_path / "k.cu").write_text("source")
    entry = SimpleNamespace(sidecar_path=tmp_path / "k.toml", source_path=tmp_path / "k.cu")
    launch = SimpleNamespace(family="k", key="k|1")
    plan = SweepPlan(spec=parse_spec(SYNTHETIC_SPEC), points=(PlannedPoint(spec="s", launch=launch),), estimated_s=0.0)
    first = _kernel_fingerprints(plan, {"k": entry})
    (tmp_path / "k.cu").write_text("source, edited")
    second = _kernel_fingerprints(plan, {"k": entry})
    assert set(first) == {"k"} and first != second
    assert _kernel_fingerprints(plan, None) == {}  # no catalog: nothing to fingerprint



def test_sweep_commands_refuse_an_unknown_board_and_a_replay_into_its_own_set(tmp_path, capsys):
    """`sweep plan --board NOPE --sms 200` dropped the board silently; `sweep run --replay SET --out SET
    --resume` appended replayed copies to the measured set they came from."""
    import shutil

    from perfml.cli import main

    assert main(["sweep", "plan", "--board", "NOPE", "--sms", "200"]) == 2
    assert "unknown board 'NOPE'" in capsys.readouterr().err
    measured = Path(__file__).resolve().parents[1] / "sweeps" / "results" / "H200"
    copy = tmp_path / "h200"
    shutil.copytree(measured, copy)
    before = sorted(p.name for p in copy.iterdir())
    assert main(["sweep", "run", "--backend", "replay", "--replay", str(copy), "--out", str(copy), "--resume"]) == 2
    assert "is the set --replay serves" in capsys.readouterr().err
    assert sorted(p.name for p in copy.iterdir()) == before


@pytest.mark.parametrize("argv, message", [
    (["--backend", "replay", "--replay", "REC", "--device", "3"], "--device 3 selects a GPU for --backend cupy"),
    (["--backend", "replay", "--replay", "REC", "--device", "0"], "--device 0 selects a GPU for --backend cupy"),
    (["--backend", "cupy", "--replay", "REC"], "is read by --backend replay only"),
])
def test_sweep_run_refuses_an_option_its_backend_does_not_read(tmp_path, capsys, argv, message):
    """`--backend replay --device 99` served the recording whatever device was named, and `--backend
    cupy --replay SET` measured (or failed for want of a GPU) without a word about --replay."""
    from perfml.cli import main

    recording = str(Path(__file__).resolve().parents[1] / "sweeps" / "results" / "H200")
    argv = [recording if a == "REC" else a for a in argv]
    assert main(["sweep", "run", "calibration", *argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_an_unknown_variant_names_the_spec_file(tmp_path, synthetic_catalog):
    from perfml.measure import runner

    path = tmp_path / "mine.toml"
    family = next(iter(synthetic_catalog))
    path.write_text(f'name = "mine"\n[[families]]\nname = "{family}"\nvariants = ["xyz"]\n')
    spec = load_spec(path)
    with pytest.raises(SweepSpecError, match=r"mine.toml: family .* has no variant\(s\) \['xyz'\]"):
        runner.plan_specs([spec], synthetic_catalog, sms=4)


@pytest.mark.parametrize("board, message", [
    ("GeForce-8800GTX", "more than the GeForce-8800GTX's 512 per block"),
    ("GT-630", "above 65535, the limit of compute capability 2.1"),
])
def test_a_plan_holds_launches_to_the_boards_own_limits(board, message, capsys):
    """The planner held every board to compute capability 9.0's limits: 1024-thread blocks and grid x of
    524288 were planned on a GeForce 8800 GTX (512 threads per block; grid x at most 65535)."""
    from perfml.cli import main

    assert main(["sweep", "plan", "applications" if board == "GeForce-8800GTX" else "calibration", "--board", board]) == 2
    assert message in capsys.readouterr().err


def test_a_plan_holds_the_buffers_to_the_boards_memory(tmp_path):
    from perfml.boards import get_board
    from perfml.kernels.catalog import load_catalog
    from perfml.measure import runner

    spec = tmp_path / "big.toml"
    spec.write_text('name = "big"\n[[families]]\nname = "vectorAdd"\nparams = { N = [268435456], TPB = [256] }\n')
    with pytest.raises(SweepSpecError, match=r"needs 3.221e\+09 bytes of buffers, more than the GTX-750's"):
        runner.plan_specs([load_spec(spec)], load_catalog(), sms=4, board=get_board("GTX-750"))
    runner.plan_specs([load_spec(spec)], load_catalog(), sms=132, board=get_board("H100-SXM"))  # 3 GB fit in 80


def test_an_interrupted_sweep_says_how_to_go_on(tmp_path, capsys, monkeypatch):
    """SIGTERM or Ctrl-C printed only 'interrupted': nothing said the points were kept, nor how to resume."""
    from perfml.cli import main
    from perfml.measure import runner

    out = tmp_path / "set"

    def interrupted(*args, **kwargs):
        out.mkdir()
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_sweeps", interrupted)
    measured = Path(__file__).resolve().parents[1] / "sweeps" / "results" / "H200"
    assert main(["sweep", "run", "--backend", "replay", "--replay", str(measured), "--out", str(out)]) == 130
    err = " ".join(capsys.readouterr().err.split())
    assert f"stored in {out}" in err and f"--out {out} --resume" in err


def test_a_sweep_interrupted_while_logging_to_mlflow_says_how_to_log_it(tmp_path, capsys, monkeypatch):
    """Ctrl-C while the finished set was being logged printed 'results in ...' and 'interrupted':
    nothing said the set was not logged, nor how to log it (helper probe)."""
    from perfml.cli import main
    from perfml.lab import sweeps as lab_sweeps

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(lab_sweeps, "log_result_set", interrupted)
    out, store = tmp_path / "set", f"sqlite:///{tmp_path / 'mlflow.db'}"
    measured = Path(__file__).resolve().parents[1] / "sweeps" / "results" / "H200"
    assert main(["-q", "sweep", "run", "calibration", "--backend", "replay", "--replay", str(measured), "--out", str(out),
                 "--tracking-uri", store]) == 130
    err = capsys.readouterr().err
    joined = "".join(err.split())  # the console wraps long lines, inside a path too
    assert f"{out}iscompletebutwasnotloggedtoMLflow" in joined, err
    assert f"--out{out}--resume--tracking-uri{store}" in joined, err


def test_a_spec_may_not_change_the_parameter_that_defines_a_variant(tmp_path):
    """params = { OP = [0] } with variants = ["fma"] ran an add under the name and target of fp32_simple.fma."""
    from perfml.kernels.catalog import load_catalog
    from perfml.measure import runner

    spec = tmp_path / "mis.toml"
    spec.write_text('name = "mis"\n[[families]]\nname = "fp32_simple"\nvariants = ["fma"]\nparams = { OP = [0] }\n')
    with pytest.raises(SweepSpecError, match=r"variant 'fma' is defined by OP = 2, which the spec's params change"):
        runner.plan_specs([load_spec(spec)], load_catalog(), sms=132)
    spec.write_text('name = "ok"\n[[families]]\nname = "fp32_simple"\nvariants = ["fma"]\nparams = { OP = [2] }\n')
    assert runner.plan_specs([load_spec(spec)], load_catalog(), sms=132)
