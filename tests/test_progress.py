"""Progress of long work (issue 9): Rich on a terminal's stderr, silent otherwise or with --quiet."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

from perfml._progress import Advance, progress, progress_enabled

from conftest import needs_data_home

ROOT = Path(__file__).resolve().parents[1]


class _Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_nothing_is_drawn_on_a_stream_that_is_not_a_terminal():
    stream = io.StringIO()
    with progress("work", total=3, stream=stream) as advance:
        for i in range(3):
            advance(f"step {i}")
    assert stream.getvalue() == ""
    assert isinstance(advance, Advance) and advance.count == 3 and advance.last == "step 2"


def test_a_terminal_gets_a_bar_unless_quiet(monkeypatch):
    monkeypatch.delenv("PERFML_QUIET", raising=False)
    tty = _Terminal()
    with progress("tuning", total=2, stream=tty) as advance:
        advance("trial 0")
        advance("trial 1")
    assert advance.count == 2 and tty.getvalue() != ""

    tty = _Terminal()
    with progress("tuning", total=2, stream=tty, quiet=True) as advance:
        advance("trial 0")
    assert tty.getvalue() == "" and advance.count == 1


def test_quiet_is_the_callers_choice_and_the_cli_reads_perfml_quiet(monkeypatch):
    from perfml.cli import quiet_requested

    monkeypatch.delenv("PERFML_QUIET", raising=False)
    assert quiet_requested() is False
    # The library does not read the environment: with PERFML_QUIET set, quiet=False still draws.
    monkeypatch.setenv("PERFML_QUIET", "1")
    tty = _Terminal()
    with progress("tuning", total=2, stream=tty, quiet=False) as advance:
        advance("trial 0")
    assert tty.getvalue() != ""
    # The CLI does: quiet_requested() honours it, and "0"/"false"/"no" mean not quiet.
    assert quiet_requested() is True
    for off in ("0", "false", "no", ""):
        monkeypatch.setenv("PERFML_QUIET", off)
        assert quiet_requested() is False


def test_progress_enabled_survives_a_closed_stream():
    stream = _Terminal()
    stream.close()
    assert progress_enabled(stream) is False


def _fake_run_experiment(calls):
    def run_experiment(spec, *, progress=None, models=None, **kwargs):
        from perfml.experiments.runner import ExperimentResult

        for model in spec.models:
            if models is None or model.name in models:
                progress(f"{model.name}: {spec.protocol}")
                calls.append(model.name)
        summary = pd.DataFrame({"model": ["m"], "mape": [1.0]})
        per_board = pd.DataFrame({"board": ["b"], "model": ["m"], "mape": [1.0]})
        return ExperimentResult(spec.name, summary, per_board, per_board.rename(columns={"board": "app_id"}), summary)

    return run_experiment


@needs_data_home()
@pytest.mark.parametrize("argv", [[], ["--quiet"]])
def test_experiment_run_reports_progress_to_the_callback_and_prints_nothing_off_a_terminal(monkeypatch, capsys, argv):
    import perfml.experiments.runner as runner
    from perfml.cli import main

    calls: list[str] = []
    monkeypatch.setattr(runner, "run_experiment", _fake_run_experiment(calls))
    assert main([*argv, "experiment", "run", str(ROOT / "experiments" / "unseen_boards.toml"), "--no-track"]) == 0
    assert calls, "run_experiment was not asked for progress"
    assert capsys.readouterr().err == ""  # stderr is not a terminal: no progress lines


@needs_data_home()
def test_experiment_run_draws_on_a_terminal_and_not_with_quiet(monkeypatch, capsys):
    import perfml._progress
    import perfml.experiments.runner as runner
    from perfml.cli import main

    drawn = []
    real = perfml._progress.progress

    def spy(description, *, total=None, quiet=False, stream=None):
        drawn.append(quiet)
        return real(description, total=total, quiet=quiet, stream=io.StringIO())

    monkeypatch.setattr(perfml._progress, "progress", spy)
    monkeypatch.setattr(runner, "run_experiment", _fake_run_experiment([]))
    toml = str(ROOT / "experiments" / "unseen_boards.toml")
    assert main(["experiment", "run", toml, "--no-track"]) == 0
    assert main(["--quiet", "experiment", "run", toml, "--no-track"]) == 0
    assert main(["experiment", "run", toml, "--no-track", "--json"]) == 0
    assert drawn == [False, True, True]  # --quiet and --json silence the bar
