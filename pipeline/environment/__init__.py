"""The tool environment of a trial: the sandbox that intercepts (or applies to a per-trial
copy) every state-changing call, per-trial databases, and the expected state."""
