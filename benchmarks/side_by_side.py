"""agentsweep side by side with Inspect AI: `.venv/bin/python benchmarks/side_by_side.py`

The workload: one 3-turn meeting-room dialog (scenario R1 of the meeting-room intent_change
suite: 6 model calls and 3 tool calls a trial) answered by the scripted ``golden`` model.

The HTTP path first, the one every real provider call takes: agentsweep as
``reference-http/golden`` (LiteLLM's OpenAI path) and Inspect AI 0.3.285 (``--with-inspect``)
as ``openai-api/ref/golden`` (its OpenAI-compatible provider), both to one ``agentsweep
reference-server`` on 127.0.0.1, which answers at once. Both send what a real provider gets:
the golden script is registered with the server once and each request names it by id
(``pipeline.reference.scripts``). Then the in-process path, labelled as such: agentsweep's
``reference/golden`` (no LiteLLM, no HTTP) beside Inspect's ``mockllm`` answering from the same
script (``inspect_side.py``). Inspect's tools answer a fixed JSON; agentsweep's run the domain's
sandbox (a little more work on its side).

Measured, A/B interleaved (agentsweep, then Inspect, for each step):

1. ``cold``: a 1-trial run with a fresh ``AGENTSWEEP_HOME`` and ``RAY_TMPDIR`` (Prefect's
   ephemeral API, a local Ray); for Inspect fresh log and data dirs;
2. ``agentsweep up`` (Inspect has no stack), shown with its wall time and CPU;
3. ``in-process first``: a 1-trial in-process run, the first on the stack;
4. ``warm``: a 1-trial HTTP run, the first over HTTP on the stack (a worker that has not
   imported LiteLLM yet would make this trial wait); 5. ``warm again``;
6. ``many@C``: ``--trials`` trials (default 1000) over HTTP with C trials in flight, for each C
   of ``--in-flight`` (default 64; Inspect: ``--max-connections C --max-samples C``);
7. ``in-process again`` and ``in-process many`` (N trials, 64 in flight); then ``down``.

CPU (user + system) and RSS are summed over each command's process tree, sampled from /proc
every 100 ms: the command, its descendants and every process whose command line or environment
names the run's home or Ray temp dir (the warm stack's Ray and Prefect, Ray's workers). The
reference server's CPU is read apart for each step and counted on neither side; its count of
the generate requests each step made is printed beside each tool's own count. Marginal CPU per
model call = (CPU of the N-trial run - CPU of the second 1-trial run on the warm stack) /
(6 x (N - 1)); in ``--quick`` of the first, which also starts the stack's workers: a smoke
figure only.
``--latency`` adds the latency-bound figures of ``throughput.py`` (case b) over HTTP: L=1 s with
C=256 and L=100 ms with C=64, against min(C/L, cores / CPU per call).

Loopback only: when ``unshare -rn`` works the whole benchmark re-runs itself in a new user and
network namespace whose only interface is ``lo`` (Inspect is installed before that). Options:
``--quick`` (a smoke run of the HTTP path: ``up``, ``warm`` and ``many@C`` of 20 trials),
``--trials``, ``--in-flight``, ``--with-inspect``, ``--latency``, ``--latency-trials``,
``--no-namespace``, ``--json``, ``--new-machine`` (the cold run without the machine's
migrated Prefect template) and ``--trials-as threads`` (agentsweep's trials in a thread each
rather than as coroutines: ``agentsweep run --trials-as``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from inspect_side import INSPECT_VENV, INSPECT_VERSION, SCENARIO, SUITE, Inspect, install_inspect
from measured import Measured, measure
from side_by_side_table import LATENCY_CASES, print_latency, report
from startup import _env
from throughput import cpu_s

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
IN_FLIGHT = 64
HTTP_MODEL = "reference-http/golden"
IN_PROCESS_MODEL = "reference/golden"
INSIDE = "AGENTSWEEP_BENCH_IN_NAMESPACE"

Results = dict[str, dict[str, Measured]]
"""Tool -> step -> what was measured."""


# --- the reference server ---------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ReferenceServer:
    """``agentsweep reference-server`` on a free loopback port, its log in ``work``."""

    def __init__(self, work: Path) -> None:
        port = _free_port()
        self.log = work / "server.log"
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [str(BIN / "agentsweep"), "reference-server", "--port", str(port)], env=clean,
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.api_base = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the reference server did not start") from None
                time.sleep(0.2)

    def served(self) -> int:
        """Generate requests answered so far (it logs each request; registrations left out)."""
        with self.log.open("rb") as log:
            return sum(b'"POST /' in line and b'"POST /agentsweep/' not in line for line in log)

    def cpu_s(self) -> float:
        return cpu_s(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


# --- agentsweep -------------------------------------------------------------------------------

FIRST_TRIAL_SQL = ("select epoch(min(started_at)), epoch(arg_min(finished_at, started_at)) - "
                   "epoch(min(started_at)), sum(model_calls) from trials where run_id = $run_id")


class Agentsweep:
    """``agentsweep`` commands in one home with its own Ray temp dir."""

    def __init__(self, work: Path, label: str, api_base: str, new_machine: bool = False,
                 trials_as: str = "coroutines") -> None:
        self.name = "agentsweep"
        self.trials_as = trials_as
        self.new_machine = new_machine
        self.home = work / f"home-{label}"
        self.ray_tmp = tempfile.mkdtemp(prefix=f"asw-{label}-", dir="/tmp")  # short socket paths
        self.log = work / f"agentsweep-{label}.log"
        self.phases = work / f"phases-{label}.jsonl"
        self.api_base = api_base
        self.runs = 0

    def env(self) -> dict[str, str]:
        env = {**_env(self.home, self.phases), "RAY_TMPDIR": self.ray_tmp}
        if self.new_machine:  # an empty template cache: this run migrates a database itself
            env["AGENTSWEEP_PREFECT_TEMPLATE_CACHE"] = str(self.home.parent / "template-cache")
        return env

    def command(self, *args: str) -> Measured:
        return measure([str(BIN / "agentsweep"), *args], self.env(), self.ray_tmp, self.log)

    def run(self, trials: int, in_flight: int, model: str = HTTP_MODEL) -> Measured:
        self.runs += 1
        run_id = f"bench-{self.runs}"
        endpoint = ["--api-base", self.api_base] if model == HTTP_MODEL else []
        self.phases.unlink(missing_ok=True)
        started = time.time()
        result = self.command(
            "run", "--model", model, *endpoint, "--suite", str(SUITE), "--scenario", SCENARIO,
            "--memory-mode", "chat", "--repeats", str(trials), "--max-in-flight",
            str(in_flight), "--run-id", run_id, "--trials-as", self.trials_as)
        self._first_trial(result, run_id, started)
        if self.phases.exists():
            for line in self.phases.read_text().splitlines():
                mark = json.loads(line)
                result.phases.setdefault(mark["phase"], mark["t"] - started)
        return result

    def _first_trial(self, result: Measured, run_id: str, started: float) -> None:
        sys.path.insert(0, str(REPO))
        from warehouse.query import run_sql

        rows = run_sql(self.home / "warehouse", FIRST_TRIAL_SQL, {"run_id": run_id}).rows
        if rows and rows[0][0] is not None:
            result.first_trial_s = float(rows[0][0]) - started
            result.first_trial_duration_s = float(rows[0][1])
            result.model_calls = int(rows[0][2] or 0)

    def close(self) -> None:
        shutil.rmtree(self.ray_tmp, ignore_errors=True)


# --- the steps --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """One measured command per tool: ``where`` picks the tool's player (its cold home, its
    warm HTTP one, or its in-process one)."""

    name: str
    where: str
    """``cold``, ``http`` or ``in-process``."""
    trials: int
    in_flight: int = IN_FLIGHT


def plan(trials: int, in_flights: list[int], quick: bool) -> list[Step]:
    """The steps in order; ``agentsweep up`` comes after the cold run. ``quick``: the fewest
    that give the HTTP path's marginal CPU (the stack's first run pays for its workers' start,
    and every run costs its command's start-up: the in-process runs are left out)."""
    many = [Step(f"many@{c}", "http", trials, c) for c in in_flights]
    if quick:
        return [Step("warm", "http", 1), *many]
    return [Step("cold", "cold", 1), Step("in-process first", "in-process", 1),
            Step("warm", "http", 1), Step("warm again", "http", 1), *many,
            Step("in-process again", "in-process", 1),
            Step("in-process many", "in-process", trials)]


Player = Callable[[int, int], Measured]
"""Runs (trials, in flight) and returns what was measured."""

NOTES: list[str] = []
"""What did not work (Inspect's half failing leaves agentsweep's standing)."""


def run_step(step: Step, players: dict[str, dict[str, Player]], server: ReferenceServer,
             results: Results) -> None:
    for name in list(players):
        print(f"  {step.name}: {name} ...", file=sys.stderr, end=" ", flush=True)
        served, server_cpu = server.served(), server.cpu_s()
        try:
            result = players[name][step.where](step.trials, step.in_flight)
        except (RuntimeError, ValueError, OSError, subprocess.CalledProcessError) as exc:
            if name == "agentsweep":
                raise
            # Inspect's half is optional: say why it stopped and go on without it.
            print("failed", file=sys.stderr, flush=True)
            NOTES.append(f"Inspect AI left out at step {step.name!r}: {str(exc)[-600:]}")
            del players[name]
            results[name].clear()
            continue
        print(f"{result.wall_s:.1f} s", file=sys.stderr, flush=True)
        result.served = server.served() - served
        result.server_cpu_s = server.cpu_s() - server_cpu
        results[name][step.name] = result


def _inspect_players(work: Path, api_base: str, python: Path) -> dict[str, Player]:
    tools = {where: Inspect(work, where, api_base, python, mock=where == "in-process")
             for where in ("cold", "http", "in-process")}
    return {where: (lambda t, c, tool=tool: tool.run(t, c, measure))
            for where, tool in tools.items()}


def benchmark(trials: int, in_flights: list[int], inspect_python: Path | None,
              quick: bool = False, new_machine: bool = False,
              trials_as: str = "coroutines") -> Results:
    work = Path(tempfile.mkdtemp(prefix="asw-sbs-", dir="/tmp"))
    server = ReferenceServer(work)
    results: Results = {"agentsweep": {}, "Inspect": {}}
    cold = Agentsweep(work, "cold", server.api_base, new_machine, trials_as)
    warm = Agentsweep(work, "warm", server.api_base, trials_as=trials_as)
    players: dict[str, dict[str, Player]] = {"agentsweep": {
        "cold": cold.run, "http": warm.run,
        "in-process": lambda t, c: warm.run(t, c, IN_PROCESS_MODEL)}}
    try:
        if inspect_python is not None:
            try:
                players["Inspect"] = _inspect_players(work, server.api_base, inspect_python)
            except (RuntimeError, OSError) as exc:
                NOTES.append(f"Inspect AI left out: {exc}")
        steps = plan(trials, in_flights, quick)
        if not quick:
            run_step(steps.pop(0), players, server, results)
        print("  agentsweep up ...", file=sys.stderr, flush=True)
        results["agentsweep"]["up"] = warm.command("up")
        try:
            for step in steps:
                run_step(step, players, server, results)
        finally:
            warm.command("down")
    finally:
        cold.close()
        warm.close()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return {name: steps for name, steps in results.items() if steps}


# --- latency-bound, over HTTP (throughput.py's case b) ----------------------------------------

def latency_bound(trials: int) -> list[dict[str, Any]]:
    """``throughput.latency_bound`` for each of ``LATENCY_CASES`` on one local Ray."""
    import throughput

    from pipeline.execution.executor import ray_session

    root = Path(tempfile.mkdtemp(prefix="asw-latency-", dir="/tmp"))
    try:
        with ray_session(num_cpus=os.cpu_count(), object_store_bytes=256 * 1024 * 1024) as ray:
            return [throughput.latency_bound(ray, root / "wh", trials, False, latency, limit)
                    for latency, limit in LATENCY_CASES]
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --- the namespace ----------------------------------------------------------------------------

def namespace_works() -> bool:
    try:
        done = subprocess.run(["unshare", "-rn", "ip", "link", "set", "lo", "up"],
                              capture_output=True, check=False, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def rerun_in_namespace() -> int:
    """This benchmark again, in a new user + network namespace with only ``lo`` (brought up)."""
    script = 'ip link set lo up && exec "$@"'
    command = ["unshare", "-rn", "sh", "-c", script, "sh", sys.executable, *sys.argv]
    return subprocess.run(command, env={**os.environ, INSIDE: "1"}, check=False).returncode


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run of the HTTP path: 20 trials, the fewest steps")
    parser.add_argument("--trials", type=int, help="trials of the N-trial runs (default 1000)")
    parser.add_argument("--in-flight", default=str(IN_FLIGHT),
                        help="trials in flight of the N-trial HTTP runs, comma-separated "
                             "(e.g. 1,64,256)")
    parser.add_argument("--with-inspect", action="store_true",
                        help=f"also Inspect AI {INSPECT_VERSION}, installed in {INSPECT_VENV}")
    parser.add_argument("--latency", action="store_true",
                        help="also the latency-bound figures (L=1 s C=256, L=100 ms C=64)")
    parser.add_argument("--latency-trials", type=int, default=1536,
                        help="trials of each latency-bound run")
    parser.add_argument("--new-machine", action="store_true",
                        help="the cold run without the machine's migrated Prefect template")
    parser.add_argument("--no-namespace", action="store_true",
                        help="do not run in a loopback-only network namespace")
    parser.add_argument("--trials-as", choices=("coroutines", "threads"), default="coroutines",
                        help="how agentsweep's workers run the trials (its --trials-as)")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    return parser.parse_args()


def _machine(inside: bool) -> str:
    where = "a loopback-only network namespace" if inside else "the host's network"
    return (f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
            f"in {where}")


def main() -> None:
    args = _arguments()
    trials = args.trials or (20 if args.quick else 1000)
    in_flights = [int(c) for c in args.in_flight.split(",")]
    inside = os.environ.get(INSIDE) == "1"
    inspect_python = None
    if args.with_inspect:
        try:
            inspect_python = install_inspect()
        except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
            print(f"Inspect AI left out: {exc}")
    if not inside and not args.no_namespace:
        if namespace_works():
            raise SystemExit(rerun_in_namespace())
        print("network: `unshare -rn` does not work here; relying on the project's own "
              "loopback settings")
    print(_machine(inside))
    if args.new_machine:
        print("cold run: as on a new machine (no migrated Prefect template to copy)")
    print(f"agentsweep's trials run as {args.trials_as}")
    results = benchmark(trials, in_flights, inspect_python, args.quick, args.new_machine,
                        args.trials_as)
    report(results, trials, in_flights, NOTES)
    latency = latency_bound(args.latency_trials) if args.latency else []
    print_latency(latency)
    print(f"load average after: {os.getloadavg()[0]:.2f} "
          f"(1/5/15 min: {' '.join(f'{v:.2f}' for v in os.getloadavg())})")
    if args.json:
        print(json.dumps({"results": {name: {step: asdict(m) for step, m in steps.items()}
                                      for name, steps in results.items()},
                          "latency": latency}))


if __name__ == "__main__":
    main()
