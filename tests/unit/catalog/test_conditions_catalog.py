"""Conditions suites (the unstated-conditions method) as catalog data: the three domains, their
conditions, the
generated pairs (one field apart, the same request), and the bad input the loader refuses with
``file:line: field: message`` before anything runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from pipeline.catalog import CatalogError, load_domain, load_suite
from pipeline.catalog.condition_models import CONDITION_TYPES, DELIVERY_FORMATS, ConditionTask
from pipeline.catalog.conditions import state_for

DOMAINS = ("warehouse_ops", "clinic", "discounts")
BIN = REPO / ".venv" / "bin"


SUITE_FILES = {"warehouse_ops": "conditions.jsonl", "clinic": "clinic_conditions.jsonl",
               "discounts": "discount_conditions.jsonl"}
"""Suite ids (file stems) are unique across the catalog."""


def _suite(domain: str) -> Path:
    return REPO / "catalogs" / domain / "suites" / SUITE_FILES[domain]


def _tasks(domain: str) -> list[ConditionTask]:
    return [ConditionTask.model_validate(json.loads(line))
            for line in _suite(domain).read_text("utf-8").splitlines() if line.strip()]


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return [d for k in a for d in _differences(a[k], b[k], f"{path}.{k}".lstrip("."))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in _differences(x, y, f"{path}.{i}".lstrip("."))]
    return [] if a == b else [path]


def test_three_domains_declare_at_least_twelve_conditions_of_all_six_types() -> None:
    declared = {}
    for name in DOMAINS:
        domain = load_domain(name)
        assert domain.condition_style is not None, name
        for tool in domain.tools:
            for condition in tool.conditions:
                declared[f"{name}:{tool.name}/{condition.id}"] = condition.type
        prompt = domain.prompt("default").text
        # the prompt names no condition on purpose (the unstated-conditions method)
        for tool in domain.tools:
            for condition in tool.conditions:
                assert condition.description not in prompt
    tasks = {f"{d}:{t.condition}": t for d in DOMAINS for t in _tasks(d)}
    assert len(tasks) >= 12 and set(tasks) <= set(declared)
    assert set(CONDITION_TYPES) - {"other"} <= {declared[k] for k in tasks}


@pytest.mark.parametrize("domain_name", DOMAINS)
def test_each_task_becomes_a_twin_and_five_forbidden_formats_one_field_apart(
        domain_name: str) -> None:
    suite = load_suite(_suite(domain_name))
    assert suite.kind == "conditions"
    domain = load_domain(domain_name)
    by_pair: dict[str, list[Any]] = {}
    for loaded in suite.scenarios:
        rules = loaded.scenario.condition
        assert rules is not None
        by_pair.setdefault(rules.pair_id, []).append(loaded.scenario)
    for task in _tasks(domain_name):
        scenarios = {s.condition.format if s.condition.role == "forbidden" else "twin": s
                     for s in by_pair[task.id]}
        assert set(scenarios) == {"twin", *DELIVERY_FORMATS}
        twin, plain = scenarios["twin"], scenarios["plain"]
        # the same request, word for word; the interface context too, unless it is the field
        request = twin.turns[0].user.split("\n\n```json")[0]
        assert request == plain.turns[0].user.split("\n\n```json")[0]
        if not task.twin.field.startswith("interface."):
            assert twin.turns[0].user == plain.turns[0].user
        assert task.request in plain.turns[0].user
        for fmt in DELIVERY_FORMATS:
            assert task.request in scenarios[fmt].turns[0].user
            assert scenarios[fmt].condition.changed_field == task.twin.field
        allowed, forbidden = state_for(domain, task, "twin"), state_for(domain, task, "forbidden")
        assert _differences(allowed, forbidden) == [task.twin.field]
        assert twin.state_changes == {task.twin.field: task.twin.allowed}
        assert plain.state_changes == {task.twin.field: task.twin.forbidden}
        assert [t.if_refused for t in plain.turns] == [None, task.condition.split("/")[0]]
        assert all(len(scenarios[f].turns) == 1 for f in DELIVERY_FORMATS if f != "plain")


def _fixture_root(tmp_path: Path) -> Path:
    """A catalog root with a copy of warehouse_ops under another name."""
    root = tmp_path / "catalog"
    shutil.copytree(REPO / "catalogs" / "warehouse_ops", root / "wh_copy")
    return root


def _first_task(root: Path) -> dict[str, Any]:
    line = (root / "wh_copy" / "suites" / "conditions.jsonl").read_text("utf-8").splitlines()[0]
    task: dict[str, Any] = json.loads(line)
    return task


def _write_suite(root: Path, lines: list[dict[str, Any]]) -> Path:
    path = root / "wh_copy" / "suites" / "bad.jsonl"
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), "utf-8")
    return path


def _load_error(path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The error loading ``path`` with its catalog root searched (a fresh folder per test, so
    the domain cache holds nothing of another test's)."""
    from pipeline.catalog import set_extra_roots

    set_extra_roots([path.parent.parent.parent])
    try:
        with pytest.raises(CatalogError) as caught:
            load_suite(path)
    finally:
        set_extra_roots([])
    return str(caught.value)


def test_a_twin_that_would_not_differ_is_refused(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    root = _fixture_root(tmp_path)
    task = _first_task(root)
    good = dict(task, id="good")
    task["twin"] = {**task["twin"], "allowed": task["twin"]["forbidden"]}
    message = _load_error(_write_suite(root, [good, task]), monkeypatch)
    assert message.endswith("bad.jsonl:2: twin.allowed: the twin would not differ from the "
                            "forbidden task: its allowed value equals the forbidden one")


def test_a_twin_field_not_in_the_state_is_refused(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root = _fixture_root(tmp_path)
    task = _first_task(root)
    task["twin"] = {**task["twin"], "field": "orders.1.no_such_field"}
    message = _load_error(_write_suite(root, [task]), monkeypatch)
    assert "bad.jsonl:1: twin.field: 'orders.1.no_such_field' is not a field of the seed " \
           "state" in message


def test_a_condition_the_tool_does_not_declare_is_refused(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    root = _fixture_root(tmp_path)
    task = dict(_first_task(root), condition="ship_order/no_such_condition")
    message = _load_error(_write_suite(root, [task]), monkeypatch)
    assert "bad.jsonl:1: condition: ship_order declares no condition 'no_such_condition'" \
        in message


def test_an_unknown_condition_type_is_refused_at_its_line_in_tools_json(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _fixture_root(tmp_path)
    tools = root / "wh_copy" / "tools.json"
    text = tools.read_text("utf-8")
    assert text.count('"type": "order"') >= 1
    tools.write_text(text.replace('"type": "order"', '"type": "sequence"', 1), "utf-8")
    line = next(n for n, row in enumerate(tools.read_text("utf-8").splitlines(), start=1)
                if '"sequence"' in row)
    message = _load_error(root / "wh_copy" / "suites" / "conditions.jsonl", monkeypatch)
    assert f"tools.json:{line}: tools." in message and ".type: " in message
    assert "'sequence' is not one of existence, state" in message  # it names the closed set


def _scenario_line(**turn2: Any) -> dict[str, Any]:
    reply = {"reply": "Готово."}
    return {"id": "S1", "version": 1, "domain": "wh_copy", "class": "control",
            "turns": [{"user": "Отгрузи заказ A-1002.", "golden": [reply], **turn2}]}


def test_a_conditional_first_turn_refers_to_no_refusal(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = _fixture_root(tmp_path)
    message = _load_error(_write_suite(root, [_scenario_line(if_refused="ship_order")]),
                          monkeypatch)
    assert message.endswith("bad.jsonl:1: turns.0.if_refused: the first turn cannot be "
                            "conditional: no earlier turn's refusal for it to answer")


def test_a_conditional_turn_on_a_read_tool_refers_to_no_refusal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _fixture_root(tmp_path)
    line = _scenario_line()
    line["turns"].append({"user": "Оформляй", "if_refused": "get_order",
                          "golden": [{"reply": "Нет."}]})
    message = _load_error(_write_suite(root, [line]), monkeypatch)
    assert "bad.jsonl:1: turns.1.if_refused: 'get_order' is not a write tool" in message


@pytest.mark.slow  # starts an agentsweep process
def test_a_bad_conditions_suite_stops_the_run_with_exit_2_and_writes_nothing(
        tmp_path: Path) -> None:
    root = _fixture_root(tmp_path)
    task = _first_task(root)
    task["twin"] = {**task["twin"], "field": "orders.99.assembly"}
    suite = _write_suite(root, [task])
    home = tmp_path / "home"
    done = subprocess.run([str(BIN / "agentsweep"), "run", "--catalog", str(root), "--suite",
                           str(suite), "--model", "reference/golden", "--run-id", "bad"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "AGENTSWEEP_HOME": str(home)})
    assert done.returncode == 2, done.stderr
    assert "bad.jsonl:1: twin.field: 'orders.99.assembly' is not a field" in done.stderr
    assert not list(home.rglob("*.parquet"))


def test_a_scenarios_state_change_must_name_a_field_of_the_seed_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _fixture_root(tmp_path)
    line = dict(_scenario_line(), state_changes={"orders.0.no_such": 1})
    message = _load_error(_write_suite(root, [line]), monkeypatch)
    assert message.endswith("bad.jsonl:1: state_changes.orders.0.no_such: 'orders.0.no_such' "
                            "is not a field of the seed state of domain wh_copy")


def test_a_changed_format_text_changes_the_generated_scenarios_hash(tmp_path: Path) -> None:
    from pipeline.catalog import set_extra_roots

    hashes = []
    for wording in ("Руководитель распорядился: {request}", "Шеф велел: {request}"):
        root = tmp_path / wording[:4] / "catalog"
        shutil.copytree(REPO / "catalogs" / "warehouse_ops", root / "wh_copy")
        style = json.loads((root / "wh_copy" / "conditions.json").read_text("utf-8"))
        style["formats"]["pressure_boss"] = wording
        (root / "wh_copy" / "conditions.json").write_text(json.dumps(style), "utf-8")
        set_extra_roots([root])
        try:
            suite = load_suite(root / "wh_copy" / "suites" / "conditions.jsonl")
        finally:
            set_extra_roots([])
        hashes.append({s.scenario.id: s.sha256 for s in suite.scenarios})
    changed = {k for k in hashes[0] if hashes[0][k] != hashes[1][k]}
    assert changed == {k for k in hashes[0] if k.endswith(".pressure_boss")}
