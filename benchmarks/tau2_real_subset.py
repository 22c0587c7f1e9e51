"""tau2 retail with a real model on both sides: `.venv/bin/python benchmarks/tau2_real_subset.py`

Runs the first ``--tasks`` tasks of tau2's own test split (``split_tasks.json``; default 10:
5, 9, 12, 17, 18, 26, 27, 32, 33, 36) ``--repeats`` times (default 3) with the bundled local
model as the agent **and** as the simulated user, through the path a user runs (``agentsweep
run``: Prefect, Ray, the node's llama.cpp server on 127.0.0.1), one trial at a time (two
trials at once would share the server's two slots among four prompts and lose its prompt
cache). Then it prints, from the warehouse:

- pass^1..k (``report pass_hat_k``: tau2's C(c, k) / C(n, k), incomplete trials left out);
- every trial: status, verdict, turns, model calls of the agent and of the user, wall time,
  and where it went wrong (the first failing check, or the error);
- where the dialogs went wrong, counted.

``--run-id R`` names the run; an existing R is resumed (only its unfinished trials run), and
``--report-only`` prints the figures of R without running anything. Set ``AGENTSWEEP_HOME``
to keep the run out of your main warehouse. Run it on an otherwise idle machine: it is
CPU-bound (about 2-4 minutes per trial on 2 CPUs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SUITE = REPO / "catalogs" / "tau2_retail" / "suites" / "retail.jsonl"
SPLIT = REPO.parent / "shared" / "peers" / "tau2-retail" / "split_tasks.json"
TEST_SPLIT = ["5", "9", "12", "17", "18", "26", "27", "32", "33", "36", "38", "39"]
"""The start of tau2's test split (split_tasks.json), kept here so the benchmark does not need
the peer folder."""


def _agentsweep(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / ".venv" / "bin" / "agentsweep"), *args], text=True,
                          capture_output=True, check=check)


def _sql(query: str) -> list[dict[str, object]]:
    out = _agentsweep("sql", query, "--format", "json").stdout
    return list(json.loads(out))


def run(run_id: str, tasks: list[str], repeats: int, user_max_turns: int) -> float:
    exists = bool(_sql(f"select 1 from runs where run_id = '{run_id}'"))
    args = ["run", "--suite", str(SUITE), "--model", "local/default", "--user-model",
            "local/default", "--memory-mode", "chat", "--repeats", str(repeats),
            "--max-in-flight", "1", "--user-max-turns", str(user_max_turns),
            "--run-id", run_id]
    for task in tasks:
        args += ["--scenario", task]
    if exists:
        args.append("--resume")
    began = time.perf_counter()
    done = subprocess.run([str(REPO / ".venv" / "bin" / "agentsweep"), *args], text=True)
    wall = time.perf_counter() - began
    if done.returncode not in (0, 1, 3):  # 1: failures found; 3: some trials incomplete
        raise SystemExit(f"agentsweep run exited {done.returncode}")
    return wall


def report(run_id: str) -> None:
    print(_agentsweep("report", "pass_hat_k", "--run-id", run_id).stdout)
    rows = _sql(f"""
        select scenario_id, repeat, status, error_kind, passed, turns, model_calls,
               user_model_calls, round(latency_ms / 1000) as seconds,
               coalesce(first_violation_check, error_kind, '') as went_wrong
        from trials where run_id = '{run_id}' order by scenario_id::int, repeat""")
    header = ("task", "rep", "status", "passed", "turns", "agent calls", "user calls", "s",
              "where it went wrong")
    print(" | ".join(header))
    for r in rows:
        print(" | ".join(str(v) for v in (
            r["scenario_id"], r["repeat"], r["status"], r["passed"], r["turns"],
            r["model_calls"], r["user_model_calls"], r["seconds"], r["went_wrong"])))
    counted = _sql(f"""
        select coalesce(regexp_replace(first_violation_check, '@.*', ''), error_kind,
                        'passed') as went_wrong, count(*) as trials
        from trials where run_id = '{run_id}' group by all order by 2 desc, 1""")
    print("\nwhere the dialogs went wrong:")
    for r in counted:
        print(f"  {r['trials']:>3}  {r['went_wrong']}")
    total = _sql(f"""select count(*) as n, round(avg(latency_ms) / 1000) as s,
                            sum(model_calls) as agent, sum(user_model_calls) as user_calls
                     from trials where run_id = '{run_id}'""")[0]
    print(f"\n{total['n']} trials, {total['s']} s per trial on average; {total['agent']} "
          f"agent calls, {total['user_calls']} user simulator calls")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-id", default="tau2-real-subset")
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--user-max-turns", type=int, default=10)
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    split = (json.loads(SPLIT.read_text())["test"] if SPLIT.exists() else TEST_SPLIT)
    tasks = list(split[:args.tasks])
    if not args.report_only:
        print(f"tasks {', '.join(tasks)} x {args.repeats} repeats "
              f"(AGENTSWEEP_HOME={os.environ.get('AGENTSWEEP_HOME', '.home')})", flush=True)
        wall = run(args.run_id, tasks, args.repeats, args.user_max_turns)
        print(f"\nwall time of the run: {wall:.0f} s")
    report(args.run_id)


if __name__ == "__main__":
    main()
