"""Shards of a run (pipeline.execution.shards): ``I/N`` parsed with errors that say the form,
and the grid split by trial id into disjoint, covering, stable, balanced slices."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pipeline.execution.shards import Shard, from_label, parse_shard, shard_of

IDS = [f"trial-{i:05d}" for i in range(3000)]


@pytest.mark.parametrize(("text", "index", "count"), [
    ("1/2", 1, 2), ("2/2", 2, 2), (" 3 / 4 ", 3, 4), ("1/1", 1, 1), ("10000/10000", 10000, 10000)])
def test_a_shard_is_parsed_from_i_of_n(text: str, index: int, count: int) -> None:
    shard = Shard.model_validate(text)
    assert (shard.index, shard.count) == (index, count)
    assert str(shard) == f"{index}/{count}" and shard.label == f"{index}-of-{count}"
    assert from_label(shard.label) == shard


@pytest.mark.parametrize(("text", "said"), [
    ("", "give the shard as I/N"), ("2", "give the shard as I/N"),
    ("1/2/3", "give the shard as I/N"), ("a/b", "give the shard as I/N"),
    ("-1/2", "give the shard as I/N"), ("0/2", "shard 0 of 2 does not exist"),
    ("3/2", "shard 3 of 2 does not exist: give I/N with 1 <= I <= N (1/2 .. 2/2)"),
    ("1/0", "the number of shards N must be from 1 to 10000"),
    ("1/10001", "the number of shards N must be from 1 to 10000")])
def test_a_bad_shard_says_what_the_form_is(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=said.replace("(", r"\(").replace(")", r"\)")):
        parse_shard(text)
    with pytest.raises(ValidationError, match=said.split(":")[0]):
        Shard.model_validate(text)


def test_a_shard_given_as_fields_is_checked_too() -> None:
    with pytest.raises(ValidationError, match="does not exist"):
        Shard(index=3, count=2)
    with pytest.raises(ValidationError):
        Shard(index=0, count=2)


def test_a_name_that_is_no_shard_label_is_none() -> None:
    assert from_label("1-of-2") == Shard(index=1, count=2)
    assert from_label("3-of-2") is None and from_label("notes") is None


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_the_shards_of_a_count_split_the_grid_disjoint_and_whole(count: int) -> None:
    shards = [Shard(index=i, count=count) for i in range(1, count + 1)]
    slices = [{t for t in IDS if shard.holds(t)} for shard in shards]
    assert sum(len(s) for s in slices) == len(IDS)  # disjoint...
    assert set().union(*slices) == set(IDS)  # ...and whole
    assert min(len(s) for s in slices) > 0.8 * len(IDS) / count  # about even


def test_a_trials_shard_is_fixed_by_its_id_alone() -> None:
    """Fixed values (never Python's salted hash): every driver, on any machine, puts a trial
    in the same shard, or two drivers of a run would run it twice and others none."""
    assert [shard_of(t, 7) for t in IDS[:8]] == [1, 5, 4, 2, 5, 7, 3, 1]
    assert [shard_of("trial-00000", n) for n in (1, 2, 3, 5)] == [1, 2, 1, 1]
