"""The failure map of a run's condition tasks (docs/conditions.md), as heatmaps: one per model,
memory mode and prompt; rows = conditions by type, columns = the delivery formats and the bare
repeat, a cell = k failures of n (a zero with its n and the rule-of-three bound 3/n). A row
whose allowed twin was not executed every time is greyed with the reason and not counted. The
numbers are the ``failure_map`` and ``condition_decisions`` views'."""

from __future__ import annotations

from typing import Any

from reports.html.colour import rate_style
from reports.html.context import Page
from reports.html.markup import Markup, join

Key = tuple[str, str, str]


def map_cell_text(k: int, n: int, upper_bound: float | None) -> str:
    """``k/n``; a zero as ``0/n ≤ B%`` (its rule-of-three bound); ``-`` when not played."""
    if n == 0:
        return "-"
    if k == 0 and upper_bound is not None:
        return f"0/{n} ≤ {round(100 * upper_bound)}%"
    return f"{k}/{n}"


def _key(row: dict[str, Any]) -> Key:
    return (str(row["model"]), str(row["memory_mode"]), str(row["prompt_id"]))


def _lists(page: Page) -> dict[tuple[Key, str, str], list[int]]:
    """(map key, condition, column) -> the trial positions its cell lists."""
    at = page.position_of
    out: dict[tuple[Key, str, str], list[int]] = {}
    for r in page.run.rows(page.run.condition_cells):
        position = at.get(str(r["trial_id"]))
        if position is not None:
            out.setdefault((_key(r), r["condition_id"], r["map_column"]), []).append(position)
    return out


def _provenance(first: dict[str, Any]) -> str:
    return (f"model {first['model']} (version {first['model_version'] or 'not reported'}), "
            f"provider {first['provider']}, channel {first['access_channel'] or 'unknown'}, "
            f"temperature {first['temperature']:g}, run date {first['run_date']}, memory "
            f"{first['memory_mode']}, prompt {first['prompt_id']}")


def _row(page: Page, key: Key, decision: dict[str, Any], cells: dict[str, dict[str, Any]],
         columns: list[str], lists: dict[tuple[Key, str, str], list[int]]) -> str:
    esc = page.esc
    condition = decision["condition_id"]
    counted = bool(decision["counted"])
    tds = []
    for column in columns:
        cell = cells.get(column)
        if cell is None or int(cell["n"]) == 0:
            tds.append(esc.tag("td", "-", {"class": "cell none"}))
            continue
        k, n = int(cell["k"]), int(cell["n"])
        said = ", ".join(f"{name.replace('_', ' ')} {cell[name]}" for name in
                         ("silent_success", "incomplete_checklist", "honest_report")
                         if cell[name])
        list_id = page.add_list(f"{condition} / {column} / {' / '.join(key)}",
                                lists.get((key, condition, column), []))
        tds.append(esc.tag("td", map_cell_text(k, n, cell["upper_bound"]), {
            "class": "cell", "data-list": list_id, "tabindex": 0, "data-k": k, "data-n": n,
            "style": rate_style(1 - k / n) if counted else None,
            "title": f"{k} failure(s) of {n}" + (f"; said: {said}" if said else "")}))
    twin = f"{decision['twin_k']}/{decision['twin_n']}"
    decided = f"{str(decision['decision']).replace('_', ' ')}: {decision['reason']}"
    return ("<tr" + esc.attrs({"class": None if counted else "excluded",
                               "data-counted": "yes" if counted else "no"}) + ">"
            + join([esc.tag("td", decision["condition_type"]),
                    esc.tag("th", condition, {"class": "row"}),
                    esc.tag("td", decision["enforced"]), *tds, esc.tag("td", twin),
                    esc.tag("td", decided, {"class": "decision"})]) + "</tr>")


def failure_map(page: Page) -> Markup:
    esc, run = page.esc, page.run
    if not run.has_conditions:
        return Markup("")
    cells = run.rows(run.failure_map)
    columns = list(dict.fromkeys(str(c["format"]) for c in cells))
    lists = _lists(page)
    parts = [esc.tag("h2", "Failure map: unstated conditions"),
             esc.tag("p", "k failures of n attempts of the forbidden write per condition and "
                          "delivery format (repeat: the bare repeat after a refusal); a zero "
                          "with its rule-of-three bound 3/n (95 %). Colour: dark = fails often. "
                          "A greyed row is not counted: its allowed twin was not executed "
                          "every time, so a refusal may be a general one.",
                     {"class": "legend"})]
    for key in dict.fromkeys(_key(c) for c in cells):
        mine = [c for c in cells if _key(c) == key]
        decisions = [d for d in run.rows(run.decisions) if _key(d) == key]
        head = join(esc.tag("th", h) for h in ("type", "condition", "enforced", *columns,
                                                 "twin executed", "decision"))
        body = "".join(_row(page, key, d, {str(c["format"]): c for c in mine
                                           if c["condition_id"] == d["condition_id"]},
                            columns, lists) for d in decisions)
        parts += [esc.tag("h3", _provenance(mine[0])),
                  Markup(f'<div class="scroll"><table class="matrix failure-map"><thead><tr>'
                         f"{head}</tr></thead><tbody>{body}</tbody></table></div>")]
    excluded = [d for d in run.rows(run.decisions) if not d["counted"]]
    if excluded:
        parts.append(esc.tag("p", f"{len(excluded)} of {run.decisions.height} rows not counted "
                                  "(greyed): " + "; ".join(sorted({str(d["excluded_because"])
                                                                   for d in excluded})),
                             {"class": "note", "id": "excluded-note"}))
    return join(parts)
