"""Inspect AI's half of ``side_by_side.py``: the workload as an Inspect task, run two ways.

``http``: Inspect's OpenAI-compatible provider (``openai-api/ref/golden``) to ``agentsweep
reference-server``, the request naming the scenario's script by id (registered with the
server by the benchmark, ``pipeline.reference.scripts``), as agentsweep's requests do: both
sides send what a real provider gets, plus a few dozen bytes. ``mockllm``: Inspect's
in-process mock model answering from the same golden script (its ``custom_outputs``
callable reads the place in the script from the conversation, as ``reference/golden`` does).
The task plays the scenario's system prompt, tool schemas and user turns; its tools answer a
fixed JSON. Inspect AI is installed in its own venv, never a project dependency.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "catalogs" / "meeting_rooms" / "suites" / "intent_change.jsonl"
SCENARIO = "R1"
INSPECT_VERSION = "0.3.285"
INSPECT_VENV = Path.home() / ".cache" / "agentsweep" / "bench-inspect"

INSPECT_TASK = '''"""The side-by-side workload as an Inspect AI task (inspect_side.py)."""

import json
import os

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig, ModelOutput
from inspect_ai.model import ModelUsage, get_model
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolDef, ToolParams

with open(os.environ["SIDE_BY_SIDE_WORKLOAD"], encoding="utf-8") as handle:
    WORKLOAD = json.load(handle)


def _tool(spec):
    function = spec["function"]
    parameters = json.loads(json.dumps(function["parameters"]))
    for name, schema in parameters.get("properties", {}).items():
        schema.setdefault("description", name)  # Inspect refuses a parameter without one

    async def execute(**arguments):
        return json.dumps({"ok": True, "tool": function["name"], "arguments": arguments})

    return ToolDef(execute, name=function["name"], description=function["description"],
                   parameters=ToolParams.model_validate(parameters)).as_tool()


def scripted(input, tools, tool_choice, config):
    """mockllm's answer: the script's action at the conversation's (turn, step), with usage
    counted in words as the reference server does (else mockllm counts it with tiktoken, which
    downloads its encoding)."""
    turn = step = 0
    for message in input:
        if message.role == "user":
            turn, step = turn + 1, 0
        elif message.role == "assistant":
            step += 1
    action = WORKLOAD["script"]["turns"][turn - 1]["actions"][step]
    if "call" in action:
        output = ModelOutput.for_tool_call("mockllm", action["call"]["name"],
                                           action["call"]["arguments"])
    else:
        output = ModelOutput.from_content("mockllm", action["reply"])
    words = sum(len(message.text.split()) for message in input)
    output.usage = ModelUsage(input_tokens=words, output_tokens=len(output.completion.split()),
                              total_tokens=words + len(output.completion.split()))
    return output


@solver
def dialog():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.tools = [_tool(spec) for spec in WORKLOAD["tools"]]
        for user in WORKLOAD["turns"]:
            state.messages.append(ChatMessageUser(content=user))
            state = await generate(state, tool_calls="loop")
        return state

    return solve


@task
def room_dialog(trials: int = 1, mock: bool = False):
    model = get_model("mockllm/model", custom_outputs=scripted) if mock else None
    return Task(
        dataset=[Sample(id=i + 1, input=[ChatMessageSystem(content=WORKLOAD["system"])])
                 for i in range(trials)],
        solver=dialog(), model=model,
        config=GenerateConfig(extra_body={WORKLOAD["script_id_key"]: WORKLOAD["script_id"]}))
'''

FIRST_SAMPLE = """
import json, sys
from datetime import datetime
from inspect_ai.log import list_eval_logs, read_eval_log
log = read_eval_log(list_eval_logs(sys.argv[1])[0])
assert log.status == "success", log.status
samples = [(datetime.fromisoformat(str(s.started_at)).timestamp(), s.total_time)
           for s in log.samples or [] if s.started_at]
calls = sum(e.event == "model" for s in log.samples or [] for e in s.events)
print(json.dumps([*min(samples), calls] if samples else None))
"""
"""Prints [start (Unix time), total seconds] of the sample that started first, and the model
calls of all samples (their model events)."""


def install_inspect() -> Path:
    """Inspect AI in its own venv (never a project dependency); returns its python."""
    python = INSPECT_VENV / "bin" / "python"
    stamp = INSPECT_VENV / f".installed-{INSPECT_VERSION}"
    if stamp.exists():
        return python
    INSPECT_VENV.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(INSPECT_VENV)], check=True)
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                           "--disable-pip-version-check", f"inspect-ai=={INSPECT_VERSION}",
                           "openai"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if not line.startswith("WARNING")]
        raise RuntimeError("pip install inspect-ai failed: " + " / ".join(errors[-5:]))
    stamp.touch()
    return python


def write_workload(path: Path, api_base: str) -> None:
    """The scenario's system prompt, user turns, tool schemas and golden script, as JSON; the
    script registered with the reference server behind ``api_base`` (its id in the JSON)."""
    sys.path.insert(0, str(REPO))
    from pipeline.catalog import load_domain, load_suite
    from pipeline.reference.reference import golden_script
    from pipeline.reference.scripts import SCRIPT_ID_KEY, register

    (entry,) = [e for e in load_suite(SUITE).scenarios if e.scenario.id == SCENARIO]
    scenario = entry.scenario
    domain = load_domain(scenario.domain)
    script = golden_script(scenario, domain)
    path.write_text(json.dumps({
        "system": (domain.path / "prompts" / "default.md").read_text("utf-8"),
        "turns": [turn.user for turn in scenario.turns], "tools": domain.openai_tools(),
        "script": script, "script_id_key": SCRIPT_ID_KEY,
        "script_id": register(api_base, script)}), "utf-8")


class Inspect:
    """``inspect eval`` of the workload task, with its own log and data dirs; ``mock``: the
    in-process mockllm in place of the reference server."""

    def __init__(self, work: Path, label: str, api_base: str, python: Path,
                 mock: bool = False) -> None:
        self.name = "Inspect"
        self.mock = mock
        self.work = work / f"inspect-{label}"
        self.work.mkdir()
        self.python = python
        self.task = work / "room_dialog.py"
        self.workload = work / "workload.json"
        if not self.task.exists():
            self.task.write_text(INSPECT_TASK, "utf-8")
            write_workload(self.workload, api_base)
        self.api_base = api_base
        self.log = work / f"inspect-{label}.log"
        self.runs = 0

    def env(self) -> dict[str, str]:
        return {**{k: v for k, v in os.environ.items() if not k.startswith("INSPECT_")},
                "SIDE_BY_SIDE_WORKLOAD": str(self.workload), "REF_BASE_URL": self.api_base,
                "REF_API_KEY": "sk-bench-not-a-key", "XDG_DATA_HOME": str(self.work / "data"),
                "XDG_CACHE_HOME": str(self.work / "cache"), "INSPECT_DISPLAY": "none"}

    def command(self, trials: int, in_flight: int, logs: Path) -> list[str]:
        model = "mockllm/model" if self.mock else "openai-api/ref/golden"
        return [str(self.python.parent / "inspect"), "eval", f"{self.task}@room_dialog",
                "-T", f"trials={trials}", "-T", f"mock={self.mock}", "--model", model,
                "--max-connections", str(in_flight), "--max-samples", str(in_flight),
                "--log-dir", str(logs), "--display", "none"]

    def run(self, trials: int, in_flight: int, measure: Any) -> Any:
        """``measure(command, env, marker, log)``: the run measured; the start and duration of
        its first sample (from Inspect's log) filled in."""
        self.runs += 1
        logs = self.work / f"logs-{self.runs}"
        started = time.time()
        result = measure(self.command(trials, in_flight, logs), self.env(), str(self.work),
                         self.log)
        done = subprocess.run([str(self.python), "-c", FIRST_SAMPLE, str(logs)], env=self.env(),
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"its log says the run failed: {done.stderr.strip()[-400:]}")
        first = json.loads(done.stdout.strip() or "null")
        if first is not None:
            result.first_trial_s = first[0] - started
            result.first_trial_duration_s = first[1]
            result.model_calls = first[2]  # the server's count replaces it over HTTP
        return result

    def close(self) -> None:
        pass
