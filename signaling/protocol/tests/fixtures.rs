//! The shared JSON fixtures (`fixtures/`): one message per file, as the server or a client
//! prints it. Each must parse into the message type of its direction, print back to the
//! same bytes, and not pass for a message of the other direction; together they must cover
//! every message type and every error code (welcomes with and without `iceServers`,
//! `ice-servers` with servers and with an empty list). `web/test/signaling-protocol.test.ts`
//! checks the browser client against the same files.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ppspp_signal_protocol::{ClientMessage, ErrorCode, IceServer, ServerMessage};
use serde_json::Value;

/// `(file stem, text without the final newline, parsed JSON)` of every fixture in `dir`.
fn fixtures(dir: &str) -> Vec<(String, String, Value)> {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(dir);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("fixture");
            let text = text.strip_suffix('\n').unwrap_or(&text).to_owned();
            assert!(!text.contains('\n'), "{}: one line of JSON", p.display());
            let value: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not JSON: {e}", p.display()));
            let stem = p.file_stem().expect("stem").to_string_lossy().into_owned();
            (stem, text, value)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(!out.is_empty(), "no fixtures in {}", dir.display());
    out
}

/// Checks the entries of an `iceServers` list: URLs in each, and a username only with a
/// credential.
fn check_ice_entries(name: &str, servers: &[IceServer]) {
    for server in servers {
        assert!(!server.urls().is_empty(), "{name}: an entry without URLs");
        assert_eq!(
            server.username.is_some(),
            server.credential.is_some(),
            "{name}: a username goes with a credential"
        );
    }
}

/// The fixture's `type`, which its file name must start with.
fn kind_of<'a>(name: &str, value: &'a Value) -> &'a str {
    let kind = value["type"].as_str().expect("a string type");
    assert!(
        name == kind || name.starts_with(&format!("{kind}-")),
        "{name}.json holds a {kind:?} message"
    );
    kind
}

#[test]
fn client_to_server_fixtures_round_trip() {
    let mut kinds = BTreeSet::new();
    for (name, text, value) in fixtures("client-to-server") {
        let kind = kind_of(&name, &value);
        let msg = ClientMessage::from_json(&text)
            .unwrap_or_else(|e| panic!("{name}: not a client message: {e}"));
        assert_eq!(msg.kind(), kind, "{name}");
        assert_eq!(serde_json::to_value(&msg).unwrap(), value, "{name}");
        assert_eq!(msg.to_json(), text, "{name}: printed differently");
        assert!(
            ServerMessage::from_json(&text).is_err(),
            "{name}: passes for a server message"
        );
        kinds.insert(kind.to_owned());
    }
    let all: BTreeSet<_> = ClientMessage::TYPES.iter().map(|t| t.to_string()).collect();
    assert_eq!(kinds, all, "every client message type has a fixture");
}

#[test]
fn server_to_client_fixtures_round_trip() {
    let mut kinds = BTreeSet::new();
    let mut codes = Vec::new();
    // Welcomes with and without `iceServers` (old servers, or none configured).
    let (mut welcome_plain, mut welcome_ice) = (false, false);
    // Replies to `ice` with servers and with none (`[]`, never left out).
    let (mut ice_none, mut ice_some) = (false, false);
    for (name, text, value) in fixtures("server-to-client") {
        let kind = kind_of(&name, &value);
        let msg = ServerMessage::from_json(&text)
            .unwrap_or_else(|e| panic!("{name}: not a server message: {e}"));
        assert_eq!(msg.kind(), kind, "{name}");
        assert_eq!(serde_json::to_value(&msg).unwrap(), value, "{name}");
        assert_eq!(msg.to_json(), text, "{name}: printed differently");
        assert!(
            ClientMessage::from_json(&text).is_err(),
            "{name}: passes for a client message"
        );
        if let ServerMessage::Error {
            code,
            fatal,
            to,
            supported,
            ..
        } = &msg
        {
            // `error-<code>.json`: a code this version defines, flagged as the table says.
            assert_eq!(name, format!("error-{code}"));
            assert!(!matches!(code, ErrorCode::Other(_)), "{name}");
            assert_eq!(*fatal, code.is_fatal(), "{name}");
            let addressed = matches!(code, ErrorCode::UnknownPeer | ErrorCode::PeerBusy);
            assert_eq!(to.is_some(), addressed, "{name}: `to`");
            let versions = *code == ErrorCode::UnsupportedVersion;
            assert_eq!(supported.is_some(), versions, "{name}: `supported`");
            codes.push(code.clone());
        }
        if let ServerMessage::Welcome { ice_servers, .. } = &msg {
            match ice_servers {
                None => welcome_plain = true,
                Some(servers) => {
                    assert!(
                        !servers.is_empty(),
                        "{name}: an empty iceServers is left out"
                    );
                    check_ice_entries(&name, servers);
                    welcome_ice = true;
                }
            }
        }
        if let ServerMessage::IceServers { ice_servers } = &msg {
            assert!(
                value["iceServers"].is_array(),
                "{name}: iceServers is a list"
            );
            check_ice_entries(&name, ice_servers);
            if ice_servers.is_empty() {
                ice_none = true;
            } else {
                ice_some = true;
            }
        }
        kinds.insert(kind.to_owned());
    }
    let all: BTreeSet<_> = ServerMessage::TYPES.iter().map(|t| t.to_string()).collect();
    assert_eq!(kinds, all, "every server message type has a fixture");
    for code in ErrorCode::KNOWN {
        assert!(codes.contains(&code), "no fixture for error code {code}");
    }
    assert!(welcome_plain, "no welcome fixture without iceServers");
    assert!(welcome_ice, "no welcome fixture with iceServers");
    assert!(ice_some, "no ice-servers fixture with servers");
    assert!(ice_none, "no ice-servers fixture with an empty list");
}
