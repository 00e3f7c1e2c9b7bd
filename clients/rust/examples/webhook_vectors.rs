//! Prints this library's answer to every shared webhook vector as JSON, for the gateway's
//! test/clients/vectors.test.ts (every verifier must give the same answers):
//!
//!     cargo run --offline --example webhook_vectors -- ../webhook-vectors.json
//!
//! It is also a quick way to check your own receiver's setup against the gateway's deliveries.

use std::time::{Duration, UNIX_EPOCH};

use serde_json::{json, Value};
use svc_gateway::webhooks::{verify_webhook, VerifyOptions};

fn main() {
    let path = std::env::args().nth(1).expect("usage: webhook_vectors <webhook-vectors.json>");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("readable vectors")).expect("JSON vectors");
    let mut answers = Vec::new();
    for vector in file["vectors"].as_array().expect("a vectors array") {
        let headers: Vec<(&str, &str)> =
            vector["headers"].as_object().expect("headers").iter().map(|(name, value)| (name.as_str(), value.as_str().unwrap_or(""))).collect();
        let options = VerifyOptions {
            now: Some(UNIX_EPOCH + Duration::from_secs(vector["now"].as_u64().expect("now"))),
            livemode: vector["livemode"].as_bool(),
            ..VerifyOptions::default()
        };
        let body = vector["body"].as_str().expect("body").as_bytes();
        let secret = vector["secret"].as_str().expect("secret");
        answers.push(match verify_webhook(body, headers, secret, &options) {
            Ok(event) => json!({"name": vector["name"], "ok": true, "eventId": event.id}),
            Err(refused) => json!({"name": vector["name"], "ok": false, "reason": refused.reason}),
        });
    }
    println!("{}", Value::Array(answers));
}
