"""Check calibration: how often a check's verdict agrees with a person who read the trace.

Labels are data (``catalogs/<domain>/labels/*.jsonl``), one line per (trial, check): the
verdict a person gives the check after reading the whole trial (``pass``: the check should
pass; ``fail``: it should fail) and a note. ``calibrate`` compares them with the verdicts the
run recorded and with today's checks (the stored traces rescored offline): agreement, false
alarms (the check failed a trial where the person says it should pass) and misses (the check
passed where the person says it should fail), per check kind, and every disagreement listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pipeline.catalog import CatalogError
from pipeline.catalog.errors import format_pydantic_error
from pipeline.scoring import KIND_OF_ID_PREFIX
from pipeline.scoring.check_ids import readable_check_id
from pipeline.stored.rescore import rescore
from pipeline.stored.trials import ScenarioIndex, StoredTrial
from pipeline.util.untrusted import jsonl_lines

Verdict = Literal["pass", "fail", "n/a"]
"""``n/a``: the check should not be there at all (its turn was never reached, say): a failure
of it is a false alarm, its absence or a pass agrees."""
TRIAL_LABEL = "trial"
"""The check id of a label on the whole trial: compared with the trial's ``passed``."""
VerdictSource = Literal["recorded", "today"]


class CheckLabel(BaseModel):
    """A person's verdict on one check of one trial."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str = Field(min_length=1)
    trial_id: str = Field(min_length=1)
    scenario_id: str = Field(min_length=1, description="For the reader; checked against the run.")
    memory_mode: Literal["chat", "summary", "structured"]
    repeat: int = Field(ge=0)
    check_id: str = Field(min_length=1, description=f"A check id, or {TRIAL_LABEL!r}: the "
                          "person's verdict on the whole trial (passed or not). An older id's "
                          "JSON escapes are read as today's readable text.")
    verdict: Verdict
    note: str = ""

    @field_validator("check_id")
    @classmethod
    def _readable(cls, value: str) -> str:
        return readable_check_id(value)


L = TypeVar("L", bound=BaseModel)


@dataclass(frozen=True)
class LabelLine(Generic[L]):
    """A label and where it was read (for errors that name the file and line)."""

    path: Path
    line: int
    label: L


def read_label_lines(paths: Iterable[Path], model: type[L]) -> list[LabelLine[L]]:
    """Labels of type ``model`` from JSONL files, each with its file and line; the first bad
    line raises CatalogError (file, line, field)."""
    labels: list[LabelLine[L]] = []
    for path in paths:
        try:
            lines = jsonl_lines(path.read_text("utf-8"))
        except OSError as exc:
            raise CatalogError(str(path), None, "-", f"cannot read: {exc.strerror}") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                labels.append(LabelLine(path, number, model.model_validate_json(line)))
            except ValidationError as exc:
                where, message = format_pydantic_error(exc)
                raise CatalogError(str(path), number, where, message) from None
    return labels


def load_labels(paths: Iterable[Path]) -> list[CheckLabel]:
    """Check labels from JSONL files; the first bad line raises CatalogError (file, line,
    field)."""
    return [item.label for item in read_label_lines(paths, CheckLabel)]


@dataclass
class Confusion:
    """Two raters' verdicts on the same items: the confusion matrix, the raw agreement and
    Cohen's kappa (agreement corrected for the agreement their verdict rates give by chance:
    kappa = (p_o - p_e) / (1 - p_e), p_e = sum over verdicts of the product of both raters'
    shares). Kappa is None when it is undefined (p_e = 1: both gave one and the same verdict
    to every item)."""

    categories: tuple[str, ...] = ("pass", "fail")
    counts: dict[tuple[str, str], int] = field(default_factory=dict)
    """(first rater's verdict, second rater's verdict) -> items."""

    def add(self, first: str, second: str) -> bool:
        """Count one item; True if the raters agree."""
        self.counts[(first, second)] = self.counts.get((first, second), 0) + 1
        return first == second

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def count(self, first: str, second: str) -> int:
        return self.counts.get((first, second), 0)

    @property
    def agreement(self) -> float | None:
        total = self.total
        return sum(self.count(c, c) for c in self.categories) / total if total else None

    @property
    def kappa(self) -> float | None:
        total, observed = self.total, self.agreement
        if not total or observed is None:
            return None
        chance = sum(sum(self.count(c, o) for o in self.categories) / total
                     * sum(self.count(o, c) for o in self.categories) / total
                     for c in self.categories)
        return None if chance >= 1 else (observed - chance) / (1 - chance)


@dataclass
class Tally:
    labelled: int = 0
    agree: int = 0
    false_alarms: int = 0
    misses: int = 0

    def add(self, check_passed: bool | None, verdict: Verdict) -> bool:
        """Count one label against a verdict (None: the check is absent); True if they agree."""
        self.labelled += 1
        if verdict == "n/a":
            agrees = check_passed is not False
        else:
            agrees = check_passed == (verdict == "pass")
        if agrees:
            self.agree += 1
        elif check_passed:
            self.misses += 1
        else:
            self.false_alarms += 1
        return agrees

    @property
    def agreement(self) -> float | None:
        return self.agree / self.labelled if self.labelled else None


@dataclass(frozen=True)
class Disagreement:
    source: VerdictSource
    label: CheckLabel
    check_passed: bool
    detail: str
    origin: str = ""
    """The label set it came from (``<domain>/<name>``) when several were read together."""


@dataclass
class Calibration:
    by_kind: dict[VerdictSource, dict[str, Tally]] = field(default_factory=dict)
    disagreements: list[Disagreement] = field(default_factory=list)
    unmatched: dict[VerdictSource, list[CheckLabel]] = field(default_factory=dict)
    """Labels whose check the verdicts do not have (a check renamed or gone)."""
    trials: int = 0

    def total(self, source: VerdictSource) -> Tally:
        """Over every check kind (the whole-trial labels are their own kind, left out)."""
        out = Tally()
        for kind, tally in self.by_kind.get(source, {}).items():
            if kind == TRIAL_LABEL:
                continue
            out.labelled += tally.labelled
            out.agree += tally.agree
            out.false_alarms += tally.false_alarms
            out.misses += tally.misses
        return out


Verdicts = Mapping[str, tuple[str, bool, str]]
"""check_id -> (check kind, passed, detail) for one trial."""


def calibrate(labels: Sequence[CheckLabel], trials: Sequence[StoredTrial],
              index: ScenarioIndex) -> Calibration:
    """Compare ``labels`` with the verdicts the run recorded and with today's checks over
    the stored ``trials``."""
    by_id = {str(t.row["trial_id"]): t for t in trials}
    recorded: dict[str, Verdicts] = {
        trial_id: {TRIAL_LABEL: _trial_verdict(trial.row.get("passed"),
                                               trial.row.get("first_violation_check")),
                   **{str(c["check_id"]): (str(c["check_kind"]), bool(c["passed"]),
                                           str(c["detail"])) for c in trial.checks}}
        for trial_id, trial in by_id.items()}
    today: dict[str, Verdicts] = {}
    for trial_id, trial in by_id.items():
        done = rescore(trial, index)
        if done is not None:
            today[trial_id] = {
                TRIAL_LABEL: _trial_verdict(done.passed, done.scores.first_violation_check),
                **{c.check_id: (c.check_kind, c.passed, c.detail) for c in done.checks}}
    result = Calibration(trials=len({label.trial_id for label in labels}))
    for source, verdicts in (("recorded", recorded), ("today", today)):
        _compare(result, source, labels, verdicts, by_id)  # type: ignore[arg-type]
    return result


def _kind_of(check_id: str) -> str:
    """The check kind an absent check would have had, from its id's prefix."""
    prefix = check_id.split(":", 1)[0].split("@", 1)[0]
    return KIND_OF_ID_PREFIX.get(prefix, prefix)


def _trial_verdict(passed: object, first: object) -> tuple[str, bool, str]:
    return (TRIAL_LABEL, bool(passed), f"first violation {first}" if first else "passed")


def _compare(result: Calibration, source: VerdictSource, labels: Sequence[CheckLabel],
             verdicts: Mapping[str, Verdicts], trials: Mapping[str, StoredTrial]) -> None:
    tallies = result.by_kind.setdefault(source, {})
    for label in labels:
        trial = trials.get(label.trial_id)
        if trial is None:
            raise ValueError(f"label for trial {label.trial_id} ({label.scenario_id}): the run "
                             f"{label.run_id} has no such final trial")
        if trial.row["scenario_id"] != label.scenario_id:
            raise ValueError(f"label for trial {label.trial_id} names scenario "
                             f"{label.scenario_id}, the trial ran {trial.row['scenario_id']}")
        found = verdicts.get(label.trial_id, {}).get(label.check_id)
        if found is None and label.verdict != "n/a":
            result.unmatched.setdefault(source, []).append(label)
            continue
        kind, passed, detail = found or (_kind_of(label.check_id), None, "absent")
        if not tallies.setdefault(kind, Tally()).add(passed, label.verdict):
            result.disagreements.append(Disagreement(source, label, bool(passed), detail))


@dataclass(frozen=True)
class LabelSet:
    """A committed label set: ``<domain>/labels/<name>.jsonl`` and the traces it read,
    ``<run>.traces.jsonl`` beside it, ``<run>`` being ``<name>`` up to its first dot (a later
    reading of the same traces: ``local-1.grounding.jsonl`` reads ``local-1.traces.jsonl``). A
    set with ``<name>.judgments.jsonl`` beside it labels the judge, not the checks
    (``pipeline.judge.calibrate``)."""

    labels: Path
    traces: Path

    @property
    def name(self) -> str:
        return f"{self.labels.parent.parent.name}/{self.labels.name.removesuffix('.jsonl')}"


_NOT_LABELS = (".traces.jsonl", ".judgments.jsonl")


def committed_label_sets(roots: Sequence[Path]) -> list[LabelSet]:
    """Every check label set kept in the catalogs under ``roots``, by domain and name."""
    found = []
    for root in roots:
        for labels in sorted(root.glob("*/labels/*.jsonl")):
            if labels.name.endswith(_NOT_LABELS):
                continue
            name = labels.name.removesuffix(".jsonl")
            traces = labels.with_name(f"{name.split('.')[0]}.traces.jsonl")
            if traces.is_file() and not labels.with_name(f"{name}.judgments.jsonl").exists():
                found.append(LabelSet(labels, traces))
    return found


def calibrate_sets(sets: Sequence[LabelSet], index: ScenarioIndex) -> Calibration:
    """Every set calibrated on its own traces, summed into one ``Calibration`` whose
    disagreements name their set."""
    total = Calibration()
    for label_set in sets:
        one = calibrate(load_labels([label_set.labels]), read_traces(label_set.traces), index)
        total.trials += one.trials
        for source, kinds in one.by_kind.items():
            mine = total.by_kind.setdefault(source, {})
            for kind, tally in kinds.items():
                into = mine.setdefault(kind, Tally())
                into.labelled += tally.labelled
                into.agree += tally.agree
                into.false_alarms += tally.false_alarms
                into.misses += tally.misses
        total.disagreements += [replace(d, origin=label_set.name) for d in one.disagreements]
        for source, labels in one.unmatched.items():
            total.unmatched.setdefault(source, []).extend(labels)
    return total


def read_traces(path: Path) -> list[StoredTrial]:
    """Stored trials exported with ``agentsweep checks export`` (JSONL)."""
    return [StoredTrial.from_json(line) for line in jsonl_lines(path.read_text("utf-8"))
            if line.strip()]
