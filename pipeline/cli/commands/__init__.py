"""The command line's commands, one module per group (``pipeline.cli.app`` wires them)."""
