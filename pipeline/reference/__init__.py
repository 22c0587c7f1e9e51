"""Offline reference models: control agents that replay a scenario's golden actions."""

from pipeline.reference.reference import (
    REFERENCE_PROVIDER,
    REFERENCE_VARIANTS,
    ReferenceScriptError,
    reference_call_params,
    register_reference_provider,
)

__all__ = [
    "REFERENCE_PROVIDER",
    "REFERENCE_VARIANTS",
    "ReferenceScriptError",
    "reference_call_params",
    "register_reference_provider",
]
