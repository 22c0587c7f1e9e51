"""The fast tier's guard (tests/helpers/fast_tier.py) names what a command would start, and
refuses it while a fast test runs."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers.fast_tier import SlowProcessInFastTest, guarded, slow_process


@pytest.mark.parametrize(("argv", "what"), [
    (["/x/.venv/bin/agentsweep", "run"], "an agentsweep process"),
    ([sys.executable, "-m", "uvicorn", "--factory", "x:y"], "a Prefect API"),
    (["/x/ray/core/src/ray/gcs/gcs_server", "--port=1"], "a Ray node"),
    ([sys.executable, "-c", "from pipeline.cli.app import main; main()"],
     "an agentsweep process"),
    ([sys.executable, "-c", "with ray_session() as ray: pass"], "a Ray node"),
    ([sys.executable, "-c", "print(1)"], None),
    (["/usr/bin/strace", "-V"], None),
])
def test_a_command_is_named_by_what_it_starts(argv: list[str], what: str | None) -> None:
    assert slow_process(argv) == what


def test_the_guard_refuses_a_slow_process_and_lets_others_run() -> None:
    with guarded("t"):
        with pytest.raises(SlowProcessInFastTest, match="t starts an agentsweep process"):
            subprocess.run(["/nonexistent/agentsweep", "--help"], check=False)
        assert subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True,
                              text=True, check=True).stdout == "1\n"
