"""Node services: servers a sweep's routes need on every Ray node, and their addresses.

A route may name a node service (``ModelRoute.node_service``): the bundled local model server
is one. ``NodeServices`` starts one actor per (service, alive node), pinned to that node, waits
until each serves, and gives back ``NodeEndpoints``: for each model, the per-call options
(``api_base``) a worker on a given node adds to its calls. Services stop with the context
(and, being actors of the driver's job, with the driver).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from pipeline.models.routes import ModelRoute
from pipeline.runtime.hygiene import WORKER_ENV

START_TIMEOUT_S = 1800.0
"""Generous: the first start on a node may fetch and assemble a model's weights."""


@dataclass(frozen=True)
class NodeEndpoints:
    """model name -> node id -> per-call options of that node's service."""

    by_model: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)

    def params_for(self, model: str, node_id: str) -> Mapping[str, Any] | None:
        nodes = self.by_model.get(model)
        if nodes is None:
            return {}
        return nodes.get(node_id)


class NodeServiceError(RuntimeError):
    """A node service could not be started (weights missing, runtime not installed...)."""


class NodeServices:
    """Start the node services of ``routes`` on every alive node of the connected Ray."""

    def __init__(self, ray: Any, routes: Mapping[str, ModelRoute],
                 on_status: Callable[[str], None] | None = None) -> None:
        self.ray = ray
        self.routes = routes
        self.on_status = on_status or (lambda _: None)
        self.actors: list[Any] = []
        self.fingerprints: dict[str, str] = {}

    def __enter__(self) -> NodeEndpoints:
        services = sorted({r.node_service for r in self.routes.values() if r.node_service})
        if not services:
            return NodeEndpoints()
        addresses = {service: self._start(service) for service in services}
        return NodeEndpoints({
            model: {node: {"api_base": url} for node, url in addresses[route.node_service].items()}
            for model, route in self.routes.items() if route.node_service
        })

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        from pipeline.execution.head import RayHeadLost

        if isinstance(value, RayHeadLost):  # its actors went with the head
            self.actors = []
            return
        for actor in self.actors:
            try:
                self.ray.kill(actor, no_restart=True)
            except Exception:  # Ray is already gone: its actors went with it
                pass
        self.actors = []

    def _start(self, service: str) -> dict[str, str]:
        """node id -> api_base of ``service`` on every alive node."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        kind, _, name = service.partition(":")
        if kind != "local-model":
            raise NodeServiceError(f"unknown node service {service!r}")
        from pipeline.local.host import LocalModelHost
        from pipeline.local.server import ServeOptions

        nodes = [n for n in self.ray.nodes() if n.get("Alive")]
        self.on_status(f"starting {service} on {len(nodes)} node(s)")
        pending = {}
        for node in nodes:
            cpus = int(node["Resources"].get("CPU", 1))
            actor = self.ray.remote(LocalModelHost).options(
                num_cpus=0, max_restarts=0, max_concurrency=4,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
                runtime_env={"env_vars": _service_env()},
            ).remote()
            self.actors.append(actor)
            pending[node["NodeID"]] = actor.start.remote(name, ServeOptions.for_cpus(cpus))
        try:
            urls = dict(zip(pending, self.ray.get(list(pending.values()),
                                                  timeout=START_TIMEOUT_S), strict=True))
        except self.ray.exceptions.RayTaskError as exc:
            raise NodeServiceError(f"{service}: {exc.cause if exc.cause else exc}") from None
        self.fingerprints[service] = str(self.ray.get(self.actors[-1].fingerprint.remote()))
        return urls


def _service_env() -> dict[str, str]:
    env = {**WORKER_ENV, "OMP_WAIT_POLICY": "PASSIVE"}
    for key in ("AGENTSWEEP_MODEL_CACHE", "XDG_CACHE_HOME", "HOME"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    return env


@contextmanager
def serve_here(service: str, slots: int = 1) -> Iterator[str]:
    """Run ``service`` in this process for the block (a command that calls a model outside
    a sweep: ``judge run`` with a local judge); yields its ``api_base``."""
    kind, _, name = service.partition(":")
    if kind != "local-model":
        raise NodeServiceError(f"unknown node service {service!r}")
    from pipeline.local.host import LocalModelHost
    from pipeline.local.server import ServeOptions

    host = LocalModelHost()
    threads = max(1, os.cpu_count() or 1)
    try:
        yield host.start(name, ServeOptions(slots=slots, threads=threads))
    finally:
        host.stop()
