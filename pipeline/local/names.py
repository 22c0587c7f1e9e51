"""How a sweep names a local model: ``local/<name>`` or ``local/<alias>``."""

LOCAL_PROVIDER = "local"
DEFAULT_ALIAS = "default"
DEFAULT_MODEL = f"{LOCAL_PROVIDER}/{DEFAULT_ALIAS}"
