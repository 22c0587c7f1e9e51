"""Throughput, overhead and memory of the executor: `.venv/bin/python benchmarks/throughput.py`

(a) overhead: N trials (default 2,000) of the bundled meeting-room suite against the in-process,
    zero-latency ``reference/golden``, through ``execute_plan`` (Ray workers, retries bookkeeping,
    Parquet batches): trials/s and CPU-ms per model call (driver, workers, Ray's own processes).
(b) latency-bound: the reference HTTP server in its own process, 100 ms per answer, a
    concurrency limit of 64 on ``reference-http/golden`` (LiteLLM's OpenAI path; each request
    names its script by id, ``pipeline.reference.scripts``): model calls/s against the 640/s
    ceiling; run once with the server as shipped and once with TCP_NODELAY on its sockets.
(c) memory: peak RSS of the driver and of the workers for 1k and 20k trials, each in a fresh
    process with its own Ray.

Everything stays on 127.0.0.1. Options: ``--only a,b,c``, ``--trials``, ``--memory-sizes``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pipeline.runtime import hygiene  # noqa: E402

hygiene.apply()
os.environ.setdefault("AGENTSWEEP_PROGRESS", "0")

SUITE = REPO / "catalogs" / "meeting_rooms" / "suites" / "intent_change.jsonl"
TICK = os.sysconf("SC_CLK_TCK")
LATENCY_MS = 100
LIMIT = 64


# --- process accounting (Linux /proc) ---------------------------------------------------------

def _stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()


def cpu_s(pid: int) -> float:
    try:
        fields = _stat(pid)
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                children.setdefault(int(_stat(int(entry))[1]), []).append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def peak_rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as handle:
            match = re.search(r"VmHWM:\s+(\d+) kB", handle.read())
    except OSError:
        return 0.0
    return int(match.group(1)) / 1024 if match else 0.0


def rss_mib(pid: int) -> float:
    """A process's resident memory now (VmRSS), 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            match = re.search(r"VmRSS:\s+(\d+) kB", handle.read())
    except OSError:
        return 0.0
    return int(match.group(1)) / 1024 if match else 0.0


def worker_pids() -> list[int]:
    return [p for p in descendants(os.getpid()) if cmdline(p).startswith("ray::TrialWorker")]


class CpuMeter:
    """CPU seconds of the driver, the TrialWorker actors and every other Ray process: every
    process this one started but those in ``apart`` (the reference server, counted on its
    own)."""

    def __init__(self, apart: frozenset[int] = frozenset()) -> None:
        self.apart = apart
        self.start = self._sample()

    def _sample(self) -> dict[str, float]:
        driver = cpu_s(os.getpid())
        workers = others = 0.0
        for pid in descendants(os.getpid()):
            if pid in self.apart:
                continue
            if cmdline(pid).startswith("ray::TrialWorker"):
                workers += cpu_s(pid)
            else:
                others += cpu_s(pid)
        return {"driver": driver, "workers": workers, "ray": others}

    def used(self) -> dict[str, float]:
        end = self._sample()
        return {k: end[k] - self.start[k] for k in end}


# --- the sweeps -------------------------------------------------------------------------------

def _config(root: Path, run_id: str, trials: int, **extra: Any) -> Any:
    from pipeline.catalog import load_suite
    from pipeline.sweep.config import SweepConfig

    scenarios = len(load_suite(SUITE).scenarios)
    return SweepConfig(suites=[SUITE], memory_modes=["chat"], run_id=run_id, warehouse=root,
                       repeats=-(-trials // scenarios), **extra)


def _plan(config: Any, trials: int) -> Any:
    from pipeline.sweep.stages import plan

    full = plan(config)
    return replace(full, pending=full.pending[:trials])


def _warm(ray: Any, max_in_flight: int) -> float:
    """Start the worker pool the sweep will use; returns the seconds it took."""
    from pipeline.execution.executor import sized_pool

    started = time.monotonic()
    pool = sized_pool(ray, max_in_flight)
    ray.get([actor.pid.remote() for actor in pool.actors])
    return time.monotonic() - started


def _calls(root: Path, run_id: str) -> int:
    from warehouse.query import run_sql

    return int(run_sql(root, "select sum(model_calls) from trials where run_id = $run_id",
                       {"run_id": run_id}).rows[0][0] or 0)


def overhead(ray: Any, root: Path, trials: int) -> dict[str, Any]:
    from pipeline.sweep.stages import execute_plan

    config = _config(root, "overhead", trials)
    sweep_plan = _plan(config, trials)
    startup = _warm(ray, config.max_in_flight)
    meter = CpuMeter()
    started = time.monotonic()
    statuses = execute_plan(config, sweep_plan)
    wall = time.monotonic() - started
    cpu = meter.used()
    calls = _calls(root, "overhead")
    return {"trials": sum(statuses.values()), "statuses": statuses, "model_calls": calls,
            "wall_s": wall, "trials_per_s": len(sweep_plan.pending) / wall,
            "calls_per_s": calls / wall, "worker_startup_s": startup,
            "cpu_ms_per_call": {k: 1000 * v / calls for k, v in cpu.items()},
            "cpu_ms_per_call_total": 1000 * sum(cpu.values()) / calls}


SERVER_CODE = """
import json, signal, sys, time
from pipeline.reference import server
from pipeline.models.faults import FaultProfile
server._Handler.disable_nagle_algorithm = sys.argv[2] == "nodelay"
arrivals = []
decide = server.ReferenceHTTPServer.decide
def timed(self, profile):
    arrivals.append(time.time())
    return decide(self, profile)
server.ReferenceHTTPServer.decide = timed
def dump(*_):
    with open(sys.argv[3], "w") as out:
        json.dump(arrivals, out)
    sys.exit(0)
signal.signal(signal.SIGTERM, dump)
server.serve_forever(0, FaultProfile(latency_ms=float(sys.argv[1])),
                     on_ready=lambda port: print(port, flush=True))
"""


def active_rate(arrivals: list[float]) -> float:
    """Calls/s while the sweep is in full flight: the requests between the 10th and the 90th
    percentile of arrival times (the ramp-up and the tail left out)."""
    times = sorted(arrivals)
    low, high = len(times) // 10, len(times) * 9 // 10
    span = times[high] - times[low]
    return (high - low) / span if span > 0 else 0.0


def latency_bound(ray: Any, root: Path, trials: int, nodelay: bool, latency_ms: float,
                  limit: int) -> dict[str, Any]:
    from pipeline.models.config import ModelConfig
    from pipeline.sweep.stages import execute_plan

    arrivals_file = root.parent / f"arrivals-{time.time_ns()}.json"
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER_CODE, str(latency_ms), "nodelay" if nodelay else "-",
         str(arrivals_file)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        cwd=REPO)
    try:
        assert server.stdout is not None
        api_base = f"http://127.0.0.1:{int(server.stdout.readline())}/v1"
        run_id = f"latency-{'nodelay' if nodelay else 'shipped'}-{int(latency_ms)}-{limit}"
        config = _config(root, run_id, trials, max_in_flight=2 * limit,
                         models=[ModelConfig("reference-http/golden", concurrency=limit)])
        sweep_plan = _plan(config, trials)
        pending = [replace(s, extra={"api_base": api_base, "api_key": "sk-bench-not-a-key"})
                   for s in sweep_plan.pending]
        startup = _warm(ray, config.max_in_flight)
        meter = CpuMeter(apart=frozenset({server.pid}))
        server_cpu = cpu_s(server.pid)
        started = time.monotonic()
        statuses = execute_plan(config, replace(sweep_plan, pending=pending))
        wall = time.monotonic() - started
        cpu = meter.used()
        server_cpu = cpu_s(server.pid) - server_cpu
    finally:
        server.terminate()
        server.wait(timeout=30)
    arrivals = json.loads(arrivals_file.read_text()) if arrivals_file.exists() else []
    calls = _calls(root, run_id)
    ceiling = limit * 1000 / latency_ms
    return {"trials": sum(statuses.values()), "statuses": statuses, "model_calls": calls,
            "wall_s": wall, "calls_per_s": calls / wall, "latency_ms": latency_ms,
            "limit": limit, "fraction_of_limit": calls / wall / ceiling,
            "active_fraction_of_limit": active_rate(arrivals) / ceiling,
            "worker_startup_s": startup,
            "cpu_ms_per_call": {**{k: 1000 * v / calls for k, v in cpu.items()},
                                "server": 1000 * server_cpu / calls}}


def memory_child(trials: int) -> dict[str, Any]:
    """Run in a fresh process: one sweep of ``trials``; peak RSS of driver and workers."""
    from pipeline.execution.executor import ray_session
    from pipeline.sweep.stages import execute_plan

    root = Path(tempfile.mkdtemp(prefix="agentsweep-bench-mem-"))
    try:
        config = _config(root / "wh", f"mem-{trials}", trials)
        with ray_session(num_cpus=os.cpu_count(), object_store_bytes=256 * 1024 * 1024) as ray:
            sweep_plan = _plan(config, trials)
            _warm(ray, config.max_in_flight)
            started = time.monotonic()
            statuses = execute_plan(config, sweep_plan)
            wall = time.monotonic() - started
            workers = {pid: peak_rss_mib(pid) for pid in worker_pids()}
            driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return {"trials": sum(statuses.values()), "wall_s": wall, "driver_peak_rss_mib": driver,
                "worker_peak_rss_mib": sorted(workers.values())}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def memory(sizes: list[int]) -> dict[int, dict[str, Any]]:
    results = {}
    for size in sizes:
        child = subprocess.run([sys.executable, __file__, "--memory-child", str(size)],
                               capture_output=True, text=True, check=True, cwd=REPO)
        results[size] = json.loads(child.stdout.strip().splitlines()[-1])
    return results


# --- the report -------------------------------------------------------------------------------

def _print_overhead(result: dict[str, Any]) -> None:
    cpu = result["cpu_ms_per_call"]
    print(f"(a) overhead, in-process reference/golden, {result['trials']} trials "
          f"({result['model_calls']} model calls) in {result['wall_s']:.1f} s")
    print(f"    {result['trials_per_s']:.1f} trials/s, {result['calls_per_s']:.0f} model calls/s "
          f"(worker start-up {result['worker_startup_s']:.1f} s, not counted)")
    print(f"    CPU per model call: {result['cpu_ms_per_call_total']:.2f} ms = driver "
          f"{cpu['driver']:.2f} + workers {cpu['workers']:.2f} + Ray processes {cpu['ray']:.2f}")
    print(f"    statuses {result['statuses']}")


def _print_latency(result: dict[str, Any], label: str) -> None:
    cpu = result["cpu_ms_per_call"]
    latency_ms, limit = result["latency_ms"], result["limit"]
    ceiling = limit * 1000 / latency_ms
    per_call = sum(cpu.values())  # the server's share included: it runs on the same cores
    cores = os.cpu_count() or 1
    print(f"(b) latency-bound, server {label}: {result['model_calls']} calls of "
          f"{latency_ms:.0f} ms, limit {limit}, in {result['wall_s']:.1f} s")
    print(f"    {result['calls_per_s']:.0f} calls/s = {result['fraction_of_limit']:.2f} of "
          f"{ceiling:.0f}/s over the whole sweep, {result['active_fraction_of_limit']:.2f} in "
          f"full flight (10th-90th percentile of arrivals)")
    print(f"    CPU per call: workers {cpu['workers']:.2f} ms, driver {cpu['driver']:.2f}, "
          f"Ray {cpu['ray']:.2f}, server {cpu['server']:.2f}; CPU ceiling "
          f"{cores} cores / {per_call:.2f} ms = {1000 * cores / per_call:.0f} calls/s")
    print(f"    statuses {result['statuses']}")


def _print_memory(results: dict[int, dict[str, Any]]) -> None:
    print("(c) memory, peak RSS (MiB), each size in a fresh process with its own Ray")
    for size, result in results.items():
        workers = ", ".join(f"{w:.0f}" for w in result["worker_peak_rss_mib"])
        print(f"    {size:>6} trials: driver {result['driver_peak_rss_mib']:.0f}, "
              f"workers [{workers}] ({result['wall_s']:.0f} s)")
    small, large = results[min(results)], results[max(results)]
    ratio = large["driver_peak_rss_mib"] / small["driver_peak_rss_mib"]
    worker_ratio = max(large["worker_peak_rss_mib"]) / max(small["worker_peak_rss_mib"])
    print(f"    ratio {max(results)}/{min(results)}: driver {ratio:.2f}, "
          f"workers {worker_ratio:.2f} (target <= 1.5)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", default="a,b,c")
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--latency-trials", type=int, default=600)
    parser.add_argument("--latency-ms", type=float, default=LATENCY_MS,
                        help="each answer of the latency-bound server (b)")
    parser.add_argument("--limit", type=int, default=LIMIT,
                        help="concurrent calls allowed in (b); twice as many trials in flight")
    parser.add_argument("--no-nodelay", action="store_true",
                        help="(b) with the server as shipped only")
    parser.add_argument("--memory-sizes", default="1000,20000")
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        print(json.dumps(memory_child(args.memory_child)))
        return
    only = set(args.only.split(","))
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    if only & {"a", "b"}:
        from pipeline.execution.executor import ray_session

        root = Path(tempfile.mkdtemp(prefix="agentsweep-bench-"))
        try:
            with ray_session(num_cpus=os.cpu_count(),
                             object_store_bytes=256 * 1024 * 1024) as ray:
                if "a" in only:
                    _print_overhead(overhead(ray, root / "wh", args.trials))
                variants = [False] if args.no_nodelay else [False, True]
                for nodelay, label in itertools.product(
                        variants if "b" in only else [], ["as shipped"]):
                    _print_latency(latency_bound(ray, root / "wh", args.latency_trials, nodelay,
                                                 args.latency_ms, args.limit),
                                   "with TCP_NODELAY" if nodelay else label)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    if "c" in only:
        _print_memory(memory([int(s) for s in args.memory_sizes.split(",")]))


if __name__ == "__main__":
    main()
