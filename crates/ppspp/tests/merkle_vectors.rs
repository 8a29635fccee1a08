//! Known-answer Merkle roots, peaks and nodes from `tests/vectors/ppspp-vectors.json`.

use crate::common;

use ppspp::Bin;
use ppspp::merkle::{Hash, HashAlgorithm, MerkleTree, VerifyingTree};

/// Chunk size of every vector unless stated ("Chunk size 1024 unless stated").
const CHUNK: usize = 1024;

fn hash(hex: &str) -> Hash {
    Hash::from_slice(&common::unhex(hex)).expect("hash of 1..=64 bytes")
}

fn check_group(key: &str, alg: HashAlgorithm) -> usize {
    let json = common::load_json("ppspp-vectors.json");
    let entries = json[key].as_array().expect("vector group is an array");
    assert!(!entries.is_empty(), "{key} is empty");
    let mut checked = 0;
    for e in entries {
        let spec = e["content"].as_str().expect("content spec");
        let content = common::content(spec);
        assert_eq!(Some(content.len() as u64), e["bytes"].as_u64(), "{spec}");
        let tree = MerkleTree::from_content(alg, CHUNK, &content).unwrap();
        assert_eq!(tree.algorithm(), alg);
        assert_eq!(tree.content_len(), content.len() as u64);
        let root = hash(e["root"].as_str().expect("root"));
        assert_eq!(root.len(), alg.size());
        assert_eq!(tree.root(), root, "{key} root of {spec}");
        assert_eq!(tree.node(tree.root_bin()), Some(root));
        checked += 1;

        if let Some(peaks) = e.get("peaks").and_then(|p| p.as_object()) {
            let mut want: Vec<(Bin, Hash)> = peaks
                .iter()
                .map(|(b, h)| (Bin::from_raw(b.parse().unwrap()), hash(h.as_str().unwrap())))
                .collect();
            want.sort_by_key(|(b, _)| b.base_offset());
            assert_eq!(tree.peaks(), want, "{key} peaks of {spec}");
            // A receiver that knows only the root accepts them and learns the size.
            let mut v = VerifyingTree::new_unknown_size(alg, root, CHUNK).unwrap();
            assert_eq!(v.add_peaks(&want), Ok(tree.chunk_count()));
            checked += 1;
        }
        if let Some(nodes) = e.get("nodes").and_then(|p| p.as_object()) {
            for (b, h) in nodes {
                let bin = Bin::from_raw(b.parse().unwrap());
                assert_eq!(tree.node(bin), Some(hash(h.as_str().unwrap())), "bin {b}");
                checked += 1;
            }
        }
    }
    checked
}

#[test]
fn sha1_vectors() {
    // 8 roots, 2 peak sets, 2 nodes.
    assert_eq!(check_group("merkle_sha1", HashAlgorithm::Sha1), 12);
}

#[test]
fn sha256_vectors() {
    assert_eq!(check_group("merkle_sha256", HashAlgorithm::Sha256), 2);
}

#[test]
fn m74_roots() {
    let content = common::content("file:m74.jpg");
    assert_eq!(content.len(), 26121);
    let t1 = MerkleTree::from_content(HashAlgorithm::Sha1, CHUNK, &content).unwrap();
    assert_eq!(t1.chunk_count(), 26);
    assert_eq!(t1.root_bin(), Bin::from_raw(31));
    assert_eq!(
        t1.root().to_hex(),
        "c89800bfc82ed01ed6e3bfd5408c51274491f7d4"
    );
    let t256 = MerkleTree::from_content(HashAlgorithm::Sha256, CHUNK, &content).unwrap();
    assert_eq!(
        t256.root().to_hex(),
        "12d0e382fc4a5a8bfca5c693355872fa69d30304ea01fb1c973dc8bad95ce177"
    );
}

#[test]
fn zero_rule_pitfall() {
    let json = common::load_json("ppspp-vectors.json");
    let pitfall = json["pitfall"].as_str().unwrap();
    assert!(pitfall.contains("b80de5d138758541c5f05265ad144ab9fa86d1db"));
    let alg = HashAlgorithm::Sha1;
    let zero = Hash::zero(alg);
    assert_eq!(
        alg.digest(&[0; 40]).to_hex(),
        "b80de5d138758541c5f05265ad144ab9fa86d1db"
    );
    assert!(alg.parent(&zero, &zero).is_zero());
    // In the 7-chunk file, bin 14 is padding (zero) and bin 13 = H(bin 12 ‖ 0^20).
    let t = MerkleTree::from_content(alg, CHUNK, &common::content("pattern:i%251:7162")).unwrap();
    let n12 = t.node(Bin::from_raw(12)).unwrap();
    let mut cat = n12.as_bytes().to_vec();
    cat.extend_from_slice(&[0; 20]);
    assert_eq!(t.node(Bin::from_raw(13)), Some(alg.digest(&cat)));
    assert_eq!(t.node(Bin::from_raw(14)), Some(zero));
    // With 5 chunks of 8, bins 10, 12, 14 and 13 are all padding: 13 must be zero, not
    // H(0^40).
    let t = MerkleTree::from_content(alg, 4, &[1u8; 17]).unwrap();
    assert_eq!(t.chunk_count(), 5);
    assert_eq!(t.node(Bin::from_raw(13)), Some(zero));
    let n9 = t.node(Bin::from_raw(9)).unwrap();
    assert_eq!(t.node(Bin::from_raw(11)), Some(alg.parent(&n9, &zero)));
}

#[test]
fn single_chunk_root_is_its_hash() {
    for alg in HashAlgorithm::ALL {
        let t = MerkleTree::from_content(alg, CHUNK, b"Hello world!\n").unwrap();
        assert_eq!(t.root(), alg.digest(b"Hello world!\n"));
        assert_eq!(t.root_bin(), Bin::from_raw(0));
        assert_eq!(t.peaks(), vec![(Bin::from_raw(0), t.root())]);
        assert_eq!(t.uncles(0, |_| false), vec![]);
    }
}
