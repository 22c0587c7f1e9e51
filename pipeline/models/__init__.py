"""LiteLLM client: options per call, errors classified."""
