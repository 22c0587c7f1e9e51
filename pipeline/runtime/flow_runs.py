"""What a flow run of ours looks like in Prefect: its name and tags (set from inside the run, so a
deployment-triggered run is named after its run id like one a program starts), and its final
state, which says the run's verdict: ``Completed`` when it admits or passes, ``Failed`` with the
verdict line and its reasons when it blocks or is incomplete, ``Cancelled`` when interrupted
(Ctrl-C, SIGTERM). Flows return these states; callers read them with ``outcome_of``."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, TypeVar

from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import State
from prefect.context import FlowRunContext
from prefect.states import Cancelled, Completed, Failed

from pipeline.errors import ExitCode

T = TypeVar("T")
MESSAGE_CHARS = 2000
"""Prefect keeps a state's message whole; a verdict with hundreds of reasons is cut here (the
reports hold every one)."""

log = logging.getLogger(__name__)


def name_this_flow_run(name: str, tags: Sequence[str]) -> None:
    """Name the current flow run and add ``tags`` to its own (a no-op outside a flow run). A
    failure to say so is logged, never the run's failure."""
    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return
    run = context.flow_run
    merged = sorted({*run.tags, *tags})
    if run.name == name and merged == sorted(run.tags):
        return
    try:
        with get_client(sync_client=True) as client:
            client.update_flow_run(run.id, name=name, tags=merged)
    except Exception as exc:  # the API is the run's own: a hiccup costs a name, not the run
        log.warning("flow run %s not renamed to %r: %s", run.id, name, exc)


def verdict_state(code: ExitCode, line: str, reasons: Sequence[str], data: T) -> State[T]:
    """The run's final state for its verdict: Completed (exit 0), else Failed with the line and
    its reasons as the message."""
    if code == ExitCode.OK:
        return Completed(message=line, data=data)
    message = "\n".join([line, *(f"- {r}" for r in reasons)])
    if len(message) > MESSAGE_CHARS:
        message = message[:MESSAGE_CHARS - 40] + "\n... (every reason: the reports)"
    return Failed(message=message, data=data)


def interrupted_state(what: str) -> State[Any]:
    """The final state of a run stopped by Ctrl-C or SIGTERM: Cancelled, not Crashed."""
    return Cancelled(message=f"interrupted: {what}")


def outcome_of(state: State[T]) -> T:
    """A flow run's result from its final state; KeyboardInterrupt when it was cancelled (the
    caller stops as Ctrl-C stops it); a failure's exception is raised as the flow raised it."""
    if state.is_cancelled():
        raise KeyboardInterrupt(state.message)
    if state.is_crashed():
        state.result()  # raises what crashed it
    data = state.result(raise_on_failure=False)
    if isinstance(data, BaseException):
        raise data
    return data
