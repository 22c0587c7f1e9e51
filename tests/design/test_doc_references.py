"""What the docs name exists: every repository path, module and `make` target in README.md,
docs/ and infra/, and every repository path in the packages' own docstrings and comments.
(test_docs.py runs the docs' shell examples; this one is fast and needs no stack.)"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from conftest import REPO

ROOMS = ("pipeline", "warehouse", "flows", "reports", "catalogs", "infra", "benchmarks", "tests",
         "docs")
PATH = re.compile(rf"(?<![\w./-])((?:{'|'.join(ROOMS)})/[\w./-]*\w)")
MODULE = re.compile(r"(?<![\w./])((?:pipeline|warehouse|flows|reports)(?:\.[a-z_]\w*)+)")
MAKE = re.compile(r"(?:`|^\s*)make ([a-z][\w-]*)", re.MULTILINE)
PLACEHOLDER = re.compile(r"[*<>]|\bNAME\b|\.\.\.")
FILE_SUFFIXES = (".py", ".sql", ".json", ".jsonl", ".md", ".yaml", ".jinja", ".txt")

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")),
        *sorted((REPO / "infra").rglob("*.md")), *sorted((REPO / "infra").rglob("*.yaml"))]
CODE = sorted(p for room in ("pipeline", "warehouse", "flows", "reports")
              for p in (REPO / room).rglob("*.py"))


def _paths(text: str) -> set[str]:
    found = set()
    for match in PATH.finditer(text):
        start = match.start()
        if PLACEHOLDER.search(text[start:match.end() + 1]):
            continue
        found.add(match.group(1).rstrip("."))
    return found


def _missing_paths(files: list[Path]) -> list[str]:
    return sorted(f"{f.relative_to(REPO)}: {p}" for f in files for p in _paths(f.read_text("utf-8"))
                  if not (REPO / p).exists())


def _module_exists(name: str) -> bool:
    parts = name.split(".")
    if parts[-1] in {s.lstrip(".") for s in FILE_SUFFIXES}:  # `warehouse.sql` as a file name
        return True
    for end in range(len(parts), 0, -1):
        if importlib.util.find_spec(".".join(parts[:end])) is not None:
            module = REPO.joinpath(*parts[:end])
            # what follows the module is an attribute: it must be defined in its source
            source = module.with_suffix(".py") if module.with_suffix(".py").exists() \
                else module / "__init__.py"
            rest = parts[end:]
            return not rest or re.search(rf"\b{re.escape(rest[0])}\b",
                                         source.read_text("utf-8")) is not None
    return False


def test_every_path_the_docs_name_exists() -> None:
    assert sum(len(_paths(f.read_text("utf-8"))) for f in DOCS) >= 30  # the pattern finds them
    assert _missing_paths(DOCS) == []


def test_every_path_a_docstring_names_exists() -> None:
    assert _missing_paths(CODE) == []


def test_every_module_the_docs_name_imports() -> None:
    named = {(f.relative_to(REPO), m) for f in DOCS
             for m in MODULE.findall(f.read_text("utf-8"))}
    assert sorted(f"{f}: {m}" for f, m in named if not _module_exists(m)) == []


def test_every_make_target_the_docs_name_exists() -> None:
    targets = set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text("utf-8"), re.M))
    named = {(f.relative_to(REPO), t) for f in DOCS for t in MAKE.findall(f.read_text("utf-8"))}
    assert sorted(f"{f}: make {t}" for f, t in named if t not in targets) == []


@pytest.mark.parametrize("text, expected", [
    ("see `pipeline/cli/app.py` and warehouse/sql/summary.sql.", {"pipeline/cli/app.py",
                                                              "warehouse/sql/summary.sql"}),
    ("under `catalogs/<domain>/` or warehouse/<table>/run_id=*", set()),
    ("AGENTSWEEP_HOME/warehouse/x or ~/my-catalogs/tests/x", set()),
])
def test_the_path_pattern(text: str, expected: set[str]) -> None:
    assert _paths(text) == expected


def test_the_readme_is_short_and_links_every_page_of_docs() -> None:
    readme = (REPO / "README.md").read_text("utf-8")
    assert len(readme.splitlines()) <= 300
    pages = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md"))
    assert [p for p in pages if f"`{p}`" not in readme] == []
