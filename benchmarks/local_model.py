"""The bundled local model: `.venv/bin/python benchmarks/local_model.py`

(a) configurations: for each slots x threads setting (``--configs 1x1,1x2,2x2``) the server is
    started fresh and ``--trials`` trials (a fixed mix of scenarios and memory modes, at most
    ``slots`` at once) run in process through LiteLLM: trials per minute, seconds per model call
    and per trial, and the share of prompt tokens served from the server's prompt cache.
(b) a sweep: with ``--run-id R`` (and ``AGENTSWEEP_HOME``), the same figures per memory mode
    and call purpose from a run in the warehouse, and the share of the trials' wall time spent
    in model calls.

Run it on an otherwise idle machine: the figures are CPU-bound. Everything stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pipeline.runtime import hygiene  # noqa: E402

hygiene.apply()

MIX = [("V1", "chat"), ("GP-C1", "chat"), ("V1", "summary"), ("F1", "structured")]


def _specs(count: int) -> list[Any]:
    from pipeline.catalog import bundled_suites, load_suites
    from pipeline.models.config import ModelConfig
    from pipeline.sweep.grid import expand

    model = ModelConfig("local/default", temperature=0.7, seed=11).resolved()
    suites = load_suites(bundled_suites())
    grid = [s for s in expand(suites, [model], ["default"], ["chat", "summary", "structured"],
                              max(1, count))
            if (s.scenario.id, s.memory_mode) in MIX]
    grid.sort(key=lambda s: (s.repeat, MIX.index((s.scenario.id, s.memory_mode))))
    return grid[:count]


def run_config(slots: int, threads: int, trials: int) -> dict[str, float]:
    from pipeline.local.catalog import local_model
    from pipeline.local.server import LocalModelServer, ServeOptions
    from pipeline.local.weights import ensure_weights
    from pipeline.trace import AssistantMessage, MemoryUpdate
    from pipeline.trial.run import RunContext, run_trial

    spec = local_model("local/default")
    started = time.perf_counter()
    server = LocalModelServer(spec, ensure_weights(spec),
                              ServeOptions(slots=slots, threads=threads)).start()
    load_s = time.perf_counter() - started
    specs = [replace(s, extra={"api_base": server.api_base}) for s in _specs(trials)]
    ctx = RunContext("bench", "bench")
    began = time.perf_counter()
    with ThreadPoolExecutor(max_workers=slots) as pool:
        results = list(pool.map(lambda s: run_trial(s, ctx), specs))
    wall = time.perf_counter() - began
    server.stop()
    calls = [e for r in results for e in r.events
             if isinstance(e, AssistantMessage | MemoryUpdate)]
    prompt = sum(e.input_tokens or 0 for e in calls)
    cached = sum(e.cached_input_tokens or 0 for e in calls)
    return {
        "load_s": load_s, "wall_s": wall, "trials_per_min": 60 * len(results) / wall,
        "s_per_call": statistics.mean(e.latency_ms or 0.0 for e in calls) / 1000,
        "s_per_trial": statistics.mean(r.trial.latency_ms for r in results) / 1000,
        "calls": len(calls), "cache_hit": cached / prompt if prompt else 0.0,
        "statuses": " ".join(f"{k}={v}" for k, v in sorted(
            {s: sum(r.status == s for r in results) for s in {r.status for r in results}}
            .items())),
    }


def print_sweep(run_id: str) -> None:
    from warehouse.query import run_named

    result = run_named(hygiene.warehouse_root(), "model_call_timings", {"run_id": run_id})
    print(f"(b) sweep {run_id}: model calls by memory mode and purpose")
    print("  " + " | ".join(result.columns))
    for row in result.rows:
        print("  " + " | ".join("-" if v is None else str(v) for v in row))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--configs", default="1x1,1x2,2x2", help="slots x threads, comma list")
    parser.add_argument("--trials", type=int, default=4, help="trials per configuration")
    parser.add_argument("--run-id", help="also report this sweep from the warehouse")
    args = parser.parse_args()
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if args.run_id:
        print_sweep(args.run_id)
    if args.trials <= 0:
        return
    print(f"(a) {args.trials} trials per configuration, mix {MIX}")
    for slots, threads in (tuple(int(x) for x in c.split("x")) for c in args.configs.split(",")):
        figures = run_config(slots, threads, args.trials)
        print(f"  slots={slots} threads={threads}: " + ", ".join(
            f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in figures.items()),
            flush=True)


if __name__ == "__main__":
    main()
