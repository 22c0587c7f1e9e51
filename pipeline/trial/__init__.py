"""One trial: sandbox + agent + dialog -> Trace -> scoring -> rows."""
