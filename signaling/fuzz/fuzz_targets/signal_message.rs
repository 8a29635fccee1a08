//! Parses arbitrary text as a client message of the signaling protocol, as the server does
//! with every text frame, and arbitrary text as a server message. Parsing must never panic;
//! every refusal must be one of the fatal parse errors; an accepted `join`, `signal` or
//! `ice` must print back (as the server prints what it relays) into a message that parses
//! the same; and any server message that parses must print into JSON that parses back to it.
//!
//! The messages are `ppspp-signal-protocol`'s; the target compiles the server's
//! `signaling/src/protocol.rs` itself (it depends only on that crate): the same parser the
//! server runs, without building the server's network stack into the fuzz crate.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code, unused_imports)]
#[path = "../../src/protocol.rs"]
mod protocol;

use protocol::{ClientMessage, ServerMessage, parse_client, valid_swarm_id};
use serde_json::Value;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    match parse_client(text) {
        Ok(ClientMessage::Join { v, swarm }) => {
            let _ = valid_swarm_id(&swarm);
            let join = ClientMessage::Join { v, swarm };
            assert_eq!(parse_client(&join.to_json()), Ok(join));
        }
        Ok(ClientMessage::Signal { to, data }) => {
            // What the server relays: the data printed again, under the sender's id.
            let relayed = ServerMessage::Signal {
                from: to.clone(),
                data: data.clone(),
            }
            .to_json();
            let back = ServerMessage::from_json(&relayed).expect("relayed signal");
            assert_eq!(
                back,
                ServerMessage::Signal {
                    from: to.clone(),
                    data: data.clone()
                }
            );
            let signal = ClientMessage::Signal { to, data };
            assert_eq!(parse_client(&signal.to_json()), Ok(signal));
        }
        Ok(ClientMessage::Leave) => {}
        Ok(ClientMessage::Ice) => {
            assert_eq!(
                parse_client(&ClientMessage::Ice.to_json()),
                Ok(ClientMessage::Ice)
            );
        }
        Ok(report @ ClientMessage::Report { .. }) => {
            assert_eq!(parse_client(&report.to_json()), Ok(report));
        }
        Err(e) => {
            assert!(e.code().is_fatal(), "{e:?} is not fatal");
            assert!(!e.message().is_empty());
        }
    }
    if let Ok(m) = ServerMessage::from_json(text) {
        let printed = m.to_json();
        let back = ServerMessage::from_json(&printed).expect("printed message");
        assert_eq!(back, m, "{printed}");
        let _: Value = serde_json::from_str(&printed).expect("JSON");
    }
});
