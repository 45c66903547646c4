"""Run ``perfml`` commands as a user would, from the experiment scripts that go end to end.

The scripts under ``experiments/`` that check the command line itself (a model trained
without a board, then ``perfml predict`` on that board) run each step as a subprocess of
the same interpreter and echo it, so that their recorded output shows the exact commands.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time

__all__ = ["run_perfml"]


def run_perfml(args: list[str], *, last_lines: int | None = None) -> None:
    """Run ``python -m perfml ARGS``, print the command, its output and exit status and time.

    ``last_lines``: print only that many of the last output lines (all when None).

    Raises
    ------
    SystemExit
        With the command's exit status when it fails (the script stops there).
    """
    command = [sys.executable, "-m", "perfml", *args]
    print("$ perfml " + " ".join(shlex.quote(a) for a in args), flush=True)
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    lines = (done.stdout + done.stderr).splitlines()
    for line in lines if last_lines is None else lines[-last_lines:]:
        print(f"  {line}")
    print(f"  (exit {done.returncode}, {time.perf_counter() - t0:.1f} s)", flush=True)
    if done.returncode != 0:
        raise SystemExit(done.returncode)
