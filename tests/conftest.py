"""Shared fixtures: an isolated AGENTSWEEP_HOME, one local Ray and one Prefect harness per session.

The environment is set at import time, before anything imports Ray, Prefect or LiteLLM, so
subprocesses and Ray workers the tests start inherit it: among it the switch that forbids real
model requests (``AGENTSWEEP_ALLOW_MODEL_REQUESTS=0``; ``pytest --live`` turns it off).
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import typer.testing as typer_testing

_HOME = Path(tempfile.mkdtemp(prefix="agentsweep-test-home-"))
atexit.register(shutil.rmtree, _HOME, True)  # no home left behind
os.environ["AGENTSWEEP_HOME"] = str(_HOME)
os.environ.pop("RAY_ADDRESS", None)
os.environ.pop("PREFECT_API_URL", None)
# No test reaches a real provider unless run with --live (see pytest_configure).
os.environ["AGENTSWEEP_ALLOW_MODEL_REQUESTS"] = "0"
# Tables are laid out for this width, whatever terminal (or none, under pytest-xdist) runs them.
os.environ["COLUMNS"] = "200"

from pipeline.runtime import hygiene  # noqa: E402

if TYPE_CHECKING:
    from pipeline.catalog import Suite
    from warehouse.location import S3Location

hygiene.apply()

REPO = Path(__file__).resolve().parent.parent
MEETING_SUITE = REPO / "catalogs" / "meeting_rooms" / "suites" / "intent_change.jsonl"


@functools.cache
def loaded_suite(path: Path) -> Suite:
    """``load_suite(path)`` once per session: a suite and its scenarios are frozen, so tests that
    only read one share it (the tau2 retail suite takes a second or two to load and check)."""
    from pipeline.catalog import load_suite

    return load_suite(path)


def _command_once(build: Any) -> Any:
    """typer's test runner builds the whole click command tree from the app's functions on
    every invoke (~35 ms for ours, hundreds of invokes a run): built once per app instead. A
    click command keeps no state between invocations (each gets a new context)."""
    built: dict[int, tuple[Any, Any]] = {}

    def command(app: Any) -> Any:
        kept = built.get(id(app))
        if kept is None or kept[0] is not app:
            kept = built[id(app)] = (app, build(app))
        return kept[1]

    return command


typer_testing._get_command = _command_once(typer_testing._get_command)  # type: ignore[attr-defined]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--live", action="store_true", default=False,
                     help="also run tests marked live: they call the real provider named by "
                          "AGENTSWEEP_LIVE_MODEL (with its usual key), never in CI")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--live"):  # before any session fixture starts Ray or a subprocess
        os.environ["AGENTSWEEP_ALLOW_MODEL_REQUESTS"] = "1"


GROUP_OF_FIXTURE = {"ray_local": "ray", "prefect_harness": "ray", "local_server": "local-model",
                    "stack_home": "stack"}
"""Under pytest-xdist (``make test``: ``--dist loadgroup``) the tests that share a session's
Ray and Prefect harness run on one worker, and so do those of the local model's server and
those of the warm stack (``agentsweep up``): each is started once, not once per worker. Tests
that start a llama.cpp server of their own (in a sweep) join the local model's group
explicitly: two servers at once would starve each other."""


SLOW_FIXTURES = {*GROUP_OF_FIXTURE, "s3_endpoint"}
"""Servers a test of the fast tier never starts (tests/helpers/fast_tier.py): a session's real
Ray and Prefect API, the local model (~25 s of CPU to start), the loopback S3 server (every
request to it a round trip through moto). A test that needs one belongs to the slow tier (make
test, CI), not to the developer loop (make test-fast)."""


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        groups = {GROUP_OF_FIXTURE[f] for f in fixtures if f in GROUP_OF_FIXTURE}
        if groups:
            item.add_marker(pytest.mark.xdist_group(sorted(groups)[0]))
        if fixtures & SLOW_FIXTURES:
            item.add_marker(pytest.mark.slow)
    if config.getoption("--live"):
        return
    skip = pytest.mark.skip(reason="calls a real provider: run with --live")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist sends the node ids to its scheduler
def pytest_collection_finish(session: pytest.Session) -> None:
    """Each test of an ``xdist_group`` to its group's worker. pytest-xdist 3.8 tells its
    scheduler a test's group by a suffix ``@group`` on the test's node id, written to a field
    pytest 9.2 no longer reads (pytest-dev/pytest-xdist#1386): the groups were silently
    ignored (three Rays, three Prefect APIs, local models side by side). Where the suffix did
    not take, it is written to the id pytest reads, as the fix proposed upstream does."""
    if not getattr(session.config.option, "loadgroup", False):  # set on xdist workers only
        return
    from _pytest.nodeid import NodeId

    for item in session.items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if names and not item.nodeid.endswith("@" + "_".join(names)):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


@pytest.fixture(autouse=True)
def fast_tier_rule(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test not marked slow may not start Ray, a Prefect API, a model or S3 server or an
    ``agentsweep`` process (tests/helpers/fast_tier.py): it fails, naming what it started."""
    if request.node.get_closest_marker("slow") is not None:
        yield
        return
    from helpers.fast_tier import guarded

    with guarded(request.node.nodeid):
        yield


@pytest.fixture(scope="session")
def ray_local() -> Iterator[Any]:
    """A real local Ray for the whole session (2 CPUs, small object store)."""
    from pipeline.execution.executor import ray_session

    with ray_session(num_cpus=2, object_store_bytes=128 * 1024 * 1024) as ray:
        yield ray


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """A real Prefect API (temporary server and database) for the whole session."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return tmp_path / "warehouse"


@pytest.fixture(scope="session")
def local_server() -> Iterator[Any]:
    """The bundled default local model, served once per session (real llama.cpp, 1 slot)."""
    from pipeline.local.catalog import local_model
    from pipeline.local.server import LocalModelServer, ServeOptions
    from pipeline.local.weights import ensure_weights

    spec = local_model("local/default")
    with LocalModelServer(spec, ensure_weights(spec),
                          ServeOptions(slots=1, threads=2, ctx_per_slot=4096)) as server:
        yield server


STACK_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
"""Keys the warm stack is started without: what runs on it is keyless (tests/e2e/test_doors.py)."""


def stack_env(home: Path) -> dict[str, str]:
    """The environment of a command a user runs against the stack of ``home``: no Prefect or
    Ray settings of this session, no provider key, progress lines off."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PREFECT_", "RAY_")) and k not in STACK_KEYS}
    env.update(AGENTSWEEP_HOME=str(home), AGENTSWEEP_PROGRESS="0")
    return env


@pytest.fixture(scope="session")
def stack_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The home of one warm stack (``agentsweep up``, keyless) for every test that runs on one
    (the docs' examples, the doors): started once, on the one worker of its group."""
    home = tmp_path_factory.mktemp("stack") / "home"
    agentsweep = str(Path(sys.executable).parent / "agentsweep")
    up = subprocess.run([agentsweep, "up"], env=stack_env(home), capture_output=True,
                        text=True, timeout=300, check=False)
    assert up.returncode == 0, up.stdout + up.stderr
    try:
        yield home
    finally:
        subprocess.run([agentsweep, "down"], env=stack_env(home), capture_output=True,
                       timeout=120, check=False)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 server on loopback, once per session (tests/helpers/s3_server.py)."""
    from helpers.s3_server import moto_server

    with moto_server() as endpoint:
        yield endpoint


@pytest.fixture
def s3_warehouse(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> S3Location:
    """A warehouse on a fresh bucket of the loopback S3 server, the AWS settings pointing there
    (dummy credentials, no metadata service)."""
    import uuid

    from helpers.s3_server import DUMMY_ENV

    from warehouse.location import S3Location, client

    for key, value in DUMMY_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    bucket = f"wh-{uuid.uuid4().hex[:12]}"
    client().create_bucket(Bucket=bucket)
    return S3Location(bucket, "warehouse")
