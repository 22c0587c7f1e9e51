from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import MEETING_SUITE
from typer.testing import CliRunner

from pipeline.catalog import CatalogError, bundled_suites, load_domain, load_suite
from pipeline.cli.app import app


def _lines() -> list[dict]:
    return [json.loads(line) for line in MEETING_SUITE.read_text("utf-8").splitlines()]


def _write(tmp_path: Path, rows: list[object]) -> Path:
    path = tmp_path / "suite.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)
                              for r in rows) + "\n", "utf-8")
    return path


def test_bundled_suites_load_with_hashes() -> None:
    suites = [load_suite(p) for p in bundled_suites()]
    ids = {s.scenario.id for suite in suites for s in suite.scenarios}
    assert {"V1", "V3", "F1", "C1"} <= ids
    for suite in suites:
        assert len(suite.sha256) == 64
        assert all(len(s.sha256) == 64 for s in suite.scenarios)


def test_a_suite_is_parsed_again_only_when_its_bytes_change(tmp_path: Path) -> None:
    rows = _lines()
    path = _write(tmp_path, rows)
    first = load_suite(path)
    assert load_suite(path) is first  # the same bytes: the same parse
    rows[0]["turns"][0]["golden"][0]["call"]["name"] = "no_such_tool"
    _write(tmp_path, rows)
    with pytest.raises(CatalogError) as raised:
        load_suite(path)
    assert (raised.value.line, raised.value.field) == (1, "turns.0.golden.0.call.name")
    _write(tmp_path, _lines())
    assert load_suite(path).sha256 == first.sha256


def test_meeting_rooms_domain_has_the_seed_rooms() -> None:
    domain = load_domain("meeting_rooms")
    rooms = {r["id"]: r for r in domain.seed_state["rooms"]}
    assert set(rooms) == {"amber", "birch", "cedar"}
    assert [rooms[r]["capacity"] for r in ("amber", "birch", "cedar")] == [6, 8, 12]
    assert domain.tool("reserve_room").kind == "write"  # type: ignore[union-attr]
    assert domain.tool("search_rooms").kind == "read"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("mutate", "line", "field"),
    [
        (lambda rows: rows.insert(1, "{not json"), 2, "-"),
        (lambda rows: rows[2].pop("version"), 3, "-"),
        (lambda rows: rows[0].update(surprise=1), 1, "-"),
        (lambda rows: rows[1]["turns"][0].update(user=""), 2, "turns.0.user"),
        (lambda rows: rows[0]["turns"][0]["golden"][0]["call"].update(name="launch_rockets"),
         1, "turns.0.golden.0.call.name"),
        (lambda rows: rows[0]["turns"][0]["golden"][0]["call"]["arguments"].update(capacity="12"),
         1, "turns.0.golden.0.call.arguments.capacity"),
        (lambda rows: rows[3].update(id=rows[0]["id"]), 4, "id"),
        (lambda rows: rows[0]["turns"][0]["golden"].pop(), 1, "turns.0.golden"),
        (lambda rows: rows[0].update(domain="nowhere"), 1, "domain"),
        (lambda rows: rows[0]["expectations"]["required_tools"][0].update(tool="teleport"), 1,
         "expectations.required_tools.0.tool"),
        (lambda rows: rows[0]["expectations"]["argument_constraints"][0].update(
            argument="colour"), 1, "expectations.argument_constraints.0.argument"),
        (lambda rows: rows[0]["expectations"]["argument_constraints"][1].update(equals="six"),
         1, "expectations.argument_constraints.1.argument"),
        (lambda rows: rows[0]["expectations"]["fresh_calls"][0]["arguments"].update(floor=3),
         1, "expectations.fresh_calls.0.arguments.floor"),
    ],
    ids=["json", "missing-field", "extra-field", "empty-user", "unknown-tool", "bad-argument",
         "duplicate-id", "no-reply", "unknown-domain", "expectation-tool",
         "expectation-argument", "expectation-value", "fresh-call-argument"],
)
def test_bad_line_names_file_line_and_field(tmp_path: Path, mutate, line: int,
                                            field: str) -> None:
    rows: list[object] = list(_lines())
    mutate(rows)
    path = _write(tmp_path, rows)
    with pytest.raises(CatalogError) as caught:
        load_suite(path)
    error = caught.value
    assert error.path == str(path)
    assert error.line == line
    if field != "-":
        assert error.field.startswith(field), str(error)
    assert str(error).startswith(f"{path}:{line}: ")


def test_run_with_broken_suite_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    rows: list[object] = list(_lines())
    rows.insert(2, '{"id": "X1", "version": 1}')
    path = _write(tmp_path, rows)
    root = Path(__import__("os").environ["AGENTSWEEP_HOME"]) / "warehouse"
    before = sorted(root.rglob("*")) if root.exists() else []
    result = CliRunner().invoke(app, ["run", "--suite", str(path), "--run-id", "broken"])
    assert result.exit_code == 2, result.output
    assert f"{path}:3:" in result.output
    after = sorted(root.rglob("*")) if root.exists() else []
    assert after == before


def test_every_bad_line_of_a_suite_is_reported_in_one_pass(tmp_path: Path) -> None:
    rows: list[object] = list(_lines())
    assert isinstance(rows[0], dict) and isinstance(rows[1], dict)
    rows[0]["titel"] = rows[0].pop("title")
    rows[1]["class"] = "reveall"
    rows.insert(3, "{not json")
    path = _write(tmp_path, rows)
    with pytest.raises(CatalogError) as caught:
        load_suite(path)
    assert str(caught.value).splitlines() == [
        f"{path}:1: titel: unknown key; did you mean 'title'?",
        f"{path}:2: class: 'reveall' is not one of reveal, revision, function_switch, control, "
        "regression, condition, imported; did you mean 'reveal'?",
        f"{path}:4: invalid JSON at column 2: Expecting property name enclosed in double quotes"]


def test_errors_of_a_file_are_listed_up_to_a_limit(tmp_path: Path) -> None:
    from pipeline.catalog.errors import MAX_ERRORS

    rows: list[object] = ["{not json"] * (MAX_ERRORS + 5)
    path = _write(tmp_path, rows)
    with pytest.raises(CatalogError) as caught:
        load_suite(path)
    lines = str(caught.value).splitlines()
    assert len(lines) == MAX_ERRORS + 1
    assert lines[-1] == f"{path}: ... and 5 more mistake(s)"


def test_a_misspelt_tool_or_argument_gets_its_closest_name(tmp_path: Path) -> None:
    rows: list[dict] = _lines()
    rows[0]["turns"][0]["golden"][0]["call"]["name"] = "search_room"
    rows[1]["expectations"]["argument_constraints"][0]["argument"] = "capacty"
    path = _write(tmp_path, list(rows))
    with pytest.raises(CatalogError) as caught:
        load_suite(path)
    first, second = str(caught.value).splitlines()
    assert first.startswith(f"{path}:1: turns.0.golden.0.call.name: unknown tool 'search_room'")
    assert first.endswith("; did you mean 'search_rooms'?")
    assert second.startswith(f"{path}:2: expectations.argument_constraints.0.argument: "
                             "'capacty' is not a parameter")
    assert second.endswith("; did you mean 'capacity'?")
