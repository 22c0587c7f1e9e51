"""Read tools of the discounts domain (the unstated-conditions method's discounts: applying
promotions to orders).
``apply_discount`` is a write tool: intercepted."""

from __future__ import annotations

from pipeline.catalog.read_tools import lookup

get_order = lookup("orders", "id", "order_id", "Заказ {} не найден.")
get_customer = lookup("customers", "id", "customer_id", "Клиент {} не найден.")
get_promotion = lookup("promotions", "code", "code", "Акция с кодом {} не найдена.")

READ_TOOLS = {"get_order": get_order, "get_customer": get_customer,
              "get_promotion": get_promotion}
