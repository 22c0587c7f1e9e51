"""What a tau2 results file records about the run (tau2's ``Info``), from our provenance.

tau2's ``Info`` describes one agent configuration: the agent and the user (implementation,
model, generation params), the environment (domain name, policy), the number of trials, the
seed and the code's commit. Each field is mapped from what the run recorded, never guessed:

- ``git_commit``: our ``code_version`` (agentsweep's version and commit: the code that ran);
- ``num_trials``: the run's ``repeats`` (``runs``), else the repeats its trials show;
- ``agent_info``: ``agentsweep/<memory mode>``, the model, its generation params without the
  seed; ``user_info``: ``agentsweep/user_simulator`` with the simulator's model and params
  (from the recorded grid options; null when not recorded), or ``agentsweep/fixed_turns``
  with no model when the scenario's fixed turns played the user;
- ``environment_info``: tau2's domain name (from the tasks) and the policy, our system prompt
  as the run used it (its sha256 must be the recorded one);
- ``seed``: the seed of repeat 0 when every trial agrees on it, else null.

``max_steps`` and ``max_errors`` have no counterpart (we limit model steps per turn and user
turns, not tau2's steps; we stop on no count of tool errors) yet tau2 requires integers:
they are ``NO_LIMIT`` (-1), and the export's ``source.tau2_info_without_counterpart`` names
them. Our own limits go to ``source`` under their own names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict

from pydantic import ValidationError

from pipeline.models.config import ModelConfig

NO_LIMIT = -1
WITHOUT_COUNTERPART = ("max_steps", "max_errors")
CONFIGURATION = ("model", "prompt_id", "memory_mode", "user_model")
"""The trial columns that make one agent configuration (with the generation params)."""


class AgentInfo(TypedDict):
    implementation: str
    llm: str
    llm_args: dict[str, Any]


class UserInfo(TypedDict):
    implementation: str
    llm: str | None
    llm_args: dict[str, Any] | None


class EnvironmentInfo(TypedDict):
    domain_name: str
    policy: str


class Info(TypedDict):
    git_commit: str
    num_trials: int
    max_steps: int
    max_errors: int
    user_info: UserInfo
    agent_info: AgentInfo
    environment_info: EnvironmentInfo
    seed: int | None


def _params(row: Mapping[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = json.loads(str(row["generation_params"]))
    params.pop("seed", None)  # per repeat: Info.seed holds repeat 0's
    return params


def configuration(row: Mapping[str, Any]) -> tuple[str, ...]:
    """The trial's agent configuration, for one results file per configuration."""
    values = [str(row.get(name)) for name in CONFIGURATION]
    return (*values, json.dumps(_params(row), sort_keys=True))


def _seed(rows: Sequence[Mapping[str, Any]]) -> int | None:
    seeds = {None if r["seed"] is None else int(r["seed"]) - int(r["repeat"]) for r in rows}
    only = seeds.pop() if len(seeds) == 1 else None
    return only


def _user_args(config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    user = (config or {}).get("user_model")
    if user is None:
        return None
    try:
        return ModelConfig.model_validate(user).generation_params()
    except ValidationError:  # a config recorded by an older agentsweep: not known, null
        return None


def _user(row: Mapping[str, Any], config: Mapping[str, Any] | None) -> UserInfo:
    if row["user_model"] is None:
        return {"implementation": "agentsweep/fixed_turns", "llm": None, "llm_args": None}
    return {"implementation": "agentsweep/user_simulator", "llm": str(row["user_model"]),
            "llm_args": _user_args(config)}


def tau2_info(rows: Sequence[Mapping[str, Any]], run: Mapping[str, Any] | None,
              policy: str, domain: str) -> Info:
    """``rows``: the trials of one configuration; ``run``: the run's recorded ``repeats`` and
    ``config_json`` (None when the run row is missing)."""
    first = min(rows, key=lambda r: int(r["repeat"]))
    config = json.loads(run["config_json"]) if run and run.get("config_json") else None
    repeats = run.get("repeats") if run else None
    return {
        "git_commit": "; ".join(sorted({str(r["code_version"]) for r in rows})),
        "num_trials": int(repeats) if repeats is not None else
        max(int(r["repeat"]) for r in rows) + 1,
        "max_steps": NO_LIMIT,
        "max_errors": NO_LIMIT,
        "user_info": _user(first, config),
        "agent_info": {"implementation": f"agentsweep/{first['memory_mode']}",
                       "llm": str(first["model"]), "llm_args": _params(first)},
        "environment_info": {"domain_name": domain, "policy": policy},
        "seed": _seed(rows),
    }


def our_limits(run: Mapping[str, Any] | None) -> dict[str, Any]:
    """The run's own limits, recorded beside tau2's info (null when not recorded)."""
    config = json.loads(run["config_json"]) if run and run.get("config_json") else {}
    return {"step_limit": config.get("step_limit"), "user_max_turns": config.get(
        "user_max_turns"), "tau2_info_without_counterpart": list(WITHOUT_COUNTERPART)}


def started(rows: Sequence[Mapping[str, Any]], run: Mapping[str, Any] | None) -> str:
    """When the run started (its first invocation; else its first trial), ISO 8601."""
    moment: datetime = run["started_at"] if run and run.get("started_at") else min(
        r["started_at"] for r in rows)
    return moment.isoformat()
