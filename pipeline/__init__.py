"""agentsweep's evaluation core, by concept (pipeline/README.md maps the rooms and arrows).

The public face: the names below, imported on first use so that ``import pipeline`` stays
cheap (a refused command must not pay for Ray, Prefect or LiteLLM).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.catalog import Domain, Scenario, Suite, load_domain, load_suite, load_suites
    from pipeline.errors import AgentError, ConfigError, ExitCode, InfraError
    from pipeline.models.config import ModelConfig
    from pipeline.sweep.config import SweepConfig
    from pipeline.sweep.prepare import PreparedSweep, prepare
    from pipeline.sweep.stages import SweepOutcome, SweepPlan, plan
    from pipeline.trace import Trace

_WHERE = {
    "Domain": "pipeline.catalog", "Scenario": "pipeline.catalog", "Suite": "pipeline.catalog",
    "load_domain": "pipeline.catalog", "load_suite": "pipeline.catalog",
    "load_suites": "pipeline.catalog",
    "AgentError": "pipeline.errors", "ConfigError": "pipeline.errors",
    "ExitCode": "pipeline.errors", "InfraError": "pipeline.errors",
    "ModelConfig": "pipeline.models.config",
    "SweepConfig": "pipeline.sweep.config",
    "PreparedSweep": "pipeline.sweep.prepare", "prepare": "pipeline.sweep.prepare",
    "SweepOutcome": "pipeline.sweep.stages", "SweepPlan": "pipeline.sweep.stages",
    "plan": "pipeline.sweep.stages",
    "Trace": "pipeline.trace",
}

__all__ = [
    "AgentError",
    "ConfigError",
    "Domain",
    "ExitCode",
    "InfraError",
    "ModelConfig",
    "PreparedSweep",
    "Scenario",
    "Suite",
    "SweepConfig",
    "SweepOutcome",
    "SweepPlan",
    "Trace",
    "load_domain",
    "load_suite",
    "load_suites",
    "plan",
    "prepare",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
    return getattr(import_module(_WHERE[name]), name)
