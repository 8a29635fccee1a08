//! The manifest of a live presentation (`NAME.ppspp.json` with `"type": "live"`,
//! docs/FORMATS.md): each rendition's live swarm and initialisation segment, signed with
//! the stream key, and the segments of the playlist's window with their chunks and the
//! munros over them, each signed with the rendition's key (`ppspp::live::presentation`).
//! The source rewrites it as segments come; pages read it from the web server.
//!
//! NTP timestamps are 16 hex digits: JSON numbers in a page hold 53 bits only.

pub use super::error::LiveManifestError;
use ppspp::live::text_fields::{bytes_from_hex, hash_from_hex, munro_from_text, ntp_from_hex};
use ppspp::live::{InitSegment, LivePart, LiveRendition, LiveUri, SignedMunro};
use serde::{Deserialize, Serialize};

/// What `type` says of a live presentation.
pub const LIVE: &str = "live";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveManifest {
    pub format: String,
    pub version: u32,
    /// `live`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The master playlist, relative to the manifest.
    pub source: String,
    /// The stream key in swarm-ID form (hex): what pages are given, and what signs every
    /// rendition's record.
    pub key: String,
    /// The packager's playlists ended: nothing more comes.
    #[serde(default)]
    pub ended: bool,
    pub renditions: Vec<LiveRenditionEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveRenditionEntry {
    /// The media playlist's URI relative to the master.
    pub id: String,
    /// `video`, `audio` or `muxed`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
    /// The rendition's live swarm URI: its key, chunking and signing (no peers named).
    pub swarm: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<InitEntry>,
    /// When the stream key signed this record (NTP, hex), and the signature (hex).
    pub signed_at: String,
    pub signature: String,
    /// The segments of the playlist's window, in order.
    pub parts: Vec<LivePartEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitEntry {
    pub uri: String,
    pub length: u64,
    /// Hex, with the rendition's hash function.
    pub hash: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LivePartEntry {
    pub uri: String,
    pub first_chunk: u64,
    pub chunks: u64,
    pub length: u64,
    /// NTP, hex: the newest of its munros' dates.
    pub signed_at: String,
    /// The rendition key's signature (hex).
    pub signature: String,
    pub munros: Vec<MunroEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MunroEntry {
    /// The munro's bin (RFC 7574 bin numbering).
    pub bin: u64,
    pub signed_at: String,
    pub hash: String,
    pub signature: String,
}

pub use ppspp::live::text_fields::ntp_to_hex as ntp_hex;

impl MunroEntry {
    pub fn of(m: &SignedMunro) -> MunroEntry {
        MunroEntry {
            bin: m.bin.raw(),
            signed_at: ntp_hex(m.timestamp),
            hash: m.hash.to_hex(),
            signature: ppspp::hex::encode(&m.signature),
        }
    }

    pub fn to_munro(
        &self,
        alg: ppspp::merkle::HashAlgorithm,
    ) -> Result<SignedMunro, LiveManifestError> {
        Ok(munro_from_text(
            self.bin,
            &self.signed_at,
            &self.hash,
            &self.signature,
            alg,
        )?)
    }
}

impl LivePartEntry {
    /// The entry of `part`, signed with `signature`, over `munros`.
    pub fn of(part: &LivePart, signature: &[u8], munros: &[SignedMunro]) -> LivePartEntry {
        LivePartEntry {
            uri: part.uri.clone(),
            first_chunk: part.first_chunk,
            chunks: part.chunks,
            length: part.length,
            signed_at: ntp_hex(part.timestamp),
            signature: ppspp::hex::encode(signature),
            munros: munros.iter().map(MunroEntry::of).collect(),
        }
    }

    /// The record, its signature, and the munros.
    pub fn to_part(
        &self,
        alg: ppspp::merkle::HashAlgorithm,
    ) -> Result<(LivePart, Vec<u8>, Vec<SignedMunro>), LiveManifestError> {
        let part = LivePart {
            uri: self.uri.clone(),
            first_chunk: self.first_chunk,
            chunks: self.chunks,
            length: self.length,
            timestamp: ntp_from_hex("part signedAt", &self.signed_at)?,
        };
        let munros = self
            .munros
            .iter()
            .map(|m| m.to_munro(alg))
            .collect::<Result<_, _>>()?;
        let signature = bytes_from_hex("part signature", &self.signature)?;
        Ok((part, signature, munros))
    }
}

impl LiveRenditionEntry {
    /// The signed record this entry carries, and its signature.
    pub fn to_record(&self) -> Result<(LiveRendition, Vec<u8>), LiveManifestError> {
        let uri: LiveUri = self
            .swarm
            .parse()
            .map_err(|source| LiveManifestError::Swarm {
                id: self.id.clone(),
                source,
            })?;
        let init = match &self.init {
            Some(i) => Some(InitSegment {
                uri: i.uri.clone(),
                length: i.length,
                hash: hash_from_hex("init hash", &i.hash, uri.info.params.hash)?,
            }),
            None => None,
        };
        let record = LiveRendition {
            id: self.id.clone(),
            info: uri.info,
            init,
            timestamp: ntp_from_hex("rendition signedAt", &self.signed_at)?,
        };
        let signature = bytes_from_hex("rendition signature", &self.signature)?;
        Ok((record, signature))
    }
}
