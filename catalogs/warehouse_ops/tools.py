"""Read tools of the warehouse_ops domain (seed 002's warehouse: shipping orders and accepting
returns). ``ship_order`` and ``accept_return`` are write tools: intercepted."""

from __future__ import annotations

import copy
from typing import Any


def _find(items: list[dict[str, Any]], key: str, value: Any) -> dict[str, Any] | None:
    return next((item for item in items if item.get(key) == value), None)


def get_order(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    order = _find(state["orders"], "id", arguments["order_id"])
    if order is None:
        return {"error": f"Заказ {arguments['order_id']} не найден."}
    return copy.deepcopy(order)


def get_stock(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    item = _find(state["stock"], "sku", arguments["sku"])
    if item is None:
        return {"error": f"Артикул {arguments['sku']} не найден."}
    return copy.deepcopy(item)


def get_operator(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    operator: dict[str, Any] = state["operator"]
    return copy.deepcopy(operator)


READ_TOOLS = {"get_order": get_order, "get_stock": get_stock, "get_operator": get_operator}
