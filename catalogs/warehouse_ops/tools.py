"""Read tools of the warehouse_ops domain (the unstated-conditions method's warehouse: shipping
orders and accepting
returns). ``ship_order`` and ``accept_return`` are write tools: intercepted."""

from __future__ import annotations

import copy
from typing import Any

from pipeline.catalog.read_tools import lookup

get_order = lookup("orders", "id", "order_id", "Заказ {} не найден.")
get_stock = lookup("stock", "sku", "sku", "Артикул {} не найден.")


def get_operator(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    operator: dict[str, Any] = state["operator"]
    return copy.deepcopy(operator)


READ_TOOLS = {"get_order": get_order, "get_stock": get_stock, "get_operator": get_operator}
