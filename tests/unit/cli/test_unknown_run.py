"""Every command that takes a run id refuses an unknown one: exit 2 and one line naming the id
and where the ids are listed (never an empty table that reads as "no failures")."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.commands import cli
from helpers.gate_fixtures import ALL, cell, write

from pipeline.errors import ExitCode

KNOWN, UNKNOWN = "known", "nosuch"
SUITE = "catalogs/meeting_rooms/suites/intent_change.jsonl"

COMMANDS: dict[str, list[str]] = {
    "report summary": ["report", "summary", "--run-id", UNKNOWN],
    "report matrix": ["report", "matrix", "--run-id", UNKNOWN],
    "report matrix csv": ["report", "matrix", "--run-id", UNKNOWN, "--format", "csv"],
    "report first_violations": ["report", "first_violations", "--run-id", UNKNOWN],
    "report failure-map": ["report", "failure-map", "--run-id", UNKNOWN],
    "report pass_hat_k": ["report", "pass_hat_k", "--run-id", UNKNOWN],
    "report html": ["report", "html", "--run-id", UNKNOWN, "-o", "{tmp}/r.html"],
    "report html --baseline": ["report", "html", "--run-id", KNOWN, "--baseline", UNKNOWN,
                               "-o", "{tmp}/r.html"],
    "show --run-id": ["show", "abc", "--run-id", UNKNOWN],
    "compare baseline": ["compare", UNKNOWN, KNOWN],
    "compare candidate": ["compare", KNOWN, UNKNOWN],
    "gate candidate": ["gate", UNKNOWN, "--baseline", KNOWN],
    "gate --baseline": ["gate", KNOWN, "--baseline", UNKNOWN],
    "rescore": ["rescore", "--run-id", UNKNOWN, "--as", "copy"],
    "checks calibrate": ["checks", "calibrate", "--labels", "{tmp}/l.jsonl", "--run-id", UNKNOWN],
    "checks export": ["checks", "export", "--run-id", UNKNOWN, "-o", "{tmp}/t.jsonl"],
    "judge run": ["judge", "run", "--run-id", UNKNOWN, "--model", "reference/judge-seed"],
    "judge export": ["judge", "export", "--run-id", UNKNOWN, "-o", "{tmp}/j.jsonl"],
    "judge calibrate": ["judge", "calibrate", "--labels", "{tmp}/l.jsonl", "--run-id", UNKNOWN],
    "export tau2": ["export", "tau2", "--run-id", UNKNOWN],
    "run --resume": ["run", "--run-id", UNKNOWN, "--resume"],
    "run --append": ["run", "--run-id", UNKNOWN, "--append", "--suite", SUITE, "--scenario",
                     "V1", "--memory-mode", "chat"],
    "run --resume with a grid": ["run", "--run-id", UNKNOWN, "--resume", "--suite", SUITE,
                                 "--scenario", "V1", "--memory-mode", "chat"],
}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("unknown-run") / "home"
    write(home / "warehouse", KNOWN, cell(KNOWN, "S", ALL))
    return home


@pytest.mark.parametrize("name", list(COMMANDS))
def test_an_unknown_run_id_exits_2_naming_it_and_the_runs_command(
        name: str, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    args = [a.replace("{tmp}", str(tmp_path)) for a in COMMANDS[name]]
    code, out, err = cli(*args)
    assert code == ExitCode.BAD_INPUT, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert f"'{UNKNOWN}'" in lines[0] and "`agentsweep runs` lists the run ids" in lines[0]
    assert out == ""
    assert not list(tmp_path.iterdir())  # nothing written


def test_the_known_run_is_reported(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check refuses only the unknown: the same command on the stored run prints its rows."""
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    code, out, err = cli("report", "matrix", "--run-id", KNOWN, "--format", "csv")
    assert code == 0, out + err
    assert out.splitlines()[1:] and "S" in out


def test_an_unknown_trial_id_says_where_trial_and_run_ids_are_listed(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    code, out, err = cli("show", "deadbeef")
    assert code == ExitCode.BAD_INPUT, out + err
    (line,) = err.strip().splitlines()
    assert line.startswith("error: no trial id starts with 'deadbeef' (")
    assert "from trials where run_id" in line and "`agentsweep runs` lists the run ids" in line


NEW_RUN_IDS = {
    "run --run-id": ["run", "--run-id", "a b", "--suite", SUITE, "--scenario", "V1",
                     "--memory-mode", "chat"],
    "rescore --as": ["rescore", "--run-id", KNOWN, "--as", "a b"],
    "warehouse compact --run-id": ["warehouse", "compact", "--run-id", "a b"],
}


@pytest.mark.parametrize("name", list(NEW_RUN_IDS))
def test_an_unusable_run_id_is_refused_where_it_enters_naming_its_option(
        name: str, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    args = NEW_RUN_IDS[name]
    code, out, err = cli(*args)
    assert code == ExitCode.BAD_INPUT, out + err
    option = args[args.index("a b") - 1]
    assert " ".join(err.split()) == (f"error: {option}: run id 'a b': use letters, digits, '.', "
                                     "'_' or '-' (at most 128 characters)")
