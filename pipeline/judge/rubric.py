"""Rubrics: versioned files in a domain's catalog folder (``<domain>/rubrics/<id>.md``).

A rubric file is a small header between ``---`` lines, then the rubric text the judge is given::

    ---
    id: explanation
    version: 1
    evidence: [request, expected_outcome, after, answer]
    ---
    Judge only the explanation, not tool policy. ...

``id`` and ``version`` are required (bump the version when the meaning changes); ``evidence``
is what the judge sees by default (``pipeline.judge.evidence.EvidenceField``); ``requires``
lists evidence fields a trial must have non-empty to be judged at all (a trial whose scenario
has no NL assertions is not sent to an NL-assertions rubric: it is skipped and counted). The
sha256 of the file's bytes is recorded with every judgment, so a rubric edited without a new
version still shows as another rubric. Bad input is ``CatalogError`` (``file:line: field:
message``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.catalog import CatalogError
from pipeline.catalog.errors import format_pydantic_error
from pipeline.judge.evidence import DEFAULT_FIELDS, EvidenceField

FENCE = "---"


class RubricHeader(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    version: int = Field(ge=1, description="Bump when the rubric's meaning changes.")
    evidence: tuple[EvidenceField, ...] = Field(default=DEFAULT_FIELDS, min_length=1)
    requires: tuple[EvidenceField, ...] = Field(default=(), description=(
        "Evidence fields a trial must have non-empty to be judged (others are skipped)."))


@dataclass(frozen=True)
class Rubric:
    id: str
    version: int
    sha256: str
    text: str
    """The rubric text (the header left out), as the judge's instructions."""
    evidence: tuple[EvidenceField, ...]
    """What the judge sees unless the command says otherwise."""
    path: Path
    requires: tuple[EvidenceField, ...] = ()
    """Evidence fields a trial must have non-empty to be judged by this rubric."""


def load_rubric(path: Path) -> Rubric:
    """The rubric in ``path``; CatalogError naming the file, the line and the field."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogError(str(path), None, "-", f"cannot read: {exc.strerror}") from None
    lines = data.decode("utf-8", errors="replace").splitlines()
    if not lines or lines[0].strip() != FENCE:
        raise CatalogError(str(path), 1, "-", "a rubric starts with a header between '---' "
                           "lines (id, version)")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == FENCE)
    except StopIteration:
        raise CatalogError(str(path), 1, "-", "the header's closing '---' is missing") from None
    header = _header(path, lines[1:end])
    text = "\n".join(lines[end + 1:]).strip()
    if not text:
        raise CatalogError(str(path), end + 2, "text", "the rubric has no text")
    return Rubric(header.id, header.version, hashlib.sha256(data).hexdigest(), text,
                  header.evidence, path, header.requires)


def _header(path: Path, lines: list[str]) -> RubricHeader:
    try:
        raw = yaml.safe_load("\n".join(lines)) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1
        raise CatalogError(str(path), line, "-", f"header is not YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise CatalogError(str(path), 2, "-", "the header is 'key: value' lines")
    try:
        return RubricHeader.model_validate(raw)
    except ValidationError as exc:
        where, message = format_pydantic_error(exc)
        key = where.split(".", 1)[0]
        line = next((i + 2 for i, text in enumerate(lines)
                     if text.split(":", 1)[0].strip() == key), 1)
        if key not in raw:
            message = f"{message} (every rubric has an id and a version)"
        raise CatalogError(str(path), line, where, message) from None
