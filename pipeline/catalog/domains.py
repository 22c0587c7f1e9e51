"""Domains: a folder under catalogs/ with tool schemas, seed state, prompts and tool code.

A domain folder holds ``tools.json`` (validated as a ``ToolCatalog``), ``state.json`` (the seed
state every trial starts from, copied per trial), ``prompts/*.md`` and a ``tools.py`` module that
exports ``READ_TOOLS``: name -> function(state, arguments) for the read tools. Write tools have
no implementation here: the sandbox intercepts them.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pipeline.catalog.errors import CatalogError, format_pydantic_error
from pipeline.catalog.models import ToolCatalog, ToolSpec
from pipeline.hashing import sha256_json, sha256_text

ReadTool = Callable[[dict[str, Any], dict[str, Any]], Any]
StateInvariants = Callable[[dict[str, Any]], list[str]]


def catalogs_root() -> Path:
    import catalogs

    return Path(catalogs.__file__).parent


@dataclass(frozen=True)
class Prompt:
    id: str
    text: str
    sha256: str


@dataclass(frozen=True)
class Domain:
    name: str
    path: Path
    tools: tuple[ToolSpec, ...]
    seed_state: Mapping[str, Any]
    tools_sha256: str
    read_tools: Mapping[str, ReadTool]
    state_schema: Mapping[str, Any] | None = None
    """JSON Schema of the agent's structured state (structured memory mode)."""
    state_invariants: StateInvariants | None = None
    """Domain invariants over a structured state, beyond the schema."""

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)

    def openai_tools(self) -> list[dict[str, Any]]:
        """The tool list in the OpenAI function-calling shape LiteLLM expects."""
        return [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in self.tools
        ]

    def prompt(self, prompt_name: str) -> Prompt:
        path = self.path / "prompts" / f"{prompt_name}.md"
        if not path.is_file():
            raise CatalogError(str(path), None, "prompt", f"no prompt {prompt_name!r}")
        text = path.read_text("utf-8")
        return Prompt(id=f"{self.name}/{prompt_name}", text=text, sha256=sha256_text(text))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise CatalogError(str(path), None, "-", "file is missing") from None
    except json.JSONDecodeError as exc:
        raise CatalogError(str(path), exc.lineno, "-", f"invalid JSON: {exc.msg}") from None


@cache
def load_domain(name: str) -> Domain:
    """Load a bundled domain by folder name (cached per process)."""
    path = catalogs_root() / name
    if not (path / "tools.json").is_file():
        raise CatalogError(str(path), None, "domain", f"unknown domain {name!r}")
    raw_tools = _read_json(path / "tools.json")
    try:
        catalog = ToolCatalog.model_validate(raw_tools)
    except ValidationError as exc:
        field, message = format_pydantic_error(exc)
        raise CatalogError(str(path / "tools.json"), None, field, message) from None
    module = importlib.import_module(f"catalogs.{name}.tools")
    read_tools: Mapping[str, ReadTool] = module.READ_TOOLS
    missing = {t.name for t in catalog.tools if t.kind == "read"} - set(read_tools)
    if missing:
        raise CatalogError(str(path / "tools.py"), None, "READ_TOOLS", f"missing {sorted(missing)}")
    schema_path = path / "state.schema.json"
    return Domain(
        name=name,
        path=path,
        tools=tuple(catalog.tools),
        seed_state=_read_json(path / "state.json"),
        tools_sha256=sha256_json(raw_tools),
        read_tools=read_tools,
        state_schema=_read_json(schema_path) if schema_path.is_file() else None,
        state_invariants=getattr(module, "state_invariants", None),
    )
