"""The receiver side of spec section 6.3: verify a delivery and get its typed event.

It follows the gateway's own verifier rule for rule (clients/README.md, "The verifier
contract"), and the shared vectors in clients/webhook-vectors.json check that it does.
"""

import hashlib
import hmac
import json
import re
import time
from datetime import datetime
from typing import Any, Dict, Iterable, Mapping, Optional, Protocol, Tuple, TypedDict, Union

from ._generated.types import Chain, Currency, Refund, SessionStatus, WebhookEventType

#: Header names (HTTP header names are case-insensitive; these are the README's spelling).
SIGNATURE_HEADER = "X-Service-Signature"
TIMESTAMP_HEADER = "X-Service-Timestamp"
NONCE_HEADER = "X-Service-Nonce"
EVENT_ID_HEADER = "X-Service-Event-Id"

#: Spec section 8: a delivery whose timestamp is further than this from now is refused.
DEFAULT_TOLERANCE_SECONDS = 300

#: Most signatures one X-Service-Signature may carry (one, or two while a rotated secret still signs).
MAX_SIGNATURES = 8

_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_SIGNATURE = re.compile(r"sha256=[0-9a-f]{64}")


class WebhookVerificationError(Exception):
    """Why a delivery was refused. ``reason`` is stable (answer 400 and log it); the message is for people.

    Reasons: missing_header, malformed_header, timestamp_out_of_tolerance, signature_mismatch,
    malformed_body, livemode_mismatch, nonce_reused.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class PaymentEventData(TypedDict, total=False):
    """``data`` of ``payment.*`` events: the session's state when the event happened. Amounts are decimal text."""

    id: str
    amount: str
    currency: Currency
    chain: Chain
    status: SessionStatus
    txHash: Optional[str]
    confirmedAt: Optional[str]
    amountDue: str
    amountReceived: str
    amountPending: str
    fee: str
    paymentAddress: str
    confirmations: int
    expiresAt: str
    metadata: Dict[str, str]
    livemode: bool
    #: While confirmed plus pending money is short of amountDue.
    amountRemaining: str
    #: While confirmed money exceeds amountDue (refundable).
    amountExcess: str
    #: On payment.failed.
    failureReason: str


class EndpointDisabledData(TypedDict):
    """``data`` of ``webhook_endpoint.disabled``, sent to the merchant's other endpoints."""

    id: str
    url: str
    status: str
    reason: str
    disabledAt: str


class WebhookEvent(TypedDict):
    """The envelope of spec section 6.2. ``data`` is a PaymentEventData (payment.*), a Refund
    (refund.*) or an EndpointDisabledData (webhook_endpoint.disabled)."""

    #: Stable across retries, redeliveries and replays: dedupe on it.
    id: str
    event: WebhookEventType
    data: Union[PaymentEventData, Refund, EndpointDisabledData]
    #: When the event happened (ISO 8601), not when it was sent.
    timestamp: str
    livemode: bool


class NonceCache(Protocol):
    """Remembers accepted nonces for at least the tolerance; returns False for a nonce seen before."""

    def check_and_remember(self, nonce: str, now_seconds: int) -> bool: ...


class MemoryNonceCache:
    """An in-process NonceCache (entries live twice the tolerance). Several processes need shared storage (Redis SET NX EX)."""

    def __init__(self, ttl_seconds: int = 2 * DEFAULT_TOLERANCE_SECONDS) -> None:
        self._ttl = ttl_seconds
        self._seen: Dict[str, int] = {}

    def check_and_remember(self, nonce: str, now_seconds: int) -> bool:
        for key in list(self._seen):
            if self._seen[key] > now_seconds:
                break  # insertion order is expiry order
            del self._seen[key]
        if nonce in self._seen:
            return False
        self._seen[nonce] = now_seconds + self._ttl
        return True


Headers = Union[Mapping[str, Any], Iterable[Tuple[str, Any]]]


def _header(headers: Headers, name: str) -> Optional[str]:
    pairs = headers.items() if hasattr(headers, "items") else headers
    wanted = name.lower()
    for key, value in pairs:  # type: ignore[union-attr]
        if key.lower() == wanted:
            if isinstance(value, (list, tuple)):
                return str(value[0]) if value else None
            return str(value)
    return None


def compute_signature(secret: str, timestamp: Union[str, int], nonce: str, raw_body: Union[bytes, str]) -> str:
    """``sha256=`` + hex HMAC-SHA256 of ``timestamp.nonce.raw_body`` under ``secret``."""
    body = raw_body.encode("utf-8") if isinstance(raw_body, str) else raw_body
    digest = hmac.new(secret.encode("utf-8"), f"{timestamp}.{nonce}.".encode("utf-8") + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify_webhook(
    raw_body: Union[bytes, str],
    headers: Headers,
    secret: str,
    *,
    tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
    now: Union[None, int, float, datetime] = None,
    livemode: Optional[bool] = None,
    nonce_cache: Optional[NonceCache] = None,
) -> WebhookEvent:
    """Verify one delivery and return its event.

    The checks, in this order: the three headers are present and non-empty; the timestamp is unix
    seconds and the signature header is one to eight comma-separated ``sha256=<64 lower-case hex>``;
    the timestamp is within ``tolerance_seconds`` of ``now``; one of the signatures is the HMAC of
    the raw body under ``secret`` (every one compared, each in constant time); the body is a JSON
    object; its ``livemode`` is the required mode (``livemode=True`` on a live receiver refuses
    sandbox events); its nonce is new to ``nonce_cache``.

    Pass the body exactly as received (``request.get_data()``, ``request.body``), never a
    re-serialised object; ``headers`` is any mapping or list of pairs (names case-insensitive).
    Raises WebhookVerificationError naming the rule that failed.
    """
    signature = _header(headers, SIGNATURE_HEADER)
    timestamp = _header(headers, TIMESTAMP_HEADER)
    nonce = _header(headers, NONCE_HEADER)
    for header_name, value in ((SIGNATURE_HEADER, signature), (TIMESTAMP_HEADER, timestamp), (NONCE_HEADER, nonce)):
        if not value:
            raise WebhookVerificationError("missing_header", f"missing {header_name} header")
    assert signature is not None and timestamp is not None and nonce is not None
    if not _TIMESTAMP.fullmatch(timestamp):
        raise WebhookVerificationError("malformed_header", "X-Service-Timestamp is not unix seconds")
    # Optional whitespace around each signature is HTTP's: spaces and tabs only.
    signatures = [part.strip(" \t") for part in signature.split(",")]
    if len(signatures) > MAX_SIGNATURES or not all(_SIGNATURE.fullmatch(part) for part in signatures):
        raise WebhookVerificationError(
            "malformed_header", f"X-Service-Signature is not sha256=<64 hex digits> (at most {MAX_SIGNATURES}, comma-separated)"
        )

    if now is None:
        now_seconds = int(time.time())
    elif isinstance(now, datetime):
        now_seconds = int(now.timestamp() // 1)
    else:
        now_seconds = int(now // 1)
    if abs(now_seconds - int(timestamp)) > tolerance_seconds:
        raise WebhookVerificationError("timestamp_out_of_tolerance", f"timestamp is more than {tolerance_seconds} seconds from now")

    body = raw_body.encode("utf-8") if isinstance(raw_body, str) else bytes(raw_body)
    expected = compute_signature(secret, timestamp, nonce, body).encode("ascii")
    matched = False
    for given in signatures:
        # No early exit: the time taken does not tell which signature matched.
        if hmac.compare_digest(expected, given.encode("ascii")):
            matched = True
    if not matched:
        raise WebhookVerificationError("signature_mismatch", "signature does not match")

    try:
        event = json.loads(body.decode("utf-8", errors="replace"))
    except ValueError:
        raise WebhookVerificationError("malformed_body", "body is not JSON") from None
    if not isinstance(event, dict):
        raise WebhookVerificationError("malformed_body", "body is not a JSON object")
    if livemode is not None and event.get("livemode") is not livemode:

        def mode(live: Any) -> str:
            return "live" if live is True else "sandbox" if live is False else "unknown-mode"

        raise WebhookVerificationError(
            "livemode_mismatch", f"a {mode(event.get('livemode'))} event, but this receiver takes {mode(livemode)} events only"
        )
    # Only a delivery that passed every other check may occupy a nonce: forged requests cannot burn real ones.
    if nonce_cache is not None and not nonce_cache.check_and_remember(nonce, now_seconds):
        raise WebhookVerificationError("nonce_reused", "nonce was already used")
    return event  # type: ignore[return-value]
