"""Errors the client raises.

Every answer of the gateway that is not 2xx becomes a GatewayError subclass chosen by its status
(catch the class, not the message); a request that got no answer is an APIConnectionError. Each
carries what the gateway said: the HTTP status, its ``{"error": "..."}`` message and the request
id, when the gateway sent one.
"""

from typing import Any, Dict, Mapping, Optional, Type


class GatewayError(Exception):
    """The base of every error raised for an HTTP answer or a failed connection."""

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        request_id: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        #: The HTTP status; None when no answer came (APIConnectionError).
        self.status = status
        #: The request id the gateway sent (X-Request-Id), when it sent one.
        self.request_id = request_id
        #: The response headers, names in lower case; empty without an answer.
        self.headers: Dict[str, str] = dict(headers or {})
        #: The parsed JSON body (usually {"error": ...}), or the raw text when it was not JSON.
        self.body = body

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, message={self.message!r}, request_id={self.request_id!r})"


class BadRequestError(GatewayError):
    """400: the request is malformed or a field is invalid; the message says which."""


class AuthenticationError(GatewayError):
    """401: the API key is missing, unknown or revoked."""


class PermissionDeniedError(GatewayError):
    """403: the key may not do this (a read-only key writing, a test key on a live-only route)."""


class NotFoundError(GatewayError):
    """404: no such object for this key's account and mode."""


class ConflictError(GatewayError):
    """409: the request conflicts with the object's state (or an idempotent request still running after every retry)."""


class UnprocessableEntityError(GatewayError):
    """422: well-formed but refused, e.g. an Idempotency-Key reused with a different request."""


class RateLimitError(GatewayError):
    """429: rate limited; ``retry_after`` is the gateway's Retry-After in seconds."""

    @property
    def retry_after(self) -> Optional[float]:
        try:
            return float(self.headers["retry-after"])
        except (KeyError, ValueError):
            return None


class ServerError(GatewayError):
    """5xx: the gateway failed or is unavailable (503 while its database is unreachable)."""


class APIConnectionError(GatewayError):
    """No answer: the connection failed, was reset or timed out (``__cause__`` holds why)."""


_BY_STATUS: Dict[int, Type[GatewayError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def error_from_response(status: int, headers: Mapping[str, str], body: Any) -> GatewayError:
    """The error for a non-2xx answer: the class of its status, the gateway's ``error`` text as message."""
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        message = body["error"]
    elif isinstance(body, str) and body:
        message = body[:500]
    else:
        message = f"HTTP {status}"
    error_class = _BY_STATUS.get(status) or (ServerError if status >= 500 else GatewayError)
    request_id = headers.get("x-request-id") or headers.get("request-id")
    return error_class(message, status=status, request_id=request_id, headers=headers, body=body)
