from __future__ import annotations

import os

import pytest

from pipeline.util.redact import MASK, redact, redact_value

CANARY = "sk-canary-0123456789abcdefABCDEF"


def test_known_key_shapes_and_env_secrets_are_masked(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("ACME_API_KEY", "plain-looking-secret-value")
    text = (f"key={CANARY} auth: Bearer abc.def-123456789 "
            f"env=plain-looking-secret-value api_key: 'zzzzzzzzzzzz'")
    out = redact(text)
    for secret in (CANARY, "abc.def-123456789", "plain-looking-secret-value", "zzzzzzzzzzzz"):
        assert secret not in out
    assert out.count(MASK) >= 4
    assert redact_value({"a": [CANARY]}) == {"a": [MASK]}
    assert os.environ["ACME_API_KEY"]


def test_ordinary_text_is_untouched() -> None:
    text = "Забронировал birch на 8 человек, 7 августа с 15:00; token count 12"
    assert redact(text) == text


def test_a_redactor_reads_the_environment_once_and_redacts_as_redact_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.util.redact import redact, redactor

    monkeypatch.setenv("SOME_SERVICE_API_KEY", "canary-0123456789")
    scrub = redactor()
    text = "key canary-0123456789, header Bearer abcdefghijkl, sk-abcdefghijklmnop"
    assert scrub(text) == redact(text) and "canary-0123456789" not in scrub(text)


def test_the_environment_is_scanned_once_and_again_only_after_a_change(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.util import redact as module

    scans: list[int] = []
    real = module._scan_env

    def counting() -> list[str]:
        scans.append(1)
        return real()

    monkeypatch.setattr(module, "_scan_env", counting)
    monkeypatch.setattr(module, "_secrets", None)
    for _ in range(50):
        assert redact("nothing secret here") == "nothing secret here"
    assert len(scans) == 1

    monkeypatch.setenv("LATER_API_KEY", "added-later-0123456789")  # a key added later
    assert redact("x added-later-0123456789 y") == f"x {MASK} y"
    monkeypatch.setenv("LATER_API_KEY", "rotated-0123456789")  # the same key, a new value
    assert redact("rotated-0123456789") == MASK
    monkeypatch.delenv("LATER_API_KEY")  # gone, and another of the same size in its place
    monkeypatch.setenv("OTHER_API_KEY", "replaced-0123456789")
    assert redact("replaced-0123456789") == MASK
    assert len(scans) == 4
    assert redact("still nothing") == "still nothing" and len(scans) == 4
