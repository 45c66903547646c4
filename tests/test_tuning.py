"""Several tuning workers on one study (issue 14 section 6).

Real ``python -m perfml tune`` processes start together on a new SQLite study: none
fails on the schema / study creation race, trial numbers are unique and the workers
draw different parameters. A trial left RUNNING by a killed worker (a stale heartbeat
written into the database) is marked FAILED, and retried, by the next worker.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, RegressorMixin

from perfml.learned.tuning import make_storage, open_study, tune, worker_seed

from conftest import needs_data_home

ROOT = Path(__file__).resolve().parents[1]


class _MeanRegressor(RegressorMixin, BaseEstimator):
    """The smallest estimator :func:`tune` accepts: predicts the training mean, in microseconds."""

    def __init__(self, learner="svr", learner_params=None):
        self.learner = learner
        self.learner_params = learner_params

    def fit(self, X, y):
        self.mean_ = float(np.mean(y)) * (1 + (self.learner_params or {}).get("epsilon", 0.0))
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)


def _rows(n=60):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"board": np.repeat(["A", "B", "C"], n // 3), "x": rng.random(n)})
    return X, 1.0 + rng.random(n)


def _env():
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def test_worker_seeds_differ_and_worker_zero_keeps_the_seed():
    assert worker_seed(7, 0) == 7
    seeds = {worker_seed(7, w) for w in range(1, 200)}
    assert len(seeds) == 199 and 7 not in seeds
    assert worker_seed(7, 5) == worker_seed(7, 5) != worker_seed(8, 5)


def test_a_joining_worker_draws_other_parameters_and_a_single_run_is_reproducible(tmp_path):
    X, y = _rows()
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    tune(_MeanRegressor(), X, y, n_trials=3, storage=url, study_name="s", random_state=3)  # creates the study
    tune(_MeanRegressor(), X, y, n_trials=3, storage=url, study_name="s", random_state=3)  # joins it
    trials = sorted(open_study(url, "s").trials, key=lambda t: t.number)
    assert [t.number for t in trials] == list(range(6))
    params = [tuple(sorted(t.params.items())) for t in trials]
    assert len(set(params)) == 6, "two workers drew the same parameters"
    alone = tune(_MeanRegressor(), X, y, n_trials=3, storage=None, study_name="s", random_state=3)
    assert [t.params for t in alone.trials] == [t.params for t in trials[:3]]  # the creating worker is reproducible


_RACE = textwrap.dedent(
    """
    import json, os, sys, time
    from perfml.learned.tuning import open_study
    url, barrier, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    open(os.path.join(barrier, str(os.getpid())), "w").close()
    deadline = time.time() + 120
    while len(os.listdir(barrier)) < n and time.time() < deadline:  # start together, after the imports
        time.sleep(0.001)
    study = open_study(url, "race", random_state=0)
    study.optimize(lambda t: t.suggest_float("x", 0, 1) + t.suggest_int("n", 1, 10 ** 6), n_trials=3)
    print(json.dumps([t.number for t in study.trials]))
    """
)


def test_workers_starting_together_on_a_new_sqlite_study(tmp_path):
    url = f"sqlite:///{tmp_path / 'new.db'}"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    n = 3
    procs = [subprocess.Popen([sys.executable, "-c", _RACE, url, str(barrier), str(n)], env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(n)]
    results = [p.communicate(timeout=180) for p in procs]
    for proc, (out, err) in zip(procs, results):
        assert proc.returncode == 0, err
        assert "IntegrityError" not in err and "Traceback" not in err
    trials = open_study(url, "race").trials
    assert len(trials) == 3 * n and sorted(t.number for t in trials) == list(range(3 * n))
    assert all(t.state.name == "COMPLETE" for t in trials)
    assert len({(t.params["x"], t.params["n"]) for t in trials}) == 3 * n


def test_a_dead_workers_trial_is_failed_and_retried_by_the_next_worker(tmp_path):
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    storage = make_storage(url)
    study = open_study(storage, "s")
    study_id = study._study_id
    trial_id = storage.create_new_trial(study_id)  # RUNNING, as a worker leaves it when killed
    storage.set_trial_param(trial_id, "epsilon", 0.05, __import__("optuna").distributions.FloatDistribution(1e-3, 0.3, log=True))
    storage.record_heartbeat(trial_id)
    storage.remove_session()
    with sqlite3.connect(tmp_path / "optuna.db") as db:  # the worker died ten minutes ago
        db.execute("UPDATE trial_heartbeats SET heartbeat = datetime('now', '-10 minutes') WHERE trial_id = ?", (trial_id,))

    X, y = _rows()
    after = tune(_MeanRegressor(), X, y, n_trials=2, storage=url, study_name="s")
    states = {t._trial_id: t.state.name for t in after.trials}
    assert states[trial_id] == "FAIL"
    retried = [t for t in after.trials if t.system_attrs.get("failed_trial") == 0]
    assert retried and retried[0].params.get("epsilon") == pytest.approx(0.05)
    assert not [t for t in after.trials if t.state.name == "RUNNING"]


def test_sqlite_storage_waits_for_locks_and_records_heartbeats(tmp_path):
    storage = make_storage(f"sqlite:///{tmp_path / 'x.db'}", lock_timeout=12.5)
    assert storage.heartbeat_interval and storage.grace_period and storage.grace_period >= storage.heartbeat_interval
    assert storage.engine_kwargs["connect_args"]["timeout"] == 12.5


@pytest.mark.slow
@needs_data_home()
def test_perfml_tune_processes_share_a_new_study(tmp_path):
    """Three `perfml tune` workers start at once on a study that does not exist yet."""
    url = f"sqlite:///{tmp_path / 'tune.db'}"
    argv = [sys.executable, "-m", "perfml", "tune", "--learner", "svr", "--target", "log", "--source", "BSPGPU",
            "--n-trials", "1", "--no-mlflow", "--storage", url, "--study-name", "shared", "--json"]
    procs = [subprocess.Popen(argv, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    results = [p.communicate(timeout=400) for p in procs]
    for proc, (out, err) in zip(procs, results):
        assert proc.returncode == 0, err
        assert "IntegrityError" not in err and "Traceback" not in err
        assert json.loads(out)["study"] == "shared"
    trials = open_study(url, "shared").trials
    assert sorted(t.number for t in trials) == list(range(3))
    params = [tuple(sorted(t.params.items())) for t in trials]
    assert len(set(params)) == 3, f"workers drew the same parameters: {params}"
    assert list(tmp_path.iterdir()) == [tmp_path / "tune.db"]  # no MLflow store, no stray files


def test_tune_reports_every_trial_to_the_progress_callback():
    from perfml._progress import progress

    X, y = _rows()
    with progress("tuning", total=4, stream=__import__("io").StringIO()) as advance:
        tune(_MeanRegressor(), X, y, n_trials=4, storage=None, study_name="p", progress=advance)
    assert advance.count == 4 and advance.last.startswith("trial 3 ") and "best" in advance.last


def test_a_study_is_bound_to_what_it_tunes():
    # resuming an xgboost study with --learner hgb mixed two search spaces and reported hgb's
    # parameters as the best of the xgboost tuning
    import optuna

    from perfml.errors import StudyError
    from perfml.learned.tuning import STUDY_CONTEXT_ATTR, bind_study

    study = optuna.create_study(study_name="bound")
    bind_study(study, {"learner": "xgboost", "target": "residual", "app": "vectorAdd", "board": None})
    assert study.user_attrs[STUDY_CONTEXT_ATTR]["learner"] == "xgboost"
    bind_study(study, {"learner": "xgboost", "target": "residual", "app": "vectorAdd", "board": None})  # same: resumes
    with pytest.raises(StudyError, match=r"learner: the study's 'xgboost', this run's 'hgb'"):
        bind_study(study, {"learner": "hgb", "target": "residual", "app": "vectorAdd", "board": None})
    with pytest.raises(StudyError, match=r"app: the study's 'vectorAdd', this run's 'dotProd'"):
        bind_study(study, {"learner": "xgboost", "target": "residual", "app": "dotProd", "board": None})


def test_a_study_another_program_created_is_left_as_it_is(tmp_path):
    """A study created outside perfml (no perfml context) was taken over: its parameter x came back as
    the svr learner's best. A context-less study whose trials drew the learner's own parameters (one
    perfml made before it recorded its context) is still resumed."""
    import optuna

    from perfml.errors import StudyError
    from perfml.learned.tuning import STUDY_CONTEXT_ATTR, bind_study

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url = f"sqlite:///{tmp_path / 'other.db'}"
    foreign = optuna.create_study(study_name="foreign", storage=url)
    foreign.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    with pytest.raises(StudyError, match=r"study 'foreign' was not created by perfml tune: its trials draw x"):
        bind_study(optuna.load_study(study_name="foreign", storage=url), {"learner": "svr", "target": "log"})
    again = optuna.load_study(study_name="foreign", storage=url)
    assert STUDY_CONTEXT_ATTR not in again.user_attrs and len(again.trials) == 2  # untouched
    older = optuna.create_study(study_name="older-perfml", storage=url)
    older.optimize(lambda t: t.suggest_float("C", 0.1, 300.0, log=True) + t.suggest_float("epsilon", 1e-3, 0.3, log=True),
                   n_trials=1)
    bind_study(older, {"learner": "svr", "target": "log"})
    assert older.user_attrs[STUDY_CONTEXT_ATTR]["learner"] == "svr"


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:///:memory:"])
def test_an_in_memory_storage_is_refused(url):
    from perfml.errors import StudyError

    with pytest.raises(StudyError, match="in-memory SQLite database: it keeps no study"):
        make_storage(url)


def test_an_interrupted_trial_is_logged_without_a_traceback(tmp_path):
    # Ctrl-C during a trial: Optuna logged "Trial 0 failed ... KeyboardInterrupt()" with the
    # whole traceback through xgboost before perfml printed "interrupted"; the line stays, the
    # traceback goes, and the interrupt still stops tune()
    script = textwrap.dedent("""
        import numpy as np, pandas as pd
        from sklearn.base import BaseEstimator, RegressorMixin
        from perfml.learned.tuning import tune

        class Interrupted(RegressorMixin, BaseEstimator):
            def __init__(self, learner="svr", learner_params=None):
                self.learner = learner
                self.learner_params = learner_params
            def fit(self, X, y):
                raise KeyboardInterrupt
            def predict(self, X):
                return np.zeros(len(X))

        X = pd.DataFrame({"board": np.repeat(["A", "B", "C"], 4), "x": np.arange(12.0)})
        try:
            tune(Interrupted(), X, np.ones(12), n_trials=3, storage=None, study_name="i")
        except KeyboardInterrupt:
            print("stopped")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=_env(),
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "stopped"
    assert "Trial 0 failed" in done.stderr and "KeyboardInterrupt" in done.stderr
    assert "Traceback" not in done.stderr and "Trial 1" not in done.stderr


@pytest.mark.parametrize("tables, whose", [(["experiments", "runs", "metrics"], "an MLflow tracking store"),
                                           (["users"], "another program's database")])
def test_a_storage_of_another_programs_sqlite_file_is_refused_untouched(tmp_path, tables, whose):
    # Optuna added its dozen tables to an MLflow store given as --storage, then failed (internal error)
    from perfml.errors import StudyError

    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        for table in tables:
            db.execute(f"CREATE TABLE {table} (a)")
    before = path.read_bytes()
    with pytest.raises(StudyError, match=rf"is {whose} \(tables .*\); Optuna would add its tables"):
        make_storage(f"sqlite:///{path}")
    assert path.read_bytes() == before
    with pytest.raises(StudyError, match="names a folder"):
        make_storage(f"sqlite:///{tmp_path}")
    make_storage(f"sqlite:///{tmp_path / 'optuna.db'}")  # a new file: Optuna's own
    make_storage(f"sqlite:///{tmp_path / 'optuna.db'}")  # and again, once it holds Optuna's tables


@pytest.mark.parametrize("directions, what", [(["maximize"], "maximizes"), (["minimize", "minimize"], "has 2 objectives")])
def test_a_study_of_another_direction_or_of_two_objectives_is_refused(tmp_path, directions, what):
    # a two-objective study of the name gave RuntimeError "A single direction cannot be retrieved" (internal error)
    import optuna

    from perfml.errors import StudyError

    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    optuna.create_study(study_name="other", storage=url, directions=directions)
    with pytest.raises(StudyError, match=rf"study 'other' in .* {what}; perfml minimizes one objective"):
        open_study(make_storage(url), "other")


def test_a_study_is_bound_to_the_rows_it_tuned_and_an_older_study_without_them_resumes():
    """perfml tune recorded the options, not the data: a --data-home with other times resumed the
    study, and a trial scored on other rows could become its best."""
    import optuna

    from perfml.errors import StudyError
    from perfml.learned.tuning import bind_study

    study = optuna.create_study(study_name="rows")
    bind_study(study, {"learner": "svr", "target": "log", "data": "aaaa"})
    bind_study(study, {"learner": "svr", "target": "log", "data": "aaaa"})  # the same rows: resumes
    with pytest.raises(StudyError, match=r"data: the study's 'aaaa', this run's 'bbbb'"):
        bind_study(study, {"learner": "svr", "target": "log", "data": "bbbb"})
    older = optuna.create_study(study_name="older")  # a study created before the rows were recorded
    bind_study(older, {"learner": "svr", "target": "log"})
    bind_study(older, {"learner": "svr", "target": "log", "data": "aaaa"})


@needs_data_home()
def test_perfml_tune_records_the_digest_of_the_rows_it_tunes(tmp_path, monkeypatch):
    import perfml.learned.tuning as tuning
    from perfml.cli import main
    from perfml.learned.tuned import data_digest

    seen = {}

    def capture(estimator, X, y, **kwargs):
        seen["context"], seen["digest"] = kwargs["context"], data_digest(X, y)
        raise KeyboardInterrupt  # stop before any trial

    monkeypatch.setattr(tuning, "tune", capture)
    monkeypatch.chdir(tmp_path)
    main(["tune", "--learner", "svr", "--target", "log", "--source", "BSPGPU", "--n-trials", "1", "--no-mlflow",
          "--storage", f"sqlite:///{tmp_path / 't.db'}"])
    assert seen["context"]["data"] == seen["digest"] and len(seen["digest"]) == 16
