"""A command that has its exit code leaves within its grace, with that code, whatever the
interpreter's shutdown still waits for (pipeline.runtime.bounded_exit)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.runtime.bounded_exit import exit_code_of

REPO = Path(__file__).resolve().parents[3]

STUCK_AT_EXIT = """
import sys, threading
from pipeline.runtime.bounded_exit import exit_within
# What Prefect's services do at the interpreter's exit: wait, here for ever.
threading._register_atexit(threading.Event().wait)
print("verdict: said", flush=False)  # still in the pipe's buffer when the grace ends
exit_within(7, grace_s=float(sys.argv[1]))
raise SystemExit(7)
"""


@pytest.mark.parametrize("code", [None, 0, 3, "a message"])
def test_the_exit_code_is_the_one_the_interpreter_would_give(code: int | str | None) -> None:
    expected = {None: 0, 0: 0, 3: 3, "a message": 1}[code]
    assert exit_code_of(SystemExit(code)) == expected


def test_a_process_stuck_at_exit_leaves_with_its_code_and_its_last_line() -> None:
    done = subprocess.run([sys.executable, "-c", STUCK_AT_EXIT, "0.5"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)  # a hang guard only
    assert done.returncode == 7, done.stderr
    assert done.stdout == "verdict: said\n"
