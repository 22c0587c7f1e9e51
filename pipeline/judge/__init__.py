"""The LLM judge (the three-errors method): a separate, repeated, calibrated signal beside the code
checks.

A rubric (``rubric``) and the evidence of a stored trial, passed as untrusted data
(``evidence``), go to a judge model through the model client (``client``); each judgment is
repeated and stored in the ``judgments`` table (``store``, ``run``); people's labels calibrate
it (``calibrate``). A judgment never changes ``trials.passed``.
"""

from pipeline.judge.calibrate import JudgeLabel, calibrate_judge, majority
from pipeline.judge.client import JudgeCall, judge_once
from pipeline.judge.evidence import DEFAULT_FIELDS, EVIDENCE_FIELDS, Evidence, EvidenceField
from pipeline.judge.rubric import Rubric, load_rubric
from pipeline.judge.run import JudgeOptions, JudgeOutcome, judge_run
from pipeline.judge.verdict import REPLY_SCHEMA, JudgeErrorKind, read_verdict

__all__ = [
    "DEFAULT_FIELDS",
    "EVIDENCE_FIELDS",
    "REPLY_SCHEMA",
    "Evidence",
    "EvidenceField",
    "JudgeCall",
    "JudgeErrorKind",
    "JudgeLabel",
    "JudgeOptions",
    "JudgeOutcome",
    "Rubric",
    "calibrate_judge",
    "judge_once",
    "judge_run",
    "load_rubric",
    "majority",
    "read_verdict",
]
