"""`agentsweep import tau2` is all-or-nothing and names the file, task and field of bad input:
duplicate and path-like ids, missing or null fields, wrong types, oversized files (exit 2),
with the domain folder left exactly as it was."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from helpers.commands import cli

import pipeline.interop.tau2_import as tau2_import
import pipeline.interop.tau2_task_checks as tau2_task_checks
from pipeline.interop.tau2_import import ImportFailed, import_tau2

DOMAIN = REPO / "catalogs" / "tau2_retail"
TASK: dict[str, Any] = {
    "id": "0", "description": {"purpose": "Ask about an order.", "relevant_policies": None,
                               "notes": None},
    "user_scenario": {"persona": None, "instructions": {
        "domain": "retail", "reason_for_call": "You want to know your order's status.",
        "known_info": "You are Ann, user ann_1.", "unknown_info": None,
        "task_instructions": "Be brief."}},
    "evaluation_criteria": {"actions": [], "communicate_info": [], "nl_assertions": None,
                            "reward_basis": ["DB"]},
}
DB = {"users": {"ann_1": {"user_id": "ann_1", "address": {}, "payment_methods": {},
                          "orders": []}},
      "orders": {"#W1": {"order_id": "#W1", "user_id": "ann_1", "status": "pending",
                         "items": []}},
      "products": {"1": {"product_id": "1", "name": "Lamp", "variants": {}}}}


def _source(tmp_path: Path, tasks: Any) -> Path:
    source = tmp_path / "source"
    source.mkdir(exist_ok=True)
    (source / "tasks.json").write_text(json.dumps(tasks), "utf-8")
    (source / "db.json").write_text(json.dumps(DB), "utf-8")
    (source / "policy.md").write_text("Be helpful.\n", "utf-8")
    (source / "LICENSE").write_text("MIT\n", "utf-8")
    return source


def _out(tmp_path: Path) -> Path:
    out = tmp_path / "tau2_retail"
    out.mkdir()
    for code in ("tools.json", "tools.py"):
        shutil.copy(DOMAIN / code, out / code)
    (out / "mine.txt").write_text("kept\n")
    return out


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _task(**changes: Any) -> dict[str, Any]:
    task = copy.deepcopy(TASK)
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        holder = task
        for part in parents:
            holder = holder[part]
        if value is KeyError:
            del holder[last]
        else:
            holder[last] = value
    return task


def test_a_small_import_lands_whole_beside_the_domains_own_files(tmp_path: Path) -> None:
    out = _out(tmp_path)
    report = import_tau2(_source(tmp_path, [TASK, _task(id="1")]), out)
    assert report.tasks == 2
    assert {"db.sql.gz", "suites/retail.jsonl", "mine.txt", "tools.py"} <= set(_tree(out))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no leftovers


@pytest.mark.parametrize(("tasks", "message"), [
    ([TASK, _task()], "tasks.json: task 1: id: duplicate id '0' (first at task 0)"),
    ([_task(id="../x")], "tasks.json: task 0: id: '../x' is not a plain id"),
    ([_task(id="a/b")], "tasks.json: task 0: id: 'a/b' is not a plain id"),
    ([_task(id=None)], "tasks.json: task 0: id: missing"),
    ([_task(id=[1])], "tasks.json: task 0: id: expected a string, got a list"),
    ([_task(user_scenario=KeyError)], "tasks.json: task 0: user_scenario: missing"),
    ([_task(user_scenario__instructions=None)],
     "tasks.json: task 0: user_scenario.instructions: null (expected an object)"),
    ([_task(user_scenario__instructions__known_info=["x"])],
     "tasks.json: task 0: user_scenario.instructions.known_info: expected a string, got a list"),
    ([_task(evaluation_criteria__actions=[{"name": "get_order_details", "arguments": None}])],
     "tasks.json: task 0: evaluation_criteria.actions.0.arguments: null (expected an object)"),
    ([_task(evaluation_criteria__actions=[{"arguments": {}}])],
     "tasks.json: task 0: evaluation_criteria.actions.0.name: missing"),
    ([_task(evaluation_criteria__communicate_info=[1])],
     "tasks.json: task 0: evaluation_criteria.communicate_info.0: expected a string, got an "
     "integer"),
    ([TASK, "not a task"], "tasks.json: task 1: expected an object, got a string"),
    ({"tasks": []}, "tasks.json: the top level must be a list of tasks"),
], ids=["duplicate", "dotdot", "slash", "null-id", "list-id", "missing", "null", "wrong-type",
        "null-arguments", "no-name", "item-type", "not-object", "not-list"])
def test_bad_tasks_exit_2_naming_file_task_and_field_and_write_nothing(
        tmp_path: Path, tasks: Any, message: str) -> None:
    out = _out(tmp_path)
    before = _tree(out)
    code, stdout, stderr = cli("import", "tau2", str(_source(tmp_path, tasks)), "--out",
                               str(out))
    assert code == 2, stdout + stderr
    assert f"error: {message}" in stderr
    assert _tree(out) == before


def test_a_source_file_over_the_size_limit_is_refused(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tau2_task_checks, "MAX_SOURCE_BYTES", 100)
    out = _out(tmp_path)
    before = _tree(out)
    source = _source(tmp_path, [TASK])
    with pytest.raises(ImportFailed, match=r"db\.json: .* bytes, over the import's limit of "
                                           r"100 bytes"):
        import_tau2(source, out)
    assert _tree(out) == before


def test_a_failure_mid_import_leaves_the_folder_as_it_was(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    out = _out(tmp_path)
    import_tau2(_source(tmp_path, [TASK]), out)
    before = _tree(out)

    def crash(scenario: dict[str, Any], folder: Path) -> dict[str, Any]:
        raise ImportFailed("the disk went away")

    monkeypatch.setattr(tau2_import, "_with_catches", crash)
    with pytest.raises(ImportFailed, match="the disk went away"):
        import_tau2(_source(tmp_path, [TASK, _task(id="1")]), out)
    assert _tree(out) == before  # db.sql.gz was written in the staging folder only
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_an_out_folder_whose_name_is_no_domain_name_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "Tau2-Retail"
    out.mkdir()
    with pytest.raises(ImportFailed, match="must be a plain identifier"):
        import_tau2(_source(tmp_path, [TASK]), out)


def test_a_null_field_tau2s_model_does_not_have_is_ignored_and_the_task_kept_whole(
        tmp_path: Path) -> None:
    """tau2's airline tasks carry ``"annotations": null``; tau2's model ignores the field."""
    task = _task(annotations=None, user_scenario__instructions__hint=None)
    out = _out(tmp_path)
    assert import_tau2(_source(tmp_path, [task]), out).tasks == 1
    scenario = json.loads((out / "suites" / "retail.jsonl").read_text("utf-8"))
    assert scenario["imported_from"]["task"] == task


def test_an_unknown_field_with_a_value_is_refused_without_guessing_why(tmp_path: Path) -> None:
    out = _out(tmp_path)
    before = _tree(out)
    code, stdout, stderr = cli("import", "tau2", str(_source(tmp_path, [_task(annotations=[
        "x"])])), "--out", str(out))
    assert code == 2, stdout + stderr
    assert " ".join(stderr.split()) == (
        "error: tasks.json: 0: annotations: not a field of tau2's task model at a2c0247 (tau2 "
        "ignores it); refusing to drop its value")
    assert _tree(out) == before
