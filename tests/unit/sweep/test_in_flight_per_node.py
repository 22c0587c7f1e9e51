"""The in-flight limit can grow with the cluster: ``in_flight_per_node`` (spec key, option
``--in-flight-per-node``) trials for each alive node with a CPU, counted when the sweep starts,
in place of ``max_in_flight``; giving both is refused before anything runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE
from typer.testing import CliRunner

from pipeline.sweep.config import SweepConfig
from pipeline.sweep.spec import load_spec
from pipeline.sweep.stages import in_flight_limit


class Cluster:
    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        self._nodes = nodes

    def nodes(self) -> list[dict[str, Any]]:
        return self._nodes


NODES = [{"Alive": True, "Resources": {"CPU": 8.0}}, {"Alive": True, "Resources": {"CPU": 2.0}},
         {"Alive": False, "Resources": {"CPU": 8.0}},  # gone
         {"Alive": True, "Resources": {"memory": 1.0}},  # no CPU: runs no trial
         {"Alive": True, "Resources": {"CPU": 4.0}}]


def test_the_limit_is_per_alive_node_with_a_cpu_else_max_in_flight(tmp_path: Path) -> None:
    per_node = SweepConfig(suites=[MEETING_SUITE], warehouse=tmp_path, in_flight_per_node=16)
    assert in_flight_limit(Cluster(NODES), per_node) == 48
    assert in_flight_limit(Cluster(NODES[:1]), per_node) == 16
    assert in_flight_limit(Cluster([]), per_node) == 16  # one node's worth while none is known
    whole = SweepConfig(suites=[MEETING_SUITE], warehouse=tmp_path, max_in_flight=7)
    assert in_flight_limit(Cluster(NODES), whole) == 7


def test_a_spec_carries_it_into_the_config(tmp_path: Path) -> None:
    spec = tmp_path / "night.yaml"
    spec.write_text(f"suites: [{MEETING_SUITE}]\nmodels: [{{name: reference/golden}}]\n"
                    "in_flight_per_node: 256\n")
    config = load_spec(spec, tmp_path / "wh")
    assert config.in_flight_per_node == 256


def test_the_cli_refuses_both_limits_and_a_bad_value_before_anything_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.cli import app as cli

    home = tmp_path / "home"
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    runner = CliRunner()
    both = runner.invoke(cli.app, ["run", "--suite", str(MEETING_SUITE), "--max-in-flight", "8",
                                   "--in-flight-per-node", "4"])
    assert both.exit_code == 2, both.output
    assert "--in-flight-per-node replaces --max-in-flight: give one of them" in both.stderr
    zero = runner.invoke(cli.app, ["run", "--suite", str(MEETING_SUITE),
                                   "--in-flight-per-node", "0"])
    assert zero.exit_code == 2 and "--in-flight-per-node" in zero.stderr
    assert not home.exists()
