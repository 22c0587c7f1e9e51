"""The simulated user: a separate model, prompted with a scenario's user instructions."""
