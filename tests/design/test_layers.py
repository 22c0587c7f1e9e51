"""The floor plan, enforced: arrows between the rooms of ``pipeline/`` go one way
(pipeline/README.md draws them). Every import counts, function-local and TYPE_CHECKING ones too."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers.sources import nodes
from test_design import REPO, _imports, _modules

MODULES = _modules()
GRAPH = {name: _imports(name, path, MODULES) for name, path in MODULES.items()}


def _arrows(source: str, target: str) -> list[str]:
    """``a -> b`` for every import from a module under ``source`` of one under ``target``."""
    def under(name: str, room: str) -> bool:
        return name == room or name.startswith(room + ".")
    return sorted(f"{a} -> {b}" for a, targets in GRAPH.items() if under(a, source)
                  for b in targets if under(b, target))


def _third_party(path: Path) -> set[str]:
    found = set()
    for node in nodes(path):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def test_the_graph_sees_function_local_imports() -> None:
    # cli/run.py imports flows.sweep inside a function only
    assert "flows.sweep" in GRAPH["pipeline.cli.run"]


def test_only_the_cli_imports_flows() -> None:
    rooms = {a.split(" -> ")[0].split(".")[1] for a in _arrows("pipeline", "flows")}
    assert rooms == {"cli"}


def test_only_the_cli_and_decide_import_reports() -> None:
    """``decide`` is compare/gate over stored runs: the statistics it calls live in reports/."""
    rooms = {a.split(" -> ")[0].split(".")[1] for a in _arrows("pipeline", "reports")}
    assert rooms <= {"cli", "decide"} and "cli" in rooms


def test_flows_never_import_the_cli() -> None:
    assert _arrows("flows", "pipeline.cli") == []


def test_scoring_reaches_no_model_and_no_ray_or_litellm() -> None:
    assert _arrows("pipeline.scoring", "pipeline.models") == []
    assert _arrows("pipeline.scoring", "pipeline.reference") == []
    for name, path in MODULES.items():
        if name.startswith("pipeline.scoring"):
            assert not _third_party(path) & {"ray", "litellm"}, name


def test_the_model_layer_never_imports_the_reference_models() -> None:
    assert _arrows("pipeline.models", "pipeline.reference") == []


def test_the_catalog_finds_bundled_catalogs_by_path() -> None:
    assert _arrows("pipeline.catalog", "catalogs") == []
    assert _arrows("pipeline", "catalogs") == []


def test_lower_rooms_never_import_the_rooms_above_them() -> None:
    """Leaves import no use case: nothing below the sweep imports the sweep's stages, the
    decision, the stored-trace readers or verify."""
    lower = ("pipeline.util", "pipeline.catalog", "pipeline.scoring", "pipeline.environment",
             "pipeline.user", "pipeline.trial", "pipeline.execution", "pipeline.runtime")
    upper = ("pipeline.cli", "pipeline.decide", "pipeline.stored", "pipeline.verify",
             "pipeline.interop", "pipeline.sweep.stages", "pipeline.sweep.prepare")
    found = [arrow for low in lower for up in upper for arrow in _arrows(low, up)]
    assert found == []


def test_the_checker_sees_a_forbidden_arrow() -> None:
    assert _arrows("pipeline.cli.run", "flows") != []  # the allowed one, seen


def test_pipeline_has_about_twenty_top_level_entries() -> None:
    entries = [p.name for p in (REPO / "pipeline").iterdir()
               if p.name not in {"__pycache__", "README.md"}]
    assert len(entries) <= 21, sorted(entries)


def test_no_any_stands_in_for_our_own_types_on_the_run_path() -> None:
    """A parameter named for one of our types is annotated with it (TYPE_CHECKING imports
    break any cycle), not ``Any``."""
    ours = {"config", "outcome", "prepared", "routes", "decision", "sweep_plan", "plan"}
    found = []
    for room in ("pipeline/cli", "pipeline/sweep", "flows"):
        for path in sorted((REPO / room).rglob("*.py")):
            for node in nodes(path):
                if isinstance(node, ast.arg) and node.arg in ours and node.annotation is not None \
                        and "Any" in ast.unparse(node.annotation):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno} {node.arg}")
    assert found == []


def test_the_public_face_is_lazy_and_complete() -> None:
    """``import pipeline`` imports none of its rooms; every name of ``__all__`` resolves."""
    import subprocess
    import sys

    probe = ("import sys, pipeline; rooms = sorted(m for m in sys.modules "
             "if m.startswith('pipeline.')); print(rooms); "
             "print([n for n in pipeline.__all__ if getattr(pipeline, n, None) is None])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, cwd=REPO)
    assert done.stdout.splitlines() == ["[]", "[]"], done.stdout + done.stderr


FLOORS: dict[str, int] = {
    "pipeline.util": 0, "pipeline.trace": 0, "pipeline.errors": 0,
    "pipeline.catalog": 1, "pipeline.runtime": 1,
    "pipeline.models": 2, "pipeline.scoring": 2, "pipeline.environment": 2,
    "pipeline.local": 3, "pipeline.user": 3,
    "pipeline.trial": 4,
    "pipeline.execution": 5, "pipeline.stored": 5,
    "pipeline.sweep": 6, "pipeline.judge": 6, "pipeline.decide": 6,
    "pipeline.reference": 7,
    "pipeline.interop": 8, "pipeline.verify": 8,
    "pipeline.cli": 9,
}
"""pipeline/README.md's floor table: every room of ``pipeline/`` and its floor. A room imports
only rooms on lower floors (its own modules aside)."""


def _room(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "pipeline" and len(parts) > 1 else parts[0]


def upward(graph: dict[str, set[str]], floors: dict[str, int]) -> list[str]:
    """Every import inside ``pipeline/`` that does not point to a lower floor."""
    found = []
    for source, targets in graph.items():
        room = _room(source)
        if room not in floors:
            continue
        for target in targets:
            other = _room(target)
            if other != room and other in floors and floors[other] >= floors[room]:
                found.append(f"{source} (floor {floors[room]}) -> {target} "
                             f"(floor {floors[other]})")
    return sorted(found)


def test_every_room_of_pipeline_has_a_floor() -> None:
    rooms = {_room(m) for m in MODULES if m.startswith("pipeline.")}
    assert rooms == set(FLOORS), rooms ^ set(FLOORS)


def test_every_import_points_to_a_lower_floor() -> None:
    assert upward(GRAPH, FLOORS) == []


def test_an_import_that_runs_back_up_is_caught() -> None:
    graph = {**GRAPH, "pipeline.util.hashing": {*GRAPH["pipeline.util.hashing"],
                                                 "pipeline.cli.app"}}
    assert upward(graph, FLOORS) == [
        "pipeline.util.hashing (floor 0) -> pipeline.cli.app (floor 9)"]


def test_the_readme_draws_the_same_floors() -> None:
    """Each floor's line in pipeline/README.md names exactly its rooms."""
    text = (REPO / "pipeline" / "README.md").read_text("utf-8")
    for floor in set(FLOORS.values()):
        line = next(row for row in text.splitlines() if row.startswith(f"floor {floor}:"))
        names = line.split(":", 1)[1].strip().split("  ", 1)[0]  # before the description
        named = {w.removesuffix("/").removesuffix(".py") for w in names.split()}
        rooms = {r.removeprefix("pipeline.") for r, f in FLOORS.items() if f == floor}
        assert named == rooms, line
