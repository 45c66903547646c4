"""Hostile input to the commands beside `perfml predict` (a third hostile-input pass).

Each case was found by running the command: an internal error (exit 1), a silently wrong
figure (a 1e273 % MAPE, a 1.2 ns BSP time, a 480 GB run on an 80 GB board), a read-only
command that wrote into the user's file, or a value dropped without a word. Whatever the
input, the contract is the one of ``tests/test_cli_hostile.py``: exit status 2, one line on
stderr naming the input and the fix, no traceback, nothing written.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from perfml.cli import main

from conftest import data_home_path, needs_data_home

ROOT = Path(__file__).resolve().parents[1]


def _run(capsys, *argv) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def _refused(capsys, *argv, message: str) -> str:
    status, out, err = _run(capsys, *argv)
    assert status == 2, (status, out, err)
    assert message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


# --------------------------------------------------------------------------- characterize
_VECTORADD = "app_id,board,input_size,block_x,time_ms\n" + "".join(
    f"vectorAdd,H100-SXM,{n},256,{t}\n" for n, t in ((1048576, 0.012), (16777216, 0.09), (268435456, 1.3)))


@pytest.mark.parametrize(
    "extra_row, message",
    [
        ("vectorAdd,,4096,256,0.0006\n", "row 4 (line 5), column board: empty"),
        ("vectorAdd,H100-SXM,,256,1\n", "row 4 (line 5), column input_size: empty"),
        # 40e9 floats x 3 buffers = 447 GiB on an 80 GiB board
        ("vectorAdd,H100-SXM,40000000000,256,1000\n", "cannot have run there"),
    ],
)
def test_calibration_rows_without_board_or_size_or_beyond_memory_are_refused(tmp_path, capsys, extra_row, message):
    rows = tmp_path / "rows.csv"
    rows.write_text(_VECTORADD + extra_row)
    _refused(capsys, "characterize", "--from-runtimes", rows, "--board", "H100-SXM", "--out", tmp_path / "c.json",
             message=message)
    assert not (tmp_path / "c.json").exists()


def test_an_add_call_without_its_dimensions_is_refused_not_dropped(tmp_path, capsys):
    rows = tmp_path / "adds.csv"
    rows.write_text("board,op,B,H,time_ms\nH100-SXM,add,65536,6400,1.6\nH100-SXM,add,65536,2560,0.67\n"
                    "H100-SXM,add,65536,1280,0.35\nH100-SXM,add,65536,,0.35\n")
    _refused(capsys, "characterize", "--from-runtimes", rows, "--board", "H100-SXM",
             message="row 4 (line 5), columns B, H: op 'add' needs them as positive whole numbers")


def test_characterizing_a_board_nobody_knows_is_refused_and_writes_nothing(tmp_path, capsys):
    _refused(capsys, "characterize", "--board", "NOPE-GPU", "--out", tmp_path / "nope.json",
             message="unknown board 'NOPE-GPU'")
    assert not (tmp_path / "nope.json").exists()


def test_a_result_set_with_an_edited_time_is_refused_by_name(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    results = tmp_path / "H200"
    shutil.copytree(ROOT / "sweeps" / "results" / "H200", results)
    part = sorted(results.glob("part-*.parquet"))[0]
    table = pq.read_table(part)
    i = table.schema.get_field_index("time_median_s")
    pq.write_table(table.set_column(i, table.schema.field(i), pa.array([0.0] * table.num_rows)), part)
    _refused(capsys, "characterize", results, "--board", "H200", message="has time_median_s = 0.0, expected a finite number > 0")


def test_a_relative_performance_of_zero_is_refused():
    """F = 0 gave an infinite potential speedup in `perfml diagnose`; measured F are > 0."""
    from perfml.characterize.functions import CharacterizationFunction
    from perfml.errors import InvalidValueError

    with pytest.raises(InvalidValueError, match=r"in \(0, 1\]"):
        CharacterizationFunction("F_divergence", x=(0.0, 1.0), y=(0.0, 0.0), n_samples=5, tier="measured")


# --------------------------------------------------------------------------- experiments
def _experiment(tmp_path: Path, data: str, model: str) -> Path:
    spec = tmp_path / "e.toml"
    spec.write_text('format = "perfml-experiment"\nversion = 1\nname = "hostile"\ndescription = "x"\n'
                    f'protocol = "leave-one-board-out"\n[data]\nsource = "gpuperfpredict-nca"\n{data}\n'
                    f"[[models]]\n{model}\n")
    return spec


_LINEAR = 'name = "lin"\nkind = "learned"\nlearner = "linear"\ntarget = "log"'
_BSP = 'name = "bsp"\nkind = "closed_form"\nmodel = "bsp"'


@needs_data_home()
@pytest.mark.parametrize(
    "data, model, message",
    [
        ('apps = ["VECTORADD", "matMul_gpu"]', _BSP, "apps names 'VECTORADD', which no row of gpuperfpredict-nca holds (closest: vectorAdd)"),
        ('boards = ["GTX-980", "H100-SXM", "GTX-680"]', _BSP, "boards names 'H100-SXM', which no row"),
        ("", _LINEAR + '\nfeatures = { subset = ["nosuchprefix_"] }', "matches none of the"),
        ("max_train_rows_per_group = 1", _LINEAR, "longer than any kernel runs"),
    ],
)
def test_experiments_that_would_score_the_wrong_rows_or_a_meaningless_figure_stop(tmp_path, capsys, data, model, message):
    _refused(capsys, "experiment", "run", _experiment(tmp_path, data, model), "--no-track",
             "--data-home", data_home_path(), message=message)


@pytest.mark.parametrize("name", ["../../x/evil", "a/b", "", "-lead", "x" * 101])
def test_a_model_name_mlflow_cannot_log_is_refused_before_any_run(tmp_path, capsys, name):
    _refused(capsys, "experiment", "run", _experiment(tmp_path, "", _BSP.replace('"bsp"', json.dumps(name), 1)),
             "--no-track", message="name must be a name of letters, digits")


# --------------------------------------------------------------------------- report
@pytest.mark.parametrize("kind", ["other program", "empty", "not sqlite"])
def test_report_never_writes_into_a_database_that_is_not_an_mlflow_store(tmp_path, capsys, monkeypatch, kind):
    db = tmp_path / "other.db"
    if kind == "other program":
        con = sqlite3.connect(db)
        con.execute("create table t(x)")
        con.commit()
        con.close()
    elif kind == "empty":
        db.write_bytes(b"")
    else:
        db.write_bytes(b"garbage\n")
    before = db.read_bytes()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
    message = {"other program": "another program's database (tables t", "empty": "no MLflow store at",
               "not sqlite": "is not a SQLite database"}[kind]
    _refused(capsys, "report", message=message)
    assert db.read_bytes() == before


def test_a_sqlite_store_that_is_a_folder_is_refused_at_once(tmp_path, capsys, monkeypatch):
    # MLflow retried a folder for 105 s ("unable to open database file")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}")
    _refused(capsys, "report", message="is a folder; give a database file in it")
    assert list(tmp_path.iterdir()) == []


@needs_data_home()
def test_a_sqlite_store_in_a_folder_that_does_not_exist_is_refused_and_no_folder_is_made(tmp_path, capsys,
                                                                                           monkeypatch):
    # MLflow made every missing folder of a mistyped path (perfml tune --storage refused it already);
    # `report` says there is nothing to report there (tests/test_tracking.py)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/no/such/folder/m.db")
    _refused(capsys, "experiment", "run", str(_experiment(tmp_path, "", _BSP)),
             message=f"the folder {tmp_path}/no/such/folder does not exist")
    assert not (tmp_path / "no").exists()


# --------------------------------------------------------------------------- predict-lambda
@needs_data_home()
def test_a_bsp_time_below_any_kernel_call_is_raised_and_flagged(capsys):
    from perfml.datasets import MIN_KERNEL_MS

    status, out, err = _run(capsys, "predict-lambda", "--board", "H100-SXM", "--app", "vectorAdd", "--size", "1",
                            "--json", "--data-home", data_home_path())
    assert status == 0, err
    row = json.loads(out)[0]
    assert row["bsp_t1_ms"] / row["lambda"] < MIN_KERNEL_MS  # the model's own T_k
    assert row["bsp_tk_ms"] == MIN_KERNEL_MS and row["clamped_to_bound"] is True


# --------------------------------------------------------------------------- cumapz
@pytest.mark.parametrize(
    "param, message",
    [
        ("warp_size=33", "warp_size=33 is not 32"),
        ("warp_size=16", "warp_size=16 is not 32"),
        ("memory_channels=1e300", "is not at most 1,024"),
        ("channel_interleave_bytes=3", "is not a power of two"),
        ("shared_banks=7", "is not a power of two at most 64"),
        ("registers_per_sm=1e30", "is not at most"),
        ("shared_mem_per_sm_kb=1e12", "is not at most 4,096"),
    ],
)
def test_cumapz_refuses_board_fields_no_gpu_has(capsys, param, message):
    _refused(capsys, "cumapz", "analyze", "transpose_3_padded", "--param", param, message=message)


def test_cumapz_accepts_the_fields_of_a_real_board(capsys):
    status, _, err = _run(capsys, "cumapz", "analyze", "transpose_3_padded", "--param", "memory_channels=6", "--json")
    assert status == 0, err


@pytest.mark.parametrize("index, found", [('"-1 - tx"', "= -1"), ('"tx * 0.5"', "= 0.5")])
def test_cumapz_refuses_a_global_index_that_is_no_array_element(tmp_path, capsys, index, found):
    text = (ROOT / "perfml" / "descriptions" / "cumapz" / "transpose_3_padded.toml").read_text()
    original = 'index = "(bx*TILE_DIM + ty + i)*H + by*TILE_DIM + tx"'
    assert original in text
    (tmp_path / "d.toml").write_text(text.replace(original, f"index = {index}"))
    _refused(capsys, "cumapz", "analyze", tmp_path / "d.toml",
             message=f"global index {json.loads(index)!r} {found} for an active thread is not a non-negative whole number")


def test_cumapz_says_when_registers_keep_a_block_off_the_sm(tmp_path, capsys):
    text = (ROOT / "perfml" / "descriptions" / "cumapz" / "transpose_3_padded.toml").read_text()
    (tmp_path / "d.toml").write_text(text.replace("[launch]", "[launch]\nregisters_per_thread = 100000", 1))
    _refused(capsys, "cumapz", "analyze", tmp_path / "d.toml", message="100000 registers per thread")


def test_cumapz_set_without_a_name_is_refused(capsys):
    _refused(capsys, "cumapz", "analyze", "transpose_3_padded", "--set", "=5", message="--set expects NAME=INTEGER")


# --------------------------------------------------------------------------- data home
def test_a_data_home_that_is_a_file_is_called_a_file(tmp_path, capsys):
    (tmp_path / "q.csv").write_text("board,app_id,input_size\nGTX-980,vectorAdd,1024\n")
    (tmp_path / "home").write_text("not a folder")
    _refused(capsys, "predict", "--model", ROOT / "models" / "default", "--queries", tmp_path / "q.csv",
             "--output", tmp_path / "p.csv", "--data-home", tmp_path / "home", message="is a file, not a folder")


# --------------------------------------------------------------------------- train --measured, tune
@needs_data_home()
@pytest.mark.parametrize("value", ["65536.5", "-5", "abc"])
def test_a_measured_operator_table_with_a_bad_dimension_is_refused_by_file_row_and_column(tmp_path, capsys, value):
    folder = tmp_path / "measured"
    folder.mkdir()
    (folder / "dlops_torch.csv").write_text(
        "source,board,device_name,op,B,M,N,K,H,dtype,time_ms\n"
        "perfml-measured,H200,NVIDIA H200,add,65536,,,,6400,float32,1.16\n"
        f"perfml-measured,H200,NVIDIA H200,add,{value},,,,2560,float32,0.47\n")
    _refused(capsys, "-q", "train", "--out", tmp_path / "model", "--corpus", "dlops", "--no-calibrated-tier",
             "--dlops-rows", "100", "--measured", folder, "--data-home", data_home_path(),
             message=f"dlops_torch.csv: row 2 (line 3), column B: expected a whole number in [1, 2147483647], found '{value}'")
    assert not (tmp_path / "model").exists()


@needs_data_home()
def test_train_into_a_folder_no_directory_can_be_created_in_is_refused_before_training(capsys, monkeypatch):
    # a read-only --out folder failed only after the whole training (43 s for one corpus); /proc
    # takes no new directory, whoever runs the test (a chmod'ed folder does not stop root)
    import perfml.learned.training as training

    monkeypatch.setattr(training, "corpus_rows", lambda *a, **k: pytest.fail("trained before checking --out"))
    _refused(capsys, "-q", "train", "--out", "/proc/perfml-test-model", "--data-home", data_home_path(),
             message="/proc/perfml-test-model cannot be written: no directory can be created in /proc")


@needs_data_home()
def test_tune_with_a_database_whose_driver_is_missing_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = _refused(capsys, "-q", "tune", "--n-trials", "1", "--no-mlflow", "--app", "vectorAdd", "--data-home",
                   data_home_path(), "--storage", "mysql://u:secret@127.0.0.1:1/db",
                   message="the Python driver for this database is not installed")
    assert "secret" not in err and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("seed", ["-1", "99999999999999999999"])
def test_tune_refuses_a_seed_outside_the_generators_range_before_creating_anything(tmp_path, capsys, monkeypatch, seed):
    monkeypatch.chdir(tmp_path)
    _refused(capsys, "-q", "tune", "--n-trials", "1", "--no-mlflow", "--storage", f"sqlite:///{tmp_path / 'fresh.db'}",
             "--seed", seed, message="--seed")
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- messages that point at the right thing
@needs_data_home()
def test_diagnose_twins_offers_the_overwrite_it_names(tmp_path, capsys):
    """It said "pass --overwrite", an option the command did not have."""
    cases = tmp_path / "cases.csv"
    cases.write_text("mine")
    home = str(data_home_path())
    err = _refused(capsys, "diagnose", "twins", "--data-home", home, "--cases-csv", cases, message="pass --overwrite")
    assert cases.read_text() == "mine", err
    status, _, err = _run(capsys, "diagnose", "twins", "--data-home", home, "--cases-csv", cases, "--overwrite", "--json")
    assert status == 0, err
    assert cases.read_text() != "mine"
    _refused(capsys, "diagnose", "twins", "--data-home", home, "--cases-csv", "", message="--cases-csv is empty")


def _family_copy(tmp_path, edit=None, source_prefix=b""):
    kernels = tmp_path / "k"
    kernels.mkdir()
    (kernels / "fp32_simple.cu").write_bytes(source_prefix + (ROOT / "kernels" / "fp32_simple.cu").read_bytes())
    text = (ROOT / "kernels" / "fp32_simple.toml").read_text()
    (kernels / "fp32_simple.toml").write_text(edit(text) if edit else text)
    return kernels


def test_a_cuda_source_that_is_not_utf8_is_named_not_its_sidecar(tmp_path, capsys):
    kernels = _family_copy(tmp_path, source_prefix=b"\xff\xfe")
    err = _refused(capsys, "kernels", "list", "--kernels-dir", kernels, message="fp32_simple.cu (the source of fp32_simple.toml): not UTF-8")
    assert "pass the CSV/TOML/JSON" not in err


@pytest.mark.parametrize("archs, message", [
    ("[]", "archs: is empty"),
    ('["sm_999"]', "'sm_999' is compute capability 99.9, beyond any GPU"),
    ('["sm_90", "sm_90"]', "names an architecture twice"),
])
def test_a_sidecar_archs_list_that_compiles_nothing_useful_is_refused(tmp_path, capsys, archs, message):
    import re

    kernels = _family_copy(tmp_path, lambda t: re.sub(r"(?m)^archs = .*$", f"archs = {archs}", t))
    _refused(capsys, "kernels", "list", "--kernels-dir", kernels, message=message)


def test_newer_architectures_are_accepted(tmp_path, capsys):
    import re

    kernels = _family_copy(tmp_path, lambda t: re.sub(r"(?m)^archs = .*$", 'archs = ["sm_100a", "sm_120"]', t))
    status, out, err = _run(capsys, "kernels", "list", "--kernels-dir", kernels)
    assert status == 0 and "fp32_simple" in out, err


def test_a_sidecar_with_a_byte_order_mark_reads_like_one_without(tmp_path, capsys):
    kernels = _family_copy(tmp_path, lambda t: "\ufeff" + t)
    status, out, err = _run(capsys, "kernels", "list", "--kernels-dir", kernels)
    assert status == 0 and "fp32_simple" in out, err


def test_a_cache_dir_that_is_a_file_is_called_a_file(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("hi")
    _refused(capsys, "kernels", "check", "--cache-dir", afile, message="(from --cache-dir) is a file, not a directory")
    assert afile.read_text() == "hi"


# --------------------------------------------------------------------------- experiments, tuning, tracking (sixteenth session)
_INSAMPLE = ('name = "f5"\ndescription = "synthetic test experiment"\nprotocol = "in-sample"\n[data]\nsource = "BSPGPU"\n'
             '[[models]]\nname = "bsp"\nkind = "closed_form"\nmodel = "bsp"\n')


@pytest.mark.parametrize("address", ["garbage", "", "tcp://127.0.0.1:99999", "tcp://127.0.0.1:8786x", "http://host:80/x"])
def test_a_dask_address_that_is_no_address_is_refused_before_any_work(tmp_path, capsys, address):
    """It failed after a 40 s wait as an internal error (ValueError), or ran locally for ''."""
    (tmp_path / "e.toml").write_text(_INSAMPLE)
    _refused(capsys, "experiment", "run", tmp_path / "e.toml", "--no-track", "--dask", address,
             message="--dask is empty" if address == "" else "is not a scheduler address; expected tcp://HOST:PORT")


def test_well_formed_dask_addresses_pass_the_check():
    from perfml.experiments.cluster import check_address

    for address in ("tcp://127.0.0.1:8786", "127.0.0.1:8786", "tls://sched.lab:8786", "tcp://[::1]:8786"):
        check_address(address)


@needs_data_home()
def test_a_model_name_the_experiment_lacks_is_refused(tmp_path, capsys):
    (tmp_path / "e.toml").write_text(_INSAMPLE)
    for models in (["nope"], ["bsp", "nope"]):  # the second ran bsp and skipped 'nope' silently
        _refused(capsys, "experiment", "run", tmp_path / "e.toml", "--no-track", "--data-home", data_home_path(),
                 *(a for m in models for a in ("--model", m)), message="has no model 'nope'; choose among bsp")


@needs_data_home()
def test_a_model_that_predicts_no_selected_row_is_refused(tmp_path, capsys):
    """A KeyError (no-track) or a ZeroDivisionError in the plots (tracked), MLflow runs left FAILED."""
    (tmp_path / "e.toml").write_text('name = "und4"\ndescription = "d"\nprotocol = "in-sample"\n[[models]]\nname = "b"\n'
                                     'kind = "closed_form"\nmodel = "hongkim"\n[data]\nsource = "gpuperfpredict-rodinia"\n'
                                     'undescribed = true\nboards = ["GTX-970"]\n')
    _refused(capsys, "experiment", "run", tmp_path / "e.toml", "--no-track", "--data-home", data_home_path(),
             message="model 'b': predicts none of the")


@pytest.mark.parametrize("argv", [["report"], ["tune", "--source", "BSPGPU", "--n-trials", "1"]])
def test_a_malformed_tracking_uri_is_a_typed_error_and_creates_no_study(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://[::1")
    storage = tmp_path / "study.db"
    extra = ["--storage", f"sqlite:///{storage}"] if argv[0] == "tune" else []
    _refused(capsys, *argv, *extra, message="MLflow tracking URI 'http://[::1' is malformed")
    assert not storage.exists()


@pytest.mark.parametrize("study, message", [("", "--study is empty"), (" ", "--study must be a printable name of 1 to 500"),
                                            ("x" * 501, "--study must be a printable name of 1 to 500"),
                                            ("a\tb", "--study must be a printable name"),
                                            ("Default", "--study 'Default' is MLflow's own experiment")])
def test_a_study_name_mlflow_refuses_is_refused_before_any_trial(tmp_path, capsys, study, message):
    storage = tmp_path / "study.db"
    _refused(capsys, "tune", "--source", "BSPGPU", "--n-trials", "1", "--storage", f"sqlite:///{storage}",
             "--study", study, message=message)
    assert not storage.exists()


def test_an_empty_storage_url_is_refused_not_replaced_by_the_default(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _refused(capsys, "tune", "--source", "BSPGPU", "--n-trials", "1", "--storage", "", message="--storage is empty")
    assert not (tmp_path / "optuna.db").exists()


@needs_data_home()
@pytest.mark.parametrize("storage", ["sqlite://", "sqlite:////no/such/folder/o.db"])
def test_an_experiments_bad_tuning_storage_is_refused_before_its_mlflow_run(tmp_path, capsys, monkeypatch, storage):
    # the storage was opened by the first tuned model: one FAILED parent run was left in MLflow
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    spec = tmp_path / "tuned.toml"
    spec.write_text('name = "tuned"\ndescription = "d"\nprotocol = "leave-one-board-out"\n'
                    '[data]\nsource = "gpuperfpredict-nca"\nboards = ["GTX-680", "Tesla-K40"]\napps = ["vectorAdd"]\n'
                    '[[models]]\nname = "svr_tuned"\nkind = "learned"\nlearner = "svr"\ntarget = "log"\n'
                    'tune = { n_trials = 1 }\n')
    status, _, err = _run(capsys, "experiment", "run", str(spec), "--storage", storage, "--data-home", data_home_path())
    assert status == 2 and "--storage" in err and "Traceback" not in err
    db = tmp_path / "mlflow.db"
    if db.exists():
        with sqlite3.connect(db) as con:
            tables = {r[0] for r in con.execute("select name from sqlite_master where type='table'")}
            assert "runs" not in tables or con.execute("select count(*) from runs").fetchone()[0] == 0


@pytest.mark.parametrize("option", [["--model", "hybrid"], ["--storage", "sqlite:///study.db"], ["--n-jobs", "2"]])
def test_a_table2_experiment_refuses_the_options_it_would_ignore(tmp_path, monkeypatch, capsys, option):
    """experiments/bsp_lambda_table.toml fits seed 003's Table II from its own runs: --model,
    --storage and --n-jobs ran the whole table as if they were not there. Refused before any
    work (nothing measured, no database created)."""
    monkeypatch.chdir(tmp_path)
    table2 = Path(__file__).resolve().parents[1] / "experiments" / "bsp_lambda_table.toml"
    _refused(capsys, "experiment", "run", str(table2), "--no-track", *option,
             message=f"{option[0]} would change nothing; remove it")
    assert list(tmp_path.iterdir()) == []


@needs_data_home()
@pytest.mark.parametrize("table, key", [("data", "source"), ("characterization", "calibration_source")])
def test_an_unknown_source_names_the_experiment_file_and_its_key(tmp_path, capsys, table, key):
    """The loader's message named only "runtimes": which file and which key held 'nope' was left to guess."""
    text = _INSAMPLE.replace('source = "BSPGPU"', 'source = "nope"') if key == "source" else (
        _INSAMPLE + '[characterization]\ntier = "calibrated"\ncalibration_source = "nope"\n')
    (tmp_path / "e.toml").write_text(text)
    err = _refused(capsys, "experiment", "run", tmp_path / "e.toml", "--no-track",
                   message=f"[{table}] {key}: runtimes: no rows with source 'nope'; choose one of BSPGPU")
    assert str(tmp_path / "e.toml") in err
