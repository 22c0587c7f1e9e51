"""``agentsweep import tau2 DIR --out FOLDER``: tau2-bench's retail data (``tasks.json``,
``db.json``, ``policy.md``, ``LICENSE``) turned into a database domain's data files and a suite.

Only data is converted; the domain's code (``tools.py``, ``tools.json``) is ours and already in
the folder. Written: ``db.sql.gz`` (one table per document collection, a JSON document per row,
in ``db.json``'s order; optional order fields tau2's data model fills with null are added),
``prompts/default.md`` (the policy), ``LICENSE`` (theirs), ``README.md`` (provenance: commit and
sha256 of every source file) and ``suites/<domain>.jsonl`` (one scenario per task, tau2's id).

Every field of a task must be one of tau2's task model (``KNOWN``), or null: tau2's model
ignores a field it does not have, and a null one carries nothing to keep (airline's
``annotations``), so the import ignores it too (the scenario's ``imported_from.task`` keeps
the task whole). An unknown field with a value fails the import as ``tasks.json: <task id>:
<field path>``, never silently dropped. A known field whose value we cannot run yet (an initial
state, environment assertions, user tools) fails the same way. Output is byte-for-byte
reproducible (sorted, gzip without a timestamp).

Before that, the shape of every task is checked (pipeline.interop.tau2_task_checks: plain unique
ids, required fields, types; a size limit on source files), and the folder's name must be a
domain name. The import is all-or-nothing: the domain folder is copied into a temporary folder
beside ``--out``, the files are generated there, and the finished folder is swapped in at the
end; any failure leaves ``--out`` as it was.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.interop.tau2_task_checks import ImportFailed as ImportFailed
from pipeline.interop.tau2_task_checks import check_size, check_tasks
from warehouse.atomic import atomic_path, swap_folder

BENCHMARK = "tau2-bench"
SOURCE_COMMIT = "a2c024725189473d2d7cea3a5cfdbcc67478e41f"
SOURCE_PATH = "data/tau2/domains/retail/"
SOURCE_FILES = ("db.json", "tasks.json", "policy.md", "LICENSE")
TABLES = {"users": "user_id", "orders": "order_id", "products": "product_id"}
ORDER_OPTIONAL = ("cancel_reason", "exchange_items", "exchange_new_items",
                  "exchange_payment_method_id", "exchange_price_difference", "return_items",
                  "return_payment_method_id")
REWARD = {"DB": "database", "COMMUNICATE": "communicate", "ACTION": "action",
          "NL_ASSERTION": "nl_assertion"}

KNOWN: dict[str, Any] = {
    "id": None, "description": {"purpose": None, "relevant_policies": None, "notes": None},
    "user_scenario": {"persona": None, "instructions": {
        "domain": None, "reason_for_call": None, "known_info": None, "unknown_info": None,
        "task_instructions": None}},
    "ticket": None, "initial_state": None, "issues": None, "required_documents": None,
    "user_tools": None,
    "evaluation_criteria": {"actions": [{"action_id": None, "requestor": None, "name": None,
                                         "arguments": None, "info": None,
                                         "compare_args": None}],
                            "env_assertions": None, "communicate_info": None,
                            "nl_assertions": None, "reward_basis": None},
}
"""tau2's task fields (their ``data_model/tasks.py`` at SOURCE_COMMIT): a dict lists the known
keys of an object, a one-item list the shape of each element, None a value kept as it is.
Their pydantic models ignore any other field; so do we when it is null."""
MUST_BE_EMPTY = ("ticket", "initial_state", "required_documents", "user_tools",
                 "evaluation_criteria.env_assertions")
"""Known fields whose content this import cannot run yet."""
GENERATED = ("db.sql.gz", "prompts/default.md", "LICENSE", "README.md", "suites/retail.jsonl")
"""The files the import writes (the rest of the domain folder is our code)."""
MUTANTS = ("mutant-drops-last-write", "mutant-changes-write-argument", "mutant-stray-write",
           "mutant-repeats-write")
"""The reference mutants each scenario's catches are computed for (pipeline.interop.catches)."""
STRAY_ADDRESS = {"address1": "1 Stray Street", "address2": "", "city": "Nowhere",
                 "country": "USA", "state": "ZZ", "zip": "00000"}
"""mutant-stray-write: the default address of the database's first user, changed on the side."""
OPENING = ("(No user simulator: the simulated user's instructions, handed over as a ticket.)"
           "\n\n{instructions}")


@dataclass(frozen=True)
class ImportReport:
    tasks: int
    gold_actions: int
    files: tuple[str, ...]


def _unknown(value: Any, shape: Any, path: str) -> Iterator[str]:
    """The paths of the fields with a value that tau2's task model does not have."""
    if isinstance(shape, dict) and isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if key not in shape:
                if item is not None:
                    yield where
            else:
                yield from _unknown(item, shape[key], where)
    elif isinstance(shape, list) and isinstance(value, list):
        for index, item in enumerate(value):
            yield from _unknown(item, shape[0], f"{path}.{index}")


def _field(task: Mapping[str, Any], dotted: str) -> Any:
    value: Any = task
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def check_task(task: Mapping[str, Any], tools: set[str] | None) -> None:
    task_id = task.get("id", "?")
    for where in _unknown(task, KNOWN, ""):
        raise ImportFailed(f"tasks.json: {task_id}: {where}: not a field of tau2's task "
                           f"model at {SOURCE_COMMIT[:7]} (tau2 ignores it); refusing to drop "
                           "its value")
    for where in MUST_BE_EMPTY:
        if _field(task, where):
            raise ImportFailed(f"tasks.json: {task_id}: {where}: not supported yet (must be "
                               "null or empty)")
    criteria = task.get("evaluation_criteria") or {}
    for index, action in enumerate(criteria.get("actions") or []):
        if action.get("requestor", "assistant") != "assistant":
            raise ImportFailed(f"tasks.json: {task_id}: evaluation_criteria.actions.{index}."
                               "requestor: only the assistant's actions are supported")
        if tools is not None and action["name"] not in tools:
            raise ImportFailed(f"tasks.json: {task_id}: evaluation_criteria.actions.{index}."
                               f"name: no tool {action['name']!r} in tools.json")
    for basis in criteria.get("reward_basis") or []:
        if basis not in REWARD:
            raise ImportFailed(f"tasks.json: {task_id}: evaluation_criteria.reward_basis: "
                               f"unknown component {basis!r}")


def render_instructions(instructions: Mapping[str, Any]) -> str:
    """The simulated user's instructions as one text (our layout)."""
    parts = [("Reason for the call", "reason_for_call"), ("What you know", "known_info"),
             ("What you do not know", "unknown_info"), ("How to behave", "task_instructions")]
    return "\n\n".join(f"{title}:\n{instructions[key]}" for title, key in parts
                       if instructions.get(key))


def golden_reply(communicate: list[str]) -> str:
    facts = "; ".join(communicate)
    return f"Done. {facts}" if facts else "Done."


def scenario_of(task: Mapping[str, Any], domain: str, stray_user: str) -> dict[str, Any]:
    criteria = task["evaluation_criteria"]
    actions = criteria.get("actions") or []
    basis = [REWARD[b] for b in criteria.get("reward_basis") or []]
    communicate = list(criteria.get("communicate_info") or [])
    instructions = render_instructions(task["user_scenario"]["instructions"])
    golden: list[dict[str, Any]] = [{"call": {"name": a["name"], "arguments": a["arguments"]}}
                                    for a in actions]
    golden.append({"reply": golden_reply(communicate)})
    purpose = (task.get("description") or {}).get("purpose")
    reason = task["user_scenario"]["instructions"].get("reason_for_call") or ""
    return {
        "id": str(task["id"]), "version": 1, "domain": domain, "class": "imported",
        "title": purpose or reason.split(". ")[0][:120],
        "tags": ["tau2", "retail"],
        "turns": [{"user": OPENING.format(instructions=instructions), "golden": golden}],
        "database": {"expected": {"golden": True}, "diagnostics": [], "snapshots": "changed"},
        "expectations": {"communicate": communicate if "communicate" in basis else [],
                         "actions": [{"name": a["name"], "arguments": a["arguments"],
                                      "compare_args": a.get("compare_args")}
                                     for a in actions]},
        "step_limit": len(golden) + 1,
        "user": {"instructions": instructions},
        "mutation": {"stray_write": {"turn": 1, "call": {
            "name": "modify_user_address",
            "arguments": {"user_id": stray_user, **STRAY_ADDRESS}}}},
        "nl_assertions": list(criteria.get("nl_assertions") or []),
        "reward_basis": basis,
        "imported_from": {"benchmark": BENCHMARK, "commit": SOURCE_COMMIT,
                          "task_id": str(task["id"]), "task": dict(task)},
    }


def _dump(doc: Any) -> str:
    """Must equal the domain's ``tools.dump`` (a test proves it): compact, key order kept."""
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def database_sql(db: Mapping[str, Any]) -> str:
    lines = [f"-- tau2-bench retail ({SOURCE_COMMIT[:7]}), converted by agentsweep import tau2:"
             " one JSON document per row, in db.json's order.",
             "BEGIN;"]
    for table, key in TABLES.items():
        lines.append(f"CREATE TABLE {table} ({key} TEXT PRIMARY KEY, doc TEXT NOT NULL);")
        for doc_key, doc in db[table].items():
            if table == "orders":
                doc = {**doc, **{f: doc.get(f) for f in ORDER_OPTIONAL}}
            lines.append(f"INSERT INTO {table} VALUES ({_quoted(doc_key)}, "
                         f"{_quoted(_dump(doc))});")
    lines.append("COMMIT;")
    return "\n".join(lines) + "\n"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def readme(source: Path, tasks: int, actions: int) -> str:
    rows = "\n".join(f"| {name} | {(source / name).stat().st_size:,} | {_sha256(source / name)} |"
                     for name in SOURCE_FILES)
    return f"""# tau2_retail: tau2-bench's retail domain (imported)

Data from the public repository sierra-research/tau2-bench at commit {SOURCE_COMMIT},
`{SOURCE_PATH}`, MIT License, Copyright (c) 2025 Sierra Research (`LICENSE` here is theirs).
Generated by `agentsweep import tau2 DIR --out catalogs/tau2_retail`; do not edit the generated
files (`db.sql.gz`, `prompts/default.md`, `LICENSE`, this README, `suites/retail.jsonl`): a test
re-runs the import and fails on drift. `tools.py` and `tools.json` are agentsweep's own code.

| source file | bytes | sha256 |
|---|---|---|
{rows}

{tasks} tasks, {actions} gold actions. See docs/tau2.md.
"""


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temp:
        temp.write_bytes(data)


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ImportFailed(f"{path.name}: {exc}") from None


def _with_catches(scenario: dict[str, Any], out: Path) -> dict[str, Any]:
    """The scenario with the mutants it must catch (those that change the database)."""
    from pipeline.catalog import Scenario, load_domain
    from pipeline.interop.catches import database_catches

    domain = load_domain(out.name, out)
    catches = database_catches(domain, Scenario.model_validate(scenario), MUTANTS)
    return {**scenario, "catches": catches}


def import_tau2(source: Path, out: Path) -> ImportReport:
    """Convert ``source`` into ``out`` (a domain folder; its name is the domain's), all or
    nothing: built beside ``out`` and swapped in once complete."""
    from pipeline.catalog.domains import DOMAIN_NAME

    if not DOMAIN_NAME.fullmatch(out.name):
        raise ImportFailed(f"{out}: the folder's name is the domain's and must be a plain "
                           "identifier (a lowercase letter, then lowercase letters, digits, _)")
    for name in SOURCE_FILES:
        if not (source / name).is_file():
            raise ImportFailed(f"{source / name}: missing")
        check_size(source / name)
    tasks = _load_json(source / "tasks.json")
    check_tasks(tasks)
    for code in ("tools.json", "tools.py"):
        if not (out / code).is_file():
            raise ImportFailed(f"{out / code}: the domain's own code must be in the folder "
                               "first (catalogs/tau2_retail has it)")
    tools = {t["name"] for t in _load_json(out / "tools.json")["tools"]}
    for task in tasks:
        check_task(task, tools)
    db = _load_json(source / "db.json")
    if not isinstance(db, dict) or any(not isinstance(db.get(t), dict) or not db[t]
                                       for t in TABLES):
        raise ImportFailed(f"db.json: expected an object with the non-empty objects "
                           f"{', '.join(TABLES)}")
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.import-", dir=out.resolve().parent))
    try:
        staged = work / out.name
        shutil.copytree(out, staged, symlinks=True)
        report = _generate(source, staged, tasks, db)
        swap_folder(staged, out, work / ".previous")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report


def _generate(source: Path, out: Path, tasks: list[dict[str, Any]],
              db: Mapping[str, Any]) -> ImportReport:
    from pipeline.catalog import CatalogError

    _write(out / "db.sql.gz", gzip.compress(database_sql(db).encode(), compresslevel=9,
                                            mtime=0))
    try:
        lines = [json.dumps(_with_catches(scenario_of(t, out.name, next(iter(db["users"]))),
                                          out), ensure_ascii=False, sort_keys=True)
                 for t in tasks]
    except CatalogError as exc:
        raise ImportFailed(str(exc)) from None
    actions = sum(len(t["evaluation_criteria"].get("actions") or []) for t in tasks)
    files = {
        "db.sql.gz": (out / "db.sql.gz").read_bytes(),
        "prompts/default.md": (source / "policy.md").read_bytes(),
        "LICENSE": (source / "LICENSE").read_bytes(),
        "README.md": readme(source, len(tasks), actions).encode(),
        "suites/retail.jsonl": ("\n".join(lines) + "\n").encode(),
    }
    assert tuple(files) == GENERATED
    for name, data in files.items():
        _write(out / name, data)
    return ImportReport(len(tasks), actions, tuple(files))

