"""tau2-bench's retail domain, our own implementation: the 16 tools over the trial's SQLite copy.

The database (``db.sql.gz``, converted by ``agentsweep import tau2``) holds one JSON document per
row in three tables: ``users``, ``orders``, ``products`` (key column + ``doc``), in the order of
tau2's ``db.json`` (rowid order: the first match of a search is tau2's first match).

The behaviour follows tau2's ``src/tau2/domains/retail/tools.py`` at commit a2c0247 (read, not
copied): every check comes first and a refused call changes nothing, with the one exception tau2
has too (``modify_pending_order_items`` can fail in its second loop after charging; reproduced
by writing back whatever a call changed before it was refused). A refusal is ``{"error": msg}``
with tau2's message. Their quirk, kept on purpose: ``modify_pending_order_items`` gives every
modified item the price and options of the *last* new variant of the call (gold tasks 20, 21,
36, 37 and 100 depend on it).
"""

from __future__ import annotations

import ast
import json
import operator
import sqlite3
from collections.abc import Callable
from typing import Any

Doc = dict[str, Any]
TABLES = {"users": "user_id", "orders": "order_id", "products": "product_id"}
CANCEL_REASONS = ("no longer needed", "ordered by mistake")
ADDRESS_FIELDS = ("address1", "address2", "city", "country", "state", "zip")


def dump(doc: Any) -> str:
    """The one serialization of a document (the importer writes the seed with it too)."""
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


class Refused(Exception):
    """The server refuses the call; the agent sees the message."""


class Store:
    """The documents one call reads, cached so that two lookups give the same object (a
    payment method charged and refunded in one call), written back by ``flush``."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.loaded: dict[tuple[str, str], Doc] = {}

    def get(self, table: str, key: str, missing: str) -> Doc:
        if (table, key) not in self.loaded:
            row = self.db.execute(f"SELECT doc FROM {table} WHERE {TABLES[table]} = ?",
                                  (key,)).fetchone()
            if row is None:
                raise Refused(missing)
            self.loaded[(table, key)] = json.loads(row[0])
        return self.loaded[(table, key)]

    def scan(self, table: str) -> list[Doc]:
        rows = self.db.execute(f"SELECT doc FROM {table} ORDER BY rowid").fetchall()
        return [json.loads(r[0]) for r in rows]

    def order(self, order_id: str) -> Doc:
        return self.get("orders", order_id, "Order not found")

    def user(self, user_id: str) -> Doc:
        return self.get("users", user_id, "User not found")

    def variant(self, product_id: str, item_id: str) -> Doc:
        product = self.get("products", product_id, "Product not found")
        if item_id not in product["variants"]:
            raise Refused("Variant not found")
        variant: Doc = product["variants"][item_id]
        return variant

    def payment_method(self, user_id: str, method_id: str) -> Doc:
        methods = self.user(user_id)["payment_methods"]
        if method_id not in methods:
            raise Refused("Payment method not found")
        method: Doc = methods[method_id]
        return method

    def flush(self) -> None:
        for (table, key), doc in self.loaded.items():
            self.db.execute(f"UPDATE {table} SET doc = ? WHERE {TABLES[table]} = ?",
                            (dump(doc), key))


Tool = Callable[[Store, dict[str, Any]], Any]


def _served(tool: Tool, write: bool) -> Callable[[sqlite3.Connection, dict[str, Any]], Any]:
    def run(db: sqlite3.Connection, arguments: dict[str, Any]) -> Any:
        store = Store(db)
        try:
            result = tool(store, arguments)
        except Refused as exc:
            result = {"error": str(exc)}
        if write:  # what the call changed, even before a late refusal (as tau2)
            store.flush()
        return result

    run.__name__ = tool.__name__
    return run


def _is_gift_card(method: Doc) -> bool:
    return method.get("source") == "gift_card"


def _item(order: Doc, item_id: str) -> Doc:
    item: Doc | None = next((i for i in order["items"] if i["item_id"] == item_id), None)
    if item is None:
        raise Refused(f"Item {item_id} not found")
    return item


def _check_counts(order: Doc, item_ids: list[str], message: Callable[[str], str]) -> None:
    """There may be duplicates: each item id at most as often as the order holds it."""
    held = [i["item_id"] for i in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > held.count(item_id):
            raise Refused(message(item_id))


def _address(arguments: dict[str, Any]) -> Doc:
    return {name: arguments[name] for name in ADDRESS_FIELDS}


def _payment(kind: str, amount: float, method_id: str) -> Doc:
    return {"transaction_type": kind, "amount": amount, "payment_method_id": method_id}


# --- read tools ---------------------------------------------------------------------------

def find_user_id_by_name_zip(store: Store, arguments: dict[str, Any]) -> str:
    first, last = arguments["first_name"].lower(), arguments["last_name"].lower()
    for user in store.scan("users"):
        if (user["name"]["first_name"].lower() == first
                and user["name"]["last_name"].lower() == last
                and user["address"]["zip"] == arguments["zip"]):
            return str(user["user_id"])
    raise Refused("User not found")


def find_user_id_by_email(store: Store, arguments: dict[str, Any]) -> str:
    email = arguments["email"].lower()
    for user in store.scan("users"):
        if user["email"].lower() == email:
            return str(user["user_id"])
    raise Refused("User not found")


def get_order_details(store: Store, arguments: dict[str, Any]) -> Doc:
    return store.order(arguments["order_id"])


def get_product_details(store: Store, arguments: dict[str, Any]) -> Doc:
    return store.get("products", arguments["product_id"], "Product not found")


def get_item_details(store: Store, arguments: dict[str, Any]) -> Doc:
    for product in store.scan("products"):
        if arguments["item_id"] in product["variants"]:
            variant: Doc = product["variants"][arguments["item_id"]]
            return variant
    raise Refused("Item not found")


def get_user_details(store: Store, arguments: dict[str, Any]) -> Doc:
    return store.user(arguments["user_id"])


def list_all_product_types(store: Store, arguments: dict[str, Any]) -> str:
    names = {p["name"]: p["product_id"] for p in store.scan("products")}
    return json.dumps(names, sort_keys=True)


_OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.USub: operator.neg, ast.UAdd: operator.pos,
}


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.operand))
    raise Refused("invalid syntax")


def calculate(store: Store, arguments: dict[str, Any]) -> str:
    expression = arguments["expression"]
    if not all(char in "0123456789+-*/(). " for char in expression):
        raise Refused("Invalid characters in expression")
    try:
        value = _evaluate(ast.parse(expression.strip(), mode="eval"))
    except SyntaxError:
        raise Refused("invalid syntax") from None
    except ZeroDivisionError:
        raise Refused("division by zero") from None
    return str(round(float(value), 2))


def transfer_to_human_agents(store: Store, arguments: dict[str, Any]) -> str:
    return "Transfer successful"


# --- write tools --------------------------------------------------------------------------

def cancel_pending_order(store: Store, arguments: dict[str, Any]) -> Doc:
    order = store.order(arguments["order_id"])
    if order["status"] != "pending":
        raise Refused("Non-pending order cannot be cancelled")
    if arguments["reason"] not in CANCEL_REASONS:
        raise Refused("Invalid reason")
    refunds = []
    for payment in order["payment_history"]:
        refunds.append(_payment("refund", payment["amount"], payment["payment_method_id"]))
        user = store.user(order["user_id"])
        method = store.payment_method(user["user_id"], payment["payment_method_id"])
        if _is_gift_card(method):  # back onto the card at once
            method["balance"] = round(method["balance"] + payment["amount"], 2)
    order["status"] = "cancelled"
    order["cancel_reason"] = arguments["reason"]
    order["payment_history"].extend(refunds)
    return order


def exchange_delivered_order_items(store: Store, arguments: dict[str, Any]) -> Doc:
    order = store.order(arguments["order_id"])
    if order["status"] != "delivered":
        raise Refused("Non-delivered order cannot be exchanged")
    item_ids, new_item_ids = arguments["item_ids"], arguments["new_item_ids"]
    _check_counts(order, item_ids, lambda i: f"Number of {i} not found.")
    if len(item_ids) != len(new_item_ids):
        raise Refused("The number of items to be exchanged should match.")
    difference: float = 0
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        item = _item(order, item_id)
        variant = store.variant(item["product_id"], new_item_id)
        if not variant["available"]:
            raise Refused(f"New item {new_item_id} not found or available")
        difference += variant["price"] - item["price"]
    difference = float(round(difference, 2))
    method = store.payment_method(order["user_id"], arguments["payment_method_id"])
    if _is_gift_card(method) and method["balance"] < difference:
        raise Refused("Insufficient gift card balance to pay for the price difference")
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = arguments["payment_method_id"]
    order["exchange_price_difference"] = difference
    return order


def modify_pending_order_address(store: Store, arguments: dict[str, Any]) -> Doc:
    order = store.order(arguments["order_id"])
    if "pending" not in order["status"]:
        raise Refused("Non-pending order cannot be modified")
    order["address"] = _address(arguments)
    return order


def _priced_variants(store: Store, order: Doc, item_ids: list[str],
                     new_item_ids: list[str]) -> tuple[float, Doc | None]:
    """The checks of a pending modification: (unrounded price difference, last new variant)."""
    difference: float = 0
    variant: Doc | None = None
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        if item_id == new_item_id:
            raise Refused("The new item id should be different from the old item id")
        item = _item(order, item_id)
        variant = store.variant(item["product_id"], new_item_id)
        if not variant["available"]:
            raise Refused(f"New item {new_item_id} not found or available")
        difference += variant["price"] - item["price"]
    return difference, variant


def modify_pending_order_items(store: Store, arguments: dict[str, Any]) -> Doc:
    order = store.order(arguments["order_id"])
    if order["status"] != "pending":
        raise Refused("Non-pending order cannot be modified")
    item_ids, new_item_ids = arguments["item_ids"], arguments["new_item_ids"]
    _check_counts(order, item_ids, lambda i: f"{i} not found")
    if len(item_ids) != len(new_item_ids):
        raise Refused("The number of items to be exchanged should match")
    difference, last = _priced_variants(store, order, item_ids, new_item_ids)
    method_id = arguments["payment_method_id"]
    method = store.payment_method(order["user_id"], method_id)
    if _is_gift_card(method) and method["balance"] < difference:
        raise Refused("Insufficient gift card balance to pay for the new item")
    order["payment_history"].append(_payment("payment" if difference > 0 else "refund",
                                              float(abs(difference)), method_id))
    if _is_gift_card(method):
        method["balance"] = round(method["balance"] - difference, 2)
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        item = _item(order, item_id)  # may refuse here, after the charge (as tau2)
        item["item_id"] = new_item_id
        if last is not None:  # tau2's quirk: the last new variant's price and options
            item["price"] = last["price"]
            item["options"] = dict(last["options"])
    order["status"] = "pending (item modified)"
    return order


def modify_pending_order_payment(store: Store, arguments: dict[str, Any]) -> Doc:
    order = store.order(arguments["order_id"])
    if "pending" not in order["status"]:
        raise Refused("Non-pending order cannot be modified")
    method_id = arguments["payment_method_id"]
    method = store.payment_method(order["user_id"], method_id)
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise Refused("There should be exactly one payment for a pending order")
    old_id = history[0]["payment_method_id"]
    if old_id == method_id:
        raise Refused("The new payment method should be different from the current one")
    amount = history[0]["amount"]
    if _is_gift_card(method) and method["balance"] < amount:
        raise Refused("Insufficient gift card balance to pay for the order")
    history.extend([_payment("payment", amount, method_id), _payment("refund", amount, old_id)])
    if _is_gift_card(method):
        method["balance"] = round(method["balance"] - amount, 2)
    old = store.payment_method(order["user_id"], old_id)
    if _is_gift_card(old):
        old["balance"] = round(old["balance"] + amount, 2)
    return order


def modify_user_address(store: Store, arguments: dict[str, Any]) -> Doc:
    user = store.user(arguments["user_id"])
    user["address"] = _address(arguments)
    return user


def return_delivered_order_items(store: Store, arguments: dict[str, Any]) -> Doc:
    order = store.order(arguments["order_id"])
    if order["status"] != "delivered":
        raise Refused("Non-delivered order cannot be returned")
    user = store.user(order["user_id"])
    method_id = arguments["payment_method_id"]
    method = store.payment_method(user["user_id"], method_id)
    if (not _is_gift_card(method)
            and method_id != order["payment_history"][0]["payment_method_id"]):
        raise Refused("Payment method should be the original payment method")
    _check_counts(order, arguments["item_ids"], lambda i: "Some item not found")
    order["status"] = "return requested"
    order["return_items"] = sorted(arguments["item_ids"])
    order["return_payment_method_id"] = method_id
    return order


_READS: tuple[Tool, ...] = (
    calculate, find_user_id_by_email, find_user_id_by_name_zip, get_item_details,
    get_order_details, get_product_details, get_user_details, list_all_product_types,
    transfer_to_human_agents)
_WRITES: tuple[Tool, ...] = (
    cancel_pending_order, exchange_delivered_order_items, modify_pending_order_address,
    modify_pending_order_items, modify_pending_order_payment, modify_user_address,
    return_delivered_order_items)
READ_TOOLS = {t.__name__: _served(t, write=False) for t in _READS}
WRITE_TOOLS = {t.__name__: _served(t, write=True) for t in _WRITES}
