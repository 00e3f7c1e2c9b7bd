"""svc_gateway: the Python client of svc gateway.

Typed calls for every route of the merchant API (generated from its OpenAPI document), retries
with idempotency keys, typed errors, auto-pagination and the webhook verifier. Standard library
only.
"""

from ._client import GatewayClient
from ._generated.resources import DEFAULT_BASE_URL
from ._generated.types import *  # noqa: F401,F403 - the object types, by their API names
from ._http import IN_FLIGHT_MESSAGE, NOT_GIVEN, NotGiven, RequestOptions, RetryEvent, is_retryable, parse_retry_after
from ._version import VERSION
from .errors import (
    APIConnectionError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    GatewayError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    UnprocessableEntityError,
)
from .pagination import Page
from .webhooks import (
    DEFAULT_TOLERANCE_SECONDS,
    MAX_SIGNATURES,
    EndpointDisabledData,
    MemoryNonceCache,
    NonceCache,
    PaymentEventData,
    WebhookEvent,
    WebhookVerificationError,
    compute_signature,
    verify_webhook,
)

__version__ = VERSION
