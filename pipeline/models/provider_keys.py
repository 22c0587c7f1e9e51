"""The environment key each well-known LiteLLM provider needs, known without importing LiteLLM
(its import costs seconds): a missing key is refused at once. LiteLLM stays the authority: a
provider not listed here is checked by LiteLLM itself (``sweep.preflight``), and a test holds
this table against LiteLLM's own ``validate_environment``."""

from __future__ import annotations

KEYS_OF_PROVIDER: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "groq": "GROQ_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
}


def missing_key(litellm_model: str, environ: dict[str, str]) -> str | None:
    """The key ``litellm_model`` (``<provider>/<model>``) needs and ``environ`` lacks; None when
    it is set or the provider is not listed (LiteLLM decides then)."""
    provider, slash, _ = litellm_model.partition("/")
    key = KEYS_OF_PROVIDER.get(provider) if slash else None
    return key if key is not None and not environ.get(key) else None
