//! A live presentation's signed records as the page reads them from its manifest
//! (docs/FORMATS.md, the live manifest): the rendition records the stream key signs, and
//! the parts, with their munros, that a rendition's engine checks and takes from the web
//! server (`ppspp::live::presentation`, `Engine::handle_live_part`). The page passes the
//! manifest's objects as they are; their fields are read here, with `Reflect`, and a
//! field that is missing or wrong is named in the error.

use crate::WasmPeer;
use crate::driven::to_time;
use js_sys::{Array, Reflect};
use ppspp::hex;
use ppspp::live::text_fields::{bytes_from_hex, hash_from_hex, munro_from_text, ntp_from_hex};
use ppspp::live::{InitSegment, LivePart, LivePublicKey, LiveRendition, LiveUri, SignedMunro};
use ppspp::merkle::HashAlgorithm;
use wasm_bindgen::prelude::*;

fn get(o: &JsValue, name: &str, what: &str) -> Result<JsValue, JsError> {
    if !o.is_object() {
        return Err(JsError::new(&format!("{what} must be an object")));
    }
    Reflect::get(o, &JsValue::from_str(name))
        .map_err(|_| JsError::new(&format!("{what}.{name} cannot be read")))
}

fn string(o: &JsValue, name: &str, what: &str) -> Result<String, JsError> {
    get(o, name, what)?
        .as_string()
        .ok_or_else(|| JsError::new(&format!("{what}.{name} must be a string")))
}

/// A whole number a JavaScript number holds exactly.
fn whole(o: &JsValue, name: &str, what: &str) -> Result<u64, JsError> {
    let v = get(o, name, what)?.as_f64();
    match v {
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= 9_007_199_254_740_991.0 => Ok(n as u64),
        _ => Err(JsError::new(&format!(
            "{what}.{name} must be a whole number ≥ 0"
        ))),
    }
}

fn text<T>(r: Result<T, ppspp::live::text_fields::TextFieldError>) -> Result<T, JsError> {
    r.map_err(|e| JsError::new(&e.to_string()))
}

/// `{uri, firstChunk, chunks, length, signedAt, signature, munros}`: the record, its
/// signature and the munros over it.
fn part(o: &JsValue, alg: HashAlgorithm) -> Result<(LivePart, Vec<u8>, Vec<SignedMunro>), JsError> {
    let what = "part";
    let record = LivePart {
        uri: string(o, "uri", what)?,
        first_chunk: whole(o, "firstChunk", what)?,
        chunks: whole(o, "chunks", what)?,
        length: whole(o, "length", what)?,
        timestamp: text(ntp_from_hex("part signedAt", &string(o, "signedAt", what)?))?,
    };
    let signature = text(bytes_from_hex(
        "part signature",
        &string(o, "signature", what)?,
    ))?;
    let list = get(o, "munros", what)?;
    if !Array::is_array(&list) {
        return Err(JsError::new("part.munros must be a list"));
    }
    let mut munros = Vec::new();
    for m in Array::from(&list).iter() {
        let what = "part.munros[]";
        munros.push(text(munro_from_text(
            whole(&m, "bin", what)?,
            &string(&m, "signedAt", what)?,
            &string(&m, "hash", what)?,
            &string(&m, "signature", what)?,
            alg,
        ))?);
    }
    Ok((record, signature, munros))
}

/// Checks a rendition's record (`{id, swarm, init?, signedAt, signature}`, as the
/// manifest has it) against `streamKey` (hex, swarm-ID form, as the source prints it).
/// Throws with the reason unless the stream key signed it as it is.
#[wasm_bindgen(js_name = verifyLiveRendition)]
pub fn verify_live_rendition(stream_key: &str, record: &JsValue) -> Result<(), JsError> {
    let key_bytes = hex::decode(stream_key.trim())
        .ok_or_else(|| JsError::new("the stream key must be hex (as the source prints it)"))?;
    let key = LivePublicKey::from_swarm_id(&key_bytes)
        .map_err(|e| JsError::new(&format!("the stream key: {e}")))?;
    let what = "rendition";
    let id = string(record, "id", what)?;
    let uri: LiveUri = string(record, "swarm", what)?
        .parse()
        .map_err(|e| JsError::new(&format!("rendition {id}: swarm: {e}")))?;
    let init = get(record, "init", what)?;
    let init = if init.is_undefined() || init.is_null() {
        None
    } else {
        let what = "rendition.init";
        Some(InitSegment {
            uri: string(&init, "uri", what)?,
            length: whole(&init, "length", what)?,
            hash: text(hash_from_hex(
                "init hash",
                &string(&init, "hash", what)?,
                uri.info.params.hash,
            ))?,
        })
    };
    let rendition = LiveRendition {
        id: id.clone(),
        info: uri.info,
        init,
        timestamp: text(ntp_from_hex(
            "rendition signedAt",
            &string(record, "signedAt", what)?,
        ))?,
    };
    let signature = text(bytes_from_hex(
        "rendition signature",
        &string(record, "signature", what)?,
    ))?;
    if !rendition.verify(&key, &signature) {
        return Err(JsError::new(&format!(
            "rendition {id}: its record is not signed by the stream key"
        )));
    }
    Ok(())
}

#[wasm_bindgen]
impl WasmPeer {
    /// Checks a part of the live manifest (`{uri, firstChunk, chunks, length, signedAt,
    /// signature, munros}`): signed by this stream's key and recent. Throws with the
    /// reason otherwise.
    #[wasm_bindgen(js_name = checkLivePart)]
    pub fn check_live_part(&self, part_record: &JsValue, now_ms: f64) -> Result<(), JsError> {
        let alg = self.engine.inner.content().hash;
        let (record, signature, _) = part(part_record, alg)?;
        self.engine
            .inner
            .check_live_part(to_time(now_ms), &record, &signature)
            .map_err(|e| JsError::new(&e.to_string()))
    }

    /// The segment a part names, fetched whole from the web server: checked under the
    /// part's munros and kept, so it is relayed to peers too. Returns how many chunks
    /// were new; throws with the reason, keeping nothing of it, if it is not what the
    /// source signed. Drain transmits and events afterwards.
    #[wasm_bindgen(js_name = handleLivePart)]
    pub fn handle_live_part(
        &mut self,
        part_record: &JsValue,
        data: &[u8],
        now_ms: f64,
    ) -> Result<f64, JsError> {
        let alg = self.engine.inner.content().hash;
        let (record, signature, munros) = part(part_record, alg)?;
        self.engine
            .inner
            .handle_live_part(to_time(now_ms), &record, &signature, &munros, data)
            .map(|kept| kept as f64)
            .map_err(|e| JsError::new(&e.to_string()))
    }

    /// The length of held live chunk `chunk` (0: not held).
    #[wasm_bindgen(js_name = chunkLength)]
    pub fn chunk_length(&self, chunk: f64) -> f64 {
        self.engine
            .inner
            .store()
            .chunk_len(chunk.max(0.0) as u64)
            .unwrap_or(0) as f64
    }

    /// How many connected peers said they hold `chunk`.
    #[wasm_bindgen(js_name = peersHolding)]
    pub fn peers_holding(&self, chunk: f64) -> u32 {
        self.engine.inner.peers_holding(chunk.max(0.0) as u64) as u32
    }

    /// Whether `data` is the initialisation segment a verified rendition record names
    /// (`length`, `hash` in hex with this stream's hash function).
    #[wasm_bindgen(js_name = liveInitMatches)]
    pub fn live_init_matches(&self, length: f64, hash: &str, data: &[u8]) -> bool {
        let Some(info) = self.engine.inner.live_info() else {
            return false;
        };
        let Ok(hash) = hash_from_hex("init hash", hash, info.params.hash) else {
            return false;
        };
        let init = InitSegment {
            uri: String::new(),
            length: length.max(0.0) as u64,
            hash,
        };
        init.matches(info, data)
    }
}
