//! The wire protocol: JSON text frames with a `"type"` field. `docs/SIGNALING.md` is the
//! specification; this module is its parser and printer.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version this server speaks. A `join` must carry `"v": 1`.
pub const PROTOCOL_VERSION: u64 = 1;

/// The path the WebSocket endpoint is served on.
pub const WS_PATH: &str = "/ws";

/// Length in hex digits of a server-assigned peer id (16 random bytes).
pub const PEER_ID_HEX_LEN: usize = 32;

/// A message from a client.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientMessage {
    /// Enter the room of swarm `swarm`, speaking protocol version `v`.
    Join { v: u64, swarm: String },
    /// Relay `data` to peer `to` in the same room.
    Signal { to: String, data: Value },
    /// Leave the current room (the connection stays open).
    Leave,
}

/// Why a client frame could not be understood. Each maps to an error code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// Not JSON at all.
    BadJson(String),
    /// JSON, but not an object with a string `type`, or a known type with missing or
    /// mistyped fields.
    BadMessage(String),
    /// A `type` this version does not know.
    UnknownType(String),
}

impl ParseError {
    /// The error code sent to the client.
    pub fn code(&self) -> ErrorCode {
        match self {
            ParseError::BadJson(_) => ErrorCode::BadJson,
            ParseError::BadMessage(_) => ErrorCode::BadMessage,
            ParseError::UnknownType(_) => ErrorCode::UnknownType,
        }
    }

    /// A human-readable explanation.
    pub fn message(&self) -> String {
        match self {
            ParseError::BadJson(e) => format!("not valid JSON: {e}"),
            ParseError::BadMessage(e) => e.clone(),
            ParseError::UnknownType(t) => format!("unknown message type {t:?}"),
        }
    }
}

#[derive(Deserialize)]
struct JoinFields {
    v: u64,
    swarm: String,
}

#[derive(Deserialize)]
struct SignalFields {
    to: String,
    data: Value,
}

/// Parses one client text frame. Unknown extra fields are ignored (room for additions
/// within a version).
pub fn parse_client(text: &str) -> Result<ClientMessage, ParseError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| ParseError::BadJson(e.to_string()))?;
    let Value::Object(map) = &value else {
        return Err(ParseError::BadMessage(
            "a message must be a JSON object".into(),
        ));
    };
    let ty = match map.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(_) => return Err(ParseError::BadMessage("\"type\" must be a string".into())),
        None => return Err(ParseError::BadMessage("missing field \"type\"".into())),
    };
    let fields_error = |e: serde_json::Error| ParseError::BadMessage(format!("{ty}: {e}"));
    match ty {
        "join" => {
            let f: JoinFields = serde_json::from_value(value.clone()).map_err(fields_error)?;
            Ok(ClientMessage::Join {
                v: f.v,
                swarm: f.swarm,
            })
        }
        "signal" => {
            if !map.contains_key("data") {
                return Err(ParseError::BadMessage(
                    "signal: missing field `data`".into(),
                ));
            }
            let f: SignalFields = serde_json::from_value(value.clone()).map_err(fields_error)?;
            Ok(ClientMessage::Signal {
                to: f.to,
                data: f.data,
            })
        }
        "leave" => Ok(ClientMessage::Leave),
        other => Err(ParseError::UnknownType(other.to_owned())),
    }
}

/// Whether `swarm` is a valid swarm id: a Merkle root in lowercase hex, 40 (SHA-1) or 64
/// (SHA-256) digits.
pub fn valid_swarm_id(swarm: &str) -> bool {
    (swarm.len() == 40 || swarm.len() == 64)
        && swarm
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Error codes, as sent in `error.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorCode {
    /// Fatal: the frame is not JSON.
    BadJson,
    /// Fatal: not an object, no string `type`, or missing/mistyped fields.
    BadMessage,
    /// Fatal: a `type` the server does not know.
    UnknownType,
    /// Fatal: `join.v` is not a version the server speaks.
    UnsupportedVersion,
    /// Fatal: a binary frame (the protocol is text only).
    BinaryFrame,
    /// Fatal: a frame larger than the server's limit.
    TooLarge,
    /// Fatal: the client sent faster than its rate limit.
    RateLimited,
    /// Fatal: nothing received (not even a pong) within the idle timeout.
    IdleTimeout,
    /// The swarm id is not 40 or 64 lowercase hex digits.
    BadSwarm,
    /// A second `join` while already in a room.
    AlreadyJoined,
    /// `signal` or `leave` before `join`.
    NotJoined,
    /// The addressee is not a peer in the sender's room (unknown, gone, another room, or
    /// the sender itself). Nothing was delivered.
    UnknownPeer,
    /// The room has `max_peers_per_room` peers.
    RoomFull,
    /// Opening the room would exceed `max_rooms`.
    TooManyRooms,
    /// The addressee has too much queued (from this sender, or in all) to take the signal
    /// now. Nothing was delivered; the sender may retry later.
    PeerBusy,
}

impl ErrorCode {
    /// Whether the server closes the connection after sending this error.
    pub fn is_fatal(self) -> bool {
        matches!(
            self,
            ErrorCode::BadJson
                | ErrorCode::BadMessage
                | ErrorCode::UnknownType
                | ErrorCode::UnsupportedVersion
                | ErrorCode::BinaryFrame
                | ErrorCode::TooLarge
                | ErrorCode::RateLimited
                | ErrorCode::IdleTimeout
        )
    }

    /// The WebSocket close code used after a fatal error.
    pub fn close_code(self) -> u16 {
        match self {
            ErrorCode::BinaryFrame => close_code::UNSUPPORTED_DATA,
            ErrorCode::TooLarge => close_code::TOO_BIG,
            ErrorCode::IdleTimeout => close_code::NORMAL,
            _ => close_code::POLICY,
        }
    }

    /// The code as it appears on the wire, e.g. `"unknown-peer"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadJson => "bad-json",
            ErrorCode::BadMessage => "bad-message",
            ErrorCode::UnknownType => "unknown-type",
            ErrorCode::UnsupportedVersion => "unsupported-version",
            ErrorCode::BinaryFrame => "binary-frame",
            ErrorCode::TooLarge => "too-large",
            ErrorCode::RateLimited => "rate-limited",
            ErrorCode::IdleTimeout => "idle-timeout",
            ErrorCode::BadSwarm => "bad-swarm",
            ErrorCode::AlreadyJoined => "already-joined",
            ErrorCode::NotJoined => "not-joined",
            ErrorCode::UnknownPeer => "unknown-peer",
            ErrorCode::RoomFull => "room-full",
            ErrorCode::TooManyRooms => "too-many-rooms",
            ErrorCode::PeerBusy => "peer-busy",
        }
    }
}

/// WebSocket close codes the server uses (RFC 6455 §7.4.1).
pub mod close_code {
    /// Normal closure (idle timeout).
    pub const NORMAL: u16 = 1000;
    /// Going away: the server is shutting down.
    pub const GOING_AWAY: u16 = 1001;
    /// Unsupported data: a binary frame.
    pub const UNSUPPORTED_DATA: u16 = 1003;
    /// Policy violation: a fatal protocol error, rate limit, or a slow reader.
    pub const POLICY: u16 = 1008;
    /// Message too big.
    pub const TOO_BIG: u16 = 1009;
}

/// A message from the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ServerMessage {
    /// Reply to `join`: the client's peer id and a sample of the room's other peers.
    Welcome {
        v: u64,
        swarm: String,
        peer_id: String,
        peers: Vec<String>,
    },
    /// A relayed signal from peer `from`.
    Signal { from: String, data: Value },
    /// A peer of the room left (or was disconnected).
    PeerLeft { peer_id: String },
    /// Something went wrong; `fatal` errors are followed by a close.
    Error {
        code: ErrorCode,
        message: String,
        /// Whether the server closes the connection after this error.
        fatal: bool,
        /// For `unknown-peer` and `peer-busy`: the addressee.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<String>,
        /// For `unsupported-version`: the versions the server speaks.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        supported: Option<Vec<u64>>,
    },
}

impl ServerMessage {
    /// An `error` message without the optional fields.
    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        ServerMessage::Error {
            code,
            message: message.into(),
            fatal: code.is_fatal(),
            to: None,
            supported: None,
        }
    }

    /// The JSON text of this message.
    pub fn to_json(&self) -> String {
        // Serializing these types cannot fail: string keys, no non-finite floats that
        // did not come from parsed JSON.
        serde_json::to_string(self).unwrap_or_else(|_| {
            r#"{"type":"error","code":"bad-message","message":"unprintable","fatal":true}"#
                .to_owned()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_client_messages() {
        assert_eq!(
            parse_client(r#"{"type":"join","v":1,"swarm":"ab"}"#),
            Ok(ClientMessage::Join {
                v: 1,
                swarm: "ab".into()
            })
        );
        assert_eq!(
            parse_client(r#"{"type":"signal","to":"x","data":{"sdp":"y"},"extra":1}"#),
            Ok(ClientMessage::Signal {
                to: "x".into(),
                data: serde_json::json!({"sdp":"y"})
            })
        );
        assert_eq!(
            parse_client(r#"{"type":"leave"}"#),
            Ok(ClientMessage::Leave)
        );
    }

    #[test]
    fn classifies_bad_input() {
        let code = |s: &str| parse_client(s).unwrap_err().code();
        assert_eq!(code("{"), ErrorCode::BadJson);
        assert_eq!(code(""), ErrorCode::BadJson);
        assert_eq!(code("[1]"), ErrorCode::BadMessage);
        assert_eq!(code(r#"{"v":1}"#), ErrorCode::BadMessage);
        assert_eq!(code(r#"{"type":7}"#), ErrorCode::BadMessage);
        assert_eq!(code(r#"{"type":"join","v":1}"#), ErrorCode::BadMessage);
        assert_eq!(
            code(r#"{"type":"join","v":"1","swarm":"a"}"#),
            ErrorCode::BadMessage
        );
        assert_eq!(code(r#"{"type":"signal","to":"x"}"#), ErrorCode::BadMessage);
        assert_eq!(code(r#"{"type":"signal","data":1}"#), ErrorCode::BadMessage);
        assert_eq!(code(r#"{"type":"hello"}"#), ErrorCode::UnknownType);
    }

    #[test]
    fn signal_data_may_be_null_but_must_be_present() {
        assert!(parse_client(r#"{"type":"signal","to":"x","data":null}"#).is_ok());
    }

    #[test]
    fn swarm_ids() {
        assert!(valid_swarm_id(&"a".repeat(40)));
        assert!(valid_swarm_id(&"0123456789abcdef".repeat(4)));
        assert!(!valid_swarm_id(&"A".repeat(40)));
        assert!(!valid_swarm_id(&"a".repeat(41)));
        assert!(!valid_swarm_id(&"g".repeat(40)));
        assert!(!valid_swarm_id(""));
    }

    #[test]
    fn server_messages_print_as_documented() {
        let m = ServerMessage::PeerLeft {
            peer_id: "p".into(),
        };
        assert_eq!(m.to_json(), r#"{"type":"peer-left","peer_id":"p"}"#);
        let e = ServerMessage::error(ErrorCode::UnknownPeer, "no");
        assert_eq!(
            e.to_json(),
            r#"{"type":"error","code":"unknown-peer","message":"no","fatal":false}"#
        );
        for code in [
            ErrorCode::BadJson,
            ErrorCode::TooManyRooms,
            ErrorCode::PeerBusy,
        ] {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, Value::String(code.as_str().into()));
        }
    }
}
