"""Resume planning at scale: `.venv/bin/python benchmarks/resume_plan.py --trials 1000000`

Builds a run of ``--trials`` grid trials (the meeting-room intent_change suite,
``reference/golden``, chat memory, as many repeats as it takes) of which ``--done`` (a fraction)
already has a final outcome: the first trials of the grid in its order (a night stopped part way),
or every other one (``--pattern spread``). Their rows (a trial row and an attempt row each, the
columns a resume never reads filled with plain values) are written through the real writer
(``WarehouseWriter.write_batch``) in parts of ``--part-rows``, as a night's workers leave them:
uncompacted.

Then, in a fresh process, the driver's path up to its first trial is measured: ``plan`` (with
``--resume``), the checks that ask whether anything is pending, the attempt numbering
(``attempt_counts``) and the first spec taken from the plan, as the dispatch loop takes it.
Printed: CPU seconds, wall seconds and the peak RSS of that process, and then the same for a
reader of the running night (``runs``: the ``runs_list`` query, and the viewer's runs page), both
on the uncompacted run; with ``--compact-landed``, one step of ``warehouse.compact_landed`` (what
a compactor beside the driver does) and the readers again. ``--keep DIR`` keeps (or reuses) the
built warehouse. Everything is local files; nothing touches the network.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SUITE = REPO / "catalogs" / "meeting_rooms" / "suites" / "intent_change.jsonl"
RUN_ID = "resume-plan"

from benchmarks.resume_scale import filler  # noqa: E402


def _config(root: Path, trials: int, resume: bool) -> Any:
    from pipeline.catalog import load_suite
    from pipeline.sweep.config import SweepConfig

    repeats = -(-trials // len(load_suite(SUITE).scenarios))
    return SweepConfig(suites=[SUITE], memory_modes=["chat"], run_id=RUN_ID, warehouse=root,
                       repeats=repeats, resume=resume)


def _rows(table: str, specs: list[Any], now: datetime) -> list[dict[str, Any]]:
    from warehouse.schema import TABLES

    base = {f.name: filler(f, now) for f in TABLES[table].arrow_schema()
            if f.name != "schema_version"}
    rows = []
    for spec in specs:
        row = dict(base, run_id=RUN_ID, trial_id=spec.trial_id,
                   attempt_id=f"{spec.trial_id[:8]}a1")
        if table == "trials":
            row.update(scenario_id=spec.scenario.id, model=spec.model.name,
                       prompt_id=spec.prompt.id, memory_mode=spec.memory_mode,
                       repeat=spec.repeat, status="complete", passed=True)
        else:
            row.update(attempt=1, outcome="final")
        rows.append(row)
    return rows


def build(root: Path, trials: int, done: float, pattern: str, part_rows: int) -> int:
    """The run's ``runs`` row and its done trials' parts; how many trials were written."""
    import itertools

    from pipeline.sweep.grid import expand
    from pipeline.sweep.stages import load_plan_suites, new_invocation_id, plan, record_run
    from warehouse.writer import WarehouseWriter

    config = _config(root, trials, resume=False)
    record_run(config, plan(config), datetime.now(UTC), None, new_invocation_id())
    grid = expand(load_plan_suites(config), config.resolved_models(), config.prompts,
                  config.memory_modes, config.repeats)
    wanted = int(trials * done)
    chosen = (itertools.islice(grid, wanted) if pattern == "first"
              else itertools.islice(grid, 0, 2 * wanted, 2))
    writer = WarehouseWriter(root, RUN_ID)
    now = datetime.now(UTC)
    written = 0
    while batch := list(itertools.islice(chosen, part_rows)):
        writer.write_batch({"attempts": _rows("attempts", batch, now),
                            "trials": _rows("trials", batch, now)})
        written += len(batch)
    return written


def _rss_mib() -> float:
    """This process's peak RSS (``VmHWM``: ``ru_maxrss`` would carry the parent's over a fork)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure_plan(root: Path, trials: int) -> dict[str, Any]:
    """In this (fresh) process: the driver's path to its first trial, timed."""
    from pipeline.runtime import hygiene

    hygiene.apply()
    from pipeline.execution.attempts import attempt_counts
    from pipeline.sweep.stages import plan

    config = _config(root, trials, resume=True)
    base_rss, base_cpu, started = _rss_mib(), _cpu_s(), time.monotonic()
    sweep_plan = plan(config)
    planned = time.monotonic() - started
    assert sweep_plan.pending, "nothing pending"  # prepare and the CLI ask this
    prior = attempt_counts(config.warehouse, config.run_id, open_only=True)
    first = next(iter(sweep_plan.pending))
    return {"first_trial_s": round(time.monotonic() - started, 2),
            "plan_s": round(planned, 2), "cpu_s": round(_cpu_s() - base_cpu, 2),
            "peak_rss_mib": round(_rss_mib(), 1), "rss_before_mib": round(base_rss, 1),
            "first_repeat": first.repeat, "prior_attempts": len(prior),
            "grid": sweep_plan.grid_size}


def measure_readers(root: Path) -> dict[str, Any]:
    """In this (fresh) process: what a reader of the running night waits for, cold then warm."""
    from pipeline.runtime import hygiene

    hygiene.apply()
    from warehouse.query import clear_shared, run_named

    out: dict[str, Any] = {}
    for name in ("runs_list", "view_runs"):
        for kind in ("cold", "warm"):
            if kind == "cold":
                clear_shared()
            cpu, started = _cpu_s(), time.monotonic()
            try:
                run_named(root, name, {}, all_runs=True)
            except Exception as exc:  # a query that needs parameters: say so, go on
                out[f"{name}_error"] = str(exc).splitlines()[0]
                break
            out[f"{name}_{kind}_s"] = round(time.monotonic() - started, 2)
            out[f"{name}_{kind}_cpu_s"] = round(_cpu_s() - cpu, 2)
    out["peak_rss_mib"] = round(_rss_mib(), 1)
    return out


def measure_compaction(root: Path) -> dict[str, Any]:
    """In this (fresh) process: one step of ``compact_landed`` over the run, timed."""
    from warehouse.compact_landed import compact_landed

    cpu, started = _cpu_s(), time.monotonic()
    done = compact_landed(root, RUN_ID)
    return {"wall_s": round(time.monotonic() - started, 2), "cpu_s": round(_cpu_s() - cpu, 2),
            "peak_rss_mib": round(_rss_mib(), 1),
            "files": {t.table: [t.files_before, t.files_after] for t in done}}


def _fresh(flag: str, root: Path, trials: int) -> dict[str, Any]:
    env = dict(os.environ, AGENTSWEEP_PROGRESS="0")
    done = subprocess.run([sys.executable, __file__, flag, str(root), "--trials", str(trials)],
                          env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--done", type=float, default=0.5)
    parser.add_argument("--pattern", choices=("first", "spread"), default="first")
    parser.add_argument("--part-rows", type=int, default=5000)
    parser.add_argument("--keep", type=Path, help="build the warehouse here, or reuse it")
    parser.add_argument("--measure-plan", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--measure-readers", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--measure-compaction", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--compact-landed", action="store_true",
                        help="then one compact_landed step, and the readers again")
    args = parser.parse_args()
    if args.measure_plan or args.measure_readers or args.measure_compaction:
        measured = (measure_plan(args.measure_plan, args.trials) if args.measure_plan
                    else measure_readers(args.measure_readers) if args.measure_readers
                    else measure_compaction(args.measure_compaction))
        print(json.dumps(measured))
        return 0
    work = args.keep or Path(tempfile.mkdtemp(prefix="agentsweep-resume-plan-"))
    root = work / "warehouse"
    try:
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
        if not root.exists():
            started = time.monotonic()
            written = build(root, args.trials, args.done, args.pattern, args.part_rows)
            print(f"built: {written} of {args.trials} trials final, parts of "
                  f"{args.part_rows} rows ({time.monotonic() - started:.0f} s)")
        planned = _fresh("--measure-plan", root, args.trials)
        print("resume planning to the first trial:", json.dumps(planned))
        readers = _fresh("--measure-readers", root, args.trials)
        print("readers of the uncompacted run:", json.dumps(readers))
        if args.compact_landed:
            print("compact_landed step:", json.dumps(_fresh("--measure-compaction", root,
                                                            args.trials)))
            print("readers after the step:", json.dumps(_fresh("--measure-readers", root,
                                                               args.trials)))
        print(f"first_trial_s={planned['first_trial_s']} plan_cpu_s={planned['cpu_s']} "
              f"plan_peak_rss_mib={planned['peak_rss_mib']} "
              f"load_after={os.getloadavg()[0]:.2f}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
