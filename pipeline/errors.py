"""Closed sets of error kinds. Infrastructure errors never count against the agent."""

from __future__ import annotations

from typing import Literal

InfraErrorKind = Literal[
    "rate_limit", "timeout", "connection", "server_error", "overloaded", "harness_error"
]
AgentErrorKind = Literal["empty_response", "step_limit", "invalid_memory"]


class InfraError(Exception):
    """The provider or our harness failed; the trial stays incomplete and may be retried."""

    def __init__(self, kind: InfraErrorKind, message: str,
                 retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.kind: InfraErrorKind = kind
        self.retry_after_s = retry_after_s


class AgentError(Exception):
    """The agent produced something unusable; counts against the agent, never retried."""

    def __init__(self, kind: AgentErrorKind, message: str, turn: int | None = None) -> None:
        super().__init__(message)
        self.kind: AgentErrorKind = kind
        self.turn = turn
