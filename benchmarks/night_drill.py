"""A night at scale on one machine: `benchmarks/night_drill.py --trials N --in-flight K`

Pushes N stubbed trials through the real driver (``execute``), TrialWorker actors, sink and
warehouse on a local Ray, and measures the pipeline's own cost per trial: no model, no
sandbox. Each trial's body is a stub (``ExecuteOptions.trial_runner``, a benchmark-only hook)
that sleeps the simulated latency and returns a copy of one real trial's result (its events and
checks included, so encoding and writing cost what they cost), renamed to its own trial id.

Reports driver CPU per trial, worker CPU per trial (the TrialWorker processes), Ray's other
processes, trials/s, the most trials in flight, S3 requests per trial (``--s3``: a moto server
on loopback, its requests recorded), the peak RSS of the driver and of the workers, the
driver's RSS at each quarter of the trials (``--sweep``: through ``execute_plan``, as a
sweep's execute stage runs them) (``--trace-memory``: what its Python allocations
grew by in the third quarter), what the run's compaction at its end costs the driver
(``--compact task|driver``), and checks that every trial landed once. The driver takes its
specs from the plan's lazy walk of the grid, as ``agentsweep run`` does, so its memory is what
a driver holds for the trials in flight. The last line is ``driver_ms_per_trial=X
worker_ms_per_trial=Y trials_per_s=Z in_flight_max=K s3_requests_per_trial=R``.

``--driver-writes`` takes the path before workers wrote their parts: every result goes back to
the driver, which encodes and writes the batches itself.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from pipeline.runtime import hygiene  # noqa: E402

hygiene.apply()
os.environ.setdefault("AGENTSWEEP_PROGRESS", "0")

from benchmarks.throughput import CpuMeter, peak_rss_mib, rss_mib, worker_pids  # noqa: E402

SUITE = REPO / "catalogs" / "meeting_rooms" / "suites" / "intent_change.jsonl"
RUN_ID = "night"


@dataclass(frozen=True)
class StubTrial:
    """A trial body with no model and no sandbox: the latency, then a real result renamed. It
    waits in a trial thread of its worker, as a real trial does."""

    template: Any
    """A TrialResult of one real trial."""
    latency_s: float

    def __call__(self, spec: Any, ctx: Any, node_id: str) -> Any:
        time.sleep(self.latency_s)
        return self.renamed(spec, ctx, node_id)

    def renamed(self, spec: Any, ctx: Any, node_id: str) -> Any:
        trial = replace(self.template.trial, run_id=ctx.run_id, trial_id=spec.trial_id,
                        attempt_id=uuid.uuid4().hex, node_id=node_id)
        return replace(self.template, trial=trial)


@dataclass(frozen=True)
class AsyncStubTrial(StubTrial):
    """The same stub as a coroutine: it waits as a task on its worker's event loop, so ten
    thousand wait at once without a thread each."""

    async def __call__(self, spec: Any, ctx: Any, node_id: str) -> Any:
        await asyncio.sleep(self.latency_s)
        return self.renamed(spec, ctx, node_id)


def _config(root: Any, args: argparse.Namespace) -> Any:
    """A sweep of a grid of at least ``--trials`` trials."""
    from pipeline.catalog import load_suite
    from pipeline.sweep.config import SweepConfig

    repeats = -(-args.trials // len(load_suite(SUITE).scenarios))
    return SweepConfig(suites=[SUITE], memory_modes=["chat"], run_id=RUN_ID, warehouse=root,
                       repeats=repeats, max_in_flight=args.in_flight,
                       batch_size=args.batch_size)


class Taken:
    """The first ``limit`` specs of ``specs``, counted as the driver takes them."""

    def __init__(self, specs: Iterable[Any], limit: int) -> None:
        self._specs = itertools.islice(specs, limit)
        self.count = 0

    def __iter__(self) -> Iterator[Any]:
        for spec in self._specs:
            self.count += 1
            yield spec


class DriverMemory:
    """The driver's resident memory as the trials go: sampled at each tick of the loop with
    the trials taken so far, at each quarter of ``trials``. ``trace``: Python's allocations
    (tracemalloc, started at the first quarter, when the trials in flight are a full loop's)
    compared between the second quarter and the third, the tracebacks that grew most (slow:
    a diagnosis, not a measure)."""

    def __init__(self, taken: Taken, trials: int, trace: bool) -> None:
        self.taken = taken
        self.marks = [trials * q // 4 for q in (1, 2, 3)]
        self.rss_mib: dict[str, float] = {}
        self.trace = trace
        self.second: Any = None
        self.grew: list[str] = []

    def tick(self) -> None:
        while self.marks and self.taken.count >= self.marks[0]:
            mark = self.marks.pop(0)
            self.rss_mib[str(mark)] = round(rss_mib(os.getpid()), 1)
            if self.trace:
                self._trace(3 - len(self.marks))

    def end(self) -> None:
        """After the last trial (its rows committed)."""
        self.rss_mib[str(self.taken.count)] = round(rss_mib(os.getpid()), 1)

    def _trace(self, quarter: int) -> None:
        import tracemalloc

        if quarter == 1:
            tracemalloc.start(12)
        elif quarter == 2:
            self.second = tracemalloc.take_snapshot()
        else:
            grew = tracemalloc.take_snapshot().compare_to(self.second, "traceback")
            self.grew = [f"{s.size_diff / 1024:.0f} KiB, {s.count_diff:+d} blocks: "
                         + " < ".join(f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno}"
                                      for f in reversed(s.traceback[-6:]))
                         for s in grew[:15]]
            tracemalloc.stop()


def _template(spec: Any) -> Any:
    from pipeline.trial.run import RunContext, run_trial

    return run_trial(spec, RunContext(RUN_ID, "drill"))


@contextmanager
def _bucket(enabled: bool, recording: Path) -> Iterator[str | None]:
    """A loopback S3 (moto) with its requests recorded to ``recording``, or nothing."""
    if not enabled:
        yield None
        return
    from helpers.s3_server import DUMMY_ENV, moto_server

    os.environ.update(DUMMY_ENV, MOTO_RECORDER_FILEPATH=str(recording))
    with moto_server() as endpoint:
        os.environ["AWS_ENDPOINT_URL"] = endpoint  # before Ray starts: its workers inherit it
        from warehouse.location import client

        client().create_bucket(Bucket="night")
        yield endpoint


def _recording(endpoint: str, action: str) -> None:
    request = urllib.request.Request(f"{endpoint}/moto-api/recorder/{action}", method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass


class InFlight:
    """The most trials the driver had in flight at once (its ``_submit`` watched)."""

    def __init__(self) -> None:
        from pipeline.execution import dispatch

        self.most = 0
        original = dispatch.Execution._submit

        def watched(execution: Any, spec: Any, number: int) -> None:
            original(execution, spec, number)
            self.most = max(self.most, len(execution.in_flight))

        dispatch.Execution._submit = watched  # type: ignore[method-assign, assignment]


def drill(args: argparse.Namespace) -> dict[str, Any]:
    """The drill in a scratch folder, removed after it unless ``--keep``."""
    scratch = Path(tempfile.mkdtemp(prefix="night-drill-"))
    try:
        return _drill(args, scratch)
    finally:
        if args.keep:
            print(f"kept {scratch}", file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def _drill(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    from pipeline.execution.executor import ExecuteOptions, execute, ray_session, sized_pool
    from pipeline.execution.parts import PartsConfig
    from pipeline.sweep.stages import BatchSink, plan
    from pipeline.trial.run import RunContext
    from warehouse.location import parse_location
    from warehouse.query import run_sql
    from warehouse.writer import WarehouseWriter

    recording = scratch / "s3-requests.jsonl"
    with _bucket(args.s3, recording) as endpoint:
        root = parse_location("s3://night/warehouse") if endpoint else scratch / "warehouse"
        config = _config(root, args)
        pending = plan(config).pending  # the grid's lazy walk, as `agentsweep run` has it
        stub = (StubTrial if args.threads else AsyncStubTrial)(_template(pending[0]),
                                                               args.latency_ms / 1000)
        specs = Taken(pending, args.trials)
        memory = DriverMemory(specs, args.trials, args.trace_memory)
        watch = InFlight()
        with ray_session(num_cpus=2) as ray:
            pool = sized_pool(ray, args.in_flight, args.workers)
            ray.get([actor.pid.remote() for actor in pool.actors])
            workers = len(pool.actors)
            sink = BatchSink(WarehouseWriter(root, RUN_ID), args.batch_size)
            parts = None if args.driver_writes else PartsConfig.for_root(
                root, RUN_ID, args.batch_size, 5.0, ray.get_runtime_context().get_node_id())

            def on_tick() -> None:
                sink.flush_if_due()
                memory.tick()

            options = ExecuteOptions(workers=args.workers, on_tick=on_tick,
                                     parts=parts, on_part=sink.commit,
                                     on_outcome=sink.outcome, trial_runner=stub)
            if endpoint:
                _recording(endpoint, "start-recording")
            meter = CpuMeter()
            started = time.monotonic()
            if args.sweep:
                statuses = _sweep(config, specs, args.trials, stub, memory)
            else:
                execute(specs, RunContext(RUN_ID, "drill"), sink, args.in_flight,
                        options=options, on_attempt=sink.attempt)
                sink.flush()
                statuses = sink.statuses
            wall = time.monotonic() - started
            memory.end()
            cpu = meter.used()
            if endpoint:
                _recording(endpoint, "stop-recording")
            rss = {"driver_mib": peak_rss_mib(os.getpid()),
                   "workers_mib": sum(peak_rss_mib(p) for p in worker_pids())}
            compaction = _compaction(ray, root, args.compact) if args.compact else None
        landed = run_sql(root, "select count(*), count(distinct trial_id) from trials_all"
                         ).rows[0]
        requests = (sum(1 for _ in recording.open()) if recording.exists() else 0)
    n = specs.count
    return {
        "trials": n, "landed": list(landed), "path": "driver" if args.driver_writes else "workers",
        "in_flight": args.in_flight, "latency_ms": args.latency_ms, "workers": workers,
        "stub": "thread" if args.threads else "async",
        "wall_s": round(wall, 2), "trials_per_s": round(n / wall, 1),
        "cpu_ms_per_trial": {k: round(1000 * v / n, 3) for k, v in cpu.items()},
        "in_flight_max": watch.most, "s3_requests": requests,
        "s3_requests_per_trial": round(requests / n, 4), "peak_rss": rss,
        "driver_rss_mib": memory.rss_mib, "driver_grew": memory.grew,
        "statuses": statuses, "compaction": compaction, "sweep": args.sweep,
        "load": os.getloadavg(),
    }


def _sweep(config: Any, specs: Taken, trials: int, stub: StubTrial,
           memory: DriverMemory) -> dict[str, int]:
    """The trials through ``execute_plan``, as a sweep's execute stage runs them (its sink,
    progress, landed steps, attempt numbering and parts), the stub put in its options."""
    from pipeline.execution import executor
    from pipeline.sweep.pending import PendingSpecs
    from pipeline.sweep.stages import SweepPlan, execute_plan, plan

    original = executor.execute

    def stubbed(*args: Any, options: Any, **kwargs: Any) -> int:
        ticked = options.on_tick

        def on_tick() -> None:
            ticked()
            memory.tick()

        options = replace(options, trial_runner=stub, on_tick=on_tick)
        return original(*args, options=options, **kwargs)

    executor.execute = stubbed  # type: ignore[assignment]
    try:
        full = plan(config)
        sweep_plan = SweepPlan(RUN_ID, full.suites, trials, PendingSpecs(lambda: iter(specs),
                                                                         trials),
                               full.models, full.user_model)
        return execute_plan(config, sweep_plan)
    finally:
        executor.execute = original  # type: ignore[assignment]


def _compaction(ray: Any, root: Any, where: str) -> dict[str, Any]:
    """The run's compaction at its end, as a sweep does it (``task``: a Ray task the driver
    waits for) or in the driver (``driver``); the driver's CPU and peak RSS around it."""
    from pipeline.sweep.end_compaction import compact_at_end

    meter = CpuMeter()
    before = peak_rss_mib(os.getpid())
    started = time.monotonic()
    ended = compact_at_end(root, RUN_ID, ray if where == "task" else None)
    return {"where": where, "in_task": ended.in_task, "failed": ended.failed,
            "wall_s": round(time.monotonic() - started, 2),
            "driver_cpu_s": round(meter.used()["driver"], 2),
            "driver_peak_rss_mib": [round(before, 1), round(peak_rss_mib(os.getpid()), 1)],
            "files": [[t.table, t.files_before, t.files_after] for t in ended.tables]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20_000)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--s3", action="store_true", help="a loopback S3 warehouse (moto)")
    parser.add_argument("--threads", action="store_true",
                        help="the stub waits in a trial thread (default: a task on the loop)")
    parser.add_argument("--trace-memory", action="store_true",
                        help="trace the driver's allocations between the first and third "
                             "quarters (slow)")
    parser.add_argument("--sweep", action="store_true",
                        help="run the trials through execute_plan, as a sweep's execute "
                             "stage does (default: execute with the drill's own sink)")
    parser.add_argument("--compact", choices=("task", "driver"), default=None,
                        help="compact the run at its end, in a Ray task (as a sweep does) or "
                             "in the driver; its cost to the driver is reported")
    parser.add_argument("--keep", action="store_true",
                        help="keep the scratch folder (its warehouse; default: removed)")
    parser.add_argument("--driver-writes", action="store_true",
                        help="the driver encodes and writes every batch (the path before)")
    args = parser.parse_args(argv)
    out = drill(args)
    print(json.dumps(out, indent=1))
    cpu = out["cpu_ms_per_trial"]
    print(f"driver_ms_per_trial={cpu['driver']:.3f} worker_ms_per_trial={cpu['workers']:.3f} "
          f"trials_per_s={out['trials_per_s']:.1f} in_flight_max={out['in_flight_max']} "
          f"s3_requests_per_trial={out['s3_requests_per_trial']:.4f}")
    return 0 if out["landed"] == [out["trials"], out["trials"]] else 1


if __name__ == "__main__":
    sys.exit(main())
