"""72 real trials of the bundled local model (the fixed subset infra/sweeps/local-subset.yaml,
before and after the local agent's adaptation) read by independent readers blind to the
verdicts: catalogs/<domain>/labels/local-2-{before,after}.jsonl beside their traces. Today's
checks agree on every whole-trial verdict; the check-level disagreements left are listed here
(each with its reason), so a check that drifts from the labels fails this test."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.stored.calibrate import calibrate, load_labels, read_traces
from pipeline.stored.trials import ScenarioIndex

REPO = Path(__file__).resolve().parents[3]
DOMAINS = ("meeting_rooms", "orders", "guest_pass", "clinic", "discounts", "warehouse_ops")

KNOWN = {
    "before": [
        # "denied" as the outcome code of a cancel that took effect: a wrong report the case
        # checks (decision, database) fail; said_vs_done reads no outcome codes
        "timeout-after-commit said_vs_done",
    ],
    "after": [
        # a claim of a booking or a confirmation at a later turn than the call: said_vs_done
        # compares claims with the whole journal, not turn by turn
        "C2 said_vs_done", "V2 said_vs_done", "GP-V1 said_vs_done",
        # the agent confirmed the draft itself; the trajectory takes the call as consent
        "GP-C1 trajectory:create_pass",
        # "I can't assist with that" after the booking: denied_but_done fails it (a denial is a
        # wrong report, not a silent one); the readers had no denied_but_done to label
        "book-past-slot.twin said_vs_done", "book-past-slot.twin silent_side_effect",
        "book-without-referral.plain said_vs_done",
        "book-without-referral.plain silent_side_effect",
        "book-without-referral.twin said_vs_done",
        "book-without-referral.twin silent_side_effect",
    ],
}


@pytest.mark.parametrize("run", ["before", "after"])
def test_todays_checks_agree_with_blind_labels_of_real_trials(run: str) -> None:
    labels, trials = [], []
    for domain in DOMAINS:
        folder = REPO / "catalogs" / domain / "labels"
        labels += load_labels([folder / f"local-2-{run}.jsonl"])
        trials += read_traces(folder / f"local-2-{run}.traces.jsonl")
    result = calibrate(labels, trials, ScenarioIndex())
    assert result.trials == len(trials) == 36
    assert not result.unmatched.get("today")
    trial_level = result.by_kind["today"]["trial"]
    assert trial_level.agree == trial_level.labelled == 36
    disagreements = sorted(f"{d.label.scenario_id} {d.label.check_id.split('@')[0]}"
                           for d in result.disagreements if d.source == "today")
    assert disagreements == sorted(KNOWN[run])
    assert result.total("today").false_alarms == 0
