"""The client object: configuration, and one attribute per resource."""

from typing import Any, Callable, Mapping, Optional, Tuple

from ._generated.resources import DEFAULT_BASE_URL, Resources
from ._http import NOT_GIVEN, RequestOptions, RetryEvent, Transport


class GatewayClient(Resources):
    """A client of the gateway's merchant API.

    ::

        gateway = GatewayClient(os.environ["SVC_API_KEY"])
        payment = gateway.payments.create(amount="25", currency="USDC", chain="base")
        for settled in gateway.payments.list_all(status="settled"):
            print(settled["id"])

    ``api_key``: ``svc_test_...`` / ``svc_sk_...`` (sandbox) or ``svc_live_...``.
    ``base_url``: the gateway with ``/api/v1`` (default ``http://127.0.0.1:8080/api/v1``).
    ``auth_header``: ``"bearer"`` (``Authorization: Bearer``, Interface A; default) or
    ``"x-api-key"`` (Interface B); both work on every route.
    ``max_retries``: retries after the first attempt on network errors, a 409 while the same
    Idempotency-Key is in flight, 429 (honouring Retry-After) and 5xx; default 2.
    ``timeout``: seconds per attempt. ``retry_backoff``: first wait and cap of the exponential
    backoff, seconds. ``max_retry_after``: a longer Retry-After is not waited for (the error is
    raised). ``on_retry``: called before each retry.
    """

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        auth_header: str = "bearer",
        max_retries: int = 2,
        timeout: float = 30.0,
        retry_backoff: Tuple[float, float] = (0.5, 8.0),
        max_retry_after: float = 60.0,
        on_retry: Optional[Callable[[RetryEvent], None]] = None,
    ) -> None:
        self._transport = Transport(
            api_key=api_key,
            base_url=base_url,
            auth_header=auth_header,
            max_retries=max_retries,
            timeout=timeout,
            retry_backoff=retry_backoff,
            max_retry_after=max_retry_after,
            on_retry=on_retry,
        )
        super().__init__(self._transport)

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = NOT_GIVEN,
        options: Optional[RequestOptions] = None,
    ) -> Any:
        """A raw call under the base URL with the client's authentication, retries and errors."""
        return self._transport.request(method, path, query=query, body=body, options=options)
