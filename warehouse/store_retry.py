"""Transient faults of object storage, retried: one request to the bucket tried again with
exponential backoff while its endpoint is away, up to a bounded outage.

Every request a run makes to the bucket (``warehouse.objectstore``'s puts, gets, deletes and
listings, a part written by ``warehouse.writer``) goes through ``retrying``: the request is
the unit that can be repeated without changing what it means (a part's key is fixed before it
is written; a conditional PUT whose first try may have landed checks whether the object is its
own, ``objectstore.put_object``). A connection refused or reset, a timeout, a 5xx, throttling
(SlowDown) is transient; anything else (403, 404, a failed condition) is the answer. Past
``AGENTSWEEP_OBJECT_STORE_RETRY_S`` of one outage, ``ObjectStoreUnavailable`` says in one line
what failed and where (the endpoint, never a credential): the sweep stops there, exit 3, and
resumes (flows.sweep). Once the bound was spent, later requests of the process try once
without waiting, until one succeeds: a run that stopped does not wait again to release its
lease or read its summary.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from warehouse.location import endpoint_url

RETRY_S = 60.0
"""How long one outage of object storage is waited out (``AGENTSWEEP_OBJECT_STORE_RETRY_S``)."""
ENV = "AGENTSWEEP_OBJECT_STORE_RETRY_S"
FIRST_WAIT_S = 0.25
MAX_WAIT_S = 8.0
TRANSIENT_CODES = frozenset({
    "SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "RequestTimeoutException",
    "InternalError", "ServiceUnavailable", "RequestLimitExceeded", "TooManyRequestsException"})
"""S3 error codes that say "try again" (besides any 5xx status)."""
_ARROW_TRANSIENT = re.compile(
    r"AWS Error (NETWORK_CONNECTION|SLOW_DOWN|THROTTLING|SERVICE_UNAVAILABLE|INTERNAL_FAILURE|"
    r"REQUEST_TIMEOUT|REQUEST_TIME_TOO_SKEWED)|HTTP status 5\d\d|curlCode: (7|28|52|55|56)\b")
"""pyarrow's S3 errors (an OSError with the AWS SDK's error name) that are transient."""
T = TypeVar("T")

_gave_up = threading.Event()


class ObjectStoreUnavailable(RuntimeError):
    """Object storage did not answer within the bound; one line, no credentials."""

    def __init__(self, what: str, endpoint: str, seconds: float, cause: str) -> None:
        super().__init__(f"object storage at {endpoint} did not answer for {seconds:g} s "
                         f"({what}: {cause}); every committed trial is saved")
        self.what, self.endpoint, self.seconds, self.cause = what, endpoint, seconds, cause

    def __reduce__(self) -> tuple[type[ObjectStoreUnavailable], tuple[str, str, float, str]]:
        return ObjectStoreUnavailable, (self.what, self.endpoint, self.seconds, self.cause)


def retry_bound_s() -> float:
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return RETRY_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise ValueError(f"{ENV}={raw!r}: give a number of seconds, 0 or more")
    return seconds


def transient(exc: BaseException) -> bool:
    """A fault that may pass: the endpoint unreachable or overloaded, not an answer."""
    from botocore import exceptions as bx

    if isinstance(exc, bx.ConnectionError | bx.HTTPClientError | ConnectionError | TimeoutError):
        return True
    if isinstance(exc, bx.ClientError):
        error = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return (isinstance(status, int) and status >= 500) or error.get("Code") in TRANSIENT_CODES
    return isinstance(exc, OSError) and bool(_ARROW_TRANSIENT.search(str(exc)))


def _cause(exc: BaseException) -> str:
    """The fault in a few words: its kind, and pyarrow's AWS error name when it has one."""
    found = _ARROW_TRANSIENT.search(str(exc))
    return f"{type(exc).__name__} {found.group(0)}" if found else type(exc).__name__


def retrying(what: str, call: Callable[[], T], *, sleep: Callable[[float], None] = time.sleep,
             clock: Callable[[], float] = time.monotonic) -> T:
    """``call()``, tried again on a transient fault with backoff (with jitter) for at most the
    bound; ObjectStoreUnavailable past it (at once when an earlier request spent it)."""
    bound = 0.0 if _gave_up.is_set() else retry_bound_s()
    start, wait = clock(), FIRST_WAIT_S
    while True:
        try:
            result = call()
        except Exception as exc:
            if not transient(exc):
                raise
            left = bound - (clock() - start)
            if left <= 0:
                _gave_up.set()
                raise ObjectStoreUnavailable(what, endpoint_url() or "the AWS default endpoint",
                                             retry_bound_s(), _cause(exc)) from None
            sleep(min(wait * random.uniform(0.5, 1.0), left))
            wait = min(wait * 2, MAX_WAIT_S)
            continue
        _gave_up.clear()
        return result
