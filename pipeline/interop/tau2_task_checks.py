"""The shape of tau2's ``tasks.json``, checked before anything is converted or written.

Every task must be an object with a plain, unique ``id`` (it becomes a scenario id: letters,
digits, ``.``, ``_``, ``-``, never a path such as ``../x``) and the fields the import reads with
the types it reads them as (``SHAPE``). The first problem is an ``ImportFailed`` naming the
file, the task's position and the field: ``tasks.json: task 3: user_scenario.instructions:
missing``. Source files larger than ``MAX_SOURCE_BYTES`` are refused before they are read.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

MAX_SOURCE_BYTES = 64 * 2**20
"""The largest source file the import reads (tau2's retail db.json is 2.8 MB)."""
TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""A task id as a scenario id (matched whole; ``..`` refused too)."""
_NONE = type(None)
_TEXT: tuple[type, ...] = (str, _NONE)
_LIST: tuple[type, ...] = (list, _NONE)
SHAPE: tuple[tuple[str, tuple[type, ...]], ...] = (
    ("description", (dict, _NONE)),
    ("description.purpose", _TEXT),
    ("user_scenario", (dict,)),
    ("user_scenario.instructions", (dict,)),
    ("user_scenario.instructions.reason_for_call", _TEXT),
    ("user_scenario.instructions.known_info", _TEXT),
    ("user_scenario.instructions.unknown_info", _TEXT),
    ("user_scenario.instructions.task_instructions", _TEXT),
    ("evaluation_criteria", (dict,)),
    ("evaluation_criteria.actions", _LIST),
    ("evaluation_criteria.actions.*", (dict,)),
    ("evaluation_criteria.actions.*.name", (str,)),
    ("evaluation_criteria.actions.*.arguments", (dict,)),
    ("evaluation_criteria.actions.*.compare_args", _LIST),
    ("evaluation_criteria.actions.*.requestor", _TEXT),
    ("evaluation_criteria.communicate_info", _LIST),
    ("evaluation_criteria.communicate_info.*", (str,)),
    ("evaluation_criteria.nl_assertions", _LIST),
    ("evaluation_criteria.nl_assertions.*", (str,)),
    ("evaluation_criteria.reward_basis", _LIST),
    ("evaluation_criteria.reward_basis.*", (str,)),
)
"""Dotted paths (``*``: each item of a list) and the types their values may have; a type list
without None makes the field required and non-null."""
_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer"}


class ImportFailed(ValueError):
    """Bad source data: the message names the file, the task and the field."""


def check_size(path: Path) -> None:
    size = path.stat().st_size
    if size > MAX_SOURCE_BYTES:
        raise ImportFailed(f"{path}: {size:,} bytes, over the import's limit of "
                           f"{MAX_SOURCE_BYTES:,} bytes per source file")


def check_tasks(tasks: Any) -> None:
    """Every task's shape, id and uniqueness; the first problem as ImportFailed."""
    if not isinstance(tasks, list):
        raise ImportFailed("tasks.json: the top level must be a list of tasks")
    first: dict[str, int] = {}
    for number, task in enumerate(tasks):
        if not isinstance(task, dict):
            raise _failed(number, "-", f"expected an object, got {_name(task)}")
        task_id = _task_id(number, task)
        if task_id in first:
            raise _failed(number, "id", f"duplicate id {task_id!r} (first at task "
                          f"{first[task_id]})")
        first[task_id] = number
        for path, allowed in SHAPE:
            _check(number, task, path.split("."), "", allowed)


def _task_id(number: int, task: dict[str, Any]) -> str:
    value = task.get("id")
    if value is None or isinstance(value, bool) or not isinstance(value, str | int):
        raise _failed(number, "id", "missing" if value is None else
                      f"expected a string, got {_name(value)}")
    text = str(value)
    if not TASK_ID.fullmatch(text) or ".." in text:
        raise _failed(number, "id", f"{text!r} is not a plain id (letters, digits, '.', '_', "
                      "'-'; it names a scenario, never a path)")
    return text


def _check(number: int, value: Any, parts: list[str], where: str,
           allowed: tuple[type, ...]) -> None:
    """Walk ``parts`` from ``value``; a parent that is missing or of another type is checked
    by its own entry of SHAPE (listed first), so here it ends the walk."""
    head, rest = parts[0], parts[1:]
    if head == "*":
        items = list(enumerate(value)) if isinstance(value, list) else []
        children = [(f"{where}.{i}", item, True) for i, item in items]
    elif isinstance(value, dict):
        path = f"{where}.{head}" if where else head
        children = [(path, value.get(head), head in value)]
    else:
        return
    for path, child, present in children:
        if rest:
            _check(number, child, rest, path, allowed)
        elif not isinstance(child, allowed) or isinstance(child, bool):
            raise _failed(number, path, _problem(child, present, allowed))


def _problem(value: Any, present: bool, allowed: tuple[type, ...]) -> str:
    wanted = " or ".join(_NAMES.get(t, t.__name__) for t in allowed if t is not _NONE)
    if not present:
        return f"missing (expected {wanted})"
    if value is None:
        return f"null (expected {wanted})"
    return f"expected {wanted}, got {_name(value)}"


def _name(value: Any) -> str:
    return "null" if value is None else _NAMES.get(type(value), type(value).__name__)


def _failed(number: int, field: str, message: str) -> ImportFailed:
    """``tasks.json: task N: field: message``; the field left out when the whole task is wrong
    (``-``)."""
    where = f"tasks.json: task {number}"
    return ImportFailed(f"{where}: {message}" if field in ("", "-") else
                        f"{where}: {field}: {message}")
