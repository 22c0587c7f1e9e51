"""Meeting-room domain of the intent-change methodology (the changing-intent method)."""
