"""Colour scales of the HTML report: cividis for rates, viridis for counts.

Both are perceptually uniform with a lightness that rises monotonically from one end to the
other, so a cell reads the same in grey and to the common colour-vision deficiencies
(cividis was designed for them). The stops are the published 10-colour samples of each map
(viridisLite / matplotlib), interpolated linearly; a cell's text is black or white by the
background's luminance. Every coloured cell also prints its number: colour is never the only
carrier of a value, and a pass rate also carries its symbol (``rate_symbol``: ✓ / ◐ / ✗).
"""

from __future__ import annotations

CIVIDIS = ("#00204d", "#00336f", "#39486b", "#575c6d", "#707173", "#8a8779", "#a69d75",
           "#c4b56c", "#e4cf5b", "#ffea46")
VIRIDIS = ("#440154", "#482878", "#3e4a89", "#31688e", "#26828e", "#1f9e89", "#35b779",
           "#6dcd59", "#b4de2c", "#fde725")


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    value = hex_colour.lstrip("#")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def sample(stops: tuple[str, ...], t: float) -> str:
    """The colour at ``t`` in [0, 1] (clamped) along the stops."""
    t = min(1.0, max(0.0, t))
    position = t * (len(stops) - 1)
    lower = min(int(position), len(stops) - 2)
    fraction = position - lower
    a, b = _rgb(stops[lower]), _rgb(stops[lower + 1])
    mixed = (round(x + (y - x) * fraction) for x, y in zip(a, b, strict=True))
    return "#" + "".join(f"{c:02x}" for c in mixed)


def luminance(hex_colour: str) -> float:
    """Relative luminance (WCAG 2) of a colour."""
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in _rgb(hex_colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def text_on(background: str) -> str:
    """Black or white, whichever contrasts more with the background."""
    lum = luminance(background)
    return "#000000" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#ffffff"


def rate_symbol(k: int, n: int) -> str:
    """The symbol a pass rate reads by without colour or legend: ✓ every trial passed, ✗ none
    did, ◐ some did (the viewer, reports.view, draws the same)."""
    return "✓" if k == n else ("✗" if k == 0 else "◐")


def rate_style(rate: float) -> str:
    """Inline style of a cell showing a pass rate: dark = low, light yellow = high."""
    background = sample(CIVIDIS, rate)
    return f"background:{background};color:{text_on(background)}"


def count_style(count: int, largest: int) -> str:
    """Inline style of a cell showing a count: more is darker (viridis, reversed)."""
    background = sample(VIRIDIS, 1.0 - (count / largest if largest else 0.0))
    return f"background:{background};color:{text_on(background)}"
