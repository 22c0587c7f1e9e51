"""Cluster-wide concurrency per provider group (Ray actors)."""
