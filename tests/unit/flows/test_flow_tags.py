"""A flow run's tags name what it ran: the default run's suites by their ids, never a
placeholder."""

from __future__ import annotations

from pathlib import Path

from conftest import MEETING_SUITE

from flows.sweep import tags_of
from pipeline.sweep.config import SweepConfig


def test_the_default_run_is_tagged_with_the_suites_it_runs(tmp_path: Path) -> None:
    default = tags_of(SweepConfig(warehouse=tmp_path, models=["reference/golden"]), "adhoc")
    assert {"suite:intent_change", "suite:guest_pass"} <= set(default)
    assert "suite:default" not in default
    named = tags_of(SweepConfig(warehouse=tmp_path, suites=[MEETING_SUITE],
                                models=["reference/golden"]), "nightly")
    assert [t for t in named if t.startswith("suite:")] == ["suite:intent_change"]
    assert {"agentsweep", "nightly", "model:reference/golden"} <= set(named)
