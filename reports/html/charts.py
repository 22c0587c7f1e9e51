"""Small charts as inline SVG, drawn here in Python: no script library, nothing to download.

Each chart carries its numbers as text too (a ``<title>`` per mark and the values beside it),
so it reads without colour and without the picture.
"""

from __future__ import annotations

from collections.abc import Sequence

from reports.html.colour import CIVIDIS, sample
from reports.html.markup import Escaper, Markup


def pass_hat_k_curve(esc: Escaper, values: Sequence[float], width: int = 120,
                     height: int = 28) -> Markup:
    """pass^k for k = 1..n as a line over k (y from 0 to 1), a dot per k."""
    if not values:
        return Markup("")
    step = (width - 8) / max(1, len(values) - 1)
    points = [(4 + i * step, 4 + (height - 8) * (1 - v)) for i, v in enumerate(values)]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    dots = "".join(
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.2"><title>{esc(f"pass^{i + 1} = {v:.2f}")}'
        f"</title></circle>" for i, ((x, y), v) in enumerate(zip(points, values, strict=True)))
    return Markup(
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{esc("pass^k for k=1.." + str(len(values)))}">'
        f'<line x1="4" y1="{height - 4}" x2="{width - 4}" y2="{height - 4}" class="axis"/>'
        f'<polyline points="{line}" class="curve"/>{dots}</svg>')


def repeat_strip(esc: Escaper, outcomes: Sequence[str], size: int = 10) -> Markup:
    """One square per repeat, in repeat order: light = passed, dark = did not pass, hatched =
    incomplete; the letter of each in its title."""
    fills = {"passed": sample(CIVIDIS, 1.0), "incomplete": "url(#hatch)"}
    squares = "".join(
        f'<rect x="{i * (size + 2)}" y="0" width="{size}" height="{size}" '
        f'fill="{fills.get(o, sample(CIVIDIS, 0.0))}" class="rep"><title>'
        f"{esc(f'repeat {i}: {o}')}</title></rect>" for i, o in enumerate(outcomes))
    width = max(1, len(outcomes) * (size + 2))
    return Markup(f'<svg class="strip" width="{width}" height="{size}" '
                  f'viewBox="0 0 {width} {size}" role="img" '
                  f'aria-label="{esc(" ".join(outcomes))}">{squares}</svg>')


def interval_chart(esc: Escaper, estimate: float, low: float, high: float, confidence: float,
                   width: int = 420, height: int = 56) -> Markup:
    """The paired-bootstrap interval of the pass-rate difference on a -1..+1 axis, with 0
    marked: an interval wholly left of 0 is a drop."""
    def x(value: float) -> float:
        return 20 + (width - 40) * (max(-1.0, min(1.0, value)) + 1) / 2

    ticks = "".join(
        f'<line x1="{x(t):.1f}" y1="34" x2="{x(t):.1f}" y2="38" class="axis"/>'
        f'<text x="{x(t):.1f}" y="50" text-anchor="middle">{t:+.1f}</text>'
        for t in (-1.0, -0.5, 0.0, 0.5, 1.0))
    label = f"{estimate:+.3f} [{low:+.3f}, {high:+.3f}] at {confidence:.0%}"
    return Markup(
        f'<svg class="interval" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(label)}">'
        f'<line x1="20" y1="34" x2="{width - 20}" y2="34" class="axis"/>{ticks}'
        f'<line x1="{x(0):.1f}" y1="4" x2="{x(0):.1f}" y2="34" class="zero"/>'
        f'<line x1="{x(low):.1f}" y1="18" x2="{x(high):.1f}" y2="18" class="ci"/>'
        f'<line x1="{x(low):.1f}" y1="12" x2="{x(low):.1f}" y2="24" class="ci"/>'
        f'<line x1="{x(high):.1f}" y1="12" x2="{x(high):.1f}" y2="24" class="ci"/>'
        f'<circle cx="{x(estimate):.1f}" cy="18" r="4" class="est"><title>{esc(label)}</title>'
        f"</circle></svg>")


def hatch_defs() -> Markup:
    """The hatch pattern the strips use for incomplete repeats (defined once per page)."""
    return Markup(
        '<svg width="0" height="0" class="defs" aria-hidden="true"><defs>'
        '<pattern id="hatch" width="4" height="4" patternUnits="userSpaceOnUse">'
        '<rect width="4" height="4" fill="#ffffff"/><path d="M0,4 L4,0" stroke="#666666"/>'
        "</pattern></defs></svg>")
