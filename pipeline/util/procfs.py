"""Processes as Linux's /proc shows them: their state fields and command lines, for the
stack's session, the tests' process checks and the benchmarks' tree sampling."""

from __future__ import annotations

import os
from collections.abc import Iterator


def pids() -> Iterator[int]:
    """Every process id /proc lists now."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, ppid, pgrp, session,
    ...), or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def live_parents() -> dict[int, int]:
    """Each live process (zombies left out) and its parent."""
    out = {}
    for pid in pids():
        fields = stat_fields(pid)
        if fields is not None and fields[0] != "Z":
            out[pid] = int(fields[1])
    return out


def cmdline(pid: int) -> str:
    """The process's command line, arguments joined by spaces; "" when it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""
