"""Run trials as Ray tasks with a bounded number in flight; results stream to a callback.

Ray is imported lazily. A local Ray is started unless an address is given (``--ray-address``
or ``RAY_ADDRESS``); see pipeline.hygiene for how its processes are kept on loopback.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from pipeline.grid import TrialSpec
from pipeline.hygiene import RAY_START_PROXY
from pipeline.trial import RunContext, TrialResult, harness_failure, run_trial

SINGLE_MACHINE_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"

# Workers get the proxy of the Ray start-up cleared, and the offline switches set.
WORKER_ENV = {
    **{key: "" for key in RAY_START_PROXY},
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_LOG": "ERROR",
}


def _run_trial_task(spec: TrialSpec, ctx: RunContext) -> TrialResult:
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    try:
        return run_trial(spec, ctx, node_id=node_id)
    except Exception as exc:  # a harness bug: recorded as such, never as an agent failure
        return harness_failure(spec, ctx, f"{type(exc).__name__}: {exc}", node_id)


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None,
                object_store_bytes: int = 256 * 1024 * 1024) -> Iterator[Any]:
    """Connect to a cluster, or start (and later stop) a local Ray kept on loopback."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    if not address:
        # A local Ray binds and dials 127.0.0.1 instead of the machine's network address.
        os.environ[SINGLE_MACHINE_SWITCH] = "0"
    import ray

    if ray.is_initialized():
        yield ray
        return
    common: dict[str, Any] = {
        "log_to_driver": False,
        "runtime_env": {"env_vars": WORKER_ENV},
        "logging_level": "WARNING",
        "configure_logging": True,
    }
    if address:
        ray.init(address=address, **common)
    else:
        saved = {k: os.environ.get(k) for k in RAY_START_PROXY}
        os.environ.update(RAY_START_PROXY)
        try:
            ray.init(num_cpus=num_cpus, include_dashboard=False,
                     object_store_memory=object_store_bytes,
                     _temp_dir=os.environ.get("RAY_TMPDIR", "/tmp/agentsweep-ray"), **common)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    try:
        yield ray
    finally:
        ray.shutdown()


def execute(specs: Iterable[TrialSpec], ctx: RunContext, on_result: Callable[[TrialResult], None],
            max_in_flight: int = 64) -> int:
    """Submit trials to the connected Ray, at most ``max_in_flight`` at once. Returns the count."""
    import ray

    remote = ray.remote(num_cpus=1, max_retries=2)(_run_trial_task)
    ctx_ref = ray.put(ctx)
    in_flight: dict[Any, TrialSpec] = {}
    done = 0

    def drain(min_left: int) -> None:
        nonlocal done
        while len(in_flight) > min_left:
            ready, _ = ray.wait(list(in_flight), num_returns=1)
            for ref in ready:
                spec = in_flight.pop(ref)
                on_result(_result_of(ray, ref, spec, ctx))
                done += 1

    for spec in specs:
        in_flight[remote.remote(spec, ctx_ref)] = spec
        drain(max_in_flight - 1)
    drain(0)
    return done


def _result_of(ray: Any, ref: Any, spec: TrialSpec, ctx: RunContext) -> TrialResult:
    try:
        result: TrialResult = ray.get(ref)
        return result
    except (ray.exceptions.RayTaskError, ray.exceptions.WorkerCrashedError,
            ray.exceptions.NodeDiedError, ray.exceptions.TaskCancelledError) as exc:
        return harness_failure(spec, ctx, f"{type(exc).__name__}: {exc}")
