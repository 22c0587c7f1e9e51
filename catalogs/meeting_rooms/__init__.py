"""Meeting-room domain of the intent-change methodology (seed 000)."""
