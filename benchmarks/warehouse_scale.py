"""Answers at scale: `.venv/bin/python benchmarks/warehouse_scale.py [--trials N]`

Generates a synthetic warehouse on local disk (default 1M trials and about 30M events) with the
variety of months of nightly sweeps: ``--nights`` nights (90) with ``--runs-per-night`` runs
each, ``--scenarios`` scenarios over a few domains, ``--models`` models, three prompts, three
memory modes, repeats; about 8% failures with a first-violation point, some agent errors, limits
and incomplete trials, 10-50 events and 3-8 checks a trial. Rows are built column by column in
the project's schema (warehouse.schema) and written as the writer lays a batch out
(``warehouse.writer.write_parquet``: one part per table per ``--batch-size`` trials, zstd, page
checksums, the trials file last).

Then it times, as a user runs them (a fresh ``agentsweep`` process each, output to a pipe,
``AGENTSWEEP_HOME`` pointing at the synthetic home), before and after ``agentsweep warehouse
compact``: pass rate per scenario x model, the first-violation distribution, a 90-night history
of one cell, event kinds per model (events joined to trials), ``agentsweep runs``, ``report
matrix`` and ``report first_violations`` (table and csv) for the largest run. Beside each SQL
query: the same SQL in plain DuckDB in this process over ``read_parquet`` of the same files
(no views, no dedup: the floor). Prints one table, with the load average. Loopback only: nothing
leaves the machine.

Measured on the shared 2-core machine (2026-12-02): 100k trials (3.0M events, 2,344 files,
48 MB; load 1.5, median of 3): cross-run ``sql`` and ``runs`` 2.0-2.8 s before compaction,
1.05-1.45 s after (900 files, compaction 22 s), of which ~1.0 s is the command's fixed cost;
per-run reports 0.5-0.6 s either way. 1M trials (30.0M events, 20,344 files, 450 MB; load 2-5,
one run each): cross-run commands 20-50 s before (binding views over 20k files:
``select 1`` alone took 49 s), 1.1-3.2 s after (900 files, compaction 65 s); per-run reports
0.5-0.7 s either way. The same 1M-trial warehouse compacted again with chosen marks
(2026-12-03, ``--reuse``, load 1.2-1.6): trial queries 0.46-0.61 s, ``runs`` 0.68 s, the events
join 1.5 s; on loopback S3 (files kept by ``warehouse.object_cache`` after the first command)
1.2-2.2 s, ``runs`` 2.1 s, the events join 4.0 s, reports 0.7 s.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import duckdb  # noqa: E402
import pyarrow as pa  # noqa: E402

from warehouse.schema import TABLES  # noqa: E402
from warehouse.writer import WRITE_ORDER, write_parquet  # noqa: E402

BIN = Path(sys.executable).parent / "agentsweep"
MODES = ("chat", "summary", "structured")
PROMPTS = ("default", "terse", "careful")
DOMAINS = ("meeting_rooms", "clinic", "guest_pass", "retail", "airline")
CHECKS = ("state_matches", "no_forbidden_call", "arguments_valid", "response_mentions",
          "no_invalidated_write", "confirmation_asked", "tool_order", "final_answer")
KINDS = ("user_message", "assistant_message", "tool_call", "tool_result", "memory_update",
         "nudge")
TOOLS = ("search_rooms", "reserve_room", "cancel_booking", "lookup_patient", "book_slot",
         "issue_pass", "refund_order", "change_flight")
TEXTS = [" ".join(random.Random(i).choice(("the", "room", "booking", "please", "at", "10:00",
                                           "tomorrow", "cancel", "instead", "confirm", "Alice",
                                           "floor", "3", "guest", "pass", "order", "refund"))
                  for _ in range(random.Random(i).randint(4, 40))) for i in range(400)]


def _columns(table: str, values: dict[str, list[Any]], rows: int) -> pa.Table:
    """An Arrow table of the table's schema: the given columns, every other one null."""
    schema = TABLES[table].arrow_schema()
    data = {f.name: values.get(f.name, [None] * rows) for f in schema}
    data["schema_version"] = [int(schema.metadata[b"schema_version"])] * rows
    return pa.Table.from_pydict(data, schema=schema)


class Grid:
    def __init__(self, scenarios: int, models: int) -> None:
        self.scenarios = [f"S{n:03d}" for n in range(scenarios)]
        self.models = [f"provider{n % 3}/model-{n:02d}" for n in range(models)]
        self.cells = [(s, m, p, mode) for s in self.scenarios for m in self.models
                      for p in PROMPTS for mode in MODES]


def _trials(run: str, night: datetime, cells: list[tuple[str, str, str, str, int]],
            rng: random.Random) -> dict[str, list[Any]]:
    n = len(cells)
    status = rng.choices(("complete", "agent_error", "limit", "incomplete"),
                         (0.95, 0.02, 0.02, 0.01), k=n)
    failed = [s == "complete" and rng.random() < 0.08 + 0.1 * (int(c[1][-2:]) % 3 == 0)
              for s, c in zip(status, cells, strict=True)]
    passed = [None if s == "incomplete" else (s == "complete" and not f)
              for s, f in zip(status, failed, strict=True)]
    turn = [rng.randint(1, 6) if f else None for f in failed]
    at = [night + timedelta(seconds=i * 2) for i in range(n)]
    trial_ids = [uuid.UUID(int=rng.getrandbits(128)).hex for _ in range(n)]
    return {
        "run_id": [run] * n, "trial_id": trial_ids, "attempt_id": [t[:8] + "a1" for t in trial_ids],
        "scenario_id": [c[0] for c in cells], "scenario_version": [1] * n,
        "scenario_sha256": [f"sha-{c[0]}" for c in cells], "scenario_class": ["revision"] * n,
        "suite_id": [DOMAINS[int(c[0][1:]) % len(DOMAINS)] for c in cells],
        "suite_sha256": ["suite-sha"] * n,
        "domain": [DOMAINS[int(c[0][1:]) % len(DOMAINS)] for c in cells],
        "model": [c[1] for c in cells], "provider": [c[1].split("/")[0] for c in cells],
        "temperature": [0.0] * n, "generation_params": ["{}"] * n,
        "prompt_id": [c[2] for c in cells], "prompt_sha256": [f"p-{c[2]}" for c in cells],
        "tools_sha256": ["tools"] * n, "memory_mode": [c[3] for c in cells],
        "repeat": [c[4] for c in cells], "status": status, "passed": passed,
        "error_kind": [None if s in ("complete", "incomplete") else "bad_tool_call"
                       for s in status],
        "score_state": [None if p is None else int(p) for p in passed],
        "score_response": [None if p is None else int(p or rng.random() < 0.5) for p in passed],
        "first_violation_turn": turn,
        "first_violation_step": [rng.randint(0, 4) if t else None for t in turn],
        "first_violation_check": [rng.choice(CHECKS) if t else None for t in turn],
        "turns": [rng.randint(1, 6) for _ in range(n)],
        "model_calls": [rng.randint(2, 20) for _ in range(n)],
        "tool_calls": [rng.randint(0, 10) for _ in range(n)],
        "input_tokens": [rng.randint(500, 20000) for _ in range(n)],
        "output_tokens": [rng.randint(50, 2000) for _ in range(n)],
        "cost_usd": [rng.random() / 100 for _ in range(n)],
        "latency_ms": [rng.random() * 30000 for _ in range(n)],
        "started_at": at, "finished_at": [a + timedelta(seconds=2) for a in at],
        "code_version": ["bench"] * n,
    }


def _children(trials: dict[str, list[Any]], rng: random.Random, events_per_trial: int
              ) -> dict[str, dict[str, list[Any]]]:
    ev: dict[str, list[Any]] = {k: [] for k in ("run_id", "trial_id", "attempt_id", "seq",
                                                "turn", "step", "kind", "content", "tool_name")}
    ch: dict[str, list[Any]] = {k: [] for k in ("run_id", "trial_id", "attempt_id", "check_id",
                                                "check_kind", "passed", "detail", "turn")}
    at: dict[str, list[Any]] = {k: [] for k in ("run_id", "trial_id", "attempt_id", "attempt",
                                                "outcome", "started_at", "finished_at")}
    low, high = max(1, events_per_trial - 20), events_per_trial + 20
    for i, trial in enumerate(trials["trial_id"]):
        key = (trials["run_id"][i], trial, trials["attempt_id"][i])
        count = rng.randint(low, high)
        kinds = rng.choices(KINDS, (3, 3, 2, 2, 1, 0.2), k=count)
        for name, value in zip(("run_id", "trial_id", "attempt_id"), key, strict=True):
            ev[name].extend([value] * count)
            ch[name].extend([value] * 5)
            at[name].append(value)
        ev["seq"].extend(range(count))
        ev["turn"].extend(1 + s // 6 for s in range(count))
        ev["step"].extend(s % 6 for s in range(count))
        ev["kind"].extend(kinds)
        ev["content"].extend(TEXTS[rng.randrange(len(TEXTS))] for _ in range(count))
        ev["tool_name"].extend(rng.choice(TOOLS) if k == "tool_call" else None for k in kinds)
        ch["check_id"].extend(rng.sample(CHECKS, 5))
        ch["check_kind"].extend(["state"] * 5)
        ch["passed"].extend([bool(trials["passed"][i]) or rng.random() < 0.7 for _ in range(5)])
        ch["detail"].extend([""] * 5)
        ch["turn"].extend([1] * 5)
        at["attempt"].append(1)
        at["outcome"].append(trials["status"][i])
        at["started_at"].append(trials["started_at"][i])
        at["finished_at"].append(trials["finished_at"][i])
    return {"events": ev, "checks": ch, "attempts": at}


def _write_batch(root: Path, run: str, tables: dict[str, dict[str, list[Any]]]) -> None:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    part = f"part-{stamp}-{uuid.uuid4().hex[:12]}.parquet"
    for name in WRITE_ORDER:
        if name in tables:
            values = tables[name]
            rows = len(values["run_id"])
            write_parquet(root / name / f"run_id={run}" / part, _columns(name, values, rows))


def _run_row(run: str, night: datetime, grid: Grid, trials: int) -> dict[str, list[Any]]:
    return {"run_id": [run], "invocation_id": [uuid.uuid4().hex[:12]], "started_at": [night],
            "finished_at": [night + timedelta(hours=2)], "code_version": ["bench"],
            "suite_ids": [list(DOMAINS)], "suite_sha256s": [["suite-sha"]],
            "models": [grid.models], "memory_modes": [list(MODES)], "repeats": [3],
            "grid_size": [trials], "trials_run": [trials], "argv": ["agentsweep run"]}


def generate(root: Path, args: argparse.Namespace) -> tuple[int, int, str]:
    """(trials, events, the largest run)."""
    rng = random.Random(7)
    grid = Grid(args.scenarios, args.models)
    runs = args.nights * args.runs_per_night
    per_run = max(1, args.trials // runs)
    start = datetime(2026, 9, 1, 1, 0, tzinfo=UTC)
    trials = events = 0
    largest = ("", 0)
    for index in range(runs):
        night = start + timedelta(days=index // args.runs_per_night, hours=index % 2)
        run = f"nightly-{night:%Y%m%d}-{index % args.runs_per_night}"
        size = per_run if index < runs - 1 else args.trials - trials
        picked = [(*rng.choice(grid.cells), r) for r in range(3) for _ in range(size // 3 + 1)]
        picked = picked[:size]
        for first in range(0, size, args.batch_size):
            rows = _trials(run, night, picked[first:first + args.batch_size], rng)
            tables = {**_children(rows, rng, args.events_per_trial), "trials": rows}
            _write_batch(root, run, tables)
            events += len(tables["events"]["run_id"])
        _write_batch(root, run, {"runs": _run_row(run, night, grid, size)})
        trials += size
        largest = max(largest, (run, size), key=lambda x: x[1])
        if index % 10 == 0:
            print(f"  generated {trials} trials, {events} events", flush=True)
    return trials, events, largest[0]


QUERIES = {
    "pass rate scenario x model": (
        "SELECT scenario_id, model, count(*) FILTER (WHERE passed) AS passed, count(*) AS n "
        "FROM trials WHERE status <> 'incomplete' GROUP BY ALL ORDER BY ALL"),
    "first-violation distribution": (
        "SELECT first_violation_check, first_violation_turn, count(*) AS trials FROM trials "
        "WHERE NOT passed AND status = 'complete' GROUP BY ALL ORDER BY trials DESC"),
    "90-night cell history": (
        "SELECT run_id, min(started_at)::DATE AS night, count(*) FILTER (WHERE passed) AS k, "
        "count(*) AS n FROM trials WHERE scenario_id = 'S007' AND model = 'provider1/model-01'"
        " AND memory_mode = 'chat' GROUP BY run_id ORDER BY night"),
    "event kinds x model (events)": (
        "SELECT t.model, e.kind, count(*) AS events FROM events AS e JOIN trials AS t "
        "USING (run_id, trial_id, attempt_id) GROUP BY ALL ORDER BY ALL"),
}


REPEAT = 3
"""Each command runs this many times; the table shows the median (``--repeat``)."""


def _once(home: Path, argv: tuple[str, ...]) -> float:
    env = {**os.environ, "AGENTSWEEP_HOME": str(home), "NO_COLOR": "1"}
    begin = time.perf_counter()
    done = subprocess.run([str(BIN), *argv], env=env, capture_output=True, text=True,
                          check=False)
    took = time.perf_counter() - begin
    if done.returncode != 0:
        raise SystemExit(f"agentsweep {' '.join(argv)[:80]} failed: {done.stderr[-2000:]}")
    return took


def timed(home: Path, *argv: str) -> float:
    """The median wall time of ``agentsweep ARGV`` in a fresh process, output to a pipe."""
    return statistics.median(_once(home, argv) for _ in range(REPEAT))


def plain(root: Path, sql: str) -> float:
    """The same SQL in plain DuckDB over the files (no views, no dedup): a fresh connection
    each time (views created, then the query), median seconds; no process start."""
    def once() -> float:
        begin = time.perf_counter()
        con = duckdb.connect(":memory:")
        for name in ("trials", "events"):
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet("
                        f"'{root / name}/run_id=*/*.parquet', hive_partitioning = false)")
        con.execute(sql).fetchall()
        con.close()
        return time.perf_counter() - begin
    return statistics.median(once() for _ in range(REPEAT))


def measure(home: Path, run: str, local_floor: bool = True
            ) -> dict[str, tuple[float, float | None]]:
    root = home / "warehouse"
    found: dict[str, tuple[float, float | None]] = {}
    found["sql: select 1 (fixed cost)"] = (timed(home, "sql", "select 1"),
                                           plain(root, "select 1") if local_floor else None)
    for name, sql in QUERIES.items():
        found[f"sql: {name}"] = (timed(home, "sql", sql),
                                 plain(root, sql) if local_floor else None)
        found[f"sql: {name} (csv)"] = (timed(home, "sql", sql, "--format", "csv"), None)
    found["runs"] = (timed(home, "runs"), None)
    for report in ("matrix", "first_violations"):
        for fmt in ("table", "csv"):
            found[f"report {report} ({fmt})"] = (
                timed(home, "report", report, "--run-id", run, "--format", fmt), None)
    return found


def files(root: Path) -> int:
    return sum(1 for _ in root.glob("*/run_id=*/*.parquet"))


def main() -> None:
    global REPEAT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--events-per-trial", type=int, default=30)
    parser.add_argument("--nights", type=int, default=90)
    parser.add_argument("--runs-per-night", type=int, default=2)
    parser.add_argument("--scenarios", type=int, default=60)
    parser.add_argument("--models", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=REPEAT)
    parser.add_argument("--s3", action="store_true",
                        help="also time the compacted warehouse on a loopback S3 server "
                        "(moto, from the dev lock)")
    parser.add_argument("--home", type=Path, help="Keep the synthetic home here (default: a "
                        "temporary folder, removed at the end).")
    parser.add_argument("--reuse", action="store_true", help="Time the warehouse a previous "
                        "run left in --home (compacted) again: no generation, no 'before'.")
    args = parser.parse_args()
    if args.reuse:
        if args.home is None or not (args.home / "warehouse").is_dir():
            parser.error("--reuse needs --home HOME holding a warehouse this benchmark made")
        again(args.home, args.s3)
        return
    REPEAT = args.repeat
    home = args.home or Path(tempfile.mkdtemp(prefix="agentsweep-scale-"))
    root = home / "warehouse"
    try:
        begin = time.perf_counter()
        trials, events, run = generate(root, args)
        made = time.perf_counter() - begin
        before_files = files(root)
        before_bytes = sum(p.stat().st_size for p in root.glob("*/run_id=*/*.parquet"))
        print(f"generated {trials} trials, {events} events, {before_files} files, "
              f"{before_bytes / 1e6:.0f} MB in "
              f"{made:.0f} s; report run {run}", flush=True)
        before = measure(home, run)
        compact_s = _once(home, ("warehouse", "compact"))
        after_files = files(root)
        after = measure(home, run)
        _print(before, after, before_files, after_files, compact_s)
        if args.s3:
            _print_s3(on_s3(home, run), after)
    finally:
        if args.home is None:
            shutil.rmtree(home, ignore_errors=True)


def again(home: Path, s3: bool) -> None:
    """``--reuse``: the commands timed again over the warehouse a previous run left."""
    root = home / "warehouse"
    run = max(((p.parent.name.removeprefix("run_id="), p.stat().st_size)
               for p in root.glob("trials/run_id=*/*.parquet")), key=lambda x: x[1])[0]
    after = measure(home, run)
    load = os.getloadavg()
    print(f"\n{files(root)} files; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on "
          f"{os.cpu_count()} cpus; median of {REPEAT} runs; report run {run}")
    print(f"{'command (wall, s)':42} {'agentsweep':>10} {'duckdb':>8}")
    for name, (cli, duck) in after.items():
        print(f"{name:42} {cli:10.2f} {'' if duck is None else f'{duck:.2f}':>8}")
    if s3:
        _print_s3(on_s3(home, run), after)


def on_s3(home: Path, run: str) -> dict[str, tuple[float, float | None]]:
    """The compacted warehouse copied to a bucket of moto's S3 server on loopback, one commit
    record per run (as ``agentsweep warehouse compact`` leaves a run there), and the same
    commands timed with ``AGENTSWEEP_WAREHOUSE=s3://...``."""
    sys.path.insert(0, str(REPO / "tests"))
    from helpers.s3_server import DUMMY_ENV, moto_server

    from warehouse.location import S3Location, client, filesystem
    from warehouse.objectstore import CommitRecord, put_object, record_key

    root = home / "warehouse"
    saved = dict(os.environ)
    with moto_server() as endpoint:
        os.environ.update({**DUMMY_ENV, "AWS_ENDPOINT_URL": endpoint,
                           "AGENTSWEEP_WAREHOUSE": "s3://agentsweep-bench/warehouse"})
        try:
            loc = S3Location("agentsweep-bench", "warehouse")
            client().create_bucket(Bucket=loc.bucket)
            fs = filesystem()
            begin = time.perf_counter()
            runs: dict[str, dict[str, list[str]]] = {}
            for path in sorted(root.glob("*/run_id=*/*.parquet")):
                key = str(path.relative_to(root))
                with fs.open_output_stream(loc.path(key)) as out:
                    out.write(path.read_bytes())
                run_id = path.parent.name.removeprefix("run_id=")
                runs.setdefault(run_id, {}).setdefault(path.parent.parent.name, []).append(key)
            for run_id, parts in runs.items():
                record = CommitRecord(record_key(run_id, f"bench-{uuid.uuid4().hex[:12]}"),
                                      run_id, "compaction", parts)
                put_object(loc, record.key, record.body(), if_none_match=True)
            print(f"copied to loopback S3 in {time.perf_counter() - begin:.0f} s "
                  f"({len(runs)} runs, one commit record each)", flush=True)
            return measure(home, run, local_floor=False)
        finally:
            os.environ.clear()
            os.environ.update(saved)


def _print_s3(s3: dict[str, tuple[float, float | None]],
              local: dict[str, tuple[float, float | None]]) -> None:
    print(f"\nthe compacted warehouse on loopback S3 (moto); median of {REPEAT} runs")
    print(f"{'command (wall, s)':42} {'local':>8} {'S3':>8}")
    for name, (cli, _) in s3.items():
        print(f"{name:42} {local[name][0]:8.2f} {cli:8.2f}")


def _print(before: dict[str, tuple[float, float | None]],
           after: dict[str, tuple[float, float | None]], before_files: int, after_files: int,
           compact_s: float) -> None:
    load = os.getloadavg()
    print(f"\nfiles: {before_files} before, {after_files} after compaction "
          f"(agentsweep warehouse compact: {compact_s:.1f} s); "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cpus")
    print(f"median of {REPEAT} runs; duckdb = plain DuckDB in process, views + query")
    print(f"{'command (wall, s)':42} {'before':>8} {'after':>8} {'duckdb before':>14} "
          f"{'duckdb after':>13}")
    for name, (cli, duck) in before.items():
        cli_after, duck_after = after[name]
        print(f"{name:42} {cli:8.2f} {cli_after:8.2f} "
              f"{'' if duck is None else f'{duck:.2f}':>14} "
              f"{'' if duck_after is None else f'{duck_after:.2f}':>13}")


if __name__ == "__main__":
    main()
