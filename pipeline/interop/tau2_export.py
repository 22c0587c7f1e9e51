"""``agentsweep export tau2 --run-id R``: a run's trajectories in tau2-bench's message format,
so tau2's own evaluator can score them and its verdicts be compared with ours, trial by trial.

One simulation per final trial: ``id`` (our trial id), ``task_id`` (the scenario id, tau2's
task id for an imported suite), ``trial`` (the repeat), ``termination_reason`` (tau2's closed
set, from our status and error kind; an incomplete trial is ``infrastructure_error``, which
tau2 leaves out of its metrics as we do), ``agent_cost`` / ``user_cost`` (null when unknown), and
``messages``: user messages (a simulated user's stop message included, as tau2 records it),
assistant messages with their ``tool_calls`` (arguments parsed), and one ``tool`` message per
call (``content`` the tool's answer as text, ``"Error: <message>"`` for a refusal, ``error``).
tau2's strict replay compares each replayed write's answer with the recorded one as parsed
JSON (our sorted keys do not matter), but our refusals that tau2 has no counterpart for answer
differently, so score with ``strict_replay=False``.

tau2's evaluator re-executes every write of the trajectory, whatever its recorded answer, so a
call that never reached our tools must not look like one it can execute: a call the memory
gate blocked keeps its arguments under ``NOT_EXECUTED`` and a call whose arguments are not a
JSON object (our sandbox refused it; tau2's own agent cannot even record it) keeps the raw
text under ``UNPARSED``. Both make tau2's replay raise (an unexpected keyword argument), a
no-op, as the call was in our run. A missing call id is exported as ``""``.

The file is a complete tau2 results file (tau2's ``Results``): ``timestamp`` (the run's start),
``info`` (pipeline.interop.tau2_info), ``tasks`` (pipeline.interop.tau2_tasks) and
``simulations``, so ``tau2 evaluate-trajs FILE`` reads it; ``source`` (ours, ignored by tau2)
names the run, its incomplete trials by error kind and our own limits. tau2's ``info``
describes one agent configuration, so a run of several (model x prompt x memory mode x user
model x params) is exported one at a time.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, TypedDict

from pipeline.catalog import load_domain
from pipeline.interop.tau2_info import Info, configuration, our_limits, started, tau2_info
from pipeline.interop.tau2_tasks import tau2_domain, tau2_tasks
from pipeline.stored.trials import ScenarioIndex
from pipeline.trace import BLOCKED
from warehouse.location import Root
from warehouse.query import run_named

ERROR_PREFIX = "Error: "
INFRASTRUCTURE_ERROR = "infrastructure_error"
"""tau2's ``TerminationReason`` of a simulation that failed for infrastructure reasons."""
NOT_EXECUTED = "agentsweep_blocked_arguments"
UNPARSED = "agentsweep_unparsed_arguments"


class Tau2Results(TypedDict):
    """tau2's ``Results`` as we write it (``source`` is ours; tau2's loader ignores it)."""

    timestamp: str
    info: Info
    tasks: list[dict[str, Any]]
    simulations: list[dict[str, Any]]
    source: dict[str, Any]


def termination_reason(trial: Mapping[str, Any]) -> str:
    """tau2's reason for how the trial ended. Every incomplete trial (a provider, our harness
    or the user simulator failed, whatever its error kind) is ``infrastructure_error``, the one
    reason tau2 leaves out of its metrics as we leave incomplete trials out of ours; tau2's
    ``timeout`` and ``user_error`` would score it as the agent's failure."""
    status, kind = trial["status"], trial["error_kind"]
    if status == "complete":
        return "user_stop"
    if status == "limit":
        return "context_window_exceeded" if kind == "context_limit" else "max_steps"
    if status == "agent_error":
        return "agent_error"
    return INFRASTRUCTURE_ERROR


def incomplete_kinds(trials: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many of the trials are incomplete, by error kind (most first, then by name)."""
    kinds = Counter(str(t["error_kind"]) for t in trials if t["status"] == "incomplete")
    return dict(sorted(kinds.items(), key=lambda kind: (-kind[1], kind[0])))


def incomplete_warning(run_id: str, exported: Tau2Results) -> str | None:
    """What a reader of the file must know when some trials are incomplete; None when none."""
    kinds: dict[str, int] = exported["source"]["incomplete_trials"]
    if not kinds:
        return None
    count = sum(kinds.values())
    by_kind = ", ".join(f"{kind} {n}" for kind, n in kinds.items())
    return (f"warning: {count} of {len(exported['simulations'])} trials incomplete ({by_kind}): "
            f"exported as tau2's {INFRASTRUCTURE_ERROR}, which tau2 leaves out of its metrics; "
            f"`agentsweep run --run-id {run_id} --resume` runs them again")


def _content(result: str | None, error: str | None) -> str:
    if error is not None:
        return f"{ERROR_PREFIX}{error}"
    try:
        value = json.loads(result or "null")
    except json.JSONDecodeError:
        return result or ""
    return value if isinstance(value, str) else json.dumps(value)


def _arguments(text: str | None, blocked: bool) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {UNPARSED: text}
    if not isinstance(value, dict):
        return {UNPARSED: text}
    return {NOT_EXECUTED: value} if blocked else value


def _blocked(event: Mapping[str, Any]) -> bool:
    """The memory gate refused the call (rows of schema v1/v2 say so in their error text)."""
    blocked = event.get("blocked")
    if blocked is None:
        return str(event.get("tool_error") or "").startswith(BLOCKED)
    return bool(blocked)


def messages(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    last: dict[str, Any] | None = None
    for event in events:
        kind = event["kind"]
        if kind == "user_message":
            out.append({"role": "user", "content": event["content"], "turn_idx": len(out)})
            last = None
        elif kind == "assistant_message":
            last = {"role": "assistant", "content": event["content"], "tool_calls": None,
                    "turn_idx": len(out)}
            out.append(last)
        elif kind == "tool_call" and last is not None:
            last["tool_calls"] = [*(last["tool_calls"] or []), {
                "id": event["tool_call_id"] or "", "name": event["tool_name"],
                "arguments": _arguments(event["arguments"], _blocked(event)),
                "requestor": "assistant"}]
        elif kind == "nudge" and last is not None and not last["content"]:
            out.remove(last)  # the empty reply the harness asked again: not a message of
            last = None       # the dialog (tau2 holds that a reply has text or a tool call)
        elif kind == "tool_result":
            out.append({"role": "tool", "id": event["tool_call_id"] or "", "requestor": "assistant",
                        "content": _content(event["result"], event["tool_error"]),
                        "error": event["tool_error"] is not None, "turn_idx": len(out)})
    return out


def _dicts(root: Root, name: str, run_id: str) -> list[dict[str, Any]]:
    result = run_named(root, name, {"run_id": run_id, "trial_id": None})
    return [dict(zip(result.columns, row, strict=True)) for row in result.rows]


def _run(root: Root, run_id: str) -> dict[str, Any] | None:
    result = run_named(root, "tau2_run", {"run_id": run_id})
    return dict(zip(result.columns, result.rows[0], strict=True)) if result.rows else None


class Selection(NamedTuple):
    """Which of a run's agent configurations to export (None: any)."""

    model: str | None = None
    prompt_id: str | None = None
    memory_mode: str | None = None

    def keeps(self, row: Mapping[str, Any]) -> bool:
        return all(wanted is None or row[name] == wanted for name, wanted in self._asdict().items())

    def __str__(self) -> str:
        return ", ".join(f"{name} {wanted!r}" for name, wanted in self._asdict().items()
                         if wanted is not None)


def _one_configuration(run_id: str, trials: list[dict[str, Any]]) -> None:
    found = sorted({configuration(t) for t in trials})
    if len(found) > 1:
        listed = "; ".join(" ".join(c[:3]) + (f" user {c[3]}" if c[3] != "None" else "") +
                           f" {c[4]}" for c in found)
        raise ValueError(f"run {run_id!r} holds {len(found)} agent configurations ({listed}); "
                         "a tau2 results file holds one: choose with --model, --prompt, "
                         "--memory-mode")


def _policy(row: Mapping[str, Any]) -> str:
    """The system prompt the trial ran with, read from its domain (ValueError: changed)."""
    prompt = load_domain(str(row["domain"])).prompt(str(row["prompt_id"]).rsplit("/", 1)[-1])
    if prompt.sha256 != row["prompt_sha256"]:
        raise ValueError(f"prompt {row['prompt_id']}: changed since the run (sha256 "
                         f"{str(row['prompt_sha256'])[:12]} then, {prompt.sha256[:12]} now)")
    return prompt.text


def simulation(trial: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "id": trial["trial_id"], "task_id": trial["scenario_id"], "trial": trial["repeat"],
        "start_time": trial["started_at"].isoformat(),
        "end_time": trial["finished_at"].isoformat(), "duration": trial["latency_ms"] / 1000,
        "termination_reason": termination_reason(trial), "agent_cost": trial["cost_usd"],
        "user_cost": trial.get("user_cost_usd"), "messages": messages(events)}


ALL = Selection()


def export_run(root: Root, run_id: str, select: Selection = ALL,
               index: ScenarioIndex | None = None) -> Tau2Results:
    """The run's final trials of one agent configuration as a tau2 results file; ``index``:
    where their scenarios are (default: every suite of the catalog roots). ValueError: no
    such run or trials, several configurations, a scenario or prompt missing or changed."""
    trials = [t for t in _dicts(root, "run_trials", run_id) if select.keeps(t)]
    if not trials:
        raise ValueError(f"run {run_id!r} has no trials" + (
            "" if select == ALL else f" with {select}"))
    _one_configuration(run_id, trials)
    tasks = tau2_tasks(trials, index or ScenarioIndex())
    by_trial: dict[str, list[dict[str, Any]]] = {}
    for event in _dicts(root, "run_events", run_id):
        by_trial.setdefault(str(event["trial_id"]), []).append(event)
    run = _run(root, run_id)
    return {
        "timestamp": started(trials, run),
        "info": tau2_info(trials, run, _policy(trials[0]), tau2_domain(tasks)),
        "tasks": tasks,
        "simulations": [simulation(t, by_trial.get(str(t["trial_id"]), [])) for t in trials],
        "source": {"run_id": run_id, "exported_by": "agentsweep export tau2",
                   "incomplete_trials": incomplete_kinds(trials), **our_limits(run)},
    }
