"""Prints svc_gateway's answer to every shared webhook vector, as JSON, for test/clients/vectors.test.ts.

    python3 test/clients/verifiers/python_vectors.py clients/webhook-vectors.json
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "clients", "python"))

from svc_gateway import WebhookVerificationError, verify_webhook  # noqa: E402

answers = []
with open(sys.argv[1], encoding="utf-8") as file:
    for vector in json.load(file)["vectors"]:
        try:
            event = verify_webhook(
                vector["body"].encode("utf-8"),
                vector["headers"],
                vector["secret"],
                now=vector["now"],
                livemode=vector.get("livemode"),
            )
            answers.append({"name": vector["name"], "ok": True, "eventId": event["id"]})
        except WebhookVerificationError as error:
            answers.append({"name": vector["name"], "ok": False, "reason": error.reason})
print(json.dumps(answers))
