"""Our source files as syntax trees, parsed once per test process: the design tests walk
every module of the project several times (about 2,000 parses a run before)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The module in ``path`` (shared: never change it)."""
    return ast.parse(path.read_text("utf-8"), path.as_posix())


@functools.cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of ``parsed(path)``, in ``ast.walk`` order."""
    return tuple(ast.walk(parsed(path)))
