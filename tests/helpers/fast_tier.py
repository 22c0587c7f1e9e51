"""The fast tier's rule, enforced: a test not marked ``slow`` starts no Ray, no Prefect API or
server, no model or S3 server and no ``agentsweep`` process.

``guarded`` wraps the one place where the standard library starts a child process
(``subprocess.Popen._execute_child``) and refuses a command that would start one of those,
naming it: the test then fails at once with the reason, instead of quietly costing the
developer loop seconds. A ``python -c`` program is read as well, for the calls that start them.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

SLOW_PROGRAMS = {
    "agentsweep": "an agentsweep process",
    "raylet": "a Ray node",
    "gcs_server": "a Ray node",
    "ray": "a Ray node",
    "uvicorn": "a Prefect API",
    "prefect": "Prefect",
    "moto_server": "an S3 server",
}
"""Programs (by the file name of the command, or of a ``-m`` module) that a fast test never
starts, and what they are."""

SLOW_CALLS = {
    "ray_session(": "a Ray node",
    "ray.init(": "a Ray node",
    "start_node(": "a Ray node",
    "pipeline.cli.app": "an agentsweep process",
    "prefect_test_harness": "a Prefect API",
    "run_sweep(": "a sweep (Ray and Prefect)",
}
"""Calls in a ``python -c`` program that start one of them."""


class SlowProcessInFastTest(AssertionError):
    """A test of the fast tier started what only the slow tier may."""


def slow_process(argv: Sequence[str]) -> str | None:
    """What the command would start that the fast tier does not allow; None if nothing."""
    args = [str(arg) for arg in argv]
    names = [os.path.basename(arg).removesuffix(".py") for arg in args[:1]]
    if "-m" in args[:3]:
        names.append(args[args.index("-m") + 1].split(".")[0])
    for name in names:
        if name in SLOW_PROGRAMS:
            return SLOW_PROGRAMS[name]
    if "-c" in args[:3] and args.index("-c") + 1 < len(args):
        program = args[args.index("-c") + 1]
        for call, what in SLOW_CALLS.items():
            if call in program:
                return what
    return None


@contextmanager
def guarded(test_name: str) -> Iterator[None]:
    """While the block runs, starting a slow process raises ``SlowProcessInFastTest``."""
    execute_child = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def refusing(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> Any:
        argv = [args] if isinstance(args, str | bytes | os.PathLike) else list(args)
        what = slow_process([os.fsdecode(arg) for arg in argv])
        if what is not None:
            raise SlowProcessInFastTest(
                f"{test_name} starts {what} ({os.fsdecode(argv[0])}): mark it slow "
                "(the fast tier starts no Ray, Prefect API, model or S3 server, or agentsweep "
                "process)")
        return execute_child(self, args, *rest, **kwargs)

    subprocess.Popen._execute_child = refusing  # type: ignore[attr-defined]
    try:
        yield
    finally:
        subprocess.Popen._execute_child = execute_child  # type: ignore[attr-defined]
