use std::fmt;
use std::time::{Duration, SystemTime};

/// What kind of failure an [`Error`] is: the class of the HTTP status, or no answer at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// 400: the request is malformed or a field is invalid; the message says which.
    BadRequest,
    /// 401: the API key is missing, unknown or revoked.
    Authentication,
    /// 403: the key may not do this (a test key on a live-only route, …).
    PermissionDenied,
    /// 404: no such object for this key's account and mode.
    NotFound,
    /// 409: the request conflicts with the object's state (or an idempotent request still running after every retry).
    Conflict,
    /// 422: well-formed but refused, e.g. an Idempotency-Key reused with a different request.
    UnprocessableEntity,
    /// 429: rate limited; [`Error::retry_after`] is the gateway's Retry-After.
    RateLimit,
    /// 5xx: the gateway failed or is unavailable (503 while its database is unreachable).
    Server,
    /// Any other non-2xx status.
    Other,
    /// No answer: the connection failed, was reset or timed out.
    Connection,
    /// A 2xx answer whose body is not the JSON this library expects (a gateway newer or older than it).
    Decode,
    /// The request could not be encoded as JSON.
    Encode,
}

/// The error of a call: its [`ErrorKind`], the HTTP status (`None` when no answer came), the
/// gateway's message (the body's `error`, else the text, else `HTTP <status>`), the request id
/// (`X-Request-Id` or `Request-Id`, when the gateway sends one), the headers and the body.
#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    status: Option<u16>,
    message: String,
    request_id: Option<String>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Error {
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The HTTP status; `None` when no answer came.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// The request id the gateway sent (`X-Request-Id`), when it sent one.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// A response header (name in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }

    /// The response headers, names in lower case; empty without an answer.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The answer's body as it came (usually `{"error": "..."}`).
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The answer's Retry-After as a wait from now (a 429's, or any status's that sent one).
    pub fn retry_after(&self) -> Option<Duration> {
        self.header("retry-after").and_then(|value| crate::transport::parse_retry_after(value, SystemTime::now()))
    }

    pub(crate) fn from_response(status: u16, headers: Vec<(String, String)>, body: Vec<u8>) -> Error {
        let message = match serde_json::from_slice::<serde_json::Value>(&body) {
            Ok(parsed) => match parsed.get("error").and_then(|error| error.as_str()) {
                Some(error) => error.to_string(),
                None => format!("HTTP {}", status),
            },
            Err(_) if !body.is_empty() => String::from_utf8_lossy(&body).chars().take(500).collect(),
            Err(_) => format!("HTTP {}", status),
        };
        let kind = match status {
            400 => ErrorKind::BadRequest,
            401 => ErrorKind::Authentication,
            403 => ErrorKind::PermissionDenied,
            404 => ErrorKind::NotFound,
            409 => ErrorKind::Conflict,
            422 => ErrorKind::UnprocessableEntity,
            429 => ErrorKind::RateLimit,
            500..=599 => ErrorKind::Server,
            _ => ErrorKind::Other,
        };
        let request_id = headers.iter().find(|(name, _)| name == "x-request-id" || name == "request-id").map(|(_, value)| value.clone());
        Error { kind, status: Some(status), message, request_id, headers, body }
    }

    pub(crate) fn connection(method: &str, url: &str, why: String) -> Error {
        Error::bare(ErrorKind::Connection, format!("{} {}: {}", method, url, why))
    }

    pub(crate) fn decode(method: &str, path: &str, error: serde_json::Error) -> Error {
        Error::bare(ErrorKind::Decode, format!("{} {}: the answer does not decode: {}", method, path, error))
    }

    pub(crate) fn encode(why: String) -> Error {
        Error::bare(ErrorKind::Encode, format!("the request does not encode as JSON: {}", why))
    }

    fn bare(kind: ErrorKind, message: String) -> Error {
        Error { kind, status: None, message, request_id: None, headers: Vec::new(), body: Vec::new() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status {
            Some(status) => write!(f, "svc gateway: {} {}", status, self.message),
            None => write!(f, "svc gateway: {}", self.message),
        }
    }
}

impl std::error::Error for Error {}
