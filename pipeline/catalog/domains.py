"""Domains: a folder with tool schemas, seed state, prompts, scenario suites and tool code.

A domain folder holds ``tools.json`` (validated as a ``ToolCatalog``), ``state.json`` (the seed
state every trial starts from, copied per trial), ``prompts/*.md``, ``suites/*.jsonl`` and a
``tools.py`` that exports ``READ_TOOLS``: name -> function(state, arguments) for the read tools
(write tools have no code: the sandbox intercepts them). Optional: ``state.schema.json`` (the
structured memory mode needs it), ``state_invariants(state) -> [message]`` in ``tools.py``, and
``claims.py`` exporting ``CLAIM_PATTERNS`` for the response check (pipeline.scoring.claims),
``LANGUAGES`` (the languages it speaks) and ``PHRASE_CLAIMS`` (forbidden claims in each of
them; pipeline.scoring.languages).

A domain whose ``tools.json`` says ``"sandbox": "database"`` runs its write tools for real
against a per-trial copy of the SQLite database ``db.sql`` builds; its ``tools.py`` exports
``WRITE_TOOLS`` too, and every tool function takes the trial's ``sqlite3.Connection`` instead of
the state (pipeline.environment.database).

Domains are found under the catalog roots: every ``--catalog DIR`` given to the process
(``set_extra_roots``, or ``AGENTSWEEP_CATALOGS`` separated by ``os.pathsep``), then the bundled
``catalogs/``. A domain's Python is loaded from its own folder by path, the bundled ones too:
a domain needs no package of this repository and no change under ``pipeline/``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from pipeline.catalog.condition_models import REQUEST_SLOT, ConditionStyle
from pipeline.catalog.database_models import SandboxStyle
from pipeline.catalog.domain_code import inside, load_module
from pipeline.catalog.errors import CatalogError, raise_all
from pipeline.catalog.jsonlines import Location, line_of, read_json
from pipeline.catalog.located import located_errors
from pipeline.catalog.models import ReferenceReplies, ToolCatalog, ToolSpec
from pipeline.catalog.plain import did_you_mean
from pipeline.util.hashing import sha256_json, sha256_text

M = TypeVar("M", ToolCatalog, ReferenceReplies, ConditionStyle)
ReadTool = Callable[[Any, dict[str, Any]], Any]
"""(the trial's state, or its sqlite3.Connection in a database domain; arguments) -> result."""
WriteTool = Callable[[Any, dict[str, Any]], Any]
"""A database domain's write tool: (the trial's sqlite3.Connection, arguments) -> result; a
result with an ``error`` is the server's refusal."""
StateInvariants = Callable[[dict[str, Any]], list[str]]
StateEquivalent = Callable[[str, Any, Any, Any, dict[str, Any]], bool]
"""(path, actual value, golden value, actual state, golden state) -> whether the actual value
says the same as the golden one in this domain (an encoding the domain accepts)."""
CATALOGS_ENV = "AGENTSWEEP_CATALOGS"
_extra_roots: list[Path] = []


def catalogs_root() -> Path:
    """The bundled catalog root (this repository's ``catalogs/``), found by path: the core
    never imports a catalog's code (a domain's Python is loaded from its own folder)."""
    return Path(__file__).resolve().parents[2] / "catalogs"


def set_extra_roots(roots: Sequence[Path]) -> None:
    """Catalog roots searched before the bundled one, for this process."""
    _extra_roots[:] = [Path(r).resolve() for r in roots]


def catalog_roots() -> list[Path]:
    from_env = [Path(p).resolve() for p in os.environ.get(CATALOGS_ENV, "").split(os.pathsep)
                if p]
    roots = [*_extra_roots, *from_env, catalogs_root()]
    return list(dict.fromkeys(roots))


DOMAIN_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
"""A domain's name: a plain identifier, never a path (matched whole)."""
PROMPT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""A prompt's name (the stem of ``prompts/<name>.md``), never a path (matched whole)."""


def check_domain_name(name: str) -> str:
    """``name`` if it is a plain domain name; CatalogError (path ``name``, field ``domain``)
    otherwise, before anything is read or imported."""
    if not DOMAIN_NAME.fullmatch(name):
        raise CatalogError(name, None, "domain", f"{name!r} is not a domain name: a domain is "
                           "named by a plain identifier (a lowercase letter, then up to 63 "
                           "lowercase letters, digits or _) found in the catalog roots, never "
                           "by a path")
    return name


def domain_folder(name: str) -> Path:
    """The folder of domain ``name`` in the catalog roots, links resolved; CatalogError if the
    name is not a plain identifier, if none or several roots hold it, or if it is a link to
    somewhere outside its catalog root."""
    check_domain_name(name)
    found = [_in_root(root, name) for root in catalog_roots()
             if (root / name / "tools.json").is_file()]
    if not found:
        roots = ", ".join(str(r) for r in catalog_roots())
        known = [p.parent.name for r in catalog_roots() for p in r.glob("*/tools.json")]
        raise CatalogError(name, None, "domain", f"unknown domain {name!r}"
                           f"{did_you_mean(name, known)} (catalog roots: {roots}; add one "
                           "with --catalog DIR)")
    if len(found) > 1:
        raise CatalogError(str(found[1]), None, "domain", f"domain {name!r} is also in "
                           f"{found[0]}: domain names must be unique across catalog roots")
    return found[0]


def _in_root(root: Path, name: str) -> Path:
    try:
        inside(root / name, root)
    except CatalogError as exc:
        raise CatalogError(name, None, "domain", f"domain {name!r}: {exc.path} {exc.message}"
                           ) from None
    return root / name


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
    state_equivalent: StateEquivalent | None = None
    """Encodings of a structured state's values the domain accepts beside the golden ones
    (``state_equivalent`` in ``tools.py``): "the cheapest" said by ``sort_by`` alone."""
    claim_patterns: tuple[Any, ...] = ()
    """The response check's patterns of "this tool's action was done" (``claims.py``)."""
    languages: tuple[Any, ...] = ()
    """The languages its users and agents may use (``LANGUAGES`` in ``claims.py``:
    pipeline.scoring.Language): word endings for whole-word phrases, requests for input."""
    phrase_claims: tuple[Any, ...] = ()
    """Claims a scenario may forbid, said in each of its languages (``PHRASE_CLAIMS``:
    pipeline.scoring.PhraseClaim)."""
    reference_replies: ReferenceReplies = ReferenceReplies()
    """What the reference mutants say in this domain's words (``reference_replies.json``)."""
    condition_style: ConditionStyle | None = None
    """The domain's wording for conditions suites (``conditions.json``; docs/conditions.md)."""
    sandbox: SandboxStyle = "intercept"
    """How its write tools run (``tools.json``)."""
    write_tools: Mapping[str, WriteTool] = field(default_factory=dict)
    """A database domain's write-tool code (``WRITE_TOOLS``)."""
    database_sql: str | None = None
    """A database domain's ``db.sql``: the schema and seed rows of every trial's database."""
    reply_ids: tuple[re.Pattern[str], ...] = ()
    """The ids a reply may name, each one needing a source (``tools.json`` ``reply_ids``)."""
    denial_patterns: tuple[Any, ...] = ()
    """The response checks' patterns of "this tool's action was not done / will be done"
    (``claims.py`` ``DENIAL_PATTERNS``): a reply saying so after the action took effect."""
    entities: tuple[Any, ...] = ()
    """The entities its tools report and its replies name, with their attributes
    (``entities.py`` ``ENTITIES``: pipeline.scoring.EntityKind), for the grounding check."""

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

    def prompt_names(self) -> list[str]:
        return sorted(p.stem for p in (self.path / "prompts").glob("*.md"))

    def prompt(self, prompt_name: str) -> Prompt:
        if not PROMPT_NAME.fullmatch(prompt_name):
            raise CatalogError(prompt_name, None, "prompt", f"{prompt_name!r} is not a prompt "
                               "name: letters, digits, _ or -, never a path")
        path = self.path / "prompts" / f"{prompt_name}.md"
        if path.is_file():
            inside(path, self.path)
        else:
            raise CatalogError(str(path), None, "prompt", f"no prompt {prompt_name!r} in domain "
                               f"{self.name} (it has: {', '.join(self.prompt_names()) or 'none'})")
        text = path.read_text("utf-8")
        return Prompt(id=f"{self.name}/{prompt_name}", text=text, sha256=sha256_text(text))


def load_domain(name: str, folder: Path | None = None) -> Domain:
    """Load a domain by name from the catalog roots (or from ``folder``); cached per folder."""
    return _load(_resolved(folder) if folder is not None else domain_folder(name))


@cache
def _resolved(folder: Path) -> Path:
    """``folder`` with its links resolved, once per process (every trial names its domain's
    folder; resolving it is a system call per path component)."""
    return folder.resolve()


@cache
def _load(path: Path) -> Domain:
    name = path.name
    raw_tools, lines = read_json(path / "tools.json")
    catalog = _validated(ToolCatalog, raw_tools, lines, path / "tools.json")
    module = load_module(path / "tools.py", name)
    read_tools: Mapping[str, ReadTool] = getattr(module, "READ_TOOLS", {})
    missing = {t.name for t in catalog.tools if t.kind == "read"} - set(read_tools)
    if missing:
        raise CatalogError(str(path / "tools.py"), None, "READ_TOOLS",
                           f"no code for the read tools {sorted(missing)}")
    schema_path = path / "state.schema.json"
    claims = path / "claims.py"
    write_tools: Mapping[str, WriteTool] = getattr(module, "WRITE_TOOLS", {})
    database_sql = None
    if catalog.sandbox == "database":
        missing = {t.name for t in catalog.tools if t.kind == "write"} - set(write_tools)
        if missing:
            raise CatalogError(str(path / "tools.py"), None, "WRITE_TOOLS",
                               f"no code for the write tools {sorted(missing)} (a database "
                               "domain runs them)")
        database_sql = _database_sql(path / "db.sql")
    return Domain(
        name=name,
        path=path,
        tools=tuple(catalog.tools),
        seed_state=read_json(path / "state.json")[0]
        if catalog.sandbox == "intercept" or (path / "state.json").is_file() else {},
        tools_sha256=sha256_json(raw_tools),
        read_tools=read_tools,
        state_schema=read_json(schema_path)[0] if schema_path.is_file() else None,
        state_invariants=getattr(module, "state_invariants", None),
        state_equivalent=getattr(module, "state_equivalent", None),
        reply_ids=tuple(re.compile(p) for p in catalog.reply_ids),
        **_claims_module(claims, name),
        entities=_entities(path / "entities.py", name),
        reference_replies=_reference_replies(path / "reference_replies.json"),
        condition_style=_condition_style(path / "conditions.json"),
        sandbox=catalog.sandbox,
        write_tools=write_tools,
        database_sql=database_sql,
    )


def _claims_module(path: Path, name: str) -> dict[str, tuple[Any, ...]]:
    """What a domain's ``claims.py`` declares: claim, denial and phrase patterns, languages."""
    if not path.is_file():
        return {}
    module = load_module(path, name)
    return {field: tuple(getattr(module, attribute, ()))
            for field, attribute in (("claim_patterns", "CLAIM_PATTERNS"),
                                     ("denial_patterns", "DENIAL_PATTERNS"),
                                     ("languages", "LANGUAGES"),
                                     ("phrase_claims", "PHRASE_CLAIMS"))}


def _entities(path: Path, name: str) -> tuple[Any, ...]:
    """What a domain's ``entities.py`` declares (``ENTITIES``); none without the file."""
    if not path.is_file():
        return ()
    return tuple(getattr(load_module(path, name), "ENTITIES", ()))


def _database_sql(path: Path) -> str:
    """``db.sql`` (or ``db.sql.gz``), proven to build a database (an error names the file and
    SQLite's message)."""
    import gzip
    import sqlite3

    packed = path.with_name(path.name + ".gz")
    if not path.is_file() and packed.is_file():  # a large database, stored compressed
        path = packed
    if not path.is_file():
        raise CatalogError(str(path), None, "-", "a database domain needs db.sql or db.sql.gz "
                           "(its schema and seed rows)")
    text = (gzip.decompress(path.read_bytes()).decode("utf-8") if path.suffix == ".gz"
            else path.read_text("utf-8"))
    probe = sqlite3.connect(":memory:")
    try:
        probe.executescript(text)
    except sqlite3.Error as exc:
        raise CatalogError(str(path), None, "-", f"SQLite: {exc}") from None
    finally:
        probe.close()
    return text


def _validated(model: type[M], raw: Any, lines: Mapping[Location, int], path: Path) -> M:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise_all(located_errors(model, exc, str(path), lines))
        raise  # unreachable: a ValidationError holds at least one error


def _reference_replies(path: Path) -> ReferenceReplies:
    if not path.is_file():
        return ReferenceReplies()
    raw, lines = read_json(path)
    return _validated(ReferenceReplies, raw, lines, path)


def _condition_style(path: Path) -> ConditionStyle | None:
    if not path.is_file():
        return None
    raw, lines = read_json(path)
    style = _validated(ConditionStyle, raw, lines, path)
    for name, text in style.formats.items():
        if REQUEST_SLOT not in text:
            raise CatalogError(str(path), line_of(["formats", name], lines), f"formats.{name}",
                               f"the format's text must hold {REQUEST_SLOT}")
    return style
