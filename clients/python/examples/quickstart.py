"""The quick start of svc_gateway (README.md): create a sandbox session, find it in the list, pay
it on the sandbox's simulated chain, and receive and verify its webhooks.

    SVC_API_KEY=svc_test_... SVC_WEBHOOK_SECRET=whsec_... python3 quickstart.py   # against `npm start` on 127.0.0.1:8080

Both values are the ones the gateway's first `npm start` printed (test API key, webhook secret).

test/clients/e2e.python.test.ts runs this file against a real daemon.
"""

import os
import queue
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from svc_gateway import GatewayClient, WebhookVerificationError, verify_webhook

gateway = GatewayClient(os.environ["SVC_API_KEY"], base_url=os.environ.get("SVC_BASE_URL", "http://127.0.0.1:8080/api/v1"))

# The sandbox webhook secret the first `npm start` printed (whsec_...). Not rotated here: every
# receiver already holding it would stop verifying. Lost it? `svc webhooks rotate-secret --merchant mer_... --mode test`.
secret = os.environ["SVC_WEBHOOK_SECRET"]

confirmed: "queue.Queue[dict]" = queue.Queue()


class Receiver(BaseHTTPRequestHandler):
    """Verifies every delivery over its raw body; refuses anything that is not a sandbox event."""

    def do_POST(self) -> None:
        raw_body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            event = verify_webhook(raw_body, self.headers, secret, livemode=False)
        except WebhookVerificationError as error:
            print(f"✗ refused: {error.reason}", flush=True)
            self.send_response(400)
            self.end_headers()
            return
        print(f"✓ {event['event']} {event['id']} {event['data']['id']} status={event['data']['status']} signature verified", flush=True)
        self.send_response(200)
        self.end_headers()
        if event["event"] == "payment.confirmed":
            confirmed.put(event)

    def log_message(self, *args: object) -> None:
        pass


receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
threading.Thread(target=receiver.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
webhook_url = f"http://127.0.0.1:{receiver.server_address[1]}/webhooks"

session = gateway.sessions.create(amount="25.00", currency="USDC", chain="base", webhook_url=webhook_url)
print(f"created {session['id']}: pay {session['amountDue']} {session['currency']} on {session['chain']} to {session['paymentAddress']}", flush=True)

for payment in gateway.payments.list_all(limit=10):
    if payment["id"] == session["id"]:
        print(f"listed {payment['id']} status={payment['status']}", flush=True)

paid = gateway.sandbox.pay(session["id"], outcome="exact")
print(f"paid {paid['amount']} in the sandbox, tx {paid['txHash']}", flush=True)

try:
    confirmed.get(timeout=30)
except queue.Empty:
    print("✗ no payment.confirmed webhook within 30 s", flush=True)
    sys.exit(1)
finally:
    receiver.shutdown()
