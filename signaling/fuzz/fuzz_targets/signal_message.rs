//! Parses arbitrary text as a client message of the signaling protocol, as the server does
//! with every text frame, and arbitrary text as a server message. Parsing must never panic;
//! every refusal must be one of the fatal parse errors; an accepted `join` or `signal` must
//! print back (as the server prints what it relays) into a message that parses the same;
//! and any server message that parses must print into JSON that parses back to it.
//!
//! The target compiles `signaling/src/protocol.rs` itself (it depends only on serde and
//! serde_json): the same parser the server runs, without building the server's network
//! stack into the fuzz crate.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code)]
#[path = "../../src/protocol.rs"]
mod protocol;

use protocol::{ClientMessage, ServerMessage, parse_client, valid_swarm_id};
use serde_json::{Value, json};

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    match parse_client(text) {
        Ok(ClientMessage::Join { v, swarm }) => {
            let _ = valid_swarm_id(&swarm);
            let again = json!({"type": "join", "v": v, "swarm": swarm}).to_string();
            assert_eq!(parse_client(&again), Ok(ClientMessage::Join { v, swarm }));
        }
        Ok(ClientMessage::Signal { to, data }) => {
            // What the server relays: the data printed again, under the sender's id.
            let relayed = ServerMessage::Signal {
                from: to.clone(),
                data: data.clone(),
            }
            .to_json();
            let back: ServerMessage = serde_json::from_str(&relayed).expect("relayed signal");
            assert_eq!(
                back,
                ServerMessage::Signal {
                    from: to.clone(),
                    data: data.clone()
                }
            );
            let again = json!({"type": "signal", "to": to, "data": data}).to_string();
            assert_eq!(parse_client(&again), Ok(ClientMessage::Signal { to, data }));
        }
        Ok(ClientMessage::Leave) => {}
        Err(e) => {
            assert!(e.code().is_fatal(), "{e:?} is not fatal");
            assert!(!e.message().is_empty());
        }
    }
    if let Ok(m) = serde_json::from_str::<ServerMessage>(text) {
        let printed = m.to_json();
        let back: ServerMessage = serde_json::from_str(&printed).expect("printed message");
        assert_eq!(back, m, "{printed}");
        let _: Value = serde_json::from_str(&printed).expect("JSON");
    }
});
