"""Closed sets of error kinds. Infrastructure errors never count against the agent."""

from __future__ import annotations

from enum import IntEnum
from typing import Literal

InfraErrorKind = Literal[
    "rate_limit", "timeout", "connection", "server_error", "overloaded", "harness_error",
    "simulator_error",  # the user simulator failed: never the agent's fault
]
AgentErrorKind = Literal[
    "empty_response",    # a reply with neither text nor a tool call
    "output_truncated",  # the model hit its token limit mid-reply (finish_reason = length)
    "tool_loop",         # the same tool call, arguments and all, again and again in one turn
    "invalid_memory",    # the summary or structured-state update was unusable
    "step_limit",        # no final reply within the step limit (status: limit)
    "context_limit",     # the dialog outgrew the model's context window (status: limit)
    "turn_limit",        # a simulated user still spoke at the turn cap (status: limit)
    "agent_exception",   # an external agent's own code raised (or its service answered 5xx)
    "agent_timeout",     # an external agent did not answer a user turn within its time limit
    "agent_reply",       # an external agent answered something that is no reply (not text)
]
LIMIT_KINDS: frozenset[str] = frozenset({"step_limit", "context_limit", "turn_limit"})
"""Agent error kinds whose trial status is ``limit``; the others are ``agent_error``."""


class InfraError(Exception):
    """The provider or our harness failed; the trial stays incomplete and may be retried."""

    def __init__(self, kind: InfraErrorKind, message: str,
                 retry_after_s: float | None = None,
                 provider_kind: InfraErrorKind | None = None) -> None:
        super().__init__(message)
        self.kind: InfraErrorKind = kind
        self.retry_after_s = retry_after_s
        self.provider_kind = provider_kind
        """Of a ``simulator_error``: how the simulator's provider failed (``timeout``,
        ``connection``...), so its circuit breaker sees it; None when it answered unusably."""


class AgentError(Exception):
    """The agent produced something unusable; counts against the agent, never retried."""

    def __init__(self, kind: AgentErrorKind, message: str, turn: int | None = None) -> None:
        super().__init__(message)
        self.kind: AgentErrorKind = kind
        self.turn = turn


ConfigErrorKind = Literal["config_error"]
CONFIG_ERROR: ConfigErrorKind = "config_error"


class ConfigError(Exception):
    """The provider refused the call as configured (bad key, unknown model, a parameter it does
    not take): the trial stays incomplete, is never retried and never billed to the agent, and
    the sweep stops starting new trials (a fix and ``--resume`` runs them)."""


class ExitCode(IntEnum):
    """Every exit code of the command line and the flow programs, one closed set."""

    OK = 0
    BLOCKED = 1
    """The gate blocked, a regression was found, or a check failed."""
    BAD_INPUT = 2
    """An option, spec, catalog or configuration mistake: nothing ran (never retried)."""
    INCOMPLETE = 3
    """Trials without a final outcome (infrastructure, or a spend cap reached): resume the
    run."""
    INTERRUPTED = 130
    """Ctrl-C: what finished is saved."""
