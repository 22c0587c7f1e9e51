"""One way into a sweep for every door: ``agentsweep run``, the nightly and model-swap flows and
a Prefect deployment all call ``prepare(config)`` before their first trial.

``prepare`` finds every mistake that can be known before a trial runs (``sweep.preflight.check``:
free space, an existing run, the Ray address, suites, models and their keys, prompts,
memory modes, the user model; ``BadInput``, exit 2, nothing written), decides the default memory
modes, attaches to the warm stack of ``agentsweep up`` when one runs (its Prefect API and Ray),
fetches and verifies local model weights on a local Ray, and conceals credentials in the config
(Prefect stores flow parameters). The plan is computed once here; a flow program hands its
preparation to its flow run (``prepared_for``, ``sweep.handoff``), which takes the run lock
before it executes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipeline.runtime import hygiene
from pipeline.sweep.config import SweepConfig, conceal_config
from pipeline.sweep.handoff import Handed
from pipeline.sweep.preflight import BadInput, check, check_sweep_reach
from pipeline.sweep.stages import SweepPlan, plan

if TYPE_CHECKING:
    from pipeline.models.routes import ModelRoute
    from pipeline.runtime.stack import StackState

Say = Callable[[str], None]


@dataclass(frozen=True)
class PreparedSweep:
    """A checked sweep, ready for the flow: nothing in it can fail a preflight any more."""

    config: SweepConfig
    """With the stack's Ray address when attached, credentials concealed."""
    routes: tuple[ModelRoute, ...]
    plan: SweepPlan
    stack: StackState | None
    """The ``agentsweep up`` stack this process attached to, if any."""
    append: bool = False

    @property
    def where(self) -> str:
        """Where the sweep runs, in words for its first line."""
        if self.stack is not None:
            return "the local stack (agentsweep up)"
        if self.config.ray_address:
            return f"Ray at {self.config.ray_address}"
        return "an ephemeral Prefect API and a local Ray (agentsweep up keeps them warm)"


def prepare(config: SweepConfig, *, append: bool = False, say: Say = lambda _: None
            ) -> PreparedSweep:
    """Every rule of a sweep before its first trial; ``BadInput`` names the mistake. A sweep
    with nothing left to run (a finished ``--resume``) checks no key or endpoint (LiteLLM is
    not imported), attaches to nothing and fetches no weights: there is nothing to start."""
    routes = check(config, append, reach=False)
    sweep_plan = plan(config)  # trial ids hash no endpoint: the same plan once concealed
    attached = None
    if sweep_plan.pending:
        check_sweep_reach(config)  # keys and endpoints: only when a model will be called
        from pipeline.runtime import stack

        attached = None if config.ray_address else stack.attach()
        if attached is not None:
            config = config.model_copy(update={"ray_address": attached.ray_address})
        _prepare_local_models(routes, local_ray=not config.ray_address or attached is not None,
                              say=say)
        hygiene.prepare_prefect_home()
    return PreparedSweep(conceal_config(config), tuple(routes), sweep_plan, attached, append)


def prepared_for(config: SweepConfig, handed: Iterable[Handed[PreparedSweep]] = (),
                 say: Say = lambda _: None) -> PreparedSweep:
    """The sweep of ``config`` as a flow program prepared it before its flow started (a mistake
    is refused in seconds) and handed it to the flow run, else prepared now (a deployment's
    flow run is handed nothing). A preparation is taken only for the config it was made from."""
    for one in handed:
        found = one.for_config(config)
        if found is not None:
            return found
    return prepare(config, say=say)


def _prepare_local_models(routes: list[ModelRoute], local_ray: bool, say: Say) -> None:
    """Local models: runtime present; on a local Ray, weights fetched and verified up front."""
    from pipeline.local import setup
    from pipeline.local.server import runtime_installed
    from pipeline.local.weights import WeightsError

    try:
        if local_ray:
            setup.prepare(routes, progress=say)
        elif any(r.node_service for r in routes) and not runtime_installed():
            raise setup.LocalRuntimeMissing("xllamacpp is not installed on the driver")
    except (setup.LocalRuntimeMissing, WeightsError) as exc:
        raise BadInput(str(exc)) from None
