"""HTML built from strings, every piece of data escaped on the way in.

``esc`` is the only door for data: it redacts (the report's ``Scrub``, e.g. the pipeline's
secret redaction) and then HTML-escapes, quotes included, so a scenario text or a model output
holding ``<script>`` renders as text. ``embedded_json`` makes data safe inside
``<script type="application/json">``: ``<``, ``>`` and ``&`` become ``\\u003c`` ... (JSON.parse
reads them back), so no ``</script>`` or ``<!--`` can end the block. Text shown on the page
(``esc``, and the viewer's ``textContent``) shows bidi controls, zero-width characters and
controls as ``<U+202E>``, so no text is reordered or hidden (``visible``).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

Scrub = Callable[[str], str]
"""Redacts secrets from a text (``pipeline.util.redact.redact`` in the CLI and the nightly flow)."""


_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064"
                     "\u2066-\u2069\u061c\ufeff\u2028\u2029]")


def visible(text: str) -> str:
    """``text`` with bidi controls, zero-width characters and controls (newline and tab kept)
    shown as ``<U+XXXX>`` (the same rule as ``pipeline.util.untrusted.visible``)."""
    return _HIDDEN.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


class Markup(str):
    """Text that is already HTML (built here, its data escaped): inserted as is."""


class Escaper:
    """Scrubs and escapes data; remembers each distinct text (a run repeats its ids a lot)."""

    def __init__(self, scrub: Scrub) -> None:
        self.scrub = scrub
        self._seen: dict[str, str] = {}

    def text(self, value: object) -> str:
        """The scrubbed text of a value (None as the empty string)."""
        raw = "" if value is None else str(value)
        done = self._seen.get(raw)
        if done is None:
            done = self.scrub(raw)
            if len(self._seen) < 200_000:
                self._seen[raw] = done
        return done

    def __call__(self, value: object) -> Markup:
        if isinstance(value, Markup):
            return value
        return Markup(html.escape(visible(self.text(value)), quote=True))

    def data(self, value: Any) -> Any:
        """Every string inside a JSON-like value scrubbed (keys too)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value

    def tag(self, name: str, content: object = "", attrs: Mapping[str, object] | None = None
            ) -> Markup:
        """``<name attrs>content</name>``; content is escaped unless it is Markup."""
        return Markup(f"<{name}{self.attrs(attrs)}>{self(content)}</{name}>")

    def attrs(self, attrs: Mapping[str, object] | None) -> str:
        if not attrs:
            return ""
        return "".join(f' {key}="{self(value)}"' for key, value in attrs.items()
                       if value is not None and value is not False)


def join(parts: Iterable[str]) -> Markup:
    return Markup("".join(parts))


def embedded_json(value: Any) -> str:
    """JSON text safe inside ``<script type="application/json">``."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
