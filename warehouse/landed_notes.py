"""The notes and lock of the steps that compact a running run (``warehouse.compact_landed``).

Kept apart so that the run's own compaction (``warehouse.compact``) can take the same lock and
finish or undo a killed step before it rewrites the run, without importing the step itself.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from warehouse.atomic import exclusive, move_file
from warehouse.schema import TABLES
from warehouse.writer import table_dir

LANDED_PREFIX = ".landed-"
"""Hidden folders (and their notes) of a step beside ``run_id=*``: never read by a query."""


@dataclass(frozen=True)
class LandedNote:
    """What a step writes beside its hidden folder before its exchange."""

    covers: list[str]
    """The part files the step replaces (by name)."""
    made: list[str]
    """The compacted files it wrote (by name)."""

    def text(self) -> str:
        return json.dumps({"covers": self.covers, "made": self.made})


def note_path(hidden: Path) -> Path:
    return hidden.with_name(hidden.name + ".json")


@contextmanager
def landed_lock(root: Path, run_id: str) -> Iterator[None]:
    """One step at a time for a run (a second waits): two exchanges would undo each other.
    The run's own compaction takes it too (``warehouse.compact.compact_run``)."""
    path = root / f"{LANDED_PREFIX}{run_id}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(path):
        yield


def recover_landed(root: Path, run_id: str) -> int:
    """A killed step of this run finished or undone; how many hidden folders were found. A
    folder with no note was never exchanged (removed); with a note, if the files it made are in
    the run's folder the exchange happened: every part in the hidden folder that the note does
    not cover and the run's folder lacks was committed late, and is moved back."""
    found = 0
    for name in TABLES:
        pattern = f"{LANDED_PREFIX}{run_id}+*"
        for hidden in sorted(p for p in table_dir(root, name).glob(pattern) if p.is_dir()):
            found += 1
            finish_step(hidden, table_dir(root, name) / f"run_id={run_id}")
        for note in table_dir(root, name).glob(pattern + ".json"):  # its folder is gone
            note.unlink()
    return found


def finish_step(hidden: Path, folder: Path) -> None:
    """One step's hidden folder dealt with (see ``recover_landed``), then removed with its
    note; ``folder``: the run's folder of the table."""
    note = note_path(hidden)
    if note.exists():
        data = json.loads(note.read_text("utf-8"))
        if all((folder / made).exists() for made in data["made"]):  # exchanged: late parts
            covered = set(data["covers"])
            for path in sorted(hidden.glob("*.parquet")):
                if path.name not in covered and not (folder / path.name).exists():
                    move_file(path, folder / path.name)
    shutil.rmtree(hidden)
    shutil.rmtree(hidden.with_name(hidden.name + "-spill"), ignore_errors=True)
    note.unlink(missing_ok=True)
