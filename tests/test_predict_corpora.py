"""One sub-model per corpus, queries routed row by row, operator queries (issue 10, sections 2 and 4).

Models: small xgboost models (20 trees) on a subsample of shared/datasets/runtimes.csv.gz
(every (board, kernel) of the default configuration keeps its first 4 rows): ``described``
(the nine apps) and ``undescribed`` (Rodinia and the other kernels without a description).
For the operators, an :class:`~perfml.learned.operators.OperatorRegressor` with 20 trees of
depth 3 on a stratified 5,000-row subsample of shared/datasets/dlops_runtimes.csv.gz. All
three are saved as one bundle and loaded back before use. The tests are about the query
path, the routing, the validation and the persistence, not about accuracy.
"""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pandas as pd
import pytest

from perfml.errors import ModelFormatError, QueryValidationError, ReferenceValidationError, UnsupportedQueryError
from perfml.learned.bundle import load_predictor, predict_any, read_reference_any, save_bundle
from perfml.learned.intervals import LEVELS
from perfml.learned.operator_queries import (
    OPERATOR_DIM_COLUMNS,
    check_operator_queries,
    predict_operator_queries,
)
from perfml.learned.persistence import load_model, save_model
from perfml.learned.training import corpus_figures, corpus_rows, fit_corpus, operator_training_rows
from perfml.operators import OP_CLASS, roofline_lower_bound_ms

from conftest import shared_data_home

#: the module's fixtures train three small models with their leave-one-board-out calibration (minutes on 2 cores)
pytestmark = pytest.mark.slow

HOME = shared_data_home()
FAST = {"n_estimators": 20, "max_depth": 3}
DIMS = list(OPERATOR_DIM_COLUMNS)


@pytest.fixture(scope="module")
def amaris_parts(monkeypatch_module):
    from perfml.learned import regressors

    monkeypatch_module.setitem(regressors._DEFAULTS, "xgboost", {**regressors._DEFAULTS["xgboost"], **FAST})
    parts = {}
    for name, rows in corpus_rows(HOME, corpora=["described", "undescribed"]).items():
        rows = rows.groupby(["board", "app_id"], sort=False).head(4).reset_index(drop=True)
        model, calibration, oof = fit_corpus(name, rows, data_home=HOME)
        parts[name] = (model, rows, {"intervals": calibration})
    return parts


@pytest.fixture(scope="module")
def dlops_rows():
    return operator_training_rows(HOME, max_rows=5000, random_state=0)


def _small_operator_model():
    from perfml.learned.operators import OperatorRegressor

    return OperatorRegressor(learner_params=FAST, n_jobs=1)


@pytest.fixture(scope="module")
def dlops_part(dlops_rows):
    model, calibration, oof = fit_corpus("dlops", dlops_rows, estimator=_small_operator_model())
    return model, dlops_rows, {"intervals": calibration}


@pytest.fixture(scope="module")
def amaris_dir(amaris_parts, tmp_path_factory):
    """A bundle of the two Amaris sub-models only."""
    return save_bundle(amaris_parts, tmp_path_factory.mktemp("bundle") / "model", extra={"note": "test"},
                       extra_files={"MODEL_CARD.md": "# test card\n"})


@pytest.fixture(scope="module")
def bundle_dir(amaris_parts, dlops_part, tmp_path_factory):
    """The three sub-models in one directory."""
    return save_bundle({**amaris_parts, "dlops": dlops_part}, tmp_path_factory.mktemp("bundle") / "model",
                       extra={"note": "test"}, extra_files={"MODEL_CARD.md": "# test card\n"})


@pytest.fixture(scope="module")
def bundle(bundle_dir):
    return load_predictor(bundle_dir, data_home=HOME)


def _text(frame: pd.DataFrame) -> pd.DataFrame:
    """A frame as read_query_csv gives it: text cells, empty where missing."""
    return frame.astype(object).where(frame.notna(), "").astype(str).replace({"<NA>": "", "nan": ""})


def _op_queries(rows: pd.DataFrame, extra=("kernel_name",)) -> pd.DataFrame:
    cols = ["board", "op", *[c for c in DIMS if c in rows.columns], *[c for c in extra if c in rows.columns]]
    return _text(rows[cols].reset_index(drop=True))


# -- persistence -----------------------------------------------------------------------------
def test_the_bundle_round_trips_with_every_file_hashed(bundle_dir, amaris_parts, dlops_part):
    meta = json.loads((bundle_dir / "perfml-model.json").read_text())
    assert meta["version"] == 3 and set(meta["corpora"]) == {"described", "undescribed", "dlops"}
    assert meta["corpora"]["dlops"]["kind"] == "operator-regressor"
    assert {"described/perfml-model.json", "described/booster.json", "undescribed/booster.json", "MODEL_CARD.md",
            "dlops/perfml-model.json", "dlops/booster.json", "dlops/features/transfer.parquet"} <= set(meta["files"])
    loaded = load_predictor(bundle_dir, data_home=HOME)
    for name, (model, rows, _) in {**amaris_parts, "dlops": dlops_part}.items():
        q = rows.groupby("board").head(20)
        assert np.allclose(loaded.models[name].predict(q), model.predict(q), rtol=1e-9)
        assert loaded.models[name].metadata_["corpus"] == name
    for name in ("described", "undescribed"):
        assert loaded.models[name].metadata_["intervals"]["groups"][name]["n"] == len(amaris_parts[name][1])
    groups = loaded.models["dlops"].metadata_["intervals"]["groups"]
    assert sum(groups[c]["n"] for c in ("BMM", "FC", "EW", "Softmax", "LN", "Conv")) == len(dlops_part[1])
    assert loaded.models["dlops"].metadata_["training"]["ops"] == sorted(dlops_part[1]["op"].unique())


@pytest.mark.parametrize("tamper, message", [
    (lambda d: (d / "undescribed" / "booster.json").write_text("{}"), "changed after saving"),
    (lambda d: (d / "dlops" / "features" / "transfer.parquet").write_bytes(b"PAR1"), "changed after saving"),
    (lambda d: (d / "described" / "features" / "extra.parquet").write_bytes(b"x"), "not part of the saved model"),
    (lambda d: (d / "MODEL_CARD.md").unlink(), "missing"),
    (lambda d: (d / "perfml-model.json").write_text((d / "perfml-model.json").read_text().replace('"test"', '"edited"')),
     "manifest was changed"),
])
def test_a_tampered_bundle_is_refused(bundle_dir, tmp_path, tamper, message):
    copy = tmp_path / "m"
    shutil.copytree(bundle_dir, copy)
    tamper(copy)
    with pytest.raises(ModelFormatError, match=message):
        load_predictor(copy, data_home=HOME)


def test_a_sub_manifest_edited_and_rehashed_in_the_top_manifest_is_still_refused(bundle_dir, tmp_path):
    """The sub-model's own manifest hash guards its content even if the top one is forged."""
    copy = tmp_path / "m"
    shutil.copytree(bundle_dir, copy)
    sub = copy / "described" / "perfml-model.json"
    meta = json.loads(sub.read_text())
    meta["intervals"]["groups"]["all"]["log_halfwidth"][40] = 0.0
    sub.write_text(json.dumps(meta))
    from perfml.learned.persistence import write_manifest

    top = json.loads((copy / "perfml-model.json").read_text())
    write_manifest(copy, {k: v for k, v in top.items() if k not in ("files", "manifest_sha256")})
    with pytest.raises(ModelFormatError, match="manifest was changed"):
        load_predictor(copy, data_home=HOME)


def test_old_and_foreign_directories_get_typed_errors(amaris_dir, amaris_parts, tmp_path):
    with pytest.raises(ModelFormatError, match="multi-corpus model bundle.*load_predictor"):
        load_model(amaris_dir, data_home=HOME)
    model, rows, extra = amaris_parts["described"]
    v2 = save_model(model, tmp_path / "v2", training_rows=rows, extra=extra)
    single = load_predictor(v2, data_home=HOME)  # a version-2 directory is a one-model bundle
    assert list(single.models) == ["amaris"] and single.model_for("undescribed") is single.models["amaris"]
    meta = json.loads((v2 / "perfml-model.json").read_text())
    meta["version"] = 1
    (v2 / "perfml-model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelFormatError, match="version 1 is not supported"):
        load_predictor(v2, data_home=HOME)


def test_the_card_is_replaced_and_rehashed(amaris_dir, tmp_path):
    from perfml.learned.bundle import replace_card

    copy = tmp_path / "m"
    shutil.copytree(amaris_dir, copy)
    replace_card(copy, "# new card\n", data_home=HOME)
    assert (copy / "MODEL_CARD.md").read_text() == "# new card\n"
    load_predictor(copy, data_home=HOME)  # verifies every hash
    (copy / "MODEL_CARD.md").write_text("# edited by hand\n")
    with pytest.raises(ModelFormatError, match="MODEL_CARD.md was changed"):
        replace_card(copy, "# another\n", data_home=HOME)


def test_overwrite_replaces_a_bundle_but_not_a_foreign_directory(amaris_parts, tmp_path):
    from perfml.errors import ResultFileExistsError, UnsafeOutputError

    parts = {"described": amaris_parts["described"]}
    path = save_bundle(parts, tmp_path / "m")
    with pytest.raises(ResultFileExistsError):
        save_bundle(parts, path)
    save_bundle(parts, path, overwrite=True, extra={"second": True})
    assert load_predictor(path, data_home=HOME).metadata_["second"] is True
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("mine")
    with pytest.raises(UnsafeOutputError):
        save_bundle(parts, tmp_path / "foreign", overwrite=True)
    assert (tmp_path / "foreign" / "notes.txt").read_text() == "mine"


# -- routing ---------------------------------------------------------------------------------
def test_mixed_queries_are_routed_row_by_row_keeping_order_and_columns(bundle, amaris_parts, dlops_rows):
    rod = amaris_parts["undescribed"][1].iloc[0]
    bmm = dlops_rows[dlops_rows.op == "bmm"].iloc[0]
    ln = dlops_rows[dlops_rows.op == "ln"].iloc[0]
    queries = pd.DataFrame([
        {"tag": "a", "board": "Tesla-T4", "op": "bmm", "app_id": "", "B": bmm.B, "M": bmm.M, "N": bmm.N, "K": bmm.K, "H": ""},
        {"tag": "b", "board": "GTX-980", "op": "", "app_id": "vectorAdd", "input_size": 2**20},
        {"tag": "c", "board": "GTX-980", "op": "", "app_id": rod.app_id, "input_size": int(rod.input_size),
         "input_size_2": int(rod.input_size_2) if pd.notna(rod.input_size_2) else "",
         **{c: int(rod[c]) for c in ("block_x", "block_y", "grid_x", "grid_y")}},
        {"tag": "d", "board": "A100-PCIe-40GB", "op": "ln", "app_id": "", "B": ln.B, "H": ln.H},
    ])
    queries = _text(queries)
    out = predict_any(bundle, queries, "q.csv")
    assert out["tag"].tolist() == ["a", "b", "c", "d"]
    assert list(out.columns[: len(queries.columns)]) == list(queries.columns)
    assert (out[queries.columns] == queries).all().all()  # every input cell unchanged
    # the Rodinia row is a training run of its own board: its measurement (tests/test_measured_runs.py)
    assert out["basis"].tolist() == ["training-boards", "training-boards", "measured", "training-boards"]
    trained = amaris_parts["undescribed"][1]
    same = trained[(trained.board == "GTX-980") & (trained.app_id == rod.app_id) & (trained.input_size == rod.input_size)
                   & (trained.grid_x == rod.grid_x) & (trained.block_x == rod.block_x)]
    assert out["predicted_ms"].iloc[2] == pytest.approx(float(np.exp(np.median(np.log(same["measured_ms"])))))
    # each row's prediction is its sub-model's
    alone = predict_operator_queries(bundle.models["dlops"], queries.iloc[[0, 3]].reset_index(drop=True), "x")
    assert out["predicted_ms"].iloc[[0, 3]].to_numpy() == pytest.approx(alone["predicted_ms"].to_numpy())
    vec = bundle.models["described"].predict(pd.DataFrame([{"board": "GTX-980", "app_id": "vectorAdd", "input_size": 2.0**20}]))
    assert out["predicted_ms"].iloc[1] == pytest.approx(max(vec[0], out["predicted_ms"].iloc[1]))
    assert (out["lower_ms"] <= out["predicted_ms"]).all() and (out["predicted_ms"] <= out["upper_ms"]).all()


def test_the_cli_answers_a_mixed_file_with_a_mixed_reference(bundle_dir, tmp_path, capsys):
    from perfml.cli import main

    pd.DataFrame([
        {"note": "mine", "board": "Tesla-K40", "app_id": "my_kernel", "input_size": 4096, "op": "", "B": "", "M": "", "N": "", "K": ""},
        {"note": "op", "board": "H100-SXM", "app_id": "", "input_size": "", "op": "bmm", "B": 4, "M": 256, "N": 256, "K": 256},
    ]).to_csv(tmp_path / "q.csv", index=False)
    pd.DataFrame([
        {"board": "GTX-970", "app_id": "my_kernel", "input_size": 4096, "block_x": 256, "grid_x": 16, "op": "",
         "B": "", "M": "", "N": "", "K": "", "time_ms": 0.2},
        {"board": "Tesla-T4", "app_id": "", "input_size": "", "block_x": "", "grid_x": "", "op": "bmm",
         "B": 4, "M": 256, "N": 256, "K": 256, "time_ms": 0.05},
    ]).to_csv(tmp_path / "ref.csv", index=False)
    out = tmp_path / "p.csv"
    code = main(["predict", "--model", str(bundle_dir), "--queries", str(tmp_path / "q.csv"), "--output", str(out),
                 "--reference", str(tmp_path / "ref.csv")])
    assert code == 0, capsys.readouterr().err
    got = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert got["note"].tolist() == ["mine", "op"] and got["basis"].tolist() == ["reference", "reference"]
    assert (got["predicted_ms"].astype(float) > 0).all()


def test_a_launch_conflict_names_the_row_of_a_mixed_reference_file(bundle, tmp_path):
    path = tmp_path / "ref.csv"
    pd.DataFrame([
        {"board": "GTX-970", "app_id": "my_kernel", "input_size": 4096, "op": "", "B": "", "M": "", "N": "", "K": "",
         "grid_x": 16, "time_ms": 0.2},
        {"board": "Tesla-T4", "app_id": "", "input_size": "", "op": "bmm", "B": 4, "M": 64, "N": 64, "K": 64,
         "grid_x": 16, "time_ms": 0.05},
    ]).to_csv(path, index=False)
    q = _text(pd.DataFrame([{"board": "Tesla-P4", "app_id": "", "op": "bmm", "B": 4, "M": 64, "N": 64, "K": 64, "grid_x": 8}]))
    with pytest.raises(ReferenceValidationError, match=r"ref.csv: row 2 \(line 3\), column grid_x.*q.csv: row 1"):
        predict_any(bundle, q, "q.csv", reference=read_reference_any(path), reference_where=f"--reference {path}")


def test_the_python_api_names_the_call_it_expects(bundle, tmp_path):
    """A bundle passed where a sub-model is taken failed with AttributeError; a reference frame
    passed to predict_any (which takes the pair read_reference_any returns) with "too many
    values to unpack"."""
    from perfml.errors import InvalidValueError
    from perfml.learned.queries import predict_queries, read_reference

    q = _text(pd.DataFrame([{"board": "GTX-980", "app_id": "vectorAdd", "input_size": 2**20}]))
    with pytest.raises(InvalidValueError, match=r"predict_any\(bundle, queries, where\).*model_for\('described'\)"):
        predict_queries(bundle, q, "q.csv")
    ops = _text(pd.DataFrame([{"board": "Tesla-T4", "op": "add", "B": 64, "H": 1024}]))
    with pytest.raises(InvalidValueError, match=r"model_for\('dlops'\)"):
        predict_operator_queries(bundle, ops, "q.csv")
    path = tmp_path / "ref.csv"
    pd.DataFrame([{"board": "GTX-680", "app_id": "vectorAdd", "input_size": 2**20, "time_ms": 0.5}]).to_csv(path,
                                                                                                        index=False)
    with pytest.raises(InvalidValueError, match="read_reference_any"):
        predict_any(bundle, q, "q.csv", reference=read_reference(path))
    # what the messages name works (docs/profile_import.md calls the sub-model so)
    pair = read_reference_any(path)
    assert predict_any(bundle, q, "q.csv", reference=pair)["basis"].iloc[0] == "reference"
    assert predict_queries(bundle.model_for("described"), q, "q.csv")["predicted_ms"].iloc[0] > 0


def test_an_operator_interval_is_its_op_class_quantile(bundle, dlops_rows):
    model = bundle.models["dlops"]
    rows = dlops_rows.groupby("op").head(1)
    out = predict_operator_queries(model, _op_queries(rows), "q.csv", level=0.8)
    groups = model.metadata_["intervals"]["groups"]
    assert {"BMM", "FC", "EW", "Softmax", "LN", "Conv", "all"} <= set(groups)
    free = ~out["clamped_to_bound"].to_numpy() & ~out["extrapolated"].to_numpy()
    half = np.log(out["upper_ms"] / out["predicted_ms"]).to_numpy()
    want = np.array([groups[OP_CLASS[op]]["log_halfwidth"][LEVELS.index(0.8)] for op in rows["op"]])
    assert free.any() and half[free] == pytest.approx(want[free])


def test_every_board_and_op_of_dlops_is_answered(bundle, data_home):
    """Three rows of every (board, op) of the whole table (not only the training subsample)."""
    from perfml.datasets import load_dlops_runtimes

    every = load_dlops_runtimes(data_home)
    rows = every.groupby(["board", "op"]).sample(n=3, random_state=1)
    out = predict_any(bundle, _op_queries(rows), "q.csv")
    pred = out["predicted_ms"].to_numpy(dtype=float)
    bound = roofline_lower_bound_ms(rows.reset_index(drop=True)).to_numpy()
    assert len(out) == 3 * every.groupby(["board", "op"]).ngroups and np.isfinite(pred).all() and (pred > 0).all()
    assert (pred >= bound * (1 - 1e-12)).all()
    assert (out["lower_ms"] <= pred).all() and (pred <= out["upper_ms"]).all()
    # a call the bundle's training rows ran on that board is answered with its measurement
    assert set(out["basis"]) <= {"training-boards", "measured"}
    assert out["kernel_name"].tolist() == _op_queries(rows)["kernel_name"].tolist()


@pytest.mark.slow
def test_every_row_of_runtimes_is_answered(bundle, data_home):
    """All 64,659 default-configuration rows of runtimes.csv.gz, as queries with their launch."""
    from perfml.learned.training import training_runtimes

    rt = training_runtimes(data_home)
    cols = ["board", "app_id", "input_size", "input_size_2", "block_x", "block_y", "grid_x", "grid_y"]
    queries = _text(rt[cols].astype(object))
    out = predict_any(bundle, queries, "q.csv")
    pred = out["predicted_ms"].to_numpy(dtype=float)
    assert len(out) == len(rt) and np.isfinite(pred).all() and (pred > 0).all()
    # the bundle's own training runs are answered with their measurements (tests/test_measured_runs.py)
    assert set(out["basis"]) == {"training-boards", "measured"}
    assert (out["app_id"] == queries["app_id"]).all()


def test_the_minimum_operator_row_and_conv_padding(bundle):
    q = _text(pd.DataFrame([
        {"board": "Tesla-V100-PCIe-32GB", "op": "gelu", "B": 64, "H": 4096},
        {"board": "H100-SXM", "op": "linear", "B": 8, "M": 512, "N": 1024, "K": 4096},
        {"board": "Tesla-T4", "op": "conv", "B": 8, "in_channels": 64, "out_channels": 64, "kernel_size": 3,
         "input_size": 56, "stride": 1},  # no padding column: 0
    ]))
    out = predict_any(bundle, q, "q.csv")
    assert np.isfinite(out["predicted_ms"]).all() and (out["predicted_ms"] > 0).all()
    assert "NaN" not in out.to_csv()  # the dims of other ops stay empty, nothing invented


def test_an_operator_reference_is_scaled_to_the_other_board(bundle):
    model = bundle.models["dlops"]
    ref = _text(pd.DataFrame([{"board": "Tesla-T4", "op": "bmm", "B": 4, "M": 256, "N": 256, "K": 256, "time_ms": 0.5}]))
    from perfml.learned.operator_queries import check_operator_reference

    checked = check_operator_reference(ref, "ref.csv")
    q = _text(pd.DataFrame([{"board": b, "op": "bmm", "B": 4, "M": 256, "N": 256, "K": 256}
                            for b in ("Tesla-T4", "A100-PCIe-40GB")]
                           + [{"board": "A100-PCIe-40GB", "op": "bmm", "B": 4, "M": 256, "N": 256, "K": 512}]))
    out = predict_operator_queries(model, q, "q.csv", reference=checked)
    assert out["basis"].tolist() == ["reference", "reference", "training-boards"]
    assert out["predicted_ms"].iloc[0] == pytest.approx(0.5)
    m = model.predict(check_operator_queries(q.iloc[[1, 0]].reset_index(drop=True), "x"))
    assert out["predicted_ms"].iloc[1] == pytest.approx(max(0.5 * m[0] / m[1], out["predicted_ms"].iloc[1]))
    assert not out["extrapolated"].iloc[:2].any()


def test_an_operator_reference_on_the_query_board_is_the_prediction(bundle):
    # the T4 measurement of a call answers the T4 query, whatever a V100 row of the same call says
    from perfml.learned.operator_queries import check_operator_reference

    model = bundle.models["dlops"]
    call = {"op": "bmm", "B": 4, "M": 256, "N": 256, "K": 256}
    ref = check_operator_reference(_text(pd.DataFrame([{"board": "Tesla-T4", **call, "time_ms": 0.5},
                                                       {"board": "Tesla-V100-PCIe-32GB", **call, "time_ms": 0.05}])),
                                   "ref.csv")
    q = _text(pd.DataFrame([{"board": b, **call} for b in ("Tesla-T4", "Tesla-V100-PCIe-32GB", "A100-PCIe-40GB")]))
    out = predict_operator_queries(model, q, "q.csv", reference=ref)
    assert out["predicted_ms"].iloc[:2].tolist() == pytest.approx([0.5, 0.05], rel=1e-12)
    assert (out["basis"] == "reference").all()


def test_an_accepted_reference_below_its_boards_roofline_answers_its_own_row_unraised(bundle):
    """A reference within MAX_OVER_SPEC of its board's roofline is accepted (a boost clock, a
    registry figure below the board's), but on its own board its row was raised to the roofline:
    an H100 add measured at 0.15 ms came back as 0.24 ms, its basis still the reference. Carried to
    another board, the answer still respects that board's bound."""
    from perfml.learned.operator_queries import _bounds, check_operator_reference

    model = bundle.models["dlops"]
    call = {"op": "add", "B": 16384, "H": 4096}
    q = check_operator_queries(_text(pd.DataFrame([{"board": "H100-SXM", **call}])), "x")
    bound = float(_bounds(q)[0])
    fast = bound / 1.4  # under the roofline, within the 1.5x the reference check allows
    ref = check_operator_reference(_text(pd.DataFrame([{"board": "H100-SXM", **call, "time_ms": fast}])), "ref.csv")
    queries = _text(pd.DataFrame([{"board": b, **call} for b in ("H100-SXM", "Tesla-T4")]))
    out = predict_operator_queries(model, queries, "q.csv", reference=ref)
    assert out["basis"].tolist() == ["reference", "reference"]
    assert out["predicted_ms"].iloc[0] == pytest.approx(fast, rel=1e-12) and not out["clamped_to_bound"].iloc[0]
    assert out["lower_ms"].iloc[0] < fast < out["upper_ms"].iloc[0]
    t4_bound = float(_bounds(check_operator_queries(queries.iloc[[1]].reset_index(drop=True), "x"))[0])
    assert out["predicted_ms"].iloc[1] >= t4_bound * (1 - 1e-12) and out["lower_ms"].iloc[1] >= t4_bound * (1 - 1e-12)


def test_operator_references_that_disagree_widen_the_interval(bundle):
    from perfml.learned.operator_queries import check_operator_reference

    model = bundle.models["dlops"]
    call = {"op": "bmm", "B": 4, "M": 256, "N": 256, "K": 256}
    q = _text(pd.DataFrame([{"board": "A100-PCIe-40GB", **call}]))

    def predicted(times):
        ref = check_operator_reference(_text(pd.DataFrame([{"board": "Tesla-T4", **call, "time_ms": t} for t in times])),
                                       "ref.csv")
        return predict_operator_queries(model, q, "q.csv", reference=ref).iloc[0]

    both, low, high = predicted([0.1, 1.0]), predicted([0.1]), predicted([1.0])
    assert both["lower_ms"] == pytest.approx(low["lower_ms"], rel=1e-9)
    assert both["upper_ms"] == pytest.approx(high["upper_ms"], rel=1e-9)


def test_an_operator_reference_of_several_launches_answers_each_query_from_its_own(bundle):
    """The same call measured under two launches (say two cuBLAS kernels): a query that names
    its launch gets that launch's time; one that names a launch never measured is refused."""
    from perfml.learned.operator_queries import check_operator_reference

    model = bundle.models["dlops"]
    ref = _text(pd.DataFrame([{"board": "Tesla-T4", "op": "bmm", "B": 4, "M": 256, "N": 256, "K": 256,
                               "grid_x": g, "time_ms": t} for g, t in ((8, 0.5), (16, 0.3))]))
    checked = check_operator_reference(ref, "ref.csv")
    q = _text(pd.DataFrame([{"board": "Tesla-T4", "op": "bmm", "B": 4, "M": 256, "N": 256, "K": 256, "grid_x": g}
                            for g in (16, 8)]))
    out = predict_operator_queries(model, q, "q.csv", reference=checked)
    assert out["basis"].tolist() == ["reference", "reference"]
    assert out["predicted_ms"].tolist() == pytest.approx([0.3, 0.5])
    with pytest.raises(ReferenceValidationError, match=r"ref.csv: row 1 \(line 2\), column grid_x.*none of its rows"):
        predict_operator_queries(model, q.assign(grid_x="32"), "q.csv", reference=checked, reference_where="ref.csv")


def test_a_mixed_reference_file_is_split_and_names_rows_of_the_file(tmp_path):
    path = tmp_path / "ref.csv"
    pd.DataFrame([
        {"board": "GTX-970", "app_id": "my_kernel", "input_size": 4096, "op": "", "B": "", "H": "", "time_ms": 0.2,
         "block_x": 256, "grid_x": 16},
        {"board": "Tesla-T4", "app_id": "", "input_size": "", "op": "add", "B": 64, "H": 1024, "time_ms": 0.03,
         "block_x": "", "grid_x": ""},
        {"board": "Tesla-T4", "app_id": "", "input_size": "", "op": "add", "B": 64, "H": 0, "time_ms": 0.03,
         "block_x": "", "grid_x": ""},
    ]).to_csv(path, index=False)
    with pytest.raises(ReferenceValidationError, match=r"ref.csv: row 3 \(line 4\), column H"):
        read_reference_any(path)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False).iloc[:2]
    frame.to_csv(path, index=False)
    apps, ops = read_reference_any(path)
    assert apps["app_id"].tolist() == ["my_kernel"] and ops["op"].tolist() == ["add"]


# -- bad input (section 4) -------------------------------------------------------------------
GOOD = {"board": "Tesla-T4", "op": "bmm", "B": "4", "M": "64", "N": "64", "K": "64"}


@pytest.mark.parametrize("change, column, words", [
    ({"op": "matmul3d"}, "op", "unknown operator"),
    ({"K": ""}, "K", "a value is required"),
    ({"K": "0"}, "K", "whole number"),
    ({"K": "-4"}, "K", "whole number"),
    ({"K": "2.5"}, "K", "whole number"),
    ({"K": "many"}, "K", "whole number"),
    ({"K": "inf"}, "K", "whole number"),
    ({"board": "RTX-9090"}, "board", "unknown board"),
    ({"block_x": "2048"}, "block_x", "whole number"),
    ({"app_id": "vectorAdd"}, "op", "both an operator"),
    ({"op": ""}, "app_id", "names no kernel"),
    # a dimension the op does not take was ignored: the prediction was the row's without it
    ({"H": "768"}, "H", "op bmm takes B, M, N, K, not H (found '768')"),
    ({"op": "softmax", "H": "768"}, "M", "op softmax takes B, H, not M"),
    ({"stride": "2"}, "stride", "not stride"),
])
def test_bad_operator_queries_exit_2_with_one_line_and_nothing_written(bundle_dir, tmp_path, capsys,
                                                                       change, column, words):
    from perfml.cli import main

    rows = [dict(GOOD), {**GOOD, "app_id": "", **change}]
    for r in rows:
        r.setdefault("app_id", "")
    q, out = tmp_path / "q.csv", tmp_path / "p.csv"
    pd.DataFrame(rows).to_csv(q, index=False)
    code = main(["predict", "--model", str(bundle_dir), "--queries", str(q), "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists(), err
    assert "q.csv: row 2 (line 3)" in err and f"column {column}" in err and words in err, err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_missing_dimension_column_is_named(bundle):
    q = _text(pd.DataFrame([{"board": "Tesla-T4", "op": "softmax", "B": 8}]))
    with pytest.raises(QueryValidationError, match=r"row 1 .*column H: the column is missing; op 'softmax' needs B, H"):
        predict_any(bundle, q, "q.csv")


def test_a_measured_time_column_in_operator_queries_is_refused(bundle):
    from perfml.errors import DatasetSchemaError

    q = _text(pd.DataFrame([{**GOOD, "time_ms": "0.1"}]))
    with pytest.raises(DatasetSchemaError, match="time_ms"):
        predict_any(bundle, q, "q.csv")


@pytest.mark.parametrize("ref_change, column", [
    ({"board": "Tesla-K99"}, "board"),
    ({"time_ms": "0"}, "time_ms"),
    ({"time_ms": ""}, "time_ms"),
    ({"time_ms": "1.7e308"}, "time_ms"),  # beyond MAX_MEASURED_MS: the reference ratio overflowed, silently
    ({"M": "1.5"}, "M"),
    ({"grid_x": "7"}, "grid_x"),  # the query asks for grid_x = 8 on the same run
])
def test_bad_operator_references_exit_2_naming_file_row_column(bundle_dir, tmp_path, capsys, ref_change, column):
    from perfml.cli import main

    good_ref = {**GOOD, "time_ms": "0.05", "grid_x": "8"}
    pd.DataFrame([good_ref, {**good_ref, "board": "Tesla-P4", **ref_change}]).to_csv(tmp_path / "ref.csv", index=False)
    pd.DataFrame([{**GOOD, "board": "A100-PCIe-40GB", "grid_x": "8"}]).to_csv(tmp_path / "q.csv", index=False)
    out = tmp_path / "p.csv"
    code = main(["predict", "--model", str(bundle_dir), "--queries", str(tmp_path / "q.csv"), "--output", str(out),
                 "--reference", str(tmp_path / "ref.csv")])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists(), err
    assert "ref.csv: row 2 (line 3)" in err and f"column {column}" in err and err.count("\n") == 1


def test_a_bundle_without_the_operator_model_names_the_row_and_the_fix(amaris_dir):
    loaded = load_predictor(amaris_dir, data_home=HOME)
    q = _text(pd.DataFrame([{"board": "GTX-980", "app_id": "vectorAdd", "input_size": 1024, "op": ""}, {**GOOD, "app_id": ""}]))
    with pytest.raises(UnsupportedQueryError, match=r"row 2 .*no sub-model for deep-learning operators.*perfml train"):
        predict_any(loaded, q, "q.csv")


def test_errors_in_a_mixed_file_name_the_row_of_the_file(bundle):
    q = _text(pd.DataFrame([
        {"board": "GTX-980", "app_id": "vectorAdd", "input_size": 1024, "op": "", "B": "", "H": ""},
        {"board": "Tesla-T4", "app_id": "", "input_size": "", "op": "add", "B": 4, "H": 8},
        {"board": "GTX-980", "app_id": "nobody_knows", "input_size": 1024, "op": "", "B": "", "H": ""},
    ]))
    with pytest.raises(UnsupportedQueryError, match=r"q.csv: row 3 \(line 4\), column app_id"):
        predict_any(bundle, q, "q.csv")


# -- training rows ---------------------------------------------------------------------------
def test_train_uses_every_corpus_by_default_and_source_narrows(data_home):
    every = corpus_rows(data_home, dlops_max_rows=1000)
    assert set(every) == {"described", "undescribed", "dlops"}
    assert set(every["dlops"]["source"]) == {"neusight-2025"}
    only_ops = corpus_rows(data_home, sources=["neusight-2025"], dlops_max_rows=1000)
    assert set(only_ops) == {"dlops"}
    rodinia = corpus_rows(data_home, sources=["gpuperfpredict-rodinia"])
    assert set(rodinia) == {"undescribed"} and set(rodinia["undescribed"]["source"]) == {"gpuperfpredict-rodinia"}
    assert set(corpus_rows(data_home, corpora=["described"])) == {"described"}


def test_the_operator_subsample_is_seeded_and_keeps_every_board_and_op(data_home):
    a = operator_training_rows(data_home, max_rows=2000, random_state=3)
    b = operator_training_rows(data_home, max_rows=2000, random_state=3)
    assert a["upstream_row"].tolist() == b["upstream_row"].tolist()
    every = operator_training_rows(data_home)
    assert 1900 <= len(a) <= 2100 and a.groupby(["board", "op"]).ngroups == every.groupby(["board", "op"]).ngroups


@pytest.mark.parametrize("args, words", [
    (["--source", "no-such-source"], "--source 'no-such-source'"),
    (["--corpus", "rodinia"], "--corpus 'rodinia'"),
    (["--dlops-rows", "0"], "--dlops-rows"),
    (["--seed", "-1"], "--seed must be a whole number from 0 to 2**32 - 1"),  # was an internal error
    (["--seed", str(2**32)], "--seed must be a whole number from 0 to 2**32 - 1"),
])
def test_train_refuses_unknown_sources_and_corpora(tmp_path, capsys, args, words):
    from perfml.cli import main

    out = tmp_path / "m"
    assert main(["train", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and not out.exists()


def test_corpus_figures_cover_each_op_class(dlops_rows):
    _, _, oof = fit_corpus("dlops", dlops_rows, estimator=_small_operator_model())
    figures = corpus_figures("dlops", dlops_rows, oof)
    assert figures[0]["group"] == "all" and figures[0]["rows"] == len(dlops_rows)
    assert {f["group"] for f in figures[1:]} == {"BMM", "FC", "EW", "Softmax", "LN", "Conv"}
    assert all(0 < f["coverage"] <= 100 and f["mean_relative_width"] > 0 for f in figures)


def test_cli_train_writes_a_bundle_of_the_chosen_corpora_and_prints_their_figures(tmp_path, capsys, monkeypatch):
    """`perfml train` end to end on two small sources (BSPGPU: nine apps on 5 boards; 600 operator rows)."""
    from perfml.cli import main
    from perfml.learned import regressors
    from perfml.learned.operator_model import _regressor

    monkeypatch.setitem(regressors._DEFAULTS, "xgboost", {**regressors._DEFAULTS["xgboost"], **FAST})
    monkeypatch.setattr(_regressor, "DEFAULT_LEARNER_PARAMS", {**_regressor.DEFAULT_LEARNER_PARAMS, **FAST})
    out = tmp_path / "m"
    code = main(["--quiet", "train", "--out", str(out), "--source", "BSPGPU", "--source", "neusight-2025",
                 "--dlops-rows", "600", "--n-jobs", "1"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    bundle = load_predictor(out, data_home=HOME)
    # the operators at both tiers: spec-only, and calibrated from each board's own add calls
    assert set(bundle.models) == {"described", "dlops", "dlops-calibrated"}
    assert bundle.models["dlops-calibrated"].metadata_["calibration"] == {"column": "op", "kernels": ["add"]}
    assert bundle.metadata_["training_sources"] == ["BSPGPU", "neusight-2025"]
    for line in ("described all:", "dlops all:", "dlops BMM:", "dlops Conv:", "dlops-calibrated all:",
                 "dlops-calibrated EW:"):
        assert line in printed.out
    n_add = int((bundle.models["dlops-calibrated"].metadata_["training_rows"]))
    m = re.search(r"dlops-calibrated all: (\d+) rows", printed.out)
    assert int(m.group(1)) < n_add  # its add calls characterize the boards and are not scored
    m = re.search(r"described all: (\d+) rows, leave-one-board-out MAPE ([\d.]+)%", printed.out)
    assert int(m.group(1)) == bundle.models["described"].metadata_["training_rows"]
    assert bundle.metadata_["figures"]["described"][0]["mape"] == pytest.approx(float(m.group(2)), abs=0.005)
    # BSPGPU ran each app at one block size: no launch to hold out, so no unmeasured-launch calibration
    # (such a row keeps the extrapolation rule; tests/test_unmeasured_launch_interval.py has the other case)
    assert "unmeasured_launch" not in bundle.models["described"].metadata_["intervals"]
    assert "unmeasured launch" not in printed.out
    assert "unmeasured_launch" not in bundle.models["dlops"].metadata_["intervals"]


def test_cli_train_without_the_calibrated_tier(tmp_path, capsys, monkeypatch):
    from perfml.cli import main
    from perfml.learned.operator_model import _regressor

    monkeypatch.setattr(_regressor, "DEFAULT_LEARNER_PARAMS", {**_regressor.DEFAULT_LEARNER_PARAMS, **FAST})
    out = tmp_path / "m"
    code = main(["--quiet", "train", "--out", str(out), "--source", "neusight-2025", "--dlops-rows", "600",
                 "--n-jobs", "1", "--no-calibrated-tier"])
    assert code == 0, capsys.readouterr().err
    assert set(load_predictor(out, data_home=HOME).models) == {"dlops"}


@pytest.mark.parametrize("dtype, ok", [("float16", False), ("bfloat16", False), ("banana", False),
                                       ("float32", True), ("FP32", True), ("torch.float32", True), ("", True)])
def test_an_operator_dtype_other_than_fp32_is_refused(bundle, dtype, ok):
    # the corpus and the work model are FP32: an FP16 call was silently answered as FP32
    q = _text(pd.DataFrame([{**GOOD, "dtype": dtype}]))
    if ok:
        assert predict_any(bundle, q, "q.csv")["predicted_ms"].iloc[0] > 0
    else:
        with pytest.raises(QueryValidationError, match=r"row 1 \(line 2\), column dtype: perfml models FP32"):
            predict_any(bundle, q, "q.csv")
