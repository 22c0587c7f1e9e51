"""Can this process use the warehouse's bucket: one small request before a run starts.

A bucket that does not exist, an endpoint that does not answer or credentials the store refuses
would otherwise surface at the first read of the warehouse as a boto3 traceback. ``check_reach``
lists at most one commit record (what every reader lists, and what the documented IAM policy
allows), with short timeouts and one retry, and turns a failure into ``WarehouseUnreachable``:
one line naming the bucket and what to fix. Never the credentials themselves.
"""

from __future__ import annotations

from typing import Any

from warehouse.location import LocationError, S3Location, endpoint_url, region

CHECK_TIMEOUT_S = 10
MISSING_BUCKET = frozenset({"NoSuchBucket"})
REFUSED = frozenset({"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch",
                     "InvalidToken", "ExpiredToken", "AllAccessDisabled", "403"})


class WarehouseUnreachable(LocationError):
    """The warehouse's bucket cannot be used as configured (nothing was written)."""


def check_reach(loc: S3Location) -> None:
    """One listing under the warehouse's prefix; ``WarehouseUnreachable`` says what failed."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    try:
        _client().list_objects_v2(Bucket=loc.bucket, Prefix=loc.key("_commits") + "/",
                                  MaxKeys=1)
    except NoCredentialsError:
        raise WarehouseUnreachable(
            f"warehouse {loc}: no S3 credentials found (set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, a profile in ~/.aws, or a role: "
            "infra/object-storage.md)") from None
    except ClientError as exc:
        raise WarehouseUnreachable(_refusal(loc, exc)) from None
    except (BotoCoreError, ValueError) as exc:  # no answer, or an endpoint that is no URL
        raise WarehouseUnreachable(
            f"warehouse {loc}: the S3 endpoint {_where()} does not answer ({exc}); check "
            "AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL and that the store runs") from None


def _refusal(loc: S3Location, exc: Any) -> str:
    error = exc.response.get("Error", {})
    code = str(error.get("Code", ""))
    if code in MISSING_BUCKET:
        return (f"warehouse {loc}: the bucket {loc.bucket!r} does not exist at {_where()}; "
                "create it first (agentsweep writes into a bucket, it never creates one: "
                "infra/object-storage.md)")
    if code in REFUSED:
        return (f"warehouse {loc}: {_where()} refused the credentials or their permissions "
                f"({code}); check the AWS credentials and that they may list and write "
                f"under {loc} (infra/object-storage.md, IAM permissions)")
    return (f"warehouse {loc}: {_where()} answered {code or 'an error'} "
            f"({error.get('Message', '')}); check the bucket, region and endpoint")


def _where() -> str:
    return endpoint_url() or f"AWS S3{f' ({region()})' if region() else ''}"


def _client() -> Any:
    """A client that gives up in seconds: a start-up check, not a sweep's patient client."""
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=CHECK_TIMEOUT_S, read_timeout=CHECK_TIMEOUT_S,
                    retries={"max_attempts": 2, "mode": "standard"})
    return boto3.session.Session().client("s3", endpoint_url=endpoint_url(),
                                          region_name=region(), config=config)
