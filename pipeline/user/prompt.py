"""The user simulator's prompt and its end signals (a leaf module: the reference models read
the stop signal too). The prompt is ours; its hash is part of a simulated trial's identity."""

from __future__ import annotations

from pipeline.util.hashing import sha256_text

USER_MAX_TURNS = 30
"""Turns a simulated user may speak by default (``--user-max-turns``)."""
STOP = "###STOP###"
"""The simulated user ends the dialog by saying this (in a message of its own, or at its end)."""
TRANSFER = "###TRANSFER###"
"""It says this once the agent has transferred it to a human agent: the dialog ends normally."""
OUT_OF_SCOPE = "###OUT-OF-SCOPE###"
"""It says this when its instructions do not tell it how to go on: the dialog ends normally."""
END_SIGNALS = (STOP, TRANSFER, OUT_OF_SCOPE)
"""Any of these ends a simulated dialog normally (tau2's three user stop tokens)."""
GREETING = "Hi! How can I help you today?"
"""The agent's opening line, as the simulator hears it (the agent itself never says it)."""
AGENT_PREFIX = "Agent: "
"""How the simulator hears the agent: each of its messages under this prefix (so that a small
model does not take the agent's part)."""
PROMPT = f"""You play a customer talking to a customer service agent. You are the customer,
never the agent: the agent's messages reach you starting with "{AGENT_PREFIX.strip()}"; you answer
with only what the customer says, without any prefix. Follow the instructions below: say only
what they let you know, one step at a time, in your own words, as a person would; never invent
facts the instructions do not give.

When your request is done, or it cannot be done, or the instructions say to end the
conversation, answer with {STOP} alone. When the agent has transferred you to a human agent,
answer with {TRANSFER} alone. When the instructions do not tell you enough to go on, answer
with {OUT_OF_SCOPE} alone.

Instructions:
{{instructions}}"""
OPENING_CUE = ("(Now write the customer's reply: one or two sentences, in the first person, "
               "saying why you are calling.)")
"""Said after the agent's greeting. Without it the bundled 1.5B model answered the greeting with
the greeting itself, on every task tried (measured: docs/tau2.md)."""
REPLY_CUE = ("(Now write the customer's reply: one or two sentences, in the first person, "
             "answering the agent with the facts you know. When the agent has done everything "
             "you asked for, write only " + STOP + "; when it has transferred you to a human "
             "agent, write only " + TRANSFER + ".)")
"""Said after each later agent message, so the simulator answers as the customer."""
PROMPT_SHA256 = sha256_text("\n\n".join((PROMPT, GREETING, AGENT_PREFIX, OPENING_CUE, REPLY_CUE)))
"""The hash of everything the simulator is told besides the instructions and the dialog."""
