"""Start-up of a run, phase by phase: `.venv/bin/python benchmarks/startup.py`

Runs a one-trial sweep (``reference/golden``, one scenario, chat mode) as a user would, in a
fresh process, in five situations, and prints when each phase began, in seconds from the
command's start (``AGENTSWEEP_PHASES``, pipeline.runtime.phases), plus the command's wall time:

1. ephemeral, fresh home: Prefect's ephemeral API migrates a new database, a local Ray starts;
2. ephemeral, second run in that home;
3. ``agentsweep up`` done, first run (workers start and import LiteLLM);
4. second run on the stack (workers warm);
5. a no-op ``--resume`` of that run.

``--repeat N`` runs each situation N times (one home each time for 1) and reports the median.
Everything stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SUITE = REPO / "catalogs" / "meeting_rooms" / "suites" / "intent_change.jsonl"
RUN = ["run", "--suite", str(SUITE), "--scenario", "V1", "--memory-mode", "chat",
       "--repeats", "1"]
PHASES = ["checking the inputs", "starting the Prefect flow", "planning",
          "starting a local Ray", "connecting to Ray", "starting workers", "trials",
          "first trial started", "done"]


def _env(home: Path, phases: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    env.update(AGENTSWEEP_HOME=str(home), AGENTSWEEP_PHASES=str(phases),
               AGENTSWEEP_PROGRESS="0")
    return env


def _first_trial(home: Path, run_id: str) -> float | None:
    """When the run's first trial started (Unix time), as its row says: the real start of
    work, after any worker's own start-up."""
    sys.path.insert(0, str(REPO))
    from warehouse.query import run_sql

    rows = run_sql(home / "warehouse", "select epoch(min(started_at)) from trials "
                                       "where run_id = $run_id", {"run_id": run_id}).rows
    return float(rows[0][0]) if rows and rows[0][0] is not None else None


def timed(home: Path, *args: str) -> dict[str, float]:
    """Phase -> seconds from the command's start, ``first trial started`` and ``wall``."""
    phases = home.parent / f"phases-{time.time_ns()}.jsonl"
    started = time.time()
    done = subprocess.run([str(BIN / "agentsweep"), *args], env=_env(home, phases),
                          capture_output=True, text=True, check=False)
    wall = time.time() - started
    if done.returncode != 0:
        raise SystemExit(f"agentsweep {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    out = {"wall": wall}
    if phases.exists():
        for line in phases.read_text().splitlines():
            mark = json.loads(line)
            out.setdefault(mark["phase"], mark["t"] - started)
    first = _first_trial(home, args[args.index("--run-id") + 1])
    if first is not None and "--resume" not in args:
        out["first trial started"] = first - started
    return out


def situations(root: Path) -> dict[str, dict[str, float]]:
    fresh = root / f"ephemeral-{time.time_ns()}"
    results = {"1 ephemeral, fresh home": timed(fresh, *RUN, "--run-id", "a"),
               "2 ephemeral, second run": timed(fresh, *RUN, "--run-id", "b")}
    stacked = root / f"stack-{time.time_ns()}"
    env = _env(stacked, root / "up.jsonl")
    subprocess.run([str(BIN / "agentsweep"), "up"], env=env, check=True, capture_output=True)
    try:
        results["3 stack up, first run"] = timed(stacked, *RUN, "--run-id", "c")
        results["4 stack up, second run"] = timed(stacked, *RUN, "--run-id", "d")
        results["5 no-op --resume"] = timed(stacked, *RUN, "--run-id", "d", "--resume")
    finally:
        subprocess.run([str(BIN / "agentsweep"), "down"], env=env, check=False,
                       capture_output=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="asbench-", dir="/tmp"))
    try:
        runs = [situations(root) for _ in range(args.repeat)]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    names = list(runs[0])
    print(f"seconds from the command's start (median of {args.repeat})")
    print(f"{'phase':28}" + "".join(f"{n[:24]:>26}" for n in names))
    for phase in [*PHASES, "wall"]:
        cells = []
        for name in names:
            values = [r[name][phase] for r in runs if phase in r[name]]
            cells.append(f"{statistics.median(values):26.2f}" if values else f"{'-':>26}")
        print(f"{phase:28}" + "".join(cells))


if __name__ == "__main__":
    main()
