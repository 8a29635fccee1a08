//! A rendition's parts for the page's HTTP origin: which files (or byte ranges of them) a
//! Range request on the content covers, as `ppspp::parts::PartMap` says.

use ppspp::parts::PartMap as CorePartMap;
use wasm_bindgen::prelude::*;

/// The parts' lengths in content order (`new PartMap(lengths)`).
#[wasm_bindgen]
pub struct PartMap {
    inner: CorePartMap,
}

#[wasm_bindgen]
impl PartMap {
    /// Throws if a length is 0 or they add up past 2^53 (a JavaScript number's whole range).
    #[wasm_bindgen(constructor)]
    pub fn new(lengths: Vec<f64>) -> Result<PartMap, JsError> {
        let mut whole = Vec::with_capacity(lengths.len());
        for (i, &l) in lengths.iter().enumerate() {
            if !(l.is_finite() && l >= 0.0 && l.fract() == 0.0 && l <= 9_007_199_254_740_991.0) {
                return Err(JsError::new(&format!(
                    "part {i}'s length {l} is not a whole number of bytes"
                )));
            }
            whole.push(l as u64);
        }
        let inner = CorePartMap::new(whole).map_err(|e| JsError::new(&e.to_string()))?;
        if inner.len() > 9_007_199_254_740_991 {
            return Err(JsError::new("the parts add up to more than 2^53 bytes"));
        }
        Ok(PartMap { inner })
    }

    /// Content bytes `start..end` (end exclusive) as `[part, from, to, part, from, to, …]`:
    /// each slice's part index and its bytes within that part, in content order.
    pub fn locate(&self, start: f64, end: f64) -> Vec<f64> {
        if !(start >= 0.0 && end > start) {
            return Vec::new();
        }
        self.inner
            .locate(start as u64..end as u64)
            .into_iter()
            .flat_map(|s| [s.part as f64, s.within.start as f64, s.within.end as f64])
            .collect()
    }
}
