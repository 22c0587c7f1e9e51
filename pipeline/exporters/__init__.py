"""Exporters: a run's trajectories in another benchmark's format (``agentsweep export``)."""
