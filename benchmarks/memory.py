"""Memory of a local run: `.venv/bin/python benchmarks/memory.py`

Runs ``agentsweep run`` with no options (the default grid, 153 trials on ``reference/golden``)
in a fresh ``AGENTSWEEP_HOME`` with its own Ray temp dir, and samples /proc every 100 ms for
the run's whole process tree: the driver and its children (Prefect's ephemeral API, the Ray it
starts) and every process that names the run's Ray temp dir, with their children (the raylet
starts and reaps its workers itself, so rusage of the driver never sees them; a Ray that the
run joins is not a child of the driver at all).

Prints the peak of the summed RSS, the RSS per kind of process at that moment and each
process seen with its own peak. RSS counts shared pages once per process (Ray's processes
share little but their Python interpreter), so the sum is an upper bound of what the run
holds. Everything stays on 127.0.0.1. Options: ``--args`` (extra ``agentsweep run``
arguments), ``--interval``, ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pipeline.util.procfs import cmdline, live_parents  # noqa: E402

PAGE_MIB = os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)

KINDS = (  # (kind, a piece of its command line), first match wins
    ("trial worker", "ray::TrialWorker"),
    ("idle Ray worker", "ray::IDLE"),
    ("dashboard agent", "ray::DashboardAgent"),
    ("runtime-env agent", "ray::RuntimeEnvAgent"),
    ("other Ray actor", "ray::"),
    ("gcs_server", "gcs_server"),
    ("raylet", "raylet/raylet"),  # its command line names the agents: it comes first
    ("idle dashboard agent", "idle_dashboard_agent.py"),
    ("dashboard agent", "dashboard/agent.py"),
    ("dashboard", "dashboard/dashboard.py"),
    ("runtime-env agent", "runtime_env/agent/main.py"),
    ("log monitor", "log_monitor.py"),
    ("autoscaler monitor", "autoscaler/_private/monitor.py"),
    ("Ray reaper", "ray_process_reaper.py"),
    ("ray start wrapper", "ray start"),
    ("Prefect server", "prefect"),
)


# --- /proc ------------------------------------------------------------------------------------

def names(pid: int, marker: str) -> bool:
    """Whether ``marker`` is in the process's command line or environment (a process that a
    stack started earlier inherits the run's ``RAY_TMPDIR`` or ``AGENTSWEEP_HOME``)."""
    if marker in cmdline(pid):
        return True
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return marker.encode() in handle.read()
    except OSError:
        return False


def rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * PAGE_MIB
    except (OSError, IndexError, ValueError):
        return 0.0


def pss_mib(pid: int) -> float:
    """Proportional set size: each resident page divided among the processes that map it (the
    shared libraries and interpreter pages that summed RSS counts once per process)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0.0


def run_tree(root: int, marker: str) -> set[int]:
    """``root`` and its descendants, plus every process naming ``marker`` (the run's Ray temp
    dir) in its command line or environment, and its descendants."""
    parents = live_parents()
    children: dict[int, list[int]] = defaultdict(list)
    for pid, parent in parents.items():
        children[parent].append(pid)
    seeds = [root] + [pid for pid in parents if pid != root and names(pid, marker)]
    found: set[int] = set()
    stack = [pid for pid in seeds if pid in parents]
    while stack:
        pid = stack.pop()
        if pid not in found:
            found.add(pid)
            stack.extend(children.get(pid, []))
    return found


def kind_of(pid: int, root: int, command: str) -> str:
    if pid == root:
        return "driver (agentsweep run)"
    for kind, piece in KINDS:
        if piece in command:
            return kind
    return "other: " + (Path(command.split(" ", 1)[0]).name or "?")


# --- sampling ---------------------------------------------------------------------------------

@dataclass
class Sampler:
    root: int
    marker: str
    peak_total: float = 0.0
    at_peak: dict[str, float] = field(default_factory=dict)
    count_at_peak: dict[str, int] = field(default_factory=dict)
    seen: dict[int, tuple[str, str, float]] = field(default_factory=dict)
    """pid -> (kind, command line, its own peak RSS)."""
    samples: int = 0

    def sample(self) -> None:
        total = 0.0
        by_kind: dict[str, float] = defaultdict(float)
        count: dict[str, int] = defaultdict(int)
        for pid in run_tree(self.root, self.marker):
            rss = rss_mib(pid)
            command = cmdline(pid)
            if not rss or not command:  # gone, or a zombie
                continue
            kind = kind_of(pid, self.root, command)
            total += rss
            by_kind[kind] += rss
            count[kind] += 1
            old = self.seen.get(pid)
            self.seen[pid] = (kind, command, max(rss, old[2] if old else 0.0))
        self.samples += 1
        if total > self.peak_total:
            self.peak_total, self.at_peak, self.count_at_peak = total, by_kind, count


@dataclass
class Result:
    command: str
    wall_s: float
    samples: int
    peak_total_mib: float
    at_peak_mib: dict[str, float]
    count_at_peak: dict[str, int]
    processes: list[dict[str, object]]
    run_tail: list[str]


def measure(extra_args: list[str], interval_s: float) -> Result:
    work = Path(tempfile.mkdtemp(prefix="agentsweep-mem-"))
    ray_tmp = tempfile.mkdtemp(prefix="asw-mem-", dir="/tmp")  # Ray's socket paths stay short
    env = {**os.environ, "AGENTSWEEP_HOME": str(work / "home"), "RAY_TMPDIR": ray_tmp,
           "AGENTSWEEP_PROGRESS": "0"}
    for key in ("RAY_ADDRESS", "PREFECT_API_URL", "PREFECT_HOME"):
        env.pop(key, None)
    command = [str(Path(sys.executable).parent / "agentsweep"), "run", *extra_args]
    try:
        started = time.monotonic()
        with (work / "run.log").open("wb") as log:
            proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            sampler = Sampler(proc.pid, ray_tmp)
            while proc.poll() is None:
                sampler.sample()
                time.sleep(interval_s)
        wall = time.monotonic() - started
        output = (work / "run.log").read_text("utf-8", errors="replace")
        if proc.returncode != 0:
            raise SystemExit(f"agentsweep run failed ({proc.returncode}):\n{output[-3000:]}")
        processes: list[dict[str, object]] = [
            {"pid": pid, "kind": kind, "peak_mib": peak, "command": cmd[:160]}
            for pid, (kind, cmd, peak) in sorted(sampler.seen.items())]
        return Result(" ".join(command), wall, sampler.samples, sampler.peak_total,
                      dict(sampler.at_peak), dict(sampler.count_at_peak), processes,
                      output.strip().splitlines()[-3:])
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(ray_tmp, ignore_errors=True)


# --- the report -------------------------------------------------------------------------------

def report(result: Result) -> None:
    print(f"`{result.command}` in a fresh AGENTSWEEP_HOME: {result.wall_s:.0f} s, "
          f"{result.samples} samples")
    print(f"    peak summed RSS {result.peak_total_mib:.0f} MiB over "
          f"{sum(result.count_at_peak.values())} processes; at that moment, per kind:")
    for kind, mib in sorted(result.at_peak_mib.items(), key=lambda item: -item[1]):
        print(f"    {mib:>7.0f} MiB  {result.count_at_peak[kind]} x {kind}")
    print("    every process seen (its own peak RSS, MiB):")
    for row in result.processes:
        print(f"    {row['peak_mib']:>7.0f}  {row['pid']:>7}  {row['kind']!s:<24} "
              f"{str(row['command'])[:90]}")
    for line in result.run_tail:
        print(f"    run: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--args", default="", help="extra `agentsweep run` arguments")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between samples")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    result = measure(shlex.split(args.args), args.interval)
    if args.json:
        print(json.dumps(asdict(result), indent=2))
    else:
        report(result)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
