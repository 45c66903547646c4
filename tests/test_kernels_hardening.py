"""issue 14 hardening of the kernels and measurement commands.

* §1 never run foreign code: sidecar compiler options are an allow-list, ``source``
  stays inside the kernels directory, the compiler command is an argument list;
* §3 no silent nonsense: unknown ``--kind``/``--family``/``--arch`` are typed errors,
  JSON output is strict JSON;
* §4 no unbounded work: sweep points are counted before expanding and limited;
* §5 nothing half-written: parts are written whole, stale temp files are removed on
  ``--resume``, OS errors while writing are typed.

Every sidecar and spec here is written by the test; the catalog and device are the
synthetic ones of ``tests/conftest.py``.
"""

from __future__ import annotations

import errno
import math
import json
import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest
from conftest import SYNTHETIC_SPEC, SyntheticBackend, write_synthetic_catalog
from hypothesis import given, settings
from hypothesis import strategies as st

from perfml.errors import (
    KernelOptionError,
    KernelPathError,
    KernelSidecarError,
    PerfmlError,
    ResultWriteError,
    SweepTooLargeError,
    UnknownChoiceError,
)
from perfml.kernels.catalog import KINDS, default_kernels_dir, load_catalog
from perfml.kernels.options import (
    SIDECAR_OPTIONS,
    check_compile_options,
    check_sidecar_options,
)
from perfml.kernels.sidecar import load_family


def _cli(args: list[str]) -> int:
    from perfml.cli import main

    return main(args)


def _copy_family(dst: Path, name: str = "vectorAdd") -> Path:
    src = default_kernels_dir()
    dst.mkdir(parents=True, exist_ok=True)
    for ext in (".cu", ".toml"):
        (dst / f"{name}{ext}").write_text((src / f"{name}{ext}").read_text())
    return dst / f"{name}.toml"


def _with_options(sidecar: Path, options: list[str]) -> None:
    text = sidecar.read_text()
    assert "\noptions" not in text
    listed = ", ".join(json.dumps(o) for o in options)
    # top-level key: before the first table header
    head, sep, rest = text.partition("\n[")
    sidecar.write_text(f"{head}\noptions = [{listed}]\n{sep}{rest}")


# -- §1 compiler options ------------------------------------------------------------------
GOOD = ["-O3", "-O0", "--use_fast_math", "-use_fast_math", "-lineinfo", "--ftz=true",
        "-ftz=false", "--prec-div=false", "--prec-sqrt=true", "--fmad=false", "-std=c++17",
        "--maxrregcount=64", "-maxrregcount=255", "-Xptxas=-v", "--restrict",
        "--extra-device-vectorization", "--resource-usage"]
BAD = ["-ccbin=/tmp/evil.sh", "-ccbin", "--compiler-bindir=/tmp", "-Xcompiler=-fplugin=x.so",
       "-Xlinker=-rpath", "--run", "-run", "-o", "--output-file=/etc/passwd", "-I/", "-I..",
       "--include-path=/", "-include=/etc/passwd", "--pre-include=x.h", "-L/tmp", "-lfoo",
       "-odir=/tmp", "--keep-dir=/tmp", "-keep", "--dryrun", "-O3 -ccbin=/x", "-O3\n",
       "-O4", "--maxrregcount=0", "--maxrregcount=256", "--maxrregcount=64x", "-std=gnu++17",
       "--ftz=yes", "-DITERS=1", "-arch=sm_90", "--gpu-architecture=compute_90", "", "O3",
       "--use_fast_math=false", "-Xptxas=-O3,--verbose", "--fmad=true;touch x", "-O3`id`"]

#: prefixes of nvcc/NVRTC flags that name files, programs or extra passes
DANGEROUS = ("-ccbin", "--compiler-bindir", "-X", "--compiler-options", "--linker-options",
             "-I", "--include", "-include", "--pre-include", "-L", "-l", "--library",
             "-o", "--output", "-odir", "--keep", "-keep", "--run", "-run", "--dryrun",
             "-save-temps", "--dependency", "-M", "--options-file", "-optf", "-D", "-U",
             "-arch", "--gpu-architecture", "-code", "-gencode")


@pytest.mark.parametrize("opt", GOOD)
def test_allowed_options_pass(opt, tmp_path):
    assert check_sidecar_options([opt], "x.toml") == (opt,)
    sidecar = _copy_family(tmp_path)
    _with_options(sidecar, [opt])
    fam = load_family(sidecar)
    assert opt in fam.compile_options()
    check_compile_options(fam.compile_options())  # what reaches the compiler passes too


@pytest.mark.parametrize("opt", BAD)
def test_refused_options_name_the_sidecar_the_option_and_the_allowed_set(opt, tmp_path):
    sidecar = _copy_family(tmp_path)
    _with_options(sidecar, [opt])
    with pytest.raises(KernelOptionError) as info:
        load_family(sidecar)
    msg = str(info.value)
    assert str(sidecar) in msg and repr(opt) in msg and "allowed: -O0..-O3" in msg
    assert "\n" not in msg.replace(repr(opt), "")


@settings(max_examples=300, deadline=None)
@given(st.one_of(
    st.text(alphabet="-=_+/.;$`|&<> abcdefghijklmnopqrstuvwxyzOXDILU0123456789", max_size=30),
    st.sampled_from(GOOD + BAD).flatmap(
        lambda s: st.tuples(st.just(s), st.text(max_size=4)).map(lambda t: t[0] + t[1])),
    st.sampled_from(DANGEROUS).flatmap(
        lambda s: st.text(max_size=12).map(lambda tail: s + tail)),
))
def test_only_allow_listed_shapes_pass(opt):
    """Whatever the string, an accepted option is one of the allow-listed shapes: one
    token, no path, no shell syntax, no flag that names a program or a file."""
    patterns = [re.compile(p) for p, _ in SIDECAR_OPTIONS]
    try:
        check_sidecar_options([opt], "x.toml")
    except KernelOptionError:
        assert not any(p.fullmatch(opt) for p in patterns)
        return
    assert any(p.fullmatch(opt) for p in patterns)
    assert opt.startswith("-") and len(opt) <= 40
    assert not re.search(r"[\s/\\;$`|&<>*?'\"]", opt), opt
    assert not opt.startswith(DANGEROUS) or opt in ("-Xptxas=-v", "-lineinfo"), opt


def test_ccbin_in_a_sidecar_never_runs(tmp_path, capsys):
    """The reported example: ``options = ["-ccbin=SCRIPT"]`` made `kernels check` run SCRIPT."""
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    script.chmod(0o755)
    kernels = tmp_path / "kernels"
    sidecar = _copy_family(kernels)
    _with_options(sidecar, [f"-ccbin={script}"])
    code = _cli(["kernels", "check", "--compiler", "nvcc", "--kernels-dir", str(kernels),
                 "--cache-dir", str(tmp_path / "cache"), "--arch", "sm_90"])
    err = capsys.readouterr().err
    assert code == 2 and not marker.exists()
    assert "-ccbin" in err and "vectorAdd.toml" in err and len(err.strip().splitlines()) == 1


def test_compiler_gets_an_argument_list_and_only_allowed_options(tmp_path, monkeypatch):
    """No shell: nvcc is run with an argument list; bad options stop before it runs."""
    from perfml.kernels import compile as comp

    calls = []

    def fake_run(cmd, *args, **kwargs):
        calls.append((cmd, kwargs))
        return subprocess.CompletedProcess(cmd, 1, stdout="", stderr="fake nvcc: no")

    monkeypatch.setattr(comp, "find_nvcc", lambda cuda_home=None: "/opt/fake/bin/nvcc")
    monkeypatch.setattr(comp.subprocess, "run", fake_run)
    src = 'extern "C" __global__ void k(float* o) { o[0] = 1.0f; }\n'
    with pytest.raises(KernelOptionError, match="ccbin"):
        comp.compile_cubin(src, "sm_90", ["-ccbin=/tmp/x"], compiler="nvcc", cache_dir=tmp_path)
    assert calls == []  # refused before any process started
    with pytest.raises(PerfmlError, match="nvcc failed"):
        comp.compile_cubin(src, "sm_90", ["-std=c++17", "-DITERS=4", "-O3"], compiler="nvcc",
                           cache_dir=tmp_path)
    compile_calls = [(c, k) for c, k in calls if "-cubin" in c]
    assert compile_calls
    for cmd, kwargs in compile_calls:
        assert isinstance(cmd, list) and all(isinstance(a, str) for a in cmd)
        assert not kwargs.get("shell", False)
        assert "-ccbin=/tmp/x" not in cmd


# -- §1 paths -----------------------------------------------------------------------------
def _with_source(sidecar: Path, source: str) -> None:
    text = sidecar.read_text()
    text = re.sub(r'^source = ".*"$', f"source = {json.dumps(source)}", text, count=1,
                  flags=re.M)
    sidecar.write_text(text)


def test_source_must_stay_inside_the_kernels_directory(tmp_path):
    kernels = tmp_path / "kernels"
    sidecar = _copy_family(kernels)
    outside = tmp_path / "outside.cu"
    outside.write_text((kernels / "vectorAdd.cu").read_text())
    (kernels / "sub").mkdir()
    for source in (str(outside), "../outside.cu", "sub/../../outside.cu", "/etc/passwd", ""):
        _with_source(sidecar, source)
        with pytest.raises(KernelPathError, match="source"):
            load_catalog(kernels)
    (kernels / "link.cu").symlink_to(outside)
    _with_source(sidecar, "link.cu")
    with pytest.raises(KernelPathError, match="outside the kernels directory"):
        load_catalog(kernels)
    (kernels / "sub" / "inside.cu").symlink_to(kernels / "vectorAdd.cu")
    _with_source(sidecar, "sub/inside.cu")  # a link that stays inside is fine
    assert load_catalog(kernels)["vectorAdd"].read_source().startswith(
        (kernels / "vectorAdd.cu").read_text()[:20])
    _with_source(sidecar, "sub")
    with pytest.raises(KernelPathError, match="not a regular file"):
        load_catalog(kernels)


@pytest.mark.parametrize("line", ['#include "/tmp/outside/evil.h"', '#include "helper.h"', '  # include </etc/passwd>',
                                  "#include <../outside.h>"])
def test_a_kernel_source_including_a_file_is_refused(tmp_path, line):
    """An #include of a file outside the kernels folder compiled it and echoed its text, and its edits
    reached neither the compile cache's key nor a resumed sweep's fingerprint (both hash the .cu)."""
    kernels = tmp_path / "kernels"
    _copy_family(kernels)
    source = kernels / "vectorAdd.cu"
    source.write_text(line + "\n" + source.read_text())
    with pytest.raises(KernelSidecarError, match=r"vectorAdd.cu, line 1: #include .* includes a file"):
        load_catalog(kernels)["vectorAdd"].read_source()
    source.write_text("#include <cuda_fp16.h>\n" + source.read_text().split("\n", 1)[1])  # a toolkit header
    assert load_catalog(kernels)["vectorAdd"].read_source().startswith("#include <cuda_fp16.h>")


@pytest.mark.parametrize("entry, message", [('rtol = "abc"', "expected int/float"), ("rtol = inf", "not a finite tolerance"),
                                            ("atol = -1.0", "not a finite tolerance"), ("rtoll = 5", "unknown key")])
def test_a_bad_validation_tolerance_or_key_is_named(tmp_path, entry, message):
    """rtol = "abc" was an internal error in every command that loads the catalog; inf switched the check
    off; an unknown key was ignored."""
    kernels = tmp_path / "kernels"
    sidecar = _copy_family(kernels)
    text = sidecar.read_text()
    assert "[validation]" in text
    key = entry.split(" = ")[0]
    section = text.split("[validation]\n", 1)[1].split("\n\n", 1)[0]  # the table's own lines
    kept = "\n".join(line for line in section.split("\n") if not line.startswith(f"{key} ="))
    sidecar.write_text(text.replace("[validation]\n" + section, f"[validation]\n{kept}\n{entry}", 1))
    with pytest.raises(KernelSidecarError, match=message):
        load_catalog(kernels)


# -- §3 unknown values --------------------------------------------------------------------
@settings(max_examples=15, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=12)
       .filter(lambda s: s not in KINDS))
def test_unknown_kind_is_a_typed_error(kind):
    from perfml.cli.kernels import _select

    with pytest.raises(UnknownChoiceError) as info:
        _select(None, [kind], None)
    assert all(k in str(info.value) for k in KINDS)


def test_unknown_values_exit_2_listing_the_valid_ones(capsys):
    assert _cli(["kernels", "list", "--kind", "nope"]) == 2
    err = capsys.readouterr().err
    assert "nope" in err and "static" in err and "application" in err
    assert _cli(["kernels", "check", "--arch", "sm_xx", "--family", "vectorAdd"]) == 2
    err = capsys.readouterr().err
    assert "sm_xx" in err and "sm_90" in err
    assert _cli(["kernels", "check", "--family", "nope", "--arch", "sm_90"]) == 2
    err = capsys.readouterr().err
    assert "nope" in err and "vectorAdd" in err


def _strict(text: str):
    def refuse(token):
        raise AssertionError(f"non-standard JSON constant {token}")

    return json.loads(text, parse_constant=refuse)


def test_sweep_plan_json_is_strict_json(tmp_path, synthetic_catalog, capsys):
    """A spec without max_point_s has an unbounded worst case: null, not Infinity."""
    spec = _spec_file(tmp_path / "s.toml", {"ITERS": [8, 16]})
    kernels = str(next(iter(synthetic_catalog.values())).sidecar_path.parent)
    assert _cli(["sweep", "plan", str(spec), "--json", "--sms", "4", "--points",
                 "--kernels-dir", kernels]) == 0
    doc = _strict(capsys.readouterr().out)
    assert doc["specs"][0]["worst_case_s"] is None and doc["specs"][0]["points"] == 2
    assert _cli(["sweep", "plan", "--json", "--sms", "4"]) == 0  # the shipped specs
    _strict(capsys.readouterr().out)
    assert _cli(["kernels", "list", "--json"]) == 0
    _strict(capsys.readouterr().out)


@settings(max_examples=50, deadline=None)
@given(st.recursive(
    st.one_of(st.floats(), st.integers(), st.text(max_size=3), st.none(), st.booleans()),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=10))
def test_strict_json_never_prints_non_finite_numbers(value):
    from perfml.cli.kernels import strict_json

    _strict(strict_json(value))


# -- §4 bounded planning ------------------------------------------------------------------
def _spec_file(path: Path, grid: dict[str, list[int]], family: str = "syn_dram") -> Path:
    params = ", ".join(f"{k} = {v}" for k, v in grid.items())
    path.write_text(textwrap.dedent(f"""\
        name = "big"
        [[families]]
        name = "{family}"
        params = {{ {params} }}
        """))
    return path


def test_a_million_point_spec_is_refused_before_expanding(tmp_path, synthetic_catalog, capsys, monkeypatch):
    from perfml.measure.spec import FamilyRun, load_spec, plan_spec

    # 2 variants x 1000 x 1000 values: a 10 kB file, two million points
    big = _spec_file(tmp_path / "big.toml", {"ITERS": list(range(1, 1001))}, "syn_fp32")
    text = big.read_text().replace(" }", f", OP = {list(range(1000))} }}")
    big.write_text(text)
    spec = load_spec(big)

    def expanded(self, family):  # the points are counted, never listed (not a wall-clock bound: CI machines vary)
        raise AssertionError(f"{self.name}'s points were expanded before the limit was checked")

    with monkeypatch.context() as patch:
        patch.setattr(FamilyRun, "points", expanded)
        with pytest.raises(SweepTooLargeError, match=r"2000000 points.*limit of 10000.*--max-points"):
            plan_spec(spec, synthetic_catalog, sms=4)
    kernels = next(iter(synthetic_catalog.values())).sidecar_path.parent
    assert _cli(["sweep", "plan", str(big), "--sms", "4", "--kernels-dir", str(kernels)]) == 2
    assert "--max-points" in capsys.readouterr().err


@settings(max_examples=25, deadline=None)
@given(iters=st.lists(st.integers(1, 64), min_size=1, max_size=6, unique=True),
       launches=st.integers(0, 3), limit=st.integers(1, 30))
def test_count_matches_the_plan_and_the_limit_is_exact(synthetic_catalog, iters, launches, limit):
    from perfml.measure.spec import count_points, parse_spec, plan_spec

    entry = {"name": "syn_fp32", "params": {"ITERS": iters}}
    if launches:
        entry["launch"] = [{"blocks_per_sm": b + 1} for b in range(launches)]
    spec = parse_spec({"name": "s", "families": [entry, {"name": "divergence"}]})
    n = count_points(spec, synthetic_catalog)
    assert n == len(plan_spec(spec, synthetic_catalog, sms=4, max_points=n).points)
    if limit < n:
        with pytest.raises(SweepTooLargeError):
            plan_spec(spec, synthetic_catalog, sms=4, max_points=limit)


def test_max_points_option_raises_the_limit(tmp_path, synthetic_catalog, capsys):
    spec = _spec_file(tmp_path / "s.toml", {"ITERS": list(range(1, 13))})
    kernels = str(next(iter(synthetic_catalog.values())).sidecar_path.parent)
    base = ["sweep", "plan", str(spec), "--sms", "4", "--kernels-dir", kernels, "--json"]
    assert _cli(base + ["--max-points", "11"]) == 2
    assert "12 points" in capsys.readouterr().err
    assert _cli(base + ["--max-points", "12"]) == 0
    assert _strict(capsys.readouterr().out)["specs"][0]["points"] == 12


# -- §5 nothing half-written --------------------------------------------------------------
@pytest.fixture
def small_run(tmp_path, synthetic_catalog):
    from perfml.measure.spec import parse_spec

    spec = parse_spec({**SYNTHETIC_SPEC, "families": SYNTHETIC_SPEC["families"][:2]})
    return spec, SyntheticBackend(), synthetic_catalog


def test_resume_removes_and_reports_stale_temp_parts(tmp_path, small_run):
    from perfml.measure.runner import run_sweeps
    from perfml.measure.store import ResultSet

    spec, backend, catalog = small_run
    out = tmp_path / "rs"
    rs, _ = run_sweeps([spec], backend, out, catalog=catalog, flush_every=1)
    n = len(rs.read())
    # a writer killed mid-part leaves a half-written hidden temp file
    stale = out / ".part-00099-deadbeef.parquet.tmp"
    stale.write_bytes(b"PAR1 half a part")
    seen = []
    rs, reports = run_sweeps([spec], backend, out, resume=True, catalog=catalog,
                             on_stale=seen.append)
    assert seen == [[stale]] and not stale.exists()
    assert reports[0].already_done == n and len(ResultSet.open(out).read()) == n


@pytest.mark.parametrize("change", [{"repetitions": 3}, {"warmup": 0}])
def test_a_resume_that_would_time_points_otherwise_is_refused(tmp_path, small_run, change):
    """A spec whose repetitions changed resumed its set: the new points were timed otherwise than
    the first ones, without a word (helper probe)."""
    from dataclasses import replace

    from perfml.errors import ResultSchemaError
    from perfml.measure.runner import run_sweeps
    from perfml.measure.store import ResultSet

    spec, backend, catalog = small_run
    out = tmp_path / "rs"
    rs, _ = run_sweeps([spec], backend, out, catalog=catalog, flush_every=1)
    before = len(rs.read())
    key, value = next(iter(change.items()))
    with pytest.raises(ResultSchemaError, match=rf"spec 'synthetic-suite' now times its points otherwise than when "
                                                rf"this set measured it \({key} {getattr(spec, key)} -> {value}\)"):
        run_sweeps([replace(spec, **change)], backend, out, resume=True, catalog=catalog)
    assert len(ResultSet.open(out).read()) == before
    _, reports = run_sweeps([spec], backend, out, resume=True, catalog=catalog)  # the spec as it was resumes
    assert reports[0].already_done == before


def _disk_full_after(monkeypatch, store, writes: int) -> None:
    """The result store's ``os.write`` fails with ENOSPC after ``writes`` writes."""
    real_write = os.write
    state = {"writes": 0}

    def full_disk(fd, data):
        state["writes"] += 1
        if state["writes"] > writes:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(store.os, "write", full_disk)


def test_disk_full_while_writing_a_part_is_typed_and_leaves_nothing(tmp_path, small_run,
                                                                      monkeypatch):
    from perfml.measure import store
    from perfml.measure.runner import run_sweeps

    spec, backend, catalog = small_run
    out = tmp_path / "rs"
    _disk_full_after(monkeypatch, store, 2)  # the manifest and the plan record fit, the first part does not
    with pytest.raises(ResultWriteError, match=r"part-.*No space left.*disk is full"):
        run_sweeps([spec], backend, out, catalog=catalog, flush_every=1)
    assert list(out.glob("*.parquet")) == [] and list(out.glob(".*.tmp")) == []


def test_disk_full_while_recording_the_plans_is_typed_and_leaves_no_set(tmp_path, small_run, monkeypatch):
    from perfml.measure import store
    from perfml.measure.runner import run_sweeps

    spec, backend, catalog = small_run
    out = tmp_path / "rs"
    _disk_full_after(monkeypatch, store, 1)  # the manifest fits, the plan record does not
    with pytest.raises(ResultWriteError, match=r"cannot record the sweep plans .*plans.json.*disk is full"):
        run_sweeps([spec], backend, out, catalog=catalog, flush_every=1)
    assert not out.exists()  # nothing measured: the new set is discarded, so the command can run again


@pytest.mark.parametrize("err, fix", [(errno.EROFS, "read-only"), (errno.EACCES, "permission"),
                                      (errno.EISDIR, "directory is in the way")])
def test_os_errors_linking_a_part_are_typed(tmp_path, small_run, monkeypatch, err, fix):
    from perfml.measure import store
    from perfml.measure.runner import run_sweeps

    spec, backend, catalog = small_run
    out = tmp_path / "rs"
    real_link = os.link

    def failing_link(src, dst, *a, **k):
        if str(dst).endswith(".parquet"):
            raise OSError(err, os.strerror(err))
        return real_link(src, dst, *a, **k)

    monkeypatch.setattr(store.os, "link", failing_link)
    with pytest.raises(ResultWriteError, match=fix):
        run_sweeps([spec], backend, out, catalog=catalog)
    assert list(out.glob("*.parquet")) == [] and list(out.glob(".*.tmp")) == []


def test_out_naming_a_file_is_typed_on_the_cli(tmp_path, synthetic_recording, synthetic_catalog,
                                               capsys):
    spec = tmp_path / "s.toml"
    spec.write_text('name = "synthetic-suite"\n[[families]]\nname = "syn_fp32"\n')
    target = tmp_path / "a-file"
    target.write_text("not a result set\n")
    kernels = str(next(iter(synthetic_catalog.values())).sidecar_path.parent)
    code = _cli(["sweep", "run", str(spec), "--backend", "replay", "--replay",
                 str(synthetic_recording), "--out", str(target), "--kernels-dir", kernels])
    err = capsys.readouterr().err
    assert code == 2 and "--out must name a directory" in err
    assert "Traceback" not in err and target.read_text() == "not a result set\n"


def test_a_corrupt_part_is_a_typed_error(tmp_path, small_run):
    from perfml.errors import ResultSchemaError
    from perfml.measure.runner import run_sweeps
    from perfml.measure.store import ResultSet

    spec, backend, catalog = small_run
    out = tmp_path / "rs"
    rs, _ = run_sweeps([spec], backend, out, catalog=catalog)
    part = rs.parts()[0]
    part.write_bytes(part.read_bytes()[:100])
    with pytest.raises(ResultSchemaError, match="not a readable result part"):
        ResultSet.open(out).completed_point_ids()
    with pytest.raises(ResultSchemaError, match=part.name):
        ResultSet.open(out).read()


# -- one catalog --------------------------------------------------------------------------
def test_runner_and_backend_share_one_catalog(tmp_path, small_run):
    from perfml.errors import PerfmlError as Base
    from perfml.measure.runner import run_sweeps

    spec, backend, catalog = small_run
    backend.catalog = catalog
    rs, reports = run_sweeps([spec], backend, tmp_path / "a")  # the backend's catalog is used
    assert reports[0].measured > 0
    other = load_catalog(write_synthetic_catalog(tmp_path / "other_kernels"))
    with pytest.raises(Base, match="one catalog"):
        run_sweeps([spec], backend, tmp_path / "b", catalog=other)


# -- §3/§4 launches within CUDA's limits, sidecar sweeps bounded -----------------------------
@settings(max_examples=40, deadline=None)
@given(block=st.lists(st.integers(-4, 2100), min_size=1, max_size=3),
       grid=st.lists(st.integers(-2, 70000), min_size=1, max_size=3))
def test_planned_launches_respect_cuda_limits(synthetic_catalog, block, grid):
    """A spec's explicit block/grid is planned only within CUDA's limits (threads per
    block <= 1024, block z <= 64, grid y/z <= 65535); anything else is a SweepSpecError."""
    from perfml.errors import SweepSpecError
    from perfml.measure.spec import parse_spec, plan_spec

    def plan():  # a dimension < 1 is refused when the spec is read, the others when planned
        spec = parse_spec({"name": "s", "families": [
            {"name": "syn_noisy", "launch": [{"block": block, "grid": grid}]}]})
        return plan_spec(spec, synthetic_catalog, sms=4)

    b = list(block) + [1] * (3 - len(block))
    g = list(grid) + [1] * (3 - len(grid))
    ok = (min(b + g) >= 1 and math.prod(b) <= 1024 and b[0] <= 1024 and b[1] <= 1024
          and b[2] <= 64 and g[1] <= 65535 and g[2] <= 65535)
    if ok:
        (point,) = plan().points
        assert point.launch.block == tuple(b) and point.launch.grid == tuple(g)
    else:
        with pytest.raises(SweepSpecError):
            plan()


def test_sidecar_sweep_is_bounded(tmp_path):
    from perfml.errors import KernelSidecarError

    kernels = tmp_path / "kernels"
    sidecar = _copy_family(kernels, "divergence")
    text = sidecar.read_text()
    text = re.sub(r"(?ms)^\[sweep\].*?(?=^\[)", "[sweep.grid]\nGROUP_SIZE = "
                  + str(list(range(1, 33))) + "\nREPS = " + str(list(range(1, 101))) + "\n\n",
                  text)
    sidecar.write_text(text)
    with pytest.raises(KernelSidecarError, match="3200 points, more than 1024"):
        load_family(sidecar)


# "((((9**64)**64)**64)**64)**64" belongs here too once the bounded evaluator of
# perfml/_expr.py (another slice of issue 14) replaces perfml/kernels/_expr.py.
@pytest.mark.parametrize("expr", ["1e308*10", "ceil(1e308*10)", "1/0", "9**9**9"])
def test_sidecar_expressions_fail_typed_and_bounded(tmp_path, capsys, expr):
    """Every sidecar expression goes through the bounded evaluator; overflow, division by
    zero or a non-finite result is one typed line, never a traceback or an endless loop."""
    import time

    from perfml.errors import KernelSidecarError

    kernels = tmp_path / "kernels"
    sidecar = _copy_family(kernels)
    text = sidecar.read_text()
    text = re.sub(r"(?m)^flops = .*$", f"flops = {json.dumps(expr)}", text, count=1)
    sidecar.write_text(text)
    start = time.monotonic()
    with pytest.raises(KernelSidecarError, match="work.flops"):  # evaluated at the defaults when loaded
        load_family(sidecar)
    spec = tmp_path / "s.toml"
    spec.write_text('name = "s"\n[[families]]\nname = "vectorAdd"\n')
    assert _cli(["sweep", "plan", str(spec), "--sms", "4", "--kernels-dir", str(kernels)]) == 2
    err = capsys.readouterr().err
    assert "work.flops" in err and "Traceback" not in err
    # a guard against an endless evaluation (2**2**2**... unbounded), not a speed target:
    # the whole test takes well under a second
    assert time.monotonic() - start < 60.0


def test_empty_inputs_are_errors_not_empty_answers(tmp_path, capsys):
    """An empty kernels or spec directory, or a non-positive SM count, is a typed error
    (it used to print an empty table and exit 0)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _cli(["kernels", "list", "--kernels-dir", str(empty)]) == 2
    assert "no <family>.toml" in capsys.readouterr().err
    assert _cli(["sweep", "plan", str(empty), "--sms", "4"]) == 2
    assert "without sweep specs" in capsys.readouterr().err
    for sms in ("0", "-3"):
        assert _cli(["sweep", "plan", "--sms", sms]) == 2
        capsys.readouterr()


def test_a_negative_work_count_is_a_typed_error_naming_the_key(tmp_path):
    # it was written to the result set as a negative FLOP rate
    from perfml.errors import KernelSidecarError

    sidecar = _copy_family(tmp_path / "kd", "fp32_simple")
    sidecar.write_text(sidecar.read_text().replace('flops = "REPS*ITERS*CHAINS*(1 + (OP == 2))"', 'flops = "-REPS"'))
    with pytest.raises(KernelSidecarError, match=r"work.flops = '-REPS' gives -\d+ .*expected a count >= 0"):
        load_family(sidecar)  # evaluated at the defaults when loaded


@pytest.mark.parametrize("per_sm", ["0", '"ITERS - ITERS"'])
def test_a_sidecar_launching_no_block_per_sm_is_refused_not_planned_as_one(tmp_path, per_sm):
    """`blocks_per_sm = 0` (or an expression giving 0) was planned as 1 block per SM."""
    sidecar = _copy_family(tmp_path / "kernels", "fp32_simple")
    text = sidecar.read_text()
    assert "blocks_per_sm = 8" in text
    sidecar.write_text(text.replace("blocks_per_sm = 8", f"blocks_per_sm = {per_sm}"))
    with pytest.raises(KernelSidecarError, match="a launch needs at least 1 block per SM"):
        load_family(sidecar).launch(None, sms=132)


def test_kernels_check_with_nothing_to_check_is_no_pass(tmp_path, capsys):
    """A family built for sm_86 only, checked at the default sm_75/80/90: '0 checks, 0 failed', exit 0."""
    kernels = tmp_path / "kernels"
    sidecar = _copy_family(kernels, "fp32_simple")
    text = sidecar.read_text()
    sidecar.write_text("\n".join('archs = ["sm_86"]' if line.startswith("archs =") else line
                                 for line in text.split("\n")))
    assert _cli(["kernels", "check", "--kernels-dir", str(kernels)]) == 2
    assert "no kernel of the selection is built for sm_75, sm_80, sm_90" in capsys.readouterr().err


def _without_ranges(sidecar: Path) -> Path:
    """The sidecar with its parameters' declared ranges removed (a user's sidecar may declare
    none): the checks behind the declared range still answer."""
    sidecar.write_text(re.sub(r"(min|max) = -?\d+, |values = \[[^]]*\], ", "", sidecar.read_text()))
    return sidecar


@pytest.mark.parametrize("n", [-1024, -300])
def test_a_negative_size_is_named_as_the_parameter_not_as_the_sidecars_expression(tmp_path, n):
    """vectorAdd with N = -1024 told the user to wrap the sidecar's launch expression in ceil()."""
    from perfml.errors import KernelSidecarError

    family = load_family(_without_ranges(_copy_family(tmp_path / "k", "vectorAdd")))
    with pytest.raises(KernelSidecarError, match=rf"vectorAdd: launch.* with N = {n}; a negative parameter has no "
                                                 r"launch: give a positive value") as info:
        family.grid({"N": n, "TPB": 256})
    assert "ceil()" not in str(info.value)


@pytest.mark.parametrize("name", ["ilp", "vectorAdd"])
def test_a_misspelt_work_count_is_refused_naming_the_close_key(tmp_path, name):
    """flop = ... (for flops) loaded, and the result set's flops and rate columns were NaN in
    silence; every other table of a sidecar refused an unknown key."""
    kernels = tmp_path / "kernels"
    sidecar = _copy_family(kernels, name)
    text = sidecar.read_text()
    assert "\nflops = " in text or "\nbytes = " in text
    key = "flops" if "\nflops = " in text else "bytes"
    sidecar.write_text(text.replace(f"\n{key} = ", f"\n{key[:-1]} = ", 1))
    with pytest.raises(KernelSidecarError, match=rf"work\.{key[:-1]}: is not a work count perfml reads; did you mean '{key}'"):
        load_catalog(kernels)


def test_every_shipped_sidecar_gives_only_known_work_counts():
    from perfml.kernels.sidecar import WORK_KEYS

    catalog = load_catalog(default_kernels_dir())
    used = {key for family in catalog.values() for key in family.work_spec}
    assert used <= WORK_KEYS and {"flops", "bytes", "target_instructions"} <= used


# a sidecar that fails at its own defaults loaded, was listed, and failed only when a sweep was
# planned, with a message blaming the spec (thirty-second session)
@pytest.mark.parametrize("edit, message", [
    (("target_instructions = \"REPS*TOTAL\"", "target_instructions = \"REPS*TOTAL/0\""), r"work\.target_instructions.*divides by zero"),
    (("target_instructions = \"REPS*TOTAL\"", "target_instructions = \"REPS*sms\""), r"work\.target_instructions.*sms"),
    (("flops = \"REPS*TOTAL*2\"", "flops = \"-REPS*TOTAL\""), r"work\.flops .*expected a count >= 0"),
    (("threads_per_block = 128", "threads_per_block = 2048"), r"\[launch\] at the default parameters: .*2048 threads"),
    (("threads_per_block = 128", "threads_per_block = 0"), r"\[launch\] at the default parameters: .*must be positive"),
    (("blocks_per_sm = 1", "blocks_per_sm = -1"), r"launch\.blocks_per_sm"),
    (('target = "', 'target = "BOGUS'), r"target: 'BOGUS.*' is no purity target perfml knows"),
])
def test_a_sidecar_that_fails_at_its_own_defaults_is_refused_at_load(tmp_path, edit, message):
    sidecar = _copy_family(tmp_path / "k", "ilp")
    text = sidecar.read_text()
    assert edit[0] in text
    sidecar.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(KernelSidecarError, match=message):
        load_catalog(tmp_path / "k")
    assert _cli(["kernels", "list", "--kernels-dir", str(tmp_path / "k")]) == 2


def test_an_int32_scalar_beyond_int32_is_refused_at_load(tmp_path):
    sidecar = _copy_family(tmp_path / "k", "ilp")
    text = sidecar.read_text()
    head, sep, rest = text.partition('name = "zero"')
    assert sep and "value = " in rest
    rest = re.sub(r"value = [^\n]+", "value = 99999999999", rest, count=1)
    sidecar.write_text(head + sep + rest)
    with pytest.raises(KernelSidecarError, match=r"args\.zero\.value gives 99999999999, beyond an int32"):
        load_catalog(tmp_path / "k")


def test_the_sidecars_and_the_registry_hold_compute_capability_to_one_limit():
    from perfml.boards._registry import MAX_CC_MAJOR
    from perfml.kernels.sidecar import _MAX_ARCH_MAJOR

    assert MAX_CC_MAJOR == _MAX_ARCH_MAJOR


def test_sidecar_md_lists_every_work_key_perfml_reads():
    """SIDECAR.md spells the [work] keys out beside WORK_KEYS: a key added to one was missing from the other."""
    from perfml.kernels.sidecar import WORK_KEYS

    text = (default_kernels_dir() / "SIDECAR.md").read_text()
    assert [key for key in sorted(WORK_KEYS) if key not in text] == []


# -- the values a parameter is written for (thirty-third session) ------------------------------
# A sidecar could not say which values its kernel takes: a spec's CHAINS = [-1, 0] for ilp, or
# access_size's BYTES = 3 (an #error in the source), was planned, and failed only at compile
# time on the GPU, or ran a kernel of another meaning (a variant of fp32_simple with OP = 7 ran
# its #else branch, the FMA).

@pytest.mark.parametrize("spec_params, message", [
    ("CHAINS = [-1, 0]", r"parameter CHAINS = -1 is not 1 to 8, the values its kernel is written for"),
    ("CHAINS = [9]", r"parameter CHAINS = 9 is not 1 to 8"),
    ("REPS = [0]", r"parameter REPS = 0 is not >= 1"),
    ("REPS = [99999999999999999999]", r"parameter REPS = 99999999999999999999 is beyond a 64-bit integer"),
    # a -D constant without a declared max is an int's: REPS = 1e11 overflowed ilp's int loop counter
    ("REPS = [100000000000]", r"parameter REPS = 100000000000 is beyond a 32-bit int, which the kernels' counters hold"),
    ("REPS = [2147483648]", r"parameter REPS = 2147483648 is beyond a 32-bit int"),
])
def test_a_spec_value_outside_a_parameters_declared_values_is_refused_at_planning(tmp_path, capsys, spec_params,
                                                                                  message):
    spec = tmp_path / "s.toml"
    spec.write_text(f'version = 1\nname = "s"\n[[families]]\nname = "ilp"\nparams = {{ {spec_params} }}\n')
    assert _cli(["sweep", "plan", str(spec), "--sms", "4"]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and "ilp.toml [params]" in err and err.count("\n") == 1, err
    assert _cli(["sweep", "run", str(spec), "--backend", "replay", "--replay",
                 str(Path(__file__).resolve().parents[1] / "sweeps" / "results" / "H100-SXM"),
                 "--out", str(tmp_path / "out")]) == 2
    assert not (tmp_path / "out").exists()


def test_an_enumerated_parameter_refuses_a_value_it_does_not_list():
    family = load_family(default_kernels_dir() / "access_size.toml")
    assert family.params["BYTES"].choices == (1, 2, 4, 8, 16)
    family.resolve_params({"BYTES": 16})
    with pytest.raises(KernelSidecarError, match=r"access_size: parameter BYTES = 3 is not one of 1, 2, 4, 8, 16"):
        family.resolve_params({"BYTES": 3})


@pytest.mark.parametrize("edit, message", [
    (("CHAINS = { default = 1, min = 1, max = 8,", "CHAINS = { default = 1, min = 2, max = 8,"),
     r"params\.CHAINS\.default: 1 is not 2 to 8"),
    (("CHAINS = { default = 1, min = 1, max = 8,", "CHAINS = { default = 1, min = 1, max = 4,"),
     r"sweep values of CHAINS: 5 is not 1 to 4; .*or widen params\.CHAINS"),
    (("CHAINS = { default = 1, min = 1, max = 8,", "CHAINS = { default = 1, min = 9, max = 8,"),
     r"params\.CHAINS: min = 9 is above max = 8"),
    (("CHAINS = { default = 1, min = 1, max = 8,", "CHAINS = { default = 1, values = [1, 2], min = 1,"),
     r"params\.CHAINS: gives both values and min / max"),
    (("CHAINS = { default = 1, min = 1, max = 8,", "CHAINS = { default = 1, values = [],"),
     r"params\.CHAINS\.values: expected a list of integers, found \[\]"),
    (("CHAINS = { default = 1, min = 1, max = 8,", "CHAINS = { default = 1, min = 1.5,"),
     r"params\.CHAINS\.min: expected int"),
    (("CHAINS = { default = 1, min = 1, max = 8,", "CHAINS = { default = 1, range = [1, 8],"),
     r"params\.CHAINS\.range: unknown key; .*min / max or values"),
    (("TOTAL = { default = 840,", "TOTAL = { default = 99999999999999999999,"),
     r"params\.TOTAL\.default: 99999999999999999999 is beyond a 64-bit integer"),
    (("REPS = { default = 64, min = 1,", "REPS = { default = 64, max = 99999999999999999999,"),
     r"params\.REPS\.max: 99999999999999999999 is beyond a 64-bit integer"),
    (("values = [1, 2, 3, 4, 5, 6, 7, 8]", "values = [1, 99999999999999999999]"),
     r"sweep values of CHAINS: 99999999999999999999 is beyond a 64-bit integer"),
    (('flops = "REPS*TOTAL*2"', "flops = 99999999999999999999"),
     r"work\.flops: 99999999999999999999 is beyond a 64-bit integer"),
])
def test_a_sidecar_whose_declared_values_do_not_hold_is_refused_at_load(tmp_path, edit, message):
    sidecar = _copy_family(tmp_path / "k", "ilp")
    text = sidecar.read_text()
    assert edit[0] in text
    sidecar.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(KernelSidecarError, match=message):
        load_catalog(tmp_path / "k")


def test_a_variant_outside_its_parameters_declared_values_is_refused_at_load(tmp_path):
    sidecar = _copy_family(tmp_path / "k", "fp32_simple")
    text = sidecar.read_text()
    assert "params = { OP = 0 }" in text
    sidecar.write_text(text.replace("params = { OP = 0 }", "params = { OP = 7 }", 1))
    with pytest.raises(KernelSidecarError, match=r"variants\.\w+\.params\.OP: 7 is not one of 0, 1, 2"):
        load_catalog(tmp_path / "k")


def test_every_shipped_parameter_declares_the_values_its_kernel_takes():
    """Each shipped sidecar's parameters declare min / max or values (a user's may declare none),
    and each family's own default, variants and sweep lie within them (checked at load)."""
    undeclared = [f"{family.name}.{p.name}" for family in load_catalog(default_kernels_dir()).values()
                  for p in family.params.values() if p.minimum is None and p.maximum is None and p.choices is None]
    assert undeclared == []


def test_sms_in_a_work_count_is_refused_naming_where_it_is_known(tmp_path):
    """The hint listed sms among the names a [work] expression may use, and the load check refused it there."""
    sidecar = _copy_family(tmp_path / "k", "ilp")
    text = sidecar.read_text()
    sidecar.write_text(text.replace('flops = "REPS*TOTAL*2"', 'flops = "REPS*sms"', 1))
    with pytest.raises(KernelSidecarError) as info:
        load_catalog(tmp_path / "k")
    message = str(info.value)
    assert "work.flops: unknown name(s) sms" in message
    assert "use one of threads, blocks" in message and "use one of sms" not in message
    assert "sms (the device's SM count) is known only in launch.blocks, launch.blocks_per_sm" in message


def test_a_sidecar_launch_expression_giving_a_negative_value_is_not_told_to_round(tmp_path):
    """threads_per_block = -128 in a sidecar was told to wrap it in ceil() or int(), which cannot
    mend a negative value (helper probe); a fraction still gets that fix."""
    from perfml.errors import KernelSidecarError

    sidecar = _copy_family(tmp_path / "k", "vectorAdd")
    sidecar.write_text(sidecar.read_text().replace('threads_per_block = "TPB"', 'threads_per_block = "-128"'))
    with pytest.raises(KernelSidecarError, match=r"gives -128, expected a non-negative integer; a negative value "
                                                 r"has no launch: give one >= 0") as info:
        load_family(sidecar).block({"N": 1024, "TPB": 256})
    assert "ceil()" not in str(info.value)
    sidecar.write_text(sidecar.read_text().replace('threads_per_block = "-128"', 'threads_per_block = "TPB / 3"'))
    with pytest.raises(KernelSidecarError, match=r"expected a non-negative integer; wrap the expression in ceil\(\) or int\(\)"):
        load_family(sidecar).block({"N": 1024, "TPB": 256})
