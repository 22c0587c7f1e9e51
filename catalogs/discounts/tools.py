"""Read tools of the discounts domain (seed 002's discounts: applying promotions to orders).
``apply_discount`` is a write tool: intercepted."""

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


def get_customer(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    customer = _find(state["customers"], "id", arguments["customer_id"])
    if customer is None:
        return {"error": f"Клиент {arguments['customer_id']} не найден."}
    return copy.deepcopy(customer)


def get_promotion(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    promotion = _find(state["promotions"], "code", arguments["code"])
    if promotion is None:
        return {"error": f"Акция с кодом {arguments['code']} не найдена."}
    return copy.deepcopy(promotion)


READ_TOOLS = {"get_order": get_order, "get_customer": get_customer,
              "get_promotion": get_promotion}
