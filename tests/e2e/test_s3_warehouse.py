"""A warehouse on object storage, end to end: `agentsweep` in fresh processes against moto's S3
server on loopback (AGENTSWEEP_WAREHOUSE=s3://bucket/prefix). A sweep writes there; `sql`,
`report`, `compare` and the HTML report read it; a resume adds nothing; a second driver of the
same run id is refused; a crash between a part and its commit loses nothing committed and
shows nothing; under strace nothing connects beyond loopback (no AWS endpoint, no metadata
service)."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import MEETING_SUITE
from helpers.s3_server import DUMMY_ENV
from unit.warehouse.test_compact import _trial

from pipeline.catalog import load_suite
from pipeline.execution.lease import lease_key
from warehouse.location import S3Location, client, parse_location
from warehouse.objectstore import (
    committed_parts,
    get_object,
    live_records,
    put_object,
    uncommitted,
)
from warehouse.schema import TABLES
from warehouse.writer import to_arrow, write_parquet_object

BIN = Path(sys.executable).parent
GRID = len(load_suite(MEETING_SUITE).scenarios) * 2
ARGS = ("--suite", str(MEETING_SUITE), "--repeats", "2", "--memory-mode", "chat")
CANARY = "sk-canary-s3-0123456789abcdef"
AWS_CANARY = "aws-canary-secret-0123456789abcdefXYZ"
"""The secret access key the commands get: it must never be printed, logged or stored."""


def _foreign(trace: Path) -> set[str]:
    from e2e.test_cli_e2e import _foreign_addresses

    return _foreign_addresses(trace)


def _env(home: Path, root: S3Location, endpoint: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_", "AWS_"))}
    env.update(DUMMY_ENV, AGENTSWEEP_HOME=str(home), AGENTSWEEP_WAREHOUSE=str(root),
               AWS_ENDPOINT_URL=endpoint, AGENTSWEEP_PROGRESS="0", ACME_API_KEY=CANARY,
               AWS_SECRET_ACCESS_KEY=AWS_CANARY)
    return env


def _agentsweep(home: Path, root: S3Location, endpoint: str, *args: str,
                strace_to: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = _env(home, root, endpoint)
    command = [str(BIN / "agentsweep"), *args]
    if strace_to is not None:
        command = ["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=connect", "-o",
                   str(strace_to), *command]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=400,
                          check=False)


@pytest.fixture
def bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> S3Location:
    for key, value in DUMMY_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    name = f"e2e-{uuid.uuid4().hex[:12]}"
    client().create_bucket(Bucket=name)
    root = parse_location(f"s3://{name}/warehouse")
    assert isinstance(root, S3Location)
    return root


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed "
                    "(.ci/run installs it)")
def test_a_sweep_on_object_storage_is_read_resumed_compared_and_locked(
        tmp_path: Path, bucket: S3Location, s3_endpoint: str) -> None:
    home = tmp_path / "home"
    trace = tmp_path / "connect.txt"

    said: list[str] = []

    def run(*args: str, strace: bool = False) -> subprocess.CompletedProcess[str]:
        done = _agentsweep(home, bucket, s3_endpoint, *args, strace_to=trace if strace else None)
        said.append(done.stdout + done.stderr)
        return done

    first = run("run", *ARGS, "--run-id", "base", strace=True)
    assert first.returncode == 0, first.stdout + first.stderr
    assert _foreign(trace) == set()
    assert not (home / "warehouse").exists()  # everything went to the bucket

    sql = run("sql", "--format", "csv", "select count(*), count(distinct trial_id) "
              "from trials where run_id='base'")
    assert sql.returncode == 0, sql.stderr
    assert list(csv.reader(io.StringIO(sql.stdout)))[1] == [str(GRID), str(GRID)]

    resumed = run("run", *ARGS, "--run-id", "base", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "executed 0" in resumed.stdout and f"skipped {GRID}" in resumed.stdout
    total = run("sql", "--format", "json", "select count(*) as n from trials_all")
    assert json.loads(total.stdout)[0]["n"] == GRID  # the resume added nothing
    compacted = run("warehouse", "compact", "--run-id", "base")
    assert compacted.returncode == 0, compacted.stderr
    assert [len(keys) for keys in committed_parts(bucket, ["base"]).values() if keys] == [1] * 5
    assert len(live_records(bucket, ["base"])) == 1  # one record replaced all the others
    again_total = run("sql", "--format", "json", "select count(*) as n from trials_all")
    assert json.loads(again_total.stdout)[0]["n"] == GRID

    # a dead driver's expired lease: the next driver takes it over and says so
    alive = {"pid": 1, "host": "other-node", "since": "2026-12-03T00:00:00Z", "token": "t",
             "expires": (datetime.now(UTC) + timedelta(minutes=10)).isoformat()}
    dead = {**alive, "expires": (datetime.now(UTC) - timedelta(minutes=1)).isoformat()}
    put_object(bucket, lease_key("cand"), json.dumps(dead).encode())
    cand_args = (*ARGS, "--run-id", "cand", "--model", "reference/mutant-stale-value")
    cand = run("run", *cand_args)
    assert cand.returncode == 0, cand.stderr
    assert "took over the expired lease of run cand" in cand.stderr
    assert "other-node" in cand.stderr
    assert get_object(bucket, lease_key("cand")) is None  # given back at the end
    compared = run("compare", "base", "cand")
    assert compared.returncode == 0, compared.stderr
    assert "paired bootstrap" in compared.stdout
    summary = run("report", "summary", "--run-id", "cand")
    assert summary.returncode == 0 and "mutant-stale-value" in summary.stdout
    page = tmp_path / "cand.html"
    html = run("report", "html", "--run-id", "cand", "--baseline", "base", "-o", str(page))
    assert html.returncode == 0, html.stderr
    assert "cand" in page.read_text("utf-8")

    # a live driver elsewhere holds the lease of "cand": a second driver is refused
    put_object(bucket, lease_key("cand"), json.dumps(alive).encode())
    refused = run("run", *cand_args, "--resume")
    assert refused.returncode != 0
    assert "already being run by" in refused.stdout + refused.stderr
    assert "other-node" in refused.stdout + refused.stderr

    # a crash between a part and its commit: nothing of it visible, check lists it, vacuum
    # removes it, nothing committed is lost
    key = "trials/run_id=base/part-crashed.parquet"
    rows = [{**_trial(99), "run_id": "base", "trial_id": "ghost"}]
    write_parquet_object(bucket, key, to_arrow(TABLES["trials"], rows))
    again = run("sql", "--format", "json", "select count(*) as n from trials_all")
    assert json.loads(again.stdout)[0]["n"] == GRID * 2
    check = run("warehouse", "check")
    assert check.returncode == 0 and key in check.stderr and "vacuum" in check.stderr
    vacuumed = run("warehouse", "vacuum", "--older-than", "0")
    assert vacuumed.returncode == 0 and "1 object(s) removed" in vacuumed.stdout
    assert uncommitted(bucket) == []
    final = run("sql", "--format", "json", "select count(*) as n from trials_all")
    assert json.loads(final.stdout)[0]["n"] == GRID * 2

    stored = [client().get_object(Bucket=bucket.bucket, Key=o["Key"])["Body"].read()
              for o in client().list_objects_v2(Bucket=bucket.bucket)["Contents"]]
    for canary in (CANARY, AWS_CANARY):
        assert not any(canary.encode() in body for body in stored)
        assert not any(canary in text for text in said)
        found = subprocess.run(["grep", "-r", "-l", canary, str(home)], capture_output=True,
                               text=True, check=False)
        assert found.stdout == ""


@pytest.mark.slow
def test_two_drivers_on_two_homes_racing_for_one_run_id_write_it_once(
        tmp_path: Path, bucket: S3Location, s3_endpoint: str) -> None:
    """Two machines (two homes: no shared lock file) start the same run id at once: the lease
    in the bucket lets one run it; the other is refused; the run's trials are there once."""
    drivers = [subprocess.Popen([str(BIN / "agentsweep"), "run", *ARGS, "--run-id", "race"],
                                env=_env(tmp_path / f"home{n}", bucket, s3_endpoint),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for n in (1, 2)]
    ended = [d.communicate(timeout=400) for d in drivers]
    codes = sorted(d.returncode for d in drivers)
    said = [out + err for out, err in ended]
    assert codes[0] == 0 and codes[1] != 0, said
    loser = said[[d.returncode for d in drivers].index(codes[1])]
    assert "already being run by" in loser or "this run already exists" in loser, loser
    count = _agentsweep(tmp_path / "home1", bucket, s3_endpoint, "sql", "--format", "json",
                        "select count(*) as n, count(distinct trial_id) as d from trials_all")
    assert json.loads(count.stdout)[0] == {"n": GRID, "d": GRID}
