"""What many trials share is sent to a worker once; each trial's call carries a compact spec.

A sweep's trials share their heavy parts: the scenario, the prompt, the domain folder, and the
run's context and call gates. Pickled into every actor call they were most of the driver's
time. Here the driver (``Packer``) splits a ``TrialSpec`` into a ``CompactSpec`` (the key of its
shared parts and its own small fields: ids, repeat, model, deadline...) and a ``Parcel`` of the
parts that a worker does not hold yet; the worker (``Holder``) keeps what parcels bring and
rebuilds the full spec.

A worker is taken to hold a part only once a call that carried it has returned from that worker
(the worker stores a parcel before it runs the trial): calls of a threaded actor may start in
any order, so a later call never counts on an earlier one still in flight. Until then every call
carries the part. A replaced worker (a new generation of its slot) holds nothing. A worker that
lacks a part anyway (it let go of an old run's parts) raises ``MissingParts``: the attempt is
a harness error, retried like any other, and the driver forgets what it thought that worker
held, so the retry carries its parts.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from pipeline.catalog import Prompt, Scenario
from pipeline.execution.concurrency import LimiterRef
from pipeline.execution.group_pause import BoardRef
from pipeline.execution.parts import PartsConfig
from pipeline.execution.rate_limits import RateRef
from pipeline.execution.services import NodeEndpoints
from pipeline.models.faults import FaultProfile
from pipeline.trial.run import RunContext, TrialResult
from pipeline.trial.spec import TrialSpec

SHARED_FIELDS = ("scenario", "prompt", "domain_path")
"""The TrialSpec fields held by the worker; every other field travels with each call."""
OWN_FIELDS = tuple(f.name for f in fields(TrialSpec) if f.name not in SHARED_FIELDS)
PLANS_HELD = 8
"""Runs whose parts a worker keeps (a warm worker serves run after run, maybe several at once)."""


@dataclass(frozen=True)
class GateConfig:
    """What a worker needs to build the CallGate of an attempt."""

    limiters: Mapping[str, LimiterRef]
    faults: Mapping[str, FaultProfile]
    endpoints: NodeEndpoints = field(default_factory=NodeEndpoints)
    rates: Mapping[str, RateRef] = field(default_factory=dict)
    """provider group -> its rate limiter (rpm, tpm)."""
    board: BoardRef | None = None
    """The run's pause board (429s and 529s pause a group for the whole cluster)."""


@dataclass(frozen=True)
class Plan:
    """What every trial of one execution shares."""

    ctx: RunContext
    gates: GateConfig
    parts: PartsConfig | None = None
    """Where workers write their final trials' parts (None: every result goes back to the
    driver)."""
    trial_runner: TrialRunner | None = None
    """Benchmarks only: what runs a trial in place of ``run_trial`` (``ExecuteOptions``)."""
    coroutines: bool = False
    """Trials of the built-in agent run as coroutines on the worker's event loop
    (pipeline.runtime.as_coroutine), not in its trial threads."""


TrialRunner = Callable[[TrialSpec, RunContext, str], TrialResult | Awaitable[TrialResult]]
"""A trial's body: (spec, run context, node id) -> its result (or a coroutine of it, run on
the worker's event loop)."""


@dataclass(frozen=True)
class SharedParts:
    """The heavy fields of a TrialSpec that many trials share."""

    scenario: Scenario
    prompt: Prompt
    domain_path: Path | None


@dataclass(frozen=True)
class CompactSpec:
    """A trial as its actor call carries it."""

    parts: str
    """The key of its SharedParts at the worker."""
    own: tuple[Any, ...]
    """Its values of ``OWN_FIELDS``, in that order."""


@dataclass(frozen=True)
class Parcel:
    """Parts a call brings to a worker that does not hold them yet."""

    plan: Plan | None = None
    parts: Mapping[str, SharedParts] = field(default_factory=dict)


class MissingParts(RuntimeError):
    """A worker was sent a compact spec whose parts it does not hold."""


class Packer:
    """The driver's side: compact specs, and what each worker (slot, generation) holds."""

    def __init__(self, plan: Plan) -> None:
        self.plan_id = uuid.uuid4().hex
        self.plan = plan
        self._keys: dict[tuple[int, int, int], str] = {}
        self._parts: dict[str, SharedParts] = {}
        """Keeps the shared objects alive, so that their ids stay theirs while the run lasts."""
        self._held: dict[tuple[int, int], set[str]] = {}
        """(slot, generation) -> keys it holds; the plan itself under the key ''."""

    def pack(self, spec: TrialSpec) -> CompactSpec:
        # By identity: a grid's specs share their scenario, prompt and path objects; equal
        # objects that are not the same only cost one more part.
        identity = (id(spec.scenario), id(spec.prompt), id(spec.domain_path))
        key = self._keys.get(identity)
        if key is None:
            key = self._keys[identity] = str(len(self._keys))
            self._parts[key] = SharedParts(spec.scenario, spec.prompt, spec.domain_path)
        return CompactSpec(key, tuple(getattr(spec, name) for name in OWN_FIELDS))

    def parcel(self, slot: int, generation: int, spec: CompactSpec) -> Parcel | None:
        """What a call of this spec to this worker must bring; None: it holds everything."""
        held = self._held.get((slot, generation), set())
        plan = None if "" in held else self.plan
        if spec.parts in held:
            return None if plan is None else Parcel(plan)
        return Parcel(plan, {spec.parts: self._parts[spec.parts]})

    def confirm(self, slot: int, generation: int, parcel: Parcel) -> None:
        """A call that brought ``parcel`` returned from the worker: it holds the parts now."""
        held = self._held.setdefault((slot, generation), set())
        if parcel.plan is not None:
            held.add("")
        held.update(parcel.parts)

    def forget(self, slot: int, generation: int) -> None:
        """A call to this worker failed in Ray: assume it holds nothing."""
        self._held.pop((slot, generation), None)


class Holder:
    """The worker's side: the parts parcels brought, by run, the latest ``PLANS_HELD`` runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plans: OrderedDict[str, tuple[Plan | None, dict[str, SharedParts]]] = OrderedDict()

    def unpack(self, plan_id: str, spec: CompactSpec,
               parcel: Parcel | None) -> tuple[TrialSpec, Plan]:
        """The full spec and the run's plan; stores what ``parcel`` brings first."""
        with self._lock:
            plan, parts = self._plans.pop(plan_id, (None, {}))
            self._plans[plan_id] = (plan, parts)  # the most recently used run goes last
            if parcel is not None:
                plan = parcel.plan or plan
                parts.update(parcel.parts)
                self._plans[plan_id] = (plan, parts)
            while len(self._plans) > PLANS_HELD:
                self._plans.popitem(last=False)
            shared = parts.get(spec.parts)
        if plan is None or shared is None:
            raise MissingParts(f"this worker does not hold part {spec.parts!r} of run "
                               f"plan {plan_id}")
        own = dict(zip(OWN_FIELDS, spec.own, strict=True))
        return TrialSpec(scenario=shared.scenario, prompt=shared.prompt,
                         domain_path=shared.domain_path, **own), plan
