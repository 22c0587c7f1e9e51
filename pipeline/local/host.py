"""The local model server as a Ray actor: one per node, shared by that node's trial workers.

The server runs inside the actor's own process, so it lives exactly as long as the actor: when
the sweep ends (``ray.kill``), when the driver is interrupted or dies (Ray ends the job's actors)
or when the node goes, the server goes with it; no process of its own is left behind.
"""

from __future__ import annotations

import os

from pipeline.local.catalog import local_model
from pipeline.local.server import LocalModelServer, ServeOptions
from pipeline.local.weights import ensure_weights


class LocalModelHost:
    """Serves one local model on its node's loopback."""

    def __init__(self) -> None:
        self.server: LocalModelServer | None = None

    def start(self, model_name: str, options: ServeOptions) -> str:
        """Fetch/verify the weights, load the model, serve; returns the ``api_base``."""
        if self.server is None:
            spec = local_model(f"local/{model_name}")
            self.server = LocalModelServer(spec, ensure_weights(spec), options).start()
        return self.server.api_base

    def fingerprint(self) -> str:
        return self.server.fingerprint if self.server is not None else ""

    def pid(self) -> int:
        return os.getpid()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
