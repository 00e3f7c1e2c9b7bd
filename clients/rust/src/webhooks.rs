//! The receiver side of spec §6.3: verify a delivery and get its typed event. It follows the
//! gateway's own verifier rule for rule (clients/README.md, "The verifier contract"), and the
//! shared vectors in clients/webhook-vectors.json check that it does.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::generated::types::{Chain, Currency, Refund, SessionStatus, WebhookEventType};

/// Header names of a delivery (HTTP header names are case-insensitive).
pub const SIGNATURE_HEADER: &str = "X-Service-Signature";
pub const TIMESTAMP_HEADER: &str = "X-Service-Timestamp";
pub const NONCE_HEADER: &str = "X-Service-Nonce";
pub const EVENT_ID_HEADER: &str = "X-Service-Event-Id";

/// Spec §8: a delivery whose timestamp is further than this from now is refused.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(300);

/// Most signatures one X-Service-Signature may carry (one, two while a rotated secret still signs).
pub const MAX_SIGNATURES: usize = 8;

/// Why a delivery was refused: `reason` is stable (answer 400 and log it), `message` is for people.
///
/// Reasons: `missing_header`, `malformed_header`, `timestamp_out_of_tolerance`,
/// `signature_mismatch`, `malformed_body`, `livemode_mismatch`, `nonce_reused`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookVerificationError {
    pub reason: &'static str,
    pub message: String,
}

impl fmt::Display for WebhookVerificationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "webhook refused ({}): {}", self.reason, self.message)
    }
}

impl std::error::Error for WebhookVerificationError {}

fn refuse(reason: &'static str, message: impl Into<String>) -> WebhookVerificationError {
    WebhookVerificationError { reason, message: message.into() }
}

/// Remembers accepted nonces for at least the tolerance; `check_and_remember` returns false for a
/// nonce seen before. Several processes need shared storage (Redis SET NX EX).
pub trait NonceCache {
    fn check_and_remember(&self, nonce: &str, now_seconds: u64) -> bool;
}

/// An in-process [`NonceCache`] (entries live twice the tolerance unless told otherwise).
#[derive(Debug)]
pub struct MemoryNonceCache {
    ttl_seconds: u64,
    seen: Mutex<(HashMap<String, u64>, VecDeque<String>)>,
}

impl MemoryNonceCache {
    pub fn new() -> Self {
        Self::with_ttl(DEFAULT_TOLERANCE * 2)
    }

    pub fn with_ttl(ttl: Duration) -> Self {
        MemoryNonceCache { ttl_seconds: ttl.as_secs(), seen: Mutex::new((HashMap::new(), VecDeque::new())) }
    }
}

impl Default for MemoryNonceCache {
    fn default() -> Self {
        Self::new()
    }
}

impl NonceCache for MemoryNonceCache {
    fn check_and_remember(&self, nonce: &str, now_seconds: u64) -> bool {
        let mut guard = self.seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (expiries, order) = &mut *guard;
        // Insertion order is expiry order: drop the expired ones from the front.
        while let Some(oldest) = order.front() {
            if expiries.get(oldest).map_or(true, |expiry| *expiry <= now_seconds) {
                let oldest = order.pop_front().unwrap_or_default();
                expiries.remove(&oldest);
            } else {
                break;
            }
        }
        if expiries.contains_key(nonce) {
            return false;
        }
        expiries.insert(nonce.to_string(), now_seconds + self.ttl_seconds);
        order.push_back(nonce.to_string());
        true
    }
}

/// Options of [`verify_webhook`]; `VerifyOptions::default()` verifies with the defaults.
#[derive(Default)]
pub struct VerifyOptions<'a> {
    /// The largest distance between the delivery's timestamp and now (default 300 s).
    pub tolerance: Option<Duration>,
    /// The receiver's clock (default `SystemTime::now()`).
    pub now: Option<SystemTime>,
    /// The mode the receiver takes: a live receiver sets `Some(true)` and refuses sandbox events,
    /// however they were signed.
    pub livemode: Option<bool>,
    /// Refuses a delivery whose nonce it has seen.
    pub nonce_cache: Option<&'a dyn NonceCache>,
}

/// The envelope of spec §6.2, as [`verify_webhook`] returns it. `data` depends on `event`:
/// [`WebhookEvent::payment_data`] for `payment.*`, [`WebhookEvent::refund_data`] for `refund.*`,
/// [`WebhookEvent::endpoint_disabled_data`] for `webhook_endpoint.disabled`.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookEvent {
    /// Stable across retries, redeliveries and replays: dedupe on it.
    pub id: String,
    pub event: WebhookEventType,
    /// The event's object as it came.
    pub data: Value,
    /// When the event happened (ISO 8601), not when it was sent.
    pub timestamp: String,
    pub livemode: bool,
    /// The whole body, parsed.
    pub raw: Value,
}

/// `data` of `payment.*` events: the session's state when the event happened. Amounts are decimal text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentEventData {
    pub id: String,
    pub amount: String,
    pub currency: Currency,
    pub chain: Chain,
    pub status: SessionStatus,
    pub tx_hash: Option<String>,
    pub confirmed_at: Option<String>,
    #[serde(default)]
    pub amount_due: Option<String>,
    #[serde(default)]
    pub amount_received: Option<String>,
    #[serde(default)]
    pub amount_pending: Option<String>,
    #[serde(default)]
    pub fee: Option<String>,
    #[serde(default)]
    pub payment_address: Option<String>,
    #[serde(default)]
    pub confirmations: Option<i64>,
    #[serde(default)]
    pub expires_at: Option<String>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    pub livemode: bool,
    /// While confirmed plus pending money is short of `amount_due`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount_remaining: Option<String>,
    /// While confirmed money exceeds `amount_due` (refundable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount_excess: Option<String>,
    /// On `payment.failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
}

/// `data` of `webhook_endpoint.disabled`, sent to the merchant's other endpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointDisabledData {
    pub id: String,
    pub url: String,
    pub status: String,
    pub reason: String,
    pub disabled_at: String,
}

impl WebhookEvent {
    fn data_of<T: serde::de::DeserializeOwned>(&self, prefix: &str) -> Result<T, serde_json::Error> {
        if !self.event.as_str().starts_with(prefix) {
            return Err(serde::de::Error::custom(format!("a {} event has no {} data", self.event, prefix.trim_end_matches('.'))));
        }
        serde_json::from_value(self.data.clone())
    }

    /// The data of a `payment.*` event.
    pub fn payment_data(&self) -> Result<PaymentEventData, serde_json::Error> {
        self.data_of("payment.")
    }

    /// The data of a `refund.*` event (the refund).
    pub fn refund_data(&self) -> Result<Refund, serde_json::Error> {
        self.data_of("refund.")
    }

    /// The data of a `webhook_endpoint.disabled` event.
    pub fn endpoint_disabled_data(&self) -> Result<EndpointDisabledData, serde_json::Error> {
        self.data_of("webhook_endpoint.disabled")
    }
}

/// `sha256=` + hex HMAC-SHA256 of `timestamp.nonce.raw_body` under `secret`.
pub fn compute_signature(secret: &str, timestamp: &str, nonce: &str, raw_body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(nonce.as_bytes());
    mac.update(b".");
    mac.update(raw_body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

fn is_signature(part: &str) -> bool {
    part.len() == 7 + 64 && part.starts_with("sha256=") && part[7..].bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

/// One header as [`verify_webhook`] takes it: a `(name, value)` pair of anything textual, or a
/// reference to one (so `&Vec<(String, String)>` and `&HashMap<String, String>` both work).
pub trait HeaderPair {
    fn pair(&self) -> (&str, &str);
}

impl<K: AsRef<str>, V: AsRef<str>> HeaderPair for (K, V) {
    fn pair(&self) -> (&str, &str) {
        (self.0.as_ref(), self.1.as_ref())
    }
}

impl<'a, K: AsRef<str>, V: AsRef<str>> HeaderPair for &'a (K, V) {
    fn pair(&self) -> (&str, &str) {
        (self.0.as_ref(), self.1.as_ref())
    }
}

/// Verifies one delivery and returns its event. The checks, in this order: the three headers are
/// present and not empty; the timestamp is 1 to 12 digits and the signature header is one to
/// eight comma-separated `sha256=<64 lower-case hex>`; the timestamp is within the tolerance of
/// now; one of the signatures is the HMAC of the raw body under `secret` (every one compared,
/// each in constant time with `subtle`); the body is a JSON object; its `livemode` is the
/// required mode; its nonce is new to the nonce cache.
///
/// Pass the body exactly as received, never a re-serialised object, and the headers as any
/// pairs of names (in any case) and values: `&HashMap<String, String>`, `vec![(name, value)]`,
/// an HTTP library's header iterator mapped to `(&str, &str)`.
pub fn verify_webhook<I>(raw_body: &[u8], headers: I, secret: &str, options: &VerifyOptions<'_>) -> Result<WebhookEvent, WebhookVerificationError>
where
    I: IntoIterator,
    I::Item: HeaderPair,
{
    let (mut signature, mut timestamp, mut nonce) = (None, None, None);
    for header in headers {
        let (name, value) = header.pair();
        let slot = if name.eq_ignore_ascii_case(SIGNATURE_HEADER) {
            &mut signature
        } else if name.eq_ignore_ascii_case(TIMESTAMP_HEADER) {
            &mut timestamp
        } else if name.eq_ignore_ascii_case(NONCE_HEADER) {
            &mut nonce
        } else {
            continue;
        };
        if slot.is_none() {
            *slot = Some(value.to_string());
        }
    }
    let present =
        |value: Option<String>, name: &str| value.filter(|value| !value.is_empty()).ok_or_else(|| refuse("missing_header", format!("missing {} header", name)));
    let signature = present(signature, SIGNATURE_HEADER)?;
    let timestamp = present(timestamp, TIMESTAMP_HEADER)?;
    let nonce = present(nonce, NONCE_HEADER)?;

    if timestamp.is_empty() || timestamp.len() > 12 || !timestamp.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(refuse("malformed_header", "X-Service-Timestamp is not unix seconds"));
    }
    // Optional whitespace around each signature is HTTP's: spaces and tabs only.
    let parts: Vec<&str> = signature.split(',').map(|part| part.trim_matches(|c| c == ' ' || c == '\t')).collect();
    if parts.len() > MAX_SIGNATURES || !parts.iter().all(|part| is_signature(part)) {
        return Err(refuse("malformed_header", format!("X-Service-Signature is not sha256=<64 hex digits> (at most {}, comma-separated)", MAX_SIGNATURES)));
    }

    let tolerance = options.tolerance.unwrap_or(DEFAULT_TOLERANCE).as_secs();
    let now = options.now.unwrap_or_else(SystemTime::now);
    let now_seconds = now.duration_since(UNIX_EPOCH).map(|since| since.as_secs()).unwrap_or(0);
    let sent: u64 = timestamp.parse().unwrap_or(0);
    if now_seconds.max(sent) - now_seconds.min(sent) > tolerance {
        return Err(refuse("timestamp_out_of_tolerance", format!("timestamp is more than {} seconds from now", tolerance)));
    }

    let expected = compute_signature(secret, &timestamp, &nonce, raw_body);
    let mut matched = subtle::Choice::from(0u8);
    for given in &parts {
        // No early exit: the time taken does not tell which signature matched.
        matched |= expected.as_bytes().ct_eq(given.as_bytes());
    }
    if !bool::from(matched) {
        return Err(refuse("signature_mismatch", "signature does not match"));
    }

    let text = String::from_utf8_lossy(raw_body);
    let raw: Value = serde_json::from_str(&text).map_err(|_| refuse("malformed_body", "body is not JSON"))?;
    let object = raw.as_object().ok_or_else(|| refuse("malformed_body", "body is not a JSON object"))?;
    if let Some(mode) = options.livemode {
        let given = object.get("livemode");
        if given != Some(&Value::Bool(mode)) {
            let name = |live: Option<&Value>| match live {
                Some(Value::Bool(true)) => "live",
                Some(Value::Bool(false)) => "sandbox",
                _ => "unknown-mode",
            };
            return Err(refuse(
                "livemode_mismatch",
                format!("a {} event, but this receiver takes {} events only", name(given), name(Some(&Value::Bool(mode)))),
            ));
        }
    }
    // Only a delivery that passed every other check may occupy a nonce: forged requests cannot burn real ones.
    if let Some(cache) = options.nonce_cache {
        if !cache.check_and_remember(&nonce, now_seconds) {
            return Err(refuse("nonce_reused", "nonce was already used"));
        }
    }
    let text_of = |name: &str| object.get(name).and_then(Value::as_str).unwrap_or_default().to_string();
    Ok(WebhookEvent {
        id: text_of("id"),
        event: serde_json::from_value(object.get("event").cloned().unwrap_or(Value::Null)).unwrap_or(WebhookEventType::Unrecognized),
        data: object.get("data").cloned().unwrap_or(Value::Null),
        timestamp: text_of("timestamp"),
        livemode: object.get("livemode").and_then(Value::as_bool).unwrap_or(false),
        raw,
    })
}
