"""Phases of a run as they start: shown on the terminal, and timed for the start-up benchmark.

``mark(name)`` says that a phase begins ("connecting to Ray", "starting workers", ...). A
listener (the progress display) may show it; with ``AGENTSWEEP_PHASES=FILE`` each mark is also
appended to FILE as a JSON line with its Unix time ``t`` (a benchmark that starts the command
subtracts its own start) and ``s``, seconds since this process started as ``/proc`` tells it
(boot time there is whole seconds: ``s`` is +-1 s). Marks cost nothing otherwise.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from functools import cache

PHASES_FILE = "AGENTSWEEP_PHASES"
Listener = Callable[[str], None]
_listeners: list[Listener] = []


@cache
def process_start() -> float:
    """This process's start as a Unix time (``time.time()`` at import when /proc lacks it)."""
    try:
        with open("/proc/self/stat") as handle:
            ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith("btime"))
    except (OSError, ValueError, StopIteration, IndexError):
        return time.time()
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def mark(name: str) -> None:
    for listener in list(_listeners):
        listener(name)
    target = os.environ.get(PHASES_FILE)
    if target:
        now = time.time()
        line = json.dumps({"phase": name, "t": now, "s": round(now - process_start(), 3),
                           "pid": os.getpid()})
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


def listen(listener: Listener) -> Callable[[], None]:
    """Call ``listener`` with every mark until the returned function is called."""
    _listeners.append(listener)
    return lambda: _listeners.remove(listener) if listener in _listeners else None
