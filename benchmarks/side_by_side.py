"""agentsweep side by side with Inspect AI: `.venv/bin/python benchmarks/side_by_side.py`

The workload: one 3-turn meeting-room dialog (scenario R1 of the meeting-room intent_change
suite: 6 model calls and 3 tool calls a trial) against the scripted ``golden`` model of
``agentsweep reference-server`` on 127.0.0.1, which answers at once. agentsweep reaches it as
``reference-http/golden`` (LiteLLM's real OpenAI path); Inspect AI (``--with-inspect``) as
``openai-api/ref/golden`` (its OpenAI-compatible provider), the scenario's script in the request
body (``extra_body``), the domain's tool schemas and system prompt, its user turns played in
order by a solver; Inspect's tools answer a fixed JSON (the agentsweep tools run the domain's
sandbox: a little more work on its side).

Measured, A/B interleaved (agentsweep, then Inspect, for each step):

1. a 1-trial run, cold: a fresh ``AGENTSWEEP_HOME`` and ``RAY_TMPDIR`` (Prefect's ephemeral API
   migrates a new database, a local Ray starts); for Inspect a fresh log dir and XDG data dir;
2. ``agentsweep up`` (Inspect has no stack);
3. a 1-trial run on the warm stack, the first one there; 4. another;
5. ``--trials`` trials (default 1000), 64 in flight (Inspect: ``--max-connections 64
   --max-samples 64``); 6. ``agentsweep down``.

CPU (user + system) and RSS are summed over each command's whole process tree, sampled from
/proc every 100 ms: the command and its descendants, plus every process whose command line or
environment names the run's home or Ray temp dir (the warm stack's Ray and Prefect, and Ray's
workers, which the raylet starts and reaps itself: rusage of the command never sees them).
A process that ends between two samples loses its last <= 100 ms. The reference server's own
CPU is not counted; its log counts the model calls each step made (printed, a check of the
workload). Marginal CPU per model call = (CPU of the N-trial run - CPU of the second warm
1-trial run) / (6 x (N - 1)). Peak RSS is the N-trial run's, the warm stack included; peak PSS
beside it divides each shared page (the interpreter, Ray's and pyarrow's libraries) among the
processes that map it, where summed RSS counts it once per process.

Loopback only: when ``unshare -rn`` works the whole benchmark re-runs itself in a new user and
network namespace whose only interface is ``lo`` (Inspect is installed before that); otherwise
it says so and relies on the project's own loopback settings. Options: ``--quick`` (a smoke
run: 20 trials), ``--trials``, ``--with-inspect``, ``--no-namespace``, ``--json``, and
``--new-machine``: the cold run also without the per-machine migrated Prefect database that a
fresh home is copied from (``pipeline/runtime/prefect_template.py``), as on a new machine.
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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memory import cmdline, kind_of, pss_mib, rss_mib, run_tree
from startup import _env, _first_trial
from throughput import cpu_s

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SUITE = REPO / "catalogs" / "meeting_rooms" / "suites" / "intent_change.jsonl"
SCENARIO = "R1"
CALLS_PER_TRIAL = 6
IN_FLIGHT = 64
INSPECT_VERSION = "0.3.285"
INSPECT_VENV = Path.home() / ".cache" / "agentsweep" / "bench-inspect"
INSIDE = "AGENTSWEEP_BENCH_IN_NAMESPACE"


# --- one command, measured over its process tree ---------------------------------------------

@dataclass
class Measured:
    wall_s: float
    cpu_s: float
    peak_rss_mib: float
    processes_at_peak: int
    at_peak_mib: dict[str, float]
    """RSS at the peak, by kind of process (``memory.KINDS``)."""
    peak_pss_mib: float = 0.0
    """Peak of the summed proportional set size (shared pages divided among their users)."""
    first_trial_s: float | None = None
    model_calls: int = 0
    """Generate requests the reference server answered during the command (from its log)."""
    phases: dict[str, float] = field(default_factory=dict)


def _by_kind(pids: set[int], root: int) -> dict[str, float]:
    kinds: dict[str, float] = {}
    for pid in pids:
        kind = "the command" if pid == root else kind_of(pid, -1, cmdline(pid))
        kinds[kind] = kinds.get(kind, 0.0) + rss_mib(pid)
    return kinds


def measure(command: list[str], env: dict[str, str], marker: str, log: Path,
            interval_s: float = 0.1) -> Measured:
    """Run ``command``; CPU and RSS summed over its tree and every process naming ``marker``.
    CPU of processes alive before it started (a warm stack) counts from their start value."""
    base = {pid: cpu_s(pid) for pid in run_tree(-1, marker)}
    last: dict[int, float] = {}
    peak, count, kinds, peak_pss = 0.0, 0, {}, 0.0
    started = time.time()
    with log.open("ab") as out:
        proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        while True:
            done = proc.poll() is not None
            pids = run_tree(proc.pid, marker)
            rss = pss = 0.0
            for pid in pids:
                used = cpu_s(pid)
                if used:
                    last[pid] = max(used, last.get(pid, 0.0))
                rss += rss_mib(pid)
                pss += pss_mib(pid)
            if rss > peak:
                peak, count, kinds = rss, len(pids), _by_kind(pids, proc.pid)
            peak_pss = max(peak_pss, pss)
            if done:
                break
            time.sleep(interval_s)
    wall = time.time() - started
    if proc.returncode != 0:
        tail = log.read_text("utf-8", errors="replace")[-3000:]
        raise RuntimeError(f"{' '.join(command[:3])} failed ({proc.returncode}):\n{tail}")
    cpu = sum(used - base.get(pid, 0.0) for pid, used in last.items())
    return Measured(wall, cpu, peak, count, kinds, peak_pss)


def served(work: Path) -> int:
    """Generate requests the reference server has answered so far (it logs each one)."""
    with (work / "server.log").open("rb") as log:
        return sum(b'"POST /' in line for line in log)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_reference_server(work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``agentsweep reference-server`` on a free loopback port; (process, OpenAI api_base)."""
    port = _free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    with (work / "server.log").open("wb") as out:
        server = subprocess.Popen([str(BIN / "agentsweep"), "reference-server", "--port",
                                   str(port)], env=clean, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, f"http://127.0.0.1:{port}/v1"
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the reference server did not start") from None
            time.sleep(0.2)


# --- agentsweep -------------------------------------------------------------------------------

class Agentsweep:
    """``agentsweep`` commands in one home with its own Ray temp dir."""

    name = "agentsweep"

    def __init__(self, work: Path, label: str, api_base: str, new_machine: bool = False) -> None:
        self.new_machine = new_machine
        self.work = work
        self.home = work / f"home-{label}"
        self.ray_tmp = tempfile.mkdtemp(prefix=f"asw-{label}-", dir="/tmp")  # short socket paths
        self.phases = work / f"phases-{label}.jsonl"
        self.log = work / f"agentsweep-{label}.log"
        self.api_base = api_base
        self.runs = 0

    def env(self) -> dict[str, str]:
        env = {**_env(self.home, self.phases), "RAY_TMPDIR": self.ray_tmp}
        if self.new_machine:  # an empty template cache: this run migrates a database itself
            env["AGENTSWEEP_PREFECT_TEMPLATE_CACHE"] = str(self.home.parent / "template-cache")
        return env

    def command(self, *args: str) -> Measured:
        return measure([str(BIN / "agentsweep"), *args], self.env(), self.ray_tmp, self.log)

    def run(self, trials: int) -> Measured:
        self.runs += 1
        run_id = f"bench-{self.runs}"
        self.phases.unlink(missing_ok=True)
        before = served(self.work)
        started = time.time()
        result = self.command(
            "run", "--model", "reference-http/golden", "--api-base", self.api_base,
            "--suite", str(SUITE), "--scenario", SCENARIO, "--memory-mode", "chat",
            "--repeats", str(trials), "--max-in-flight", str(IN_FLIGHT), "--run-id", run_id)
        result.model_calls = served(self.work) - before
        first = _first_trial(self.home, run_id)
        result.first_trial_s = None if first is None else first - started
        if self.phases.exists():
            for line in self.phases.read_text().splitlines():
                mark = json.loads(line)
                result.phases.setdefault(mark["phase"], mark["t"] - started)
        return result

    def close(self) -> None:
        shutil.rmtree(self.ray_tmp, ignore_errors=True)


# --- Inspect AI -------------------------------------------------------------------------------

INSPECT_TASK = '''"""The side-by-side workload as an Inspect AI task (from side_by_side.py)."""

import json
import os

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolDef, ToolParams

with open(os.environ["SIDE_BY_SIDE_WORKLOAD"], encoding="utf-8") as handle:
    WORKLOAD = json.load(handle)


def _tool(spec):
    function = spec["function"]
    parameters = json.loads(json.dumps(function["parameters"]))
    for name, schema in parameters.get("properties", {}).items():
        schema.setdefault("description", name)  # Inspect refuses a parameter without one

    async def execute(**arguments):
        return json.dumps({"ok": True, "tool": function["name"], "arguments": arguments})

    return ToolDef(execute, name=function["name"], description=function["description"],
                   parameters=ToolParams.model_validate(parameters)).as_tool()


@solver
def dialog():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.tools = [_tool(spec) for spec in WORKLOAD["tools"]]
        for user in WORKLOAD["turns"]:
            state.messages.append(ChatMessageUser(content=user))
            state = await generate(state, tool_calls="loop")
        return state

    return solve


@task
def room_dialog(trials: int = 1):
    return Task(
        dataset=[Sample(id=i + 1, input=[ChatMessageSystem(content=WORKLOAD["system"])])
                 for i in range(trials)],
        solver=dialog(),
        config=GenerateConfig(extra_body={WORKLOAD["script_key"]: WORKLOAD["script"]}))
'''

FIRST_SAMPLE = """
import sys
from datetime import datetime
from inspect_ai.log import list_eval_logs, read_eval_log
log = read_eval_log(list_eval_logs(sys.argv[1])[0])
assert log.status == "success", log.status
times = [datetime.fromisoformat(str(s.started_at)).timestamp()
         for s in log.samples or [] if s.started_at]
print(min(times) if times else "")
"""


def install_inspect() -> Path:
    """Inspect AI in its own venv (never a project dependency); returns its python."""
    python = INSPECT_VENV / "bin" / "python"
    stamp = INSPECT_VENV / f".installed-{INSPECT_VERSION}"
    if stamp.exists():
        return python
    INSPECT_VENV.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(INSPECT_VENV)], check=True)
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                           "--disable-pip-version-check", f"inspect-ai=={INSPECT_VERSION}",
                           "openai"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if not line.startswith("WARNING")]
        raise RuntimeError("pip install inspect-ai failed: " + " / ".join(errors[-5:]))
    stamp.touch()
    return python


def write_workload(path: Path) -> None:
    """The scenario's system prompt, user turns, tool schemas and golden script, as JSON."""
    sys.path.insert(0, str(REPO))
    from pipeline.catalog import load_domain, load_suite
    from pipeline.reference.reference import SCRIPT_KEY, golden_script

    (entry,) = [e for e in load_suite(SUITE).scenarios if e.scenario.id == SCENARIO]
    scenario = entry.scenario
    domain = load_domain(scenario.domain)
    path.write_text(json.dumps({
        "system": (domain.path / "prompts" / "default.md").read_text("utf-8"),
        "turns": [turn.user for turn in scenario.turns], "tools": domain.openai_tools(),
        "script_key": SCRIPT_KEY, "script": golden_script(scenario, domain)}), "utf-8")


class Inspect:
    """``inspect eval`` of the workload task, with its own log and data dirs."""

    name = "Inspect"

    def __init__(self, work: Path, label: str, api_base: str, python: Path) -> None:
        self.work = work / f"inspect-{label}"
        self.work.mkdir()
        self.python = python
        self.task = work / "room_dialog.py"
        self.workload = work / "workload.json"
        if not self.task.exists():
            self.task.write_text(INSPECT_TASK, "utf-8")
            write_workload(self.workload)
        self.api_base = api_base
        self.log = work / f"inspect-{label}.log"
        self.runs = 0

    def env(self) -> dict[str, str]:
        return {**{k: v for k, v in os.environ.items() if not k.startswith("INSPECT_")},
                "SIDE_BY_SIDE_WORKLOAD": str(self.workload), "REF_BASE_URL": self.api_base,
                "REF_API_KEY": "sk-bench-not-a-key", "XDG_DATA_HOME": str(self.work / "data"),
                "XDG_CACHE_HOME": str(self.work / "cache"), "INSPECT_DISPLAY": "none"}

    def run(self, trials: int) -> Measured:
        self.runs += 1
        logs = self.work / f"logs-{self.runs}"
        before = served(self.work.parent)
        started = time.time()
        result = measure([str(self.python.parent / "inspect"), "eval", f"{self.task}@room_dialog",
                          "-T", f"trials={trials}", "--model", "openai-api/ref/golden",
                          "--max-connections", str(IN_FLIGHT), "--max-samples", str(IN_FLIGHT),
                          "--log-dir", str(logs), "--display", "none"],
                         self.env(), str(self.work), self.log)
        result.model_calls = served(self.work.parent) - before
        done = subprocess.run([str(self.python), "-c", FIRST_SAMPLE, str(logs)], env=self.env(),
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"its log says the run failed: {done.stderr.strip()[-400:]}")
        first = done.stdout.strip()
        result.first_trial_s = float(first) - started if first else None
        return result

    def close(self) -> None:
        pass


# --- the benchmark ----------------------------------------------------------------------------

NOTES: list[str] = []
"""What did not work (Inspect's half failing leaves agentsweep's standing)."""


def _both(tools: list[Any], step: str, trials: int, results: dict[str, dict[str, Measured]]
          ) -> None:
    for tool in list(tools):
        print(f"  {step}: {tool.name} ...", file=sys.stderr, flush=True)
        try:
            results[tool.name][step] = tool.run(trials)
        except (RuntimeError, ValueError, subprocess.CalledProcessError) as exc:
            if tool.name == "agentsweep":
                raise
            # Inspect's half is optional: say why it stopped and go on without it.
            NOTES.append(f"Inspect AI left out at step {step!r}: {str(exc)[-600:]}")
            tools.remove(tool)
            results[tool.name].clear()


def benchmark(trials: int, inspect_python: Path | None, new_machine: bool = False
              ) -> dict[str, dict[str, Measured]]:
    work = Path(tempfile.mkdtemp(prefix="asw-sbs-", dir="/tmp"))
    server, api_base = start_reference_server(work)
    results: dict[str, dict[str, Measured]] = {"agentsweep": {}, "Inspect": {}}
    opened: list[Any] = []
    try:
        cold = [Agentsweep(work, "cold", api_base, new_machine)]
        if inspect_python is not None:
            cold.append(Inspect(work, "cold", api_base, inspect_python))
        opened += cold
        _both(cold, "cold", 1, results)
        warm: list[Any] = [Agentsweep(work, "warm", api_base)]
        if inspect_python is not None and results["Inspect"]:
            warm.append(Inspect(work, "warm", api_base, inspect_python))
        opened += warm
        print("  agentsweep up ...", file=sys.stderr, flush=True)
        results["agentsweep"]["up"] = warm[0].command("up")
        try:
            _both(warm, "warm", 1, results)
            _both(warm, "warm again", 1, results)
            _both(warm, "many", trials, results)
        finally:
            warm[0].command("down")
    finally:
        for tool in opened:
            tool.close()
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    return {name: steps for name, steps in results.items() if steps}


def marginal_ms(steps: dict[str, Measured], trials: int) -> float:
    """CPU per model call of the N-trial run beyond a 1-trial run (the second one on the
    stack: the first pays for the stack's first flow and the workers' first calls)."""
    extra = steps["many"].cpu_s - steps["warm again"].cpu_s
    return 1000 * extra / (CALLS_PER_TRIAL * (trials - 1))


def rows(results: dict[str, dict[str, Measured]], trials: int) -> list[tuple[str, list[float],
                                                                             str]]:
    """(measure, one value per tool, format) for the table."""
    def each(pick: Any) -> list[float]:
        return [pick(steps) for steps in results.values()]

    def first(steps: dict[str, Measured], step: str) -> float:
        value = steps[step].first_trial_s
        return float("nan") if value is None else value

    return [
        ("marginal CPU per model call (ms)", each(lambda s: marginal_ms(s, trials)), "{:.2f}"),
        (f"{trials} trials, warm stack: CPU (s)", each(lambda s: s["many"].cpu_s), "{:.1f}"),
        (f"{trials} trials, warm stack: wall (s)", each(lambda s: s["many"].wall_s), "{:.1f}"),
        ("1-trial run, cold: first trial (s)", each(lambda s: first(s, "cold")), "{:.1f}"),
        ("1-trial run, cold: wall (s)", each(lambda s: s["cold"].wall_s), "{:.1f}"),
        ("1-trial run, cold: CPU (s)", each(lambda s: s["cold"].cpu_s), "{:.1f}"),
        ("1-trial run, warm, first on the stack: first trial (s)",
         each(lambda s: first(s, "warm")), "{:.1f}"),
        ("1-trial run, warm, first on the stack: CPU (s)", each(lambda s: s["warm"].cpu_s),
         "{:.1f}"),
        ("1-trial run, warm, again: first trial (s)", each(lambda s: first(s, "warm again")),
         "{:.1f}"),
        ("1-trial run, warm, again: CPU (s)", each(lambda s: s["warm again"].cpu_s), "{:.1f}"),
        (f"peak summed RSS, {trials} trials (MiB)", each(lambda s: s["many"].peak_rss_mib),
         "{:.0f}"),
        ("processes at that peak", each(lambda s: s["many"].processes_at_peak), "{:.0f}"),
        (f"peak summed PSS, {trials} trials (MiB)", each(lambda s: s["many"].peak_pss_mib),
         "{:.0f}"),
    ]


def table(results: dict[str, dict[str, Measured]], trials: int) -> str:
    names = list(results)
    head = ["measure", *names, *(["ratio"] if len(names) == 2 else [])]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, values, fmt in rows(results, trials):
        cells = [fmt.format(v) for v in values]
        if len(values) == 2:
            cells.append(f"{values[0] / values[1]:.2f}" if values[1] else "-")
        lines.append("| " + " | ".join([label, *cells]) + " |")
    up = results["agentsweep"]["up"]
    lines.append(f"| `agentsweep up`: wall / CPU (s) | {up.wall_s:.1f} / {up.cpu_s:.1f} |"
                 + " - |" * (len(head) - 2))
    return "\n".join(lines)


def where_memory_goes(results: dict[str, dict[str, Measured]], trials: int) -> list[str]:
    lines = []
    for name, steps in results.items():
        kinds = sorted(steps["many"].at_peak_mib.items(), key=lambda item: -item[1])
        lines.append(f"{name} at its peak RSS ({trials} trials), MiB: "
                     + ", ".join(f"{kind} {mib:.0f}" for kind, mib in kinds))
    return lines


def model_calls(results: dict[str, dict[str, Measured]], trials: int) -> str:
    """The reference server's count of generate requests per step: the workload's check."""
    counts = "; ".join(f"{name} " + ", ".join(f"{step} {m.model_calls}" for step, m
                                               in steps.items() if step != "up")
                       for name, steps in results.items())
    return (f"model calls served (expected {CALLS_PER_TRIAL} a trial, "
            f"{CALLS_PER_TRIAL * trials} for {trials}): {counts}")


def cold_phases(results: dict[str, dict[str, Measured]]) -> str:
    cold = results["agentsweep"]["cold"]
    marks = sorted(cold.phases.items(), key=lambda item: item[1])
    if cold.first_trial_s is not None:
        marks.append(("first trial started (warehouse)", cold.first_trial_s))
    marks.append(("exit", cold.wall_s))
    return "agentsweep cold 1-trial run, seconds from the command's start: " + "; ".join(
        f"{name} {t:.1f}" for name, t in marks)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20 trials")
    parser.add_argument("--trials", type=int, help="trials of the warm run (default 1000)")
    parser.add_argument("--with-inspect", action="store_true",
                        help=f"also Inspect AI {INSPECT_VERSION}, installed in {INSPECT_VENV}")
    parser.add_argument("--new-machine", action="store_true",
                        help="the cold run without the machine's migrated Prefect template")
    parser.add_argument("--no-namespace", action="store_true",
                        help="do not run in a loopback-only network namespace")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args()
    trials = args.trials or (20 if args.quick else 1000)
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
    where = "a loopback-only network namespace" if inside else "the host's network"
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; in {where}")
    if args.new_machine:
        print("cold run: as on a new machine (no migrated Prefect template to copy)")
    results = benchmark(trials, inspect_python, args.new_machine)
    print(table(results, trials))
    print(cold_phases(results))
    for line in [*where_memory_goes(results, trials), model_calls(results, trials)]:
        print(line)
    for note in NOTES:
        print(note)
    print(f"load average after: {os.getloadavg()[0]:.2f} "
          f"(1/5/15 min: {' '.join(f'{v:.2f}' for v in os.getloadavg())})")
    if args.json:
        print(json.dumps({name: {step: asdict(m) for step, m in steps.items()}
                          for name, steps in results.items()}))


if __name__ == "__main__":
    main()
