import json
import os
import unittest
from datetime import datetime, timezone
from email.message import Message

from svc_gateway import MemoryNonceCache, WebhookVerificationError, compute_signature, verify_webhook

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "webhook-vectors.json")


class SharedVectors(unittest.TestCase):
    def test_every_shared_vector_gets_its_expected_answer(self):
        with open(VECTORS, encoding="utf-8") as file:
            vectors = json.load(file)["vectors"]
        self.assertGreaterEqual(len(vectors), 20)
        for vector in vectors:
            with self.subTest(vector["name"]):
                call = lambda: verify_webhook(vector["body"].encode("utf-8"), vector["headers"], vector["secret"], now=vector["now"], livemode=vector.get("livemode"))
                if vector["expect"]["ok"]:
                    self.assertEqual(call()["id"], vector["expect"]["eventId"])
                else:
                    with self.assertRaises(WebhookVerificationError) as raised:
                        call()
                    self.assertEqual(raised.exception.reason, vector["expect"]["reason"])


class BeyondTheVectors(unittest.TestCase):
    secret = "whsec_unit"
    now = 1_767_225_600
    body = json.dumps({"id": "evt_1", "event": "payment.confirmed", "data": {}, "timestamp": "2026-01-01T00:00:00.000Z", "livemode": False}).encode()

    def signed(self, nonce):
        return {"X-Service-Signature": compute_signature(self.secret, self.now, nonce, self.body), "X-Service-Timestamp": str(self.now), "X-Service-Nonce": nonce}

    def test_headers_as_a_mapping_a_list_of_pairs_or_an_email_message_and_the_body_as_text(self):
        headers = self.signed("nonce-1")
        message = Message()
        for name, value in headers.items():
            message[name.lower()] = value
        for given in (headers, list(headers.items()), message):
            self.assertEqual(verify_webhook(self.body, given, self.secret, now=self.now)["id"], "evt_1")
        self.assertEqual(verify_webhook(self.body.decode(), headers, self.secret, now=datetime.fromtimestamp(self.now, timezone.utc))["id"], "evt_1")

    def test_a_replayed_nonce_is_refused_and_a_forged_delivery_does_not_take_up_its_nonce(self):
        cache = MemoryNonceCache()
        headers = self.signed("nonce-2")
        with self.assertRaises(WebhookVerificationError) as forged:
            verify_webhook(self.body, headers, "whsec_wrong", now=self.now, nonce_cache=cache)
        self.assertEqual(forged.exception.reason, "signature_mismatch")
        verify_webhook(self.body, headers, self.secret, now=self.now, nonce_cache=cache)
        with self.assertRaises(WebhookVerificationError) as replayed:
            verify_webhook(self.body, headers, self.secret, now=self.now, nonce_cache=cache)
        self.assertEqual(replayed.exception.reason, "nonce_reused")

    def test_the_tolerance_is_configurable(self):
        with self.assertRaises(WebhookVerificationError) as raised:
            verify_webhook(self.body, self.signed("nonce-3"), self.secret, now=self.now + 61, tolerance_seconds=60)
        self.assertEqual(raised.exception.reason, "timestamp_out_of_tolerance")


if __name__ == "__main__":
    unittest.main()
