"""The HTTP layer under every generated method: authentication, retries, idempotency, errors.

Standard library only (urllib). One logical call is one Idempotency-Key (POST), kept across its
retries, so a retried create cannot create twice.
"""

import email.utils
import http.client
import json
import random
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, TypedDict

from ._version import VERSION
from .errors import APIConnectionError, ConflictError, GatewayError, error_from_response
from .pagination import Page

#: The 409 the gateway gives while a request with the same Idempotency-Key is still running: the
#: one 409 worth retrying (other 409s are conflicts with an object's state). The gateway sends no
#: code or header for it yet, so its message is the signal; a Retry-After on any 409 is honoured too.
IN_FLIGHT_MESSAGE = "a request with this Idempotency-Key is still being processed"


class NotGiven:
    """The default of optional arguments: the field is left out (``None`` sends JSON null)."""

    _instance: Optional["NotGiven"] = None

    def __new__(cls) -> "NotGiven":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN = NotGiven()


class RequestOptions(TypedDict, total=False):
    """Per-call options, the ``options=`` argument of every method."""

    #: The Idempotency-Key of this POST; default a new random one per call, kept across its retries.
    idempotency_key: str
    max_retries: int
    #: Seconds one attempt may take before it counts as a network error.
    timeout: float


class RetryEvent(TypedDict):
    """What ``on_retry`` learns about a retry about to happen."""

    method: str
    path: str
    attempt: int
    delay: float
    error: GatewayError
    idempotency_key: Optional[str]


def is_retryable(error: GatewayError) -> bool:
    """Whether an error is worth another attempt with the same request (and Idempotency-Key)."""
    if isinstance(error, APIConnectionError):
        return True
    if isinstance(error, ConflictError):
        return "retry-after" in error.headers or error.message.startswith(IN_FLIGHT_MESSAGE)
    return error.status == 429 or (error.status is not None and error.status >= 500)


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Retry-After (delay-seconds or an HTTP date) in seconds from now; None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """The API never redirects; a 3xx is an answer to report, not to follow."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _encode_query(query: Optional[Mapping[str, Any]]) -> str:
    if not query:
        return ""
    pairs = []
    for key, value in query.items():
        if value is None:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        pairs.append((key, text))
    return "?" + urllib.parse.urlencode(pairs) if pairs else ""


class Transport:
    """Sends requests under ``base_url`` with the client's key, retries and errors."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str,
        auth_header: str = "bearer",
        max_retries: int = 2,
        timeout: float = 30.0,
        retry_backoff: Tuple[float, float] = (0.5, 8.0),
        max_retry_after: float = 60.0,
        on_retry: Optional[Callable[[RetryEvent], None]] = None,
    ) -> None:
        if not api_key:
            raise ValueError("api_key is required")
        if auth_header not in ("bearer", "x-api-key"):
            raise ValueError('auth_header must be "bearer" or "x-api-key"')
        self.base_url = base_url.rstrip("/")
        self._auth = {"X-API-Key": api_key} if auth_header == "x-api-key" else {"Authorization": f"Bearer {api_key}"}
        self.max_retries = max_retries
        self.timeout = timeout
        self._backoff_initial, self._backoff_max = retry_backoff
        self._max_retry_after = max_retry_after
        self._on_retry = on_retry
        self._opener = urllib.request.build_opener(_NoRedirect)

    def _attempt(self, request: urllib.request.Request, timeout: float) -> Tuple[int, Dict[str, str], Any]:
        try:
            with self._opener.open(request, timeout=timeout) as response:
                return response.status, _headers(response.headers), _body(response.read(), response.headers)
        except urllib.error.HTTPError as answer:
            with answer:
                return answer.code, _headers(answer.headers), _body(answer.read(), answer.headers)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as failure:
            reason = getattr(failure, "reason", failure)
            raise APIConnectionError(f"{request.get_method()} {request.full_url}: {reason}") from failure

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = NOT_GIVEN,
        options: Optional[RequestOptions] = None,
    ) -> Any:
        """One logical call: the parsed JSON of its 2xx answer, or the GatewayError of its last attempt."""
        options = options or {}
        url = f"{self.base_url}{path}{_encode_query(query)}"
        headers = {**self._auth, "Accept": "application/json", "User-Agent": f"svc-gateway-python/{VERSION}"}
        idempotency_key = options.get("idempotency_key") or (str(uuid.uuid4()) if method == "POST" else None)
        if idempotency_key and method == "POST":
            headers["Idempotency-Key"] = idempotency_key
        data = None
        if body is not NOT_GIVEN:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        max_retries = options.get("max_retries", self.max_retries)
        timeout = options.get("timeout", self.timeout)

        retry = 0
        while True:
            request = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                status, answer_headers, answer = self._attempt(request, timeout)
                if 200 <= status < 300:
                    return answer
                error: GatewayError = error_from_response(status, answer_headers, answer)
            except APIConnectionError as failure:
                error = failure
            if retry >= max_retries or not is_retryable(error):
                raise error
            retry_after = parse_retry_after(error.headers.get("retry-after"))
            if retry_after is not None and retry_after > self._max_retry_after:
                raise error
            # Equal jitter: half the exponential step fixed, half random, so clients spread out.
            step = min(self._backoff_max, self._backoff_initial * 2**retry)
            delay = retry_after if retry_after is not None else step / 2 + random.random() * step / 2
            retry += 1
            if self._on_retry:
                self._on_retry({"method": method, "path": path, "attempt": retry, "delay": delay, "error": error, "idempotency_key": idempotency_key})
            time.sleep(delay)

    def page(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        options: Optional[RequestOptions] = None,
    ) -> Page[Any]:
        """The first page of a paged list; the Page fetches the next ones with ``startingAfter``."""
        query = dict(query or {})

        def fetch(cursor: Optional[str]) -> Page[Any]:
            page_query = {**query, "startingAfter": cursor} if cursor else query
            return Page(self.request(method, path, query=page_query, options=options), fetch)

        return fetch(None)


def _headers(message: Any) -> Dict[str, str]:
    return {name.lower(): value for name, value in message.items()} if message is not None else {}


def _body(raw: bytes, headers: Any) -> Any:
    text = raw.decode("utf-8", errors="replace")
    if text and "json" in (headers.get("Content-Type") or ""):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text
