"""Plan / execute / record / summarize: what flows/ calls."""
