"""The bundled local models: pinned weights, llama.cpp served on loopback, reached via LiteLLM.

``local/<name>`` in a sweep resolves (pipeline.models.routes) to LiteLLM's OpenAI-compatible path at
a server that the sweep starts on every Ray node (pipeline.execution.services, pipeline.local.host).
Nothing else in the pipeline knows a model is local.

The modules: ``names`` (the provider and default alias), ``catalog`` (the pinned models),
``weights`` (fetched and verified once per machine), ``server`` and ``host`` (llama.cpp on
loopback), ``route`` and ``adapter`` (how a sweep reaches it), ``setup`` (before a sweep). This
file imports none of them: ``agentsweep sql`` loads the command line's ``local-model`` group and
should not pay for the catalogs and pydantic.
"""
