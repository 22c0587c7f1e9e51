"""External agents under test: a Python object or an HTTP service plays each user turn, and
reaches the trial only through its model gateway and its tools bridge (docs/agents.md)."""
