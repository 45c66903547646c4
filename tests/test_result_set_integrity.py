"""A result set holds one device's measurements, each point once, each value one a
measurement gives; a ``--board`` never names another board's results.

Found by a hostile-input pass (sixteenth session): parts of the H200's set copied into the
H100's were characterized as the H100 (its DRAM bandwidth came out as the H200's), a
``--board H200`` on the H100's results was accepted (and tagged in MLflow, so `sweep pull
--board H200` handed back the H100's set), a negative cycle count or throughput dropped
the value silently, an edited ``times_s`` crashed the replay backend, and a spec's
``block = 32.5`` or ``N = [true]`` was truncated to 32 or 1. Every case here is a typed
error that names the file and the fix, and nothing is written.

The recorded sets under ``sweeps/results`` (measured on an H100 SXM and an H200) are copied
into ``tmp_path`` and edited there.
"""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from conftest import needs_data_home
from perfml.cli import main
from perfml.errors import (
    CharacterizationBoardError,
    KernelSidecarError,
    MixedDeviceError,
    ResultSchemaError,
    SweepSpecError,
    TrackingStoreError,
)

REPO = Path(__file__).resolve().parents[1]
H100, H200 = REPO / "sweeps" / "results" / "H100-SXM", REPO / "sweeps" / "results" / "H200"


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for p in [dst, *dst.iterdir()]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return dst


def _edit(result_set: Path, family: str, column: str, value) -> None:
    """Set ``column`` of every row of ``family`` to ``value`` in place (a hand edit)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for part in sorted(result_set.glob("part-*.parquet")):
        table = pq.read_table(part)
        mask = [f == family for f in table.column("family").to_pylist()]
        if not any(mask):
            continue
        i = table.schema.get_field_index(column)
        cells = [value if hit else old for old, hit in zip(table.column(column).to_pylist(), mask)]
        field = table.schema.field(i)
        pq.write_table(table.set_column(i, field, pa.array(cells, type=field.type)), part)


def _run(capsys, *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    return status, capsys.readouterr().err


# -- one device per set --------------------------------------------------------------------

def test_parts_of_another_device_in_a_set_are_refused(tmp_path, capsys):
    from perfml.characterize import characterize_results
    from perfml.measure.store import ResultSet

    mixed = _copy(H100, tmp_path / "mixed")
    for part in H200.glob("part-*.parquet"):
        shutil.copy(part, mixed / part.name.replace("part-", "part-9"))
    with pytest.raises(MixedDeviceError, match="NVIDIA H200.*another device's result set"):
        ResultSet.open(mixed).read()
    with pytest.raises(MixedDeviceError):
        characterize_results(mixed)
    status, err = _run(capsys, "-q", "sweep", "run", "calibration", "--backend", "replay", "--replay",
                       str(mixed), "--out", str(tmp_path / "out"))
    assert status == 2 and "another device" in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_a_manifest_naming_another_device_than_its_rows_is_refused(tmp_path):
    import json

    from perfml.characterize import characterize_results

    swapped = _copy(H100, tmp_path / "swapped")
    manifest = swapped / "manifest.json"
    data = json.loads(manifest.read_text())
    other = json.loads((H200 / "manifest.json").read_text())
    data["device"], data["fingerprint"] = other["device"], other["fingerprint"]  # a whole manifest of another set
    manifest.write_text(json.dumps(data))
    with pytest.raises(MixedDeviceError, match="measured on 'NVIDIA H200'.*or manifest.json's device entry was edited"):
        characterize_results(swapped)


# the manifest's fingerprint was never read: a device entry edited without it was blamed on the
# parts, and a fingerprint edited alone passed (thirty-third session)
@pytest.mark.parametrize("edit, message", [
    (lambda d: d["device"].update(name="NVIDIA H200"), r"'fingerprint' entry disagrees with the 'device' entry "
                                                       r"\(name: 'NVIDIA H100 80GB HBM3' there, 'NVIDIA H200' in 'device'\)"),
    (lambda d: d["fingerprint"].update(sms=114), r"'fingerprint' entry disagrees .*sms: 114 there, 132 in 'device'"),
    (lambda d: d.update(fingerprint="H100"), r"'fingerprint' entry disagrees .*'H100', expected an object"),
    (lambda d: d.update(board="H200"), r"unknown key\(s\) \['board'\]"),
])
def test_a_manifest_whose_entries_disagree_or_that_has_keys_perfml_never_writes_is_refused(tmp_path, capsys, edit,
                                                                                            message):
    import json

    from perfml.measure.store import ResultSet

    edited = _copy(H100, tmp_path / "edited")
    data = json.loads((edited / "manifest.json").read_text())
    edit(data)
    (edited / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(ResultSchemaError, match=message):
        ResultSet.open(edited)
    status, err = _run(capsys, "characterize", str(edited), "--out", str(tmp_path / "c.json"))
    assert status == 2 and "manifest.json" in err and err.count("\n") == 1, err
    assert not (tmp_path / "c.json").exists()


def test_a_point_stored_twice_is_refused(tmp_path):
    from perfml.measure.store import ResultSet

    twice = _copy(H100, tmp_path / "twice")
    first = sorted(twice.glob("part-*.parquet"))[0]
    shutil.copy(first, twice / first.name.replace("part-", "part-8"))
    with pytest.raises(ResultSchemaError, match="is stored twice"):
        ResultSet.open(twice).read()


def test_the_recorded_sets_pass_the_checks():
    from perfml.measure.store import ResultSet

    for path in sorted((REPO / "sweeps" / "results").rglob("manifest.json")):
        assert len(ResultSet.open(path.parent).read()) > 0


# -- values no measurement gives ---------------------------------------------------------------

@pytest.mark.parametrize(
    "family, column, value",
    [
        ("latency_global", "cycles", -5),
        ("dram", "bytes_per_s", -5.0),
        ("dram", "time_median_s", 0.0),
        ("dram", "time_min_s", float("nan")),
        ("dram", "sm_clock_mhz", 0.0),
        ("vectorAdd", "times_s", []),
        ("vectorAdd", "times_s", [float("inf")]),
        ("vectorAdd", "times_s", None),
        ("fp32_simple", "instructions", -1.0),
    ],
)
def test_an_edited_value_no_measurement_gives_is_refused_naming_point_and_column(tmp_path, capsys, family, column, value):
    edited = _copy(H100, tmp_path / "edited")
    _edit(edited, family, column, value)
    status, err = _run(capsys, "characterize", str(edited), "--out", str(tmp_path / "c.json"))
    assert status == 2 and f"has {column} = " in err and f"({family})" in err and err.count("\n") == 1, err
    assert not (tmp_path / "c.json").exists()
    status, err = _run(capsys, "-q", "sweep", "run", "--backend", "replay", "--replay", str(edited),
                       "--out", str(tmp_path / "replayed"))
    assert status == 2 and "internal error" not in err and f"has {column} = " in err, err
    assert not (tmp_path / "replayed").exists()


def test_an_edited_parameter_that_breaks_a_function_names_the_result_set(tmp_path, capsys):
    edited = _copy(H100, tmp_path / "edited")
    _edit(edited, "bank_conflicts", "params_json", '{"WAYS": 0}')
    status, err = _run(capsys, "characterize", str(edited))
    assert status == 2 and f"characterizing the result set {edited}" in err and "was it edited" in err, err


# -- --board names the device's own board ------------------------------------------------------

def test_characterize_refuses_a_board_that_is_not_the_sets_device(tmp_path, capsys):
    from perfml.characterize import characterize_results

    with pytest.raises(CharacterizationBoardError, match="is the registry's board 'H100-SXM', not 'H200'"):
        characterize_results(H100, board="H200")
    status, err = _run(capsys, "characterize", str(H100), "--board", "H200", "--out", str(tmp_path / "c.json"))
    assert status == 2 and "--board H100-SXM" in err and not (tmp_path / "c.json").exists()
    # the board's name, an alias and the device's own name are all the same board
    for name in ("H100-SXM", "H100 SXM5", "NVIDIA H100 80GB HBM3"):
        assert characterize_results(H100, board=name).board


def test_a_device_the_registry_does_not_know_may_be_named_as_any_board():
    from perfml.boards import check_board_is_device

    check_board_is_device("GTX-980", "Synthetic GPU (perfml tests)", "a synthetic set")  # no error
    with pytest.raises(CharacterizationBoardError):
        check_board_is_device("GTX-980", "NVIDIA H200", "a set")


def test_sweep_run_refuses_a_board_that_is_not_the_device_and_measures_nothing(tmp_path, capsys):
    status, err = _run(capsys, "-q", "sweep", "run", "calibration", "--backend", "replay", "--replay", str(H100),
                       "--out", str(tmp_path / "set"), "--board", "H200")
    assert status == 2 and "the device 'NVIDIA H100 80GB HBM3' is the registry's board 'H100-SXM'" in err
    assert not (tmp_path / "set").exists()


def test_a_logged_set_is_pulled_by_its_board_name_and_never_tagged_as_another(tmp_path):
    from perfml.lab.sweeps import log_result_set, pull_result_set

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with pytest.raises(CharacterizationBoardError):
        log_result_set(H100, tracking_uri=uri, board="H200", characterize=False)
    log_result_set(H100, tracking_uri=uri, characterize=False)  # tagged with the device's name
    back = pull_result_set("H100-SXM", tmp_path / "back", tracking_uri=uri)  # found by the board's name
    from perfml.measure.store import ResultSet

    assert ResultSet.open(back).device.name == "NVIDIA H100 80GB HBM3"


@pytest.mark.parametrize("uri", ["sqlite:///mlflow.db", "sqlite:///{tmp}/elsewhere/m.db", "{tmp}/mlruns"])
def test_a_pull_from_a_store_that_does_not_exist_is_refused_and_creates_none(uri, tmp_path, capsys, monkeypatch):
    """A pull only reads: MLflow would create the store (an empty ``mlflow.db``) and then find no sweep in it."""
    monkeypatch.chdir(tmp_path)
    uri = uri.format(tmp=tmp_path)
    status, err = _run(capsys, "sweep", "pull", "--board", "H100-SXM", "--out", str(tmp_path / "back"),
                       "--tracking-uri", uri)
    assert status == 2 and "no MLflow store at" in err and "--tracking-uri" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no store, no folder, no result set


# -- sweep specs: whole numbers only -----------------------------------------------------------

@pytest.mark.parametrize(
    "launch, message",
    [
        ("{block = 32.5}", "block must be a whole number >= 1, found 32.5"),
        ("{block = true}", "block must be a whole number >= 1, found True"),
        ('{grid = "64"}', "grid must be a whole number >= 1, found '64'"),
        ("{block = [32, 2, 1, 1]}", "a list of 1 to 3"),
        ("{blocks_per_sm = 0}", "blocks_per_sm must be a whole number >= 1"),
        ("{shared_bytes = -1}", "shared_bytes must be a whole number >= 0"),
        ("{blok = 32}", "unknown key(s) ['blok']"),
    ],
)
def test_a_launch_config_that_is_not_whole_numbers_is_refused(tmp_path, launch, message):
    from perfml.measure.spec import load_spec

    spec = tmp_path / "s.toml"
    spec.write_text(f'name = "s"\n[[families]]\nname = "vectorAdd"\nlaunch = [{launch}]\n')
    with pytest.raises(SweepSpecError) as info:
        load_spec(spec)
    assert message in str(info.value) and "launch #1" in str(info.value)


def test_an_integral_float_dimension_is_taken_as_its_integer(synthetic_catalog, tmp_path):
    from perfml.measure.spec import parse_spec, plan_spec

    spec = parse_spec({"name": "s", "families": [{"name": "syn_noisy", "launch": [{"block": 128.0, "grid": [8.0]}]}]})
    (point,) = plan_spec(spec, synthetic_catalog, sms=4).points
    assert point.launch.block == (128, 1, 1) and point.launch.grid == (8, 1, 1)


def test_a_boolean_kernel_parameter_is_not_the_number_one(tmp_path, capsys):
    spec = tmp_path / "b.toml"
    spec.write_text('name = "b"\n[[families]]\nname = "vectorAdd"\nparams = { N = [true], TPB = [256] }\n')
    status, err = _run(capsys, "sweep", "plan", str(spec), "--json")
    assert status == 2 and "parameter N must be an integer, found True" in err


# -- where a message points ------------------------------------------------------------------

def test_a_kernels_dir_that_is_a_file_is_called_a_file(tmp_path):
    from perfml.kernels.catalog import load_catalog

    afile = tmp_path / "afile"
    afile.write_text("hi")
    with pytest.raises(KernelSidecarError, match="is a file, not a directory"):
        load_catalog(afile)


def test_report_names_the_run_and_artifact_it_cannot_read(tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    from perfml.experiments.tracking import latest_summaries

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("synthetic_report", artifact_location=(tmp_path / "artifacts").as_uri())
    run = client.create_run(exp, tags={"perfml.kind": "experiment"})
    (tmp_path / "empty.csv").write_text("")
    client.log_artifact(run.info.run_id, str(tmp_path / "empty.csv"))  # no summary.csv
    client.set_terminated(run.info.run_id)
    with pytest.raises(TrackingStoreError, match=f"artifact 'summary.csv' of run {run.info.run_id}.*cannot be read"):
        latest_summaries("synthetic_report")
    run2 = client.create_run(exp, tags={"perfml.kind": "experiment"})
    (tmp_path / "summary.csv").write_text("")
    client.log_artifact(run2.info.run_id, str(tmp_path / "summary.csv"))
    client.set_terminated(run2.info.run_id)
    with pytest.raises(TrackingStoreError, match=f"run {run2.info.run_id}.*not a readable CSV table"):
        latest_summaries("synthetic_report")


@pytest.mark.parametrize("column", ["time_median_s", "times_s", "cycles"])
def test_a_measured_column_retyped_to_text_is_refused(tmp_path, column):
    """A part rewritten with a text column where a number (or list of numbers) belongs."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from perfml.measure.store import ResultSet

    edited = _copy(H100, tmp_path / "edited")
    part = sorted(edited.glob("part-*.parquet"))[0]
    table = pq.read_table(part)
    i = table.schema.get_field_index(column)
    text = pa.array(["fast"] * table.num_rows, type=pa.string())
    pq.write_table(table.set_column(i, pa.field(column, pa.string()), text), part)
    with pytest.raises(ResultSchemaError, match=f"has {column} = 'fast'"):
        ResultSet.open(edited).read()


def test_a_part_without_its_device_columns_is_refused(tmp_path):
    # the device check skipped a part whose device columns were removed: any board's rows passed
    import pyarrow.parquet as pq

    from perfml.measure.store import ResultSet

    edited = _copy(H100, tmp_path / "nodevice")
    part = sorted(edited.glob("part-*.parquet"))[0]
    table = pq.read_table(part)
    pq.write_table(table.drop_columns(["device_name", "compute_capability", "sms", "total_memory_bytes"]), part)
    with pytest.raises(ResultSchemaError, match=r"has no device_name column"):
        ResultSet.open(edited).read()


@pytest.mark.parametrize("column", ["time_median_s", "time_min_s", "time_mean_s"])
def test_a_summary_time_its_repetitions_do_not_give_is_refused(tmp_path, column):
    # the median x10 on a part was accepted; characterization reads it
    from perfml.measure.store import ResultSet

    edited = _copy(H100, tmp_path / "summary")
    _edit(edited, "fp32_simple", column, 10.0)
    with pytest.raises(ResultSchemaError, match=rf"\(fp32_simple\) has {column} = 10.0, but its repetitions "
                                                r"\(times_s\) give"):
        ResultSet.open(edited).read()


# -- replay serves the kernel it recorded, and refuses before writing (thirty-second session) --------------

def _ilp_spec(tmp_path: Path, chains, reps=None) -> Path:
    spec = tmp_path / "ilp_points.toml"
    spec.write_text(f'version = 1\nname = "ilp-points"\nrepetitions = 20\nwarmup = 3\n[[families]]\nname = "ilp"\n'
                    f'params = {{ CHAINS = {list(chains)}{"" if reps is None else f", REPS = {list(reps)}"} }}\n')
    return spec


def test_a_replay_of_a_kernel_changed_since_its_recording_is_refused_and_writes_nothing(tmp_path, capsys):
    """The replay looked points up by launch alone: after ilp.cu's FMA became an add, the FMA's
    times were served as the add's (and plans.json recorded the new kernel beside them)."""
    spec = _ilp_spec(tmp_path, [1, 2])
    status, err = _run(capsys, "-q", "sweep", "run", str(spec), "--backend", "replay", "--replay", str(H100),
                       "--out", str(tmp_path / "first"))
    assert status == 0, err  # the recording of this run's kernels is in first/plans.json
    kernels = tmp_path / "kernels"
    shutil.copytree(REPO / "perfml" / "kernels" / "cuda", kernels, symlinks=False)
    source = kernels / "ilp.cu"
    source.write_text(source.read_text() + "\n// edited after the recording\n")
    status, err = _run(capsys, "-q", "sweep", "run", str(spec), "--kernels-dir", str(kernels), "--backend", "replay",
                       "--replay", str(tmp_path / "first"), "--out", str(tmp_path / "second"))
    assert status == 2 and "holds the times of another version of kernel ilp" in err, err
    assert not (tmp_path / "second").exists()
    # the kernel as recorded replays
    status, err = _run(capsys, "-q", "sweep", "run", str(spec), "--backend", "replay", "--replay",
                       str(tmp_path / "first"), "--out", str(tmp_path / "third"))
    assert status == 0, err


def test_a_replay_miss_is_found_before_the_result_set_is_made(tmp_path, capsys):
    """REPS = 65 was never recorded: the miss came after manifest.json, a part and plans.json were written.
    (CHAINS = 9 was the miss here; ilp's sidecar now declares CHAINS 1 to 8, and refuses 9 at planning.)"""
    status, err = _run(capsys, "-q", "sweep", "run", str(_ilp_spec(tmp_path, [1, 2], reps=[64, 65])), "--backend",
                       "replay", "--replay", str(H100), "--out", str(tmp_path / "miss"))
    assert status == 2 and "no recorded measurement of ilp" in err and '"REPS":65' in err, err
    assert not (tmp_path / "miss").exists()


@pytest.mark.parametrize("version", [True, 1.0, "1"])
def test_a_manifest_schema_version_that_only_compares_equal_to_1_is_refused(tmp_path, version):
    import json

    from perfml.measure.store import ResultSet

    edited = _copy(H100, tmp_path / "edited")
    data = json.loads((edited / "manifest.json").read_text())
    data["schema_version"] = version
    (edited / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(ResultSchemaError, match="unknown result schema version"):
        ResultSet.open(edited).read()


def test_a_pulled_set_keeps_its_plans_so_an_incomplete_sweep_is_still_refused(tmp_path, capsys):
    """Only manifest.json and the parts were logged: the pulled set could not tell that its sweep
    stopped short, and `perfml characterize` took it as complete."""
    from perfml.lab.sweeps import log_result_set, pull_result_set
    from perfml.measure.store import ResultSet

    spec = _ilp_spec(tmp_path, [1, 2, 3, 4])
    short = tmp_path / "short.toml"
    short.write_text(spec.read_text().replace("warmup = 3\n", "warmup = 3\ntime_budget_s = 1e-9\n"))
    status, err = _run(capsys, "-q", "sweep", "run", str(short), "--backend", "replay", "--replay", str(H100),
                       "--out", str(tmp_path / "part"))
    assert status == 0, err
    measured = ResultSet.open(tmp_path / "part")
    assert sum(measured.missing_points().values()) > 0
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    log_result_set(tmp_path / "part", tracking_uri=uri, characterize=False)
    back = pull_result_set("H100-SXM", tmp_path / "back", tracking_uri=uri)
    assert ResultSet.open(back).missing_points() == measured.missing_points()
    status, err = _run(capsys, "characterize", str(back))
    assert status == 2 and "planned" in err, err


def test_an_empty_params_table_in_a_spec_is_refused():
    """params = {} planned the family at its defaults alone, where a missing params plans its own [sweep]."""
    from perfml.measure.spec import parse_spec

    with pytest.raises(SweepSpecError, match="`params` is empty"):
        parse_spec({"name": "u", "families": [{"name": "ilp", "params": {}}]})


# -- the kernel fingerprint of a recording (thirty-third session) ---------------------------
# Declaring the values a parameter takes (min / max / values, a sidecar key since the
# thirty-third session) changed the sidecar's bytes, so every recording of the nine
# applications was refused as "another version of kernel vectorAdd".

ARCHIVE = REPO / "sweeps" / "results" / "archive"


@pytest.mark.parametrize("recording", sorted(p.parent.name for p in ARCHIVE.glob("*/plans.json")))
def test_the_recorded_kernel_fingerprints_are_those_of_the_shipped_kernels(recording):
    import json

    from perfml.kernels.catalog import load_catalog
    from perfml.measure.runner import _kernel_fingerprints
    from perfml.measure.spec import load_specs, plan_specs

    plans = json.loads((ARCHIVE / recording / "plans.json").read_text())["specs"]
    catalog = load_catalog()
    for spec_name, planned in plans.items():
        (plan,) = plan_specs(load_specs([spec_name]), catalog, sms=132)
        assert _kernel_fingerprints(plan, catalog) == planned["kernels"], spec_name


def test_a_declared_range_leaves_the_fingerprint_and_any_other_edit_changes_it():
    from perfml.kernels.sidecar import fingerprint_text

    base = ('name = "k"\n[params]\nCHAINS = { default = 1, description = "c" }\nTOTAL = { default = 840 }\n\n'
            '[launch]\nthreads_per_block = 128\n')
    declared = (base.replace("{ default = 1, ", "{ default = 1, min = 1, max = 8, ")
                .replace("{ default = 840 }", "{ default = 840, values = [420, 840] }"))
    assert declared != base and fingerprint_text(declared) == fingerprint_text(base) == base
    assert fingerprint_text(base.replace("840", "420")) != base  # another default is another kernel
    assert fingerprint_text(base.replace("128", "256")) != base
    # a declaration in another form counts, as does the same text outside [params]
    assert fingerprint_text(base.replace("[launch]", "[params.TOTAL]\nmin = 1\n[launch]")) != base
    assert fingerprint_text(base + "[validation]\nx = { min = 1, y = 2 }\n") == base + "[validation]\nx = { min = 1, y = 2 }\n"


@pytest.mark.parametrize("board", ["H200", "Tesla-T4"])
def test_a_characterization_whose_board_is_not_its_device_is_refused(tmp_path, capsys, board):
    """The H100's measured characterization with "board" edited to another board's name was
    applied to that board: its device entry (NVIDIA H100 80GB HBM3) was never compared."""
    import json

    from perfml.characterize.load import load_characterization

    data = json.loads((H100 / "characterization.json").read_text())
    data["board"] = board
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    message = rf"the device 'NVIDIA H100 80GB HBM3' is the registry's board 'H100-SXM', not '{board}'; the file's board"
    for target in (None, board):
        with pytest.raises(CharacterizationBoardError, match=message):
            load_characterization(edited, board=target)
    assert load_characterization(H100 / "characterization.json", board="H100-SXM").board == "H100-SXM"


@needs_data_home()  # perfml predict loads the model, which reads the data home
def test_predict_refuses_a_characterization_whose_board_is_not_its_device(tmp_path, capsys):
    import json

    data = json.loads((H100 / "characterization.json").read_text())
    data["board"] = "H200"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(data))
    (tmp_path / "q.csv").write_text("board,app_id,input_size\nH200,vectorAdd,1048576\n")
    status, err = _run(capsys, "predict", "--model", str(REPO / "models" / "default"), "--queries",
                       str(tmp_path / "q.csv"), "--characterization", str(edited), "--output", str(tmp_path / "p.csv"))
    assert status == 2 and "is the registry's board 'H100-SXM'" in err and err.count("\n") == 1, err
    assert not (tmp_path / "p.csv").exists()


def test_a_manifest_with_another_memory_size_names_both_sizes_as_plain_numbers(tmp_path):
    """The message showed total_memory_bytes = np.int64(150109880320) (helper probe)."""
    import json

    edited = _copy(H200, tmp_path / "edited")
    manifest = edited / "manifest.json"
    data = json.loads(manifest.read_text())
    stored = data["device"]["total_memory_bytes"]
    data["device"]["total_memory_bytes"] = stored - 2**20
    data["fingerprint"]["total_memory_bytes"] = stored - 2**20  # edited together: the rows disagree
    manifest.write_text(json.dumps(data))
    from perfml.measure.store import ResultSet

    with pytest.raises((MixedDeviceError, ResultSchemaError)) as info:
        ResultSet.open(edited).read()
    message = str(info.value)
    assert "np." not in message and f"total_memory_bytes = {stored}" in message, message
