"""The model layer: model configuration, the LiteLLM client (options per call, errors
classified), the provider registry and routes, call parameters, injected faults. It never
imports the reference models (they register as a provider)."""
