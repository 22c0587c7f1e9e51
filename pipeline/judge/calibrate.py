"""Judge calibration: how often a judge's majority verdict agrees with a person's.

A labels file (JSONL) holds one line per trial: the trial (run id, trial id, and the scenario
for the reader), the person's verdict on the explanation by the rubric (``pass`` / ``fail``),
who labelled it and when. ``calibrate_judge`` compares it with each judge's majority verdict
over its repeats (per judge model and rubric): agreement, Cohen's kappa and the confusion
matrix (``pipeline.stored.calibrate.Confusion``: the statistics the check calibration uses too), the
disagreeing trials, and the labelled trials the judge gave no verdict (a judge failure, or no
majority). A label naming a trial the run does not have is refused (``file:line``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.catalog import CatalogError
from pipeline.stored.calibrate import Confusion, LabelLine, read_label_lines
from pipeline.stored.trials import StoredTrial

HumanVerdict = Literal["pass", "fail"]


class JudgeLabel(BaseModel):
    """A person's verdict on one trial's explanation, by the rubric."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str = Field(min_length=1)
    trial_id: str = Field(min_length=1)
    scenario_id: str = Field(min_length=1, description="For the reader; checked against the run.")
    rubric_id: str = Field(min_length=1, description="The rubric the person judged by.")
    verdict: HumanVerdict
    labeller: str = Field(min_length=1, description="Who labelled it (a person, or say what).")
    date: dt.date
    note: str = ""


JudgeKey = tuple[str, str, int, str]
"""(judge model, rubric id, rubric version, rubric sha256)."""


@dataclass(frozen=True)
class Disagreement:
    label: JudgeLabel
    judge_verdict: str | None
    """The judge's majority verdict (None: no majority)."""
    reasons: tuple[str, ...]


@dataclass
class JudgeCalibration:
    key: JudgeKey
    confusion: Confusion = field(default_factory=Confusion)
    """(person, judge) over the labelled trials the judge gave a pass or a fail."""
    disagreements: list[Disagreement] = field(default_factory=list)
    no_verdict: list[Disagreement] = field(default_factory=list)
    """Labelled trials the judge gave no verdict (an error majority, or no majority)."""
    unlabelled: int = 0
    """Trials the judge judged that no label names."""
    unjudged: list[JudgeLabel] = field(default_factory=list)
    """Labelled trials this judge did not judge."""


def load_judge_labels(paths: Iterable[Path]) -> list[LabelLine[JudgeLabel]]:
    return read_label_lines(paths, JudgeLabel)


def check_labels(labels: Sequence[LabelLine[JudgeLabel]], trials: Sequence[StoredTrial]) -> None:
    """CatalogError (file:line) for a label naming a trial the run lacks or another scenario."""
    known = {(str(t.row["run_id"]), str(t.row["trial_id"])): t for t in trials}
    for item in labels:
        label = item.label
        trial = known.get((label.run_id, label.trial_id))
        if trial is None:
            raise CatalogError(str(item.path), item.line, "trial_id",
                               f"run {label.run_id} has no final trial {label.trial_id}")
        if trial.row["scenario_id"] != label.scenario_id:
            raise CatalogError(str(item.path), item.line, "scenario_id",
                               f"trial {label.trial_id} ran {trial.row['scenario_id']}, "
                               f"not {label.scenario_id}")


def majority(verdicts: Sequence[str]) -> str | None:
    """The verdict more than half of the repeats gave (None: none has a majority); the
    ``judge_verdicts`` view applies the same rule."""
    for verdict in ("pass", "fail", "error"):
        if verdicts.count(verdict) * 2 > len(verdicts):
            return verdict
    return None


def calibrate_judge(labels: Sequence[JudgeLabel],
                    judgments: Iterable[Mapping[str, Any]]) -> list[JudgeCalibration]:
    """Per judge model and rubric (of the labels' rubric id), the judge against the labels."""
    grouped: dict[JudgeKey, dict[str, list[Mapping[str, Any]]]] = {}
    for row in judgments:
        key = (str(row["judge_model"]), str(row["rubric_id"]), int(row["rubric_version"]),
               str(row["rubric_sha256"]))
        grouped.setdefault(key, {}).setdefault(str(row["trial_id"]), []).append(row)
    rubrics = {label.rubric_id for label in labels}
    out = []
    for key in sorted(k for k in grouped if k[1] in rubrics):
        by_trial = grouped[key]
        result = JudgeCalibration(key)
        mine = [label for label in labels if label.rubric_id == key[1]]
        for label in mine:
            rows = sorted(by_trial.get(label.trial_id, []), key=lambda r: int(r["repeat"]))
            if not rows:
                result.unjudged.append(label)
                continue
            verdict = majority([str(r["verdict"]) for r in rows])
            item = Disagreement(label, verdict, tuple(str(r["reason"]) for r in rows))
            if verdict not in ("pass", "fail"):
                result.no_verdict.append(item)
            elif not result.confusion.add(label.verdict, verdict):
                result.disagreements.append(item)
        result.unlabelled = len(set(by_trial) - {label.trial_id for label in mine})
        out.append(result)
    return out
