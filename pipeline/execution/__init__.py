"""Many trials on Ray: the executor and its warm workers, attempts, retry and the circuit
breaker, cluster-wide concurrency per provider group, node services, the run lock."""
