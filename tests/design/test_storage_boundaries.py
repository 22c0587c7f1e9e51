"""Storage stays in warehouse/: one Parquet writer, one atomic-write helper, SQL in .sql files,
and the rooms import in one direction (warehouse <- reports, warehouse <- pipeline)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from conftest import REPO
from helpers.sources import parsed

ROOMS = ("pipeline", "flows", "warehouse", "reports")
SQL = re.compile(r"^\s*(SELECT\s.*\bFROM\b|SELECT\s+[\w(*]|WITH\s+\w+\s+AS\s*\(|INSERT\s+INTO\s"
                 r"|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|CREATE\s+(OR\s+REPLACE\s+)?(VIEW|TABLE)\s"
                 r"|COPY\s.*\bTO\b|PRAGMA\s)", re.IGNORECASE | re.DOTALL)
INLINE_SQL_ALLOWED = {
    "warehouse/query.py": "the views over each table's files are built from the schema and the "
                          "file list, and the connection's lock settings",
    "pipeline/runtime/prefect_state.py": "SQLite introspection of Prefect's own database, "
                                         "not the warehouse",
    "pipeline/environment/database.py": "a database domain's per-trial SQLite sandbox (the "
                                        "three-errors method): its tables' introspection and "
                                        "setup, not the warehouse",
    "pipeline/catalog/database.py": "a database domain's seed database checked at load: "
                                    "introspection of the domain's own SQLite, not the warehouse",
    "pipeline/interop/tau2_import.py": "writes an imported domain's seed database (db.sql.gz), "
                                       "not the warehouse",
}
RENAME_ALLOWED = {
    "warehouse/atomic.py": "the helper itself",
    "pipeline/runtime/prefect_state.py": "moves a broken Prefect database aside "
                                         "(a move, not a write)",
}


def _modules(*rooms: str) -> Iterator[tuple[str, ast.Module]]:
    for room in rooms:
        for path in sorted((REPO / room).rglob("*.py")):
            name = path.relative_to(REPO).as_posix()
            yield name, parsed(path)


def _strings(tree: ast.Module) -> Iterator[str]:
    """Every string literal but docstrings (prose may well say "select ... from")."""
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        if id(node) in docstrings:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value
        elif isinstance(node, ast.JoinedStr):  # an f-string: its literal parts joined
            yield "".join(v.value for v in node.values
                          if isinstance(v, ast.Constant) and isinstance(v.value, str))


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _imports(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


def _calls(tree: ast.Module) -> Iterator[tuple[str, ast.Call]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            prefix = owner.id + "." if isinstance(owner, ast.Name) else ""
            yield prefix + node.func.attr, node


def test_sql_lives_in_sql_files() -> None:
    inline = [f"{name}: {text.strip()[:60]!r}" for name, tree in _modules(*ROOMS)
              if name not in INLINE_SQL_ALLOWED for text in _strings(tree) if SQL.match(text)]
    assert inline == [], "move these queries to warehouse/sql/*.sql and run_named them"


def test_parquet_is_written_by_the_warehouse_writer_only() -> None:
    writers = [name for name, tree in _modules(*ROOMS) if name != "warehouse/writer.py"
               and name != "warehouse/export.py"  # a query result a person asked for, not a table
               and any(f.endswith("write_table") or f.endswith("write_to_dataset")
                       for f, _ in _calls(tree))]
    assert writers == []


def test_files_are_replaced_through_the_atomic_helper_only() -> None:
    """os.replace / os.rename / Path.replace / Path.rename (one argument), mkstemp and
    NamedTemporaryFile appear only in warehouse/atomic.py."""
    found = []
    for name, tree in _modules(*ROOMS):
        if name in RENAME_ALLOWED:
            continue
        for func, call in _calls(tree):
            path_rename = func.split(".")[-1] in ("replace", "rename") and len(call.args) == 1
            if func in ("os.replace", "os.rename", "tempfile.mkstemp",
                        "tempfile.NamedTemporaryFile") or path_rename:
                found.append(f"{name}:{call.lineno} {func}")
    assert found == [], "write through warehouse.atomic (atomic_path, atomic_text, write_text)"


def test_rooms_import_in_one_direction() -> None:
    forbidden = {"warehouse": ("pipeline", "flows", "reports"), "reports": ("pipeline", "flows")}
    wrong = [f"{name} imports {module}" for room, banned in forbidden.items()
             for name, tree in _modules(room) for module in _imports(tree)
             if module.split(".")[0] in banned]
    assert wrong == []


def test_the_checks_see_what_they_look_for() -> None:
    """The scans above are not vacuous: they find the helper's own rename and the views' SQL."""
    atomic = dict(_modules("warehouse"))["warehouse/atomic.py"]
    assert "os.replace" in {f for f, _ in _calls(atomic)}
    query = dict(_modules("warehouse"))["warehouse/query.py"]
    assert any(SQL.match(s) for s in _strings(query))
    assert Path(REPO / "warehouse" / "sql" / "attempt_counts.sql").exists()
