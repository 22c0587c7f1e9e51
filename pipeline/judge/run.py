"""Judge a stored run: every judgeable trial, each judgment repeated, one batch of rows.

Evidence comes from the warehouse only (``pipeline.stored.rescore.stored_trials``: the trial row,
its
events and its database snapshots; the expected outcome from the scenario as the catalog has
it), so judging needs no agent call. Judgments run on ``concurrency`` threads (at most that many
judge calls in flight, the trials' per-model limit), each call under the model-call guard
(injected faults of a reference judge, as for trials) and retried like a model call
(``pipeline.judge.client``). Incomplete trials have nothing to judge; trials of a domain with
no rubric, and trials missing evidence the rubric ``requires`` (a scenario without NL
assertions), are skipped (all counted).
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pipeline.catalog import CatalogError, domain_folder
from pipeline.execution.concurrency import CallGate
from pipeline.execution.retry import RetryPolicy
from pipeline.judge.client import JudgeCall, judge_once
from pipeline.judge.evidence import EvidenceField, gather, messages
from pipeline.judge.rubric import Rubric, load_rubric
from pipeline.models.client import LiteLLMClient, model_call_guard
from pipeline.models.config import ModelConfig
from pipeline.stored.judgments import write_judgments
from pipeline.stored.trials import ScenarioIndex, StoredTrial, stored_trials
from pipeline.util.hashing import canonical_json
from warehouse.location import Root
from warehouse.rows import JudgmentRow

DEFAULT_RUBRIC = "rubrics/explanation.md"
"""A domain's rubric when the command names none (relative to the domain folder)."""
DEFAULT_REPEATS = 3


@dataclass(frozen=True)
class JudgeOptions:
    judge: ModelConfig
    """The judge model, resolved (its route known)."""
    rubric: Rubric | None = None
    """None: each trial's domain's ``rubrics/explanation.md``."""
    fields: tuple[EvidenceField, ...] | None = None
    """What the judge sees; None: the rubric's ``evidence``."""
    repeats: int = DEFAULT_REPEATS
    concurrency: int = 1
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    call_params: dict[str, Any] = field(default_factory=dict)
    scenarios: tuple[str, ...] = ()
    """Only these scenario ids (empty: all)."""
    seed: int = 0
    """Seed of the retry jitter."""


@dataclass(frozen=True)
class JudgeOutcome:
    judgment_id: str
    rows: list[JudgmentRow]
    skipped_incomplete: int
    skipped_no_rubric: list[str]
    """Domains whose trials had no rubric."""
    skipped_nothing_to_judge: int = 0
    """Trials missing evidence the rubric requires (e.g. no NL assertions)."""


@dataclass(frozen=True)
class _Task:
    trial: StoredTrial
    rubric: Rubric
    fields: tuple[EvidenceField, ...]
    request: list[dict[str, Any]]
    evidence_sha256: str
    repeat: int


def judge_run(root: Root, run_id: str, options: JudgeOptions,
              say: Callable[[str], None] = lambda _: None) -> JudgeOutcome:
    """Judge the run's final trials and write the judgments (one batch); ValueError for a run
    with nothing to judge, CatalogError for a bad default rubric."""
    trials = [t for t in stored_trials(root, run_id)
              if not options.scenarios or t.row["scenario_id"] in options.scenarios]
    if not trials:
        raise ValueError(f"run {run_id!r} has no trial to judge")
    done = [t for t in trials if t.row["status"] != "incomplete"]
    rubrics = _Rubrics(options.rubric)
    index = ScenarioIndex()
    tasks: list[_Task] = []
    empty = 0
    for trial in done:
        rubric = rubrics.of(str(trial.row["domain"]))
        if rubric is None:
            continue
        fields = options.fields or rubric.evidence
        found = index.find(trial.row)
        scenario = found[0] if found else None
        if any(not value for value in gather(trial, scenario, rubric.requires).values.values()):
            empty += 1
            continue
        evidence = gather(trial, scenario, fields)
        request = messages(rubric.text, evidence)
        tasks += [_Task(trial, rubric, fields, request, evidence.sha256, r)
                  for r in range(options.repeats)]
    if not tasks:
        raise ValueError(f"run {run_id!r}: no complete trial of a domain with a rubric "
                         f"({DEFAULT_RUBRIC})" + (f"; {empty} without the evidence the rubric "
                                                  "requires" if empty else ""))
    say(f"judging {len(tasks) // options.repeats} trial(s) x {options.repeats} repeat(s) "
        f"with {options.judge.name}")
    judgment_id, judged_at = uuid.uuid4().hex, datetime.now(UTC)
    progress = _Progress(len(tasks), say)
    with ThreadPoolExecutor(max_workers=options.concurrency,
                            thread_name_prefix="judge") as pool:
        calls = list(pool.map(lambda pair: progress.done(_judge(options, *pair)),
                              [(t, i) for i, t in enumerate(tasks)]))
    rows = [_row(task, call, options, judgment_id, judged_at)
            for task, call in zip(tasks, calls, strict=True)]
    write_judgments(root, run_id, rows)
    return JudgeOutcome(judgment_id, rows, len(trials) - len(done), sorted(rubrics.missing),
                        empty)


class _Progress:
    """A line every tenth of the judgments (and at the last)."""

    def __init__(self, total: int, say: Callable[[str], None]) -> None:
        self.total, self.say, self.count = total, say, 0
        self.lock = threading.Lock()

    def done(self, call: JudgeCall) -> JudgeCall:
        with self.lock:
            self.count += 1
            if self.count == self.total or self.count % max(1, self.total // 10) == 0:
                self.say(f"judged {self.count}/{self.total}")
        return call


class _Rubrics:
    def __init__(self, given: Rubric | None) -> None:
        self.given = given
        self.by_domain: dict[str, Rubric | None] = {}
        self.missing: set[str] = set()

    def of(self, domain: str) -> Rubric | None:
        if self.given is not None:
            return self.given
        if domain not in self.by_domain:
            try:
                path = domain_folder(domain) / DEFAULT_RUBRIC
            except (CatalogError, ValueError):
                path = None
            self.by_domain[domain] = load_rubric(path) if path and path.is_file() else None
        if self.by_domain[domain] is None:
            self.missing.add(domain)
        return self.by_domain[domain]


def _judge(options: JudgeOptions, task: _Task, number: int) -> JudgeCall:
    model = options.judge.for_repeat(task.repeat)
    client = LiteLLMClient(model, dict(options.call_params))
    faults = {model.name: model.faults} if model.faults is not None else {}
    rng = random.Random(options.seed * 1_000_003 + number)
    with model_call_guard(CallGate(f"judge-{number}", {}, faults, rng=rng)):
        return judge_once(client, task.request, options.retry, rng)


def _row(task: _Task, call: JudgeCall, options: JudgeOptions, judgment_id: str,
         judged_at: datetime) -> JudgmentRow:
    row = task.trial.row
    return JudgmentRow(
        run_id=str(row["run_id"]), trial_id=str(row["trial_id"]),
        attempt_id=str(row["attempt_id"]), judgment_id=judgment_id,
        judged_at=judged_at, judge_model=options.judge.name,
        judge_model_version=call.model_version,
        judge_generation_params=canonical_json(
            options.judge.for_repeat(task.repeat).generation_params()),
        rubric_id=task.rubric.id, rubric_version=task.rubric.version,
        rubric_sha256=task.rubric.sha256, repeat=task.repeat,
        evidence_fields=list(task.fields), evidence_sha256=task.evidence_sha256,
        verdict=call.verdict, reason=call.reason, error_kind=call.error_kind,
        raw_reply=call.raw_reply, calls=call.calls, input_tokens=call.input_tokens,
        output_tokens=call.output_tokens, cost_usd=call.cost_usd, latency_ms=call.latency_ms)


def agreement_summary(rows: Sequence[JudgmentRow]) -> tuple[int, int]:
    """(trials whose repeats all gave the same verdict, trials judged)."""
    by_trial: dict[tuple[str, str], set[str]] = {}
    for row in rows:
        by_trial.setdefault((row.trial_id, row.rubric_sha256), set()).add(row.verdict)
    return sum(len(v) == 1 for v in by_trial.values()), len(by_trial)
