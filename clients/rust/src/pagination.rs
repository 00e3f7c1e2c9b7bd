use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::transport::{Request, RequestOptions, Transport};

/// One page of a paged list, newest first; `next_cursor` is the `startingAfter` of the next page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub data: Vec<T>,
    pub has_more: bool,
    pub next_cursor: Option<String>,
}

/// A list the gateway returns whole (no paging).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct List<T> {
    pub data: Vec<T>,
}

/// Every item of a paged list: an iterator of `Result`s that fetches the next page (with
/// `startingAfter` set to the previous page's `nextCursor`) when one is used up. Nothing is
/// requested before the first `next`; after an error it ends.
///
/// ```no_run
/// # let client = svc_gateway::Client::new("svc_test_...");
/// for payment in client.payments().list_all(None) {
///     let payment = payment?;
///     println!("{} {}", payment.id, payment.status);
/// }
/// # Ok::<(), svc_gateway::Error>(())
/// ```
pub struct PageIter<'a, T> {
    transport: &'a Transport,
    request: Request,
    options: RequestOptions,
    buffer: std::vec::IntoIter<T>,
    cursor: Option<String>,
    started: bool,
    done: bool,
}

impl<'a, T> PageIter<'a, T> {
    pub(crate) fn new(transport: &'a Transport, request: Request, options: RequestOptions) -> Self {
        PageIter { transport, request, options, buffer: Vec::new().into_iter(), cursor: None, started: false, done: false }
    }
}

impl<'a, T: DeserializeOwned> Iterator for PageIter<'a, T> {
    type Item = Result<T, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.buffer.next() {
                return Some(Ok(item));
            }
            if self.done {
                return None;
            }
            let mut query: Vec<(String, String)> = self.request.query.clone();
            if self.started {
                match self.cursor.take() {
                    Some(cursor) => {
                        query.retain(|(name, _)| name != "startingAfter");
                        query.push(("startingAfter".to_string(), cursor));
                    }
                    None => {
                        self.done = true;
                        return None;
                    }
                }
            }
            self.started = true;
            let request = Request { method: self.request.method, path: self.request.path.clone(), query, body: self.request.body.clone() };
            match self.transport.call::<Page<T>>(request, &self.options) {
                Ok(page) => {
                    self.cursor = if page.has_more { page.next_cursor.filter(|cursor| !cursor.is_empty()) } else { None };
                    self.buffer = page.data.into_iter();
                }
                Err(error) => {
                    self.done = true;
                    return Some(Err(error));
                }
            }
        }
    }
}
