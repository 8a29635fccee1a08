//! The HTTP origin of `fetch` (a URI with `http=` and `tree=`): the engine decides every
//! Range request and verifies every byte; this carries the requests over HTTP/1.1 (https
//! through rustls), each in a task of its own, and hands each answer back to the driver
//! loop: the body, or why there is none.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::{StatusCode, Uri, header};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use ppspp::engine::{OriginError, OriginFile, OriginRequest};
use ppspp::uri::HttpOriginUrls;
use std::time::Duration;
use tokio::sync::mpsc;

/// A request not answered whole in this long fails (and the engine retries it later).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How one request ended.
pub struct Answer {
    pub id: u64,
    pub result: Result<Vec<u8>, OriginError>,
}

/// The client side of an HTTP origin.
pub struct HttpOrigin {
    client: Client<HttpsConnector<HttpConnector>, Empty<Bytes>>,
    content: Uri,
    tree: Uri,
    timeout: Duration,
    tx: mpsc::UnboundedSender<Answer>,
    rx: mpsc::UnboundedReceiver<Answer>,
}

/// A swarm URI's HTTP origin URL (`what` is `http=` or `tree=`) this client cannot use.
#[derive(Debug, thiserror::Error)]
pub enum HttpOriginError {
    #[error("the URI's {what} {url:?} is not a URL: {source}")]
    NotAUrl {
        what: &'static str,
        url: String,
        #[source]
        source: hyper::http::uri::InvalidUri,
    },
    /// Relative URLs resolve against a page's address, which the command line has not.
    #[error(
        "the URI's {what} {url:?} must be an absolute http:// or https:// URL here (relative ones are for pages)"
    )]
    NotAbsolute { what: &'static str, url: String },
}

fn parse_url(what: &'static str, url: &str) -> Result<Uri, HttpOriginError> {
    let uri: Uri = url.parse().map_err(|source| HttpOriginError::NotAUrl {
        what,
        url: url.to_string(),
        source,
    })?;
    match uri.scheme_str() {
        Some("http" | "https") if uri.host().is_some() => Ok(uri),
        _ => Err(HttpOriginError::NotAbsolute {
            what,
            url: url.to_string(),
        }),
    }
}

impl HttpOrigin {
    /// A client for `urls`; refuses URLs that are not absolute http(s).
    pub fn new(urls: &HttpOriginUrls, timeout: Duration) -> Result<HttpOrigin, HttpOriginError> {
        let content = parse_url("http=", &urls.content)?;
        let tree = parse_url("tree=", &urls.tree)?;
        // No system CA store is no error: Mozilla's roots stand in.
        let https = HttpsConnectorBuilder::new()
            .with_native_roots()
            .unwrap_or_else(|_| HttpsConnectorBuilder::new().with_webpki_roots())
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new()).build(https);
        let (tx, rx) = mpsc::unbounded_channel();
        Ok(HttpOrigin {
            client,
            content,
            tree,
            timeout,
            tx,
            rx,
        })
    }

    /// Starts `request`; its answer comes from [`next`](Self::next).
    pub fn start(&self, request: OriginRequest) {
        let uri = match request.file {
            OriginFile::Tree => self.tree.clone(),
            OriginFile::Content => self.content.clone(),
        };
        let client = self.client.clone();
        let tx = self.tx.clone();
        let timeout = self.timeout;
        tokio::spawn(async move {
            let result = match tokio::time::timeout(timeout, get(&client, uri, &request)).await {
                Ok(r) => r,
                Err(_) => Err(OriginError::Timeout),
            };
            // The loop may have ended meanwhile: nobody wants the answer then.
            let _ = tx.send(Answer {
                id: request.id,
                result,
            });
        });
    }

    /// The next answer (waits forever if nothing is in flight).
    pub async fn next(&mut self) -> Answer {
        match self.rx.recv().await {
            Some(a) => a,
            // We hold a sender, so the channel never closes.
            None => std::future::pending().await,
        }
    }
}

async fn get(
    client: &Client<HttpsConnector<HttpConnector>, Empty<Bytes>>,
    uri: Uri,
    request: &OriginRequest,
) -> Result<Vec<u8>, OriginError> {
    let (start, end) = (request.range.start, request.range.end);
    let req = hyper::Request::get(uri)
        .header(header::RANGE, format!("bytes={start}-{}", end - 1))
        .header(
            header::USER_AGENT,
            concat!("ppspp/", env!("CARGO_PKG_VERSION")),
        )
        .body(Empty::new())
        .map_err(|e| OriginError::Unreachable(e.to_string()))?;
    let response = client
        .request(req)
        .await
        .map_err(|e| OriginError::Unreachable(error_chain(&e)))?;
    match response.status() {
        StatusCode::PARTIAL_CONTENT => {}
        // The whole file is coming: it cannot serve ranges (dropping the response closes
        // the connection, so it is not read).
        StatusCode::OK => return Err(OriginError::NoRangeSupport),
        s => return Err(OriginError::Status(s.as_u16())),
    }
    // Read no more than was asked for (and one byte, to tell a longer body).
    let limit = (end - start) as usize + 1;
    let mut body = response.into_body();
    let mut out = Vec::with_capacity(limit.min(1 << 20));
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| OriginError::Unreachable(error_chain(&e)))?;
        if let Some(data) = frame.data_ref() {
            out.extend_from_slice(&data[..data.len().min(limit - out.len())]);
            if out.len() >= limit {
                break;
            }
        }
    }
    Ok(out)
}

/// An error and its causes, in one line ("client error (Connect): tcp connect error:
/// Connection refused").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
