"""Model directories and output files: nothing that is not perfml's is destroyed or replaced,
and a tampered model directory is refused at load (issue 14, sections 2 and 3).

Data: a small xgboost model fitted on a subset of the gpuperfpredict-nca runtimes of
shared/datasets (the numbers it predicts are not the subject here, only that the loaded
model predicts exactly what the saved one did, or is refused).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfml._safe_output import (
    check_output_path,
    current_umask,
    write_dataframe_atomic,
    write_text_atomic,
)
from perfml.errors import ModelFormatError, OutputWriteError, ResultFileExistsError, UnsafeOutputError
from perfml.evaluation.closed_form import describable_runtimes
from perfml.learned import RuntimeRegressor
from perfml.learned.persistence import load_model, save_model, why_not_model_directory

from conftest import shared_data_home

HOME = shared_data_home()  # the shared datasets, resolved here as the CLI would (tests are entry points)

BOARDS = ["GTX-680", "GTX-970", "Tesla-K20"]
APPS = ["matMul_gpu", "vectorAdd"]
FAST = {"n_estimators": 20, "max_depth": 3}
META = "perfml-model.json"


@pytest.fixture(scope="module")
def rows():
    rt = describable_runtimes(source="gpuperfpredict-nca", data_home=HOME)
    rt = rt[rt.board.isin(BOARDS) & rt.app_id.isin(APPS)]
    keep = rt.groupby(["board", "app_id"]).input_size.rank(method="dense") % 3 == 0
    return rt[keep].reset_index(drop=True)


@pytest.fixture(scope="module")
def fitted(rows):
    return RuntimeRegressor(learner="xgboost", learner_params=FAST, shrinkage=0.5, data_home=HOME).fit(rows, rows.measured_ms)


@pytest.fixture(scope="module")
def saved(fitted, rows, tmp_path_factory):
    """A pristine model directory; tests copy it before tampering."""
    return save_model(fitted, tmp_path_factory.mktemp("pristine") / "model", training_rows=rows)


@pytest.fixture
def model_dir(saved, tmp_path):
    import shutil

    return shutil.copytree(saved, tmp_path / "model")


def _rehash_manifest(path, meta):
    """Re-seal an edited manifest as a careless tool would (so the schema checks themselves are tested)."""
    from perfml.learned.persistence import _manifest_digest

    meta = {k: v for k, v in meta.items() if k != "manifest_sha256"}
    meta["manifest_sha256"] = _manifest_digest(meta)
    (path / META).write_text(json.dumps(meta))


def test_blended_transfer_round_trips(rows, tmp_path):
    """The blend weights (the calibrated nine-apps sub-model's baseline) are saved and used after loading."""
    blend = RuntimeRegressor(learner="xgboost", learner_params=FAST, shrinkage=0.5, baseline="blend",
                             data_home=HOME).fit(rows, rows.measured_ms)
    assert len(blend.features_.blend_weights_)
    path = save_model(blend, tmp_path / "blend", training_rows=rows)
    loaded = load_model(path, data_home=HOME)
    q = rows.sample(30, random_state=3)
    assert np.allclose(loaded.predict(q), blend.predict(q))
    assert loaded.features_.blend_weights_.equals(blend.features_.blend_weights_)


def test_a_model_whose_first_row_is_an_undescribed_kernel_round_trips(tmp_path):
    """Described and undescribed kernels in one training frame, the undescribed first: the feature
    builder's names were the first row's (no work columns), and the saved model was refused at load."""
    from perfml.datasets import load_runtimes

    rt = load_runtimes(HOME, source="gpuperfpredict-nca")
    rt = rt[rt.board.isin(BOARDS) & rt.app_id.isin(["bitonic", "vectorAdd"])]
    rt = rt.groupby(["board", "app_id"]).head(6).sort_values("app_id").reset_index(drop=True)
    assert rt["app_id"].iloc[0] == "bitonic" and set(rt["app_id"]) == {"bitonic", "vectorAdd"}
    model = RuntimeRegressor(learner="xgboost", learner_params=FAST, shrinkage=0.5, profiles=False,
                             data_home=HOME).fit(rt, rt["time_ms_median"])
    assert "desc_log_dram_bytes" in model.feature_names_
    loaded = load_model(save_model(model, tmp_path / "mixed", training_rows=rt), data_home=HOME)
    assert np.allclose(loaded.predict(rt), model.predict(rt))


# -- class 2 of issue 14: --overwrite replaces only a perfml model directory ---------------------
def test_round_trip_records_every_file_hash(model_dir, fitted, rows):
    meta = json.loads((model_dir / META).read_text())
    files = sorted(p.relative_to(model_dir).as_posix() for p in model_dir.rglob("*") if p.is_file() and p.name != META)
    assert sorted(meta["files"]) == files and "booster.json" in files
    for rel, digest in meta["files"].items():
        assert hashlib.sha256((model_dir / rel).read_bytes()).hexdigest() == digest
    loaded = load_model(model_dir, data_home=HOME)
    q = rows.sample(30, random_state=2)
    assert np.allclose(loaded.predict(q), fitted.predict(q))
    assert meta["training"]["input_size"]["vectorAdd"] == [
        float(rows[rows.app_id == "vectorAdd"].input_size.min()), float(rows[rows.app_id == "vectorAdd"].input_size.max())]


@pytest.mark.parametrize("make", ["nonempty_dir", "file", "symlink_to_dir", "empty_dir", "model_with_foreign_file", "other_format"])
def test_overwrite_refuses_what_is_not_a_model_directory(make, fitted, rows, tmp_path, saved):
    import shutil

    target = tmp_path / "target"
    if make == "nonempty_dir":
        target.mkdir()
        (target / "thesis.tex").write_text("precious")
    elif make == "file":
        target.write_text("precious")
    elif make == "symlink_to_dir":
        (tmp_path / "real").mkdir()
        (tmp_path / "real" / "thesis.tex").write_text("precious")
        target.symlink_to(tmp_path / "real", target_is_directory=True)
    elif make == "empty_dir":
        target.mkdir()
    elif make == "model_with_foreign_file":
        shutil.copytree(saved, target)
        (target / "thesis.tex").write_text("precious")
    elif make == "other_format":
        target.mkdir()
        (target / META).write_text(json.dumps({"format": "something-else", "version": 1}))
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(UnsafeOutputError, match="(not a perfml model directory|symbolic link|not a directory|a file)"):
        save_model(fitted, target, overwrite=True, training_rows=rows)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing created, nothing removed
    if make in ("nonempty_dir", "model_with_foreign_file"):
        assert (target / "thesis.tex").read_text() == "precious"


def test_overwrite_refuses_protected_directories(fitted, rows, tmp_path, monkeypatch):
    """The working directory and its parents, the home directory and / are never replaced."""
    work = tmp_path / "checkout"
    work.mkdir()
    (work / META).write_text(json.dumps({"format": "perfml-model", "version": 2, "files": {}}))
    monkeypatch.chdir(work)
    with pytest.raises(UnsafeOutputError, match="working directory"):
        save_model(fitted, work, overwrite=True, training_rows=rows)
    assert (work / META).exists()
    monkeypatch.setenv("HOME", str(work))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnsafeOutputError, match="home directory"):
        save_model(fitted, work, overwrite=True, training_rows=rows)
    with pytest.raises(UnsafeOutputError):
        save_model(fitted, "/", overwrite=True, training_rows=rows)


def test_overwrite_replaces_a_model_directory_atomically(model_dir, fitted, rows):
    old = json.loads((model_dir / META).read_text())["created"]
    assert why_not_model_directory(model_dir) is None
    with pytest.raises(ResultFileExistsError, match="--overwrite"):
        save_model(fitted, model_dir, training_rows=rows)
    save_model(fitted, model_dir, overwrite=True, training_rows=rows, extra={"note": "second"})
    meta = json.loads((model_dir / META).read_text())
    assert meta["note"] == "second" and meta["created"] >= old
    assert not [p for p in model_dir.parent.iterdir() if p.name.startswith(".")]  # no staging or aside left
    load_model(model_dir, data_home=HOME)


def test_cli_train_overwrite_refuses_a_foreign_directory_before_training(tmp_path, monkeypatch, capsys):
    from perfml.cli import main

    target = tmp_path / "mine"
    target.mkdir()
    (target / "data.csv").write_text("precious")
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--out", str(target), "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert "not a perfml model directory" in err and "Traceback" not in err
    assert (target / "data.csv").read_text() == "precious"


# -- class 3 of issue 14: the manifest's schema and every file's hash are checked at load --------
@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda m: m.update(shrinkage=float("nan")), "shrinkage"),
        (lambda m: m.update(shrinkage=-0.5), "shrinkage"),
        (lambda m: m.update(shrinkage=3), "shrinkage"),
        (lambda m: m.update(shrinkage="0.2"), "shrinkage"),
        (lambda m: m.update(feature_names=list(reversed(m["feature_names"]))), "feature_names"),
        (lambda m: m.update(feature_names=m["feature_names"][:-1]), "feature_names|features"),
        (lambda m: m.update(feature_names=[]), "feature_names"),
        (lambda m: m.pop("regressor_params"), "regressor_params"),
        (lambda m: m.update(regressor_params={**m["regressor_params"], "learner": "svr"}), "learner"),
        (lambda m: m.update(format="something-else"), "not supported"),
        (lambda m: m.update(version=1), "not supported"),
        (lambda m: m.update(version="2"), "not supported"),
        (lambda m: m.update(files={**m["files"], "../etc/passwd": "0" * 64}), "missing|inside"),
        (lambda m: m.update(training={"input_size": {"vectorAdd": [10, -1]}}), "training"),
        (lambda m: m.update(training={**m["training"], "min_time_ms": -1.0}), "training.min_time_ms"),
        (lambda m: m.update(training={**m["training"], "min_time_ms": True}), "training.min_time_ms"),
    ],
)
def test_load_refuses_a_manifest_with_bad_values(model_dir, edit, message):
    meta = json.loads((model_dir / META).read_text())
    edit(meta)
    if isinstance(meta.get("shrinkage"), float) and np.isnan(meta["shrinkage"]):
        (model_dir / META).write_text(json.dumps(meta))  # NaN cannot be re-sealed (not JSON); as a user would write it
    else:
        _rehash_manifest(model_dir, meta)
    with pytest.raises(ModelFormatError, match=message):
        load_model(model_dir, data_home=HOME)


def test_load_refuses_a_manifest_edited_without_resealing(model_dir):
    meta = json.loads((model_dir / META).read_text())
    meta["feature_names"][0], meta["feature_names"][1] = meta["feature_names"][1], meta["feature_names"][0]
    (model_dir / META).write_text(json.dumps(meta))
    with pytest.raises(ModelFormatError, match="changed after saving"):
        load_model(model_dir, data_home=HOME)


def _tables(model_dir):
    return sorted((model_dir / "features").glob("*.parquet"))


@pytest.mark.parametrize("how", ["change_booster", "empty_table", "delete_table", "delete_booster", "extra_file",
                                 "extra_dir_file", "symlinked_table"])
def test_load_refuses_a_tampered_file(model_dir, how):
    table = _tables(model_dir)[0]
    if how == "change_booster":
        text = (model_dir / "booster.json").read_text()
        (model_dir / "booster.json").write_text(text.replace("0", "1", 1))
        name = "booster.json"
    elif how == "empty_table":
        pd.read_parquet(table).head(0).to_parquet(table, index=False)
        name = table.name
    elif how == "delete_table":
        table.unlink()
        name = table.name
    elif how == "delete_booster":
        (model_dir / "booster.json").unlink()
        name = "booster.json"
    elif how == "extra_file":
        (model_dir / "notes.txt").write_text("x")
        name = "notes.txt"
    elif how == "extra_dir_file":
        (model_dir / "features" / "more.parquet").write_bytes(table.read_bytes())
        name = "more.parquet"
    else:
        real = model_dir.parent / "elsewhere.parquet"
        real.write_bytes(table.read_bytes())
        table.unlink()
        table.symlink_to(real)
        name = table.name
    with pytest.raises(ModelFormatError, match=rf"{name}.*(retrain|remove)"):
        load_model(model_dir, data_home=HOME)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(offset=st.integers(min_value=0, max_value=10**9), byte=st.integers(min_value=0, max_value=255), which=st.integers(0, 50))
def test_any_single_byte_change_is_detected(saved, tmp_path_factory, offset, byte, which):
    """Changing any one byte of any file of the directory (manifest included) is refused."""
    import shutil

    path = shutil.copytree(saved, tmp_path_factory.mktemp("flip") / "model")
    files = sorted(p for p in path.rglob("*") if p.is_file())
    victim = files[which % len(files)]
    data = bytearray(victim.read_bytes())
    i = offset % len(data)
    if data[i] == byte:
        byte = (byte + 1) % 256
    data[i] = byte
    victim.write_bytes(bytes(data))
    with pytest.raises(ModelFormatError):
        load_model(path, data_home=HOME)


# -- class 2 of issue 14: output files ---------------------------------------------------------
def test_outputs_get_the_users_umask(tmp_path):
    old = os.umask(0o027)
    try:
        assert current_umask() == 0o027
        write_text_atomic(tmp_path / "a.txt", "x")
        assert stat.S_IMODE(os.stat(tmp_path / "a.txt").st_mode) == 0o640
    finally:
        os.umask(old)
    old = os.umask(0o022)
    try:
        write_dataframe_atomic(pd.DataFrame({"a": [1]}), tmp_path / "b.csv")
        assert stat.S_IMODE(os.stat(tmp_path / "b.csv").st_mode) == 0o644
    finally:
        os.umask(old)


def test_never_overwrite_without_overwrite(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("precious")
    with pytest.raises(ResultFileExistsError, match="--overwrite"):
        write_text_atomic(p, "new")
    assert p.read_text() == "precious"
    write_text_atomic(p, "new", overwrite=True)
    assert p.read_text() == "new"


@pytest.mark.parametrize("kind", ["fifo", "socket", "directory", "symlink", "device", "dangling_symlink"])
def test_outputs_only_replace_regular_files(tmp_path, kind):
    target = tmp_path / "out.csv"
    sock = None
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(target))
    elif kind == "directory":
        target.mkdir()
    elif kind == "symlink":
        (tmp_path / "real.csv").write_text("precious")
        target.symlink_to(tmp_path / "real.csv")
    elif kind == "dangling_symlink":
        target.symlink_to(tmp_path / "nowhere.csv")
    else:
        target = __import__("pathlib").Path("/dev/null")
    try:
        before = os.lstat(target)
        with pytest.raises(UnsafeOutputError):
            write_text_atomic(target, "x", overwrite=True)
        after = os.lstat(target)
        assert (before.st_mode, before.st_ino) == (after.st_mode, after.st_ino)
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        if kind == "symlink":
            assert (tmp_path / "real.csv").read_text() == "precious"
    finally:
        if sock is not None:
            sock.close()


def test_cli_predict_refuses_a_device_as_output(saved, tmp_path, monkeypatch, capsys):
    from perfml.cli import main

    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"board": ["GTX-980"], "app_id": ["vectorAdd"], "input_size": [2**20]}).to_csv("q.csv", index=False)
    st_before = os.lstat("/dev/null")
    assert main(["predict", "--model", str(saved), "--queries", "q.csv", "--output", "/dev/null", "--overwrite"]) == 2
    assert "not a regular file" in capsys.readouterr().err
    st_after = os.lstat("/dev/null")
    assert stat.S_ISCHR(st_after.st_mode) and st_before.st_ino == st_after.st_ino


def test_failed_write_leaves_old_file_and_no_temporary(tmp_path, monkeypatch):
    p = tmp_path / "a.csv"
    p.write_text("precious")

    def boom(self, *a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", boom)
    with pytest.raises(OutputWriteError, match="No space left"):
        write_dataframe_atomic(pd.DataFrame({"a": [1]}), p, overwrite=True)
    assert p.read_text() == "precious" and [q.name for q in tmp_path.iterdir()] == ["a.csv"]


def test_check_output_path_refuses_a_file_as_parent(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(UnsafeOutputError, match="not a directory"):
        check_output_path(tmp_path / "f" / "out.csv")


def test_a_failed_save_leaves_the_old_model_and_no_staging(model_dir, fitted, rows, monkeypatch):
    """Disk full while writing the feature tables: the old model stays, loadable; nothing half-written."""
    before = {p.relative_to(model_dir): p.read_bytes() for p in model_dir.rglob("*") if p.is_file()}

    def full(self, *a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full)
    with pytest.raises(OutputWriteError, match="No space left"):
        save_model(fitted, model_dir, overwrite=True, training_rows=rows)
    monkeypatch.undo()
    assert {p.relative_to(model_dir): p.read_bytes() for p in model_dir.rglob("*") if p.is_file()} == before
    assert [p.name for p in model_dir.parent.iterdir()] == ["model"]
    load_model(model_dir, data_home=HOME)


def test_save_refuses_a_file_as_parent(fitted, rows, tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(UnsafeOutputError, match="not a directory"):
        save_model(fitted, tmp_path / "f" / "model", training_rows=rows)
    assert (tmp_path / "f").read_text() == "x"


def test_a_model_card_is_stored_and_hashed(fitted, rows, tmp_path):
    path = save_model(fitted, tmp_path / "model", training_rows=rows, extra_files={"MODEL_CARD.md": "# card\nMAPE 11.5 %\n"})
    assert load_model(path, data_home=HOME).metadata_["files"]["MODEL_CARD.md"]
    (path / "MODEL_CARD.md").write_text("# card\nMAPE 1.5 %\n")
    with pytest.raises(ModelFormatError, match="MODEL_CARD.md was changed"):
        load_model(path, data_home=HOME)
    with pytest.raises(ModelFormatError, match="not allowed"):
        save_model(fitted, tmp_path / "m2", extra_files={"../evil": "x"})


@pytest.mark.parametrize("sub", ["dlops", "described"])
def test_a_sub_model_of_a_bundle_given_as_the_model_names_the_bundle(sub):
    """--model models/default/dlops failed on a key only the bundle's manifest gives ("'shrinkage'
    is missing; retrain"), and models/default/described answered without the bundle's routing."""
    from pathlib import Path

    from perfml.learned.bundle import load_predictor

    path = Path(__file__).resolve().parents[1] / "models" / "default"
    with pytest.raises(ModelFormatError, match=rf"is the sub-model '{sub}' of the model directory .*default; pass "
                                               r"that directory as --model"):
        load_predictor(path / sub, data_home=HOME)


def test_the_shipped_default_model_loads_and_verifies():
    """models/default is a bundle of the three corpora and the operators' calibrated tier, as
    `perfml train` (every corpus) writes it."""
    from pathlib import Path

    from perfml.learned.bundle import load_predictor
    from perfml.learned.tiers import CALIBRATED_TIER, data_corpus
    from perfml.learned.training import calibrated_tier_rows, corpus_rows

    path = Path(__file__).resolve().parents[1] / "models" / "default"
    bundle = load_predictor(path, data_home=HOME)
    meta = bundle.metadata_
    assert meta["version"] == 3 and "MODEL_CARD.md" in meta["files"]
    assert set(bundle.models) == {"described", "undescribed", "dlops", "described-calibrated", "dlops-calibrated"}
    rows = corpus_rows(HOME, dlops_max_rows=meta["dlops_max_rows"], random_state=meta["seed"])
    for name, model in bundle.models.items():
        expected = rows[data_corpus(name)]
        if name in CALIBRATED_TIER:  # boards without calibration runs do not train the calibrated tier
            expected = calibrated_tier_rows(name, expected)[0]
        assert model.metadata_["training_rows"] == len(expected)
    assert sorted(bundle.models["described-calibrated"].characterizations) == sorted(
        calibrated_tier_rows("described-calibrated", rows["described"])[0]["board"].unique())
    calibrated = bundle.models["dlops-calibrated"]
    assert calibrated.characterization and sorted(calibrated.characterizations) == sorted(rows["dlops"]["board"].unique())
    assert calibrated.metadata_["calibration"] == {"column": "op", "kernels": ["add"]}
    assert "EW" in calibrated.metadata_["intervals"]["groups"]
    assert bundle.models["undescribed"].wave_scaling is True and bundle.models["described"].wave_scaling is False
    assert set(bundle.models["described"].metadata_["training"]["apps"]) == set(rows["described"]["app_id"])
    assert set(bundle.models["undescribed"].metadata_["training"]["apps"]) == set(rows["undescribed"]["app_id"])
    assert bundle.models["dlops"].metadata_["training"]["ops"] == sorted(rows["dlops"]["op"].unique())
    assert {"described", "all"} <= set(bundle.models["described"].metadata_["intervals"]["groups"])
    assert {"BMM", "FC", "EW", "Softmax", "LN", "Conv", "all"} <= set(bundle.models["dlops"].metadata_["intervals"]["groups"])


def test_saving_an_unfitted_model_says_so(tmp_path):
    """An unfitted model failed half-way through the write, reported as a disk problem
    ("free space or choose another --out")."""
    from perfml.learned.bundle import save_bundle
    from perfml.learned.operator_model import OperatorRegressor

    with pytest.raises(ModelFormatError, match="RuntimeRegressor is not fitted: nothing to save"):
        save_model(RuntimeRegressor(), tmp_path / "m")
    with pytest.raises(ModelFormatError, match=r"sub-model 'dlops' \(OperatorRegressor\) is not a fitted estimator"):
        save_bundle({"dlops": (OperatorRegressor(), None, {})}, tmp_path / "b")
    with pytest.raises(ModelFormatError, match=r"parts\['described'\] must be a tuple \(model, training_rows, manifest_extra\)"):
        save_bundle({"described": RuntimeRegressor()}, tmp_path / "b")
    assert not any(tmp_path.iterdir())
