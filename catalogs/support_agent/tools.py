"""Read tools of the support_agent domain (a synthetic online store's support desk).

The four write tools (cancel, refund, send a report, record a resolution) are intercepted by
the sandbox; in mock-tools mode nothing here runs: every answer is a case's recording.
"""

from __future__ import annotations

import copy
from typing import Any


def lookup_order(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    order = state["orders"].get(arguments["order_id"])
    return copy.deepcopy(order) if order is not None else {"error": "no such order"}


def search_orders(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    orders = [copy.deepcopy(o) for o in state["orders"].values()
              if o["customer_id"] == arguments["customer_id"] and o["month"] == arguments["month"]]
    return {"orders": orders}


def lookup_customer(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    customer = state["customers"].get(arguments["customer_id"])
    return copy.deepcopy(customer) if customer is not None else {"error": "no such customer"}


def search_kb(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    words = [w for w in arguments["query"].casefold().split() if len(w) > 3]
    found = [a for a in state["kb"]
             if any(w[:5] in (a["title"] + " " + a["text"]).casefold() for w in words)]
    return {"articles": copy.deepcopy(found or state["kb"])}


READ_TOOLS = {"lookup_order": lookup_order, "search_orders": search_orders,
              "lookup_customer": lookup_customer, "search_kb": search_kb}
