//! The live source's signing key on disk, so the swarm ID stays the same across restarts.
//!
//! One line: the algorithm's name, a space, the secret in hex (`ed25519 9f0c…`), after
//! comment lines starting with `#`. The file is created readable by its owner only.

use super::error::KeyFileError;
use ppspp::live::{LiveAlgorithm, LiveSigningKey};
use std::io::Write;
use std::path::Path;

fn name(alg: LiveAlgorithm) -> &'static str {
    match alg {
        LiveAlgorithm::EcdsaP256Sha256 => "ecdsa-p256",
        LiveAlgorithm::Ed25519 => "ed25519",
    }
}

/// Parses `ecdsa-p256` or `ed25519`.
pub fn parse_algorithm(s: &str) -> Result<LiveAlgorithm, KeyFileError> {
    match s {
        "ecdsa-p256" | "p256" | "13" => Ok(LiveAlgorithm::EcdsaP256Sha256),
        "ed25519" | "15" => Ok(LiveAlgorithm::Ed25519),
        _ => Err(KeyFileError::UnknownAlgorithm(s.to_string())),
    }
}

/// Reads the key in `path`.
pub fn read(path: &Path) -> Result<LiveSigningKey, KeyFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| KeyFileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .ok_or_else(|| KeyFileError::NoKey(path.to_path_buf()))?;
    let (alg, secret) = line
        .split_once(' ')
        .ok_or_else(|| KeyFileError::NotAKeyLine(path.to_path_buf()))?;
    let alg = parse_algorithm(alg.trim())?;
    let secret = ppspp::hex::decode(secret.trim())
        .ok_or_else(|| KeyFileError::SecretNotHex(path.to_path_buf()))?;
    LiveSigningKey::from_secret(alg, &secret).map_err(|source| KeyFileError::BadSecret {
        path: path.to_path_buf(),
        source,
    })
}

/// A new key from the OS's randomness, written to `path` (which must not exist), readable
/// by its owner only.
pub fn create(path: &Path, alg: LiveAlgorithm) -> Result<LiveSigningKey, KeyFileError> {
    // For P-256 a random 32 bytes is a valid scalar but for a chance of about 2^-32.
    let (key, secret) = loop {
        let mut secret = vec![0u8; alg.secret_key_len()];
        getrandom::fill(&mut secret).map_err(KeyFileError::NoRandomness)?;
        if let Ok(key) = LiveSigningKey::from_secret(alg, &secret) {
            break (key, secret);
        }
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(|source| KeyFileError::Create {
        path: path.to_path_buf(),
        source,
    })?;
    writeln!(
        file,
        "# ppspp live source key: it signs the stream, and its public half is the swarm ID.\n# Keep it secret; keep it to keep the same live URI.\n{} {}",
        name(alg),
        ppspp::hex::encode(&secret)
    )
    .map_err(|source| KeyFileError::Write {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_created_key_reads_back_the_same_and_is_private() {
        let dir = std::env::temp_dir().join(format!("ppspp-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for alg in [LiveAlgorithm::EcdsaP256Sha256, LiveAlgorithm::Ed25519] {
            let path = dir.join(name(alg));
            let _ = std::fs::remove_file(&path);
            let made = create(&path, alg).unwrap();
            let read_back = read(&path).unwrap();
            assert_eq!(made.public_key(), read_back.public_key());
            assert!(create(&path, alg).is_err(), "never overwritten");
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(&path).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o600);
            }
        }
        std::fs::write(dir.join("bad"), "ed25519 zz\n").unwrap();
        assert!(
            read(&dir.join("bad"))
                .unwrap_err()
                .to_string()
                .contains("hexadecimal")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
