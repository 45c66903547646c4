"""Output files are never written over a file another program created meanwhile (the brief: a
result file is never overwritten silently).

Without ``--overwrite``, :func:`perfml._safe_output.atomic_output` puts the finished file in
place with ``os.link``, which fails on an existing name, instead of ``os.replace`` after a
check: a second ``perfml predict`` writing the same ``--output`` between that check and the
rename would otherwise have its file destroyed. Needs no data home (the rest of the output
rules are tested with a model in ``tests/test_model_io.py``).
"""

from __future__ import annotations

import os

import pandas as pd
import pytest

from perfml._safe_output import write_dataframe_atomic, write_text_atomic
from perfml.errors import ResultFileExistsError


def _another_program_writes_after_the_last_check(monkeypatch, path, text: str):
    """The last check_output_path before the file is put in place passes, then another
    program (a second perfml predict with the same --output) creates ``path``."""
    import perfml._safe_output as safe

    check = safe.check_output_path

    def racing(target, **kwargs):
        checked = check(target, **kwargs)
        racing.calls += 1
        if racing.calls == 2:  # the check just before the file is put in place
            path.write_text(text)
        return checked

    racing.calls = 0
    monkeypatch.setattr(safe, "check_output_path", racing)


def test_a_file_created_while_perfml_writes_is_not_replaced(tmp_path, monkeypatch):
    p = tmp_path / "p.csv"
    _another_program_writes_after_the_last_check(monkeypatch, p, "the other program's predictions")
    with pytest.raises(ResultFileExistsError, match="created by another program while perfml was writing it"):
        write_dataframe_atomic(pd.DataFrame({"a": [1]}), p)
    assert p.read_text() == "the other program's predictions"
    assert [q.name for q in tmp_path.iterdir()] == ["p.csv"]  # no temporary file left


def test_without_hard_links_the_last_check_is_the_guard(tmp_path, monkeypatch):
    # a file system that refuses link(2) (some network and FAT mounts): the file is still written
    def no_links(*args, **kwargs):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    p = tmp_path / "p.csv"
    write_text_atomic(p, "new")
    assert p.read_text() == "new" and [q.name for q in tmp_path.iterdir()] == ["p.csv"]
    with pytest.raises(ResultFileExistsError, match="--overwrite"):
        write_text_atomic(p, "newer")
    assert p.read_text() == "new"
