"""The fault campaign at a modest size: `.venv/bin/python benchmarks/faults.py`

Each fault runs `agentsweep` as a user does (its own AGENTSWEEP_HOME, the CLI in a subprocess,
an ephemeral Prefect API and a local Ray), against the reference models over HTTP where a
provider is involved, and prints per fault: the grid, the trial rows in the Parquet files and
their distinct ids (rows > ids: resumed trials keep their incomplete row; a trial with two
final rows is a problem), the complete trials, every attempt by
kind, exit codes and wall time; then whether the fault's invariants held:

- http-faults-20   20% injected faults (429, 500, timeouts, dropped connections, 5% each)
- silent-provider  a server that accepts connections and never answers (per-call timeout 1 s)
- outage-15s       the provider process goes away mid-sweep and comes back 15 s later
- driver-kill-*    the driver SIGKILLed during start-up / mid-sweep, then `--resume`
- worker-kill      one Ray worker process SIGKILLed mid-sweep
- disk-full        the home's disk (a tmpfs, root only) fills mid-sweep; freed; `--resume`
- corrupt-file     one byte of an old run's file flipped; a new sweep in the same home
- concurrent-start the same run id started twice at once
- canary-key       a key in the environment and a password in an api_base URL: grep every file
                   of the home (Prefect's database and WAL included) for them afterwards
- ray-head-kill    the driver's Ray GCS server and raylet SIGKILLed mid-sweep: exit 3 in seconds
                   with one line, trials finished 5 s before the kill saved; `--resume`
- prefect-kill     the `agentsweep up` stack's Prefect server SIGKILLed mid-sweep: exit 3 with
                   one line, every trial saved; `agentsweep up`, `--resume`
- hostile-catalog  suites naming a domain by absolute path, by `../`, and through a symlink in a
                   catalog root: each refused (exit 2) and the domain's code never imported
- s3-outage-10s    the S3 warehouse (moto behind a loopback forwarder) gone for 10 s mid-sweep:
                   waited out (AGENTSWEEP_OBJECT_STORE_RETRY_S, 60 s), the sweep finishes, exit 0
- s3-outage-past-bound  gone for longer than a 5 s bound: one line, exit 3; back, `--resume`
                   completes the grid (rows = distinct = complete, read from the bucket)

Everything stays on 127.0.0.1. Options: ``--only name,name``, ``--repeats`` (grid size).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SUITE = REPO / "catalogs" / "meeting_rooms" / "suites" / "intent_change.jsonl"
INFRA_KINDS = ("rate_limit", "timeout", "connection", "server_error", "overloaded",
               "harness_error")
CANARY_KEY = "sk-canary-4f1b9e0c7d2a"
CANARY_PASSWORD = "pw-canary-8e3d1c"
CANARY_HEADER = "hdr-canary-5b7e2a"
CANARY_PARAM = "prm-canary-9c4d1f"


@dataclass
class Outcome:
    name: str
    grid: int = 0
    rows: int = 0
    distinct: int = 0
    complete: int = 0
    attempts: dict[str, int] = field(default_factory=dict)
    exits: list[int] = field(default_factory=list)
    wall_s: float = 0.0
    problems: list[str] = field(default_factory=list)
    note: str = ""


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PREFECT_", "RAY_", "AGENTSWEEP_")) and not k.endswith("_API_KEY")}
    env.update(AGENTSWEEP_HOME=str(home), AGENTSWEEP_PROGRESS="0", **extra)
    return env


def agentsweep(home: Path, *args: str, timeout: float = 600, **env: str
               ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "agentsweep"), *args], env=_env(home, **env),
                          capture_output=True, text=True, timeout=timeout, check=False)


def spawn(home: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(BIN / "agentsweep"), *args], env=_env(home, **env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def reference_server(port: int, *flags: str) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen([str(BIN / "agentsweep"), "reference-server", "--port", str(port),
                                *flags], env=_env(Path(tempfile.gettempdir())),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    try:
        _wait_port(port)
        yield process
    finally:
        process.kill()
        process.wait()


def _wait_port(port: int, deadline_s: float = 30) -> None:
    until = time.monotonic() + deadline_s
    while time.monotonic() < until:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


def grid_args(repeats: int, run_id: str) -> tuple[str, ...]:
    return ("run", "--suite", str(SUITE), "--memory-mode", "chat", "--repeats", str(repeats),
            "--run-id", run_id)


def http_args(port: int) -> tuple[str, ...]:
    return ("--model", "reference-http/golden", "--api-base", f"http://127.0.0.1:{port}/v1")


def tally(outcome: Outcome, home: Path, run_id: str) -> Outcome:
    root = home / "warehouse"
    con = duckdb.connect()
    files = sorted(str(p) for p in (root / "trials" / f"run_id={run_id}").glob("*.parquet"))
    if files:
        outcome.rows, outcome.distinct = con.execute(
            "SELECT count(*), count(DISTINCT trial_id) FROM read_parquet($f)",
            {"f": files}).fetchone() or (0, 0)
        outcome.complete = int(con.execute(
            "SELECT count(DISTINCT trial_id) FROM read_parquet($f) WHERE status = 'complete'",
            {"f": files}).fetchone()[0])  # type: ignore[index]
        billed = con.execute(
            "SELECT count(*) FROM read_parquet($f) WHERE status IN ('agent_error', 'limit') "
            "AND error_kind IN $kinds", {"f": files, "kinds": list(INFRA_KINDS)}).fetchone()
        if billed and billed[0]:
            outcome.problems.append(f"{billed[0]} infrastructure error(s) billed to the agent")
    attempts = sorted(str(p) for p in (root / "attempts" / f"run_id={run_id}").glob("*.parquet"))
    if attempts:
        outcome.attempts = dict(con.execute(
            "SELECT coalesce(error_kind, outcome), count(*) FROM read_parquet($f) GROUP BY 1 "
            "ORDER BY 2 DESC", {"f": attempts}).fetchall())
    if files:  # a resumed trial has its earlier incomplete row too; never two final ones
        twice = con.execute(
            "SELECT count(*) FROM (SELECT trial_id FROM read_parquet($f) WHERE status <> "
            "'incomplete' GROUP BY 1 HAVING count(*) > 1)", {"f": files}).fetchone()
        if twice and twice[0]:
            outcome.problems.append(f"{twice[0]} trial(s) with two final rows")
    return outcome


def expect_complete(outcome: Outcome) -> Outcome:
    if outcome.complete != outcome.grid:
        outcome.problems.append(f"{outcome.grid - outcome.complete} trial(s) not complete")
    return outcome


def one_line_error(outcome: Outcome, result: subprocess.CompletedProcess[str]) -> None:
    text = result.stdout + result.stderr
    if "Traceback" in text:
        outcome.problems.append("a traceback on the terminal")


# --- the faults -----------------------------------------------------------------------------

def http_faults(repeats: int) -> Outcome:
    out, home, port = Outcome("http-faults-20", grid=11 * repeats), _home(), free_port()
    with reference_server(port, "--error-rate-429", "0.05", "--error-rate-500", "0.05",
                          "--timeout-rate", "0.05", "--drop-rate", "0.05", "--seed", "7"):
        started = time.monotonic()
        result = agentsweep(home, *grid_args(repeats, "f"), *http_args(port), "--timeout-s", "2")
        out.exits.append(result.returncode)
        one_line_error(out, result)
        if result.returncode == 3:  # some trials ran out of attempts: a user resumes them
            resumed = agentsweep(home, "run", "--run-id", "f", "--resume")
            out.exits.append(resumed.returncode)
            one_line_error(out, resumed)
        out.wall_s = time.monotonic() - started
    tally(out, home, "f")
    if out.distinct != out.grid:  # every trial accounted for: complete, or incomplete (infra)
        out.problems.append(f"{out.grid - out.distinct} trial(s) without a row")
    out.note = ("retries restart a trial: at 20% per call a long dialog can run out of "
                "attempts twice; it stays incomplete, never billed to the agent")
    kinds = set(out.attempts)
    for kind in ("rate_limit", "server_error", "timeout", "connection"):
        if kind not in kinds:
            out.problems.append(f"no {kind} attempt recorded (the fault was injected)")
    return out


def silent_provider(repeats: int) -> Outcome:
    out, home = Outcome("silent-provider", grid=2), _home()
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        port = silent.getsockname()[1]
        spec = home.parent / "silent.yaml"  # JSON is YAML
        spec.write_text(json.dumps({
            "suites": [str(SUITE)], "scenarios": ["V1", "F1"], "memory_modes": ["chat"],
            "repeats": 1, "run_id": "f",
            "retry": {"max_attempts": 2, "max_outage_s": 5},  # the default waits out 15 min
            "models": [{"name": "reference-http/golden", "timeout_s": 1,
                        "api_base": f"http://127.0.0.1:{port}/v1"}]}))
        started = time.monotonic()
        result = agentsweep(home, "run", "--spec", str(spec))
        out.wall_s = time.monotonic() - started
    out.exits.append(result.returncode)
    one_line_error(out, result)
    tally(out, home, "f")
    if result.returncode != 3 or out.complete:
        out.problems.append(f"exit {result.returncode}, {out.complete} complete: expected 3, 0")
    if set(out.attempts) != {"timeout"}:
        out.problems.append(f"attempts {out.attempts}: expected only timeouts")
    out.note = "every call times out; trials stay incomplete (exit 3)"
    return out


def outage(repeats: int) -> Outcome:
    out, home, port = Outcome("outage-15s", grid=11 * repeats), _home(), free_port()
    server = subprocess.Popen([str(BIN / "agentsweep"), "reference-server", "--port", str(port),
                               "--latency-ms", "200"], env=_env(Path(tempfile.gettempdir())),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_port(port)
    holder: dict[str, subprocess.Popen[bytes]] = {"server": server}

    def cut() -> None:
        _wait_first_attempt(home)
        holder["server"].kill()
        holder["server"].wait()
        time.sleep(15)
        holder["server"] = subprocess.Popen(
            [str(BIN / "agentsweep"), "reference-server", "--port", str(port), "--latency-ms",
             "200"], env=_env(Path(tempfile.gettempdir())), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)

    cutter = threading.Thread(target=cut, daemon=True)
    cutter.start()
    started = time.monotonic()
    result = agentsweep(home, *grid_args(repeats, "f"), *http_args(port), "--timeout-s", "2")
    out.wall_s = time.monotonic() - started
    cutter.join()
    holder["server"].kill()
    out.exits.append(result.returncode)
    one_line_error(out, result)
    expect_complete(tally(out, home, "f"))
    if "down since" not in result.stdout + result.stderr:
        out.problems.append("the outage was not reported")
    return out


def _wait_first_attempt(home: Path, deadline_s: float = 300) -> None:
    """Until the sweep is calling the provider (its runs row has landed, Ray is up)."""
    until = time.monotonic() + deadline_s
    while time.monotonic() < until and not (home / "warehouse" / "runs").exists():
        time.sleep(0.1)
    time.sleep(8.0)  # Ray and the workers start after the runs row


def driver_kill(moment: str, delay_s: float) -> Callable[[int], Outcome]:
    def run(repeats: int) -> Outcome:
        out, home, port = Outcome(f"driver-kill-{moment}", grid=11 * repeats), _home(), \
            free_port()
        with reference_server(port, "--latency-ms", "300"):
            started = time.monotonic()
            driver = spawn(home, *grid_args(repeats, "f"), *http_args(port))
            if moment == "mid-sweep":
                _wait_first_attempt(home)
            time.sleep(delay_s)
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
            out.exits.append(driver.returncode)
            time.sleep(1.0)
            resumed = agentsweep(home, "run", "--run-id", "f", "--resume")
            never_started = ("no recorded grid", "no run 'f' in the warehouse")
            if resumed.returncode == 2 and any(w in resumed.stderr for w in never_started):
                resumed = agentsweep(home, *grid_args(repeats, "f"), *http_args(port))
            out.wall_s = time.monotonic() - started
        out.exits.append(resumed.returncode)
        one_line_error(out, resumed)
        return expect_complete(tally(out, home, "f"))
    return run


def worker_kill(repeats: int) -> Outcome:
    out, home, port = Outcome("worker-kill", grid=11 * repeats), _home(), free_port()
    with reference_server(port, "--latency-ms", "300"):
        started = time.monotonic()
        driver = spawn(home, *grid_args(repeats, "f"), *http_args(port))
        _wait_first_attempt(home)
        workers = _ray_workers(home)
        if workers:
            os.kill(workers[0], signal.SIGKILL)
        else:
            out.problems.append("no Ray worker found to kill")
        stdout, stderr = driver.communicate(timeout=600)
        out.wall_s = time.monotonic() - started
    out.exits.append(driver.returncode)
    if "Traceback" in stdout + stderr:
        out.problems.append("a traceback on the terminal")
    return expect_complete(tally(out, home, "f"))


def _ray_workers(home: Path) -> list[int]:
    """The trial workers (Ray actors) of this sweep: by process title, not by a path in the
    command line (the raylet's names default_worker.py too; killing it kills the node)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        ours = f"AGENTSWEEP_HOME={home}".encode() in environ
        if cmdline.startswith(b"ray::TrialWorker") and ours:
            found.append(int(entry))
    return sorted(found)


def disk_full(repeats: int) -> Outcome:
    out = Outcome("disk-full", grid=11 * repeats)
    if os.geteuid() != 0:
        out.note = "skipped: mounting a tmpfs needs root"
        return out
    mount = Path(tempfile.mkdtemp(prefix="agentsweep-fault-disk-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], check=True)
    try:
        home, port = mount / "home", free_port()
        with reference_server(port, "--latency-ms", "300"):
            filler = mount / "filler"

            def fill() -> None:
                _wait_first_attempt(home, 300)
                with open(filler, "wb", buffering=0) as handle:
                    try:
                        while True:
                            handle.write(b"\0" * (1 << 20))
                    except OSError:
                        pass

            filling = threading.Thread(target=fill, daemon=True)
            filling.start()
            started = time.monotonic()
            first = agentsweep(home, *grid_args(repeats, "f"), *http_args(port),
                               AGENTSWEEP_MIN_FREE_MB="16")
            filling.join()
            out.exits.append(first.returncode)
            one_line_error(out, first)
            lines = first.stderr.strip().splitlines()
            if first.returncode != 3 or len(lines) != 1 or "no space left" not in lines[0]:
                out.problems.append(f"exit {first.returncode}, stderr {lines[-3:]}")
            filler.unlink(missing_ok=True)
            resumed = agentsweep(home, "run", "--run-id", "f", "--resume",
                                 AGENTSWEEP_MIN_FREE_MB="16")
            out.wall_s = time.monotonic() - started
            out.exits.append(resumed.returncode)
            one_line_error(out, resumed)
        expect_complete(tally(out, home, "f"))
        out.note = "stopped with one line; the resume completed the grid"
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
        mount.rmdir()
    return out


def corrupt_file(repeats: int) -> Outcome:
    out, home = Outcome("corrupt-file", grid=11 * repeats), _home()
    started = time.monotonic()
    first = agentsweep(home, *grid_args(1, "old"))
    events = next((home / "warehouse" / "events" / "run_id=old").glob("*.parquet"))
    data = bytearray(events.read_bytes())
    data[len(data) // 3] ^= 0xFF
    events.write_bytes(bytes(data))
    second = agentsweep(home, *grid_args(repeats, "f"))
    checked = agentsweep(home, "warehouse", "check")
    out.wall_s = time.monotonic() - started
    out.exits += [first.returncode, second.returncode, checked.returncode]
    one_line_error(out, second)
    if checked.returncode != 1 or events.name not in checked.stdout + checked.stderr:
        out.problems.append("`warehouse check` did not name the damaged file")
    out.note = "the new sweep ran; `warehouse check` names the file"
    return expect_complete(tally(out, home, "f"))


def concurrent_start(repeats: int) -> Outcome:
    out, home, port = Outcome("concurrent-start", grid=11 * repeats), _home(), free_port()
    with reference_server(port, "--latency-ms", "300"):
        started = time.monotonic()
        drivers = [spawn(home, *grid_args(repeats, "f"), *http_args(port)) for _ in range(2)]
        results = [d.communicate(timeout=600) for d in drivers]
        out.wall_s = time.monotonic() - started
    out.exits += [d.returncode for d in drivers]
    refused = [err for (_, err), d in zip(results, drivers, strict=True) if d.returncode == 2]
    if sorted(out.exits) != [0, 2] or not refused or "pid" not in refused[0]:
        out.problems.append(f"exits {out.exits}: expected one run and one refusal naming the "
                            "holder")
    return expect_complete(tally(out, home, "f"))


def canary_key(repeats: int) -> Outcome:
    out, home, port = Outcome("canary-key", grid=11 * repeats), _home(), free_port()
    with reference_server(port):
        started = time.monotonic()
        spec = home.parent / "canary.yaml"
        spec.write_text(json.dumps({
            "suites": [str(SUITE)], "memory_modes": ["chat"], "repeats": repeats,
            "run_id": "f", "models": [{"name": "reference-http/golden",
                                       "api_base": f"http://user:{CANARY_PASSWORD}@127.0.0.1:"
                                                   f"{port}/v1",
                                       "params": {"extra_headers": {"X-Token": CANARY_HEADER},
                                                  "gateway_secret": CANARY_PARAM}}]}))
        result = agentsweep(home, "run", "--spec", str(spec), OPENAI_API_KEY=CANARY_KEY)
        out.wall_s = time.monotonic() - started
    out.exits.append(result.returncode)
    one_line_error(out, result)
    for canary in (CANARY_KEY, CANARY_PASSWORD, CANARY_HEADER, CANARY_PARAM):
        if canary in result.stdout + result.stderr:
            out.problems.append(f"{canary[:9]}... on the terminal")
        hits = [p for p in home.rglob("*") if p.is_file() and canary.encode() in p.read_bytes()]
        if hits:
            out.problems.append(f"{canary[:9]}... in {[str(p.relative_to(home)) for p in hits]}")
    files = sum(1 for p in home.rglob("*") if p.is_file())
    out.note = f"{files} files of the home grepped for the four canaries"
    return expect_complete(tally(out, home, "f"))


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (by /proc parent links)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        current = frontier.pop()
        kids = [p for p, parent in parents.items() if parent == current]
        found += kids
        frontier += kids
    return found


def _named(pids: list[int], names: tuple[str, ...]) -> list[int]:
    found = []
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() in names:
                found.append(pid)
        except OSError:
            continue
    return found


def _latest_finished(home: Path, run_id: str) -> float | None:
    files = sorted(str(p) for p in (home / "warehouse" / "trials" / f"run_id={run_id}")
                   .glob("*.parquet"))
    if not files:
        return None
    latest = duckdb.connect().execute("SELECT max(epoch(finished_at)) FROM read_parquet($f)",
                                      {"f": files}).fetchone()
    return float(latest[0]) if latest and latest[0] is not None else None


def _wait_first_batch(home: Path, run_id: str, deadline_s: float = 300) -> None:
    folder = home / "warehouse" / "trials" / f"run_id={run_id}"
    until = time.monotonic() + deadline_s
    while time.monotonic() < until and not list(folder.glob("*.parquet")):
        time.sleep(0.1)


def _one_stop_line(out: Outcome, stderr: str, starts: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    if len(lines) != 1 or not lines[0].startswith(starts) or "--resume" not in lines[0]:
        out.problems.append(f"expected one line starting {starts!r} with the resume command, "
                            f"got {lines[:3]}")


def ray_head_kill(repeats: int) -> Outcome:
    out, home, port = Outcome("ray-head-kill", grid=11 * repeats), _home(), free_port()
    ray_dir = tempfile.mkdtemp(prefix="as-head-", dir="/tmp")
    with reference_server(port, "--latency-ms", "300"):
        started = time.monotonic()
        driver = spawn(home, *grid_args(repeats, "f"), *http_args(port), "--max-in-flight", "4",
                       RAY_TMPDIR=ray_dir)
        _wait_first_batch(home, "f")
        time.sleep(6.0)
        head = _named(_children(driver.pid), ("gcs_server", "raylet"))
        killed_at = time.time()
        for pid in head:
            os.kill(pid, signal.SIGKILL)
        _, stderr = driver.communicate(timeout=120)
        ended_s = time.time() - killed_at
        out.exits.append(driver.returncode)
        latest = _latest_finished(home, "f")
        _one_stop_line(out, stderr, "error: stopped: the Ray head at")
        if latest is None or killed_at - latest > 5:
            out.problems.append("trials that finished before the kill were not saved")
        resumed = agentsweep(home, "run", "--run-id", "f", "--resume", RAY_TMPDIR=ray_dir)
        out.wall_s = time.monotonic() - started
    out.exits.append(resumed.returncode)
    one_line_error(out, resumed)
    out.note = (f"killed {len(head)} head processes; the driver ended {ended_s:.1f} s later, "
                f"its last saved trial {killed_at - (latest or 0):.1f} s before the kill")
    return expect_complete(tally(out, home, "f"))


def prefect_kill(repeats: int) -> Outcome:
    out, home, port = Outcome("prefect-kill", grid=11 * repeats), _home(), free_port()
    with reference_server(port, "--latency-ms", "300"):
        started = time.monotonic()
        agentsweep(home, "up")
        try:
            driver = spawn(home, *grid_args(repeats, "f"), *http_args(port), "--max-in-flight",
                           "4")
            _wait_first_batch(home, "f")
            state = json.loads((home / "stack" / "stack.json").read_text())
            killed_at = time.time()
            os.killpg(int(state["prefect_session"]), signal.SIGKILL)
            _, stderr = driver.communicate(timeout=600)
            ended_s = time.time() - killed_at
            out.exits.append(driver.returncode)
            _one_stop_line(out, stderr, "error: the Prefect server at")
            agentsweep(home, "up")
            resumed = agentsweep(home, "run", "--run-id", "f", "--resume")
            out.exits.append(resumed.returncode)
            one_line_error(out, resumed)
        finally:
            agentsweep(home, "down")
        out.wall_s = time.monotonic() - started
    out.note = (f"the driver ended {ended_s:.1f} s after the kill (Prefect's client retries); "
                "resumed on the restarted stack")
    return expect_complete(tally(out, home, "f"))


MARKER_TOOLS = "import pathlib\npathlib.Path({marker!r}).write_text('imported')\n"


def hostile_catalog(repeats: int) -> Outcome:
    out, home = Outcome("hostile-catalog"), _home()
    started = time.monotonic()
    outside = home.parent / "outside" / "rooms_x"
    shutil.copytree(REPO / "catalogs" / "meeting_rooms", outside)
    marker = home.parent / "imported.marker"
    (outside / "tools.py").write_text(MARKER_TOOLS.format(marker=str(marker)))
    roots = home.parent / "roots"
    roots.mkdir()
    (roots / "linked").symlink_to(outside)
    line = json.loads(SUITE.read_text("utf-8").splitlines()[0])
    for name, domain in (("absolute", str(outside)),
                         ("dot-dot", "../" * 12 + str(outside).lstrip("/")),
                         ("symlink", "linked")):
        suite = home.parent / f"{name}.jsonl"
        suite.write_text(json.dumps({**line, "domain": domain}, ensure_ascii=False) + "\n")
        result = agentsweep(home, "run", "--suite", str(suite), "--catalog", str(roots),
                            "--model", "reference/golden", "--memory-mode", "chat",
                            "--repeats", "1", "--run-id", name)
        out.exits.append(result.returncode)
        if result.returncode != 2 or ":1:" not in result.stderr:
            out.problems.append(f"{name}: exit {result.returncode}, {result.stderr[:120]!r}")
        one_line_error(out, result)
    if marker.exists():
        out.problems.append("the outside domain's tools.py was imported")
    out.wall_s = time.monotonic() - started
    out.note = "absolute, ../ and symlinked domains refused at load; nothing imported"
    return out


def s3_outage(outage_s: float, bound_s: float | None) -> Callable[[int], Outcome]:
    """The warehouse's bucket unreachable for ``outage_s`` once the sweep has committed its
    first batch; ``bound_s``: the retry bound (AGENTSWEEP_OBJECT_STORE_RETRY_S) when shorter
    than the outage, so the sweep stops and a resume finishes it."""
    def run(repeats: int) -> Outcome:
        sys.path.insert(0, str(REPO / "tests"))
        from helpers.s3_server import DUMMY_ENV, moto_server
        from helpers.tcp_forwarder import TcpForwarder

        name = f"s3-outage-{outage_s:g}s" if bound_s is None else "s3-outage-past-bound"
        out, home, port = Outcome(name, grid=11 * repeats), _home(), free_port()
        with moto_server() as endpoint, reference_server(port, "--latency-ms", "300"):
            forwarder = TcpForwarder(int(endpoint.rsplit(":", 1)[1]))
            forwarder.start()
            env = {**DUMMY_ENV, "AWS_ENDPOINT_URL": forwarder.endpoint,
                   "AGENTSWEEP_WAREHOUSE": "s3://faults/warehouse"}
            if bound_s is not None:
                env["AGENTSWEEP_OBJECT_STORE_RETRY_S"] = str(bound_s)
            _bucket(endpoint, DUMMY_ENV)

            def cut() -> None:
                _wait_committed(endpoint, DUMMY_ENV)
                forwarder.stop()
                time.sleep(outage_s)
                forwarder.start()

            cutter = threading.Thread(target=cut, daemon=True)
            cutter.start()
            started = time.monotonic()
            args = (*grid_args(repeats, "s3"), *http_args(port))
            result = agentsweep(home, *args, **env)
            out.exits.append(result.returncode)
            one_line_error(out, result)
            if os.environ.get("FAULTS_SHOW"):
                Path(os.environ["FAULTS_SHOW"] + name).write_text(result.stdout + result.stderr)
            cutter.join()
            if bound_s is not None:
                if result.returncode != 3:
                    out.problems.append(f"exit {result.returncode} past the bound, not 3")
                resumed = agentsweep(home, "run", "--run-id", "s3", "--resume", **env)
                out.exits.append(resumed.returncode)
                one_line_error(out, resumed)
            out.wall_s = time.monotonic() - started
            counts = agentsweep(home, "sql", "--format", "csv",
                                "select count(*), count(distinct trial_id), count(distinct "
                                "trial_id) filter (where status = 'complete') from trials_all",
                                **env).stdout.splitlines()
            forwarder.stop()
        out.rows, out.distinct, out.complete = (int(v) for v in counts[1].split(","))
        if out.exits[-1] != 0:
            out.problems.append(f"the sweep ended with exit {out.exits[-1]}")
        return expect_complete(out)
    return run


def _bucket(endpoint: str, env: dict[str, str]) -> None:
    import boto3

    boto3.client("s3", endpoint_url=endpoint, region_name=env["AWS_REGION"],
                 aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                 aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"]).create_bucket(Bucket="faults")


def _wait_committed(endpoint: str, env: dict[str, str], deadline_s: float = 300) -> None:
    """Until a trials part of the run is in the bucket (the sweep is under way)."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name=env["AWS_REGION"],
                      aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                      aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])
    until = time.monotonic() + deadline_s
    while time.monotonic() < until:
        listed = s3.list_objects_v2(Bucket="faults", Prefix="warehouse/trials/run_id=s3/")
        if listed.get("KeyCount"):
            return
        time.sleep(0.2)


FAULTS: dict[str, Callable[[int], Outcome]] = {
    "http-faults-20": http_faults,
    "silent-provider": silent_provider,
    "outage-15s": outage,
    "driver-kill-start-up": driver_kill("start-up", 2.0),
    "driver-kill-mid-sweep": driver_kill("mid-sweep", 1.0),
    "worker-kill": worker_kill,
    "disk-full": disk_full,
    "corrupt-file": corrupt_file,
    "concurrent-start": concurrent_start,
    "canary-key": canary_key,
    "ray-head-kill": ray_head_kill,
    "prefect-kill": prefect_kill,
    "hostile-catalog": hostile_catalog,
    "s3-outage-10s": s3_outage(10, None),
    "s3-outage-past-bound": s3_outage(15, 5),
}

_HOMES: list[Path] = []


def _home() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="agentsweep-fault-"))
    _HOMES.append(folder)
    return folder / "home"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="comma-separated fault names")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of the 11 scenarios")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(FAULTS)
    unknown = set(names) - set(FAULTS)
    if unknown:
        parser.error(f"unknown faults {sorted(unknown)}; known: {', '.join(FAULTS)}")
    header = (f"{'fault':<22} {'grid':>4} {'rows':>4} {'ids':>4} {'done':>4} {'exits':<10} "
              f"{'wall s':>6}  attempts by kind")
    print(header)
    failed = 0
    try:
        for name in names:
            outcome = FAULTS[name](args.repeats)
            attempts = ", ".join(f"{k} {v}" for k, v in outcome.attempts.items()) or "-"
            exits = ",".join(str(e) for e in outcome.exits) or "-"
            print(f"{outcome.name:<22} {outcome.grid:>4} {outcome.rows:>4} {outcome.distinct:>4} "
                  f"{outcome.complete:>4} {exits:<10} {outcome.wall_s:>6.1f}  {attempts}")
            for problem in outcome.problems:
                print(f"{'':<22} PROBLEM: {problem}")
            if outcome.note:
                print(f"{'':<22} {outcome.note}")
            failed += bool(outcome.problems)
            sys.stdout.flush()
    finally:
        for folder in _HOMES:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"{len(names) - failed}/{len(names)} faults held their invariants")
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
