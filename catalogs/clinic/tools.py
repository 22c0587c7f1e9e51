"""Read tools of the clinic domain (the unstated-conditions method's front desk: booking
appointments).
``book_appointment`` is a write tool: intercepted."""

from __future__ import annotations

import copy
from typing import Any

from pipeline.catalog.read_tools import find, lookup

get_slot = lookup("slots", "id", "slot_id", "Слот {} не найден.")
get_patient = lookup("patients", "id", "patient_id", "Пациент {} не найден.")


def list_slots(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    specialty = str(arguments["specialty"]).strip().casefold()
    slots = [copy.deepcopy(s) for s in state["slots"] if s["specialty"].casefold() == specialty]
    return {"slots": slots}


def get_referrals(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    patient_id = arguments["patient_id"]
    if find(state["patients"], "id", patient_id) is None:
        return {"error": f"Пациент {patient_id} не найден."}
    referrals = [copy.deepcopy(r) for r in state["referrals"] if r["patient_id"] == patient_id]
    return {"patient_id": patient_id, "referrals": referrals}


def get_insurance(state: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    policy = find(state["insurances"], "patient_id", arguments["patient_id"])
    if policy is None:
        return {"error": f"Полис пациента {arguments['patient_id']} не найден."}
    return copy.deepcopy(policy)


READ_TOOLS = {"get_slot": get_slot, "list_slots": list_slots, "get_patient": get_patient,
              "get_referrals": get_referrals, "get_insurance": get_insurance}
