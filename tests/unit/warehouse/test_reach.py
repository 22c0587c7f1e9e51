"""A warehouse bucket that cannot be used is one line and exit 2 before any trial: a missing
bucket (against moto's S3 server on loopback), an endpoint that does not answer, no
credentials."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import MEETING_SUITE
from helpers.commands import cli
from helpers.s3_server import DUMMY_ENV, free_port

RUN = ("run", "--suite", str(MEETING_SUITE), "--scenario", "V1", "--memory-mode", "chat",
       "--repeats", "1", "--run-id", "reach")


def _one_line_exit_2(tmp_path: Path, *words: str) -> None:
    code, out, err = cli(*RUN)
    assert code == 2, (out, err)
    (line,) = err.strip().splitlines()
    assert line.startswith("error: warehouse s3://") and "Traceback" not in out + err
    for word in words:
        assert word in line, line
    assert DUMMY_ENV["AWS_SECRET_ACCESS_KEY"] not in line
    assert not (tmp_path / "home" / "prefect").exists()  # refused before anything started


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for key, value in DUMMY_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AGENTSWEEP_HOME", str(tmp_path / "home"))
    return monkeypatch


def test_a_missing_bucket_is_one_line_and_exit_2(aws: pytest.MonkeyPatch, tmp_path: Path,
                                                 s3_endpoint: str) -> None:
    aws.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    aws.setenv("AGENTSWEEP_WAREHOUSE", "s3://no-such-bucket-here/warehouse")
    _one_line_exit_2(tmp_path, "the bucket 'no-such-bucket-here' does not exist", "create it",
                     "infra/object-storage.md")


def test_an_endpoint_that_does_not_answer_is_one_line_and_exit_2(
        aws: pytest.MonkeyPatch, tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    aws.setenv("AWS_ENDPOINT_URL", endpoint)
    aws.setenv("AGENTSWEEP_WAREHOUSE", "s3://some-bucket/warehouse")
    _one_line_exit_2(tmp_path, f"the S3 endpoint {endpoint} does not answer")


def test_no_credentials_is_one_line_and_exit_2(aws: pytest.MonkeyPatch, tmp_path: Path) -> None:
    aws.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                "AWS_PROFILE"):
        aws.delenv(key, raising=False)
    aws.setenv("AGENTSWEEP_WAREHOUSE", "s3://some-bucket/warehouse")
    assert os.environ["AWS_EC2_METADATA_DISABLED"] == "true"  # no metadata service asked
    _one_line_exit_2(tmp_path, "no S3 credentials found")


@pytest.mark.parametrize("command", [("sql", "select count(*) from trials"), ("runs",)])
def test_a_command_that_reads_a_missing_bucket_says_so_in_one_line(
        aws: pytest.MonkeyPatch, tmp_path: Path, s3_endpoint: str,
        command: tuple[str, ...]) -> None:
    """Not only a run: any command that reads the warehouse (in a process of its own, as a
    user runs it) turns a bucket it cannot use into one line, exit 2."""
    import subprocess
    import sys

    aws.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    aws.setenv("AGENTSWEEP_WAREHOUSE", "s3://no-such-bucket-here/warehouse")
    done = subprocess.run([str(Path(sys.executable).parent / "agentsweep"), *command],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "the bucket 'no-such-bucket-here' does not exist" in line
    assert "Traceback" not in done.stdout + done.stderr
