"""A small grid whose model calls are slowed (in-process injected latency), for tests that
kill something mid-sweep, and the environment of an `agentsweep` driver that reports to the
session's Prefect harness."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import MEETING_SUITE

SCENARIOS = 2
REPEATS = 30
GRID = SCENARIOS * REPEATS
SPEC = """
suites: ["{suite}"]
models:
  - name: reference/golden
    faults: {{latency_ms: {latency_ms}}}
memory_modes: [chat]
repeats: {repeats}
max_in_flight: 4
"""


def slow_grid_spec(folder: Path, latency_ms: int, extra: str = "") -> Path:
    """The spec of ``GRID`` trials (the first ``SCENARIOS`` meeting-room scenarios, ``REPEATS``
    each), every model call ``latency_ms`` late, 4 trials at a time; ``extra`` YAML lines on top."""
    suite = folder / "small.jsonl"
    lines = MEETING_SUITE.read_text("utf-8").splitlines()[:SCENARIOS]
    suite.write_text("\n".join(lines) + "\n", "utf-8")
    spec = folder / "slow.yaml"
    spec.write_text(SPEC.format(suite=suite, repeats=REPEATS, latency_ms=latency_ms) + extra,
                    "utf-8")
    return spec


def driver_env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment without Prefect or Ray settings, with ``home``, no progress
    bar and the session's Prefect harness as the API; ``extra`` on top."""
    from prefect.settings import PREFECT_API_URL

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    env.update(AGENTSWEEP_HOME=str(home), AGENTSWEEP_PROGRESS="0",
               PREFECT_API_URL=str(PREFECT_API_URL.value()), **extra)
    return env
