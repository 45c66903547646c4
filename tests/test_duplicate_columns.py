"""A user file whose header names a column twice is refused, naming it (the brief: bad input gets a typed error).

pandas would read the second ``input_size`` as ``input_size.1`` and answer from the first;
the query, reference and calibration readers refuse such a file instead, exit 2, nothing
written. The rows here are synthetic (not measurements): they never reach a prediction.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perfml._csv_header import duplicate_columns
from perfml.characterize import calibrate_from_runtimes
from perfml.errors import CalibrationDataError, DatasetSchemaError
from perfml.learned.queries import read_query_csv, read_reference

from conftest import shared_data_home

ROOT = Path(__file__).resolve().parents[1]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_duplicate_columns_lists_each_repeated_name_with_its_positions(tmp_path):
    f = _write(tmp_path / "q.csv", "board, app_id ,input_size,app_id,x\nGTX-980,a,1,b,2\n")
    assert duplicate_columns(f) == {"app_id": [2, 4]}
    assert duplicate_columns(_write(tmp_path / "ok.csv", "board,app_id,input_size\n")) == {}


def test_a_query_file_with_a_repeated_column_is_refused(tmp_path):
    f = _write(tmp_path / "q.csv", "board,app_id,input_size,input_size\nGTX-980,vectorAdd,1048576,2\n")
    with pytest.raises(DatasetSchemaError, match=r"'input_size' 2 times \(columns 3, 4\)"):
        read_query_csv(f)


def test_a_reference_file_with_a_repeated_column_is_refused(tmp_path):
    f = _write(tmp_path / "r.csv", "board,app_id,input_size,time_ms,board\nGTX-980,my_k,1024,0.1,GTX-980\n")
    with pytest.raises(DatasetSchemaError, match=r"'board' 2 times \(columns 1, 5\)"):
        read_reference(f)


def test_a_calibration_file_with_a_repeated_column_is_refused(tmp_path):
    f = _write(tmp_path / "c.csv", "board,op,B,H,time_ms,time_ms\nTesla-T4,add,1,1024,0.01,0.02\n")
    with pytest.raises(CalibrationDataError, match=r"calibration file .*'time_ms' 2 times \(columns 5, 6\)"):
        calibrate_from_runtimes(f, "Tesla-T4")


def test_the_command_line_exits_2_and_writes_nothing(tmp_path, capsys):
    from perfml.cli import main

    q = _write(tmp_path / "q.csv", "board,op,B,H,H\nTesla-T4,softmax,8,1024,2048\n")
    out = tmp_path / "p.csv"
    code = main(["predict", "--model", str(ROOT / "models" / "default"), "--queries", str(q), "--output", str(out),
                 "--data-home", str(shared_data_home().path)])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert "'H' 2 times" in err and "Traceback" not in err
