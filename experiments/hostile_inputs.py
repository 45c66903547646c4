"""Hostile input to ``perfml predict``: every case answered, or refused with exit 2, no traceback, nothing written.

The brief: "Bad input gets a clear, typed error that says what was expected and how to fix
it, and loses nothing." This script runs ``python -m perfml predict`` (a fresh process per
case, as a user runs it) on query files, ``--calibration`` files and ``--boards`` files
that a user could plausibly hand it by mistake: other separators, a comment line, a
spreadsheet's BOM or CRLF, quoted thousands, ``inf``, hexadecimal, fractional or negative
sizes, a board name with a look-alike character, a NUL byte, Latin-1 text, a binary file,
a directory, an empty file, ragged rows, repeated or blank header names, thousands of
columns, both kernel columns, dimensions no board holds, a launch CUDA does not run,
measured times in the queries, output column names, unknown kernels and boards, a second
size for a kernel that takes one, a gzip file named .csv, calibration times that are
negative, missing or faster than any kernel, calibration rows whose kernel name is in
doubt, and boards files with values no GPU has. The rows are synthetic (made up here, not measurements); the
calibration times are placeholders that never reach a reported figure.

For each case it prints the exit status, whether the output was written, whether a
Python traceback reached the terminal, and the message's last line (``TMP``: the scratch
folder the case files are written to). A case breaks the
contract when its exit status is neither 0 (answered) nor 2 (refused), a traceback is
printed, or a refused case wrote its output. The last line counts them; the script exits
1 when any case broke it.

Usage: PYTHONPATH=. python experiments/hostile_inputs.py [--model DIR] [--data-home DIR]
"""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

APP = "board,app_id,input_size\n"
OP = "board,op,B,H\n"

#: name -> query file text (bytes where the case is about the encoding)
QUERIES: dict[str, str | bytes] = {
    "plain": APP + "GTX-980,vectorAdd,1048576\n",
    "utf8_bom": "\ufeff" + APP + "GTX-980,vectorAdd,1048576\n",
    "crlf": APP.replace("\n", "\r\n") + "GTX-980,vectorAdd,1048576\r\n",
    "blank_lines": "\n\n" + APP + "\nGTX-980,vectorAdd,1048576\n\n",
    "semicolons": "board;app_id;input_size\nGTX-980;vectorAdd;1048576\n",
    "tabs": "board\tapp_id\tinput_size\nGTX-980\tvectorAdd\t1048576\n",
    "comment_line": "# my kernels\n" + APP + "GTX-980,vectorAdd,1048576\n",
    "quoted_thousands": APP + 'GTX-980,vectorAdd,"1,048,576"\n',
    "scientific_size": APP + "GTX-980,vectorAdd,1e6\n",
    "inf_size": APP + "GTX-980,vectorAdd,inf\n",
    "huge_size": APP + "GTX-980,vectorAdd,1e308\n",
    "hex_size": APP + "GTX-980,vectorAdd,0x100000\n",
    "negative_zero_size": APP + "GTX-980,vectorAdd,-0\n",
    "fractional_size": APP + "GTX-980,vectorAdd,1048576.5\n",
    "lookalike_hyphen_board": APP + "GTX\u2011980,vectorAdd,1048576\n",
    "lowercase_board": APP + "gtx-980,vectorAdd,1048576\n",
    "spaces_around_board": APP + " GTX-980 ,vectorAdd,1048576\n",
    "numeric_board": APP + "980,vectorAdd,1048576\n",
    "unknown_board": APP + "B200,vectorAdd,1048576\n",
    "nul_in_board": APP + "GTX-980\x00,vectorAdd,1048576\n",
    "newline_in_quoted_board": APP + '"GTX-980\n",vectorAdd,1048576\n',
    "more_fields_than_header": APP + "GTX-980,vectorAdd,1048576,7\n",
    "short_row": APP + "GTX-980,vectorAdd\n",
    "repeated_header_name": "board,app_id,input_size,input_size\nGTX-980,vectorAdd,1048576,5\n",
    "blank_header_name": "board,app_id,input_size,\nGTX-980,vectorAdd,1048576,\n",
    "header_only": APP,
    "empty_file": "",
    "latin1_text": ("board,app_id,input_size,note\nGTX-980,vectorAdd,1048576,caf\xe9\n").encode("latin-1"),
    "binary_file": bytes(range(256)) * 8,
    "thousands_of_columns": ("board,app_id,input_size," + ",".join(f"c{i}" for i in range(3000)) + "\n"
                             + "GTX-980,vectorAdd,1048576," + ",".join("1" for _ in range(3000)) + "\n"),
    "unknown_kernel": APP + "GTX-980,myKernel,1048576\n",
    "numeric_kernel": APP + "GTX-980,42,1048576\n",
    "both_kernel_columns": "board,app_id,op,input_size,B,H\nTesla-T4,vectorAdd,add,1048576,64,1024\n",
    "mixed_corpora": "board,app_id,op,input_size,B,H\nGTX-980,vectorAdd,,1048576,,\nTesla-T4,,add,,64,1024\n",
    "block_over_limit": "board,app_id,input_size,block_x\nGTX-980,vectorAdd,1048576,2048\n",
    "block_text": "board,app_id,input_size,block_x\nGTX-980,vectorAdd,1048576,wide\n",
    "negative_second_size": "board,app_id,input_size,input_size_2\nGTX-980,matMul_gpu_uncoalesced,256,-1\n",
    "measured_time_column": "board,app_id,input_size,time_ms\nGTX-980,vectorAdd,1048576,1.0\n",
    "output_column_name": "board,app_id,input_size,predicted_ms\nGTX-980,vectorAdd,1048576,1.0\n",
    "op_plain": OP + "Tesla-T4,add,64,1024\n",
    "op_upper_case": OP + "Tesla-T4,ADD,64,1024\n",
    "op_float_dims": OP + "Tesla-T4,add,64.0,1024.0\n",
    "op_boolean_dim": OP + "Tesla-T4,add,True,1024\n",
    "op_negative_dim": OP + "Tesla-T4,add,-64,1024\n",
    "op_beyond_memory": OP + "Tesla-T4,add,2147483647,2147483647\n",
    "op_unused_dim": "board,op,B,H,M\nTesla-T4,softmax,8,1024,7\n",
    "op_fp16": "board,op,B,H,dtype\nTesla-T4,add,64,1024,float16\n",
    "conv_empty_output": ("board,op,B,in_channels,out_channels,kernel_size,input_size,stride\n"
                          "Tesla-T4,conv,8,3,64,7,3,1\n"),
    "second_size_one_size_kernel": "board,app_id,input_size,input_size_2\nGTX-980,vectorAdd,1048576,5\n",
    "gzip_bytes_named_csv": gzip.compress((APP + "GTX-980,vectorAdd,1048576\n").encode()),
    "latin1_byte_on_line_52": (b"board,app_id,input_size,note\n" + b"GTX-980,vectorAdd,1048576,ok\n" * 50
                               + b"GTX-980,vectorAdd,1048576,caf\xe9\n"),
}

#: name -> (query case, --calibration file text): times are placeholders, not measurements
CALIBRATIONS: dict[str, tuple[str, str]] = {
    "calibration_negative_time": ("op_plain", "board,op,B,H,time_ms\nTesla-T4,add,64,1024,-1\n"),
    "calibration_missing_time": ("op_plain", "board,op,B,H,time_ms\nTesla-T4,add,64,1024,\n"),
    "calibration_faster_than_any_kernel": ("op_plain", "board,op,B,H,time_ms\n" + "".join(
        f"Tesla-T4,add,{b},1024,1e-12\n" for b in (64, 128, 256, 512))),
    "calibration_one_row": ("op_plain", "board,op,B,H,time_ms\nTesla-T4,add,64,1024,0.01\n"),
    "calibration_other_board": ("op_plain", "board,op,B,H,time_ms\n" + "".join(
        f"Tesla-P4,add,{b},1024,0.01\n" for b in (64, 128, 256, 512))),
    "calibration_semicolons": ("op_plain", "board;op;B;H;time_ms\nTesla-T4;add;64;1024;0.01\n"),
    "calibration_unknown_work": ("op_plain", "board,op,B,H,time_ms\n" + "".join(
        f"Tesla-T4,frobnicate,{b},1024,0.01\n" for b in (64, 128, 256, 512))),
    "calibration_upper_case_op": ("op_plain", "board,op,B,H,time_ms\n" + "".join(
        f"Tesla-T4,{'ADD' if b == 128 else 'add'},{b},1024,0.01\n" for b in (64, 128, 256, 512))),
    "calibration_two_kernels_in_a_row": ("op_plain", "board,app_id,op,B,H,input_size,time_ms\n" + "".join(
        f"Tesla-T4,,add,{b},1024,,0.01\n" for b in (64, 128, 256)) + "Tesla-T4,vectorAdd,add,512,1024,1048576,0.01\n"),
}

_BOARD = """format = "perfml-boards"
schema_version = 1
[sources]
notes = "synthetic board of experiments/hostile_inputs.py"
[[board]]
name = "{name}"
full_name = "A synthetic board"
source = "@notes"
compute_capability = "{cc}"
sms = {sms}
boost_clock_mhz = {clock}
memory_clock_mhz = 7000
bus_width_bits = 256
l2_bytes = 4194304
memory_bandwidth_gbs = {bw}
global_mem_bytes = 8589934592
"""
_GOOD_BOARD = {"name": "Synthetic-GPU", "cc": "8.6", "sms": 46, "clock": 1700, "bw": 448}

#: name -> boards file text (queries: one application and one operator row on its board)
BOARDS: dict[str, str] = {
    "boards_plain": _BOARD.format(**_GOOD_BOARD),
    "boards_negative_sms": _BOARD.format(**{**_GOOD_BOARD, "sms": -46}),
    "boards_zero_bandwidth": _BOARD.format(**{**_GOOD_BOARD, "bw": 0}),
    "boards_nan_bandwidth": _BOARD.format(**{**_GOOD_BOARD, "bw": "nan"}),
    "boards_inf_clock": _BOARD.format(**{**_GOOD_BOARD, "clock": "inf"}),
    "boards_fractional_sms": _BOARD.format(**{**_GOOD_BOARD, "sms": 46.5}),
    "boards_text_sms": _BOARD.format(**{**_GOOD_BOARD, "sms": '"many"'}),
    "boards_bad_compute_capability": _BOARD.format(**{**_GOOD_BOARD, "cc": "eight"}),
    "boards_bandwidth_in_bytes": _BOARD.format(**{**_GOOD_BOARD, "bw": 448e9}),
    "boards_shipped_name": _BOARD.format(**{**_GOOD_BOARD, "name": "GTX-980"}),
    "boards_not_toml": "format = [[[\n",
    "boards_compute_capability_zero": _BOARD.format(**{**_GOOD_BOARD, "cc": "0.0"}),
    "boards_l2_in_kib": _BOARD.format(**_GOOD_BOARD).replace("l2_bytes = 4194304", "l2_bytes = 4096"),
}


def _write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", newline="")
    return path


def _run(args: list[str], out: Path, existing: bytes | None = None) -> tuple[int, bool, bool, str]:
    """(exit status, output written, traceback printed, last line of the message) of ``perfml ARGS --output OUT``.

    ``existing``: what ``out`` holds before the command (it is also one of its inputs);
    written then means changed. None: ``out`` does not exist before, and written means created.
    """
    if existing is None:
        out.unlink(missing_ok=True)
    else:
        out.write_bytes(existing)
    done = subprocess.run([sys.executable, "-m", "perfml", "-q", *args, "--output", str(out)],
                          capture_output=True, text=True, errors="replace", env={**os.environ, "PERFML_DEBUG": ""})
    text = (done.stdout + done.stderr).strip()
    last = text.splitlines()[-1] if text else ""
    written = out.exists() if existing is None else out.read_bytes() != existing
    return done.returncode, written, "Traceback (most recent call last)" in text, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(HERE / "models" / "default"))
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args()
    home = ["--data-home", args.data_home] if args.data_home else []
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = {name: _write(tmp / f"{name}.csv", text) for name, text in QUERIES.items()}
        with gzip.open(tmp / "gzipped.csv.gz", "wt", encoding="utf-8") as fh:
            fh.write(APP + "GTX-980,vectorAdd,1048576\n")
        files["gzipped"] = tmp / "gzipped.csv.gz"
        (tmp / "a_directory.csv").mkdir()
        files["a_directory"] = tmp / "a_directory.csv"
        out = tmp / "predictions.csv"
        cases = [(name, ["predict", "--model", args.model, *home, "--queries", str(path)]) for name, path in files.items()]
        for name, (query, text) in CALIBRATIONS.items():
            cal = _write(tmp / f"{name}.csv", text)
            cases.append((name, ["predict", "--model", args.model, *home, "--queries", str(files[query]),
                                 "--calibration", str(cal)]))
        both = _write(tmp / "synthetic_board_queries.csv", "board,app_id,op,input_size,B,H\n"
                      "Synthetic-GPU,vectorAdd,,1048576,,\nSynthetic-GPU,,add,,64,1024\n")
        for name, text in BOARDS.items():
            boards = _write(tmp / f"{name}.toml", text)
            cases.append((name, ["--boards", str(boards), "predict", "--model", args.model, *home,
                                 "--queries", str(both)]))
        cases.append(("output_is_the_queries", ["predict", "--model", args.model, *home, "--queries", str(out),
                                                "--overwrite"]))
        width = max(len(name) for name, _ in cases)
        print(f"{'case':<{width}}  exit  written  traceback  message (last line)")
        for name, argv in cases:
            # the output named as the queries: it holds them before, and must still hold them after
            existing = QUERIES["plain"].encode() if name == "output_is_the_queries" else None
            code, written, traceback, last = _run(argv, out, existing)
            last = last.replace(str(tmp), "TMP")  # the scratch folder's random name, the same in every case
            broken = code not in (0, 2) or traceback or (code != 0 and written)
            results.append((name, code, written, traceback, broken))
            shown = last if len(last) <= 150 else last[:147] + "..."
            print(f"{name:<{width}}  {code:>4}  {'yes' if written else 'no':>7}  {'YES' if traceback else 'no':>9}  "
                  f"{shown}{'   <- breaks the contract' if broken else ''}", flush=True)
    answered = sum(1 for r in results if r[1] == 0)
    refused = sum(1 for r in results if r[1] == 2)
    broken = [r[0] for r in results if r[4]]
    print(f"{len(results)} cases: {answered} answered (exit 0), {refused} refused (exit 2), "
          f"{len(results) - answered - refused} other exits; tracebacks: {sum(r[3] for r in results)}; "
          f"broken: {len(broken)}{' (' + ', '.join(broken) + ')' if broken else ''}")
    raise SystemExit(1 if broken else 0)


if __name__ == "__main__":
    main()
