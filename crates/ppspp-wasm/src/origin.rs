//! The HTTP origin's bindings: the engine decides every Range request and verifies every
//! byte; the page's `fetch()` only carries them (web/src/http-origin.ts).

use crate::WasmPeer;
use crate::convert::origin_request_object;
use crate::driven::to_time;
use ppspp::engine::{HttpOriginConfig, OriginError};
use ppspp::merkle::MerkleTree;
use ppspp::merkle::tree_file::{DEFAULT_GROUP_LAYER, encode_file};
use wasm_bindgen::prelude::*;

/// Settings of an HTTP origin; `new OriginOptions()` gives the defaults.
#[wasm_bindgen]
#[derive(Clone, Copy, Debug)]
pub struct OriginOptions {
    /// Requests in flight at most.
    pub max_requests: u32,
    /// Content bytes per request at most.
    pub max_request_bytes: f64,
    /// The first bytes of the content fetched from the origin at once.
    pub head_bytes: f64,
    /// A due chunk no peer delivered for this long comes from the origin.
    pub peer_deadline_ms: u32,
    /// With no peer for this long, the origin serves the whole read-ahead window.
    pub alone_after_ms: u32,
}

#[wasm_bindgen]
impl OriginOptions {
    #[wasm_bindgen(constructor)]
    pub fn new() -> OriginOptions {
        OriginOptions::default()
    }
}

impl Default for OriginOptions {
    fn default() -> Self {
        let d = HttpOriginConfig::default();
        OriginOptions {
            max_requests: d.max_requests as u32,
            max_request_bytes: d.max_request_bytes as f64,
            head_bytes: d.head_bytes as f64,
            peer_deadline_ms: d.peer_deadline.as_millis() as u32,
            alone_after_ms: d.alone_after.as_millis() as u32,
        }
    }
}

impl OriginOptions {
    fn config(&self) -> Result<HttpOriginConfig, JsError> {
        let bytes = |name: &str, v: f64, min: f64| -> Result<u64, JsError> {
            if !v.is_finite() || v < min {
                return Err(JsError::new(&format!(
                    "{name} must be a number of bytes ≥ {min}, not {v}"
                )));
            }
            Ok(v as u64)
        };
        if self.max_requests == 0 {
            return Err(JsError::new("max_requests must be at least 1"));
        }
        Ok(HttpOriginConfig {
            max_requests: self.max_requests as usize,
            max_request_bytes: bytes("max_request_bytes", self.max_request_bytes, 1.0)?,
            head_bytes: bytes("head_bytes", self.head_bytes, 0.0)?,
            peer_deadline: core::time::Duration::from_millis(u64::from(self.peer_deadline_ms)),
            alone_after: core::time::Duration::from_millis(u64::from(self.alone_after_ms)),
            ..HttpOriginConfig::default()
        })
    }
}

#[wasm_bindgen]
impl WasmPeer {
    /// Uses an HTTP origin: then drain `pollOriginRequest` after every call, as
    /// `pollTransmit`.
    #[wasm_bindgen(js_name = enableHttpOrigin)]
    pub fn enable_http_origin(
        &mut self,
        options: &OriginOptions,
        now_ms: f64,
    ) -> Result<(), JsError> {
        self.engine
            .inner
            .enable_http_origin(options.config()?, to_time(now_ms));
        Ok(())
    }

    /// Whether connections to peers are being set up: while they are, the page does not
    /// count as alone, and the origin serves only what playback needs next.
    #[wasm_bindgen(js_name = setPeersComing)]
    pub fn set_peers_coming(&mut self, coming: bool) {
        self.engine.inner.set_peers_coming(coming);
    }

    /// True while the HTTP origin is in use (not given up after a permanent failure).
    #[wasm_bindgen(js_name = hasHttpOrigin)]
    pub fn has_http_origin(&self) -> bool {
        self.engine.inner.has_http_origin()
    }

    /// The next Range request, `{id, file: 'tree' | 'content', start, end}` (end exclusive),
    /// or `undefined`.
    #[wasm_bindgen(js_name = pollOriginRequest)]
    pub fn poll_origin_request(&mut self, now_ms: f64) -> JsValue {
        match self.engine.inner.poll_origin_request(to_time(now_ms)) {
            Some(r) => origin_request_object(&r),
            None => JsValue::UNDEFINED,
        }
    }

    /// The body of request `id`: exactly the bytes asked for (a short body is a failure).
    #[wasm_bindgen(js_name = handleOriginResponse)]
    pub fn handle_origin_response(&mut self, id: f64, data: &[u8], now_ms: f64) {
        self.engine
            .inner
            .handle_origin_response(to_time(now_ms), id as u64, data);
    }

    /// Request `id` failed: `kind` is `no-range` (status 200 to a Range request), `status`
    /// (any other status but 206; `status` says which), `unreachable` (network, CORS) or
    /// `timeout`; `message` says more.
    #[wasm_bindgen(js_name = handleOriginFailure)]
    pub fn handle_origin_failure(
        &mut self,
        id: f64,
        kind: &str,
        status: u16,
        message: &str,
        now_ms: f64,
    ) -> Result<(), JsError> {
        let error = match kind {
            "no-range" => OriginError::NoRangeSupport,
            "status" => OriginError::Status(status),
            "unreachable" => OriginError::Unreachable(message.to_owned()),
            "timeout" => OriginError::Timeout,
            _ => {
                return Err(JsError::new(&format!(
                    "unknown origin failure kind {kind:?}"
                )));
            }
        };
        self.engine
            .inner
            .handle_origin_failure(to_time(now_ms), id as u64, error);
        Ok(())
    }
}

/// The tree file of `content` (docs/FORMATS.md), as `ppspp root FILE --tree OUT` writes it:
/// for a page that publishes content to put next to it on a web server.
#[wasm_bindgen(js_name = treeFile)]
pub fn tree_file(content: &[u8], chunk_size: u32, hash: &str) -> Result<Vec<u8>, JsError> {
    let alg = crate::hashing(hash, chunk_size)?;
    let tree = MerkleTree::from_content(alg, chunk_size as usize, content)
        .map_err(|e| JsError::new(&e.to_string()))?;
    encode_file(&tree, DEFAULT_GROUP_LAYER)
        .ok_or_else(|| JsError::new("chunk size too large for a tree file"))
}
