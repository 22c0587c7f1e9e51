"""One command measured over its whole process tree (``side_by_side.py``'s unit of measure).

CPU (user + system) and RSS are summed over the command, its descendants and every process
whose command line or environment names a marker (a run's home or Ray temp dir: the warm
stack's Ray and Prefect, and Ray's workers, which the raylet starts and reaps itself, so rusage
of the command never sees them), sampled from /proc. A process that ends between two samples
loses its last interval. Peak PSS beside peak RSS divides each shared page among the processes
that map it, where summed RSS counts it once per process.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from memory import cmdline, kind_of, pss_mib, rss_mib, run_tree
from throughput import cpu_s

REPO = Path(__file__).resolve().parent.parent


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
    """When the first trial (sample) started, in seconds from the command's start."""
    first_trial_duration_s: float | None = None
    """How long that first trial took."""
    model_calls: int = 0
    """Model calls of the run, as the tool itself recorded them."""
    served: int = 0
    """Generate requests the reference server answered during the command (from its log)."""
    server_cpu_s: float = 0.0
    """The reference server's CPU during the command (counted on neither side)."""
    phases: dict[str, float] = field(default_factory=dict)


def _by_kind(pids: set[int], root: int) -> dict[str, float]:
    kinds: dict[str, float] = {}
    for pid in pids:
        kind = "the command" if pid == root else kind_of(pid, -1, cmdline(pid))
        kinds[kind] = kinds.get(kind, 0.0) + rss_mib(pid)
    return kinds


def measure(command: list[str], env: dict[str, str], marker: str, log: Path,
            interval_s: float = 0.1, cwd: Path = REPO) -> Measured:
    """Run ``command``; CPU and RSS summed over its tree and every process naming ``marker``.
    CPU of processes alive before it started (a warm stack) counts from their start value."""
    base = {pid: cpu_s(pid) for pid in run_tree(-1, marker)}
    last: dict[int, float] = {}
    peak, count, kinds, peak_pss = 0.0, 0, {}, 0.0
    started = time.time()
    with log.open("ab") as out:
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
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
