"""A sweep from configuration to outcome: config and spec, the grid, preflight and ``prepare``
(one way in for every door), the plan / execute / record / summarize stages, progress."""
