"""A shard of a run: which slice of the grid one driver runs when several share a run id.

``--shard I/N`` names shard I of N (1-based). The grid is partitioned by trial id: a trial
belongs to shard ``hash(trial_id) mod N``, so every driver, given the same grid, sees the same
slices whatever the grid's order, and a trial never moves between shards of the same count.
The run lock (``pipeline.execution.runlock``) is taken per shard; the warehouse sees one run.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

SHARD_PATTERN = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
MAX_SHARDS = 10_000
"""More shards than this would be more drivers than trials are worth (and lock files)."""


class Shard(BaseModel):
    """Shard ``index`` of ``count`` (1-based), as the option spells it: ``index/count``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int = Field(ge=1)
    count: int = Field(ge=1, le=MAX_SHARDS)

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        return parse_shard(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _index_in_count(self) -> Shard:
        if self.index > self.count:
            raise ValueError(f"shard {self.index} of {self.count} does not exist: give I/N "
                             f"with 1 <= I <= N (1/{self.count} .. {self.count}/{self.count})")
        return self

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def label(self) -> str:
        """The shard in a file or object name: ``1-of-2``."""
        return f"{self.index}-of-{self.count}"

    def holds(self, trial_id: str) -> bool:
        """Whether the trial is in this shard's slice of the grid."""
        return shard_of(trial_id, self.count) == self.index


def shard_of(trial_id: str, count: int) -> int:
    """The shard (1-based) of ``count`` that runs the trial: stable across processes and
    machines (a hash of the id, never Python's salted ``hash``)."""
    digest = hashlib.sha256(trial_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def parse_shard(text: str) -> dict[str, int]:
    """``"I/N"`` as the fields of a Shard; ValueError saying what the form is."""
    found = SHARD_PATTERN.match(text)
    if found is None:
        raise ValueError("give the shard as I/N, shard I of N drivers (e.g. 1/4)")
    index, count = int(found[1]), int(found[2])
    if not 1 <= count <= MAX_SHARDS:
        raise ValueError(f"the number of shards N must be from 1 to {MAX_SHARDS}")
    if not 1 <= index <= count:
        raise ValueError(f"shard {index} of {count} does not exist: give I/N with 1 <= I <= N "
                         f"(1/{count} .. {count}/{count})")
    return {"index": index, "count": count}


def from_label(label: str) -> Shard | None:
    """The shard a lock's name carries (``1-of-2``), or None for a name that is not one."""
    found = re.fullmatch(r"(\d+)-of-(\d+)", label)
    if found is None:
        return None
    try:
        return Shard(index=int(found[1]), count=int(found[2]))
    except ValueError:
        return None
