//! Bin numbers: every `bins` vector of `tests/vectors/ppspp-vectors.json`, read from the
//! file, and properties against a naive model where a bin is the chunk range it covers.

use crate::common;

use ppspp::Bin;
use proptest::prelude::*;
use serde_json::Value;

fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("expected a number, got {v}"))
}

fn bin(layer: &Value, offset: &Value) -> Bin {
    Bin::new(u(layer) as u32, u(offset)).expect("vector bin in range")
}

#[test]
fn published_bin_vectors() {
    let json = common::load_json("ppspp-vectors.json");
    let bins = &json["bins"];
    let mut checked = 0;
    for v in bins["bin_of_layer_offset"].as_array().unwrap() {
        assert_eq!(bin(&v["layer"], &v["offset"]).raw(), u(&v["bin"]), "{v}");
        checked += 1;
    }
    assert_eq!(
        Bin::new(34, 2345).unwrap().layer() as u64,
        u(&bins["layer_of_bin_34_2345"])
    );
    for v in bins["parent"].as_array().unwrap() {
        assert_eq!(
            bin(&v["bin_layer"], &v["bin_offset"]).parent(),
            bin(&v["parent_layer"], &v["parent_offset"]),
            "{v}"
        );
        checked += 1;
    }
    for v in bins["children"].as_array().unwrap() {
        let (l, r) = bin(&v["layer"], &v["offset"]).children().unwrap();
        assert_eq!(l, bin(&v["left"][0], &v["left"][1]), "{v}");
        assert_eq!(r, bin(&v["right"][0], &v["right"][1]), "{v}");
        checked += 1;
    }
    assert_eq!(
        Bin::new(2, 3).unwrap().base_length(),
        u(&bins["base_length_of_layer2_offset3"])
    );
    for v in bins["peaks"].as_array().unwrap() {
        let want: Vec<u64> = v["bins"].as_array().unwrap().iter().map(u).collect();
        let got: Vec<u64> = Bin::peaks(u(&v["chunks"])).map(Bin::raw).collect();
        assert_eq!(got, want, "{v}");
        checked += 1;
    }
    for v in bins["chunk_range_to_bins"].as_array().unwrap() {
        let want: Vec<u64> = v["bins"].as_array().unwrap().iter().map(u).collect();
        let got: Vec<u64> = Bin::from_chunk_range(u(&v["first"]), u(&v["last"]))
            .map(Bin::raw)
            .collect();
        assert_eq!(got, want, "{v}");
        checked += 1;
    }
    let special = &bins["u32_special"];
    let hex32 = |s: &Value| u32::from_str_radix(s.as_str().unwrap(), 16).unwrap();
    assert_eq!(Bin::ALL.to_u32(), Some(hex32(&special["all"])));
    assert_eq!(Bin::NONE.to_u32(), Some(hex32(&special["none"])));
    assert_eq!(Bin::from_u32(hex32(&special["all"])), Bin::ALL);
    assert_eq!(Bin::from_u32(hex32(&special["none"])), Bin::NONE);
    assert!(
        checked >= 8,
        "the vector file lost entries ({checked} checked)"
    );
}

/// A bin in a 2^20-chunk world, as (layer, offset).
fn any_bin() -> impl Strategy<Value = Bin> {
    (0u32..=20)
        .prop_flat_map(|layer| (Just(layer), 0u64..(1 << (20 - layer))))
        .prop_map(|(l, o)| Bin::new(l, o).unwrap())
}

proptest! {
    #[test]
    fn relations_match_chunk_ranges(b in any_bin(), c in any_bin()) {
        let (first, last) = b.chunk_range().unwrap();
        prop_assert_eq!(first, b.layer_offset() << b.layer());
        prop_assert_eq!(last - first + 1, b.base_length());
        prop_assert_eq!(b.base_left(), Bin::chunk(first).unwrap());
        prop_assert_eq!(b.base_right(), Bin::chunk(last).unwrap());
        // Containment is range inclusion.
        let (cf, cl) = c.chunk_range().unwrap();
        prop_assert_eq!(b.contains(c), first <= cf && cl <= last);
        // The parent is the aligned range of twice the width around it.
        let p = b.parent();
        let (pf, pl) = p.chunk_range().unwrap();
        prop_assert_eq!(pl - pf + 1, 2 * b.base_length());
        prop_assert!(p.contains(b) && pf % (2 * b.base_length()) == 0);
        // Siblings partition the parent; children partition the bin.
        let s = b.sibling();
        prop_assert_eq!(s.parent(), p);
        prop_assert!(s != b && s.layer() == b.layer());
        prop_assert_eq!(b.is_left(), first == pf);
        if let Some((l, r)) = b.children() {
            prop_assert_eq!(l.chunk_range().unwrap(), (first, first + b.base_length() / 2 - 1));
            prop_assert_eq!(r.chunk_range().unwrap(), (first + b.base_length() / 2, last));
        } else {
            prop_assert!(b.is_base());
        }
        // 32-bit form round-trips for every bin that fits.
        if let Some(v) = b.to_u32() {
            prop_assert_eq!(Bin::from_u32(v), b);
        }
    }

    #[test]
    fn chunk_ranges_become_minimal_aligned_bins(first in 0u64..5000, len in 1u64..5000) {
        let last = first + len - 1;
        let bins: Vec<Bin> = Bin::from_chunk_range(first, last).collect();
        let mut next = first;
        for b in &bins {
            let (f, l) = b.chunk_range().unwrap();
            prop_assert_eq!(f, next);
            prop_assert_eq!(f % b.base_length(), 0, "aligned");
            next = l + 1;
        }
        prop_assert_eq!(next, last + 1);
        // Minimal: at most two bins per layer.
        for layer in 0..64 {
            prop_assert!(bins.iter().filter(|b| b.layer() == layer).count() <= 2);
        }
    }

    #[test]
    fn peaks_cover_exactly_the_content(n in 1u64..100_000) {
        let peaks: Vec<Bin> = Bin::peaks(n).collect();
        prop_assert_eq!(peaks.len() as u32, n.count_ones());
        let mut next = 0;
        for p in &peaks {
            prop_assert_eq!(p.base_offset(), next);
            next += p.base_length();
            prop_assert!(Bin::covering(n).unwrap().contains(*p));
        }
        prop_assert_eq!(next, n);
    }
}
