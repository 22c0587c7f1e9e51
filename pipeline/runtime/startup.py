"""How long a local Ray and a Prefect API may take to start, and the one line a door says when
one did not.

Ray gives a new node's raylet 30 s to register (a constant inside ``ray._private.node.Node``)
and Prefect gives its ephemeral API 20 s; on a machine with many more runnable processes than
cores both start many times slower than on an idle one, and a start-up that gives up is no
crash of ours. Both waits are settings: ``AGENTSWEEP_RAY_START_TIMEOUT_S`` (applied to Ray's
node by ``local_ray.raylet_wait``) and Prefect's own
``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS`` (which ``hygiene.apply`` sets when the user
has not). Unset, each scales with the load: ``PER_LOAD_S`` per runnable process per CPU (the
one-minute load average over the CPU count), never under ``MIN_WAIT_S`` nor over
``MAX_WAIT_S``. A wait is a bound, not a delay: a service that is up is used at once, and one
whose process exited is reported at once.

A start-up that still fails is exit 3 (``ExitCode.INCOMPLETE``: nothing ran, run it again),
said in one line that names what did not start, the setting of its wait and ``agentsweep up``
(``start_failure_line``), by every door: ``agentsweep run``, ``agentsweep up`` and the flow
programs.
"""

from __future__ import annotations

import os

from pipeline.errors import ExitCode

RAY_START_ENV = "AGENTSWEEP_RAY_START_TIMEOUT_S"
"""Seconds a local Ray node (a run's own, or the stack's head) may take to register."""
PREFECT_START_ENV = "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"
"""Seconds a Prefect API (a run's own, Prefect's ephemeral one, the stack's server) may take to
answer; Prefect's own setting, an integer."""
MIN_WAIT_S = 120.0
PER_LOAD_S = 60.0
MAX_WAIT_S = 900.0
PREFECT_EPHEMERAL_TIMEOUT = "Timed out while attempting to connect to ephemeral Prefect API"
"""How Prefect's own ephemeral API says it did not start (a bare RuntimeError)."""


class StartupSettingError(ValueError):
    """A start-up wait set to something that is not a number of seconds."""


class StartError(RuntimeError):
    """Ray or a Prefect API did not start: nothing ran."""

    def __init__(self, message: str, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting
        """The setting of the wait that ran out (None: no wait of ours was involved)."""


class RayStartError(StartError):
    """Ray did not start (or the cluster did not answer)."""


def load_per_cpu() -> float:
    """Runnable processes per CPU over the last minute (0 where the system does not say)."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return 0.0
    return load / (os.cpu_count() or 1)


def default_wait_s() -> float:
    """The start-up wait of a machine this busy: longer the more processes share each CPU."""
    return min(MAX_WAIT_S, max(MIN_WAIT_S, PER_LOAD_S * load_per_cpu()))


def _setting(name: str, whole: bool = False) -> float | None:
    """The wait ``name`` sets (None: unset); ``whole``: Prefect reads it as an integer."""
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = float(int(text) if whole else float(text))
    except ValueError:
        value = -1.0
    if not value >= 0:  # NaN included
        kind = "a whole number" if whole else "a number"
        raise StartupSettingError(f"{name}={text!r}: give the start-up wait in seconds ({kind}, "
                                  "0 or more), or unset it for a wait that grows with the "
                                  "machine's load")
    return value


def ray_start_timeout_s() -> float:
    """``AGENTSWEEP_RAY_START_TIMEOUT_S``, else the default for the current load."""
    value = _setting(RAY_START_ENV)
    return default_wait_s() if value is None else value


def prefect_start_timeout_s() -> float:
    """``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``, else the default for the load."""
    value = _setting(PREFECT_START_ENV, whole=True)
    return default_wait_s() if value is None else value


def check_settings() -> None:
    """Both waits readable (``StartupSettingError`` names the one that is not)."""
    ray_start_timeout_s()
    prefect_start_timeout_s()


def start_failure_line(exc: BaseException, again: str, kept: str = "nothing ran") -> str | None:
    """The one line a door prints when Ray or a Prefect API did not start (None when ``exc``
    is something else); ``again`` says how to run the work once the machine allows, ``kept``
    what is there meanwhile."""
    found = _start_failure(exc)
    if found is None:
        return None
    what, setting = found
    raise_it = f" or raise {setting}" if setting else ""
    return (f"error: {what}; {kept} (exit {ExitCode.INCOMPLETE}). On a busy machine, "
            f"start Ray and Prefect once with agentsweep up (later runs attach to them)"
            f"{raise_it}; then {again}")


def up_failure_line(exc: StartError) -> str:
    """The one line ``agentsweep up`` prints when a service of the stack did not start."""
    raise_it = f"raise {exc.setting} and " if exc.setting else ""
    return (f"error: {exc}; the stack is not up (exit {ExitCode.INCOMPLETE}). On a busy "
            f"machine, {raise_it}run agentsweep up again")


def _start_failure(exc: BaseException) -> tuple[str, str | None] | None:
    """What did not start, in words, and the setting of its wait; from ``exc`` or what
    caused it."""
    current: BaseException | None = exc
    for _ in range(20):
        if current is None:
            return None
        if isinstance(current, StartError):
            return str(current), current.setting
        if isinstance(current, RuntimeError) and str(current).startswith(
                PREFECT_EPHEMERAL_TIMEOUT):
            return ("Prefect's ephemeral API did not answer within "
                    f"{prefect_start_timeout_s():.0f} s"), PREFECT_START_ENV
        current = current.__cause__ or current.__context__
    return None
