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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfml._files import read_versioned
from perfml.errors import ExperimentSpecError

KINDS = ("learned", "closed_form")
CLOSED_FORM = ("bsp", "roofline", "hongkim")
_MODEL_KEYS = {"name", "kind", "learner", "target", "params", "features", "tune", "model", "baseline", "shrinkage", "register"}
#: format name and versions of an experiment file (see perfml._files)
EXPERIMENT_FORMAT = "perfml-experiment"
EXPERIMENT_VERSIONS = (1,)
_TOP_KEYS = {"format", "version", "name", "description", "protocol", "data", "models", "published", "kind", "table2"}


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


def load_experiment(path) -> ExperimentSpec:
    """Parse and validate an experiment TOML file.

    Raises
    ------
    ExperimentSpecError
        Naming the file, the key and what is expected.
    """
    from perfml.learned.protocols import PROTOCOLS
    from perfml.learned.regressors import LEARNERS, TARGETS

    path = Path(path)
    if not path.is_file():
        raise ExperimentSpecError(f"experiment file {str(path)!r} does not exist; see experiments/*.toml for examples")
    # experiment files written before they carried a version are read as version 1
    raw = read_versioned(path, EXPERIMENT_FORMAT, EXPERIMENT_VERSIONS, error=ExperimentSpecError,
                         syntax="toml", require_format=False, default_version=1)
    unknown = set(raw) - _TOP_KEYS
    if unknown:
        raise ExperimentSpecError(f"{path}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_TOP_KEYS)}")
    for key in ("name", "description"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise ExperimentSpecError(f"{path}: `{key}` must be a non-empty string")
    kind = raw.get("kind", "comparison")
    if kind not in ("comparison", "bsp_table2"):
        raise ExperimentSpecError(f"{path}: kind must be 'comparison' or 'bsp_table2', got {kind!r}")
    protocol = raw.get("protocol")
    if kind == "comparison" and protocol not in PROTOCOLS:
        raise ExperimentSpecError(f"{path}: protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    models = []
    for i, entry in enumerate(raw.get("models", [])):
        where = f"{path}: models[{i}]"
        extra = set(entry) - _MODEL_KEYS
        if extra:
            raise ExperimentSpecError(f"{where}: unknown key(s) {sorted(extra)}; allowed: {sorted(_MODEL_KEYS)}")
        if entry.get("kind") not in KINDS:
            raise ExperimentSpecError(f"{where}: kind must be one of {KINDS}, got {entry.get('kind')!r}")
        if not entry.get("name"):
            raise ExperimentSpecError(f"{where}: every model needs a `name`")
        if entry["kind"] == "learned":
            if entry.get("learner") not in LEARNERS:
                raise ExperimentSpecError(f"{where}: learner must be one of {LEARNERS}, got {entry.get('learner')!r}")
            if entry.get("target", "residual") not in TARGETS:
                raise ExperimentSpecError(f"{where}: target must be one of {TARGETS}, got {entry.get('target')!r}")
        elif entry.get("model") not in CLOSED_FORM:
            raise ExperimentSpecError(f"{where}: model must be one of {CLOSED_FORM}, got {entry.get('model')!r}")
        models.append(ModelSpec(**{k: v for k, v in entry.items()}))
    if kind == "comparison" and not models:
        raise ExperimentSpecError(f"{path}: a comparison needs at least one [[models]] entry")
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise ExperimentSpecError(f"{path}: model names must be unique, got {names}")
    return ExperimentSpec(
        name=raw["name"],
        description=raw["description"],
        kind=kind,
        protocol=protocol,
        data=dict(raw.get("data", {})),
        models=tuple(models),
        published=dict(raw.get("published", {})),
        table2=dict(raw.get("table2", {})),
        path=str(path),
    )
