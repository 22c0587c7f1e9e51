"""The trials a sweep has left to run, as a lazy sequence walked from the grid.

A night's grid has millions of trials; a resume's plan must not hold a spec for each one left
(every spec keeps its own objects), nor walk the whole grid before its first trial starts. So
the plan keeps a way to walk the grid, in its stable order, skipping the done trials
(``pipeline.sweep.done``), and the driver's loop pulls specs from it as room frees up
(pipeline.execution.dispatch). It is a ``Sequence`` for the callers that index or count it (tests,
benchmarks): those walk it, and a count is remembered once a walk has ended.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import overload

from pipeline.trial.spec import TrialSpec


class PendingSpecs(Sequence[TrialSpec]):
    """Specs yielded by ``walk()`` (each call a fresh walk of the grid, the same specs in the
    same order); ``expected`` is their count as known without a walk."""

    def __init__(self, walk: Callable[[], Iterator[TrialSpec]], expected: int) -> None:
        self._walk = walk
        self.expected = expected
        """Grid trials less the run's final trials: the count when every final trial of the
        run is in this grid (a resume of the grid the run recorded), else fewer."""
        self._count: int | None = None
        self._any: bool | None = None
        self._begun: tuple[TrialSpec, Iterator[TrialSpec]] | None = None
        """The walk ``bool()`` began (its first spec, and the rest), for the next iteration:
        a resume whose done trials come first does not skip them twice."""

    def __iter__(self) -> Iterator[TrialSpec]:
        begun, self._begun = self._begun, None
        walk = self._walk() if begun is None else itertools.chain((begun[0],), begun[1])
        count = 0
        for spec in walk:
            count += 1
            yield spec
        self._count = count

    def __len__(self) -> int:
        """Exact: a walk when none has ended yet (the driver never asks; it uses ``expected``)."""
        if self._count is None:
            self._count = sum(1 for _ in self._walk())
        return self._count

    def __bool__(self) -> bool:
        """Any trial left: the walk stops at the first one."""
        if self._count is not None:
            return self._count > 0
        if self._any is None:
            walk = self._walk()
            first = next(walk, None)
            self._any = first is not None
            if first is not None:
                self._begun = (first, walk)
        return self._any

    @overload
    def __getitem__(self, index: int) -> TrialSpec: ...

    @overload
    def __getitem__(self, index: slice) -> list[TrialSpec]: ...

    def __getitem__(self, index: int | slice) -> TrialSpec | list[TrialSpec]:
        if isinstance(index, slice):
            if all(v is None or v >= 0 for v in (index.start, index.stop, index.step)):
                return list(islice(self._walk(), index.start, index.stop, index.step))
            return list(self)[index]
        if index < 0:
            return list(self)[index]
        found = next(islice(self._walk(), index, None), None)
        if found is None:
            raise IndexError(f"pending trial {index} of {len(self)}")
        return found


def expected_count(specs: Sequence[TrialSpec]) -> int:
    """How many specs a plan's pending trials are, without walking a lazy one."""
    return specs.expected if isinstance(specs, PendingSpecs) else len(specs)
