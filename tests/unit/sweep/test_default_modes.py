"""Memory modes nobody chose follow what the suites' domains and the chosen models support: a
reference model without golden summaries leaves summary mode out with a one-line note; a chosen
``--memory-mode summary`` is still refused with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import MEETING_SUITE, REPO

from pipeline.sweep.config import SweepConfig
from pipeline.sweep.preflight import BadInput, check

RETAIL = REPO / "catalogs" / "tau2_retail" / "suites" / "retail.jsonl"


def _config(tmp_path: Path, suite: Path, **options: object) -> SweepConfig:
    return SweepConfig.model_validate({"suites": [suite], "models": ["reference/golden"],
                                       "warehouse": tmp_path / "warehouse", **options})


def test_a_reference_model_leaves_summary_out_without_golden_summaries(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, RETAIL)
    check(config, append=False)
    assert config.memory_modes == ["chat"]
    notes = [line for line in capsys.readouterr().err.splitlines() if line]
    assert notes == [
        "note: structured memory mode left out: domain tau2_retail has no state.schema.json "
        "(choose modes with --memory-mode)",
        f"note: summary memory mode left out: reference/golden: {RETAIL}:1: turns.0.summary: "
        "reference models in summary mode need the golden summary of every turn (choose modes "
        "with --memory-mode)"]


def test_a_chosen_summary_mode_is_still_refused(tmp_path: Path) -> None:
    config = _config(tmp_path, RETAIL, memory_modes=["summary"])
    with pytest.raises(BadInput, match="turns.0.summary: reference models in summary mode need "
                                       r"the golden summary of every turn \(add it"):
        check(config, append=False)


def test_suites_with_golden_memory_keep_every_mode(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, MEETING_SUITE)
    check(config, append=False)
    assert config.memory_modes == ["chat", "summary", "structured"]
    assert "left out" not in capsys.readouterr().err


def test_the_last_mode_is_never_left_out_but_refused(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A provider that lacks something for every mode: the run is refused, never left with no
    memory mode (an empty grid)."""
    from pipeline.reference.provider import InProcessReference

    monkeypatch.setattr(InProcessReference, "lacking",
                        lambda self, suites, mode: f"{MEETING_SUITE}:1: lacks {mode}")
    config = _config(tmp_path, MEETING_SUITE)
    with pytest.raises(BadInput, match=r"lacks structured \(add it, or leave structured mode"):
        check(config, append=False)
    assert config.memory_modes == ["structured"]
