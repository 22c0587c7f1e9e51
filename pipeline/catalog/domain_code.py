"""A domain's own Python (``tools.py``, ``claims.py``), loaded by path inside its folder and
within a time limit.

A file that is a link to somewhere outside its domain's folder is refused before anything is
imported. Importing runs the domain's code: on the main thread a signal timer stops an import
that takes longer than ``AGENTSWEEP_DOMAIN_IMPORT_S`` seconds (default 20); a file that fails or
hangs at import is a ``CatalogError`` naming it. Off the main thread (a Ray worker's task thread)
no signal can be armed: the import runs without the limit (the driver imported it first).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType, ModuleType

from pipeline.catalog.errors import CatalogError

IMPORT_LIMIT_ENV = "AGENTSWEEP_DOMAIN_IMPORT_S"
DEFAULT_IMPORT_LIMIT_S = 20.0


class ImportTimeLimit(BaseException):
    """Raised into a domain's import when its time is up; a BaseException so that the domain's
    own ``except Exception`` cannot swallow it."""


def import_limit_s() -> float:
    """The time limit of one domain file's import, from ``AGENTSWEEP_DOMAIN_IMPORT_S``."""
    raw = os.environ.get(IMPORT_LIMIT_ENV, "")
    if not raw:
        return DEFAULT_IMPORT_LIMIT_S
    try:
        value = float(raw)
    except ValueError:
        raise CatalogError(IMPORT_LIMIT_ENV, None, "-", f"expected seconds, got {raw!r}"
                           ) from None
    if not value > 0 or value == float("inf"):
        raise CatalogError(IMPORT_LIMIT_ENV, None, "-", f"expected seconds > 0, got {raw!r}")
    return value


def load_module(path: Path, domain: str) -> ModuleType:
    """A domain's Python file, loaded by path under a name of its own."""
    if not path.is_file():
        raise CatalogError(str(path), None, "-", f"domain {domain} has no {path.name}")
    inside(path, path.parent)
    unique = hashlib.sha256(str(path).encode()).hexdigest()[:10]
    spec = importlib.util.spec_from_file_location(f"agentsweep_domain_{domain}_{unique}_"
                                                  f"{path.stem}", path)
    if spec is None or spec.loader is None:
        raise CatalogError(str(path), None, "-", "cannot be loaded as Python")
    module = importlib.util.module_from_spec(spec)
    limit = import_limit_s()
    try:
        with _time_limit(limit):
            spec.loader.exec_module(module)
    except ImportTimeLimit:
        raise CatalogError(str(path), None, "-", f"importing it took longer than {limit:g} s "
                           f"(stopped; {IMPORT_LIMIT_ENV} sets the limit)") from None
    except SyntaxError as exc:
        raise CatalogError(str(path), exc.lineno, "-", f"SyntaxError: {exc.msg}") from None
    except Exception as exc:  # the domain's own code failed at import: name the file
        raise CatalogError(str(path), None, "-", f"{type(exc).__name__}: {exc}") from None
    return module


def inside(path: Path, folder: Path) -> Path:
    """``path`` with its links resolved, proven to lie inside ``folder`` (links resolved too);
    a CatalogError naming ``path`` otherwise."""
    real = path.resolve()
    if not real.is_relative_to(folder.resolve()):
        raise CatalogError(str(path), None, "-", f"resolves to {real}, outside {folder}: a "
                           "catalog file must stay inside its folder (refused)")
    return real


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise ImportTimeLimit in the block after ``seconds``; no limit off the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise ImportTimeLimit

    previous = signal.signal(signal.SIGALRM, expire)
    earlier, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if earlier:  # a timer someone else armed keeps (roughly) its deadline
            signal.setitimer(signal.ITIMER_REAL, earlier)
