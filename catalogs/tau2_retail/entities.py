"""The retail orders as the tools report them (tau2-bench retail), for the grounding check.

An order a reply names by its id ("#W2611340") must come from a tool result or the user, and
the status it gives the order must agree with the latest result about it (a write tool answers
with the changed order, so "has been cancelled" after a cancel agrees).
"""

from __future__ import annotations

from pipeline.scoring import Attribute, EntityKind, ResultItems, Value

_ORDER_TOOLS = ("get_order_details", "cancel_pending_order", "exchange_delivered_order_items",
                "modify_pending_order_address", "modify_pending_order_items",
                "modify_pending_order_payment", "return_delivered_order_items")

STATUS = Attribute.one("status", "status", (
    Value.of("pending", covers=("pending (item modified)",), en=(r"\bpending\b",)),
    Value.of("processed", en=(r"\b(?:has\s+been|was|is|already)\s+processed\b",)),
    Value.of("delivered", en=(r"\b(?:has\s+been|was|is|already)\s+delivered\b",)),
    Value.of("cancelled", en=(r"\b(?:has\s+been|was|is|already)\s+cancell?ed\b",)),
    Value.of("exchange requested", en=(r"\bexchange\s+(?:has\s+been\s+)?requested\b",)),
    Value.of("return requested", en=(r"\breturn\s+(?:has\s+been\s+)?requested\b",)),
))

ORDER = EntityKind.of(
    "order",
    sources=tuple(ResultItems(tool, "", "order_id") for tool in _ORDER_TOOLS),
    attributes=(STATUS,),
    mention=(r"(?P<name>#W\d{7})(?!\d)",),
)
"""Orders by their ids; an id written like one ("#W" and seven digits) that nothing gave is
invented."""

ENTITIES: tuple[EntityKind, ...] = (ORDER,)
