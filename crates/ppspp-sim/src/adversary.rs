//! Poisoning peers: an honest engine whose outgoing datagrams are rewritten on the way
//! out (decoded with the real codec, changed, re-encoded).

use ppspp::codec::{CodecConfig, Message, decode_datagram, encode_datagram};

/// How an adversary rewrites what its engine sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// Flips bytes of every DATA payload.
    CorruptData,
    /// Flips bytes of every INTEGRITY hash.
    CorruptIntegrity,
    /// Announces everything (it is a seeder) but never serves: DATA and INTEGRITY are
    /// removed from every datagram.
    WithholdData,
}

/// Rewrites one datagram; `None` drops it. Datagrams that do not decode pass unchanged.
pub fn mutate(m: Mutation, bytes: &[u8]) -> Option<Vec<u8>> {
    let config = CodecConfig::default();
    let Ok(dg) = decode_datagram(bytes, &config) else {
        return Some(bytes.to_vec());
    };
    let Ok(msgs) = dg.collect_messages() else {
        return Some(bytes.to_vec());
    };
    // Owned, changed copies of the byte fields first; messages borrow them below.
    let copies: Vec<Option<Vec<u8>>> = msgs
        .iter()
        .map(|msg| match (m, msg) {
            (Mutation::CorruptData, Message::Data { payload, .. }) if !payload.is_empty() => {
                let mut p = payload.to_vec();
                let mid = p.len() / 2;
                p[0] ^= 0x5a;
                p[mid] ^= 0xff;
                Some(p)
            }
            (Mutation::CorruptIntegrity, Message::Integrity { hash, .. }) => {
                let mut h = hash.to_vec();
                h[0] ^= 0xff;
                Some(h)
            }
            _ => None,
        })
        .collect();
    let mut out_msgs: Vec<Message<'_>> = Vec::with_capacity(msgs.len());
    for (msg, copy) in msgs.iter().zip(&copies) {
        match (msg, copy) {
            (
                Message::Data {
                    chunks, timestamp, ..
                },
                Some(p),
            ) => out_msgs.push(Message::Data {
                chunks: *chunks,
                timestamp: *timestamp,
                payload: p,
            }),
            (Message::Integrity { chunks, .. }, Some(h)) => out_msgs.push(Message::Integrity {
                chunks: *chunks,
                hash: h,
            }),
            (Message::Data { .. } | Message::Integrity { .. }, None)
                if m == Mutation::WithholdData => {}
            _ => out_msgs.push(msg.clone()),
        }
    }
    if out_msgs.is_empty() && !msgs.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len());
    match encode_datagram(dg.channel, &out_msgs, &config, &mut out) {
        Ok(()) => Some(out),
        Err(_) => Some(bytes.to_vec()),
    }
}
