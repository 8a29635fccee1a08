//! A live source's key (RFC 7574 §6.1, §12.1): the swarm ID of a live stream is the
//! source's public key in DNSKEY form, a DNSSEC algorithm number followed by the key, and
//! every signed munro is checked against it.
//!
//! Algorithms, by DNSSEC number: ECDSAP256SHA256 (13, the RFC's default; RFC 6605: the key
//! is the point's X ‖ Y, 64 bytes; a signature is r ‖ s, 64 bytes) and Ed25519 (15;
//! RFC 8080: a 32-byte key, a 64-byte signature), which RFC 7574's list does not name. The
//! RFC's other mandatory algorithms, RSASHA1 (5), RSASHA256 (8) and ECDSAP384SHA384 (14),
//! are not implemented: a swarm ID naming them is refused as an unknown algorithm.

use core::fmt;
use p256::ecdsa::signature::{Signer as _, Verifier as _};

/// A live signature algorithm, by its DNSSEC number (handshake option 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LiveAlgorithm {
    /// ECDSA on P-256 with SHA-256 (13), the RFC's default.
    EcdsaP256Sha256,
    /// Ed25519 (15).
    Ed25519,
}

impl LiveAlgorithm {
    /// The DNSSEC algorithm number.
    pub const fn dnssec_number(self) -> u8 {
        match self {
            LiveAlgorithm::EcdsaP256Sha256 => 13,
            LiveAlgorithm::Ed25519 => 15,
        }
    }

    /// The algorithm with DNSSEC number `n`, if this implementation has it.
    pub const fn from_dnssec_number(n: u8) -> Option<LiveAlgorithm> {
        match n {
            13 => Some(LiveAlgorithm::EcdsaP256Sha256),
            15 => Some(LiveAlgorithm::Ed25519),
            _ => None,
        }
    }

    /// Bytes of a public key in DNSKEY form (without the algorithm byte).
    pub const fn public_key_len(self) -> usize {
        match self {
            LiveAlgorithm::EcdsaP256Sha256 => 64,
            LiveAlgorithm::Ed25519 => 32,
        }
    }

    /// Bytes of a signature.
    pub const fn signature_len(self) -> usize {
        64
    }

    /// Bytes of a secret key.
    pub const fn secret_key_len(self) -> usize {
        32
    }

    /// Lower-case name, as on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            LiveAlgorithm::EcdsaP256Sha256 => "ecdsa-p256",
            LiveAlgorithm::Ed25519 => "ed25519",
        }
    }
}

impl fmt::Display for LiveAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a key could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// The swarm ID is empty.
    Empty,
    /// A DNSSEC algorithm this implementation does not have.
    UnknownAlgorithm(u8),
    /// The key has the wrong length for its algorithm.
    WrongLength {
        /// The algorithm.
        algorithm: LiveAlgorithm,
        /// The length it needs.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// The bytes are not a key of the algorithm (not a curve point, a zero scalar…).
    Invalid(LiveAlgorithm),
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::Empty => f.write_str("the live swarm ID is empty"),
            KeyError::UnknownAlgorithm(n) => {
                write!(f, "DNSSEC algorithm {n} is not supported (13 and 15 are)")
            }
            KeyError::WrongLength {
                algorithm,
                expected,
                got,
            } => write!(f, "a {algorithm} key is {expected} bytes, not {got}"),
            KeyError::Invalid(alg) => write!(f, "not a valid {alg} key"),
        }
    }
}

impl core::error::Error for KeyError {}

#[derive(Clone, Debug)]
enum Verifying {
    Ecdsa(p256::ecdsa::VerifyingKey),
    Ed25519(ed25519_dalek::VerifyingKey),
}

/// A live source's public key: what a live swarm's ID names.
#[derive(Clone, Debug)]
pub struct LivePublicKey {
    key: Verifying,
    /// The DNSKEY form: algorithm number, then the key.
    swarm_id: Vec<u8>,
}

impl PartialEq for LivePublicKey {
    fn eq(&self, other: &Self) -> bool {
        self.swarm_id == other.swarm_id
    }
}

impl Eq for LivePublicKey {}

impl LivePublicKey {
    /// The key a live swarm ID names (handshake option 2 of a live swarm).
    pub fn from_swarm_id(id: &[u8]) -> Result<LivePublicKey, KeyError> {
        let (&n, key) = id.split_first().ok_or(KeyError::Empty)?;
        let alg = LiveAlgorithm::from_dnssec_number(n).ok_or(KeyError::UnknownAlgorithm(n))?;
        if key.len() != alg.public_key_len() {
            return Err(KeyError::WrongLength {
                algorithm: alg,
                expected: alg.public_key_len(),
                got: key.len(),
            });
        }
        let verifying = match alg {
            LiveAlgorithm::EcdsaP256Sha256 => {
                let mut sec1 = [0u8; 65];
                sec1[0] = 0x04;
                sec1[1..].copy_from_slice(key);
                let vk = p256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1)
                    .map_err(|_| KeyError::Invalid(alg))?;
                Verifying::Ecdsa(vk)
            }
            LiveAlgorithm::Ed25519 => {
                let bytes: [u8; 32] = key.try_into().map_err(|_| KeyError::Invalid(alg))?;
                let vk = ed25519_dalek::VerifyingKey::from_bytes(&bytes)
                    .map_err(|_| KeyError::Invalid(alg))?;
                Verifying::Ed25519(vk)
            }
        };
        Ok(LivePublicKey {
            key: verifying,
            swarm_id: id.to_vec(),
        })
    }

    /// The algorithm.
    pub fn algorithm(&self) -> LiveAlgorithm {
        match self.key {
            Verifying::Ecdsa(_) => LiveAlgorithm::EcdsaP256Sha256,
            Verifying::Ed25519(_) => LiveAlgorithm::Ed25519,
        }
    }

    /// The swarm ID: the DNSKEY form (algorithm number, then the key).
    pub fn swarm_id(&self) -> &[u8] {
        &self.swarm_id
    }

    /// The room a live swarm's peers meet in on a signaling server: the SHA-256 of the
    /// swarm ID in hex, as long as a file's SHA-256 root (a DNSKEY is longer than rooms
    /// may be).
    pub fn signaling_room(&self) -> String {
        crate::merkle::HashAlgorithm::Sha256
            .digest(&self.swarm_id)
            .to_hex()
    }

    /// Whether `signature` is this key's over `message`.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        match &self.key {
            Verifying::Ecdsa(vk) => p256::ecdsa::Signature::from_slice(signature)
                .is_ok_and(|sig| vk.verify(message, &sig).is_ok()),
            // Strict: refuses weak (small-order) keys, under which anyone could sign.
            Verifying::Ed25519(vk) => <[u8; 64]>::try_from(signature).is_ok_and(|bytes| {
                let sig = ed25519_dalek::Signature::from_bytes(&bytes);
                vk.verify_strict(message, &sig).is_ok()
            }),
        }
    }
}

enum Signing {
    Ecdsa(p256::ecdsa::SigningKey),
    Ed25519(ed25519_dalek::SigningKey),
}

/// A live source's signing key. Signing is deterministic (RFC 6979 for ECDSA; Ed25519 is
/// by design): no randomness is needed here, only to make a secret.
pub struct LiveSigningKey {
    key: Signing,
    public: LivePublicKey,
}

impl fmt::Debug for LiveSigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the secret.
        f.debug_struct("LiveSigningKey")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

impl LiveSigningKey {
    /// The key whose secret is `secret` ([`LiveAlgorithm::secret_key_len`] random bytes,
    /// e.g. from the OS; for ECDSA a scalar below the curve order, which random bytes are
    /// but for a chance of about 2^-32).
    pub fn from_secret(alg: LiveAlgorithm, secret: &[u8]) -> Result<LiveSigningKey, KeyError> {
        let wrong = || KeyError::WrongLength {
            algorithm: alg,
            expected: alg.secret_key_len(),
            got: secret.len(),
        };
        let (key, public) = match alg {
            LiveAlgorithm::EcdsaP256Sha256 => {
                let sk = p256::ecdsa::SigningKey::from_slice(secret).map_err(|_| {
                    if secret.len() == alg.secret_key_len() {
                        KeyError::Invalid(alg)
                    } else {
                        wrong()
                    }
                })?;
                let point = sk.verifying_key().to_sec1_point(false);
                let mut id = vec![alg.dnssec_number()];
                id.extend_from_slice(point.as_bytes().get(1..).unwrap_or_default());
                (Signing::Ecdsa(sk), id)
            }
            LiveAlgorithm::Ed25519 => {
                let bytes: [u8; 32] = secret.try_into().map_err(|_| wrong())?;
                let sk = ed25519_dalek::SigningKey::from_bytes(&bytes);
                let mut id = vec![alg.dnssec_number()];
                id.extend_from_slice(sk.verifying_key().as_bytes());
                (Signing::Ed25519(sk), id)
            }
        };
        Ok(LiveSigningKey {
            key,
            public: LivePublicKey::from_swarm_id(&public)?,
        })
    }

    /// The public key (and so the swarm ID).
    pub fn public_key(&self) -> &LivePublicKey {
        &self.public
    }

    /// A key of the same algorithm made from this one's secret and `label`, the same
    /// every time: one stream key gives each rendition of a live presentation its own
    /// swarm (a live swarm's ID is its key) without more key files to keep.
    pub fn derive(&self, label: &str) -> LiveSigningKey {
        use sha2::Digest as _;
        let secret = match &self.key {
            Signing::Ecdsa(sk) => sk.to_bytes().to_vec(),
            Signing::Ed25519(sk) => sk.to_bytes().to_vec(),
        };
        let alg = self.public.algorithm();
        // A P-256 scalar must be below the curve order: about one digest in 2^32 is not,
        // and the next counter is tried.
        let mut counter = 0u32;
        loop {
            let mut h = sha2::Sha256::new();
            h.update(b"ppspp derived live key\0");
            h.update(&secret);
            h.update((label.len() as u64).to_be_bytes());
            h.update(label.as_bytes());
            h.update(counter.to_be_bytes());
            if let Ok(key) = LiveSigningKey::from_secret(alg, &h.finalize()) {
                return key;
            }
            counter += 1;
        }
    }

    /// The signature over `message` ([`LiveAlgorithm::signature_len`] bytes).
    pub fn sign(&self, message: &[u8]) -> Vec<u8> {
        match &self.key {
            Signing::Ecdsa(sk) => {
                let sig: p256::ecdsa::Signature = sk.sign(message);
                sig.to_bytes().to_vec()
            }
            Signing::Ed25519(sk) => {
                use ed25519_dalek::Signer as _;
                sk.sign(message).to_bytes().to_vec()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(seed: u8) -> [u8; 32] {
        core::array::from_fn(|i| seed.wrapping_mul(31).wrapping_add(i as u8) | 1)
    }

    #[test]
    fn derived_keys_are_the_same_every_time_and_differ_by_label_and_parent() {
        for alg in [LiveAlgorithm::EcdsaP256Sha256, LiveAlgorithm::Ed25519] {
            let key = LiveSigningKey::from_secret(alg, &secret(7)).unwrap();
            let other = LiveSigningKey::from_secret(alg, &secret(8)).unwrap();
            let a = key.derive("v0.m3u8");
            assert_eq!(a.public_key(), key.derive("v0.m3u8").public_key());
            assert_eq!(a.public_key().algorithm(), alg);
            assert_ne!(a.public_key(), key.derive("v1.m3u8").public_key());
            assert_ne!(a.public_key(), other.derive("v0.m3u8").public_key());
            assert_ne!(a.public_key(), key.public_key());
            assert!(a.public_key().verify(b"m", &a.sign(b"m")));
        }
    }

    #[test]
    fn keys_sign_and_verify_and_round_trip_through_the_swarm_id() {
        for alg in [LiveAlgorithm::EcdsaP256Sha256, LiveAlgorithm::Ed25519] {
            let key = LiveSigningKey::from_secret(alg, &secret(7)).unwrap();
            let id = key.public_key().swarm_id().to_vec();
            assert_eq!(id.len(), 1 + alg.public_key_len());
            assert_eq!(id[0], alg.dnssec_number());
            let public = LivePublicKey::from_swarm_id(&id).unwrap();
            assert_eq!(&public, key.public_key());
            let sig = key.sign(b"munro");
            assert_eq!(sig.len(), alg.signature_len());
            assert!(public.verify(b"munro", &sig), "{alg}");
            assert!(!public.verify(b"munrO", &sig), "{alg}: another message");
            let mut bad = sig.clone();
            bad[10] ^= 1;
            assert!(!public.verify(b"munro", &bad), "{alg}: a changed signature");
            assert!(
                !public.verify(b"munro", &sig[..63]),
                "{alg}: a short signature"
            );
            let other = LiveSigningKey::from_secret(alg, &secret(8)).unwrap();
            assert!(
                !other.public_key().verify(b"munro", &sig),
                "{alg}: another key"
            );
            // Deterministic: the same signature again.
            assert_eq!(key.sign(b"munro"), sig);
        }
    }

    #[test]
    fn bad_swarm_ids_and_secrets_are_refused() {
        assert_eq!(LivePublicKey::from_swarm_id(&[]), Err(KeyError::Empty));
        assert_eq!(
            LivePublicKey::from_swarm_id(&[5, 1, 2]),
            Err(KeyError::UnknownAlgorithm(5))
        );
        assert!(matches!(
            LivePublicKey::from_swarm_id(&[13; 40]),
            Err(KeyError::WrongLength {
                expected: 64,
                got: 39,
                ..
            })
        ));
        // 64 bytes that are not a point on P-256.
        let mut not_a_point = vec![13u8];
        not_a_point.extend_from_slice(&[0xff; 64]);
        assert_eq!(
            LivePublicKey::from_swarm_id(&not_a_point),
            Err(KeyError::Invalid(LiveAlgorithm::EcdsaP256Sha256))
        );
        assert_eq!(
            LiveSigningKey::from_secret(LiveAlgorithm::EcdsaP256Sha256, &[0; 32]).err(),
            Some(KeyError::Invalid(LiveAlgorithm::EcdsaP256Sha256))
        );
        assert!(matches!(
            LiveSigningKey::from_secret(LiveAlgorithm::Ed25519, &[1; 31]).err(),
            Some(KeyError::WrongLength {
                expected: 32,
                got: 31,
                ..
            })
        ));
    }

    #[test]
    fn no_swarm_id_makes_parsing_panic() {
        for len in 0..70usize {
            for first in [0u8, 13, 15, 255] {
                let mut id = vec![first];
                id.extend((0..len).map(|i| (i * 37) as u8));
                let _ = LivePublicKey::from_swarm_id(&id);
            }
        }
    }
}
