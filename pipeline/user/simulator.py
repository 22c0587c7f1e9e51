"""A simulated user: a separate model, prompted with a scenario's user instructions,
that speaks until it emits one of its end signals (stop, transfer, out of scope: tau2's three) or
the turn cap is reached.

Its calls go through their own model client with purpose ``user``: recorded on the user message
events (``simulated = true``, tokens and latency), costed apart from the agent's (the trial's
``user_*`` columns), limited by the trial's deadline, and retried with the trial. A simulator
failure is never the agent's fault: any error of its call, and an empty message, raise
``InfraError("simulator_error")`` - the trial stays incomplete (left out of pass rates,
retried); a provider that refuses the simulator's configuration stops the sweep as for the
agent (ConfigError). The roles are flipped for it: the agent's replies are its user
messages, its own earlier messages its assistant messages. The scenario's instructions are data
placed in our prompt: their line separators and controls (U+2028, U+0085, ...) are escaped
(pipeline.util.untrusted), newlines and tabs kept. The prompt is ours; its hash and
the simulator's model are part of the trial's identity (pipeline.user.prompt).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.errors import AgentError, InfraError
from pipeline.models.client import ModelClient, ModelReply
from pipeline.user.prompt import (
    AGENT_PREFIX,
    END_SIGNALS,
    GREETING,
    OPENING_CUE,
    PROMPT,
    REPLY_CUE,
    USER_MAX_TURNS,
)
from pipeline.util.untrusted import escape_breaks


@dataclass(frozen=True)
class Utterance:
    text: str
    """What the user says (its end signal removed); empty when it only ended the dialog."""
    stop: bool
    reply: ModelReply


@dataclass
class UserSimulator:
    model: ModelClient
    instructions: str
    max_turns: int = USER_MAX_TURNS

    def _messages(self, agent_replies: Sequence[str], said: Sequence[str]
                  ) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = [
            {"role": "system",
             "content": PROMPT.format(instructions=escape_breaks(self.instructions))},
            {"role": "user", "content": f"{AGENT_PREFIX}{GREETING}\n\n{OPENING_CUE}"}]
        for mine, theirs in zip(said, agent_replies, strict=True):
            messages += [{"role": "assistant", "content": mine},
                         {"role": "user", "content": f"{AGENT_PREFIX}{theirs}\n\n{REPLY_CUE}"}]
        return messages

    def speak(self, turn: int, agent_replies: Sequence[str], said: Sequence[str]) -> Utterance:
        """The user's next message, after the agent's replies so far (one per earlier turn)."""
        try:
            reply = self.model.complete(self._messages(agent_replies, said), None,
                                        purpose="user", turn=turn)
        except (InfraError, AgentError) as exc:  # a provider refusing its config stops the sweep
            failed = exc if isinstance(exc, InfraError) else None
            raise InfraError("simulator_error", f"user simulator, turn {turn}: {exc}",
                             failed.retry_after_s if failed else None,
                             failed.kind if failed else None) from exc
        text = (reply.content or "").strip()
        stop = any(signal in text for signal in END_SIGNALS)
        for signal in END_SIGNALS:
            text = text.replace(signal, "")
        text = text.strip()
        if not text and not stop:
            raise InfraError("simulator_error", f"user simulator, turn {turn}: an empty "
                                                "message without an end signal")
        return Utterance(text, stop, reply)
