"""Resume at scale: `.venv/bin/python benchmarks/resume_scale.py`

A grid of ``--trials`` (default 200,000: the meeting-room intent_change suite, ``reference/golden``,
chat and structured memory, as many repeats as it takes), half of it done: the run's ``runs`` row
is recorded as ``agentsweep run`` records it, and the trials of every other plan entry are written
as final (synthetic rows: only their ids and outcome matter to a resume). Then, on a warm stack
(``agentsweep up``, in a fresh home), ``agentsweep run --run-id R --resume`` is timed from the
command's start to its first new trial (the ``trials`` phase: the first attempt handed to a worker),
phase by phase; the command is then interrupted (Ctrl-C, as a user would), which saves what
finished. Printed: the phases, the time to the first new trial, and the command's peak RSS by
then. Everything stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
BIN = Path(sys.executable).parent
SUITE = REPO / "catalogs" / "meeting_rooms" / "suites" / "intent_change.jsonl"
RUN_ID = "resume-at-scale"


def _spec(folder: Path, repeats: int) -> Path:
    spec = folder / "grid.yaml"
    spec.write_text(f"suites: [{SUITE}]\nmodels: [reference/golden]\n"
                    f"memory_modes: [chat, structured]\nrepeats: {repeats}\n", "utf-8")
    return spec


def _env(home: Path, phases: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    env.update(AGENTSWEEP_HOME=str(home), AGENTSWEEP_PHASES=str(phases),
               AGENTSWEEP_PROGRESS="0")
    return env


def half_done(home: Path, spec: Path) -> tuple[int, int]:
    """Record the run and write every other planned trial as final; (grid, written)."""
    os.environ["AGENTSWEEP_HOME"] = str(home)
    from pipeline.runtime import hygiene

    hygiene.apply()
    import pyarrow as pa

    from pipeline.cli.run import RunOptions, build_config
    from pipeline.sweep.stages import new_invocation_id, plan, record_run
    from warehouse.schema import TABLES
    from warehouse.writer import write_parquet

    config = build_config(RunOptions(spec=spec, run_id=RUN_ID))
    sweep_plan = plan(config)
    record_run(config, sweep_plan, datetime.now(UTC), None, new_invocation_id())
    done = sweep_plan.pending[::2]
    schema = TABLES["trials"].arrow_schema()
    now = datetime.now(UTC)
    values = {
        "run_id": [RUN_ID] * len(done), "trial_id": [s.trial_id for s in done],
        "attempt_id": [f"{s.trial_id[:8]}a1" for s in done],
        "scenario_id": [s.scenario.id for s in done], "model": [s.model.name for s in done],
        "prompt_id": [s.prompt.id for s in done], "memory_mode": [s.memory_mode for s in done],
        "repeat": [s.repeat for s in done], "status": ["complete"] * len(done),
        "passed": [True] * len(done), "started_at": [now] * len(done),
        "finished_at": [now] * len(done),
        "schema_version": [int(schema.metadata[b"schema_version"])] * len(done)}
    table = pa.Table.from_pydict({f.name: values.get(f.name, [filler(f, now)] * len(done))
                                  for f in schema}, schema=schema)
    part = f"part-{now:%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:12]}.parquet"
    root = config.warehouse
    assert isinstance(root, Path), "a local warehouse (AGENTSWEEP_WAREHOUSE unset)"
    write_parquet(root / "trials" / f"run_id={RUN_ID}" / part, table)
    return sweep_plan.grid_size, len(done)


def filler(field: Any, now: datetime) -> Any:
    """A plain value for a column the resume never reads (null where the schema allows)."""
    import pyarrow as pa

    if field.nullable:
        return None
    kind = field.type
    if pa.types.is_timestamp(kind):
        return now
    if pa.types.is_boolean(kind):
        return False
    if pa.types.is_integer(kind):
        return 0
    if pa.types.is_floating(kind):
        return 0.0
    if pa.types.is_list(kind):
        return []
    return ""


def timed_resume(home: Path) -> dict[str, float]:
    phases = home.parent / f"phases-{time.time_ns()}.jsonl"
    started = time.time()
    command = subprocess.Popen([str(BIN / "agentsweep"), "run", "--run-id", RUN_ID, "--resume"],
                               env=_env(home, phases), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    seen: dict[str, float] = {}
    deadline = time.monotonic() + 600
    while "trials" not in seen and command.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
        if phases.exists():
            for line in phases.read_text().splitlines():
                mark = json.loads(line)
                seen.setdefault(mark["phase"], mark["t"] - started)
    if command.poll() is None:
        seen["peak_rss_mib"] = _peak_rss_mib(command.pid)
        command.send_signal(signal.SIGINT)
    out, err = command.communicate(timeout=120)
    if "trials" not in seen:
        raise SystemExit(f"the resume never reached a trial:\n{out}\n{err}")
    return seen


def _peak_rss_mib(pid: int) -> float:
    """The command's peak RSS so far (``VmHWM``), MiB; 0 when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--trials", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=2, help="timed resumes (median printed)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="agentsweep-resume-"))
    home = work / "home"
    try:
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
        env = _env(home, work / "up-phases.jsonl")
        up = subprocess.run([str(BIN / "agentsweep"), "up"], env=env, capture_output=True,
                            text=True, check=False)
        if up.returncode != 0:
            raise SystemExit(up.stderr)
        from pipeline.catalog import load_suite

        scenarios = len(load_suite(SUITE).scenarios)
        started = time.monotonic()
        grid, written = half_done(home, _spec(work, -(-args.trials // (2 * scenarios))))
        print(f"grid {grid} trials, {written} written as final "
              f"({time.monotonic() - started:.1f} s to make)")
        runs = [timed_resume(home) for _ in range(args.repeat)]
        for number, phases in enumerate(runs, 1):
            line = "; ".join(f"{name} {at:.1f}" for name, at in phases.items()
                             if name != "peak_rss_mib")
            print(f"resume {number}, seconds from the command's start: {line}")
        firsts = sorted(phases["trials"] for phases in runs)
        print(f"first new trial after {firsts[len(firsts) // 2]:.1f} s (median of "
              f"{len(firsts)}; target < 10 s on a warm stack); the command's peak RSS by then "
              f"{max(phases.get('peak_rss_mib', 0.0) for phases in runs):.0f} MiB")
    finally:
        subprocess.run([str(BIN / "agentsweep"), "down"], env=_env(home, work / "x"),
                       capture_output=True, check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
