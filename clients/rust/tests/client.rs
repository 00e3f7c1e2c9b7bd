#![recursion_limit = "256"]
mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{json, Answer, Scripted};
use serde_json::json;
use svc_gateway::*;

/// A client whose backoff waits 1 ms, so retry tests take no time unless a Retry-After says so.
fn client(url: &str) -> ClientBuilder {
    Client::builder("svc_test_key").base_url(url).retry_backoff(Duration::from_millis(1), Duration::from_millis(1))
}

fn session() -> serde_json::Value {
    json!({
        "id": "ses_1", "amount": "25", "displayAmount": "25", "currency": "USDC", "chain": "base", "checkoutUrl": "http://127.0.0.1/c/ses_1",
        "attribution": "amount", "depositAddress": null, "description": null, "lineItems": null, "cancelUrl": null, "price": null, "priceQuote": null, "receiptUrl": "http://127.0.0.1/checkout/ses_1/receipt", "paymentAddress": "0xabc", "merchantWallet": "0xabc", "amountDue": "25", "amountDueBaseUnits": "25000000", "amountReceived": "0",
        "amountPending": "0", "decimals": 6, "tokens": [{"symbol": "USDC", "address": "0xtoken"}], "fee": "0.25", "feeBaseUnits": "250000",
        "reference": null, "txHash": null, "confirmations": 0, "requiredConfirmations": 12, "metadata": {}, "webhookUrl": null, "successUrl": null,
        "paymentLinkId": null, "livemode": false, "createdAt": "2026-01-01T00:00:00.000Z", "expiresAt": "2026-01-01T01:00:00.000Z",
        "confirmedAt": null, "status": "pending",
        "paymentOptions": [{"chain": "base", "currency": "USDC"}], "choice": {"chain": "base", "currency": "USDC"}
    })
}

#[test]
fn the_key_goes_as_bearer_or_x_api_key_with_the_user_agent_and_the_default_base_url() {
    assert_eq!(DEFAULT_BASE_URL, "http://127.0.0.1:8080/api/v1");
    let server = Scripted::start(|_, _| json(200, session()));
    client(&server.url).build().sessions().retrieve("ses_1").unwrap();
    client(&server.url).auth_header(AuthHeader::XApiKey).build().sessions().retrieve("ses_1").unwrap();
    let seen = server.seen();
    assert_eq!(seen[0].url, "/api/v1/sessions/ses_1");
    assert_eq!(seen[0].headers.get("authorization").map(String::as_str), Some("Bearer svc_test_key"));
    assert_eq!(seen[0].headers.get("x-api-key"), None);
    assert_eq!(seen[1].headers.get("authorization"), None);
    assert_eq!(seen[1].headers.get("x-api-key").map(String::as_str), Some("svc_test_key"));
    assert_eq!(seen[0].headers["user-agent"], format!("svc-gateway-rust/{}", VERSION));
    assert!(std::fs::read_to_string("CHANGELOG.md").unwrap().contains(&format!("## {}", VERSION)));
}

#[test]
fn path_parameters_are_escaped_queries_and_bodies_go_under_their_wire_names() {
    let server =
        Scripted::start(
            |request, _| {
                if request.method == "GET" {
                    json(200, json!({"data": [], "hasMore": false, "nextCursor": null}))
                } else {
                    json(200, json!({}))
                }
            },
        );
    let gateway = client(&server.url).build();
    gateway.payment_links().list(&PaymentLinkListParams::new().active(false).limit(5)).unwrap();
    gateway.events().list(&EventListParams::new().r#type("payment.confirmed")).unwrap();
    let _ = gateway.refunds().complete("rf/1 x", &RefundCompleteParams::new("0xabc"));
    let mut metadata = std::collections::BTreeMap::new();
    metadata.insert("order".to_string(), "42".to_string());
    let _ = gateway.sessions().create(&SessionCreateParams::new().amount("25").currency(Currency::Usdc).chain(Chain::Base).metadata(metadata));
    let _ = gateway.webhook_endpoints().update("we_1", &WebhookEndpointUpdateParams::new().description(None));
    let _ = gateway.sandbox().pay("ses_1", None);
    let seen: Vec<(String, String, String)> = server.seen().into_iter().map(|r| (r.method, r.url, r.body)).collect();
    let expected = [
        ("GET", "/api/v1/payment-links?active=false&limit=5", ""),
        ("GET", "/api/v1/events?type=payment.confirmed", ""),
        ("POST", "/api/v1/refunds/rf%2F1%20x/complete", r#"{"txHash":"0xabc"}"#),
        ("POST", "/api/v1/sessions", r#"{"amount":"25","currency":"USDC","chain":"base","metadata":{"order":"42"}}"#),
        ("PATCH", "/api/v1/webhooks/we_1", r#"{"description":null}"#),
        ("POST", "/api/v1/sandbox/sessions/ses_1/pay", "{}"),
    ];
    assert_eq!(seen.len(), expected.len());
    for (got, want) in seen.iter().zip(expected.iter()) {
        assert_eq!((got.0.as_str(), got.1.as_str(), got.2.as_str()), *want);
    }
    assert_eq!(server.seen()[2].headers["content-type"], "application/json");
}

#[test]
fn every_operation_of_the_snapshot_has_a_method() {
    let document: serde_json::Value = serde_json::from_str(&std::fs::read_to_string("../openapi.json").unwrap()).unwrap();
    let operations: usize = document["paths"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(path, _)| path.starts_with("/api/v1/"))
        .map(|(_, methods)| methods.as_object().unwrap().len())
        .sum();
    // The handles' methods (after `impl Client`'s accessors), less `with_options` and the `_all` iterators.
    let generated = std::fs::read_to_string("src/generated/resources.rs").unwrap();
    let handles = generated.split_once("\n}\n").unwrap().1;
    let methods = handles
        .lines()
        .filter_map(|line| line.strip_prefix("    pub fn "))
        .map(|rest| rest.split(|c| c == '(' || c == '<').next().unwrap())
        .filter(|name| *name != "with_options" && !name.ends_with("_all"))
        .count();
    assert!(operations > 0);
    assert_eq!(methods, operations);
}

#[test]
fn a_post_keeps_one_idempotency_key_across_its_retries_and_the_next_call_gets_a_new_one() {
    let server = Scripted::start(|_, index| if index < 2 { json(503, json!({"error": "unavailable"})) } else { json(201, session()) });
    let gateway = client(&server.url).build();
    let params = PaymentCreateParams::new().amount("25").currency(Currency::Usdc).chain(Chain::Base);
    assert_eq!(gateway.payments().create(&params).unwrap().id, "ses_1");
    gateway.payments().create(&params).unwrap();
    gateway.payments().with_options(RequestOptions::new().idempotency_key("order-42")).create(&params).unwrap();
    gateway.payments().retrieve("ses_1").unwrap();
    let keys: Vec<Option<String>> = server.seen().iter().map(|r| r.headers.get("idempotency-key").cloned()).collect();
    let first = keys[0].clone().unwrap();
    let uuid = first.as_bytes();
    assert!(first.len() == 36 && uuid[14] == b'4' && matches!(uuid[19], b'8' | b'9' | b'a' | b'b'), "{} is not a v4 UUID", first);
    assert_eq!(keys[1].as_deref(), Some(first.as_str()));
    assert_eq!(keys[2].as_deref(), Some(first.as_str()));
    assert_ne!(keys[3].as_deref(), Some(first.as_str()));
    assert_eq!(keys[4].as_deref(), Some("order-42"));
    assert_eq!(keys[5], None);
    assert!(server.seen()[..5].iter().all(|r| r.body == r#"{"amount":"25","currency":"USDC","chain":"base"}"#));
}

#[test]
fn retries_no_answer_the_in_flight_409_and_5xx_but_not_a_400_or_another_409() {
    let server = Scripted::start(|_, index| match index {
        0 => Answer::Reset,
        1 => Answer::Hang,
        2 => json(409, json!({"error": format!("{}; retry shortly", IN_FLIGHT_MESSAGE)})),
        3 => json(502, json!({"error": "bad gateway"})),
        _ => json(200, json!({})),
    });
    let retries = Arc::new(Mutex::new(Vec::new()));
    let log = retries.clone();
    let gateway = client(&server.url)
        .max_retries(4)
        .timeout(Duration::from_millis(300))
        .on_retry(move |event| log.lock().unwrap().push((event.attempt, event.error.kind(), event.error.status(), event.idempotency_key.map(str::to_string))))
        .build();
    let _ = gateway.refunds().create(&RefundCreateParams::new("ses_1"));
    let retries = retries.lock().unwrap().clone();
    let kinds: Vec<(u32, ErrorKind, Option<u16>)> = retries.iter().map(|r| (r.0, r.1, r.2)).collect();
    assert_eq!(
        kinds,
        vec![(1, ErrorKind::Connection, None), (2, ErrorKind::Connection, None), (3, ErrorKind::Conflict, Some(409)), (4, ErrorKind::Server, Some(502))]
    );
    assert!(retries.iter().all(|r| r.3.is_some() && r.3 == retries[0].3));
    assert_eq!(server.seen().len(), 5);

    let refused = Scripted::start(|_, index| {
        if index == 0 {
            json(400, json!({"error": "amount must be positive"}))
        } else {
            json(409, json!({"error": "the refund exceeds the confirmed amount"}))
        }
    });
    let error = client(&refused.url).build().refunds().create(&RefundCreateParams::new("ses_1")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::BadRequest);
    let error = client(&refused.url).build().refunds().create(&RefundCreateParams::new("ses_1")).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Conflict);
    assert_eq!(refused.seen().len(), 2);
}

#[test]
fn gives_up_after_max_retries_with_the_last_error() {
    let server = Scripted::start(|_, _| json(503, json!({"error": "the service is temporarily unavailable"})));
    let error = client(&server.url).max_retries(2).build().status().retrieve().unwrap_err();
    assert_eq!((error.kind(), error.status(), error.message()), (ErrorKind::Server, Some(503), "the service is temporarily unavailable"));
    assert_eq!(server.seen().len(), 3);
    let error = client(&server.url).build().status().with_options(RequestOptions::new().max_retries(0)).retrieve().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Server);
    assert_eq!(server.seen().len(), 4);
    let error = client("http://127.0.0.1:1/api/v1").max_retries(1).build().status().retrieve().unwrap_err();
    assert_eq!((error.kind(), error.status()), (ErrorKind::Connection, None));
}

#[test]
fn a_429_waits_its_retry_after_and_one_too_long_is_returned_at_once() {
    let server = Scripted::start(|_, index| {
        if index == 0 {
            Answer::Json(429, vec![("Retry-After", "1".to_string())], Some(json!({"error": "rate limited"})))
        } else {
            json(200, session())
        }
    });
    let delays = Arc::new(Mutex::new(Vec::new()));
    let log = delays.clone();
    let started = Instant::now();
    client(&server.url).on_retry(move |event| log.lock().unwrap().push(event.delay)).build().sessions().retrieve("ses_1").unwrap();
    assert!(started.elapsed() >= Duration::from_millis(950));
    assert_eq!(*delays.lock().unwrap(), vec![Duration::from_secs(1)]);

    let slow = Scripted::start(|_, _| Answer::Json(429, vec![("Retry-After", "120".to_string())], Some(json!({"error": "rate limited"}))));
    let error = client(&slow.url).build().sessions().retrieve("ses_1").unwrap_err();
    assert_eq!(error.kind(), ErrorKind::RateLimit);
    assert_eq!(error.retry_after(), Some(Duration::from_secs(120)));
    assert_eq!(slow.seen().len(), 1);

    let now = UNIX_EPOCH + Duration::from_secs(1_767_225_600);
    assert_eq!(parse_retry_after("Thu, 01 Jan 2026 00:00:30 GMT", now), Some(Duration::from_secs(30)));
    assert_eq!(parse_retry_after("soon", SystemTime::now()), None);
}

#[test]
fn each_status_has_its_kind_with_the_status_the_message_and_the_request_id() {
    let cases = [
        (400, ErrorKind::BadRequest),
        (401, ErrorKind::Authentication),
        (403, ErrorKind::PermissionDenied),
        (404, ErrorKind::NotFound),
        (409, ErrorKind::Conflict),
        (422, ErrorKind::UnprocessableEntity),
        (429, ErrorKind::RateLimit),
        (500, ErrorKind::Server),
        (418, ErrorKind::Other),
    ];
    for (status, kind) in cases {
        let server = Scripted::start(move |_, _| {
            Answer::Json(
                status,
                vec![("X-Request-Id", "req_7".to_string()), ("Retry-After", "300".to_string())],
                Some(json!({"error": format!("refused with {}", status)})),
            )
        });
        let error = client(&server.url).max_retries(0).build().events().retrieve("evt_1").unwrap_err();
        assert_eq!(
            (error.kind(), error.status(), error.message(), error.request_id()),
            (kind, Some(status), format!("refused with {}", status).as_str(), Some("req_7"))
        );
        assert_eq!(serde_json::from_slice::<serde_json::Value>(error.body()).unwrap(), json!({"error": format!("refused with {}", status)}));
    }
    let server = Scripted::start(|_, _| Answer::Json(502, Vec::new(), None));
    let error = client(&server.url).max_retries(0).build().events().retrieve("evt_1").unwrap_err();
    assert_eq!((error.kind(), error.message(), error.request_id()), (ErrorKind::Server, "HTTP 502", None));
}

#[test]
fn list_all_walks_every_page_asking_for_each_with_starting_after() {
    let server = Scripted::start(|request, _| {
        let mut first = session();
        first["id"] = json!("ses_3");
        let mut second = session();
        second["id"] = json!("ses_2");
        let mut third = session();
        third["id"] = json!("ses_1");
        if request.url.contains("startingAfter=ses_2") {
            json(200, json!({"data": [third], "hasMore": false, "nextCursor": null}))
        } else {
            json(200, json!({"data": [first, second], "hasMore": true, "nextCursor": "ses_2"}))
        }
    });
    let gateway = client(&server.url).build();
    let params = PaymentListParams::new().status(PaymentStatus::Settled).limit(2);
    let page = gateway.payments().list(&params).unwrap();
    assert_eq!((page.data.len(), page.has_more, page.next_cursor.as_deref()), (2, true, Some("ses_2")));
    let walk = gateway.payments().list_all(&params);
    assert_eq!(server.seen().len(), 1, "nothing is fetched before the first next");
    let ids: Vec<String> = walk.map(|payment| payment.unwrap().id).collect();
    assert_eq!(ids, vec!["ses_3", "ses_2", "ses_1"]);
    let urls: Vec<String> = server.seen().into_iter().map(|r| r.url).collect();
    assert_eq!(
        urls,
        vec![
            "/api/v1/payments?limit=2&status=settled",
            "/api/v1/payments?limit=2&status=settled",
            "/api/v1/payments?limit=2&status=settled&startingAfter=ses_2"
        ]
    );

    let failing = Scripted::start(|_, _| json(404, json!({"error": "no"})));
    let results: Vec<Result<Payment, Error>> = client(&failing.url).build().payments().list_all(None).collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].as_ref().unwrap_err().kind(), ErrorKind::NotFound);
}

#[test]
fn https_base_urls_are_spoken_with_tls() {
    // A listener that hangs up at once: the handshake fails, where a build without TLS would refuse https outright.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://{}/api/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || listener.incoming().for_each(drop));
    let error = Client::builder("svc_test_key").base_url(url).max_retries(0).build().status().retrieve().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Connection);
    assert!(!error.message().contains("no TLS backend"), "{}", error.message());
}

#[test]
fn enums_take_values_newer_than_the_library() {
    let mut body = session();
    body["chain"] = json!("tron");
    let parsed: Session = serde_json::from_value(body).unwrap();
    assert_eq!(parsed.chain, Some(Chain::Unrecognized));
    assert_eq!(parsed.tokens[0].symbol, "USDC");
    assert_eq!(Chain::Base.to_string(), "base");
    assert!(serde_json::to_string(&Chain::Unrecognized).is_err(), "an unrecognised value is never sent");
}
