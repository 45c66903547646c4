"""Experiment definitions (TOML files under ``experiments/``), parsed and checked.

An experiment names the data it uses, a protocol, and the models compared side by
side::

    name = "unseen_boards"
    description = "..."
    protocol = "leave-one-board-out"        # see perfml.learned.PROTOCOLS
    [data]
    source = "gpuperfpredict-nca"           # runtimes.csv `source`, or omit for all
    [[models]]
    name = "hybrid_xgboost"
    kind = "learned"                        # learned | closed_form
    learner = "xgboost"                     # see perfml.learned.LEARNERS
    target = "residual"
    params = { max_depth = 6 }              # learner hyper-parameters (optional)
    features = { profiles = true }          # FeatureBuilder switches, `subset` prefixes
    tune = { n_trials = 20 }                # Optuna tuning before the evaluation (optional)
    [[models]]
    name = "bsp"
    kind = "closed_form"
    model = "bsp"                           # bsp | roofline | hongkim
    [published]                             # optional: published figures to show beside ours
    methods = ["RandomForest", "SVM", "LinearRegression", "BSP-analytical"]
    suite = "NCA"

Every table is checked against the schema below (:data:`TOP`, :data:`DATA`,
:data:`MODEL_LEARNED`, :data:`MODEL_CLOSED_FORM`, :data:`FEATURES`, :data:`TUNE`,
:data:`PUBLISHED`, :data:`TABLE2`, :data:`LEARNER_PARAMS`): an unknown key, a value of the
wrong type or out of range is an :class:`~perfml.errors.ExperimentSpecError` naming the
file, the table, the key and the allowed values. Learner parameters are bounded so that a
small file cannot ask for unbounded work; the limits (e.g. ``n_estimators <= 10000``,
``max_depth <= 32``, ``tune.n_trials <= 1000``) are named in the error. They are far above
anything the shipped experiments use (200 trees of depth 3, 20 trials) and well below what
would run for hours on a workstation.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfml._files import read_versioned
from perfml.errors import ExperimentSpecError
# the regressor's own lists of valid values, so an experiment file accepts exactly what it does
from perfml.learned.regressors import BASELINES, BOARD_FEATURES, COMPUTE_RATES, LEARNERS, TARGETS

KINDS = ("learned", "closed_form")
CLOSED_FORM = ("bsp", "roofline", "hongkim")
EXPERIMENT_KINDS = ("comparison", "bsp_table2")
SUITES = ("NCA", "Rodinia", "NeuSight")
PUBLISHED_METHODS = ("LinearRegression", "RandomForest", "SVM", "BSP-analytical")
#: methods of NeuSight's published per-operator table (dlops_published_errors.csv)
NEUSIGHT_METHODS = ("neusight", "roofline", "habitat", "li_et_al")
#: the data an experiment runs on: runtimes.csv (nine apps, Rodinia) or dlops_runtimes.csv (NeuSight)
CORPORA = ("runtimes", "dlops")
TABLE2_RUNS = ("script", "curated", "gpuperfpredict")

#: largest number of boosting rounds / trees an experiment may ask for
MAX_ESTIMATORS = 10_000
#: deepest tree an experiment may ask for
MAX_DEPTH = 32
#: most Optuna trials of a ``tune`` table
MAX_TRIALS = 1000
#: fold counts allowed for inner cross-validation
SPLITS = (2, 50)


# -- a value rule: (description, check) --------------------------------------------------------
class Rule:
    """What a key accepts: ``allowed`` describes it for messages, ``check(value)`` is true when allowed."""

    def __init__(self, allowed: str, check):
        self.allowed = allowed
        self.check = check

    def __call__(self, value) -> bool:
        return bool(self.check(value))


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def integer(low: int, high: int) -> Rule:
    return Rule(f"an integer in [{low}, {high}]", lambda v: _is_int(v) and low <= v <= high)


def number(low: float, high: float, *, open_low: bool = False) -> Rule:
    bracket = "(" if open_low else "["
    return Rule(f"a number in {bracket}{low:g}, {high:g}]",
                lambda v: _is_num(v) and (v > low if open_low else v >= low) and v <= high)


def one_of(*values) -> Rule:
    return Rule("one of " + ", ".join(repr(v) for v in values), lambda v: isinstance(v, str) and v in values)


def either(a: Rule, b: Rule) -> Rule:
    return Rule(f"{a.allowed} or {b.allowed}", lambda v: a(v) or b(v))


BOOL = Rule("true or false", lambda v: isinstance(v, bool))
TEXT = Rule("a non-empty string", lambda v: isinstance(v, str) and v.strip() != "")
#: a model's name becomes part of MLflow metric keys ("mape/<name>") and artifact paths, which
#: refuse "..", a leading "/" and most punctuation; refused here, before any run is started
MODEL_NAME = Rule(
    "a name of letters, digits, '_', '-' and '.' (at most 100, starting with a letter or digit, no '..')",
    lambda v: isinstance(v, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}", v) is not None and ".." not in v,
)

#: an experiment's name names its MLflow experiment (at most 500 characters there), its registered
#: model and the keys of `perfml report --json`, where ':' separates the name from a table
#: ("<name>:tiers"): an experiment named "t:tiers" lost its table to the tiers of "t"; a tab
#: or line break garbled the report's titles; "Default" is MLflow's own experiment, which
#: `perfml report` leaves out
EXPERIMENT_NAME = Rule(
    "a name of letters, digits, spaces, '_', '-' and '.' (at most 200, starting with a letter or digit; "
    "not 'Default', MLflow's own experiment)",
    lambda v: isinstance(v, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\- ]{0,199}", v) is not None
    and v.strip() == v and v != "Default",
)


def list_of(rule: Rule, *, max_len: int = 1000, unique: bool = True) -> Rule:
    def check(v):
        return (isinstance(v, list) and 0 < len(v) <= max_len and all(rule(x) for x in v)
                and (not unique or len(set(map(repr, v))) == len(v)))

    return Rule(f"a non-empty list (at most {max_len}, no repeats) of {rule.allowed}", check)


# -- the schema ------------------------------------------------------------------------------------
#: format name an experiment file may declare (with ``version = 1``)
EXPERIMENT_FORMAT = "perfml-experiment"
EXPERIMENT_VERSIONS = (1,)
TOP = {
    "format": one_of(EXPERIMENT_FORMAT),
    "version": integer(1, 1),
    "name": EXPERIMENT_NAME,
    "description": TEXT,
    "kind": one_of(*EXPERIMENT_KINDS),
    "protocol": TEXT,  # checked against PROTOCOLS below (imported lazily)
    "data": None,
    "models": None,
    "published": None,
    "table2": None,
    "characterization": None,
}
#: name suffixes that mark the calibrated version of a model (see :attr:`ModelSpec.family`)
TIER_SUFFIXES = ("_characterized", "_calibrated")
#: ``[characterization]``: which tier of board knowledge the models may use (issue 11 §3)
CHARACTERIZATION_TIERS = ("spec", "calibrated")
CHARACTERIZATION = {
    "tier": one_of(*CHARACTERIZATION_TIERS),
    "calibration_apps": list_of(TEXT, max_len=20),
    "calibration_ops": list_of(TEXT, max_len=20),
    # runtimes.csv `source` of the calibration runs when it is not the scored rows' own
    # (Rodinia boards calibrated by their vectorAdd runs of the nine-app source)
    "calibration_source": TEXT,
}
DATA = {
    "corpus": one_of(*CORPORA),
    "split": one_of("train", "test"),
    "ops": list_of(TEXT, max_len=50),
    "max_train_rows_per_group": integer(1, 10**7),
    "source": TEXT,
    "boards": list_of(TEXT),
    "apps": list_of(TEXT),
    "block_sizes": list_of(integer(1, 1024)),
    "undescribed": BOOL,
}
FEATURES = {
    "analytical": BOOL,
    "profiles": BOOL,
    "app_identity": BOOL,
    "board_features": one_of(*BOARD_FEATURES),
    "subset": list_of(TEXT, max_len=100),
    "characterization": BOOL,
    "closed_form_peaks": one_of("spec", "characterized"),
    "transfer": either(BOOL, one_of("auto")),
    "tiles": BOOL,
    "wave_base": BOOL,
    "launch_floor": BOOL,
    "board_identity": either(BOOL, one_of("auto")),
    "baseline_selection": one_of("spread", "transfer-cv"),
    "compute_rate": one_of(*COMPUTE_RATES),
    "wave_scaling": either(BOOL, one_of("auto")),
    "bound_floor": BOOL,
}
#: what a learned model of the dlops corpus (OperatorRegressor) takes
DLOPS_FEATURES = ("characterization", "transfer", "tiles", "wave_base", "launch_floor", "board_identity")
TUNE = {
    "n_trials": integer(1, MAX_TRIALS),
    "n_splits": integer(*SPLITS),
}
PUBLISHED = {
    "suite": one_of(*SUITES),
    "methods": list_of(one_of(*PUBLISHED_METHODS, *NEUSIGHT_METHODS),
                       max_len=len(PUBLISHED_METHODS) + len(NEUSIGHT_METHODS)),
}
TABLE2 = {
    "runs": list_of(one_of(*TABLE2_RUNS), max_len=len(TABLE2_RUNS)),
    "reference_board": TEXT,
}
_FRACTION = number(0.0, 1.0, open_low=True)
_PENALTY = number(0.0, 1e6)
LEARNER_PARAMS: dict[str, dict[str, Rule]] = {
    "xgboost": {
        "n_estimators": integer(1, MAX_ESTIMATORS),
        "max_depth": integer(1, MAX_DEPTH),
        "learning_rate": _FRACTION,
        "subsample": _FRACTION,
        "colsample_bytree": _FRACTION,
        "colsample_bylevel": _FRACTION,
        "colsample_bynode": _FRACTION,
        "min_child_weight": _PENALTY,
        "reg_lambda": _PENALTY,
        "reg_alpha": _PENALTY,
        "gamma": _PENALTY,
        "max_bin": integer(2, 1024),
        "max_leaves": integer(0, 2**16),
        "objective": one_of("reg:squarederror", "reg:absoluteerror", "reg:pseudohubererror"),
    },
    "hgb": {
        "max_iter": integer(1, MAX_ESTIMATORS),
        "learning_rate": _FRACTION,
        "max_leaf_nodes": integer(2, 2**16),
        "max_depth": integer(1, MAX_DEPTH),
        "min_samples_leaf": integer(1, 10**6),
        "l2_regularization": _PENALTY,
        "max_bins": integer(2, 255),
    },
    "linear": {
        "fit_intercept": BOOL,
        "positive": BOOL,
    },
    "svr": {
        "C": number(0.0, 1e6, open_low=True),
        "epsilon": number(0.0, 1e3),
        "gamma": either(one_of("scale", "auto"), number(0.0, 1e6, open_low=True)),
        "kernel": one_of("rbf", "linear", "poly", "sigmoid"),
        "degree": integer(1, 10),
        "max_iter": integer(1, 10**7),
    },
    "random_forest": {
        "n_estimators": integer(1, MAX_ESTIMATORS),
        "max_depth": integer(1, MAX_DEPTH),
        "min_samples_leaf": integer(1, 10**6),
        "min_samples_split": integer(2, 10**6),
        "max_features": either(one_of("sqrt", "log2"), _FRACTION),
        "bootstrap": BOOL,
    },
}
MODEL_LEARNED = {
    "name": MODEL_NAME,
    "kind": one_of(*KINDS),
    "learner": None,  # checked against LEARNERS
    "target": None,  # checked against TARGETS
    "params": None,
    "features": None,
    "tune": None,
    "baseline": one_of(*BASELINES),
    "shrinkage": either(one_of("auto"), number(0.0, 1.0)),
    "register": BOOL,
}
MODEL_CLOSED_FORM = {
    "name": MODEL_NAME,
    "kind": one_of(*KINDS),
    "model": one_of(*CLOSED_FORM),
    "characterized": BOOL,
}


@dataclass(frozen=True)
class ModelSpec:
    """One model of an experiment."""

    name: str
    kind: str
    learner: str | None = None
    target: str = "residual"
    model: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    features: dict[str, Any] = field(default_factory=dict)
    tune: dict[str, Any] = field(default_factory=dict)
    baseline: str = "transfer"
    shrinkage: object = "auto"
    register: bool = True
    characterized: bool = False

    @property
    def uses_characterization(self) -> bool:
        """Whether the model reads board characterizations (closed form or learned)."""
        return bool(self.characterized or self.features.get("characterization")
                    or self.features.get("closed_form_peaks") == "characterized")

    @property
    def tier(self) -> str:
        """The tier of board knowledge the model uses: ``"calibrated"`` or ``"spec"`` (issue 11 §3)."""
        return "calibrated" if self.uses_characterization else "spec"

    @property
    def family(self) -> str:
        """The model's name without a tier suffix (``_characterized``, ``_calibrated``): the
        spec-only and calibrated versions of one model share it, so a report sets them side by side."""
        for suffix in TIER_SUFFIXES:
            if self.name.endswith(suffix) and len(self.name) > len(suffix):
                return self.name[: -len(suffix)]
        return self.name


@dataclass(frozen=True)
class ExperimentSpec:
    """A parsed experiment definition."""

    name: str
    description: str
    kind: str
    protocol: str | None
    data: dict[str, Any]
    models: tuple[ModelSpec, ...]
    published: dict[str, Any]
    table2: dict[str, Any]
    path: str
    characterization: dict[str, Any] = field(default_factory=dict)

    @property
    def corpus(self) -> str:
        """``"runtimes"`` (runtimes.csv, the default) or ``"dlops"`` (dlops_runtimes.csv)."""
        return self.data.get("corpus", "runtimes")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_table(path: Path, table: str, raw, schema: dict[str, Rule | None]) -> dict:
    """Check one table: a TOML table, known keys only, every ruled value allowed."""
    if not isinstance(raw, dict):
        raise ExperimentSpecError(f"{path}: `{table}` must be a table, found {type(raw).__name__} {_short(raw)}")
    unknown = sorted(set(raw) - set(schema))
    if unknown:
        raise ExperimentSpecError(
            f"{path}: [{table}] unknown key {unknown[0]!r}; allowed keys: {', '.join(sorted(schema))}"
        )
    for key, rule in schema.items():
        if rule is not None and key in raw and not rule(raw[key]):
            raise ExperimentSpecError(
                f"{path}: [{table}] {key} must be {rule.allowed}, found {_short(raw[key])}; fix the value"
            )
    return raw


def _check_model(path: Path, i: int, entry, learners, targets) -> ModelSpec:
    table = f"models[{i}]"
    if not isinstance(entry, dict):
        raise ExperimentSpecError(f"{path}: `{table}` must be a table ([[models]]), found {_short(entry)}")
    kind = entry.get("kind")
    if kind not in KINDS:
        raise ExperimentSpecError(f"{path}: [{table}] kind must be one of {', '.join(KINDS)}, found {_short(kind)}")
    if "name" not in entry:
        raise ExperimentSpecError(f"{path}: [{table}] every model needs a `name` (a non-empty string)")
    if kind == "closed_form":
        _check_table(path, table, entry, MODEL_CLOSED_FORM)
        if "model" not in entry:
            raise ExperimentSpecError(f"{path}: [{table}] model must be one of {', '.join(CLOSED_FORM)}, found nothing")
        return ModelSpec(name=entry["name"], kind=kind, model=entry["model"],
                         characterized=bool(entry.get("characterized", False)))
    schema = dict(MODEL_LEARNED)
    schema["learner"] = one_of(*learners)
    schema["target"] = one_of(*targets)
    _check_table(path, table, entry, schema)
    if "learner" not in entry:
        raise ExperimentSpecError(f"{path}: [{table}] learner must be one of {', '.join(learners)}, found nothing")
    params = _check_table(path, f"{table}.params", entry.get("params", {}), LEARNER_PARAMS[entry["learner"]])
    features = _check_table(path, f"{table}.features", entry.get("features", {}), FEATURES)
    tune = _check_table(path, f"{table}.tune", entry.get("tune", {}), TUNE)
    if "tune" in entry:
        from perfml.learned.tuning import SEARCH_SPACES

        if entry["learner"] not in SEARCH_SPACES:  # it was a KeyError once the run had started
            raise ExperimentSpecError(
                f"{path}: [{table}.tune] learner {entry['learner']!r} has no search space to tune (it has no "
                f"hyperparameters perfml tunes); tune one of {', '.join(SEARCH_SPACES)}, or remove the tune table")
    if entry.get("target", "residual") == "residual" and features.get("analytical") is False:
        raise ExperimentSpecError(
            f"{path}: [{table}] target 'residual' needs features.analytical = true (it learns on top of the closed-form model)"
        )
    values = {k: v for k, v in entry.items() if k not in ("params", "features", "tune")}
    return ModelSpec(**values, params=dict(params), features=dict(features), tune=dict(tune))


def _check_boards(path: Path, boards) -> None:
    """``data.boards`` names boards of the registry by their canonical names (as runtimes.csv does)."""
    from perfml.boards import resolve_board_name
    from perfml.errors import PerfmlError

    for board in boards:
        try:
            canonical = resolve_board_name(board)
        except PerfmlError:
            raise ExperimentSpecError(
                f"{path}: [data] `boards` names {board!r}, which is not in the board registry; see `perfml boards list`"
            ) from None
        if canonical != board:
            raise ExperimentSpecError(f"{path}: [data] `boards` must use canonical names: write {canonical!r} for {board!r}")


#: protocols for runtime rows only, and why: the dlops corpus names its calls by op and
#: dimensions, and has no app_id, input size or launch to group them by
RUNTIME_ROW_PROTOCOLS = {
    **dict.fromkeys(("leave-one-app-out", "size-extrapolation", "grouped-kfold", "size-cv",
                     "leave-one-board-and-block-size-out", "leave-one-board-and-kernel-block-size-out"),
                    "groups runtime rows by their kernel (app_id), size or launch, which the dlops corpus's calls "
                    "do not have"),
    "reference-board": "trains on the GTX-680's rows, a board of runtimes.csv the dlops corpus does not hold",
}


def _check_corpus(path: Path, corpus: str, data: dict, models, entries, published: dict, characterization: dict,
                  protocol: str | None = None) -> None:
    """Keys (and protocols) that belong to one corpus only are refused on the other (named in the error)."""
    if corpus == "runtimes":
        for key in ("split", "ops"):
            if key in data:
                raise ExperimentSpecError(f"{path}: [data] {key} selects rows of the dlops corpus; add corpus = \"dlops\" or remove it")
        if "calibration_ops" in characterization:
            raise ExperimentSpecError(f"{path}: [characterization] calibration_ops is for corpus = \"dlops\"; use calibration_apps")
        if published.get("suite") == "NeuSight":
            raise ExperimentSpecError(f"{path}: [published] suite 'NeuSight' needs [data] corpus = \"dlops\"")
        for i, model in enumerate(models):
            dlops_only = sorted(k for k in ("tiles", "wave_base", "launch_floor", "board_identity") if k in model.features)
            if model.features.get("transfer") == "auto":
                dlops_only.insert(0, "transfer = 'auto'")
            if dlops_only:
                raise ExperimentSpecError(f"{path}: [models[{i}].features] {dlops_only[0]} is for corpus = \"dlops\" (OperatorRegressor); remove it")
        return
    from perfml.datasets import DLOPS_OPS
    from perfml.learned.protocols import PROTOCOLS

    if protocol in RUNTIME_ROW_PROTOCOLS:
        # a KeyError deep in the splitter (grouped-kfold, size-extrapolation) or a message about X before
        others = ", ".join(p for p in PROTOCOLS if p not in RUNTIME_ROW_PROTOCOLS)
        raise ExperimentSpecError(f"{path}: [top level] protocol {protocol!r} {RUNTIME_ROW_PROTOCOLS[protocol]}; "
                                  f"use one of {others}")
    for key in ("source", "apps", "block_sizes", "undescribed"):
        if key in data:
            raise ExperimentSpecError(f"{path}: [data] {key} selects rows of runtimes.csv, not of the dlops corpus; remove it")
    for op in data.get("ops", []):
        if op not in DLOPS_OPS:
            raise ExperimentSpecError(f"{path}: [data] ops names {op!r}; allowed: {', '.join(DLOPS_OPS)}")
    for op in characterization.get("calibration_ops", []):
        if op not in DLOPS_OPS:
            raise ExperimentSpecError(f"{path}: [characterization] calibration_ops names {op!r}; allowed: {', '.join(DLOPS_OPS)}")
    if "calibration_apps" in characterization:
        raise ExperimentSpecError(f"{path}: [characterization] calibration_apps is for runtimes.csv; use calibration_ops (e.g. [\"add\"])")
    if published and published.get("suite") != "NeuSight":
        raise ExperimentSpecError(f"{path}: [published] suite must be 'NeuSight' for the dlops corpus")
    for method in published.get("methods", []):
        if method not in NEUSIGHT_METHODS:
            raise ExperimentSpecError(f"{path}: [published] methods names {method!r}; NeuSight's are {', '.join(NEUSIGHT_METHODS)}")
    for i, (model, entry) in enumerate(zip(models, entries)):
        table = f"models[{i}]"
        if model.kind == "closed_form":
            if model.model != "roofline":
                raise ExperimentSpecError(f"{path}: [{table}] the dlops corpus has one closed-form model, 'roofline'; found {model.model!r}")
            continue
        if model.learner != "xgboost":
            raise ExperimentSpecError(f"{path}: [{table}] learner must be 'xgboost' for the dlops corpus (OperatorRegressor), found {model.learner!r}")
        if entry.get("target", "residual") != "residual" or "baseline" in entry or model.tune:
            raise ExperimentSpecError(
                f"{path}: [{table}] the dlops model learns the residual over the roofline; target, baseline and tune "
                "do not apply (shrinkage = 0.0 asks for the transfer baseline alone)"
            )
        if not (model.shrinkage == "auto" or model.shrinkage == 0):
            raise ExperimentSpecError(f"{path}: [{table}] shrinkage for the dlops corpus is 0.0 (transfer baseline) or absent, found {model.shrinkage!r}")
        unknown = sorted(set(model.features) - set(DLOPS_FEATURES))
        if unknown:
            raise ExperimentSpecError(f"{path}: [{table}.features] {unknown[0]!r} does not apply to the dlops corpus; allowed: {', '.join(DLOPS_FEATURES)}")


def load_experiment(path) -> ExperimentSpec:
    """Parse and validate an experiment TOML file.

    Raises
    ------
    ExperimentSpecError
        Naming the file, the table, the key and what is allowed.
    """
    from perfml.learned.protocols import PROTOCOLS

    from perfml._files import not_a_file

    path = Path(path)
    why = not_a_file(path)
    if why is not None:
        raise ExperimentSpecError(f"experiment file {str(path)!r} {why}; see experiments/*.toml for examples")
    # experiment files written before they carried a version are read as version 1
    raw = read_versioned(path, EXPERIMENT_FORMAT, EXPERIMENT_VERSIONS, error=ExperimentSpecError,
                         syntax="toml", require_format=False, default_version=1)
    _check_table(path, "top level", raw, TOP)
    for key in ("name", "description"):
        if key not in raw:
            raise ExperimentSpecError(f"{path}: [top level] {key} must be a non-empty string, found nothing")
    kind = raw.get("kind", "comparison")
    protocol = raw.get("protocol")
    if kind == "bsp_table2":
        # Table II has its own data (the paper's runs) and no models: a table the file sets
        # here would be ignored, so the file is refused instead of run without it
        unused = [key for key in ("protocol", "data", "models", "published", "characterization") if key in raw]
        if unused:
            raise ExperimentSpecError(
                f"{path}: kind = \"bsp_table2\" reproduces seed 003 Table II from its own runs and takes only "
                f"[table2]; remove {', '.join(map(repr, unused))} (or leave kind out for a comparison of models)")
    elif "table2" in raw:
        raise ExperimentSpecError(f"{path}: [table2] belongs to kind = \"bsp_table2\"; remove it, or set that kind")
    if kind == "comparison" and protocol not in PROTOCOLS:
        raise ExperimentSpecError(f"{path}: [top level] protocol must be one of {', '.join(PROTOCOLS)}, found {_short(protocol)}")
    data = _check_table(path, "data", raw.get("data", {}), DATA)
    _check_boards(path, data.get("boards", []))
    published = _check_table(path, "published", raw.get("published", {}), PUBLISHED)
    table2 = _check_table(path, "table2", raw.get("table2", {}), TABLE2)
    entries = raw.get("models", [])
    if not isinstance(entries, list):
        raise ExperimentSpecError(f"{path}: `models` must be an array of tables ([[models]]), found {_short(entries)}")
    models = [_check_model(path, i, entry, LEARNERS, TARGETS) for i, entry in enumerate(entries)]
    if kind == "comparison" and not models:
        raise ExperimentSpecError(f"{path}: a comparison needs at least one [[models]] entry")
    characterization = _check_table(path, "characterization", raw.get("characterization", {}), CHARACTERIZATION)
    users = [m.name for m in models if m.uses_characterization]
    if users and characterization.get("tier") != "calibrated":
        raise ExperimentSpecError(
            f"{path}: model(s) {users} use board characterizations, which under a held-out-board protocol "
            "must come from the target's calibration runs only; add [characterization] tier = \"calibrated\" "
            "(and calibration_apps)"
        )
    unread = [k for k in ("calibration_apps", "calibration_ops", "calibration_source") if k in characterization]
    if unread and characterization.get("tier") != "calibrated":
        # the calibration runs are taken under tier = "calibrated" only: the key changed nothing
        raise ExperimentSpecError(
            f"{path}: [characterization] {unread[0]} names the target's calibration runs, which are used only with "
            f"tier = \"calibrated\" (here: {characterization.get('tier', 'none')!r}); add tier = \"calibrated\" or remove it")
    corpus = data.get("corpus", "runtimes")
    _check_corpus(path, corpus, data, models, raw.get("models", []), published, characterization, protocol)
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise ExperimentSpecError(f"{path}: model names must be unique, got {names}")
    return ExperimentSpec(
        name=raw["name"],
        description=raw["description"],
        kind=kind,
        protocol=protocol,
        data=dict(data),
        models=tuple(models),
        published=dict(published),
        table2=dict(table2),
        path=str(path),
        characterization=dict(characterization),
    )
