"""Where and how the process runs: the home and its paths, loopback-only hygiene, the warm
stack of ``agentsweep up`` (Ray head, Prefect server and UI), Prefect's home and phases."""
