"""Experiment files: every sub-table is checked, learner parameters are bounded (issue 14, sections 4 and 5).

Each malformed file must give an ExperimentSpecError naming the file, the table and the key
(never a traceback of another type, never minutes of work). The base file is the shape of
experiments/unseen_boards.toml.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfml.errors import ExperimentSpecError
from perfml.experiments import spec as spec_module
from perfml.experiments.spec import load_experiment


def _q(text: str) -> str:
    """A TOML basic string (json.dumps would write non-BMP characters as surrogate pairs, not TOML)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return _q(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_q(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


def dump(doc: dict) -> str:
    """A tiny TOML writer for the shapes of an experiment file (scalars, inline tables, [[models]])."""
    lines = [f"{_q(k)} = {_toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict) and k != "models"]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines += [f"[{_q(k)}]"] + [f"{_q(kk)} = {_toml_value(vv)}" for kk, vv in v.items()]
    models = doc.get("models")
    if isinstance(models, list) and all(isinstance(m, dict) for m in models):
        for m in models:
            lines += ["[[models]]"] + [f"{_q(kk)} = {_toml_value(vv)}" for kk, vv in m.items()]
    elif "models" in doc:
        lines.insert(0, f"models = {_toml_value(models)}")
    return "\n".join(lines) + "\n"


def base() -> dict:
    return {
        "name": "x",
        "description": "a test experiment",
        "protocol": "leave-one-board-out",
        "data": {"source": "gpuperfpredict-nca", "boards": ["GTX-680", "Tesla-K40"], "apps": ["vectorAdd"]},
        "published": {"suite": "NCA", "methods": ["RandomForest"]},
        "models": [
            {"name": "hybrid", "kind": "learned", "learner": "xgboost", "target": "residual",
             "params": {"n_estimators": 200, "max_depth": 3, "learning_rate": 0.05},
             "features": {"profiles": True, "subset": ["prof_", "board_"]}, "tune": {"n_trials": 20, "n_splits": 3},
             "baseline": "transfer", "shrinkage": "auto", "register": True},
            {"name": "bsp", "kind": "closed_form", "model": "bsp"},
        ],
    }


def _load(tmp_path, doc):
    path = tmp_path / "exp.toml"
    path.write_text(dump(doc))
    return load_experiment(path), path


def test_the_base_document_is_valid(tmp_path):
    spec, _ = _load(tmp_path, base())
    assert [m.name for m in spec.models] == ["hybrid", "bsp"] and spec.models[0].tune["n_trials"] == 20


def _set(doc, where, key, value):
    table = {"top": doc, "data": doc["data"], "published": doc["published"], "model": doc["models"][0],
             "params": doc["models"][0]["params"], "features": doc["models"][0]["features"],
             "tune": doc["models"][0]["tune"], "closed": doc["models"][1]}[where]
    table[key] = value
    return doc


@pytest.mark.parametrize(
    "where, key, value, named",
    [
        ("params", "n_estimators", 100_000_000, "10000"),
        ("params", "n_estimators", 0, "n_estimators"),
        ("params", "max_depth", 1000, "32"),
        ("params", "learning_rate", 0.0, "learning_rate"),
        ("params", "learning_rate", 2.0, "learning_rate"),
        ("params", "learning_rate", float("nan"), "learning_rate"),
        ("params", "subsample", "all", "subsample"),
        ("params", "n_jobs", 64, "n_jobs"),
        ("params", "max_depth", True, "max_depth"),
        ("tune", "n_trials", 10**7, "1000"),
        ("tune", "n_trials", 2.5, "n_trials"),
        ("tune", "n_splits", 1, "n_splits"),
        ("tune", "n_splits", 51, "50"),
        ("tune", "sampler", "grid", "sampler"),
        ("features", "profiles", "yes", "profiles"),
        ("features", "board_features", "sideways", "board_features"),
        ("features", "subset", "prof_", "subset"),
        ("features", "colour", 1, "colour"),
        ("features", "wave_scaling", "sometimes", "wave_scaling"),
        ("features", "wave_scaling", 1, "wave_scaling"),
        ("model", "baseline", "oracle", "baseline"),
        ("model", "shrinkage", 1.5, "shrinkage"),
        ("model", "shrinkage", "sometimes", "shrinkage"),
        ("model", "register", 1, "register"),
        ("model", "target", "linear", "target"),
        ("model", "params", 5, "params"),
        ("model", "tune", [1, 2], "tune"),
        ("closed", "learner", "xgboost", "learner"),
        ("closed", "model", "gpt", "model"),
        ("data", "boards", "GTX-680", "boards"),
        ("data", "boards", ["RTX-9090"], "RTX-9090"),
        ("data", "boards", ["GTX 680"], "GTX-680"),
        ("data", "block_sizes", [0, 32], "block_sizes"),
        ("data", "undescribed", "no", "undescribed"),
        ("data", "sorce", "x", "sorce"),
        ("published", "suite", "SPEC", "suite"),
        ("published", "methods", ["GPT"], "methods"),
        ("published", "year", 2016, "year"),
        ("top", "data", 3, "data"),
        ("top", "models", 3, "models"),
        ("top", "protocol", "random", "protocol"),
        ("top", "version", 7, "version"),
        ("top", "name", "", "name"),
    ],
)
def test_every_sub_table_is_checked(tmp_path, where, key, value, named):
    doc = _set(base(), where, key, value)
    path = tmp_path / "exp.toml"
    path.write_text(dump(doc))
    with pytest.raises(ExperimentSpecError) as info:
        load_experiment(path)
    message = str(info.value)
    assert str(path) in message and named in message and "\n" not in message


# -- the whole class: random malformed files ---------------------------------------------------
_ANY = st.recursive(
    st.one_of(st.booleans(), st.integers(min_value=-(2**63), max_value=2**63 - 1), st.floats(),
              st.text(max_size=12)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text("abcdefgh_", min_size=1, max_size=6), inner, max_size=3)),
    max_leaves=6,
)
_TABLES = {
    "top": None, "data": spec_module.DATA, "published": spec_module.PUBLISHED, "params": spec_module.LEARNER_PARAMS["xgboost"],
    "features": spec_module.FEATURES, "tune": spec_module.TUNE, "closed": spec_module.MODEL_CLOSED_FORM,
}


@st.composite
def malformed(draw):
    """A base document with one entry made wrong: an unknown key, or a known key with a disallowed value."""
    doc = base()
    where = draw(st.sampled_from(sorted(_TABLES)))
    schema = _TABLES[where]
    if where == "top" or draw(st.booleans()):
        known = set(schema or spec_module.TOP) | {"models"}
        key = draw(st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=10).filter(lambda k: k not in known))
        value = draw(_ANY)
    else:
        key = draw(st.sampled_from(sorted(k for k, rule in schema.items() if rule is not None)))
        value = draw(_ANY.filter(lambda v, rule=schema[key]: not rule(v)))
    return _set(doc, where, key, value), key


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])
@given(case=malformed())
def test_random_malformed_experiments_are_typed_errors_naming_the_key(tmp_path, case):
    doc, key = case
    path = tmp_path / "exp.toml"
    path.write_text(dump(doc))
    with pytest.raises(ExperimentSpecError) as info:
        load_experiment(path)
    assert str(path) in str(info.value) and repr(key)[1:-1] in str(info.value)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200))
def test_arbitrary_text_is_valid_or_a_typed_error(tmp_path, text):
    path = tmp_path / "exp.toml"
    path.write_bytes(text.encode("utf-8", "replace"))
    try:
        load_experiment(path)
    except ExperimentSpecError as exc:
        assert str(path) in str(exc)



_TABLE2_HEAD = 'name = "x"\ndescription = "d"\nkind = "bsp_table2"\n'


@pytest.mark.parametrize("key, text", [
    ("protocol", 'protocol = "leave-one-board-out"\n'),
    ("data", '[data]\nsource = "gpuperfpredict-nca"\n'),
    ("models", '[[models]]\nname = "bsp"\nkind = "closed_form"\nmodel = "bsp"\n'),
    ("published", '[published]\nsuite = "NCA"\nmethods = ["SVM"]\n'),
])
def test_a_table2_experiment_refuses_what_it_would_ignore(tmp_path, key, text):
    # kind = "bsp_table2" runs the paper's Table II from its own runs: a protocol, data
    # selection or models written into the file were dropped without a word
    path = tmp_path / "t2.toml"
    path.write_text(_TABLE2_HEAD + text)
    with pytest.raises(ExperimentSpecError, match=rf"takes only \[table2\]; remove '{key}'"):
        load_experiment(path)
    path.write_text(_TABLE2_HEAD + '[table2]\nreference_board = "GTX-680"\n')
    assert load_experiment(path).table2 == {"reference_board": "GTX-680"}


def test_a_comparison_refuses_a_table2_table(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text(dump(base()) + '[table2]\nreference_board = "GTX-680"\n')
    with pytest.raises(ExperimentSpecError, match=r"\[table2\] belongs to kind = \"bsp_table2\""):
        load_experiment(path)


@pytest.mark.parametrize("name", ["t:tiers", "tab\there", "line\nbreak", "Default", " padded", "x" * 201, "../up"])
def test_an_experiment_name_report_or_mlflow_cannot_keep_apart_is_refused(tmp_path, name):
    # "t:tiers" lost its table to the tiers of "t" in `report --json`; a tab garbled the titles;
    # "Default" is MLflow's own experiment, which report leaves out; > 500 characters failed in MLflow
    doc = base()
    doc["name"] = name
    with pytest.raises(ExperimentSpecError, match=r"\[top level\] name must be a name of letters, digits, spaces"):
        _load(tmp_path, doc)


@pytest.mark.parametrize("name", ["unseen_boards", "my experiment 2", "dlops-newest.v2"])
def test_plain_experiment_names_are_accepted(tmp_path, name):
    doc = base()
    doc["name"] = name
    assert _load(tmp_path, doc)[0].name == name


@pytest.mark.parametrize("tier", [None, "spec"])
@pytest.mark.parametrize("key, value", [("calibration_apps", ["vectorAdd"]), ("calibration_source", "gpuperfpredict-nca")])
def test_calibration_runs_named_without_the_calibrated_tier_are_refused(tmp_path, tier, key, value):
    """The target's calibration runs are taken under tier = "calibrated" only: named under
    the spec tier (or none), they changed nothing, and the file read as calibrated."""
    doc = base()
    doc["characterization"] = {key: value, **({"tier": tier} if tier else {})}
    with pytest.raises(ExperimentSpecError, match=rf"\[characterization\] {key} names the target's calibration runs, "
                                                  r"which are used only with tier = \"calibrated\""):
        _load(tmp_path, doc)
    doc["characterization"]["tier"] = "calibrated"
    assert _load(tmp_path, doc)[0].characterization[key] == value
