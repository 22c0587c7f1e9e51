"""Workers asked to import LiteLLM ahead of the trials (``agentsweep up``, and a run whose plan
calls a model through LiteLLM) have it imported before the first trial is dispatched."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.slow
def test_a_pool_asked_to_preload_has_litellm_imported_before_a_trial(ray_local: Any) -> None:
    from pipeline.execution.executor import worker_pool

    pool = worker_pool(ray_local, 1, 2)
    assert not pool.preloaded()  # nothing asked: nothing to wait for
    pool.preload()
    assert pool.preloaded(timeout_s=300)
    assert ray_local.get(pool.actors[0].preload.remote())  # imported, in the worker itself
