//! Saved copies' bindings: the page saves verified chunks with their proofs (OPFS, in
//! web/src/saved-chunks.ts); the engine decides which to read back and verifies each
//! against the root before it is kept, played or served.

use crate::WasmPeer;
use wasm_bindgen::prelude::*;

fn chunk_index(v: f64) -> Option<u64> {
    (v.is_finite() && v >= 0.0).then_some(v as u64)
}

#[wasm_bindgen]
impl WasmPeer {
    /// The proof that held chunk `chunk` belongs to the content (its uncles' hashes from the
    /// leaf up), saved with it; `undefined` if the chunk is not held.
    #[wasm_bindgen(js_name = chunkProof)]
    pub fn chunk_proof(&self, chunk: f64) -> Option<Vec<u8>> {
        self.engine.inner.chunk_proof(chunk_index(chunk)?)
    }

    /// The page holds saved copies of chunks `first..end`: they are read back
    /// (`pollSavedRead`) when wanted, rather than fetched.
    #[wasm_bindgen(js_name = addSaved)]
    pub fn add_saved(&mut self, first: f64, end: f64) {
        if let (Some(first), Some(end)) = (chunk_index(first), chunk_index(end)) {
            self.engine.inner.add_saved(first..end);
        }
    }

    /// The next chunks to read back, `[first, end]` (end exclusive), or `undefined`. Drain
    /// it after every call, as `pollTransmit`.
    #[wasm_bindgen(js_name = pollSavedRead)]
    pub fn poll_saved_read(&mut self) -> Option<Vec<f64>> {
        let r = self.engine.inner.poll_saved_read()?;
        Some(vec![r.start as f64, r.end as f64])
    }

    /// A saved copy of `chunk` and its proof: `undefined` if it verified and is kept, else
    /// why it was refused (the copy is forgotten and the chunk fetched instead).
    #[wasm_bindgen(js_name = handleSavedChunk)]
    pub fn handle_saved_chunk(&mut self, chunk: f64, data: &[u8], proof: &[u8]) -> Option<String> {
        let Some(chunk) = chunk_index(chunk) else {
            return Some(format!("{chunk} is not a chunk index"));
        };
        self.engine
            .inner
            .handle_saved_chunk(chunk, data, proof)
            .err()
            .map(|e| e.to_string())
    }

    /// The saved copies of chunks `first..end` are gone or unreadable: they are fetched.
    #[wasm_bindgen(js_name = handleSavedMissing)]
    pub fn handle_saved_missing(&mut self, first: f64, end: f64) {
        if let (Some(first), Some(end)) = (chunk_index(first), chunk_index(end)) {
            self.engine.inner.handle_saved_missing(first..end);
        }
    }
}
