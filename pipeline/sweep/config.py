"""A sweep's configuration (``SweepConfig``): the grid, the models, the limits; JSON-able so a
Prefect deployment can carry it, and recorded with the run for ``--resume`` to reuse."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
)

from pipeline.environment.sandbox import ToolsMode
from pipeline.execution.retry import RetryPolicy
from pipeline.execution.shards import Shard
from pipeline.models.call_params import called_models
from pipeline.sweep.grid import (
    DEFAULT_MODEL,
    MEMORY_MODES,
    BuiltinMemoryMode,
    ModelConfig,
)
from pipeline.sweep.thresholds import Thresholds
from pipeline.trial.spec import AGENT_TURN_TIMEOUT_S, BUILTIN_AGENT
from pipeline.user.prompt import USER_MAX_TURNS
from pipeline.util.redact import redact
from pipeline.util.secrets import conceal, conceal_params
from warehouse.location import Root, parse_location
from warehouse.writer import RunId, validate_run_id

TrialsAs = Literal["threads", "coroutines"]
"""How a worker runs its trials (``SweepConfig.trials_as``)."""
UnknownCost = Literal["refuse", "allow"]
"""What a spend cap does with a model of unknown cost: refuse the sweep before it starts
(``refuse``, the default), or run it with such calls left out of the count (``allow``)."""


CheckedRunId = Annotated[RunId, AfterValidator(validate_run_id)]
"""A run id as it enters (an option, a spec, a flow's parameter): checked once, by pydantic, so
that a mistake names its option or its spec's line; typed ``RunId`` thereafter."""


def new_run_id() -> RunId:
    return RunId(f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}")



def _location(value: Any) -> Any:
    """A warehouse given as text: ``s3://bucket/prefix`` or a folder (warehouse.location)."""
    return parse_location(value) if isinstance(value, str | Path) else value

class SweepConfig(BaseModel):
    """Everything a sweep needs; JSON-able so a Prefect deployment can carry it."""

    model_config = ConfigDict(extra="forbid")

    catalogs: list[Path] = Field(default_factory=list, description="Catalog roots searched "
                                 "before the bundled one (--catalog DIR).")
    suites: list[Path] = Field(default_factory=list, description="Empty = the default suites.")
    scenarios: list[str] = Field(default_factory=list,
                                 description="Scenario ids to run; empty = every scenario.")
    models: list[ModelConfig] = Field(
        default_factory=lambda: [ModelConfig(DEFAULT_MODEL)], min_length=1, description=
        "The models under test, each with how it is called (a bare name: the defaults).")
    user_model: ModelConfig | None = Field(default=None, description=(
        "The user simulator's model, for scenarios with a simulated user (--user-model); "
        "none: their fixed turns are played."))
    user_max_turns: int = Field(default=USER_MAX_TURNS, ge=1, description=(
        "Turns a simulated user may speak (--user-max-turns); past them the dialog ends as "
        "turn_limit (did not end normally)."))
    trial_timeout_s: float = Field(default=1800.0, gt=0, allow_inf_nan=False, description=
                                   "A trial's deadline: past it, it stops as an infrastructure "
                                   "timeout (incomplete, retried).")
    prompts: list[str] = Field(default_factory=lambda: ["default"])
    memory_modes: list[BuiltinMemoryMode] = Field(default_factory=lambda: list(MEMORY_MODES),
                                           description="The built-in agent's memory modes.")
    agents: list[str] = Field(default_factory=lambda: [BUILTIN_AGENT], min_length=1,
                              description=(
        "The agents under test (--agent): builtin, path/to/file.py:attribute, "
        "package.module:attribute or an http(s):// agent service (docs/agents.md)."))
    agent_turn_timeout_s: float = Field(default=AGENT_TURN_TIMEOUT_S, gt=0, allow_inf_nan=False,
                                        description=(
        "An external agent's time for one user turn (--agent-turn-timeout-s); past it the "
        "trial is an agent error (agent_timeout)."))
    repeats: int = Field(default=3, ge=1)
    step_limit: int = Field(default=8, ge=1)
    run_id: CheckedRunId = Field(default_factory=new_run_id)
    resume: bool = False
    shard: Shard | None = Field(default=None, description=(
        "The slice of the grid this driver runs (--shard I/N: shard I of N drivers sharing the "
        "run id, by trial id); none: the whole grid."))
    ray_address: str | None = None
    max_in_flight: int = Field(default=64, ge=1)
    trials_as: TrialsAs = Field(default="coroutines", description=(
        "coroutines: the built-in agent's trials as coroutines on their worker's event loop, "
        "their waits (model calls over HTTP, limits, pauses) handed to the loop: many more in "
        "flight at less CPU per call (pipeline/runtime/as_coroutine.py); threads: each trial "
        "in a thread of its worker. External agents run in threads either way."))
    in_flight_per_node: int | None = Field(default=None, ge=1, description=(
        "Trials in flight per alive node of the cluster with a CPU, counted when the sweep "
        "starts; given, it replaces max_in_flight, so the limit grows with the cluster."))
    batch_size: int = Field(default=500, ge=1)
    flush_interval_s: float = Field(default=5.0, gt=0, allow_inf_nan=False, description=(
        "Finished trials are written at least this often (seconds), so a failure of the "
        "driver, the Ray head or Prefect loses at most the trials in flight and these."))
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    tools: ToolsMode = Field(default="sandbox", description=(
        "sandbox: the domain's tools on a per-trial copy (writes intercepted); mock: every "
        "tool answers from the scenario's recorded results (--tools mock)."))
    thresholds: Thresholds = Field(default_factory=Thresholds, description=(
        "Release thresholds the gate reads from runs.config_json."))
    max_cost_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False, description=(
        "Spend cap of the sweep (USD): once the recorded cost reaches it no new attempt "
        "starts, the run ends incomplete (exit 3) and --resume with a higher cap goes on."))
    unknown_cost: UnknownCost = Field(default="refuse", description=(
        "With a spend cap: refuse a model of unknown cost before the start (refuse), or run "
        "it with its calls left out of the count (allow)."))
    warehouse: Annotated[Root, BeforeValidator(_location)]

    @field_validator("models", mode="before")
    @classmethod
    def _names_are_models(cls, value: Any) -> Any:
        """A bare model name stands for that model with the defaults."""
        if isinstance(value, list):
            return [{"name": item} if isinstance(item, str) else item for item in value]
        return value

    @field_validator("user_model", mode="before")
    @classmethod
    def _name_is_a_model(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    def builtin_modes(self) -> list[BuiltinMemoryMode]:
        """The memory modes the built-in agent runs in ([] when it is not under test)."""
        return list(self.memory_modes) if BUILTIN_AGENT in self.agents else []

    def model_names(self) -> list[str]:
        return [m.name for m in self.models]

    def called_models(self) -> list[ModelConfig]:
        """Every model the sweep calls: ``models``, then the user simulator's."""
        return called_models(self.models, self.user_model)

    def resolved_models(self) -> list[ModelConfig]:
        """Every model with its route resolved; ValueError for a model its provider does not
        know."""
        return [m.resolved() for m in self.models]


LEGACY_MODEL_KEYS = ("temperature", "seed", "timeout_s", "model_settings")
"""Keys of a recorded config from before ``ModelConfig``: names in ``models``, the CLI's
temperature, seed and timeout for all of them, and a spec's per-model settings apart."""


def upgrade_recorded(recorded: dict[str, Any]) -> dict[str, Any]:
    """A recorded config in today's shape: an older one's models rebuilt as the same
    ``ModelConfig``s (same values, so the same trial ids), its legacy keys dropped."""
    if not any(key in recorded for key in LEGACY_MODEL_KEYS):
        return recorded
    out = {k: v for k, v in recorded.items() if k not in LEGACY_MODEL_KEYS}
    settings = {s["name"]: s for s in recorded.get("model_settings") or []}
    shared = {"temperature": recorded.get("temperature", 0.0), "seed": recorded.get("seed")}
    models = []
    for name in recorded.get("models") or [DEFAULT_MODEL]:
        model = {**(settings.get(name) or {"name": name, **shared})}
        if model.get("timeout_s") is None and recorded.get("timeout_s") is not None:
            model["timeout_s"] = recorded["timeout_s"]
        models.append(model)
    out["models"] = models
    return out


def config_json(config: SweepConfig) -> str:
    """The grid options of a run as JSON (secrets redacted), for ``--resume`` to reuse."""
    return redact(config.model_dump_json(exclude={"warehouse", "resume", "ray_address",
                                                  "shard"}))


def conceal_config(config: SweepConfig) -> SweepConfig:
    """``config`` (a SweepConfig) with every credential-bearing api_base and every secret
    param of its models (and its user simulator's) concealed (``pipeline.util.secrets``)."""
    update: dict[str, Any] = {"models": [_concealed(m) for m in config.models]}
    if config.user_model is not None:
        update["user_model"] = _concealed(config.user_model)
    return config.model_copy(update=update)


def _concealed(model: ModelConfig) -> ModelConfig:
    return model.model_copy(update={"api_base": conceal(model.api_base),
                                    "params": conceal_params(model.name, model.params)})
