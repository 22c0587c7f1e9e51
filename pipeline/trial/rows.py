"""The ``condition_trials`` row of a condition task's trial (the unstated-conditions method)."""

from __future__ import annotations

from pipeline.catalog.condition_models import ConditionRules
from pipeline.scoring import ConditionOutcome
from warehouse.rows import ConditionTrialRow, TrialKey

REPLY_CHARS = 500


def _excerpt(text: str | None) -> str | None:
    return text[:REPLY_CHARS] if text is not None else None


def condition_row(key: TrialKey, scenario_id: str, rules: ConditionRules,
                  outcome: ConditionOutcome) -> ConditionTrialRow:
    first, repeat = outcome.first, outcome.repeat
    return ConditionTrialRow(
        run_id=key.run_id, trial_id=key.trial_id, attempt_id=key.attempt_id,
        scenario_id=scenario_id, pair_id=rules.pair_id, condition_id=rules.condition_id,
        condition_type=rules.condition_type, tool=rules.tool, enforced=rules.enforced,
        stated=rules.stated, changed_field=rules.changed_field, role=rules.role,
        format=rules.format, outcome=first.outcome, report=first.report,
        reply=_excerpt(first.reply), read_first=first.read_first,
        repeat_played=repeat is not None,
        repeat_outcome=repeat.outcome if repeat is not None else None,
        repeat_report=repeat.report if repeat is not None else None,
        repeat_reply=_excerpt(repeat.reply) if repeat is not None else None,
    )
