"""Object storage going away: a request is retried through a short outage (a forwarder in
front of moto's S3 server that refuses connections, then comes back); past the bound it fails
with one line naming the endpoint, never a credential."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from helpers.s3_server import DUMMY_ENV
from helpers.tcp_forwarder import TcpForwarder
from unit.warehouse.test_compact import RUN, _trial

from warehouse.location import S3Location, client
from warehouse.objectstore import committed_parts, put_object
from warehouse.store_retry import ENV, ObjectStoreUnavailable, transient
from warehouse.writer import WarehouseWriter


@pytest.fixture
def forwarded(s3_warehouse: S3Location, s3_endpoint: str,
              monkeypatch: pytest.MonkeyPatch) -> Iterator[TcpForwarder]:
    """The test's bucket reached through a forwarder in front of moto."""
    forwarder = TcpForwarder(int(urlsplit(s3_endpoint).port or 0))
    forwarder.start()
    monkeypatch.setenv("AWS_ENDPOINT_URL", forwarder.endpoint)
    yield forwarder
    forwarder.stop()


def _away_for(forwarder: TcpForwarder, seconds: float) -> threading.Thread:
    forwarder.stop()
    back = threading.Timer(seconds, forwarder.start)
    back.start()
    return back


def test_transient_faults_are_told_from_answers() -> None:
    def client_error(status: int, code: str) -> ClientError:
        return ClientError({"Error": {"Code": code},
                            "ResponseMetadata": {"HTTPStatusCode": status}}, "PutObject")

    assert transient(EndpointConnectionError(endpoint_url="http://127.0.0.1:1"))
    assert transient(client_error(503, "SlowDown")) and transient(client_error(500, "x"))
    assert transient(client_error(400, "RequestTimeout"))
    assert not transient(client_error(403, "AccessDenied"))
    assert not transient(client_error(412, "PreconditionFailed"))
    assert transient(OSError("When initiating multiple part upload for key 'k' in bucket 'b': "
                             "AWS Error NETWORK_CONNECTION during CreateMultipartUpload "
                             "operation: curlCode: 7, Couldn't connect to server"))
    assert not transient(OSError("AWS Error ACCESS_DENIED during PutObject operation"))


def test_a_batch_is_written_whole_through_a_short_outage(
        s3_warehouse: S3Location, forwarded: TcpForwarder) -> None:
    back = _away_for(forwarded, 2.0)
    started = time.monotonic()
    WarehouseWriter(s3_warehouse, RUN).write_batch({"trials": [_trial(1)]})
    back.join()
    assert time.monotonic() - started >= 1.5
    assert committed_parts(s3_warehouse, [RUN])["trials"]


def test_a_conditional_write_that_landed_before_its_answer_was_lost_is_its_own(
        s3_warehouse: S3Location, forwarded: TcpForwarder,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import warehouse.objectstore as objectstore

    real = objectstore._put_once
    calls: list[int] = []

    def lost_answer(*args: object) -> str:
        calls.append(1)
        etag = real(*args)  # type: ignore[arg-type]
        if len(calls) == 1:
            raise EndpointConnectionError(endpoint_url=forwarded.endpoint)
        return etag

    monkeypatch.setattr(objectstore, "_put_once", lost_answer)
    assert put_object(s3_warehouse, "k.json", b"mine", if_none_match=True)
    assert len(calls) == 2


def test_past_the_bound_one_line_names_the_endpoint_and_no_secret(
        s3_warehouse: S3Location, forwarded: TcpForwarder,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "1")
    forwarded.stop()
    started = time.monotonic()
    with pytest.raises(ObjectStoreUnavailable) as caught:
        WarehouseWriter(s3_warehouse, RUN).write_batch({"trials": [_trial(1)]})
    line = str(caught.value)
    assert 1 <= time.monotonic() - started < 15
    assert "\n" not in line and forwarded.endpoint in line and "writing trials/" in line
    assert DUMMY_ENV["AWS_SECRET_ACCESS_KEY"] not in line and "did not answer for 1 s" in line
    tries = _counted_puts(monkeypatch)
    with pytest.raises(ObjectStoreUnavailable):  # the bound was spent: one try, no waiting
        put_object(s3_warehouse, "k.json", b"x")
    assert tries == [1]
    forwarded.start()
    put_object(s3_warehouse, "k.json", b"x")  # back: one try, and waiting is on again
    assert client().get_object(Bucket=s3_warehouse.bucket,
                               Key=s3_warehouse.key("k.json"))["Body"].read() == b"x"


def _counted_puts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many requests each ``put_object`` sends from now on (one entry per call)."""
    import warehouse.objectstore as objectstore

    sent: list[int] = []
    real = objectstore._put_once

    def counted(*args: object, **kwargs: object) -> str:
        if not sent:
            sent.append(0)
        sent[-1] += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(objectstore, "_put_once", counted)
    return sent
