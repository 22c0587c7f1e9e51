"""Read tools of the clinic domain (seed 002's front desk: booking appointments).
``book_appointment`` is a write tool: intercepted."""

from __future__ import annotations

import copy
from typing import Any


def _find(items: list[dict[str, Any]], key: str, value: Any) -> dict[str, Any] | None:
    return next((item for item in items if item.get(key) == value), None)


def get_slot(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    slot = _find(state["slots"], "id", arguments["slot_id"])
    if slot is None:
        return {"error": f"Слот {arguments['slot_id']} не найден."}
    return copy.deepcopy(slot)


def list_slots(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    specialty = str(arguments["specialty"]).strip().casefold()
    slots = [copy.deepcopy(s) for s in state["slots"] if s["specialty"].casefold() == specialty]
    return {"slots": slots}


def get_patient(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    patient = _find(state["patients"], "id", arguments["patient_id"])
    if patient is None:
        return {"error": f"Пациент {arguments['patient_id']} не найден."}
    return copy.deepcopy(patient)


def get_referrals(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    patient_id = arguments["patient_id"]
    if _find(state["patients"], "id", patient_id) is None:
        return {"error": f"Пациент {patient_id} не найден."}
    referrals = [copy.deepcopy(r) for r in state["referrals"] if r["patient_id"] == patient_id]
    return {"patient_id": patient_id, "referrals": referrals}


def get_insurance(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    policy = _find(state["insurances"], "patient_id", arguments["patient_id"])
    if policy is None:
        return {"error": f"Полис пациента {arguments['patient_id']} не найден."}
    return copy.deepcopy(policy)


READ_TOOLS = {"get_slot": get_slot, "list_slots": list_slots, "get_patient": get_patient,
              "get_referrals": get_referrals, "get_insurance": get_insurance}
