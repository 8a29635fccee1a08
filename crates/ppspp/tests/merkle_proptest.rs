//! Property: for random content and chunk sizes, every chunk verifies in any order with
//! pruned uncles, and any single flipped bit of the data or of an uncle is rejected without
//! changing the receiver.

use ppspp::Bin;
use ppspp::merkle::{Hash, HashAlgorithm, MerkleTree, VerifyingTree};
use proptest::prelude::*;

fn content_strategy() -> impl Strategy<Value = (usize, Vec<u8>)> {
    (
        prop::sample::select(vec![16usize, 64, 1024]),
        0usize..40,
        any::<u16>(),
    )
        .prop_flat_map(|(cs, full, tail)| {
            let mut len = full * cs + usize::from(tail) % cs;
            if len == 0 {
                len = 1;
            }
            (Just(cs), prop::collection::vec(any::<u8>(), len))
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn random_content_verifies_and_tampering_fails(
        (cs, content) in content_strategy(),
        sha256 in any::<bool>(),
        unknown_size in any::<bool>(),
        seed in any::<u64>(),
        flips in prop::collection::vec((any::<usize>(), 0u8..8), 40),
    ) {
        let alg = if sha256 { HashAlgorithm::Sha256 } else { HashAlgorithm::Sha1 };
        let tree = MerkleTree::from_content(alg, cs, &content).unwrap();
        let n = tree.chunk_count();
        prop_assert_eq!(n, content.len().div_ceil(cs) as u64);
        let mut rx = if unknown_size {
            let mut rx = VerifyingTree::new_unknown_size(alg, tree.root(), cs).unwrap();
            prop_assert_eq!(rx.add_peaks(&tree.peaks()), Ok(n));
            rx
        } else {
            VerifyingTree::new(alg, tree.root(), cs, content.len() as u64).unwrap()
        };
        // Random order from the seed.
        let mut order: Vec<u64> = (0..n).collect();
        let mut s = seed | 1;
        for i in (1..order.len()).rev() {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            order.swap(i, (s % (i as u64 + 1)) as usize);
        }
        for (step, &c) in order.iter().enumerate() {
            let start = c as usize * cs;
            let data = &content[start..(start + cs).min(content.len())];
            let uncles = tree.uncles(c, |b| rx.is_verified(b));
            let stored = rx.stored_hashes();

            // Flip one bit somewhere in the data or the uncles.
            let (pos, bit) = flips[step % flips.len()];
            let size = alg.size();
            let pos = pos % (data.len() + uncles.len() * size);
            let mut bad_data = data.to_vec();
            let mut bad_uncles = uncles.clone();
            if pos < data.len() {
                bad_data[pos] ^= 1 << bit;
            } else {
                let (i, j) = ((pos - data.len()) / size, (pos - data.len()) % size);
                let mut bytes = bad_uncles[i].1.as_bytes().to_vec();
                bytes[j] ^= 1 << bit;
                bad_uncles[i].1 = Hash::from_slice(&bytes).unwrap();
            }
            prop_assert!(rx.verify_chunk(c, &bad_data, &bad_uncles).is_err());
            prop_assert_eq!(rx.stored_hashes(), stored);
            prop_assert!(!rx.is_verified(Bin::chunk(c).unwrap()) || uncles.is_empty());

            prop_assert_eq!(rx.verify_chunk(c, data, &uncles), Ok(()));
            prop_assert!(rx.is_verified(Bin::chunk(c).unwrap()));
        }
        prop_assert_eq!(rx.content_len(), Some(content.len() as u64));
        for (b, h) in tree.peaks() {
            prop_assert_eq!(rx.verified_hash(b), Some(h));
        }
    }
}

fn arbitrary_bin() -> impl Strategy<Value = Bin> {
    prop_oneof![
        (0u64..64).prop_map(Bin::from_raw),
        any::<u64>().prop_map(Bin::from_raw),
        Just(Bin::ALL),
        Just(Bin::NONE),
    ]
}

fn arbitrary_hash() -> impl Strategy<Value = Hash> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 20).prop_map(|b| Hash::from_slice(&b).unwrap()),
        prop::collection::vec(any::<u8>(), 1..=64).prop_map(|b| Hash::from_slice(&b).unwrap()),
        Just(Hash::zero(HashAlgorithm::Sha1)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Garbage from a peer never panics, is refused, and changes nothing.
    #[test]
    fn garbage_is_refused_without_panicking(
        chunk in prop_oneof![0u64..12, any::<u64>()],
        data in prop::collection::vec(any::<u8>(), 0..40),
        uncles in prop::collection::vec((arbitrary_bin(), arbitrary_hash()), 0..8),
        peaks in prop::collection::vec((arbitrary_bin(), arbitrary_hash()), 0..5),
        unknown_size in any::<bool>(),
    ) {
        let content: Vec<u8> = (0..11 * 16 + 5).map(|i| (i * 31 % 256) as u8).collect();
        let alg = HashAlgorithm::Sha1;
        let tree = MerkleTree::from_content(alg, 16, &content).unwrap();
        let mut rx = if unknown_size {
            VerifyingTree::new_unknown_size(alg, tree.root(), 16).unwrap()
        } else {
            VerifyingTree::new(alg, tree.root(), 16, content.len() as u64).unwrap()
        };
        let before = rx.stored_hashes();
        prop_assert!(rx.add_peaks(&peaks).is_err());
        prop_assert!(rx.verify_chunk(chunk, &data, &uncles).is_err());
        prop_assert_eq!(rx.stored_hashes(), before);
        for (b, _) in &uncles {
            let _ = (rx.is_verified(*b), rx.verified_hash(*b), tree.node(*b));
        }
        let _ = tree.uncles(chunk, |b| rx.is_verified(b));
        // Still works with the real proof afterwards.
        prop_assert_eq!(rx.add_peaks(&tree.peaks()), Ok(12));
        let c = chunk % 12;
        let start = c as usize * 16;
        let real = &content[start..(start + 16).min(content.len())];
        prop_assert_eq!(rx.verify_chunk(c, real, &tree.uncles(c, |b| rx.is_verified(b))), Ok(()));
    }
}
