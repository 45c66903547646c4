"""A user file whose header does not name its columns plainly is refused, saying why (the brief: bad input gets a typed error).

pandas would read the second ``input_size`` as ``input_size.1`` and answer from the first;
a file separated by semicolons or tabs reads as one column; a comment line reads as the
header. The query, reference and calibration readers refuse such files instead
(:func:`perfml._csv_header.check_header`), exit 2, nothing written. The rows here are
synthetic (not measurements): they never reach a prediction.
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


@pytest.mark.parametrize("sep,named", [(";", "semicolons"), ("\t", "tabs"), ("|", "vertical bars")])
def test_a_file_separated_by_other_than_commas_is_refused_naming_the_separator(tmp_path, sep, named):
    # a spreadsheet export in a locale with a decimal comma: the header read as one column
    # "board;app_id;input_size" was refused for lacking app_id, a column the user could see
    header = sep.join(["board", "app_id", "input_size"])
    q = _write(tmp_path / "q.csv", f"{header}\n" + sep.join(["GTX-980", "vectorAdd", "1048576"]) + "\n")
    with pytest.raises(DatasetSchemaError, match=f"separated by {named}, and perfml reads comma-separated files"):
        read_query_csv(q)
    with pytest.raises(DatasetSchemaError, match=f"separated by {named}"):
        read_reference(_write(tmp_path / "r.csv", f"{header}{sep}time_ms\nGTX-980{sep}my_k{sep}1024{sep}0.1\n"))
    c = _write(tmp_path / "c.csv", sep.join(["board", "op", "B", "H", "time_ms"]) + "\nTesla-T4" + sep + "add"
               + sep + "1" + sep + "1024" + sep + "0.01\n")
    with pytest.raises(CalibrationDataError, match=f"calibration file .*separated by {named}"):
        calibrate_from_runtimes(c, "Tesla-T4")


def test_a_binary_file_is_refused_as_not_text_not_as_tab_separated(tmp_path):
    # its first "line" (bytes 0 to 9) holds a tab, and the separator rule took it for a header
    q = tmp_path / "q.csv"
    q.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(DatasetSchemaError, match="is not UTF-8 text|cannot be read as CSV") as refused:
        read_query_csv(q)
    assert "separated by" not in str(refused.value)


def test_a_comment_line_before_the_header_is_refused_naming_it(tmp_path):
    q = _write(tmp_path / "q.csv", "# my kernels\nboard,app_id,input_size\nGTX-980,vectorAdd,1048576\n")
    with pytest.raises(DatasetSchemaError, match="the first line, '# my kernels', is read as the header"):
        read_query_csv(q)
    # a header whose first column is named "#" is a header: it names the board column
    named = _write(tmp_path / "n.csv", "#,board,app_id,input_size\n1,GTX-980,vectorAdd,1048576\n")
    assert read_query_csv(named).columns.tolist() == ["#", "board", "app_id", "input_size"]


def test_a_one_column_header_without_a_separator_is_left_to_the_column_checks(tmp_path):
    from perfml._csv_header import other_separator

    assert other_separator(["board"]) is None
    assert other_separator(["board;app_id", "input_size"]) is None  # two columns: a name with a ';' in it
    assert other_separator(["".join(map(chr, range(10)))]) is None  # control bytes around a tab: no header
    assert read_query_csv(_write(tmp_path / "q.csv", "board\nGTX-980\n")).columns.tolist() == ["board"]


def test_thousands_of_carried_columns_are_checked_without_a_pandas_warning(tmp_path):
    # the checked frame was built a column at a time; past 100 columns pandas warned on
    # stderr that it was "highly fragmented", on a query perfml answers normally
    import warnings

    import pandas as pd

    from perfml.learned.operator_queries import check_operator_queries
    from perfml.learned.queries import check_queries

    extra = {f"note{i}": [str(i)] for i in range(300)}
    apps = pd.DataFrame({"board": ["GTX-980"], "app_id": ["vectorAdd"], "input_size": ["1048576"], **extra})
    ops = pd.DataFrame({"board": ["Tesla-T4"], "op": ["add"], "B": ["64"], "H": ["1024"], **extra})
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.PerformanceWarning)
        q = check_queries(apps, "q.csv")
        o = check_operator_queries(ops, "q.csv")
    for frame in (q, o):
        assert list(frame.columns[-300:]) == list(extra) and frame["note299"].tolist() == [299]
