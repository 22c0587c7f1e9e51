"""A real two-node Ray cluster on this machine, started with the `ray start` CLI, and
`agentsweep run --ray-address` against it: trials must land on both nodes.

Why 127.0.0.2 and 127.0.0.3 and not 127.0.0.1: Ray rewrites the literal 127.0.0.1 (and
``localhost``) in ``--address``, ``--node-ip-address`` and ``ray.init(address=...)`` into the
machine's routable address, found with a UDP connect to 8.8.8.8:53, unless
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``; and a worker-node ``ray start`` refuses to run with that
switch. Other loopback addresses are left alone, so every node, the driver and the workers
talk over loopback only. The head node gets the switch (its own probes then answer 127.0.0.1).

Each node runs in its own session (``start_new_session``) with its own ``--temp-dir``, ports and
worker-port range; teardown signals only the processes of those sessions (never ``ray stop``,
which would stop every Ray on the machine, the test session's own included).

Under strace (when installed; the traces are read once the nodes are stopped) the head and the
driver, with everything they start, must connect to loopback only. The worker node's
``ray start`` and its runtime-env agent make UDP route lookups to 8.8.8.8:53 (Ray's
``get_node_ip_address()`` for log prefixes; a UDP connect sends no packet); nothing else.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import MEETING_SUITE

from pipeline.runtime.hygiene import FORCED, RAY_START_PROXY
from pipeline.runtime.stack import session_pids
from warehouse.location import S3Location

BIN = Path(sys.executable).parent
HEAD_IP, WORKER_IP = "127.0.0.2", "127.0.0.3"
STRACE = shutil.which("strace")
_CONNECT = re.compile(r'sin6?_port=htons\((\d+)\), (?:sin_addr=inet_addr\("([^"]+)"\)|'
                      r'sin6_flowinfo=[^,]+, inet_pton\(AF_INET6, "([^"]+)")')
_ROUTE_LOOKUP = {("8.8.8.8", 53), ("2001:4860:4860::8888", 53)}


def _is_loopback(address: str) -> bool:
    address = address.removeprefix("::ffff:")
    return address.startswith("127.") or address == "::1"


def _foreign(trace: Path) -> set[tuple[str, int]]:
    found = {(m[1] or m[2], int(m[0])) for m in _CONNECT.findall(trace.read_text())}
    return {(a.removeprefix("::ffff:"), p) for a, p in found if not _is_loopback(a)}


class _Ports:
    """Hands out ports free right now, never the same one twice."""

    def __init__(self) -> None:
        self.taken: set[int] = set()

    def block(self, count: int) -> list[int]:
        while True:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                start: int = probe.getsockname()[1]
            ports = list(range(start, start + count))
            if ports[-1] < 65000 and not self.taken & set(ports) and all(map(_bindable, ports)):
                self.taken.update(ports)
                return ports

    def one(self) -> int:
        return self.block(1)[0]


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _wait_gone(sid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while session_pids(sid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@dataclass
class Node:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    trace: Path | None

    def wait_ready(self, deadline: float) -> None:
        while b"block forever" not in self.log.read_bytes():
            assert self.proc.poll() is None, f"{self.name} exited:\n{self.log.read_text()}"
            assert time.monotonic() < deadline, f"{self.name} not up:\n{self.log.read_text()}"
            time.sleep(0.25)

    def stop(self) -> None:
        """Stop the node's processes: its session only (the session this test created).

        strace first (it detaches and completes its output), then `ray start --block`, which
        stops the node's processes; what is left of the session after that gets SIGTERM, then
        SIGKILL."""
        sid = self.proc.pid
        if self.trace is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        starters = [p for p in session_pids(sid) if b"ray\0start" in _cmdline(p)]
        _signal(starters or [sid], signal.SIGTERM)
        if not _wait_gone(sid, 15):
            _signal(session_pids(sid), signal.SIGTERM)
            if not _wait_gone(sid, 5):
                _signal(session_pids(sid), signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@dataclass
class Cluster:
    address: str
    root: Path
    nodes: list[Node] = field(default_factory=list)


def _node_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAY_", "PREFECT_")) and k.lower() not in
           {"http_proxy", "https_proxy", "no_proxy"}}
    env.update({**FORCED, "RAY_AUTH_MODE": "disabled", **RAY_START_PROXY, **extra})
    return env


def _wait_for_alive_nodes(address: str, count: int, deadline: float) -> None:
    """`ray start` returning is not the GCS listing the node as alive: wait for that, or the
    driver may place every worker on the head."""
    probe = ("import ray, time\n"
             f"ray.init(address={address!r}, log_to_driver=False, logging_level='ERROR')\n"
             f"while sum(n['Alive'] for n in ray.nodes()) < {count}: time.sleep(0.2)\n"
             "ray.shutdown()\n")
    left = max(5.0, deadline - time.monotonic())
    subprocess.run([sys.executable, "-c", probe], env=_node_env(), timeout=left, check=True,
                   capture_output=True)


def _start(name: str, args: list[str], root: Path, env: dict[str, str]) -> Node:
    log = root / f"{name}.log"
    trace = root / f"{name}.strace" if STRACE else None
    command = [str(BIN / "ray"), "start", "--block", *args]
    if trace is not None:  # -I1: SIGTERM makes strace detach and exit (it ignores it otherwise)
        command = [str(STRACE), "-f", "-qq", "-I1", "--seccomp-bpf", "-e", "trace=connect",
                   "-o", str(trace), *command]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    return Node(name, proc, log, trace)


@contextmanager
def two_node_cluster(root: Path) -> Iterator[Cluster]:
    """Head on HEAD_IP, worker node on WORKER_IP, 1 CPU each; stopped on exit."""
    ports = _Ports()
    gcs, dashboard, head_agent, worker_agent = (ports.one() for _ in range(4))
    head_workers, worker_workers = ports.block(40), ports.block(40)
    cluster = Cluster(f"{HEAD_IP}:{gcs}", root)
    common = ["--num-cpus=1", "--object-store-memory=100000000"]
    try:
        deadline = time.monotonic() + 300  # a hang guard
        head = _start("head", [
            "--head", f"--node-ip-address={HEAD_IP}", f"--port={gcs}",
            "--include-dashboard=false", f"--dashboard-port={dashboard}",
            "--disable-usage-stats", f"--temp-dir={root / 'head'}",
            f"--dashboard-agent-listen-port={head_agent}",
            f"--min-worker-port={head_workers[0]}", f"--max-worker-port={head_workers[-1]}",
            *common], root, _node_env(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0"))
        cluster.nodes.append(head)
        head.wait_ready(deadline)
        worker = _start("worker", [
            f"--address={cluster.address}", f"--node-ip-address={WORKER_IP}",
            f"--temp-dir={root / 'worker'}", f"--dashboard-agent-listen-port={worker_agent}",
            f"--min-worker-port={worker_workers[0]}",
            f"--max-worker-port={worker_workers[-1]}", *common], root, _node_env())
        cluster.nodes.append(worker)
        worker.wait_ready(deadline)
        _wait_for_alive_nodes(cluster.address, 2, deadline)
        yield cluster
    finally:
        for node in reversed(cluster.nodes):
            node.stop()


@pytest.fixture
def short_root() -> Iterator[Path]:
    """A short temp dir: Ray's unix socket paths under it must stay below 108 bytes."""
    root = Path(tempfile.mkdtemp(prefix="asmn-", dir="/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _agentsweep(home: Path, trace: Path | None, *args: str,
                warehouse: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    env["AGENTSWEEP_HOME"] = str(home)
    if warehouse is not None:
        env["AGENTSWEEP_WAREHOUSE"] = warehouse
    command = [str(BIN / "agentsweep"), *args]
    if trace is not None:
        command = [str(STRACE), "-f", "-qq", "--seccomp-bpf", "-e", "trace=connect", "-o",
                   str(trace), *command]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=240,
                          check=False)


@pytest.mark.slow
def test_a_sweep_spreads_over_both_nodes_on_loopback_only(
        short_root: Path, s3_warehouse: S3Location) -> None:
    """The driver writes to a warehouse on the loopback S3 server (moto), as a driver on a
    cluster would to a bucket; the nodes never touch it."""
    home = short_root / "home"
    trace = short_root / "driver.strace" if STRACE else None
    bucket = str(s3_warehouse)
    with two_node_cluster(short_root) as cluster:
        run = _agentsweep(home, trace, "run", "--ray-address", cluster.address,
                          "--suite", str(MEETING_SUITE), "--memory-mode", "chat",
                          "--repeats", "2", "--run-id", "multi", warehouse=bucket)
    assert run.returncode == 0, run.stdout + run.stderr
    assert not (home / "warehouse").exists()  # every row went to the bucket
    sql = _agentsweep(home, None, "sql", "--format", "csv",
                      "select count(distinct node_id), count(*), "
                      "count(*) filter (where status = 'complete'), "
                      "(select any_value(ray_address) from runs where run_id = 'multi') "
                      "from trials where run_id = 'multi'", warehouse=bucket)
    assert sql.returncode == 0, sql.stderr
    nodes, trials, complete, address = list(csv.reader(io.StringIO(sql.stdout)))[1]
    assert address == cluster.address
    assert int(trials) >= 16 and complete == trials
    assert nodes == "2", f"all {trials} trials ran on one node"

    if STRACE is None:
        pytest.skip("strace is not installed: loopback-only not checked (.ci/run installs it)")
    head, worker = cluster.nodes
    assert trace is not None and head.trace is not None and worker.trace is not None
    assert _foreign(trace) == set(), "the driver connected beyond loopback"
    assert _foreign(head.trace) == set(), "the head node connected beyond loopback"
    assert _foreign(worker.trace) <= _ROUTE_LOOKUP, _foreign(worker.trace)
