"""Preflight: every mistake in a sweep's inputs found before its first trial runs.

``preflight(models, suites, prompts, memory_modes)`` raises ``PreflightError`` (one line,
naming the option or the file and field) for: a model no provider knows (a name its registered
provider refuses, e.g. an unknown reference variant; a LiteLLM provider prefix LiteLLM does not
have, known without its import: ``pipeline.models.litellm_prefixes``), a real provider whose key
is not in the environment, an ``api_base`` nothing listens on, a prompt a domain lacks, a memory
mode a domain cannot run (structured needs ``state.schema.json``), and whatever a model's
provider checks in the suites (``ModelProvider.check_suites``: reference models need a golden
summary or state per turn). LiteLLM is imported only when a real provider with a known prefix
is named (it costs seconds). Memory modes nobody chose leave out what a domain or a model's
provider (``ModelProvider.lacking``) cannot run, with a note.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Sequence
from difflib import get_close_matches
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pydantic import ValidationError
from pydantic_core import ErrorDetails
from rich.console import Console

from pipeline.catalog import CatalogError, Suite, load_domain
from pipeline.catalog.plain import plain_message
from pipeline.models.config import ModelConfig
from pipeline.models.litellm_prefixes import LITELLM_PREFIXES
from pipeline.models.provider_keys import KEYS_OF_PROVIDER
from pipeline.models.providers import provider_for, provider_named, registered_providers
from pipeline.runtime import hygiene
from warehouse.location import Root

if TYPE_CHECKING:
    from pipeline.models.routes import ModelRoute
    from pipeline.sweep.config import SweepConfig


class PreflightError(ValueError):
    """A sweep input that cannot work; ``str()`` names the option or file and field."""


def preflight(models: Sequence[ModelConfig], suites: Sequence[Suite], prompts: Sequence[str],
              memory_modes: Sequence[str], *, reach: bool = True) -> None:
    """Every check, in order; ``models`` as configured (their routes are resolved here if they
    are not yet: a name its provider does not know is refused). ``reach=False`` leaves out what
    only calling the models needs (``check_reach``)."""
    resolved = [_resolved(model) for model in models]
    if reach:
        check_reach(resolved)
    _check_domains(suites, prompts, memory_modes)
    for name in sorted({model.provider for model in resolved}):
        try:
            provider_named(name).check_suites(suites, memory_modes)
        except ValueError as exc:
            raise PreflightError(str(exc)) from None


def check_reach(models: Sequence[ModelConfig]) -> None:
    """What calling ``models`` (resolved) needs: their keys in the environment, a provider
    LiteLLM has, an endpoint that answers."""
    for model in models:
        if model.api_key_env and not os.environ.get(model.api_key_env):
            raise PreflightError(f"--model {model.name}: api_key_env {model.api_key_env} is not "
                                 "set in the environment")
    _check_models(models)


def _resolved(model: ModelConfig) -> ModelConfig:
    try:
        return model.resolved()
    except ValueError as exc:
        raise PreflightError(f"--model {model.name}: {exc}") from None


def _check_domains(suites: Sequence[Suite], prompts: Sequence[str],
                   memory_modes: Sequence[str]) -> None:
    domains = sorted({s.scenario.domain for suite in suites for s in suite.scenarios})
    for name in domains:
        domain = load_domain(name)
        for prompt in prompts:
            try:
                domain.prompt(prompt)
            except CatalogError as exc:
                raise PreflightError(f"--prompt {prompt}: {exc.message}") from None
        if "structured" in memory_modes and domain.state_schema is None:
            raise PreflightError(f"--memory-mode structured: domain {name} has no "
                                 f"state.schema.json ({domain.path}), so its scenarios cannot "
                                 "run in structured mode; leave that mode out")


def _check_models(models: Iterable[ModelConfig]) -> None:
    """Models that LiteLLM reaches over the network: a provider it knows, a key or an endpoint
    (offline providers and node services have neither to check)."""
    for model in models:
        served = model.route is not None and model.route.node_service
        if not provider_for(model.name).offline and not served:
            _check_provider(model, _endpoint(model))


def _endpoint(model: ModelConfig) -> str | None:
    """The model's own endpoint ("" = its own key but no endpoint), None = the provider's."""
    if model.api_base:
        return model.api_base
    return "" if model.api_key_env else None


def _check_provider(model: ModelConfig, api_base: str | None) -> None:
    from pipeline.models.client import litellm_module
    from pipeline.models.litellm_prefixes import unknown_prefix
    from pipeline.models.provider_keys import missing_key

    target = model.route.litellm_model if model.route is not None else model.name
    prefix = unknown_prefix(target)
    if prefix is not None and prefix not in registered_providers():  # a plugin may install it
        raise _no_provider(model)  # refused before LiteLLM's import (seconds)
    key = missing_key(target, dict(os.environ)) if api_base is None else None
    if key is not None:  # refused before LiteLLM's import (seconds)
        raise PreflightError(f"--model {model.name}: set {key} in the environment (the "
                             "provider's key; it is never stored or printed)")
    if _known_without_litellm(target, api_base):
        if api_base:
            _check_reachable(model.name, api_base)
        return
    litellm = litellm_module()
    try:
        litellm.get_llm_provider(target)
    except Exception:  # LiteLLM raises its BadRequestError for an unknown prefix
        raise _no_provider(model) from None
    if api_base is not None:
        if api_base:
            _check_reachable(model.name, api_base)
        return  # an explicit endpoint or key: a missing provider key is not needed
    missing = litellm.validate_environment(model=target).get("missing_keys") or []
    if missing:
        raise PreflightError(f"--model {model.name}: set {', '.join(missing)} in the "
                             "environment (the provider's key; it is never stored or printed)")


def _known_without_litellm(target: str, api_base: str | None) -> bool:
    """Nothing LiteLLM would add to the check (its import costs the driver seconds, on the
    way to the first trial): a provider prefix it has, and either an endpoint of the model's own
    or a well-known provider whose key ``missing_key`` found set."""
    provider, slash, _ = target.partition("/")
    return bool(slash) and provider in LITELLM_PREFIXES and (
        api_base is not None or provider in KEYS_OF_PROVIDER)


def _no_provider(model: ModelConfig) -> PreflightError:
    """The refusal of a model whose provider prefix nobody knows: the model under the known
    prefixes closest to it ("did you mean"), else how a name is written."""
    prefix, slash, rest = model.name.partition("/")
    known = sorted(LITELLM_PREFIXES | set(registered_providers()))
    close = get_close_matches(prefix, known, n=3, cutoff=0.7) if slash else []
    if close:
        names = " or ".join(f"{p}/{rest}" for p in close)
        return PreflightError(f"--model {model.name}: LiteLLM knows no provider for it; did "
                              f"you mean {names}?")
    return PreflightError(f"--model {model.name}: LiteLLM knows no provider for it; write "
                          "<provider>/<model>, e.g. openai/gpt-4o-mini or "
                          "anthropic/claude-3-5-haiku-latest")


def _check_reachable(model: str, api_base: str) -> None:
    parts = urlsplit(api_base)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=3):
            return
    except OSError as exc:
        raise PreflightError(f"{model}: api_base {parts.scheme}://{parts.hostname}:{port} is "
                             f"not reachable ({exc.strerror or exc})") from None


OPTION_OF_FIELD = {"models": "--model", "memory_modes": "--memory-mode", "prompts": "--prompt",
                   "suites": "--suite", "scenarios": "--scenario", "catalogs": "--catalog",
                   "run_id": "--run-id", "max_in_flight": "--max-in-flight",
                   "in_flight_per_node": "--in-flight-per-node", "trials_as": "--trials-as",
                   "timeout_s": "--timeout-s", "tools": "--tools", "user_model": "--user-model",
                   "user_max_turns": "--user-max-turns", "agents": "--agent",
                   "agent_turn_timeout_s": "--agent-turn-timeout-s", "shard": "--shard"}


class BadInput(Exception):
    """An option, spec or catalog mistake: exit 2, nothing ran."""


def option_error(exc: ValidationError) -> str:
    """Pydantic's errors about the run's options as one line naming each option, in the plain
    words of a spec's errors (``catalog.plain``: "did you mean" for an unknown value)."""
    return "; ".join(_option_message(error) for error in exc.errors(include_url=False))


def _option_message(error: ErrorDetails) -> str:
    loc = [str(p) for p in error["loc"]]
    option = OPTION_OF_FIELD.get(loc[0], "--" + loc[0].replace("_", "-")) if loc else "options"
    message = plain_message(None, error)
    value = error.get("input")
    said = isinstance(value, str | int | float) and repr(value) not in message
    return f"{option}{f' {value!r}' if said else ''}: {message}"


def refuse_existing(config: SweepConfig, append: bool) -> None:
    """A new run's id must be free; ``--resume`` and ``--append`` need a run that exists. A
    shard (``--shard``) joins the run its other shards started, on the same grid."""
    from pipeline.execution.runlock import refusal
    from pipeline.sweep.stages import run_exists
    from warehouse.query import RUNS_HINT

    if config.shard is not None and append:
        raise BadInput(f"--shard {config.shard}: a shard runs a slice of the run's own grid; "
                       "--append adds another grid: leave one out")
    exists = run_exists(config.warehouse, config.run_id)
    if not (config.resume or append or config.shard) and exists:
        raise BadInput(f"--run-id {config.run_id}: this run already exists; continue it with "
                       "--resume, add another grid to it with --append, or choose a new "
                       "--run-id")
    refused = refusal(config.run_id, config.warehouse, shard=config.shard)
    if refused is not None:  # a driver runs it now (its first rows may not be written yet)
        raise BadInput(refused)
    if config.shard is not None and exists:
        _refuse_other_grid(config)
    if (config.resume or append) and not exists:
        flag = "--resume" if config.resume else "--append"
        raise BadInput(f"--run-id: no run {config.run_id!r} to {flag} ({RUNS_HINT}); "
                       f"leave out {flag} to start it")


SHARD_GRID_KEYS = ("suites", "scenarios", "prompts", "memory_modes", "agents", "repeats",
                   "tools", "step_limit", "user_max_turns")
"""What a shard must share with the run it joins (and the models' names): its grid."""


def _refuse_other_grid(config: SweepConfig) -> None:
    """A shard joining a run on another grid would slice a grid nobody else runs."""
    import json

    from pipeline.sweep.config import config_json
    from pipeline.sweep.stages import recorded_config

    recorded = recorded_config(config.warehouse, config.run_id)
    if recorded is None:
        return
    mine = json.loads(config_json(config))
    keys = [k for k in SHARD_GRID_KEYS if mine.get(k) != recorded.get(k)]
    names = [[m["name"] for m in grid.get("models") or []] for grid in (mine, recorded)]
    keys += ["models"] if names[0] != names[1] else []
    if keys:
        raise BadInput(f"--shard {config.shard}: run {config.run_id} was started on another "
                       f"grid ({', '.join(keys)} differ); give every shard the same grid "
                       "options or spec")


def check_free_space(warehouse: Root) -> None:
    """Room for Prefect's database and the warehouse before anything is written (a disk that
    fills during Prefect's first start used to leave its database half-migrated)."""
    from warehouse.diskspace import MB, free_bytes, min_free_bytes

    try:
        floor = min_free_bytes()
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    for what, path in (("the warehouse", warehouse), ("Prefect's home", hygiene.prefect_home())):
        if not isinstance(path, Path):  # object storage: no disk of ours to fill
            continue
        free = free_bytes(path)
        if free < floor:
            raise BadInput(f"{path}: only {free / MB:.1f} MB free on the disk of {what}; a run "
                           f"needs {floor / MB:.0f} MB (AGENTSWEEP_MIN_FREE_MB). Free some "
                           "space or point AGENTSWEEP_HOME at a larger disk")


def _check_ray_address(address: str) -> None:
    """A cluster address must answer before a run joins it (Ray would retry for minutes)."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=3):
            return
    except (OSError, ValueError) as exc:
        raise BadInput(f"--ray-address {address}: no Ray cluster answers there "
                       f"({getattr(exc, 'strerror', None) or exc}); start one "
                       "(`agentsweep up`, `ray start --head`) or leave the option out for a "
                       "local Ray") from None


def _check_concealed(config: SweepConfig) -> None:
    """A secret redacted when the run was recorded (``--resume --run-id R`` alone reads the
    recorded config) cannot be sent: name the field, and how to give it again."""
    from pipeline.util.redact import masked
    from pipeline.util.secrets import reveal, revealed_params

    for model in config.called_models():
        fields = [f"params.{k}" for k, v in model.params.items() if masked(v)
                  and k not in revealed_params(model.name)]
        if model.api_base and masked(reveal(model.api_base)):
            fields.append("api_base")
        if fields:
            raise BadInput(f"model {model.name}: {', '.join(fields)} was redacted when the run "
                           "was recorded (secrets never are); give the run's spec again: "
                           f"agentsweep run --spec SPEC --run-id {config.run_id} --resume")


def check(config: SweepConfig, append: bool, *, reach: bool = True) -> list[ModelRoute]:
    """Everything about the run that can be known before it starts; returns the routes.
    ``reach=False`` leaves the models' keys and endpoints to ``check_sweep_reach``."""
    from pipeline.catalog import CatalogError
    from pipeline.runtime.startup import check_settings
    from pipeline.sweep.preflight import preflight
    from pipeline.sweep.stages import load_plan_suites
    from warehouse.location import S3Location
    from warehouse.reach import check_reach
    from warehouse.writer import WarehouseError

    try:
        check_settings()  # the start-up waits of Ray and Prefect
        if isinstance(config.warehouse, S3Location):  # the bucket exists and answers
            check_reach(config.warehouse)
        check_free_space(config.warehouse)
        suites = load_plan_suites(config)  # the inputs first: a mistake in them is named

        try:
            models = config.resolved_models()
        except ValueError as exc:
            if isinstance(exc, ValidationError):
                raise
            raise BadInput(f"--model: {exc}") from None
        _check_agents(config)
        _default_modes(config, suites, models)
        preflight(models, suites, config.prompts, config.builtin_modes(), reach=reach)
        _check_user_model(config, [m.name for m in models], reach=reach)
        _check_concealed(config)
        _check_spend_caps(config)
        refuse_existing(config, append)
        if config.ray_address:
            _check_ray_address(config.ray_address)
    except ValidationError as exc:
        raise BadInput(option_error(exc)) from None
    except (CatalogError, WarehouseError, ValueError) as exc:
        raise BadInput(str(exc)) from None
    return [m.route for m in models if m.route is not None]


def _check_agents(config: SweepConfig) -> None:
    """Every agent found and importable; memory modes only for the built-in agent."""
    from pipeline.trial.external.refs import AgentRefError, resolve
    from pipeline.trial.spec import BUILTIN_AGENT

    for name in config.agents:
        try:
            resolve(name)
        except AgentRefError as exc:
            raise BadInput(f"--agent: {exc}") from None
    if BUILTIN_AGENT not in config.agents and "memory_modes" in config.model_fields_set:
        raise BadInput("--memory-mode: memory modes are the built-in agent's; an external "
                       "agent keeps its own memory (add --agent builtin to run both)")


def _check_spend_caps(config: SweepConfig) -> None:
    """A spend cap over a model of unknown cost is refused unless ``unknown_cost: allow``
    (a spec's is refused at its line first: pipeline.sweep.spec)."""
    from pipeline.sweep.spend_cap import unknown_cost_problem

    problem = unknown_cost_problem(config)  # no cap: LiteLLM's price table is not needed
    if problem is not None:
        raise PreflightError(f"max_cost_usd: {problem}")


def _default_modes(config: SweepConfig, suites: list[Suite],
                   models: Sequence[ModelConfig]) -> None:
    """Memory modes nobody chose: leave out structured mode when a domain of the run has no
    state schema for it, and any mode a model's provider lacks something for (a reference
    model needs golden summaries); one note each. Chosen modes are still refused by
    preflight."""
    if "memory_modes" in config.model_fields_set or not config.builtin_modes():
        return
    lacking = sorted({s.scenario.domain for suite in suites for s in suite.scenarios
                      if load_domain(s.scenario.domain).state_schema is None})
    if lacking and "structured" in config.memory_modes:
        _leave_out(config, "structured", f"domain {', '.join(lacking)} has no state.schema.json")
    for mode in list(config.memory_modes):
        lack = _provider_lack(suites, models, mode)
        if lack is not None and len(config.memory_modes) > 1:  # the last one: refused instead
            _leave_out(config, mode, lack)


def _provider_lack(suites: Sequence[Suite], models: Sequence[ModelConfig],
                   mode: str) -> str | None:
    """What the first model that cannot run ``mode`` lacks, naming the model."""
    for model in models:
        lack = provider_named(model.provider).lacking(suites, mode)
        if lack is not None:
            return f"{model.name}: {lack}"
    return None


def _leave_out(config: SweepConfig, mode: str, why: str) -> None:
    config.memory_modes = [m for m in config.memory_modes if m != mode]
    Console(stderr=True, soft_wrap=True).print(
        f"note: {mode} memory mode left out: {why} (choose modes with --memory-mode)",
        markup=False)


def check_sweep_reach(config: SweepConfig) -> None:
    """What calling the sweep's models and its user model needs (``check_reach``); ``prepare``
    asks only when a trial is left to run: a finished ``--resume`` calls no model, so it neither
    imports LiteLLM nor needs their endpoints up."""
    try:
        check_reach(config.resolved_models())
    except PreflightError as exc:
        raise BadInput(str(exc)) from None
    if config.user_model is not None:
        try:
            check_reach([config.user_model.resolved()])
        except PreflightError as exc:
            raise BadInput(f"--user-model: {exc}") from None


def _check_user_model(config: SweepConfig, agents: list[str], reach: bool = True) -> None:
    """The user simulator's model: one its provider knows, with its key; a model served on the
    nodes (the local model) only when an agent model of the sweep is the same (its server is
    started for the agents)."""
    from pipeline.sweep.preflight import PreflightError, preflight

    if config.user_model is None:
        return
    try:
        user = config.user_model.resolved()
    except ValueError as exc:
        raise BadInput(f"--user-model {config.user_model.name}: {exc}") from None
    try:
        preflight([user], [], config.prompts, [], reach=reach)
    except PreflightError as exc:
        raise BadInput(f"--user-model: {exc}") from None
    if user.route is not None and user.route.node_service and user.name not in agents:
        raise BadInput(f"--user-model {user.name}: a model served on the nodes plays the user "
                       "only when it is also a --model of the sweep (its server is started "
                       "for the agents)")
