"""Catalog loading: domains, prompts, scenario suites, with line-precise validation."""

from pipeline.catalog.domains import Domain, Prompt, catalogs_root, load_domain
from pipeline.catalog.errors import CatalogError
from pipeline.catalog.loader import LoadedScenario, Suite, bundled_suites, load_suite, load_suites
from pipeline.catalog.models import (
    ArgumentConstraint,
    CallAction,
    Expectations,
    FinalValue,
    ForbiddenTool,
    ReplyAction,
    Scenario,
    ToolCall,
    ToolSpec,
    Turn,
)

__all__ = [
    "ArgumentConstraint",
    "CallAction",
    "CatalogError",
    "Domain",
    "Expectations",
    "FinalValue",
    "ForbiddenTool",
    "LoadedScenario",
    "Prompt",
    "ReplyAction",
    "Scenario",
    "Suite",
    "ToolCall",
    "ToolSpec",
    "Turn",
    "bundled_suites",
    "catalogs_root",
    "load_domain",
    "load_suite",
    "load_suites",
]
