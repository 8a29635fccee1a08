//! Wire codec: published vectors, a real libswift session, round trips in every chunk
//! addressing method, truncation, size limits and random input.

use crate::common;

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
use std::sync::OnceLock;

use common::{load_json, unhex};
use ppspp::Bin;
use ppspp::codec::{
    ChunkAddressing, ChunkSpec, CodecConfig, ContentIntegrity, DecodeError, EncodeError, Handshake,
    HandshakeOptions, LIVE_DISCARD_ALL_32, Message, MessageType, SupportedMessages,
    decode_datagram, decode_message, encode_datagram, encode_message,
};
use proptest::prelude::*;

/// Decodes a whole datagram into its channel and messages.
fn decode_all<'a>(
    bytes: &'a [u8],
    config: &CodecConfig,
) -> Result<(u32, Vec<Message<'a>>), DecodeError> {
    let d = decode_datagram(bytes, config)?;
    Ok((d.channel, d.collect_messages()?))
}

fn encode_all(channel: u32, msgs: &[Message<'_>], config: &CodecConfig) -> Vec<u8> {
    let mut out = Vec::new();
    encode_datagram(channel, msgs, config, &mut out).expect("encodes");
    out
}

fn vector(what_prefix: &str) -> serde_json::Value {
    let v = load_json("ppspp-vectors.json");
    v["messages_hex"]
        .as_array()
        .expect("messages_hex")
        .iter()
        .find(|m| m["what"].as_str().unwrap().starts_with(what_prefix))
        .unwrap_or_else(|| panic!("no vector {what_prefix:?}"))
        .clone()
}

fn chunk32(start: u32, end: u32) -> ChunkSpec {
    ChunkSpec::Chunk32 { start, end }
}

// ---------------------------------------------------------------------------------------
// Published vectors
// ---------------------------------------------------------------------------------------

#[test]
fn m74_handshake_vector() {
    let v = vector("HANDSHAKE from a recorded m74.jpg swarm");
    let bytes = unhex(v["hex"].as_str().unwrap());
    let f = &v["fields"];
    let c = CodecConfig::default();
    let (channel, msgs) = decode_all(&bytes, &c).unwrap();
    assert_eq!(
        u64::from(channel),
        f["destination_channel"].as_u64().unwrap()
    );
    let [Message::Handshake(h)] = msgs.as_slice() else {
        panic!("expected one handshake, got {msgs:?}");
    };
    assert_eq!(h.source_channel, 0xef19_61d4);
    assert_eq!(
        u64::from(h.source_channel),
        f["source_channel"].as_u64().unwrap()
    );
    assert!(!h.is_close());
    let o = &h.options;
    assert_eq!(o.version, Some(1));
    assert_eq!(o.min_version, Some(1));
    assert_eq!(
        o.swarm_id,
        Some(unhex(f["swarm_id"].as_str().unwrap()).as_slice())
    );
    assert_eq!(o.content_integrity, Some(ContentIntegrity::MerkleTree));
    assert_eq!(o.merkle_hash_function, Some(0));
    assert_eq!(o.chunk_addressing, Some(ChunkAddressing::Chunk32));
    assert_eq!(o.live_signature_algorithm, None);
    assert_eq!(o.live_discard_window, None);
    assert_eq!(o.supported_messages, None);
    assert_eq!(o.chunk_size, None);
    assert_eq!(
        *o,
        HandshakeOptions::static_swarm(o.swarm_id.unwrap(), ChunkAddressing::Chunk32)
    );
    assert_eq!(encode_all(channel, &msgs, &c), bytes);
}

#[test]
fn draft_walkthrough_vectors() {
    let c = CodecConfig::default();
    let cases: [(&str, u32, Vec<Message<'static>>); 4] = [
        (
            "responder datagram",
            1,
            vec![
                Message::Handshake(Handshake {
                    source_channel: 8,
                    options: HandshakeOptions {
                        version: Some(1),
                        content_integrity: Some(ContentIntegrity::MerkleTree),
                        merkle_hash_function: Some(0),
                        chunk_addressing: Some(ChunkAddressing::Chunk32),
                        ..Default::default()
                    },
                }),
                Message::Have(chunk32(0, 0)),
            ],
        ),
        (
            "REQUEST chunks 0..0 then PEX_REQ",
            8,
            vec![Message::Request(chunk32(0, 0)), Message::PexReq],
        ),
        (
            "DATA chunks 0..0",
            1,
            vec![Message::Data {
                chunks: chunk32(0, 0),
                timestamp: 0x0004_e941_80b7_db44,
                payload: b"Hello world!\n",
            }],
        ),
        (
            "explicit close",
            8,
            vec![Message::Handshake(Handshake::close())],
        ),
    ];
    for (what, channel, expected) in cases {
        let bytes = unhex(vector(what)["hex"].as_str().unwrap());
        let (ch, msgs) = decode_all(&bytes, &c).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(ch, channel, "{what}");
        assert_eq!(msgs, expected, "{what}");
        assert_eq!(encode_all(channel, &expected, &c), bytes, "{what}");
    }
    let close = unhex(vector("explicit close")["hex"].as_str().unwrap());
    let (_, msgs) = decode_all(&close, &c).unwrap();
    assert!(matches!(&msgs[0], Message::Handshake(h) if h.is_close()));
}

#[test]
fn single_message_vectors() {
    let c = CodecConfig::default();
    let pex = unhex(vector("PEX_RESv4")["hex"].as_str().unwrap());
    let want = Message::PexResV4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 6778));
    assert_eq!(decode_message(&pex, &c), Ok((want.clone(), 7)));
    let mut out = Vec::new();
    encode_message(&want, &c, &mut out).unwrap();
    assert_eq!(out, pex);

    let v = vector("CHOKE / UNCHOKE / PEX_REQ");
    let hexes: Vec<&str> = v["hex"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    for (h, want) in hexes
        .iter()
        .zip([Message::Choke, Message::Unchoke, Message::PexReq])
    {
        let bytes = unhex(h);
        assert_eq!(decode_message(&bytes, &c), Ok((want.clone(), 1)));
        let mut out = Vec::new();
        encode_message(&want, &c, &mut out).unwrap();
        assert_eq!(out, bytes);
    }

    // Digest §6 extra encoding: REQUEST chunk 0 in chunk32.
    let mut out = Vec::new();
    encode_message(&Message::Request(chunk32(0, 0)), &c, &mut out).unwrap();
    assert_eq!(out, unhex("08 00000000 00000000"));
    // Digest §1.5: HAVE of bin 1 in bin32, and of chunks 0..3 in chunk32.
    let bin32 = CodecConfig::with_addressing(ChunkAddressing::Bin32);
    out.clear();
    encode_message(
        &Message::Have(ChunkSpec::Bin32(Bin::from_raw(1))),
        &bin32,
        &mut out,
    )
    .unwrap();
    assert_eq!(out, unhex("03 00000001"));
    out.clear();
    encode_message(&Message::Have(chunk32(0, 3)), &c, &mut out).unwrap();
    assert_eq!(out, unhex("03 00000000 00000003"));
}

/// The option vectors, inside a handshake so they go through the message decoder.
#[test]
fn option_vectors() {
    let c = CodecConfig::default();
    let sm_hex = vector("Supported Messages option")["hex"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut all_but = SupportedMessages::all();
    for t in [
        MessageType::Ack,
        MessageType::PexResV4,
        MessageType::PexReq,
        MessageType::PexResV6,
        MessageType::PexResCert,
    ] {
        all_but.remove(t);
    }
    let cases = [
        (
            sm_hex.as_str(),
            HandshakeOptions {
                supported_messages: Some(all_but),
                ..Default::default()
            },
        ),
        (
            "08 02 D9 F0",
            HandshakeOptions {
                supported_messages: Some(all_but),
                ..Default::default()
            },
        ),
        (
            "09 00000400",
            HandshakeOptions {
                chunk_size: Some(1024),
                ..Default::default()
            },
        ),
        (
            "07 FFFFFFFF",
            HandshakeOptions {
                live_discard_window: Some(LIVE_DISCARD_ALL_32),
                ..Default::default()
            },
        ),
    ];
    for (hex, options) in cases {
        let bytes = unhex(&format!("00 00000001 {hex} FF"));
        let msg = Message::Handshake(Handshake {
            source_channel: 1,
            options,
        });
        assert_eq!(decode_message(&bytes, &c), Ok((msg.clone(), bytes.len())));
        let mut out = Vec::new();
        encode_message(&msg, &c, &mut out).unwrap();
        assert_eq!(out, bytes, "{hex}");
    }
    let sm = all_but;
    assert!(sm.contains(MessageType::Request) && !sm.contains(MessageType::PexReq));
}

// ---------------------------------------------------------------------------------------
// A real libswift session
// ---------------------------------------------------------------------------------------

fn m74_datagrams() -> &'static [(String, Vec<u8>)] {
    static CACHE: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    CACHE.get_or_init(|| {
        let v = load_json("libswift-m74-session.json");
        v["datagrams"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["from"].as_str().unwrap().to_owned(),
                    unhex(d["hex"].as_str().unwrap()),
                )
            })
            .collect()
    })
}

#[test]
fn libswift_session_decodes_and_reencodes_identically() {
    let c = CodecConfig::default();
    let datagrams = m74_datagrams();
    assert_eq!(datagrams.len(), 73);
    let mut seen: BTreeMap<MessageType, usize> = BTreeMap::new();
    let mut keep_alives = 0;
    let mut data_bytes = 0usize;
    let mut first_data_ts = None;
    for (i, (from, bytes)) in datagrams.iter().enumerate() {
        let (channel, msgs) =
            decode_all(bytes, &c).unwrap_or_else(|e| panic!("datagram {i} from {from}: {e}"));
        if msgs.is_empty() {
            keep_alives += 1;
        }
        for m in &msgs {
            *seen.entry(m.message_type()).or_default() += 1;
            match m {
                Message::Data {
                    chunks,
                    timestamp,
                    payload,
                } => {
                    // µs since the Unix epoch, between 2010 and 2100.
                    assert!(
                        (1_262_304_000_000_000..4_102_444_800_000_000).contains(timestamp),
                        "datagram {i}: timestamp {timestamp}"
                    );
                    let ts0 = *first_data_ts.get_or_insert(*timestamp);
                    // The whole session lasts well under a minute.
                    assert!(timestamp.abs_diff(ts0) < 60_000_000);
                    let (first, last) = chunks.chunk_range(1024).unwrap();
                    assert_eq!(first, last, "libswift sends one chunk per DATA");
                    // 26,121 bytes: 25 full chunks and a 521-byte last one.
                    assert_eq!(payload.len(), if first == 25 { 521 } else { 1024 });
                    data_bytes += payload.len();
                }
                Message::Ack { delay_us, .. } => {
                    assert!(delay_us.unsigned_abs() < 10_000_000, "delay {delay_us}");
                }
                Message::Integrity { hash, .. } => assert_eq!(hash.len(), 20),
                Message::Handshake(h) => {
                    if h.is_close() {
                        assert_eq!(h.options, HandshakeOptions::default());
                    } else {
                        assert_eq!(h.options.version, Some(1));
                        assert_eq!(h.options.chunk_addressing, Some(ChunkAddressing::Chunk32));
                    }
                }
                _ => {}
            }
        }
        assert_eq!(&encode_all(channel, &msgs, &c), bytes, "datagram {i}");
    }
    for t in [
        MessageType::Handshake,
        MessageType::Have,
        MessageType::Request,
        MessageType::Integrity,
        MessageType::Data,
        MessageType::Ack,
    ] {
        assert!(
            seen.get(&t).copied().unwrap_or(0) > 0,
            "no {t:?} in {seen:?}"
        );
    }
    assert_eq!(
        seen[&MessageType::Handshake],
        3,
        "two handshakes and a close"
    );
    assert!(keep_alives > 0);
    // Every chunk was sent at least once.
    assert!(data_bytes >= 26_121, "{data_bytes}");
}

#[test]
fn libswift_session_specific_messages() {
    let c = CodecConfig::default();
    let datagrams = m74_datagrams();
    // The seeder's reply: HANDSHAKE then HAVEs of the peaks (bins 15, 39, 49).
    let (_, reply) = decode_all(&datagrams[1].1, &c).unwrap();
    let haves: Vec<Bin> = reply
        .iter()
        .filter_map(|m| match m {
            Message::Have(s) => Some(s.bins(1024).collect::<Vec<_>>()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(
        haves,
        [Bin::from_raw(15), Bin::from_raw(39), Bin::from_raw(49)]
    );
    // The first INTEGRITY is the peak hash of bin 15 (digest §6, computed m74 peaks).
    let (_, first_data) = decode_all(&datagrams[3].1, &c).unwrap();
    assert_eq!(
        first_data[0],
        Message::Integrity {
            chunks: chunk32(0, 15),
            hash: &unhex("6870507a7fe10bfefe32607afab84ebeef89c2c4"),
        }
    );
    assert!(matches!(
        first_data.last(),
        Some(Message::Data { chunks, .. }) if *chunks == chunk32(0, 0)
    ));
    // The leecher's close.
    let (ch, close) = decode_all(&datagrams[72].1, &c).unwrap();
    assert_eq!(ch, 0x9f12_e6ab);
    assert_eq!(close, [Message::Handshake(Handshake::close())]);
}

// ---------------------------------------------------------------------------------------
// Round trips in every addressing method
// ---------------------------------------------------------------------------------------

static POOL: [u8; 256] = {
    let mut p = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        p[i] = (i as u8).wrapping_mul(37).wrapping_add(11);
        i += 1;
    }
    p
};

fn sample_spec(addressing: ChunkAddressing, n: u64) -> ChunkSpec {
    let bin = Bin::new((n % 4) as u32, n).unwrap();
    ChunkSpec::from_bin(bin, addressing, 1024).unwrap()
}

fn one_of_each(addressing: ChunkAddressing, config: &CodecConfig) -> Vec<Message<'static>> {
    let s = |n| sample_spec(addressing, n);
    vec![
        Message::Handshake(Handshake {
            source_channel: 0xdead_beef,
            options: HandshakeOptions {
                version: Some(1),
                min_version: Some(1),
                swarm_id: Some(&POOL[..20]),
                content_integrity: Some(ContentIntegrity::UnifiedMerkleTree),
                merkle_hash_function: Some(0),
                live_signature_algorithm: Some(13),
                chunk_addressing: Some(addressing),
                live_discard_window: Some(if addressing.is_32bit() {
                    LIVE_DISCARD_ALL_32
                } else {
                    u64::MAX
                }),
                supported_messages: Some(SupportedMessages::all()),
                chunk_size: Some(1024),
            },
        }),
        Message::Ack {
            chunks: s(1),
            delay_us: -12_345,
        },
        Message::Have(s(2)),
        Message::Integrity {
            chunks: s(3),
            hash: &POOL[3..3 + config.hash_size],
        },
        Message::PexResV4(SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 6778)),
        Message::PexReq,
        Message::SignedIntegrity {
            chunks: s(4),
            timestamp: 0xE000_0000_8000_0000,
            signature: &POOL[7..7 + config.signature_size],
        },
        Message::Request(s(5)),
        Message::Cancel(s(6)),
        Message::Choke,
        Message::Unchoke,
        Message::PexResV6(SocketAddrV6::new(
            Ipv6Addr::new(0x2001, 0xdb8, 1, 2, 3, 4, 5, 6),
            443,
            0,
            0,
        )),
        Message::PexResCert(&POOL[..100]),
        Message::Handshake(Handshake::close()),
        Message::Data {
            chunks: s(7),
            timestamp: 1_795_329_065_392_730,
            payload: &POOL,
        },
    ]
}

#[test]
fn every_message_type_round_trips_in_every_addressing_method() {
    for addressing in ChunkAddressing::ALL {
        let config = CodecConfig::with_addressing(addressing);
        let msgs = one_of_each(addressing, &config);
        let types: std::collections::BTreeSet<_> = msgs.iter().map(|m| m.message_type()).collect();
        assert_eq!(types.len(), 14, "every type is covered");
        for m in &msgs {
            let mut bytes = Vec::new();
            encode_message(m, &config, &mut bytes).unwrap();
            let (decoded, used) = decode_message(&bytes, &config).unwrap();
            assert_eq!(&decoded, m, "{addressing:?}");
            assert_eq!(used, bytes.len());
            let mut again = Vec::new();
            encode_message(&decoded, &config, &mut again).unwrap();
            assert_eq!(again, bytes);
            if let Some(spec) = m.chunk_spec() {
                assert_eq!(spec.addressing(), addressing);
                if matches!(
                    m,
                    Message::Have(_) | Message::Request(_) | Message::Cancel(_)
                ) {
                    assert_eq!(bytes.len(), 1 + addressing.spec_len());
                }
            }
        }
        // All of them in one datagram.
        let bytes = encode_all(0x0102_0304, &msgs, &config);
        let (ch, decoded) = decode_all(&bytes, &config).unwrap();
        assert_eq!(ch, 0x0102_0304);
        assert_eq!(decoded, msgs);
        assert_eq!(encode_all(ch, &decoded, &config), bytes);
        // Any other addressing method rejects these specs on encoding.
        for other in ChunkAddressing::ALL
            .into_iter()
            .filter(|&o| o != addressing)
        {
            let mut out = Vec::new();
            assert_eq!(
                encode_message(
                    &Message::Have(sample_spec(addressing, 2)),
                    &CodecConfig::with_addressing(other),
                    &mut out
                ),
                Err(EncodeError::AddressingMismatch {
                    expected: other,
                    found: addressing
                })
            );
        }
    }
}

#[test]
fn handshake_with_new_addressing_governs_the_rest_of_the_datagram() {
    // Start in chunk32; the handshake switches to each method in turn.
    let base = CodecConfig::default();
    for addressing in ChunkAddressing::ALL {
        let msgs = [
            Message::Handshake(Handshake {
                source_channel: 77,
                options: HandshakeOptions::static_swarm(&POOL[..20], addressing),
            }),
            Message::Have(sample_spec(addressing, 9)),
            Message::Request(sample_spec(addressing, 10)),
        ];
        let bytes = encode_all(5, &msgs, &base);
        let (_, decoded) = decode_all(&bytes, &base).unwrap();
        assert_eq!(decoded, msgs);
        // Handshake: type, source channel, version, min version, swarm ID (code, u16, 20 B),
        // CIPM, hash function, CAM, end.
        let expected_len =
            4 + (1 + 4 + 2 + 2 + 23 + 2 + 2 + 2 + 1) + 2 * (1 + addressing.spec_len());
        assert_eq!(bytes.len(), expected_len, "{addressing:?}");
    }
}

// ---------------------------------------------------------------------------------------
// Truncation, size limits, garbage
// ---------------------------------------------------------------------------------------

/// The `messages_hex` vectors that are whole datagrams (channel ID first).
const DATAGRAM_VECTORS: [&str; 5] = [
    "HANDSHAKE from a recorded m74.jpg swarm",
    "responder datagram",
    "REQUEST chunks 0..0 then PEX_REQ",
    "DATA chunks 0..0",
    "explicit close",
];

/// Every valid datagram we know: the vectors, the libswift session, and one of each
/// message type per addressing method.
fn corpus() -> Vec<(CodecConfig, Vec<u8>)> {
    let c = CodecConfig::default();
    let mut all: Vec<(CodecConfig, Vec<u8>)> = m74_datagrams()
        .iter()
        .map(|(_, b)| (c, b.clone()))
        .collect();
    for what in DATAGRAM_VECTORS {
        all.push((c, unhex(vector(what)["hex"].as_str().unwrap())));
    }
    for addressing in ChunkAddressing::ALL {
        let config = CodecConfig::with_addressing(addressing);
        all.push((
            config,
            encode_all(9, &one_of_each(addressing, &config), &config),
        ));
    }
    all
}

#[test]
fn corpus_is_complete() {
    // 73 session datagrams + 5 vector datagrams + 5 synthetic ones.
    assert_eq!(corpus().len(), 73 + 5 + 5);
}

#[test]
fn every_prefix_is_valid_exactly_at_message_boundaries() {
    for (config, bytes) in corpus() {
        let d = decode_datagram(&bytes, &config).unwrap();
        // Offsets where a message ends, and where a DATA payload begins.
        let mut boundaries = vec![4usize];
        let mut data_payload_start = None;
        let mut it = d.messages();
        while let Some(m) = it.next() {
            let m = m.unwrap();
            if let Message::Data { payload, .. } = m {
                data_payload_start = Some(bytes.len() - payload.len());
            }
            boundaries.push(it.offset());
        }
        for len in 0..bytes.len() {
            let prefix = &bytes[..len];
            let result = decode_all(prefix, &config);
            let should_be_ok =
                boundaries.contains(&len) || data_payload_start.is_some_and(|s| len >= s);
            assert_eq!(
                result.is_ok(),
                should_be_ok,
                "prefix of {len}/{} bytes: {result:?}",
                bytes.len()
            );
            if len < 4 {
                assert_eq!(result.unwrap_err(), DecodeError::TooShort { len });
            } else if let Err(e) = result {
                assert!(e.offset() <= len, "{e} past the end of {len} bytes");
            }
        }
    }
}

#[test]
fn truncated_single_messages_are_errors() {
    for addressing in ChunkAddressing::ALL {
        let config = CodecConfig::with_addressing(addressing);
        for m in one_of_each(addressing, &config) {
            let mut bytes = Vec::new();
            encode_message(&m, &config, &mut bytes).unwrap();
            let min_ok = match m {
                Message::Data { payload, .. } => bytes.len() - payload.len(),
                _ => bytes.len(),
            };
            for len in 0..min_ok {
                let r = decode_message(&bytes[..len], &config);
                assert!(
                    matches!(
                        r,
                        Err(DecodeError::Truncated { .. } | DecodeError::MissingOptionsEnd { .. })
                    ),
                    "{addressing:?} {:?} cut to {len}: {r:?}",
                    m.message_type()
                );
            }
        }
    }
}

#[test]
fn data_messages_share_a_datagram_by_their_length() {
    let c = CodecConfig::default();
    let cs = c.chunk_size as usize;
    let a = vec![0xA1; cs];
    let b = vec![0xB2; 2 * cs];
    let short = vec![0xC3; 100];
    let msgs = [
        Message::Data {
            chunks: chunk32(0, 0),
            timestamp: 5,
            payload: &a,
        },
        Message::Data {
            chunks: chunk32(1, 2),
            timestamp: 6,
            payload: &b,
        },
        Message::Data {
            chunks: chunk32(3, 3),
            timestamp: 7,
            payload: &short,
        },
    ];
    let bytes = encode_all(9, &msgs, &c);
    let (_, back) = decode_all(&bytes, &c).unwrap();
    assert_eq!(back, msgs);
    // As libswift reads them too: a single-chunk DATA takes one chunk, then the rest
    // is read as messages; one running past its chunks' length is taken whole.
    let (_, lone) = decode_all(&bytes[..4 + 17 + cs + 17 + 10], &c).unwrap();
    assert!(matches!(&lone[1], Message::Data { payload, .. } if payload.len() == 10));
    let mut junk = bytes[..4 + 17 + cs].to_vec();
    junk.push(0x0E);
    assert!(matches!(
        decode_all(&junk, &c),
        Err(DecodeError::UnknownMessageType { code: 14, .. })
    ));
    // A byte range carries its own length.
    let ranged = [
        Message::Data {
            chunks: ChunkSpec::Byte64 { start: 0, end: 9 },
            timestamp: 1,
            payload: &a[..10],
        },
        Message::Data {
            chunks: ChunkSpec::Byte64 { start: 10, end: 99 },
            timestamp: 1,
            payload: &b[..90],
        },
    ];
    let c64 = CodecConfig::with_addressing(ChunkAddressing::Byte64);
    let bytes = encode_all(9, &ranged, &c64);
    assert_eq!(decode_all(&bytes, &c64).unwrap().1, ranged);
    // Specs whose length does not fit 64 bits take the rest (and fail as data later).
    for (addressing, spec) in [
        (
            ChunkAddressing::Chunk64,
            ChunkSpec::Chunk64 {
                start: 0,
                end: u64::MAX,
            },
        ),
        (
            ChunkAddressing::Byte64,
            ChunkSpec::Byte64 {
                start: 0,
                end: u64::MAX,
            },
        ),
        (ChunkAddressing::Bin64, ChunkSpec::Bin64(Bin::ALL)),
    ] {
        let c = CodecConfig::with_addressing(addressing);
        let msg = [Message::Data {
            chunks: spec,
            timestamp: 1,
            payload: &a[..10],
        }];
        let bytes = encode_all(9, &msg, &c);
        assert_eq!(decode_all(&bytes, &c).unwrap().1, msg, "{addressing:?}");
    }
}

#[test]
fn oversized_datagrams_are_rejected() {
    let c = CodecConfig::default();
    let big = vec![0u8; c.max_datagram_len + 1];
    assert_eq!(
        decode_datagram(&big, &c).unwrap_err(),
        DecodeError::Oversized {
            len: 65_537,
            max: 65_536
        }
    );
    // The limit itself is fine when the content is: a DATA of 64 chunks filling it up.
    let mut ok = vec![0, 0, 0, 1, 1];
    ok.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 63]);
    ok.extend_from_slice(&[0; 8]);
    ok.resize(c.max_datagram_len, 0xAA);
    let (_, msgs) = decode_all(&ok, &c).unwrap();
    assert!(matches!(&msgs[..], [Message::Data { payload, .. }] if payload.len() == 65_536 - 21));
    // And the encoder refuses to exceed it.
    let payload = vec![0u8; 65_536];
    let mut out = Vec::new();
    assert!(matches!(
        encode_datagram(
            1,
            &[Message::Data {
                chunks: chunk32(0, 0),
                timestamp: 0,
                payload: &payload
            }],
            &c,
            &mut out
        ),
        Err(EncodeError::Oversized { .. })
    ));
    assert!(out.is_empty());
}

#[test]
fn malformed_datagrams() {
    let c = CodecConfig::default();
    let cases: [(&str, DecodeError); 8] = [
        (
            "00000000 0E",
            DecodeError::UnknownMessageType {
                offset: 4,
                code: 14,
            },
        ),
        (
            "00000000 FF",
            DecodeError::UnknownMessageType {
                offset: 4,
                code: 255,
            },
        ),
        (
            "00000000 00 00000001 01 01 00 01 FF",
            DecodeError::OptionOutOfOrder {
                offset: 11,
                code: 0,
                previous: 1,
            },
        ),
        (
            "00000000 00 00000001 00 01 00 01 FF",
            DecodeError::OptionOutOfOrder {
                offset: 11,
                code: 0,
                previous: 0,
            },
        ),
        (
            "00000000 00 00000001 0A FF",
            DecodeError::UnknownOption {
                offset: 9,
                code: 10,
            },
        ),
        (
            "00000000 00 00000001 00 01",
            DecodeError::MissingOptionsEnd { offset: 11 },
        ),
        (
            "00000000 03 00000005 00000004",
            DecodeError::InvalidChunkSpec {
                offset: 5,
                start: 5,
                end: 4,
            },
        ),
        (
            "00000000 04 00000000 00000000 0102",
            DecodeError::Truncated {
                offset: 13,
                needed: 20,
                available: 2,
                what: "INTEGRITY hash",
            },
        ),
    ];
    for (hex, err) in cases {
        let bytes = unhex(hex);
        assert_eq!(decode_all(&bytes, &c), Err(err.clone()), "{hex}");
        // Display names the offset.
        assert!(err.to_string().contains(&err.offset().to_string()));
    }
    // CAM 5 does not exist.
    assert!(matches!(
        decode_all(&unhex("00000000 00 00000001 06 05 FF"), &c),
        Err(DecodeError::BadOptionValue { code: 6, .. })
    ));
}

// ---------------------------------------------------------------------------------------
// Property tests
// ---------------------------------------------------------------------------------------

fn cam_strategy() -> impl Strategy<Value = ChunkAddressing> {
    prop::sample::select(ChunkAddressing::ALL.to_vec())
}

fn spec_strategy(addressing: ChunkAddressing) -> BoxedStrategy<ChunkSpec> {
    let ordered64 = (any::<u64>(), any::<u64>()).prop_map(|(a, b)| (a.min(b), a.max(b)));
    match addressing {
        ChunkAddressing::Bin32 => any::<u32>()
            .prop_map(|v| ChunkSpec::Bin32(Bin::from_u32(v)))
            .boxed(),
        ChunkAddressing::Bin64 => any::<u64>()
            .prop_map(|v| ChunkSpec::Bin64(Bin::from_raw(v)))
            .boxed(),
        ChunkAddressing::Chunk32 => (any::<u32>(), any::<u32>())
            .prop_map(|(a, b)| chunk32(a.min(b), a.max(b)))
            .boxed(),
        ChunkAddressing::Chunk64 => ordered64
            .prop_map(|(start, end)| ChunkSpec::Chunk64 { start, end })
            .boxed(),
        ChunkAddressing::Byte64 => ordered64
            .prop_map(|(start, end)| ChunkSpec::Byte64 { start, end })
            .boxed(),
    }
}

/// An owned description of a message; hashes and signatures get their length from the
/// codec state in effect when the message is built.
#[derive(Debug, Clone)]
enum Owned {
    Handshake { src: u32, opts: OwnedOptions },
    Ack(ChunkSpec, i64),
    Have(ChunkSpec),
    Integrity(ChunkSpec, u8),
    PexV4(u32, u16),
    PexReq,
    Signed(ChunkSpec, u64, u8),
    Request(ChunkSpec),
    Cancel(ChunkSpec),
    Choke,
    Unchoke,
    PexV6(u128, u16),
    Cert(Vec<u8>),
}

#[derive(Debug, Clone)]
struct OwnedOptions {
    version: Option<u8>,
    min_version: Option<u8>,
    swarm_id: Option<Vec<u8>>,
    cipm: Option<u8>,
    hash_fn: Option<u8>,
    sig_alg: Option<u8>,
    same_cam: bool,
    window: Option<u64>,
    supported: Option<Vec<u8>>,
    chunk_size: Option<u32>,
}

fn options_strategy(addressing: ChunkAddressing) -> impl Strategy<Value = OwnedOptions> {
    let window = if addressing.is_32bit() {
        any::<u32>().prop_map(u64::from).boxed()
    } else {
        any::<u64>().boxed()
    };
    (
        (
            proptest::option::of(any::<u8>()),
            proptest::option::of(any::<u8>()),
            proptest::option::of(prop::collection::vec(any::<u8>(), 0..40)),
            proptest::option::of(0u8..4),
            proptest::option::of(0u8..5),
        ),
        (
            proptest::option::of(any::<u8>()),
            any::<bool>(),
            proptest::option::of(window),
            proptest::option::of(prop::collection::vec(any::<u8>(), 0..4)),
            proptest::option::of(any::<u32>()),
        ),
    )
        .prop_map(
            |(
                (version, min_version, swarm_id, cipm, hash_fn),
                (sig_alg, same_cam, window, supported, chunk_size),
            )| OwnedOptions {
                version,
                min_version,
                swarm_id,
                cipm,
                hash_fn,
                sig_alg,
                same_cam,
                window,
                supported,
                chunk_size,
            },
        )
}

fn owned_strategy(addressing: ChunkAddressing) -> impl Strategy<Value = Owned> {
    let s = move || spec_strategy(addressing);
    prop_oneof![
        (any::<u32>(), options_strategy(addressing))
            .prop_map(|(src, opts)| Owned::Handshake { src, opts }),
        (s(), any::<i64>()).prop_map(|(c, d)| Owned::Ack(c, d)),
        s().prop_map(Owned::Have),
        (s(), 0u8..128).prop_map(|(c, f)| Owned::Integrity(c, f)),
        (any::<u32>(), any::<u16>()).prop_map(|(a, p)| Owned::PexV4(a, p)),
        Just(Owned::PexReq),
        (s(), any::<u64>(), 0u8..128).prop_map(|(c, t, f)| Owned::Signed(c, t, f)),
        s().prop_map(Owned::Request),
        s().prop_map(Owned::Cancel),
        Just(Owned::Choke),
        Just(Owned::Unchoke),
        (any::<u128>(), any::<u16>()).prop_map(|(a, p)| Owned::PexV6(a, p)),
        prop::collection::vec(any::<u8>(), 0..300).prop_map(Owned::Cert),
    ]
}

/// Builds the messages, tracking the codec state as the decoder will.
fn build<'a>(
    owned: &'a [Owned],
    data: Option<&'a OwnedData>,
    addressing: ChunkAddressing,
) -> Vec<Message<'a>> {
    let mut config = CodecConfig::with_addressing(addressing);
    let mut out = Vec::new();
    for o in owned {
        let m = match o {
            Owned::Handshake { src, opts } => Message::Handshake(Handshake {
                source_channel: *src,
                options: HandshakeOptions {
                    version: opts.version,
                    min_version: opts.min_version,
                    swarm_id: opts.swarm_id.as_deref(),
                    content_integrity: opts.cipm.and_then(ContentIntegrity::from_wire_code),
                    merkle_hash_function: opts.hash_fn,
                    live_signature_algorithm: opts.sig_alg,
                    chunk_addressing: opts.same_cam.then_some(addressing),
                    live_discard_window: opts.window,
                    supported_messages: opts
                        .supported
                        .as_deref()
                        .map(|b| SupportedMessages::from_bitmap(b).unwrap()),
                    chunk_size: opts.chunk_size,
                },
            }),
            Owned::Ack(c, d) => Message::Ack {
                chunks: *c,
                delay_us: *d,
            },
            Owned::Have(c) => Message::Have(*c),
            Owned::Integrity(c, f) => Message::Integrity {
                chunks: *c,
                hash: &POOL[usize::from(*f)..usize::from(*f) + config.hash_size],
            },
            Owned::PexV4(a, p) => Message::PexResV4(SocketAddrV4::new(Ipv4Addr::from(*a), *p)),
            Owned::PexReq => Message::PexReq,
            Owned::Signed(c, t, f) => Message::SignedIntegrity {
                chunks: *c,
                timestamp: *t,
                signature: &POOL[usize::from(*f)..usize::from(*f) + config.signature_size],
            },
            Owned::Request(c) => Message::Request(*c),
            Owned::Cancel(c) => Message::Cancel(*c),
            Owned::Choke => Message::Choke,
            Owned::Unchoke => Message::Unchoke,
            Owned::PexV6(a, p) => {
                Message::PexResV6(SocketAddrV6::new(Ipv6Addr::from(*a), *p, 0, 0))
            }
            Owned::Cert(c) => Message::PexResCert(c),
        };
        if let Message::Handshake(h) = &m {
            config.apply_handshake(&h.options);
        }
        out.push(m);
    }
    if let Some((chunks, timestamp, payload)) = data {
        out.push(Message::Data {
            chunks: *chunks,
            timestamp: *timestamp,
            payload,
        });
    }
    out
}

/// A trailing DATA: chunk spec, timestamp, payload.
type OwnedData = (ChunkSpec, u64, Vec<u8>);
/// Addressing method, channel, messages, optional DATA.
type DatagramCase = (ChunkAddressing, u32, Vec<Owned>, Option<OwnedData>);

fn datagram_strategy() -> impl Strategy<Value = DatagramCase> {
    cam_strategy().prop_flat_map(|addressing| {
        (
            Just(addressing),
            any::<u32>(),
            prop::collection::vec(owned_strategy(addressing), 0..8),
            proptest::option::of((
                spec_strategy(addressing),
                any::<u64>(),
                prop::collection::vec(any::<u8>(), 0..64),
            )),
        )
    })
}

/// Bytes that look a bit like messages: mostly small type and option codes.
fn garbage_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![3 => 0u8..16, 1 => Just(0xFFu8), 4 => any::<u8>()],
        0..200,
    )
}

/// Decoding any bytes never panics; whatever decodes re-encodes to something that
/// decodes to the same messages.
fn check_any_bytes(bytes: &[u8]) {
    for addressing in ChunkAddressing::ALL {
        let config = CodecConfig::with_addressing(addressing);
        let Ok(d) = decode_datagram(bytes, &config) else {
            continue;
        };
        let mut ok = Vec::new();
        for m in d.messages() {
            match m {
                Ok(m) => ok.push(m),
                Err(e) => {
                    assert!(e.offset() <= bytes.len());
                    let _ = e.to_string();
                }
            }
        }
        // The messages before any error form a valid datagram of their own.
        let reencoded = encode_all(d.channel, &ok, &config);
        let (ch, again) = decode_all(&reencoded, &config).unwrap();
        assert_eq!(ch, d.channel);
        assert_eq!(again, ok);
        assert!(reencoded.len() <= bytes.len());
    }
}

proptest! {
    #[test]
    fn valid_datagrams_round_trip((addressing, channel, owned, data) in datagram_strategy()) {
        let msgs = build(&owned, data.as_ref(), addressing);
        let config = CodecConfig::with_addressing(addressing);
        let bytes = encode_all(channel, &msgs, &config);
        let (ch, decoded) = decode_all(&bytes, &config).unwrap();
        prop_assert_eq!(ch, channel);
        prop_assert_eq!(&decoded, &msgs);
        prop_assert_eq!(encode_all(ch, &decoded, &config), bytes);
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        check_any_bytes(&bytes);
    }

    #[test]
    fn message_like_garbage_never_panics(body in garbage_strategy()) {
        let mut bytes = vec![0, 0, 0, 1];
        bytes.extend_from_slice(&body);
        check_any_bytes(&bytes);
    }

    #[test]
    fn mutated_session_datagrams_never_panic(
        index in 0usize..73,
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = m74_datagrams()[index].1.clone();
        for (at, byte) in flips {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        let cut = cut.index(bytes.len() + 1);
        check_any_bytes(&bytes[..cut]);
    }
}
