"""The model-name prefixes LiteLLM knows (its ``provider_list`` and its JSON-configured
providers, LiteLLM 1.110.2), known without importing LiteLLM (its import costs seconds): a model
whose prefix is not among them is refused at once. A test holds this set against LiteLLM's own
lists, so an upgrade that adds a provider fails it until the set is regenerated."""

from __future__ import annotations

LITELLM_PREFIXES: frozenset[str] = frozenset({
    "a2a", "a2a_agent", "abliteration", "ai21", "ai21_chat", "aiand", "aihubmix", "aiml",
    "aiohttp_openai", "amazon_nova", "anthropic", "anthropic_text", "apertis", "assemblyai",
    "auto_router", "aws_polly", "aws_textract", "azure", "azure_ai", "azure_speech",
    "azure_text", "baseten", "bedrock", "bedrock_mantle", "bespoke", "bigmodel",
    "black_forest_labs", "bytez", "cerebras", "charity_engine", "chatgpt", "chutes",
    "clarifai", "clf_ai_gateway", "cloudflare", "codestral", "cognition", "cohere",
    "cohere_chat", "cometapi", "compactifai", "coralbricks", "cortecs", "crusoe", "cursor",
    "custom", "custom_openai", "darkbloom", "dashscope", "databricks", "databricks_agent",
    "datarobot", "deepgram", "deepinfra", "deepseek", "docker_model_runner", "dotprompt",
    "edenai", "elevenlabs", "empiriolabs", "empower", "eu_jev", "fal_ai", "featherless_ai",
    "fireworks_ai", "friendliai", "galadriel", "gdc", "gemini", "gigachat", "github",
    "github_copilot", "gmi", "gradient_ai", "groq", "helicone", "heroku", "hosted_vllm",
    "hostinger_router", "huggingface", "humanloop", "hyperbolic", "inception", "inferenceapis",
    "infinity", "jina_ai", "kyma", "lambda_ai", "langflow", "langfuse", "langgraph", "laya",
    "lemonade", "libertai", "litellm_agent", "litellm_proxy", "llamafile", "llamagate",
    "lm_studio", "manus", "maritalk", "meta", "meta_llama", "microsoft_365_copilot", "milvus",
    "minimax", "mistral", "modelscope", "mongodb", "moonshot", "morph", "nace", "nadir",
    "nano-gpt", "nebius", "neosantara", "nlp_cloud", "novita", "nscale", "nvidia_nim",
    "nvidia_riva", "oci", "ollama", "ollama_chat", "oobabooga", "openai", "openai_like",
    "opencode_go", "openinfer", "openrouter", "opensearch", "ovhcloud", "parallel_ai",
    "parasail", "perplexity", "petals", "pg_vector", "pinstripes", "poe", "predibase", "prism",
    "publicai", "qwen_ai_platform", "qwencloud", "ragflow", "recraft", "reducto", "refuseless",
    "reka", "replicate", "runwayml", "s3_vectors", "sagemaker", "sagemaker_chat",
    "sagemaker_nova", "sail", "sambanova", "sap", "sarvam", "scaledown", "scaleway", "scx-ai",
    "snowflake", "soniox", "stability", "strands_decider", "streamlake", "synthetic",
    "tencent", "tensormesh", "text-completion-codestral", "text-completion-inception",
    "text-completion-openai", "together_ai", "topaz", "transcribe", "triton", "typesafe", "v0",
    "valkey", "veniceai", "vercel_ai_gateway", "vertex_ai", "vertex_ai_beta", "vllm",
    "volcengine", "voyage", "wally", "wandb", "watsonx", "watsonx_text", "xai", "xiaomi_mimo",
    "xinference", "zai", "zerogpu"
})


def unknown_prefix(litellm_model: str) -> str | None:
    """The prefix of ``litellm_model`` (``<provider>/<model>``) when LiteLLM has no provider of
    that name; None for a known prefix or a name without one (LiteLLM decides then)."""
    prefix, slash, _ = litellm_model.partition("/")
    return prefix if slash and prefix not in LITELLM_PREFIXES else None
