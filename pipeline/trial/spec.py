"""A trial's definition and identity: what one cell of the grid runs, and its ``trial_id``.

``trial_id`` is a stable hash of what defines a trial (ARCHITECTURE.md, "Trial identity"): the
scenario (id, version, content hash), the agent when it is not the built-in one, the model and
its generation params, the prompt's content hash, the memory mode and the repeat index (and the
tools mode when it is ``mock``: a run with recorded tool answers is not the same trial as one
with the domain's tools). The run id is not part of it. Of the model
(``pipeline.models.config.ModelConfig``) only the name and ``generation_params()`` (temperature,
params, seed) count. A field at its default adds nothing to the hash, so older runs keep their
trial ids (``tests/unit/sweep/test_grid.py`` pins some).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pipeline.catalog import Prompt, Scenario
from pipeline.environment.sandbox import ToolsMode
from pipeline.models.config import ModelConfig
from pipeline.user.prompt import PROMPT_SHA256 as USER_PROMPT_SHA256
from pipeline.user.prompt import USER_MAX_TURNS
from pipeline.util.hashing import canonical_json, sha256_json, sha256_text

BuiltinMemoryMode = Literal["chat", "summary", "structured"]
"""The built-in agent's memory modes (what a sweep chooses)."""
MemoryMode = BuiltinMemoryMode | Literal["own"]
"""A trial's memory mode: the built-in agent's, or ``own`` (an external agent's own memory)."""
MEMORY_MODES: tuple[BuiltinMemoryMode, ...] = ("chat", "summary", "structured")
"""The built-in agent's memory modes (``own`` is never a choice: it comes with the agent)."""
OWN_MEMORY: MemoryMode = "own"
BUILTIN_AGENT = "builtin"
AGENT_TURN_TIMEOUT_S = 300.0
"""An external agent's time for one user turn (and for being made), unless the sweep says."""
AgentKind = Literal["builtin", "python", "http"]


@dataclass(frozen=True)
class AgentRef:
    """The agent under test: ``builtin`` (our loop), a Python object (``path/file.py:attr`` or
    ``package.module:attr``) or an HTTP service (its URL). ``name`` is what the user wrote and
    what the trial id holds; version and code hash are what the driver found (columns, not
    identity, like a model's provider-reported version)."""

    name: str = BUILTIN_AGENT
    version: str | None = field(default=None, compare=False)
    """The agent's own version string (its ``__version__``, or what its service reports)."""
    code_sha256: str | None = field(default=None, compare=False)
    """The hash of its code (a Python agent's file or module); None for a service."""
    path: str | None = field(default=None, compare=False)
    """A Python agent's file, absolute (found on the driver, read by the workers)."""

    @property
    def kind(self) -> AgentKind:
        if self.name == BUILTIN_AGENT:
            return "builtin"
        if self.name.startswith(("http://", "https://")):
            return "http"
        return "python"

    @property
    def builtin(self) -> bool:
        return self.name == BUILTIN_AGENT

    @property
    def identity(self) -> str:
        """What the trial id holds: a file agent by its file's name (``my_agent.py:make``),
        so moving the folder or running from elsewhere keeps the ids; the rest as named."""
        location, _, attribute = self.name.rpartition(":")
        if self.kind == "python" and location.endswith(".py"):
            return f"{location.replace(chr(92), '/').rsplit('/', 1)[-1]}:{attribute}"
        return self.name


BUILTIN = AgentRef()


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
    agent: AgentRef = BUILTIN
    """The agent under test (pipeline.trial.external plays an external one)."""
    agent_turn_timeout_s: float | None = field(default=None, compare=False)
    """An external agent's time for one user turn; None: ``AGENT_TURN_TIMEOUT_S``."""


def _identity(scenario: Scenario, scenario_sha256: str, model: ModelConfig, prompt_sha256: str,
              memory_mode: str, repeat: int, tools: ToolsMode, user_model: ModelConfig | None,
              user_max_turns: int, agent: str) -> dict[str, object]:
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
    if agent != BUILTIN_AGENT:  # the built-in agent keeps the trial ids of older runs
        identity["agent"] = agent
    return identity


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
    agent: str = BUILTIN_AGENT,
) -> str:
    return sha256_json(_identity(scenario, scenario_sha256, model, prompt_sha256, memory_mode,
                                 repeat, tools, user_model, user_max_turns, agent))[:32]


_REPEAT_MARK = 7_357_911_131_719_232_329
"""A repeat no grid has, standing in for the repeat in a cell's identity text."""


def trial_ids_by_repeat(
    scenario: Scenario,
    scenario_sha256: str,
    model: ModelConfig,
    prompt_sha256: str,
    memory_mode: str,
    tools: ToolsMode = "sandbox",
    user_model: ModelConfig | None = None,
    user_max_turns: int = USER_MAX_TURNS,
    agent: str = BUILTIN_AGENT,
) -> Callable[[int], str] | None:
    """``trial_id_for`` of one grid cell as a function of its repeat, the identity's text made
    once (a resume computes the id of every trial of a night's grid); None when a model has a
    seed (the seed moves with the repeat: ``ModelConfig.for_repeat``)."""
    if model.seed is not None or (user_model is not None and user_model.seed is not None):
        return None
    text = canonical_json(_identity(scenario, scenario_sha256, model, prompt_sha256, memory_mode,
                                    _REPEAT_MARK, tools, user_model, user_max_turns, agent))
    pieces = text.split(str(_REPEAT_MARK))
    if len(pieces) != 2:  # the mark elsewhere in the text: no shortcut
        return None
    before, after = pieces

    def of(repeat: int) -> str:
        return sha256_text(f"{before}{repeat}{after}")[:32]
    return of
