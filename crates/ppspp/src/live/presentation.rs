//! A live presentation's signed records (docs/FORMATS.md, the live manifest): what lets a
//! page map a segment of a live HLS or DASH playlist to chunks of its rendition's live
//! swarm, and trust that mapping as it trusts the chunks, whoever served it (a peer, the
//! site's CDN).
//!
//! - The stream key, the one pages are given, signs each rendition's record: its live
//!   swarm (a key derived from the stream key, [`LiveSigningKey::derive`]), how it is cut
//!   and signed, and its initialisation segment's URI, length and hash.
//! - The rendition's key signs each part: a media segment's URI, its first chunk, chunk
//!   count and length, dated as the newest munro over it, so in the source's run. The
//!   chunks themselves are checked under the stream's munros, as any live chunk.
//!
//! Each signature covers a domain tag, so none can be taken for another kind.

use super::key::{LivePublicKey, LiveSigningKey};
use super::params::LiveInfo;
use super::segment::segment_chunk_lengths;
use crate::merkle::Hash;

/// A media segment of a rendition: where its bytes sit in the rendition's live swarm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LivePart {
    /// The segment's URI as the playlist names it (relative to the manifest).
    pub uri: String,
    /// Its first chunk in the live swarm.
    pub first_chunk: u64,
    /// How many chunks hold it ([`segment_chunk_lengths`] finds them).
    pub chunks: u64,
    /// Its length in bytes.
    pub length: u64,
    /// When it was signed (NTP, with the source's run in its lowest bits): the newest of
    /// its munros' dates.
    pub timestamp: u64,
}

/// A rendition's initialisation segment, which pages take from the web server whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitSegment {
    /// Its URI, relative to the manifest.
    pub uri: String,
    /// Its length in bytes.
    pub length: u64,
    /// Its hash with the rendition's hash function.
    pub hash: Hash,
}

/// A rendition of a live presentation: its live swarm and initialisation segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveRendition {
    /// The media playlist's URI relative to the master (a DASH Representation's id).
    pub id: String,
    /// The rendition's live swarm.
    pub info: LiveInfo,
    /// Its initialisation segment, if its segments need one.
    pub init: Option<InitSegment>,
    /// When the record was signed (NTP).
    pub timestamp: u64,
}

fn field(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

impl LivePart {
    /// The bytes its signature covers.
    pub fn signed_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.uri.len());
        field(&mut out, b"ppspp live part");
        field(&mut out, self.uri.as_bytes());
        for n in [self.first_chunk, self.chunks, self.length, self.timestamp] {
            out.extend_from_slice(&n.to_be_bytes());
        }
        out
    }

    /// Its signature by the rendition's key.
    pub fn sign(&self, key: &LiveSigningKey) -> Vec<u8> {
        key.sign(&self.signed_bytes())
    }

    /// Whether `signature` is the rendition key's over it.
    pub fn verify(&self, key: &LivePublicKey, signature: &[u8]) -> bool {
        key.verify(&self.signed_bytes(), signature)
    }

    /// The lengths of its chunks, in order; `None` if no source cuts its length so.
    pub fn chunk_lengths(&self, chunk_size: u32) -> Option<Vec<usize>> {
        segment_chunk_lengths(
            usize::try_from(self.length).ok()?,
            chunk_size as usize,
            self.chunks,
        )
    }

    /// One past its last chunk.
    pub fn end_chunk(&self) -> u64 {
        self.first_chunk.saturating_add(self.chunks)
    }
}

impl InitSegment {
    /// Whether `data` is this segment, hashed with `info`'s hash function.
    pub fn matches(&self, info: &LiveInfo, data: &[u8]) -> bool {
        data.len() as u64 == self.length && info.params.hash.digest(data) == self.hash
    }
}

impl LiveRendition {
    /// The bytes its signature covers.
    pub fn signed_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        field(&mut out, b"ppspp live rendition");
        field(&mut out, self.id.as_bytes());
        field(&mut out, self.info.key.swarm_id());
        let p = &self.info.params;
        field(&mut out, p.hash.name().as_bytes());
        out.extend_from_slice(&p.chunk_size.to_be_bytes());
        out.extend_from_slice(&p.chunks_per_signature.to_be_bytes());
        out.extend_from_slice(&p.discard_window.to_be_bytes());
        match &self.init {
            Some(init) => {
                out.push(1);
                field(&mut out, init.uri.as_bytes());
                out.extend_from_slice(&init.length.to_be_bytes());
                field(&mut out, init.hash.as_bytes());
            }
            None => out.push(0),
        }
        out.extend_from_slice(&self.timestamp.to_be_bytes());
        out
    }

    /// Its signature by the stream key.
    pub fn sign(&self, stream_key: &LiveSigningKey) -> Vec<u8> {
        stream_key.sign(&self.signed_bytes())
    }

    /// Whether `signature` is the stream key's over it.
    pub fn verify(&self, stream_key: &LivePublicKey, signature: &[u8]) -> bool {
        stream_key.verify(&self.signed_bytes(), signature)
    }
}

#[cfg(test)]
mod tests {
    use super::super::params::LiveParams;
    use super::*;
    use crate::live::LiveAlgorithm;
    use crate::merkle::HashAlgorithm;

    fn key(seed: u8) -> LiveSigningKey {
        LiveSigningKey::from_secret(LiveAlgorithm::Ed25519, &[seed; 32]).unwrap()
    }

    fn rendition(stream: &LiveSigningKey) -> LiveRendition {
        let own = stream.derive("v0.m3u8");
        LiveRendition {
            id: "v0.m3u8".into(),
            info: LiveInfo {
                key: own.public_key().clone(),
                params: LiveParams {
                    hash: HashAlgorithm::Sha256,
                    chunk_size: 8192,
                    chunks_per_signature: 16,
                    discard_window: 4096,
                },
            },
            init: Some(InitSegment {
                uri: "init_0.mp4".into(),
                length: 3,
                hash: HashAlgorithm::Sha256.digest(b"abc"),
            }),
            timestamp: 7,
        }
    }

    #[test]
    fn a_rendition_record_verifies_under_the_stream_key_only_and_unchanged() {
        let stream = key(1);
        let r = rendition(&stream);
        let sig = r.sign(&stream);
        assert!(r.verify(stream.public_key(), &sig));
        assert!(!r.verify(key(2).public_key(), &sig));
        assert!(!r.verify(&r.info.key, &sig));
        let mut other = r.clone();
        other.info.params.chunk_size = 1024;
        assert!(!other.verify(stream.public_key(), &sig));
        let mut other = r.clone();
        other.init.as_mut().unwrap().hash = HashAlgorithm::Sha256.digest(b"abd");
        assert!(!other.verify(stream.public_key(), &sig));
        let mut other = r.clone();
        other.init = None;
        assert!(!other.verify(stream.public_key(), &sig));
        let init = r.init.as_ref().unwrap();
        assert!(init.matches(&r.info, b"abc"));
        assert!(!init.matches(&r.info, b"abd"));
    }

    #[test]
    fn a_part_binds_its_uri_to_its_chunks() {
        let own = key(3);
        let part = LivePart {
            uri: "v0_00042.m4s".into(),
            first_chunk: 672,
            chunks: 32,
            length: 250_000,
            timestamp: 99,
        };
        let sig = part.sign(&own);
        assert!(part.verify(own.public_key(), &sig));
        for change in [
            |p: &mut LivePart| p.uri = "v0_00041.m4s".into(),
            |p: &mut LivePart| p.first_chunk = 640,
            |p: &mut LivePart| p.chunks = 31,
            |p: &mut LivePart| p.length = 249_999,
            |p: &mut LivePart| p.timestamp = 98,
        ] {
            let mut other = part.clone();
            change(&mut other);
            assert!(!other.verify(own.public_key(), &sig));
        }
        let lengths = part.chunk_lengths(8192).unwrap();
        assert_eq!(lengths.len(), 32);
        assert_eq!(lengths.iter().sum::<usize>(), 250_000);
        assert_eq!(part.end_chunk(), 704);
    }
}
