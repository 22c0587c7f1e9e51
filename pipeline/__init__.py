"""agentsweep's evaluation core: catalog, grid, sandbox, agent loop, checks, trial runner."""
