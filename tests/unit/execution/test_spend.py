"""The spend book: what an attempt cost (reported, else at the list price, else unknown), the
caps of a sweep and of one model, and the retries a reached cap drops; no Ray."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from conftest import MEETING_SUITE

from pipeline.catalog import load_suites
from pipeline.execution.attempts import RetryBook
from pipeline.execution.retry import RetryPolicy
from pipeline.execution.spend import Charge, SpendBook, SpendCaps
from pipeline.models.pricing import Price
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.trial.run import RunContext, TrialResult, harness_failure

PRICE = Price(input_per_token=1e-6, output_per_token=4e-6)


def test_an_attempt_costs_its_report_else_its_tokens_at_the_list_price() -> None:
    assert Charge("m", 2, 0.5, 100, 10).usd(PRICE) == 0.5  # the provider's report wins
    assert Charge("m", 2, None, 1000, 100).usd(PRICE) == pytest.approx(0.0014)
    assert Charge("m", 2, None, 1000, None).usd(PRICE) is None  # tokens unknown
    assert Charge("m", 2, None, 1000, 100).usd(None) is None  # no price: unknown, never 0
    assert Charge("m", 0, None, None, None).usd(None) == 0.0  # no call, no cost


def test_the_sweep_cap_stops_every_model_once_reached() -> None:
    said: list[str] = []
    book = SpendBook(SpendCaps(sweep=0.01), {"a": PRICE}, on_reached=said.append)
    book.add([Charge("a", 1, 0.006, None, None)])
    assert book.allows(["a"]) and book.reached() is None
    book.add([Charge("a", 1, 0.005, None, None)])
    assert not book.allows(["a"]) and not book.allows(["b"])
    book.add([Charge("a", 1, 0.001, None, None)])  # a running attempt finishing: counted
    assert book.total == pytest.approx(0.012)
    assert said == ["spend cap reached: max_cost_usd 0.01 of the sweep; $0.011000 spent in "
                    "this run"]  # said once, when it was reached


def test_a_model_cap_stops_that_model_only_and_unknown_costs_are_said() -> None:
    book = SpendBook(SpendCaps(models={"a": 0.002}), {"a": PRICE, "b": PRICE})
    book.add([Charge("a", 3, None, 1000, 300), Charge("u", 1, None, 5, 5)])
    assert book.spent == {"a": pytest.approx(0.0022)}
    assert book.unknown_attempts == 1  # the simulator's call had no price
    assert not book.allows(["a"]) and book.allows(["b"])
    assert not book.allows(["b", "a"])  # an attempt calling a capped model too
    line = book.reached()
    assert line is not None and "max_cost_usd 0.002 of a (spent $0.002200)" in line
    assert "1 attempt(s) of unknown cost not counted" in line


def test_the_retry_book_drops_the_retries_a_cap_forbids() -> None:
    suites = load_suites([MEETING_SUITE])
    models = [ModelConfig("reference/golden"), ModelConfig("reference/always-refuses")]
    specs = list(expand(suites, models, ["default"], ["chat"], 1))[:4]
    book = RetryBook(RetryPolicy(max_attempts=3, backoff_base_s=0), rng=random.Random(0),
                     clock=lambda: 0.0)
    for spec in specs:
        row = harness_failure(spec, RunContext("r", "test"), "").trial
        book.settle(spec, 1, TrialResult(replace(row, status="incomplete",
                                                 error_kind="rate_limit")))
    assert book.waiting == 4
    lazy = [s for s in specs if s.model.name == "reference/always-refuses"]
    assert book.drop(lambda spec: spec.model.name == "reference/always-refuses") == len(lazy) > 0
    assert book.waiting == 4 - len(lazy)
    left = [book.pop_due() for _ in range(book.waiting)]
    assert all(due is not None and due[0].model.name == "reference/golden" for due in left)


def test_attempts_in_flight_hold_their_worst_case_until_they_end() -> None:
    book = SpendBook(SpendCaps(sweep=0.01), {"a": PRICE})
    assert book.fits(["a"])
    book.reserve("t1:1", {"a": 0.006})
    assert book.fits(["a"])  # 0.006 held, under the cap: one more may start
    book.reserve("t2:1", {"a": 0.006})
    assert not book.fits(["a"]) and book.allows(["a"])  # held, not reached: it waits
    book.add([Charge("a", 2, 0.001, None, None)], attempt="t1:1")  # the actual replaces it
    assert book.held() == pytest.approx(0.006) and book.fits(["a"])
    book.add([Charge("a", 2, 0.001, None, None)], attempt="t2:1")
    assert book.reserved == {} and book.total == pytest.approx(0.002)


def test_an_unknown_worst_case_runs_alone_then_reserves_the_largest_seen() -> None:
    book = SpendBook(SpendCaps(sweep=0.01), {"a": PRICE})
    book.reserve("t1:1", {"a": None})
    assert not book.fits(["a"])  # nothing seen yet: the first attempt is a probe, alone
    book.add([Charge("a", 0, None, None, None)], attempt="t1:1")  # no call: says nothing
    book.reserve("t2:1", {"a": None})
    assert not book.fits(["a"])
    book.add([Charge("a", 3, 0.003, None, None)], attempt="t2:1")
    book.reserve("t3:1", {"a": None})
    assert book.reserved["t3:1"] == {"a": 0.003}
    book.reserve("t4:1", {"a": None})
    assert book.fits(["a"])  # 0.003 spent + 0.006 held: under the cap
    book.reserve("t5:1", {"a": None})
    assert not book.fits(["a"])


def test_a_model_cap_counts_only_that_models_hold() -> None:
    book = SpendBook(SpendCaps(models={"a": 0.01}), {"a": PRICE, "b": PRICE})
    book.reserve("t1:1", {"a": 0.02, "b": None})
    assert not book.fits(["a"]) and book.fits(["b"])


def test_a_worst_case_is_every_call_an_attempt_may_make_at_one_calls_ceiling() -> None:
    from pipeline.execution.spend import MEMORY_CALLS_PER_TURN, worst_case

    spec = next(iter(expand(load_suites([MEETING_SUITE]), [ModelConfig("reference/golden")],
                            ["default"], ["chat"], 1)))
    calls = len(spec.scenario.turns) * (spec.step_limit + MEMORY_CALLS_PER_TURN)
    assert worst_case(spec, {"reference/golden": 0.5}) == {"reference/golden": calls * 0.5}
    assert worst_case(spec, {}) == {"reference/golden": None}
