"""The tau2 tasks an export's simulations refer to, read back from the imported catalog.

``agentsweep import tau2`` keeps each source task exactly as it was under the scenario's
``imported_from.task``; a tau2 results file lists those tasks beside its simulations (tau2's
``Results.tasks``), so its evaluator finds every simulation's task by id. Nothing is rebuilt
from our scenario: the task is the one tau2 wrote. A trial whose scenario is not in the
catalog, was not imported from tau2-bench, or changed since the run is refused with the
trial's suite and scenario named (a task we cannot vouch for is never exported).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pipeline.interop.tau2_import import BENCHMARK

if TYPE_CHECKING:
    from pipeline.catalog import Scenario
    from pipeline.stored.trials import ScenarioIndex


def _where(row: Mapping[str, Any]) -> str:
    return f"trial {row['trial_id']}: suite {row['suite_id']!r}, scenario {row['scenario_id']!r}"


def imported_scenario(row: Mapping[str, Any], index: ScenarioIndex) -> Scenario:
    """The trial's scenario as the catalog holds it now (ValueError: missing, not a tau2
    task, or changed since the run)."""
    found = index.find(row)
    if found is None:
        raise ValueError(f"{_where(row)}: not in the catalog (add its root with --catalog DIR)")
    scenario, sha256 = found
    if scenario.imported_from is None or scenario.imported_from.benchmark != BENCHMARK:
        raise ValueError(f"{_where(row)}: not imported from {BENCHMARK}, so it has no tau2 "
                         "task to export")
    if sha256 != row["scenario_sha256"]:
        raise ValueError(f"{_where(row)}: the scenario changed since the run (sha256 "
                         f"{str(row['scenario_sha256'])[:12]} then, {sha256[:12]} now)")
    return scenario


def tau2_tasks(rows: Iterable[Mapping[str, Any]], index: ScenarioIndex) -> list[dict[str, Any]]:
    """One source task per scenario the trials ran, in order of first appearance."""
    tasks: dict[str, dict[str, Any]] = {}
    for row in rows:
        imported = imported_scenario(row, index).imported_from
        assert imported is not None  # imported_scenario refuses the others
        tasks.setdefault(imported.task_id, dict(imported.task))
    return list(tasks.values())


def tau2_domain(tasks: Iterable[Mapping[str, Any]]) -> str:
    """tau2's domain name (``retail``), as the tasks' user instructions name it; tau2's
    evaluator builds its environment from this name (ValueError: none, or several)."""
    names = set()
    for task in tasks:
        instructions = (task.get("user_scenario") or {}).get("instructions")
        if isinstance(instructions, dict) and instructions.get("domain"):
            names.add(str(instructions["domain"]))
    if len(names) != 1:
        raise ValueError(f"the tasks name {len(names)} tau2 domains ({', '.join(sorted(names))}"
                         "): a tau2 results file holds exactly one")
    return names.pop()
