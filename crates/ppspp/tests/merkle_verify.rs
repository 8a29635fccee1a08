//! Receiver-side verification: uncles from the sender's tree, pruning, rejections, peaks.

use crate::common;

use ppspp::Bin;
use ppspp::merkle::{Hash, HashAlgorithm, MerkleError, MerkleTree, VerifyError, VerifyingTree};

const CHUNK: usize = 1024;

fn bin(raw: u64) -> Bin {
    Bin::from_raw(raw)
}

fn chunk_of(content: &[u8], cs: usize, i: u64) -> &[u8] {
    let start = i as usize * cs;
    &content[start..(start + cs).min(content.len())]
}

/// Deterministic shuffle (xorshift), so a failure reproduces.
fn shuffled(n: u64, seed: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).collect();
    let mut s = seed | 1;
    for i in (1..v.len()).rev() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        v.swap(i, (s % (i as u64 + 1)) as usize);
    }
    v
}

/// Verifies every chunk in `order` with pruned uncles; returns the number of hashes sent.
fn download(tree: &MerkleTree, content: &[u8], rx: &mut VerifyingTree, order: &[u64]) -> usize {
    let cs = tree.chunk_size();
    let mut sent = 0;
    for &c in order {
        let uncles = tree.uncles(c, |b| rx.is_verified(b));
        // Descending height, all needed (none already verified).
        assert!(uncles.windows(2).all(|w| w[0].0.layer() > w[1].0.layer()));
        assert!(uncles.iter().all(|(b, _)| !rx.is_verified(*b)));
        sent += uncles.len();
        rx.verify_chunk(c, chunk_of(content, cs, c), &uncles)
            .unwrap_or_else(|e| panic!("chunk {c}: {e}"));
        assert!(rx.is_verified(Bin::chunk(c).unwrap()));
    }
    // Every real node is now verified with the sender's hash.
    for raw in 0..=2 * tree.root_bin().raw() {
        let b = bin(raw);
        if tree.root_bin().contains(b) {
            assert_eq!(rx.verified_hash(b), tree.node(b), "bin {raw}");
        }
    }
    sent
}

fn files() -> Vec<(Vec<u8>, usize)> {
    vec![
        (common::content("file:m74.jpg"), CHUNK),
        (common::content("pattern:i%251:7162"), CHUNK),
        (common::content("pattern:i%251:8192"), CHUNK),
        (common::content("pattern:i%7:100"), 16),
    ]
}

#[test]
fn every_chunk_verifies_in_any_order() {
    for alg in [HashAlgorithm::Sha1, HashAlgorithm::Sha256] {
        for (content, cs) in files() {
            let tree = MerkleTree::from_content(alg, cs, &content).unwrap();
            let n = tree.chunk_count();
            let mut orders = vec![(0..n).collect::<Vec<_>>(), (0..n).rev().collect()];
            orders.extend((1..6).map(|seed| shuffled(n, seed)));
            for order in orders {
                let mut rx =
                    VerifyingTree::new(alg, tree.root(), cs, content.len() as u64).unwrap();
                download(&tree, &content, &mut rx, &order);
                assert_eq!(rx.content_len(), Some(content.len() as u64));
                // Re-verifying a chunk needs nothing and still checks the data.
                assert_eq!(rx.verify_chunk(0, chunk_of(&content, cs, 0), &[]), Ok(()));
                let mut bad = chunk_of(&content, cs, 0).to_vec();
                bad[0] ^= 1;
                assert_eq!(
                    rx.verify_chunk(0, &bad, &[]),
                    Err(VerifyError::Mismatch { bin: bin(0) })
                );
            }
        }
    }
}

#[test]
fn m74_has_26_chunks_and_unpruned_uncles_reach_the_root() {
    let content = common::content("file:m74.jpg");
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, CHUNK, &content).unwrap();
    assert_eq!(tree.chunk_count(), 26);
    for c in 0..26 {
        // A fresh receiver per chunk: the full proof must suffice on its own.
        let mut rx = VerifyingTree::new(HashAlgorithm::Sha1, tree.root(), CHUNK, 26121).unwrap();
        let uncles = tree.uncles(c, |_| false);
        // Root at layer 5; siblings that are all padding are left out.
        assert!(uncles.len() <= 5 && !uncles.is_empty());
        assert!(uncles.iter().all(|(b, _)| b.base_offset() < 26));
        rx.verify_chunk(c, chunk_of(&content, CHUNK, c), &uncles)
            .unwrap();
        // Any order of the uncles is accepted.
        let mut rx2 = VerifyingTree::new(HashAlgorithm::Sha1, tree.root(), CHUNK, 26121).unwrap();
        let reversed: Vec<_> = uncles.iter().rev().copied().collect();
        rx2.verify_chunk(c, chunk_of(&content, CHUNK, c), &reversed)
            .unwrap();
    }
}

#[test]
fn digest_worked_example_width_8() {
    let content: Vec<u8> = (0..8 * 16).map(|i| i as u8).collect();
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, 16, &content).unwrap();
    assert_eq!(tree.root_bin(), bin(7));
    // Cold C4 (bin 8): 10, 13 and 3, sent top first.
    let cold: Vec<Bin> = tree.uncles(4, |_| false).iter().map(|(b, _)| *b).collect();
    assert_eq!(cold, [bin(3), bin(13), bin(10)]);
    let mut rx = VerifyingTree::new(HashAlgorithm::Sha1, tree.root(), 16, 128).unwrap();
    for c in [0, 1] {
        let u = tree.uncles(c, |b| rx.is_verified(b));
        rx.verify_chunk(c, chunk_of(&content, 16, c), &u).unwrap();
    }
    // After C0 and C1, C7 (bin 14) needs only 12 and 9.
    let warm: Vec<Bin> = tree
        .uncles(7, |b| rx.is_verified(b))
        .iter()
        .map(|(b, _)| *b)
        .collect();
    assert_eq!(warm, [bin(9), bin(12)]);
    // C1 needed nothing after C0: its hash came as C0's sibling.
    let mut rx = VerifyingTree::new(HashAlgorithm::Sha1, tree.root(), 16, 128).unwrap();
    let u0 = tree.uncles(0, |b| rx.is_verified(b));
    assert_eq!(
        u0.iter().map(|(b, _)| b.raw()).collect::<Vec<_>>(),
        [11, 5, 2]
    );
    rx.verify_chunk(0, chunk_of(&content, 16, 0), &u0).unwrap();
    assert_eq!(tree.uncles(1, |b| rx.is_verified(b)), vec![]);
    assert_eq!(
        tree.uncles(2, |b| rx.is_verified(b)),
        vec![(bin(6), tree.node(bin(6)).unwrap())]
    );
}

#[test]
fn seven_chunks_need_seven_hashes_with_peaks() {
    let content = common::content("pattern:i%251:7162");
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, CHUNK, &content).unwrap();
    let mut rx = VerifyingTree::new_unknown_size(HashAlgorithm::Sha1, tree.root(), CHUNK).unwrap();
    let peaks = tree.peaks();
    assert_eq!(peaks.len(), 3);
    assert_eq!(rx.add_peaks(&peaks), Ok(7));
    let sent = download(&tree, &content, &mut rx, &(0..7).collect::<Vec<_>>());
    assert_eq!(peaks.len() + sent, 7);
    assert_eq!(rx.content_len(), Some(7162));
}

#[test]
fn rejections_leave_the_tree_unchanged() {
    let content = common::content("file:m74.jpg");
    let alg = HashAlgorithm::Sha1;
    let tree = MerkleTree::from_content(alg, CHUNK, &content).unwrap();
    let mut rx = VerifyingTree::new(alg, tree.root(), CHUNK, 26121).unwrap();
    let u0 = tree.uncles(0, |b| rx.is_verified(b));
    rx.verify_chunk(0, chunk_of(&content, CHUNK, 0), &u0)
        .unwrap();
    let stored = rx.stored_hashes();

    let c = 9u64;
    let data = chunk_of(&content, CHUNK, c);
    let good = tree.uncles(c, |b| rx.is_verified(b));
    assert_eq!(
        good.iter().map(|(b, _)| b.raw()).collect::<Vec<_>>(),
        [27, 21, 16]
    );
    let check_unchanged = |rx: &VerifyingTree| {
        assert_eq!(rx.stored_hashes(), stored);
        for b in [bin(18), bin(16), bin(17), bin(21), bin(19), bin(27)] {
            assert!(!rx.is_verified(b), "{b:?}");
        }
    };

    // One wrong byte of data.
    let mut bad = data.to_vec();
    bad[517] ^= 0x40;
    assert_eq!(
        rx.verify_chunk(c, &bad, &good),
        Err(VerifyError::Mismatch { bin: bin(23) })
    );
    check_unchanged(&rx);
    // A wrong uncle.
    for i in 0..good.len() {
        let mut u = good.clone();
        let mut bytes = u[i].1.as_bytes().to_vec();
        bytes[3] ^= 1;
        u[i].1 = Hash::from_slice(&bytes).unwrap();
        assert_eq!(
            rx.verify_chunk(c, data, &u),
            Err(VerifyError::Mismatch { bin: bin(23) })
        );
        check_unchanged(&rx);
    }
    // Uncles for another chunk's position.
    let other = tree.uncles(12, |b| rx.is_verified(b));
    assert_eq!(
        rx.verify_chunk(c, data, &other),
        Err(VerifyError::HashNotOnPath(other[0].0))
    );
    check_unchanged(&rx);
    // A right hash on the wrong bin (the path node itself, and the root).
    let mut u = good.clone();
    u.push((bin(17), tree.node(bin(17)).unwrap()));
    assert_eq!(
        rx.verify_chunk(c, data, &u),
        Err(VerifyError::HashNotOnPath(bin(17)))
    );
    let mut u = good.clone();
    u.push((bin(31), tree.root()));
    assert_eq!(
        rx.verify_chunk(c, data, &u),
        Err(VerifyError::HashNotOnPath(bin(31)))
    );
    for raw in [u64::MAX, Bin::ALL.raw(), 63, 1 << 40] {
        let u = [(bin(raw), tree.root())];
        assert_eq!(
            rx.verify_chunk(c, data, &u),
            Err(VerifyError::HashNotOnPath(bin(raw)))
        );
    }
    // A missing uncle.
    assert_eq!(
        rx.verify_chunk(c, data, &good[..2]),
        Err(VerifyError::MissingHash(bin(16)))
    );
    assert_eq!(
        rx.verify_chunk(c, data, &[]),
        Err(VerifyError::MissingHash(bin(16)))
    );
    // Two different hashes for one bin.
    let mut u = good.clone();
    u.push((bin(16), tree.node(bin(20)).unwrap()));
    assert_eq!(
        rx.verify_chunk(c, data, &u),
        Err(VerifyError::ConflictingHashes(bin(16)))
    );
    // A hash of the wrong size.
    let mut u = good.clone();
    u[0].1 = HashAlgorithm::Sha256.digest(b"x");
    assert_eq!(
        rx.verify_chunk(c, data, &u),
        Err(VerifyError::WrongHashLength {
            bin: bin(27),
            expected: 20,
            got: 32
        })
    );
    // A hash contradicting an already verified sibling (bin 7, an uncle of chunk 0).
    let bogus = [(bin(7), tree.node(bin(23)).unwrap())];
    assert_eq!(
        rx.verify_chunk(9, data, &bogus),
        Err(VerifyError::Mismatch { bin: bin(7) })
    );
    assert_eq!(
        rx.verify_chunk(
            12,
            chunk_of(&content, CHUNK, 12),
            &[(bin(7), tree.node(bin(23)).unwrap())]
        ),
        Err(VerifyError::Mismatch { bin: bin(7) })
    );
    assert_eq!(
        rx.verify_chunk(
            1,
            chunk_of(&content, CHUNK, 1),
            &[(bin(0), tree.node(bin(4)).unwrap())]
        ),
        Err(VerifyError::Mismatch { bin: bin(0) })
    );
    // Truncated and overlong chunks.
    assert_eq!(
        rx.verify_chunk(c, &data[..1000], &good),
        Err(VerifyError::WrongLength {
            expected: 1024,
            got: 1000
        })
    );
    assert_eq!(
        rx.verify_chunk(25, chunk_of(&content, CHUNK, 24), &[]),
        Err(VerifyError::WrongLength {
            expected: 521,
            got: 1024
        })
    );
    assert_eq!(
        rx.verify_chunk(c, &[], &good),
        Err(VerifyError::WrongLength {
            expected: 1024,
            got: 0
        })
    );
    // Past the end.
    for i in [26, 32, 1 << 62, u64::MAX] {
        assert_eq!(
            rx.verify_chunk(i, data, &good),
            Err(VerifyError::OutOfRange {
                chunk: i,
                chunk_count: 26
            })
        );
    }
    check_unchanged(&rx);

    // The correct proof still works afterwards, and stores path plus uncles.
    assert_eq!(rx.verify_chunk(c, data, &good), Ok(()));
    assert_eq!(rx.stored_hashes(), stored + 6);
    for b in [18, 16, 17, 21, 19, 27] {
        assert_eq!(rx.verified_hash(bin(b)), tree.node(bin(b)));
    }
    // Bin 20 (chunk 10) was never sent nor computed.
    assert!(!rx.is_verified(bin(20)));
}

#[test]
fn peaks_for_unknown_size() {
    let content = common::content("file:m74.jpg");
    let alg = HashAlgorithm::Sha1;
    let tree = MerkleTree::from_content(alg, CHUNK, &content).unwrap();
    let peaks = tree.peaks();
    assert_eq!(
        peaks.iter().map(|(b, _)| b.raw()).collect::<Vec<_>>(),
        [15, 39, 49]
    );
    let mut rx = VerifyingTree::new_unknown_size(alg, tree.root(), CHUNK).unwrap();
    assert_eq!(rx.chunk_count(), None);
    assert_eq!(rx.root_bin(), None);
    assert!(!rx.is_verified(bin(31)));
    assert_eq!(
        rx.verify_chunk(0, chunk_of(&content, CHUNK, 0), &tree.uncles(0, |_| false)),
        Err(VerifyError::SizeUnknown)
    );

    // Tampered, reordered, incomplete or extended peak lists are refused.
    let mut tampered = peaks.clone();
    let mut b = tampered[1].1.as_bytes().to_vec();
    b[19] ^= 0x80;
    tampered[1].1 = Hash::from_slice(&b).unwrap();
    let mut swapped = peaks.clone();
    swapped.swap(0, 2);
    let mut extra = peaks.clone();
    extra.push((bin(52), tree.node(bin(50)).unwrap()));
    let wrong_bins = vec![
        (bin(15), peaks[0].1),
        (bin(35), peaks[1].1),
        (bin(49), peaks[2].1),
    ];
    let short = vec![(bin(15), peaks[0].1), (bin(39), peaks[1].1)];
    let cases: Vec<Vec<(Bin, Hash)>> = vec![
        tampered,
        swapped,
        extra,
        wrong_bins,
        short,
        peaks[..1].to_vec(),
        vec![],
        vec![(Bin::NONE, peaks[0].1)],
        vec![(Bin::ALL, tree.root())],
        vec![(Bin::ALL, tree.root()), (Bin::ALL, tree.root())],
    ];
    for bad in cases {
        assert_eq!(rx.add_peaks(&bad), Err(VerifyError::BadPeaks), "{bad:?}");
        assert_eq!(rx.chunk_count(), None);
        assert_eq!(rx.stored_hashes(), 0);
    }
    let short_hash = vec![(bin(15), HashAlgorithm::Sha256.digest(b"x"))];
    assert!(matches!(
        rx.add_peaks(&short_hash),
        Err(VerifyError::WrongHashLength { .. })
    ));

    assert_eq!(rx.add_peaks(&peaks), Ok(26));
    assert_eq!(rx.chunk_count(), Some(26));
    assert_eq!(rx.root_bin(), Some(bin(31)));
    assert_eq!(rx.content_len(), None);
    for b in [15, 39, 49, 47, 51, 55, 31] {
        assert_eq!(rx.verified_hash(bin(b)), tree.node(bin(b)), "bin {b}");
    }
    assert!(rx.is_verified(bin(53)) && rx.is_verified(bin(59)) && !rx.is_verified(bin(48)));
    // Idempotent; a different count is refused once the size is known.
    assert_eq!(rx.add_peaks(&peaks), Ok(26));
    assert_eq!(rx.add_peaks(&peaks[..2]), Err(VerifyError::BadPeaks));

    // The last chunk must be 1..=chunk_size bytes; verifying it fixes the length.
    let last = chunk_of(&content, CHUNK, 25);
    assert_eq!(last.len(), 521);
    let u = tree.uncles(25, |b| rx.is_verified(b));
    assert_eq!(u, vec![(bin(48), tree.node(bin(48)).unwrap())]);
    let mut long = last.to_vec();
    long.resize(1025, 0);
    assert_eq!(
        rx.verify_chunk(25, &long, &u),
        Err(VerifyError::WrongLength {
            expected: 1024,
            got: 1025
        })
    );
    assert_eq!(
        rx.verify_chunk(25, &last[..520], &u),
        Err(VerifyError::Mismatch { bin: bin(49) })
    );
    assert_eq!(rx.content_len(), None);
    assert_eq!(rx.verify_chunk(25, last, &u), Ok(()));
    assert_eq!(rx.content_len(), Some(26121));

    // Peaks arriving at a receiver that already knows the size: checked, then stored.
    let mut known = VerifyingTree::new(alg, tree.root(), CHUNK, 26121).unwrap();
    assert_eq!(known.add_peaks(&peaks[..2]), Err(VerifyError::BadPeaks));
    assert!(!known.is_verified(bin(15)));
    assert_eq!(known.add_peaks(&peaks), Ok(26));
    assert!(known.is_verified(bin(15)));
    assert_eq!(known.content_len(), Some(26121));
    // A receiver with a wrong size cannot take the real peaks.
    let mut wrong = VerifyingTree::new(alg, tree.root(), CHUNK, 20000).unwrap();
    assert_eq!(wrong.add_peaks(&peaks), Err(VerifyError::BadPeaks));
}

#[test]
fn single_chunk_content() {
    let alg = HashAlgorithm::Sha256;
    let data = b"Hello world!\n";
    let tree = MerkleTree::from_content(alg, CHUNK, data).unwrap();
    let mut rx = VerifyingTree::new_unknown_size(alg, tree.root(), CHUNK).unwrap();
    assert_eq!(rx.add_peaks(&tree.peaks()), Ok(1));
    assert_eq!(
        rx.verify_chunk(0, b"Hello world?\n", &[]),
        Err(VerifyError::Mismatch { bin: bin(0) })
    );
    assert_eq!(rx.verify_chunk(0, data, &[]), Ok(()));
    assert_eq!(rx.content_len(), Some(13));
    let mut rx = VerifyingTree::new(alg, tree.root(), CHUNK, 13).unwrap();
    assert_eq!(rx.verify_chunk(0, data, &[]), Ok(()));
}

#[test]
fn constructor_errors() {
    let alg = HashAlgorithm::Sha1;
    let root = alg.digest(b"x");
    assert_eq!(
        VerifyingTree::new(alg, root, 0, 10).err(),
        Some(MerkleError::ZeroChunkSize)
    );
    assert_eq!(
        VerifyingTree::new(alg, root, 1024, 0).err(),
        Some(MerkleError::EmptyContent)
    );
    assert_eq!(
        VerifyingTree::new(alg, root, 1, u64::MAX).err(),
        Some(MerkleError::TooManyChunks)
    );
    assert_eq!(
        VerifyingTree::new(HashAlgorithm::Sha256, root, 1024, 10).err(),
        Some(MerkleError::WrongHashLength {
            expected: 32,
            got: 20
        })
    );
    // Huge but valid sizes allocate nothing up front.
    let rx = VerifyingTree::new(alg, root, 1, 1 << 63).unwrap();
    assert_eq!(rx.root_bin(), Some(Bin::ALL));
    assert_eq!(rx.stored_hashes(), 1);
}

/// A seeder's tree built from the full tree proves chunks exactly as the full tree does,
/// and a leecher relays each chunk it verified with a proof that verifies elsewhere.
#[test]
fn verifying_trees_serve_the_proofs_they_checked() {
    let content = common::content("file:m74.jpg");
    let tree = MerkleTree::from_content(HashAlgorithm::Sha1, 1024, &content).unwrap();
    let seeder = VerifyingTree::from_tree(&tree);
    for c in 0..tree.chunk_count() {
        assert_eq!(
            seeder.uncles(c, |_| false),
            tree.uncles(c, |_| false),
            "chunk {c}"
        );
        assert!(seeder.is_verified(Bin::chunk(c).unwrap()));
    }
    assert_eq!(seeder.peaks(), Some(tree.peaks()));
    let mut leecher =
        VerifyingTree::new(HashAlgorithm::Sha1, tree.root(), 1024, content.len() as u64).unwrap();
    assert_eq!(
        leecher.uncles(3, |_| false),
        Vec::new(),
        "nothing verified yet"
    );
    for c in [3u64, 20, 25] {
        let span = (c as usize * 1024)..((c as usize + 1) * 1024).min(content.len());
        leecher
            .verify_chunk(c, &content[span.clone()], &seeder.uncles(c, |_| false))
            .unwrap();
        // Relay to a third peer that knows only the root.
        let mut third =
            VerifyingTree::new(HashAlgorithm::Sha1, tree.root(), 1024, content.len() as u64)
                .unwrap();
        third
            .verify_chunk(c, &content[span], &leecher.uncles(c, |_| false))
            .unwrap();
    }
    assert_eq!(
        leecher.uncles(4, |_| false),
        Vec::new(),
        "chunk 4 was never verified"
    );
}

/// The leaf hashes under `sub`, all-zero past the end, as `add_subtree` takes them.
fn leaves_of(tree: &MerkleTree, sub: Bin) -> Vec<Hash> {
    (sub.base_offset()..sub.base_offset() + sub.base_length())
        .map(|c| tree.node(Bin::chunk(c).unwrap()).unwrap())
        .collect()
}

#[test]
fn a_subtree_of_leaf_hashes_verifies_its_chunks_and_rejections_change_nothing() {
    // 12 chunks: peaks 8 + 4.
    let content: Vec<u8> = (0..11 * CHUNK + 300)
        .map(|i| (i * 7 + i / 1000) as u8)
        .collect();
    let tree = MerkleTree::from_content(HashAlgorithm::Sha256, CHUNK, &content).unwrap();
    let fresh = || {
        let mut rx = VerifyingTree::new(
            HashAlgorithm::Sha256,
            tree.root(),
            CHUNK,
            content.len() as u64,
        )
        .unwrap();
        rx.add_peaks(&tree.peaks()).unwrap();
        rx
    };
    // Chunks 4..8 (layer 2, offset 1): its uncle below the peak is chunks 0..4.
    let sub = Bin::new(2, 1).unwrap();
    let uncle = (
        Bin::new(2, 0).unwrap(),
        tree.node(Bin::new(2, 0).unwrap()).unwrap(),
    );
    let leaves = leaves_of(&tree, sub);

    let mut rx = fresh();
    assert_eq!(
        rx.add_subtree(sub, &leaves, &[]),
        Err(VerifyError::MissingHash(Bin::new(2, 0).unwrap()))
    );
    assert_eq!(
        rx.add_subtree(sub, &leaves[..3], &[uncle]),
        Err(VerifyError::WrongLeafCount {
            expected: 4,
            got: 3
        })
    );
    let mut bad = leaves.clone();
    bad[2] = tree.node(Bin::chunk(9).unwrap()).unwrap();
    assert!(matches!(
        rx.add_subtree(sub, &bad, &[uncle]),
        Err(VerifyError::Mismatch { .. })
    ));
    // An uncle from below the subtree is not on its path.
    assert_eq!(
        rx.add_subtree(sub, &leaves, &[uncle, (Bin::chunk(4).unwrap(), leaves[0])]),
        Err(VerifyError::HashNotOnPath(Bin::chunk(4).unwrap()))
    );
    assert_eq!(rx.stored_hashes(), fresh().stored_hashes());

    rx.add_subtree(sub, &leaves, &[uncle]).unwrap();
    for c in 4..8 {
        rx.verify_chunk(c, chunk_of(&content, CHUNK, c), &[])
            .unwrap();
    }
    assert!(
        rx.verify_chunk(0, chunk_of(&content, CHUNK, 0), &[])
            .is_err()
    );

    // The last subtree is partly padding: its padding leaves must be all-zero.
    let last = Bin::new(2, 2).unwrap(); // chunks 8..12, the 4-chunk peak
    let mut rx = fresh();
    let mut tail = leaves_of(&tree, last);
    rx.add_subtree(last, &tail, &[]).unwrap();
    rx.verify_chunk(11, chunk_of(&content, CHUNK, 11), &[])
        .unwrap();
    let past = Bin::new(3, 1).unwrap(); // chunks 8..16: 12..16 are padding
    let mut rx = fresh();
    tail = leaves_of(&tree, past);
    assert!(tail[4..].iter().all(Hash::is_zero));
    rx.add_subtree(past, &tail, &[]).unwrap();
    tail[5] = tail[0];
    assert!(matches!(
        fresh().add_subtree(past, &tail, &[]),
        Err(VerifyError::Mismatch { .. })
    ));
    // Outside the tree, or before the size is known.
    assert!(matches!(
        fresh().add_subtree(Bin::new(5, 0).unwrap(), &[], &[]),
        Err(VerifyError::OutOfRange { .. })
    ));
    let mut unknown =
        VerifyingTree::new_unknown_size(HashAlgorithm::Sha256, tree.root(), CHUNK).unwrap();
    assert_eq!(
        unknown.add_subtree(sub, &leaves, &[uncle]),
        Err(VerifyError::SizeUnknown)
    );
}
