"""A command that has its exit code leaves within seconds, with that code.

After the last line, the interpreter's shutdown runs other libraries' exit work: Prefect drains
its log and event services (HTTP requests with retries and backoff), thread pools are joined,
Ray disconnects. Our own steps are bounded where we take them (``prefect_api.stop`` drains
Prefect's services while its API still answers); ``exit_within`` bounds the rest: a daemon
thread that, if the process is still there ``grace_s`` later, stops the run's own Prefect API,
flushes the terminal and ends the process with the code the command chose. A scheduler's job or
a CI step never waits on a run that has already said how it ended.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from pipeline.runtime import prefect_api

EXIT_GRACE_S = 10.0
"""How long the interpreter's own shutdown may take once a command has its exit code."""


def exit_within(code: int, grace_s: float = EXIT_GRACE_S) -> None:
    """Make sure this process ends with ``code`` at most ``grace_s`` from now."""
    threading.Thread(target=_end_late, args=(code, grace_s), name="bounded-exit",
                     daemon=True).start()


def exit_code_of(exc: SystemExit) -> int:
    """The process exit status a ``SystemExit`` asks for (as the interpreter reads it)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    return 1  # a message: the interpreter prints it and exits 1


def _end_late(code: int, grace_s: float) -> None:
    time.sleep(grace_s)
    api = prefect_api.current()
    if api is not None:
        api.kill()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said there
            pass
    os._exit(code)
