"""The bench verifies itself: deliberate mutants each caught by the expected check, condition
controls that must pass."""
