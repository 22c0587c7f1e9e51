"""The user simulator's prompt and stop signal (a leaf module: the reference models read the
stop signal too). The prompt is ours; its hash is part of a simulated trial's identity."""

from __future__ import annotations

from pipeline.hashing import sha256_text

STOP = "###STOP###"
"""The simulated user ends the dialog by saying this (in a message of its own, or at its end)."""
GREETING = "Hi! How can I help you today?"
"""The agent's opening line, as the simulator hears it (the agent itself never says it)."""
PROMPT = f"""You play a customer talking to a customer service agent. Follow the instructions
below: say only what they let you know, one step at a time, in your own words, as a person
would; never invent facts the instructions do not give; never act as the agent.

When your request is done, or it cannot be done, or the instructions say to end the
conversation, answer with {STOP} alone.

Instructions:
{{instructions}}"""
PROMPT_SHA256 = sha256_text(PROMPT)
