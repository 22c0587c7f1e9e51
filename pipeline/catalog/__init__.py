"""Catalog loading: domains, prompts, scenario suites, with line-precise validation."""

from pipeline.catalog.domains import (
    Domain,
    Prompt,
    catalog_roots,
    catalogs_root,
    domain_folder,
    load_domain,
    set_extra_roots,
)
from pipeline.catalog.errors import CatalogError, CatalogErrors
from pipeline.catalog.loader import (
    LoadedScenario,
    Suite,
    bundled_suites,
    known_suites,
    load_suite,
    load_suites,
)
from pipeline.catalog.models import (
    ArgumentConstraint,
    CallAction,
    Expectations,
    ExpectedAction,
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
    "CatalogErrors",
    "Domain",
    "ExpectedAction",
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
    "catalog_roots",
    "catalogs_root",
    "domain_folder",
    "known_suites",
    "load_domain",
    "load_suite",
    "load_suites",
    "set_extra_roots",
]
