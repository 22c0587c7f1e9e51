"""Grid expansion: suites x models x prompts x memory modes x repeats -> TrialSpecs.

``trial_id`` is a stable hash of what defines a trial (ARCHITECTURE.md, "Trial identity"): the
scenario (id, version, content hash), the model and its generation params, the prompt's content
hash, the memory mode and the repeat index (and the tools mode when it is ``mock``: a run with
recorded tool answers is not the same trial as one with the domain's tools). The run id is not
part of it. Of the model
(``pipeline.models.config.ModelConfig``) only the name and ``generation_params()`` (temperature,
params, seed) count, hashed exactly as before that type existed: a configuration that leaves
them at their defaults keeps the trial ids of older runs (``tests/unit/sweep/test_grid.py`` pins
some).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pipeline.catalog import Prompt, Scenario, Suite, load_domain
from pipeline.environment.sandbox import ToolsMode
from pipeline.models.config import ModelConfig as ModelConfig  # the grid's model, re-exported
from pipeline.user.prompt import PROMPT_SHA256 as USER_PROMPT_SHA256
from pipeline.user.prompt import USER_MAX_TURNS
from pipeline.util.hashing import canonical_json, sha256_json

MemoryMode = Literal["chat", "summary", "structured"]
MEMORY_MODES: tuple[MemoryMode, ...] = ("chat", "summary", "structured")
DEFAULT_MODEL = "reference/golden"


@dataclass(frozen=True)
class TrialSpec:
    trial_id: str
    suite_id: str
    suite_sha256: str
    scenario: Scenario
    scenario_sha256: str
    model: ModelConfig
    prompt: Prompt
    tools_sha256: str
    memory_mode: MemoryMode
    repeat: int
    step_limit: int = 8
    tools: ToolsMode = "sandbox"
    """``mock``: every tool answers from the scenario's recorded results
    (pipeline.environment.sandbox)."""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    domain_path: Path | None = field(default=None, compare=False)
    """The domain folder the plan found (workers load the domain from there)."""
    deadline_s: float | None = field(default=None, compare=False)
    """Wall time the trial may take; past it, no further model call is made (timeout)."""
    user_model: ModelConfig | None = None
    """The user simulator's model, for a scenario with a simulated user (pipeline.user.simulator);
    None: the scenario's fixed turns are played."""
    user_max_turns: int = USER_MAX_TURNS
    """Turns the simulated user may speak before the dialog ends as ``turn_limit``."""


def trial_id_for(
    scenario: Scenario,
    scenario_sha256: str,
    model: ModelConfig,
    prompt_sha256: str,
    memory_mode: str,
    repeat: int,
    tools: ToolsMode = "sandbox",
    user_model: ModelConfig | None = None,
    user_max_turns: int = USER_MAX_TURNS,
) -> str:
    identity: dict[str, object] = {
        "scenario_id": scenario.id,
        "scenario_version": scenario.version,
        "scenario_sha256": scenario_sha256,
        "model": model.name,
        "generation_params": canonical_json(model.generation_params()),
        "prompt_sha256": prompt_sha256,
        "memory_mode": memory_mode,
        "repeat": repeat,
    }
    if tools != "sandbox":  # the default keeps the trial ids of older runs
        identity["tools"] = tools
    if user_model is not None:  # a simulated user: its model, params and prompt
        identity["user_model"] = user_model.name
        identity["user_generation_params"] = canonical_json(user_model.generation_params())
        identity["user_prompt_sha256"] = USER_PROMPT_SHA256
        if user_max_turns != USER_MAX_TURNS:  # the default keeps older simulated trial ids
            identity["user_max_turns"] = user_max_turns
    return sha256_json(identity)[:32]


def expand(
    suites: Sequence[Suite],
    models: Sequence[ModelConfig],
    prompts: Sequence[str],
    memory_modes: Sequence[MemoryMode],
    repeats: int,
    step_limit: int = 8,
    tools: ToolsMode = "sandbox",
    user_model: ModelConfig | None = None,
    user_max_turns: int = USER_MAX_TURNS,
) -> Iterator[TrialSpec]:
    """Yield the grid lazily, in a stable order. ``user_model`` plays the user of every
    scenario that has a simulated user (``Scenario.user``); the others keep their turns."""
    for suite in suites:
        for loaded in suite.scenarios:
            domain = load_domain(loaded.scenario.domain)
            for prompt_name in prompts:
                prompt = domain.prompt(prompt_name)
                for model in models:
                    for mode in memory_modes:
                        for repeat in range(repeats):
                            seeded = model.for_repeat(repeat)
                            user = (user_model.for_repeat(repeat) if user_model is not None
                                    and loaded.scenario.user is not None else None)
                            yield TrialSpec(
                                trial_id=trial_id_for(loaded.scenario, loaded.sha256, seeded,
                                                      prompt.sha256, mode, repeat, tools, user,
                                                      user_max_turns),
                                suite_id=suite.id,
                                suite_sha256=suite.sha256,
                                scenario=loaded.scenario,
                                scenario_sha256=loaded.sha256,
                                model=seeded,
                                prompt=prompt,
                                tools_sha256=domain.tools_sha256,
                                memory_mode=mode,
                                repeat=repeat,
                                step_limit=step_limit,
                                tools=tools,
                                domain_path=domain.path,
                                user_model=user,
                                user_max_turns=user_max_turns,
                            )


def grid_size(suites: Sequence[Suite], models: int, prompts: int, modes: int, repeats: int) -> int:
    return sum(len(s.scenarios) for s in suites) * models * prompts * modes * repeats
