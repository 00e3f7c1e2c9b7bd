//! The HTTP layer under every generated method: authentication, retries, idempotency, errors.
//! One logical call is one Idempotency-Key (POST), kept across its retries, so a retried create
//! cannot create twice.

use std::fmt;
use std::io::Read;
use std::thread;
use std::time::{Duration, SystemTime};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::client::{AuthHeader, RetryEvent, RetryHook};
use crate::error::{Error, ErrorKind};

/// The start of the message of the 409 the gateway gives while a request with the same
/// Idempotency-Key is still running: the one 409 worth retrying (other 409s are conflicts with
/// an object's state). The gateway sends no code for it yet, so its message is the signal; a
/// Retry-After on any 409 is honoured too.
pub const IN_FLIGHT_MESSAGE: &str = "a request with this Idempotency-Key is still being processed";

/// Options of one call: `client.payments().with_options(RequestOptions::new().idempotency_key("order-42"))`.
#[derive(Debug, Clone, Default)]
pub struct RequestOptions {
    idempotency_key: Option<String>,
    max_retries: Option<u32>,
    timeout: Option<Duration>,
}

impl RequestOptions {
    pub fn new() -> Self {
        Self::default()
    }

    /// This POST's Idempotency-Key (default a new random UUID per call), kept across its retries.
    /// Give your own (an order id) to stay safe across restarts of your process.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// The retry maximum for these calls (0: one attempt only).
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = Some(retries);
        self
    }

    /// The per-attempt timeout for these calls.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// One logical call: method, path under the base URL, query pairs and JSON body.
pub(crate) struct Request {
    pub method: &'static str,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

#[derive(Clone)]
pub(crate) struct Transport {
    agent: ureq::Agent,
    api_key: String,
    pub(crate) base_url: String,
    auth_header: AuthHeader,
    max_retries: u32,
    timeout: Duration,
    backoff: (Duration, Duration),
    max_retry_after: Duration,
    on_retry: Option<RetryHook>,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport").field("base_url", &self.base_url).finish()
    }
}

impl Transport {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        api_key: String,
        base_url: String,
        auth_header: AuthHeader,
        max_retries: u32,
        timeout: Duration,
        backoff: (Duration, Duration),
        max_retry_after: Duration,
        on_retry: Option<RetryHook>,
    ) -> Transport {
        // The API never redirects: a 3xx is an answer to report, not to follow.
        let agent = ureq::AgentBuilder::new().redirects(0).user_agent(&format!("svc-gateway-rust/{}", crate::VERSION)).build();
        Transport { agent, api_key, base_url, auth_header, max_retries, timeout, backoff, max_retry_after, on_retry }
    }

    /// Runs one logical call and decodes its 2xx JSON answer as `T`.
    pub(crate) fn call<T: DeserializeOwned>(&self, request: Request, options: &RequestOptions) -> Result<T, Error> {
        let answer = self.send(&request, options)?;
        serde_json::from_slice(&answer).map_err(|error| Error::decode(&request.method, &request.path, error))
    }

    /// The attempts of one call, with one Idempotency-Key (POST) across them: the body of the 2xx
    /// answer, or the error of the last attempt.
    fn send(&self, request: &Request, options: &RequestOptions) -> Result<Vec<u8>, Error> {
        let max_retries = options.max_retries.unwrap_or(self.max_retries);
        let timeout = options.timeout.unwrap_or(self.timeout);
        let idempotency_key = if request.method == "POST" { Some(options.idempotency_key.clone().unwrap_or_else(new_uuid)) } else { None };
        let url = format!("{}{}{}", self.base_url, request.path, encode_query(&request.query));
        let mut retry = 0;
        loop {
            let error = match self.attempt(request.method, &url, request.body.as_deref(), idempotency_key.as_deref(), timeout) {
                Ok(answer) => return Ok(answer),
                Err(error) => error,
            };
            if retry >= max_retries || !is_retryable(&error) {
                return Err(error);
            }
            let retry_after = error.header("retry-after").and_then(|value| parse_retry_after(value, SystemTime::now()));
            let delay = match retry_after {
                Some(wait) if wait > self.max_retry_after => return Err(error),
                Some(wait) => wait,
                None => {
                    // Equal jitter: half the exponential step fixed, half random, so clients spread out.
                    let step = self.backoff.0.checked_mul(1 << retry.min(30)).unwrap_or(self.backoff.1).min(self.backoff.1);
                    step / 2 + step.mul_f64(random_fraction() / 2.0)
                }
            };
            retry += 1;
            if let Some(hook) = &self.on_retry {
                hook(&RetryEvent {
                    method: request.method,
                    path: &request.path,
                    attempt: retry,
                    delay,
                    error: &error,
                    idempotency_key: idempotency_key.as_deref(),
                });
            }
            thread::sleep(delay);
        }
    }

    fn attempt(&self, method: &str, url: &str, body: Option<&[u8]>, idempotency_key: Option<&str>, timeout: Duration) -> Result<Vec<u8>, Error> {
        let mut call = self.agent.request(method, url).timeout(timeout).set("Accept", "application/json");
        call = match self.auth_header {
            AuthHeader::Bearer => call.set("Authorization", &format!("Bearer {}", self.api_key)),
            AuthHeader::XApiKey => call.set("X-API-Key", &self.api_key),
        };
        if let Some(key) = idempotency_key {
            call = call.set("Idempotency-Key", key);
        }
        let result = match body {
            Some(body) => call.set("Content-Type", "application/json").send_bytes(body),
            None => call.call(),
        };
        let response = match result {
            Ok(response) => response,
            Err(ureq::Error::Status(_, response)) => response,
            Err(ureq::Error::Transport(transport)) => return Err(Error::connection(method, url, transport.to_string())),
        };
        let status = response.status();
        let headers: Vec<(String, String)> = response
            .headers_names()
            .into_iter()
            .filter_map(|name| response.header(&name).map(|value| (name.to_ascii_lowercase(), value.to_string())))
            .collect();
        let mut answer = Vec::new();
        if let Err(error) = response.into_reader().read_to_end(&mut answer) {
            return Err(Error::connection(method, url, format!("reading the answer: {}", error)));
        }
        if (200..300).contains(&status) {
            Ok(answer)
        } else {
            Err(Error::from_response(status, headers, answer))
        }
    }
}

/// Whether an error is worth another attempt with the same request and Idempotency-Key.
fn is_retryable(error: &Error) -> bool {
    match error.kind() {
        ErrorKind::Connection => true,
        ErrorKind::Conflict => error.header("retry-after").is_some() || error.message().starts_with(IN_FLIGHT_MESSAGE),
        ErrorKind::RateLimit | ErrorKind::Server => true,
        _ => false,
    }
}

/// A Retry-After value (delay-seconds or an HTTP date) as a wait from `now`; `None` when unreadable.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|byte| byte.is_ascii_digit()) {
        return value.parse::<u64>().ok().map(Duration::from_secs);
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A method's JSON body: its params, or `{}` when none are given.
pub(crate) fn body_of<P: Serialize>(params: Option<&P>) -> Result<Vec<u8>, Error> {
    match params {
        Some(params) => serde_json::to_vec(params).map_err(|error| Error::encode(error.to_string())),
        None => Ok(b"{}".to_vec()),
    }
}

/// Query pairs from a params struct, under the JSON names; unset (`None`) fields are left out.
pub(crate) fn query_of<P: Serialize>(params: Option<&P>) -> Vec<(String, String)> {
    let fields = match params.map(serde_json::to_value) {
        Some(Ok(serde_json::Value::Object(fields))) => fields,
        _ => return Vec::new(),
    };
    fields
        .into_iter()
        .filter_map(|(name, value)| match value {
            serde_json::Value::Null => None,
            serde_json::Value::String(text) => Some((name, text)),
            other => Some((name, other.to_string())),
        })
        .collect()
}

fn encode_query(query: &[(String, String)]) -> String {
    if query.is_empty() {
        return String::new();
    }
    let pairs: Vec<String> = query.iter().map(|(name, value)| format!("{}={}", encode_path(name), encode_path(value))).collect();
    format!("?{}", pairs.join("&"))
}

/// Percent-encodes everything but the unreserved characters (as JavaScript's encodeURIComponent, less `!'()*`).
pub(crate) fn encode_path(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(byte as char),
            _ => out.push_str(&format!("%{:02X}", byte)),
        }
    }
    out
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::getrandom(&mut bytes).expect("svc_gateway: the operating system gave no randomness");
    bytes
}

fn random_fraction() -> f64 {
    (u64::from_le_bytes(random_bytes::<8>()) >> 11) as f64 / (1u64 << 53) as f64
}

/// A random (version 4) UUID, the default Idempotency-Key.
pub(crate) fn new_uuid() -> String {
    let mut b = random_bytes::<16>();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex = hex::encode(b);
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}
