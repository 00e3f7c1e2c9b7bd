//! The Rust client of svc gateway: typed calls for every route of the merchant API (generated
//! from the gateway's OpenAPI document), an Idempotency-Key per POST kept across automatic
//! retries, typed errors, auto-pagination and the webhook verifier of spec §6.3.
//!
//! Blocking (ureq); built from crates Debian packages. Rust 1.63 or newer.
//!
//! ```no_run
//! use svc_gateway::{Chain, Client, Currency, PaymentCreateParams};
//!
//! let client = Client::new(std::env::var("SVC_API_KEY").unwrap());
//! let payment = client.payments().create(&PaymentCreateParams::new().amount("25.00").currency(Currency::Usdc).chain(Chain::Base))?;
//! for payment in client.payments().list_all(None) {
//!     let payment = payment?;
//!     println!("{} {}", payment.id, payment.status);
//! }
//! # Ok::<(), svc_gateway::Error>(())
//! ```

mod client;
mod error;
// Generated (clients/scripts/emit-rust.ts): rustfmt leaves it as the generator writes it.
#[rustfmt::skip]
mod generated;
mod pagination;
mod transport;
pub mod webhooks;

pub use client::{AuthHeader, Client, ClientBuilder, RetryEvent};
pub use error::{Error, ErrorKind};
pub use generated::resources::*;
pub use generated::types::*;
pub use pagination::{List, Page, PageIter};
pub use transport::{parse_retry_after, RequestOptions, IN_FLIGHT_MESSAGE};
pub use webhooks::{verify_webhook, HeaderPair, VerifyOptions, WebhookEvent, WebhookVerificationError};

/// This library's version (CHANGELOG.md); the User-Agent is `svc-gateway-rust/<VERSION>`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
