//! Signed munros (RFC 7574 §6.1.2): the root of a subtree of the Unified Merkle Tree,
//! signed by the source. The signature covers the munro's chunk specification as sent on
//! the wire, then the 64-bit NTP timestamp, then the munro's hash.
//!
//! Under Sign All (§6.1.1) every chunk is signed on its own, and the signature covers the
//! chunk itself in place of a hash: a [`SignedMunro`] of one chunk then stands for that
//! chunk's signature, its hash kept only to tell copies apart.
//!
//! (libswift signs only the hash and stamps it with its microsecond clock, digest §2.4, so
//! its live signatures do not verify here, nor ours there.)

use super::key::{LivePublicKey, LiveSigningKey};
use crate::Bin;
use crate::codec::{ChunkAddressing, ChunkSpec, EncodeError};
use crate::merkle::{Hash, HashAlgorithm};

/// A munro and the source's signature over it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedMunro {
    /// The subtree the munro is the root of.
    pub bin: Bin,
    /// When it was signed: a 64-bit NTP timestamp.
    pub timestamp: u64,
    /// The munro's hash.
    pub hash: Hash,
    /// The signature ([`LiveAlgorithm::signature_len`](super::LiveAlgorithm::signature_len)
    /// bytes).
    pub signature: Vec<u8>,
}

/// How chunk specifications are written on the wire (handshake option 6 and the chunk
/// size), which the signed bytes depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecFormat {
    /// The chunk addressing method.
    pub addressing: ChunkAddressing,
    /// The chunk size (for byte ranges).
    pub chunk_size: u32,
}

/// The bytes a munro's signature covers.
pub fn signed_bytes(
    bin: Bin,
    timestamp: u64,
    hash: &Hash,
    format: SpecFormat,
) -> Result<Vec<u8>, EncodeError> {
    signed_over(bin, timestamp, hash.as_bytes(), format)
}

/// The bytes a Sign All signature of a chunk covers: its spec, the timestamp, the chunk.
pub fn signed_chunk_bytes(
    chunk: Bin,
    timestamp: u64,
    data: &[u8],
    format: SpecFormat,
) -> Result<Vec<u8>, EncodeError> {
    signed_over(chunk, timestamp, data, format)
}

fn signed_over(
    bin: Bin,
    timestamp: u64,
    tail: &[u8],
    format: SpecFormat,
) -> Result<Vec<u8>, EncodeError> {
    let spec = ChunkSpec::from_bin(bin, format.addressing, format.chunk_size)?;
    spec.check(format.addressing)?;
    let mut out = Vec::with_capacity(16 + 8 + tail.len());
    spec.write(&mut out);
    out.extend_from_slice(&timestamp.to_be_bytes());
    out.extend_from_slice(tail);
    Ok(out)
}

impl SignedMunro {
    /// `bin`'s munro with hash `hash`, signed at `timestamp` with `key`.
    pub fn sign(
        key: &LiveSigningKey,
        bin: Bin,
        timestamp: u64,
        hash: Hash,
        format: SpecFormat,
    ) -> Result<SignedMunro, EncodeError> {
        let signature = key.sign(&signed_bytes(bin, timestamp, &hash, format)?);
        Ok(SignedMunro {
            bin,
            timestamp,
            hash,
            signature,
        })
    }

    /// Whether the signature is `key`'s over this munro.
    pub fn verify(&self, key: &LivePublicKey, format: SpecFormat) -> bool {
        signed_bytes(self.bin, self.timestamp, &self.hash, format)
            .is_ok_and(|bytes| key.verify(&bytes, &self.signature))
    }

    /// Sign All: `chunk` (a one-chunk bin) holding `data`, signed at `timestamp`.
    pub fn sign_chunk(
        key: &LiveSigningKey,
        chunk: Bin,
        timestamp: u64,
        data: &[u8],
        alg: HashAlgorithm,
        format: SpecFormat,
    ) -> Result<SignedMunro, EncodeError> {
        let signature = key.sign(&signed_chunk_bytes(chunk, timestamp, data, format)?);
        Ok(SignedMunro {
            bin: chunk,
            timestamp,
            hash: alg.digest(data),
            signature,
        })
    }

    /// Sign All: whether `signature` is `key`'s over `chunk` holding `data` at
    /// `timestamp`; if so, the chunk's signature as kept for relaying it.
    pub fn verified_chunk(
        key: &LivePublicKey,
        chunk: Bin,
        timestamp: u64,
        data: &[u8],
        signature: &[u8],
        alg: HashAlgorithm,
        format: SpecFormat,
    ) -> Option<SignedMunro> {
        let bytes = signed_chunk_bytes(chunk, timestamp, data, format).ok()?;
        key.verify(&bytes, signature).then(|| SignedMunro {
            bin: chunk,
            timestamp,
            hash: alg.digest(data),
            signature: signature.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::LiveAlgorithm;
    use crate::merkle::HashAlgorithm;

    const FORMAT: SpecFormat = SpecFormat {
        addressing: ChunkAddressing::Chunk32,
        chunk_size: 1024,
    };

    #[test]
    fn a_signed_munro_verifies_and_any_change_does_not() {
        for alg in [LiveAlgorithm::EcdsaP256Sha256, LiveAlgorithm::Ed25519] {
            let key = LiveSigningKey::from_secret(alg, &[9; 32]).unwrap();
            let bin = Bin::new(5, 3).unwrap();
            let hash = HashAlgorithm::Sha256.digest(b"subtree");
            let m = SignedMunro::sign(&key, bin, 0xdead_beef_0000_0001, hash, FORMAT).unwrap();
            assert!(m.verify(key.public_key(), FORMAT));
            let changed = [
                SignedMunro {
                    bin: Bin::new(5, 4).unwrap(),
                    ..m.clone()
                },
                SignedMunro {
                    timestamp: m.timestamp + 1,
                    ..m.clone()
                },
                SignedMunro {
                    hash: HashAlgorithm::Sha256.digest(b"other"),
                    ..m.clone()
                },
            ];
            for c in changed {
                assert!(!c.verify(key.public_key(), FORMAT), "{c:?}");
            }
            // Written as 64-bit chunk ranges, the signed bytes differ.
            let wide = SpecFormat {
                addressing: ChunkAddressing::Chunk64,
                ..FORMAT
            };
            assert!(!m.verify(key.public_key(), wide));
        }
    }

    #[test]
    fn a_signed_chunk_verifies_only_with_its_own_bytes_place_and_time() {
        let key = LiveSigningKey::from_secret(LiveAlgorithm::Ed25519, &[3; 32]).unwrap();
        let chunk = Bin::chunk(40).unwrap();
        let alg = HashAlgorithm::Sha256;
        let m = SignedMunro::sign_chunk(&key, chunk, 9, b"frame", alg, FORMAT).unwrap();
        let check = |bin, ts, data: &[u8]| {
            SignedMunro::verified_chunk(key.public_key(), bin, ts, data, &m.signature, alg, FORMAT)
        };
        assert_eq!(check(chunk, 9, b"frame"), Some(m.clone()));
        assert_eq!(check(chunk, 9, b"frame!"), None);
        assert_eq!(check(Bin::chunk(41).unwrap(), 9, b"frame"), None);
        assert_eq!(check(chunk, 10, b"frame"), None);
        let bytes = signed_chunk_bytes(chunk, 9, b"frame", FORMAT).unwrap();
        assert_eq!(
            bytes,
            [
                &[0, 0, 0, 40, 0, 0, 0, 40][..],
                &9u64.to_be_bytes(),
                b"frame"
            ]
            .concat()
        );
    }

    #[test]
    fn the_signed_bytes_are_the_spec_the_timestamp_and_the_hash() {
        let hash = HashAlgorithm::Sha1.digest(b"x");
        let bytes = signed_bytes(Bin::new(5, 3).unwrap(), 7, &hash, FORMAT).unwrap();
        // Chunks 96..=127 as two u32s, then the timestamp, then the hash.
        let mut expected = vec![0, 0, 0, 96, 0, 0, 0, 127, 0, 0, 0, 0, 0, 0, 0, 7];
        expected.extend_from_slice(hash.as_bytes());
        assert_eq!(bytes, expected);
    }
}
