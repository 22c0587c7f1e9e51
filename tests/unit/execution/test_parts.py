"""A worker's buffer of finished trials (pipeline.execution.parts): a part is staged when the
batch is full, when the oldest trial has waited the flush interval, or when asked; each part
and each write failure is reported once; nothing is visible before the driver commits."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import MEETING_SUITE

from pipeline.execution.parts import PartBuffer, PartsConfig
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.stages import plan
from pipeline.trial.run import RunContext, TrialResult, run_trial
from warehouse import writer
from warehouse.diskspace import DiskFull
from warehouse.query import run_sql
from warehouse.staged import commit_staged

RUN = "buffer"


def _results(root: Path, count: int) -> list[TrialResult]:
    config = SweepConfig(suites=[MEETING_SUITE], memory_modes=["chat"], repeats=1,
                         run_id=RUN, warehouse=root)
    specs = plan(config).pending[:count]
    return [run_trial(spec, RunContext(RUN, "test")) for spec in specs]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_parts_are_staged_when_full_when_old_or_when_asked(tmp_path: Path) -> None:
    root, clock = tmp_path / "wh", Clock()
    buffer = PartBuffer(PartsConfig(root, RUN, batch_size=3, flush_interval_s=5.0), clock)
    results = _results(root, 6)
    for result in results[:2]:
        buffer.add(result, 1)
        assert buffer.take().parts == ()  # neither full nor old
    buffer.add(results[2], 1)
    full = buffer.take().parts
    assert [len(p.outcomes) for p in full] == [3]
    assert buffer.take().parts == ()  # reported once

    buffer.add(results[3], 2)
    clock.now = 5.0
    (old,) = buffer.take().parts
    assert [(o.trial_id, o.number) for o in old.outcomes] == [(results[3].trial.trial_id, 2)]

    buffer.add(results[4], 1)
    (asked,) = buffer.take(force=True).parts
    assert run_sql(root, "SELECT count(*) FROM trials_all").rows == [(0,)]  # staged only
    for part in (*full, old, asked):
        commit_staged(root, part.batch)
    assert run_sql(root, "SELECT count(*), count(DISTINCT trial_id) FROM trials_all").rows == [
        (5, 5)]
    # each trial's attempts row came with it, numbered as the driver numbered the attempt
    assert run_sql(root, "SELECT count(*) FROM trials t SEMI JOIN attempts a USING (run_id, "
                         "trial_id, attempt_id)").rows == [(5,)]
    assert run_sql(root, "SELECT max(attempt) FROM attempts").rows == [(2,)]


def test_a_write_that_fails_is_reported_once_and_stages_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "wh"
    buffer = PartBuffer(PartsConfig(root, RUN, batch_size=1, flush_interval_s=5.0))
    monkeypatch.setattr(writer, "free_bytes", lambda path: 0)  # the disk is full
    buffer.add(_results(root, 1)[0], 1)
    failed = buffer.take()
    assert failed.parts == () and isinstance(failed.error, DiskFull)
    assert buffer.take().error is None
    assert not list(root.rglob("*.parquet"))


def test_a_worker_writes_to_a_bucket_only_where_its_environment_names_credentials(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.execution import parts
    from warehouse.location import S3Location

    for name in (*parts.CREDENTIAL_VARIABLES, "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.aws/credentials
    bucket = PartsConfig(S3Location("bucket"), RUN, 10, 5.0)
    folder = PartsConfig(tmp_path, RUN, 10, 5.0, node_id="driver-node")
    assert not bucket.writes_on("any-node")  # an unsigned write: its rows go back instead
    assert folder.writes_on("driver-node") and not folder.writes_on("other-node")
    credentials = tmp_path / "credentials"
    credentials.write_text("[default]\naws_access_key_id = x\n", "utf-8")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    assert bucket.writes_on("any-node")
    monkeypatch.delenv("AWS_SHARED_CREDENTIALS_FILE")
    monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(credentials))  # IRSA
    assert bucket.writes_on("any-node")
