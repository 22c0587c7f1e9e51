"""Naming an external agent: ``path/to/file.py:attribute``, ``package.module:attribute`` or an
HTTP service's URL; finding it, its version and the hash of its code.

A file is named explicitly, like a suite, and imported under a module name of its own (its
path's hash), once per process. Nothing here runs the agent: ``resolve`` only imports it (on
the driver, before anything runs) to say what is wrong while nothing has started.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import sys
import threading
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from pipeline.trial.spec import AgentRef

INFO_TIMEOUT_S = 10.0
"""How long the driver waits for an HTTP agent's ``GET /info``."""
_lock = threading.Lock()


class AgentRefError(ValueError):
    """An agent that cannot be found or loaded (a configuration mistake, never retried)."""


def resolve(name: str, base: Path | None = None) -> AgentRef:
    """The agent ``name`` names, with its version and code hash; AgentRefError says why not.
    A file's path is made absolute from ``base`` (the current directory by default), so a
    worker elsewhere finds it."""
    ref = AgentRef(name)
    if ref.kind == "builtin":
        return ref
    if ref.kind == "http":
        return replace(ref, version=_service_version(name))
    location, attribute = _split(name)
    path = _file_of(location, base)
    module = _module(path, location)
    target = _attribute(module, attribute, name)
    version = getattr(target, "version", None) or getattr(module, "__version__", None)
    source = Path(module.__file__) if module.__file__ else None
    digest = hashlib.sha256(source.read_bytes()).hexdigest() if source else None
    return replace(ref, version=str(version) if version is not None else None,
                   code_sha256=digest, path=str(path) if path else None)


def load(ref: AgentRef) -> Any:
    """The factory a Python agent names (``attribute(session)`` makes one trial's agent)."""
    location, attribute = _split(ref.name)
    path = Path(ref.path) if ref.path else _file_of(location, None)
    return _attribute(_module(path, location), attribute, ref.name)


def _split(name: str) -> tuple[str, str]:
    location, colon, attribute = name.rpartition(":")
    if not colon or not location or not attribute.isidentifier():
        raise AgentRefError(f"agent {name!r}: name it path/to/file.py:attribute, "
                            "package.module:attribute or an http(s):// URL")
    return location, attribute


def _file_of(location: str, base: Path | None) -> Path | None:
    """The file a ``file.py`` location names (absolute), or None for a module name."""
    if not location.endswith(".py"):
        return None
    path = Path(location).expanduser()
    path = path if path.is_absolute() else (base or Path.cwd()) / path
    if not path.is_file():
        raise AgentRefError(f"agent {location!r}: no such file ({path})")
    return path.resolve()


def _module(path: Path | None, location: str) -> ModuleType:
    if path is None:
        try:
            return importlib.import_module(location)
        except ImportError as exc:
            raise AgentRefError(f"agent module {location!r} cannot be imported: {exc}") from exc
    name = "agentsweep_agent_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
    with _lock:
        loaded = sys.modules.get(name)
        if loaded is not None:
            return loaded
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise AgentRefError(f"agent file {path} cannot be imported")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[name]
            raise AgentRefError(f"agent file {path} failed to import: "
                                f"{type(exc).__name__}: {exc}") from exc
        return module


def _attribute(module: ModuleType, attribute: str, name: str) -> Any:
    target = getattr(module, attribute, None)
    if target is None or not callable(target):
        raise AgentRefError(f"agent {name!r}: {module.__name__} has no callable "
                            f"{attribute!r} (attribute(session) makes the agent)")
    return target


def _service_version(url: str) -> str | None:
    """What the service says it is (``GET <url>/info``: ``{"name", "version"}``)."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/info",
                                    timeout=INFO_TIMEOUT_S) as answer:  # noqa: S310
            info = json.loads(answer.read() or b"{}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise AgentRefError(f"agent service {url}: GET /info failed "
                            f"({type(exc).__name__}: {exc})") from exc
    version = info.get("version") if isinstance(info, dict) else None
    return str(version) if version is not None else None
