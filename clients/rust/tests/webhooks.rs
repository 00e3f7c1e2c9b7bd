use std::collections::HashMap;
use std::time::{Duration, UNIX_EPOCH};

use svc_gateway::webhooks::{compute_signature, verify_webhook, MemoryNonceCache, NonceCache, VerifyOptions, DEFAULT_TOLERANCE};
use svc_gateway::{Chain, SessionStatus, WebhookEventType};

const SECRET: &str = "whsec_unit";
const NOW: u64 = 1_767_225_600;
const BODY: &[u8] = br#"{"id":"evt_1","event":"payment.confirmed","data":{"id":"ses_1","amount":"25","currency":"USDC","chain":"base","status":"confirmed","txHash":null,"confirmedAt":null,"metadata":{},"livemode":false},"timestamp":"2026-01-01T00:00:00.000Z","livemode":false}"#;

fn signed(nonce: &str, signature: Option<String>) -> Vec<(String, String)> {
    let signature = signature.unwrap_or_else(|| compute_signature(SECRET, &NOW.to_string(), nonce, BODY));
    vec![("X-Service-Signature".into(), signature), ("X-Service-Timestamp".into(), NOW.to_string()), ("X-Service-Nonce".into(), nonce.into())]
}

fn at(seconds: u64) -> VerifyOptions<'static> {
    VerifyOptions { now: Some(UNIX_EPOCH + Duration::from_secs(seconds)), ..VerifyOptions::default() }
}

fn reason<T: std::fmt::Debug>(result: Result<T, svc_gateway::WebhookVerificationError>) -> &'static str {
    result.unwrap_err().reason
}

#[test]
fn returns_the_typed_event() {
    let event = verify_webhook(BODY, signed("nonce-1", None), SECRET, &VerifyOptions { livemode: Some(false), ..at(NOW) }).unwrap();
    assert_eq!((event.id.as_str(), event.event, event.livemode), ("evt_1", WebhookEventType::PaymentConfirmed, false));
    let data = event.payment_data().unwrap();
    assert_eq!((data.status, data.chain, data.tx_hash), (SessionStatus::Confirmed, Chain::Base, None));
    assert!(event.refund_data().is_err(), "a payment event has no refund data");
}

#[test]
fn rotation_mode_and_tolerance() {
    let timestamp = NOW.to_string();
    let both = format!("{}, {}", compute_signature(SECRET, &timestamp, "nonce-2", BODY), compute_signature("whsec_old", &timestamp, "nonce-2", BODY));
    for secret in [SECRET, "whsec_old"] {
        verify_webhook(BODY, signed("nonce-2", Some(both.clone())), secret, &at(NOW)).unwrap();
    }
    assert_eq!(reason(verify_webhook(BODY, signed("nonce-2", Some(both)), "whsec_other", &at(NOW))), "signature_mismatch");
    assert_eq!(reason(verify_webhook(BODY, signed("nonce-3", None), SECRET, &VerifyOptions { livemode: Some(true), ..at(NOW) })), "livemode_mismatch");
    let tolerance = VerifyOptions { tolerance: Some(Duration::from_secs(60)), ..at(NOW + 61) };
    assert_eq!(reason(verify_webhook(BODY, signed("nonce-4", None), SECRET, &tolerance)), "timestamp_out_of_tolerance");
    let boundary = VerifyOptions { now: Some(UNIX_EPOCH + Duration::from_millis((NOW + 300) * 1000 + 999)), ..VerifyOptions::default() };
    verify_webhook(BODY, signed("nonce-4", None), SECRET, &boundary).expect("exactly the tolerance (now rounded down) is accepted");
    assert_eq!(reason(verify_webhook(BODY, signed("nonce-4", None), SECRET, &VerifyOptions::default())), "timestamp_out_of_tolerance");
}

#[test]
fn a_nonce_cache_refuses_a_replay_but_a_forgery_does_not_take_up_its_nonce() {
    let cache = MemoryNonceCache::new();
    let options = VerifyOptions { nonce_cache: Some(&cache), ..at(NOW) };
    assert_eq!(reason(verify_webhook(BODY, signed("nonce-5", None), "whsec_wrong", &options)), "signature_mismatch");
    verify_webhook(BODY, signed("nonce-5", None), SECRET, &options).unwrap();
    assert_eq!(reason(verify_webhook(BODY, signed("nonce-5", None), SECRET, &options)), "nonce_reused");
    assert!(cache.check_and_remember("nonce-5", NOW + 2 * DEFAULT_TOLERANCE.as_secs()), "a nonce is forgotten after its ttl");
}

#[test]
fn header_names_in_any_case_from_a_map() {
    let headers: HashMap<String, String> = signed("nonce-6", None).into_iter().map(|(name, value)| (name.to_lowercase(), value)).collect();
    verify_webhook(BODY, &headers, SECRET, &at(NOW)).unwrap();
}
