"""Grid expansion: suites x agents x models x prompts x memory modes x repeats -> TrialSpecs.

A trial's definition and identity live in ``pipeline.trial.spec`` (re-exported here for the rooms
above the trial); this module lays out the grid in a stable order.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pipeline.catalog import Suite, load_domain
from pipeline.environment.sandbox import ToolsMode
from pipeline.models.config import ModelConfig as ModelConfig  # the grid's model, re-exported
from pipeline.trial.spec import BUILTIN as BUILTIN
from pipeline.trial.spec import MEMORY_MODES as MEMORY_MODES
from pipeline.trial.spec import OWN_MEMORY, trial_ids_by_repeat
from pipeline.trial.spec import AgentRef as AgentRef
from pipeline.trial.spec import BuiltinMemoryMode as BuiltinMemoryMode
from pipeline.trial.spec import MemoryMode as MemoryMode
from pipeline.trial.spec import TrialSpec as TrialSpec
from pipeline.trial.spec import trial_id_for as trial_id_for
from pipeline.user.prompt import USER_MAX_TURNS

DEFAULT_MODEL = "reference/golden"


def modes_of(agent: AgentRef, memory_modes: Sequence[MemoryMode]) -> tuple[MemoryMode, ...]:
    """The memory modes an agent runs in: the built-in agent's, or its own memory."""
    return tuple(memory_modes) if agent.builtin else (OWN_MEMORY,)


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
    agents: Sequence[AgentRef] = (BUILTIN,),
    agent_turn_timeout_s: float | None = None,
    *,
    skip: Container[str] = (),
    deadline_s: float | None = None,
) -> Iterator[TrialSpec]:
    """Yield the grid lazily, in a stable order. ``user_model`` plays the user of every
    scenario that has a simulated user (``Scenario.user``); the others keep their turns. The
    built-in agent runs in ``memory_modes``; an external one in its own memory. A trial whose
    id is in ``skip`` (a resume's done trials) costs its id only: no spec is made for it.
    ``deadline_s``: every spec's ``TrialSpec.deadline_s``."""
    for suite in suites:
        for loaded in suite.scenarios:
            domain = load_domain(loaded.scenario.domain)
            for prompt_name in prompts:
                prompt = domain.prompt(prompt_name)
                for agent in agents:
                    for model in models:
                        for mode in modes_of(agent, memory_modes):
                            plays = user_model if loaded.scenario.user is not None else None
                            ids = trial_ids_by_repeat(
                                loaded.scenario, loaded.sha256, model, prompt.sha256, mode,
                                tools, plays, user_max_turns, agent.identity)
                            for repeat in range(repeats):
                                seeded = model.for_repeat(repeat)
                                user = plays.for_repeat(repeat) if plays is not None else None
                                trial_id = (ids(repeat) if ids is not None else trial_id_for(
                                    loaded.scenario, loaded.sha256, seeded, prompt.sha256,
                                    mode, repeat, tools, user, user_max_turns, agent.identity))
                                if trial_id in skip:
                                    continue
                                yield TrialSpec(
                                    trial_id=trial_id,
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
                                    agent=agent,
                                    agent_turn_timeout_s=agent_turn_timeout_s,
                                    deadline_s=deadline_s,
                                )


def grid_size(suites: Sequence[Suite], models: int, prompts: int,
              memory_modes: Sequence[MemoryMode], repeats: int,
              agents: Sequence[AgentRef] = (BUILTIN,)) -> int:
    cells = sum(len(modes_of(agent, memory_modes)) for agent in agents)
    return sum(len(s.scenarios) for s in suites) * models * prompts * cells * repeats


def with_call_params(specs: Iterable[TrialSpec],
                     params: Mapping[str, Mapping[str, Any]]) -> Iterator[TrialSpec]:
    """Per-model call options into ``TrialSpec.extra``, lazily (``extra`` is not identity)."""
    for spec in specs:
        extra = params.get(spec.model.name)
        yield replace(spec, extra={**spec.extra, **extra}) if extra else spec
