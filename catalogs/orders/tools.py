"""The orders domain's server (the three-errors method): the tools run against the trial's own
SQLite copy.

The signed-in customer is fixed here, on the server side: no tool takes a user id, so the model
cannot act for someone else. The server checks existence, ownership and status: only an own
``pending`` order can be cancelled or get a new address; cancelling an order that is already
cancelled succeeds again and changes nothing (idempotent).
"""

from __future__ import annotations

import sqlite3
from typing import Any

CURRENT_USER = "alice"
COLUMNS = ("id", "status", "address", "item")


def _own(db: sqlite3.Connection, order_id: str) -> dict[str, Any] | None:
    row = db.execute("SELECT id, owner, status, address, item FROM orders WHERE id = ?",
                     (order_id,)).fetchone()
    if row is None or row[1] != CURRENT_USER:
        return None  # another customer's order is, for this customer, no order at all
    return {"id": row[0], "status": row[2], "address": row[3], "item": row[4]}


def _not_found(order_id: str) -> dict[str, Any]:
    return {"error": f"order {order_id} not found among your orders"}


def get_order(db: sqlite3.Connection, arguments: dict[str, Any]) -> dict[str, Any]:
    order = _own(db, arguments["order_id"])
    return order if order is not None else _not_found(arguments["order_id"])


def cancel_order(db: sqlite3.Connection, arguments: dict[str, Any]) -> dict[str, Any]:
    order_id = arguments["order_id"]
    order = _own(db, order_id)
    if order is None:
        return _not_found(order_id)
    if order["status"] == "cancelled":
        return {"id": order_id, "status": "cancelled"}  # idempotent: no new change
    if order["status"] != "pending":
        return {"error": f"order {order_id} is {order['status']}: it cannot be cancelled"}
    db.execute("UPDATE orders SET status = 'cancelled' WHERE id = ?", (order_id,))
    return {"id": order_id, "status": "cancelled"}


def update_address(db: sqlite3.Connection, arguments: dict[str, Any]) -> dict[str, Any]:
    order_id, address = arguments["order_id"], arguments["address"]
    order = _own(db, order_id)
    if order is None:
        return _not_found(order_id)
    if order["status"] != "pending":
        return {"error": f"order {order_id} is {order['status']}: its address cannot change"}
    db.execute("UPDATE orders SET address = ? WHERE id = ?", (address, order_id))
    return {"id": order_id, "address": address}


READ_TOOLS = {"get_order": get_order}
WRITE_TOOLS = {"cancel_order": cancel_order, "update_address": update_address}
