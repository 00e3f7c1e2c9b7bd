import json
import os
import time
import unittest

from svc_gateway import (
    DEFAULT_BASE_URL,
    IN_FLIGHT_MESSAGE,
    VERSION,
    APIConnectionError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    GatewayClient,
    GatewayError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    UnprocessableEntityError,
)
from svc_gateway._generated import resources

from .scripted_server import ScriptedServer

CLIENTS = os.path.join(os.path.dirname(__file__), "..", "..")
PAYMENT = {"id": "ses_1", "status": "pending"}


class ClientTestCase(unittest.TestCase):
    def serve(self, script):
        server = ScriptedServer(script)
        self.addCleanup(server.close)
        return server

    def client(self, url, **options):
        options.setdefault("retry_backoff", (0.001, 0.001))
        return GatewayClient("svc_test_key", base_url=url, **options)


class AuthenticationAndRequests(ClientTestCase):
    def test_key_as_bearer_by_default_and_as_x_api_key_when_asked(self):
        self.assertEqual(DEFAULT_BASE_URL, "http://127.0.0.1:8080/api/v1")
        server = self.serve(lambda request, index: (200, {}, PAYMENT))
        self.client(server.url).payments.retrieve("ses_1")
        self.client(server.url, auth_header="x-api-key").payments.retrieve("ses_1")
        self.assertEqual(
            [(r["path"], r["headers"].get("authorization"), r["headers"].get("x-api-key")) for r in server.seen],
            [("/api/v1/payments/ses_1", "Bearer svc_test_key", None), ("/api/v1/payments/ses_1", None, "svc_test_key")],
        )
        self.assertEqual(server.seen[0]["headers"]["user-agent"], f"svc-gateway-python/{VERSION}")

    def test_version_is_the_pyproject_version(self):
        with open(os.path.join(CLIENTS, "python", "pyproject.toml"), encoding="utf-8") as file:
            self.assertIn(f'version = "{VERSION}"', file.read())

    def test_snake_case_arguments_go_out_under_their_wire_names_and_unset_ones_are_left_out(self):
        server = self.serve(lambda request, index: (201, {}, PAYMENT))
        gateway = self.client(server.url)
        gateway.sessions.create(amount="25", currency="USDC", chain="base", webhook_url="http://127.0.0.1:9/hook", metadata={"order": "42"})
        gateway.webhook_endpoints.update("we_1", description=None)
        gateway.webhook_endpoints.replay("we/1", from_="2026-01-01T00:00:00Z")
        self.assertEqual(
            json.loads(server.seen[0]["body"]),
            {"amount": "25", "currency": "USDC", "chain": "base", "webhookUrl": "http://127.0.0.1:9/hook", "metadata": {"order": "42"}},
        )
        self.assertEqual((server.seen[1]["method"], json.loads(server.seen[1]["body"])), ("PATCH", {"description": None}))
        self.assertEqual((server.seen[2]["path"], json.loads(server.seen[2]["body"])), ("/api/v1/webhooks/we%2F1/replay", {"from": "2026-01-01T00:00:00Z"}))

    def test_query_values_go_as_text(self):
        server = self.serve(lambda request, index: (200, {}, {"data": [], "hasMore": False, "nextCursor": None}))
        self.client(server.url).payment_links.list(active=False, limit=5)
        self.assertEqual(server.seen[0]["path"], "/api/v1/payment-links?limit=5&active=false")

    def test_every_operation_of_the_openapi_snapshot_has_a_method(self):
        with open(os.path.join(CLIENTS, "openapi.json"), encoding="utf-8") as file:
            document = json.load(file)
        documented = sum(len(operations) for path, operations in document["paths"].items() if path.startswith("/api/v1/"))
        gateway = self.client("http://127.0.0.1:1/api/v1")
        methods = [
            name
            for attribute in vars(gateway).values()
            if isinstance(attribute, resources._Resource)
            for name in dir(attribute)
            if not name.startswith("_") and not name.endswith("_all") and callable(getattr(attribute, name))
        ]
        self.assertEqual(len(methods), documented)


class IdempotencyAndRetries(ClientTestCase):
    def test_a_post_keeps_one_idempotency_key_across_its_retries(self):
        server = self.serve(lambda request, index: (503, {}, {"error": "unavailable"}) if index < 2 else (201, {}, PAYMENT))
        gateway = self.client(server.url)
        self.assertEqual(gateway.payments.create(amount="25", currency="USDC", chain="base"), PAYMENT)
        gateway.payments.create(amount="25", currency="USDC", chain="base")
        gateway.payments.create(amount="25", currency="USDC", chain="base", options={"idempotency_key": "order-42"})
        keys = [request["headers"].get("idempotency-key") for request in server.seen]
        self.assertRegex(keys[0], r"^[0-9a-f-]{36}$")
        self.assertEqual(keys[:3], [keys[0]] * 3)
        self.assertNotEqual(keys[3], keys[0])
        self.assertEqual(keys[4], "order-42")
        gateway.payments.retrieve("ses_1")
        self.assertNotIn("idempotency-key", server.seen[-1]["headers"])

    def test_retries_a_dropped_connection_the_in_flight_409_and_5xx_but_not_a_400_or_another_409(self):
        answers = ["reset", (409, {}, {"error": f"{IN_FLIGHT_MESSAGE}; retry shortly"}), (502, {}, {"error": "bad gateway"}), (200, {}, PAYMENT)]
        server = self.serve(lambda request, index: answers[index])
        retries = []
        gateway = self.client(server.url, max_retries=3, on_retry=retries.append)
        self.assertEqual(gateway.refunds.create(payment_id="ses_1"), PAYMENT)
        self.assertEqual([(r["attempt"], type(r["error"]).__name__, r["error"].status) for r in retries], [(1, "APIConnectionError", None), (2, "ConflictError", 409), (3, "ServerError", 502)])
        self.assertEqual(len({request["headers"]["idempotency-key"] for request in server.seen}), 1)

        refused = self.serve(lambda request, index: (400, {}, {"error": "amount must be positive"}) if index == 0 else (409, {}, {"error": "the refund exceeds the confirmed amount"}))
        with self.assertRaises(BadRequestError):
            self.client(refused.url).refunds.create(payment_id="ses_1")
        with self.assertRaises(ConflictError):
            self.client(refused.url).refunds.create(payment_id="ses_1")
        self.assertEqual(len(refused.seen), 2)

    def test_gives_up_after_max_retries_with_the_last_error(self):
        server = self.serve(lambda request, index: (503, {}, {"error": "the service is temporarily unavailable"}))
        with self.assertRaises(ServerError) as raised:
            self.client(server.url, max_retries=2).status.retrieve()
        self.assertEqual((raised.exception.status, raised.exception.message), (503, "the service is temporarily unavailable"))
        self.assertEqual(len(server.seen), 3)
        with self.assertRaises(ServerError):
            self.client(server.url).status.retrieve(options={"max_retries": 0})
        self.assertEqual(len(server.seen), 4)
        with self.assertRaises(APIConnectionError):
            self.client("http://127.0.0.1:1/api/v1", max_retries=1).status.retrieve()

    def test_a_429_waits_its_retry_after_and_a_longer_one_than_max_retry_after_is_raised_at_once(self):
        server = self.serve(lambda request, index: (429, {"Retry-After": "1"}, {"error": "rate limited"}) if index == 0 else (200, {}, PAYMENT))
        retries = []
        started = time.monotonic()
        self.client(server.url, on_retry=retries.append).payments.retrieve("ses_1")
        self.assertGreaterEqual(time.monotonic() - started, 0.95)
        self.assertEqual([r["delay"] for r in retries], [1.0])

        slow = self.serve(lambda request, index: (429, {"Retry-After": "120"}, {"error": "rate limited"}))
        with self.assertRaises(RateLimitError) as raised:
            self.client(slow.url).payments.retrieve("ses_1")
        self.assertEqual(raised.exception.retry_after, 120.0)
        self.assertEqual(len(slow.seen), 1)


class Errors(ClientTestCase):
    def test_each_status_has_its_class_carrying_status_message_and_request_id(self):
        for status, error_class in [
            (400, BadRequestError),
            (401, AuthenticationError),
            (403, PermissionDeniedError),
            (404, NotFoundError),
            (409, ConflictError),
            (422, UnprocessableEntityError),
            (429, RateLimitError),
            (500, ServerError),
            (418, GatewayError),
        ]:
            with self.subTest(status=status):
                server = self.serve(lambda request, index: (status, {"X-Request-Id": "req_7", "Retry-After": "300"}, {"error": f"refused with {status}"}))
                with self.assertRaises(error_class) as raised:
                    self.client(server.url, max_retries=0).events.retrieve("evt_1")
                error = raised.exception
                self.assertIsInstance(error, GatewayError)
                self.assertEqual((error.status, error.message, error.request_id, error.body), (status, f"refused with {status}", "req_7", {"error": f"refused with {status}"}))

    def test_without_a_request_id_header_the_error_has_none(self):
        server = self.serve(lambda request, index: (502, {}, None))
        with self.assertRaises(ServerError) as raised:
            self.client(server.url, max_retries=0).events.retrieve("evt_1")
        self.assertEqual((raised.exception.status, raised.exception.message, raised.exception.request_id), (502, "HTTP 502", None))


class Pagination(ClientTestCase):
    def test_list_returns_the_first_page_and_list_all_walks_every_page_with_starting_after(self):
        pages = [
            {"data": [{"id": "ses_3"}, {"id": "ses_2"}], "hasMore": True, "nextCursor": "ses_2"},
            {"data": [{"id": "ses_1"}], "hasMore": False, "nextCursor": None},
        ]
        server = self.serve(lambda request, index: (200, {}, pages[1] if "startingAfter=ses_2" in request["path"] else pages[0]))
        gateway = self.client(server.url)
        page = gateway.payments.list(status="settled", limit=2)
        self.assertEqual((page.data, page.has_more, page.next_cursor), (pages[0]["data"], True, "ses_2"))
        listing = gateway.payments.list_all(status="settled", limit=2)
        self.assertEqual(len(server.seen), 1)  # a generator: nothing fetched until iterated
        self.assertEqual([payment["id"] for payment in listing], ["ses_3", "ses_2", "ses_1"])
        self.assertEqual(
            [request["path"] for request in server.seen],
            # Query parameters go in the document's order.
            ["/api/v1/payments?limit=2&status=settled", "/api/v1/payments?limit=2&status=settled", "/api/v1/payments?limit=2&status=settled&startingAfter=ses_2"],
        )


if __name__ == "__main__":
    unittest.main()
