use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::error::Error;
use crate::generated::resources::DEFAULT_BASE_URL;
use crate::transport::{body_of, Request, RequestOptions, Transport};

/// Which header carries the API key; the gateway takes either on every route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthHeader {
    /// `Authorization: Bearer <key>` (Interface A's scheme; the default).
    Bearer,
    /// `X-API-Key: <key>` (Interface B's scheme).
    XApiKey,
}

/// What an `on_retry` hook learns about a retry about to happen.
#[derive(Debug)]
pub struct RetryEvent<'e> {
    pub method: &'e str,
    pub path: &'e str,
    /// The number of the retry (1 for the first retry).
    pub attempt: u32,
    /// The wait before it.
    pub delay: Duration,
    /// The error of the attempt that failed.
    pub error: &'e Error,
    /// The key every attempt of this call sends (`None` for GET, PATCH and DELETE).
    pub idempotency_key: Option<&'e str>,
}

pub(crate) type RetryHook = Arc<dyn Fn(&RetryEvent<'_>) + Send + Sync>;

/// Calls the gateway: `client.payments().list(None)`, `client.refunds().create(&params)`, … (one
/// handle per resource, one method per operation), and [`Client::request`] for anything else.
/// Cheap to clone, safe to share between threads.
#[derive(Clone)]
pub struct Client {
    pub(crate) transport: Transport,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client").field("base_url", &self.transport.base_url).finish()
    }
}

impl Client {
    /// A client with the defaults: [`DEFAULT_BASE_URL`], Bearer, 2 retries, 30 s per attempt.
    pub fn new(api_key: impl Into<String>) -> Client {
        Client::builder(api_key).build()
    }

    /// A builder to set the base URL, the key's header, retries and timeouts.
    pub fn builder(api_key: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            api_key: api_key.into(),
            base_url: DEFAULT_BASE_URL.to_string(),
            auth_header: AuthHeader::Bearer,
            max_retries: 2,
            timeout: Duration::from_secs(30),
            backoff: (Duration::from_millis(500), Duration::from_secs(8)),
            max_retry_after: Duration::from_secs(60),
            on_retry: None,
        }
    }

    /// One call to any path under the base URL (for routes newer than this library), with the
    /// same authentication, idempotency, retries and errors as every generated method:
    /// `client.request::<serde_json::Value>("GET", "/payments", &[("limit", "5")], None, &RequestOptions::new())`.
    pub fn request<T: DeserializeOwned>(
        &self,
        method: &'static str,
        path: &str,
        query: &[(&str, &str)],
        body: Option<&serde_json::Value>,
        options: &RequestOptions,
    ) -> Result<T, Error> {
        let body = match body {
            Some(body) => Some(body_of(Some(body))?),
            None => None,
        };
        let query = query.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect();
        self.transport.call(Request { method, path: path.to_string(), query, body }, options)
    }
}

/// Configures a [`Client`]; from [`Client::builder`].
pub struct ClientBuilder {
    api_key: String,
    base_url: String,
    auth_header: AuthHeader,
    max_retries: u32,
    timeout: Duration,
    backoff: (Duration, Duration),
    max_retry_after: Duration,
    on_retry: Option<RetryHook>,
}

impl ClientBuilder {
    /// The API's base URL, ending in `/api/v1` (default [`DEFAULT_BASE_URL`]).
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into().trim_end_matches('/').to_string();
        self
    }

    /// The header that carries the key (default [`AuthHeader::Bearer`]).
    pub fn auth_header(mut self, header: AuthHeader) -> Self {
        self.auth_header = header;
        self
    }

    /// How many times a call is retried after its first attempt (default 2).
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// How long one attempt may take before it counts as a network error (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The exponential backoff: its first step and its largest (default 0.5 s and 8 s).
    pub fn retry_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.backoff = (initial, max);
        self
    }

    /// The longest Retry-After the client waits for; a longer one returns the error at once (default 60 s).
    pub fn max_retry_after(mut self, max: Duration) -> Self {
        self.max_retry_after = max;
        self
    }

    /// A hook that sees each retry before its wait (for logs and metrics).
    pub fn on_retry(mut self, hook: impl Fn(&RetryEvent<'_>) + Send + Sync + 'static) -> Self {
        self.on_retry = Some(Arc::new(hook));
        self
    }

    pub fn build(self) -> Client {
        Client {
            transport: Transport::new(
                self.api_key,
                self.base_url,
                self.auth_header,
                self.max_retries,
                self.timeout,
                self.backoff,
                self.max_retry_after,
                self.on_retry,
            ),
        }
    }
}
