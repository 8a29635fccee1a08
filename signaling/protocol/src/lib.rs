//! The messages of ppspp-web's signaling protocol, version 1, as Rust types.
//!
//! `docs/SIGNALING.md` is the specification. This crate is its one Rust definition: the
//! server (`ppspp-signal`) and the native client (`ppspp seed --signal`, `ppspp fetch`)
//! both parse and print messages with it, and the browser client (`web/src/signaling.ts`)
//! is checked against the same JSON fixtures (`fixtures/`, see its tests).
//!
//! Every message is one UTF-8 JSON text frame: an object whose string `"type"` names the
//! message. [`ClientMessage`] is what a client sends, [`ServerMessage`] what the server
//! sends. Unknown extra fields are ignored in both directions (room for additions within
//! a version).
//!
//! What the server enforces beyond the shape of a message (swarm id syntax, limits, rate,
//! who may signal whom) is the server's business and lives there.
//!
//! ```
//! use ppspp_signal_protocol::{ClientMessage, ServerMessage, ErrorCode};
//!
//! let join = ClientMessage::Join { v: 1, swarm: "c89800bfc82ed01ed6e3bfd5408c51274491f7d4".into() };
//! assert_eq!(join.to_json(), r#"{"type":"join","v":1,"swarm":"c89800bfc82ed01ed6e3bfd5408c51274491f7d4"}"#);
//!
//! let text = r#"{"type":"error","code":"peer-busy","message":"try later","fatal":false,"to":"ab"}"#;
//! match ServerMessage::from_json(text).unwrap() {
//!     ServerMessage::Error { code, to, .. } => {
//!         assert_eq!(code, ErrorCode::PeerBusy);
//!         assert_eq!(to.as_deref(), Some("ab"));
//!     }
//!     other => panic!("{other:?}"),
//! }
//! ```

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The protocol version this crate describes: a `join` carries it in `v`, a `welcome`
/// echoes it.
pub const PROTOCOL_VERSION: u64 = 1;

/// The path the WebSocket endpoint is served on (`ws://HOST:PORT/ws`).
pub const WS_PATH: &str = "/ws";

/// A message from a client to the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ClientMessage {
    /// `{"type":"join","v":1,"swarm":"<root hex>"}`: enter the room of swarm `swarm` (the
    /// content's Merkle root in lowercase hex), speaking protocol version `v`. Answered by
    /// a `welcome` or an `error`. A connection is in at most one room.
    Join {
        /// The protocol version the client speaks ([`PROTOCOL_VERSION`]).
        v: u64,
        /// The swarm id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.
        swarm: String,
    },
    /// `{"type":"signal","to":"<peer id>","data":...}`: relay `data` to peer `to` of the
    /// same room. Success is silent; an addressee that is not in the room is an
    /// `unknown-peer` error, one with too much queued a `peer-busy` error.
    Signal {
        /// The addressee's peer id.
        to: String,
        /// Anything, opaque to the server (ppspp-web's peers put WebRTC offers, answers and
        /// ICE candidates here). `null` is allowed, but the field must be present.
        #[serde(deserialize_with = "present")]
        data: Value,
    },
    /// `{"type":"leave"}`: leave the current room; the connection stays open and may
    /// `join` again (with a new peer id). No reply.
    Leave,
    /// `{"type":"ice"}`: ask for fresh ICE servers (new time-limited TURN credentials)
    /// without rejoining, because those of the `welcome` expire. Answered by an
    /// `ice-servers`; before `join` (or after `leave`) by a `not-joined` error.
    Ice,
    /// `{"type":"report","bytes":{"peers":…,"http":…,"seeders":…},"stalls":…,"stallMs":…}`:
    /// what the client received since its `join`, for the operator's swarm-wide figures.
    /// Sent only to a server whose `welcome` has `reportEvery`, at most that often, and
    /// only if the site asked for it. Each figure is a running total since the join, never
    /// smaller than in the client's previous report. Success is silent; a report the server
    /// does not take is a `bad-report` error (not fatal), and counts for nothing.
    Report {
        /// Payload bytes received, verified, by where they came from.
        bytes: ReportBytes,
        /// Stalls of playback (the playhead stood still while it should have played).
        stalls: u64,
        /// Milliseconds those stalls lasted.
        #[serde(rename = "stallMs")]
        stall_ms: u64,
    },
}

/// The bytes of a `report`, by source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportBytes {
    /// From other viewers.
    pub peers: u64,
    /// From the HTTP origin (a CDN or web server).
    pub http: u64,
    /// From seeders.
    pub seeders: u64,
}

/// A message from the server to a client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ServerMessage {
    /// The reply to `join`: the client's server-assigned `peer_id` and a sample of the peers
    /// already in the room, the closest to the client first (never the client itself;
    /// empty for the first). The newcomer initiates: it sends offers to the peers it wants.
    Welcome {
        /// The protocol version of this session.
        v: u64,
        /// The swarm joined, as in the `join`.
        swarm: String,
        /// The client's peer id: 32 lowercase hex digits, new at every `join`.
        peer_id: String,
        /// Peer ids of a sample of the room.
        peers: Vec<String>,
        /// The ICE servers (STUN, and TURN with credentials made for this client) the
        /// client should use for its peer connections, in the browser's `RTCIceServer`
        /// shape; absent when the server has none configured. On the wire the field is
        /// `iceServers`, as in `RTCConfiguration`, so a browser can use it as it is.
        #[serde(
            rename = "iceServers",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        ice_servers: Option<Vec<IceServer>>,
        /// Seconds between the client's `report`s, when the server takes them (absent: it
        /// does not, and clients send none). On the wire `reportEvery`.
        #[serde(
            rename = "reportEvery",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        report_every: Option<u64>,
        /// Present when the room has fewer peers than the server starts peer-to-peer at:
        /// that number. `peers` is then empty, and the client plays from its other sources
        /// (an HTTP origin) until a newcomer, once the room has grown to it, offers it a
        /// connection. On the wire `p2pFrom`.
        #[serde(rename = "p2pFrom", default, skip_serializing_if = "Option::is_none")]
        p2p_from: Option<u64>,
    },
    /// A relayed `signal`: `data` as the peer `from` sent it. `from` is set by the server
    /// and cannot be forged; `data` is still untrusted input.
    Signal {
        /// The sender's peer id.
        from: String,
        /// What the sender put in its `signal`.
        data: Value,
    },
    /// A peer of the client's room left (by `leave`, by closing, or disconnected). Always
    /// sent to the peers that know its id; the rest of the room only within the server's
    /// announcement budget, so clients act only on ids they know.
    PeerLeft {
        /// The id of the peer that left.
        peer_id: String,
    },
    /// Something the client sent could not be done (or the connection is being ended).
    /// After a `fatal` error the server closes the connection.
    Error {
        /// What went wrong; see [`ErrorCode`].
        code: ErrorCode,
        /// For humans.
        message: String,
        /// Whether the server closes the connection right after. A client that does not
        /// know `code` goes by this flag.
        fatal: bool,
        /// For `unknown-peer` and `peer-busy`: the addressee of the refused `signal`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<String>,
        /// For `unsupported-version`: the versions the server speaks.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        supported: Option<Vec<u64>>,
    },
    /// The reply to `ice`: the ICE servers the client should use from now on, made as for a
    /// `welcome` (TURN credentials issued now, for the client's current peer id), so that a
    /// client that stays joined longer than the credentials' lifetime can renew them.
    IceServers {
        /// The ICE servers, in the browser's `RTCIceServer` shape as in the `welcome`; on
        /// the wire the field is `iceServers`. Always present: an empty list when the
        /// server has none configured.
        #[serde(rename = "iceServers")]
        ice_servers: Vec<IceServer>,
    },
}

/// One entry of the `iceServers` of a `welcome` or an `ice-servers`: the shape of the browser's `RTCIceServer`
/// (`{"urls": [...], "username": "...", "credential": "..."}`). Unknown fields are
/// ignored.
///
/// For TURN the server issues time-limited credentials (the "TURN REST API" scheme that
/// coturn's `use-auth-secret` checks): `username` is `<unix expiry>:<peer id>` and
/// `credential` is base64(HMAC-SHA1(shared secret, username)). See `docs/SIGNALING.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IceServer {
    /// The server's URLs (`stun:`, `stuns:`, `turn:` or `turns:`).
    pub urls: IceUrls,
    /// The TURN username, if the server needs credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The TURN password (for TURN REST credentials, the base64 HMAC of `username`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

/// `RTCIceServer.urls`: one URL or a list of them. The server sends lists; clients accept
/// both, as browsers do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum IceUrls {
    /// `"urls": "stun:…"`.
    One(String),
    /// `"urls": ["turn:…", "turns:…"]`.
    Many(Vec<String>),
}

impl IceUrls {
    /// The URLs as a slice, whichever form they came in.
    pub fn as_slice(&self) -> &[String] {
        match self {
            IceUrls::One(url) => std::slice::from_ref(url),
            IceUrls::Many(urls) => urls,
        }
    }
}

impl IceServer {
    /// An entry without credentials (e.g. STUN).
    pub fn new(urls: Vec<String>) -> IceServer {
        IceServer {
            urls: IceUrls::Many(urls),
            username: None,
            credential: None,
        }
    }

    /// The entry's URLs.
    pub fn urls(&self) -> &[String] {
        self.urls.as_slice()
    }
}

/// The `code` of an `error` message. On the wire it is the kebab-case string
/// ([`ErrorCode::as_str`]); a code this version does not define is kept as
/// [`ErrorCode::Other`] so that a client can still report it and go by its `fatal` flag.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// `bad-json`, fatal: the text frame is not JSON.
    BadJson,
    /// `bad-message`, fatal: not an object, no string `type`, or a known type with missing
    /// or mistyped fields.
    BadMessage,
    /// `unknown-type`, fatal: a `type` this version does not define.
    UnknownType,
    /// `unsupported-version`, fatal: `join.v` is not a version the server speaks (the
    /// error's `supported` lists those it does).
    UnsupportedVersion,
    /// `binary-frame`, fatal: a binary frame (the protocol is text only).
    BinaryFrame,
    /// `too-large`, fatal: a frame larger than the server's limit.
    TooLarge,
    /// `rate-limited`, fatal: the client sent faster than its rate limit.
    RateLimited,
    /// `idle-timeout`, fatal: nothing received (not even a pong) within the idle timeout.
    IdleTimeout,
    /// `bad-swarm`: the swarm id is not 40 or 64 lowercase hex digits.
    BadSwarm,
    /// `already-joined`: a second `join` while in a room (send `leave` first).
    AlreadyJoined,
    /// `not-joined`: `signal`, `leave` or `ice` before `join`.
    NotJoined,
    /// `unknown-peer`: the addressee is not a peer of the sender's room (unknown, gone,
    /// another room, or the sender itself). Nothing was delivered.
    UnknownPeer,
    /// `room-full`: the room has as many peers as the server allows.
    RoomFull,
    /// `too-many-rooms`: opening the room would exceed the server's number of rooms.
    TooManyRooms,
    /// `peer-busy`: the addressee has too much queued (from this sender, or in all) to take
    /// the signal now. Nothing was delivered; the sender may retry later.
    PeerBusy,
    /// `unavailable`, fatal: the server cannot serve the request now (with rooms in Redis,
    /// Redis does not answer). Reconnect later, or to another server of the site.
    Unavailable,
    /// `bad-report`: a `report` the server did not take (too soon after the last, totals
    /// that went down, more than a viewer can receive, or reports are off). Not fatal;
    /// nothing of it was counted.
    BadReport,
    /// A code this version does not define (from a newer server), as it was sent.
    Other(String),
}

impl ErrorCode {
    /// Every code this version defines, in the order of `docs/SIGNALING.md`'s table.
    pub const KNOWN: [ErrorCode; 17] = [
        ErrorCode::BadJson,
        ErrorCode::BadMessage,
        ErrorCode::UnknownType,
        ErrorCode::UnsupportedVersion,
        ErrorCode::BinaryFrame,
        ErrorCode::TooLarge,
        ErrorCode::RateLimited,
        ErrorCode::IdleTimeout,
        ErrorCode::BadSwarm,
        ErrorCode::AlreadyJoined,
        ErrorCode::NotJoined,
        ErrorCode::UnknownPeer,
        ErrorCode::RoomFull,
        ErrorCode::TooManyRooms,
        ErrorCode::PeerBusy,
        ErrorCode::Unavailable,
        ErrorCode::BadReport,
    ];

    /// The code as it appears on the wire, e.g. `"unknown-peer"`.
    pub fn as_str(&self) -> &str {
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
            ErrorCode::Unavailable => "unavailable",
            ErrorCode::BadReport => "bad-report",
            ErrorCode::Other(code) => code,
        }
    }

    /// The code a wire string names; [`ErrorCode::Other`] for one this version does not
    /// define.
    pub fn from_wire(code: &str) -> ErrorCode {
        ErrorCode::KNOWN
            .into_iter()
            .find(|known| known.as_str() == code)
            .unwrap_or_else(|| ErrorCode::Other(code.to_owned()))
    }

    /// Whether the protocol makes this error fatal (the server closes the connection after
    /// it). `false` for [`ErrorCode::Other`]: go by the message's `fatal` flag.
    pub fn is_fatal(&self) -> bool {
        self.close_code().is_some()
    }

    /// For a fatal error, the WebSocket close code the server closes with after it.
    pub fn close_code(&self) -> Option<u16> {
        match self {
            ErrorCode::BinaryFrame => Some(close_code::UNSUPPORTED_DATA),
            ErrorCode::TooLarge => Some(close_code::TOO_BIG),
            ErrorCode::IdleTimeout => Some(close_code::NORMAL),
            ErrorCode::Unavailable => Some(close_code::TRY_AGAIN_LATER),
            ErrorCode::BadJson
            | ErrorCode::BadMessage
            | ErrorCode::UnknownType
            | ErrorCode::UnsupportedVersion
            | ErrorCode::RateLimited => Some(close_code::POLICY),
            ErrorCode::BadSwarm
            | ErrorCode::AlreadyJoined
            | ErrorCode::NotJoined
            | ErrorCode::UnknownPeer
            | ErrorCode::RoomFull
            | ErrorCode::TooManyRooms
            | ErrorCode::PeerBusy
            | ErrorCode::BadReport
            | ErrorCode::Other(_) => None,
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let code = String::deserialize(deserializer)?;
        Ok(ErrorCode::from_wire(&code))
    }
}

/// WebSocket close codes of the protocol (RFC 6455 §7.4.1).
pub mod close_code {
    /// Normal closure (after `idle-timeout`).
    pub const NORMAL: u16 = 1000;
    /// Going away: the server is shutting down.
    pub const GOING_AWAY: u16 = 1001;
    /// Unsupported data: after `binary-frame`.
    pub const UNSUPPORTED_DATA: u16 = 1003;
    /// Policy violation: after a fatal protocol error or `rate-limited`, and for a slow
    /// reader.
    pub const POLICY: u16 = 1008;
    /// Message too big: after `too-large`.
    pub const TOO_BIG: u16 = 1009;
    /// Try again later: after `unavailable`.
    pub const TRY_AGAIN_LATER: u16 = 1013;
}

/// Why a text frame is not a message of the expected direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// Not JSON at all (serde_json's explanation).
    Json(String),
    /// JSON, but not an object.
    NotAnObject,
    /// An object without a `type` field.
    MissingType,
    /// An object whose `type` is not a string.
    TypeNotAString,
    /// A `type` this version does not define for this direction.
    UnknownType(String),
    /// A known `type` with missing or mistyped fields.
    Fields {
        /// The message's `type`.
        kind: String,
        /// serde's explanation, e.g. "missing field `swarm`".
        error: String,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Json(e) => write!(f, "not valid JSON: {e}"),
            DecodeError::NotAnObject => f.write_str("a message must be a JSON object"),
            DecodeError::MissingType => f.write_str("missing field \"type\""),
            DecodeError::TypeNotAString => f.write_str("\"type\" must be a string"),
            DecodeError::UnknownType(t) => write!(f, "unknown message type {t:?}"),
            DecodeError::Fields { kind, error } => write!(f, "{kind}: {error}"),
        }
    }
}

impl std::error::Error for DecodeError {}

impl ClientMessage {
    /// The `type`s a client may send in this version.
    pub const TYPES: [&'static str; 5] = ["join", "signal", "leave", "ice", "report"];

    /// Parses one text frame from a client. Unknown extra fields are ignored.
    pub fn from_json(text: &str) -> Result<ClientMessage, DecodeError> {
        decode(text, &Self::TYPES)
    }

    /// The JSON text of this message (fields in the documented order).
    pub fn to_json(&self) -> String {
        encode(self)
    }

    /// The message's `type` on the wire.
    pub fn kind(&self) -> &'static str {
        match self {
            ClientMessage::Join { .. } => "join",
            ClientMessage::Signal { .. } => "signal",
            ClientMessage::Leave => "leave",
            ClientMessage::Ice => "ice",
            ClientMessage::Report { .. } => "report",
        }
    }
}

impl ServerMessage {
    /// The `type`s the server sends in this version.
    pub const TYPES: [&'static str; 5] = ["welcome", "signal", "peer-left", "error", "ice-servers"];

    /// An `error` message with the code's `fatal` flag and without the optional fields.
    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        ServerMessage::Error {
            fatal: code.is_fatal(),
            code,
            message: message.into(),
            to: None,
            supported: None,
        }
    }

    /// Parses one text frame from the server. Unknown extra fields are ignored; a `type`
    /// this version does not define is [`DecodeError::UnknownType`], which clients skip.
    pub fn from_json(text: &str) -> Result<ServerMessage, DecodeError> {
        decode(text, &Self::TYPES)
    }

    /// The JSON text of this message (fields in the documented order).
    pub fn to_json(&self) -> String {
        encode(self)
    }

    /// The message's `type` on the wire.
    pub fn kind(&self) -> &'static str {
        match self {
            ServerMessage::Welcome { .. } => "welcome",
            ServerMessage::Signal { .. } => "signal",
            ServerMessage::PeerLeft { .. } => "peer-left",
            ServerMessage::Error { .. } => "error",
            ServerMessage::IceServers { .. } => "ice-servers",
        }
    }
}

/// Parses `text` as a message whose `type` is one of `types`, classifying what is wrong
/// with it otherwise.
fn decode<M: DeserializeOwned>(text: &str, types: &[&str]) -> Result<M, DecodeError> {
    let value: Value = serde_json::from_str(text).map_err(|e| DecodeError::Json(e.to_string()))?;
    let Value::Object(map) = &value else {
        return Err(DecodeError::NotAnObject);
    };
    let kind = match map.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(_) => return Err(DecodeError::TypeNotAString),
        None => return Err(DecodeError::MissingType),
    };
    if !types.contains(&kind.as_str()) {
        return Err(DecodeError::UnknownType(kind));
    }
    serde_json::from_value(value).map_err(|e| DecodeError::Fields {
        kind,
        error: e.to_string(),
    })
}

fn encode<M: Serialize>(message: &M) -> String {
    // Cannot fail: string keys only, and numbers that came from JSON or from integers.
    serde_json::to_string(message).unwrap_or_else(|_| {
        r#"{"type":"error","code":"bad-message","message":"unprintable","fatal":true}"#.to_owned()
    })
}

/// A field that must be present even though it may be `null` (serde would otherwise read
/// a missing `Value` as `null`).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
    Value::deserialize(deserializer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn client_messages_parse_and_ignore_extra_fields() {
        assert_eq!(
            ClientMessage::from_json(r#"{"type":"join","v":1,"swarm":"ab"}"#),
            Ok(ClientMessage::Join {
                v: 1,
                swarm: "ab".into()
            })
        );
        assert_eq!(
            ClientMessage::from_json(r#"{"type":"signal","to":"x","data":{"sdp":"y"},"extra":1}"#),
            Ok(ClientMessage::Signal {
                to: "x".into(),
                data: json!({"sdp":"y"})
            })
        );
        assert_eq!(
            ClientMessage::from_json(r#"{"type":"leave","why":"bored"}"#),
            Ok(ClientMessage::Leave)
        );
        assert_eq!(
            ClientMessage::from_json(r#"{"type":"ice","soon":true}"#),
            Ok(ClientMessage::Ice)
        );
        assert_eq!(ClientMessage::Ice.to_json(), r#"{"type":"ice"}"#);
    }

    #[test]
    fn signal_data_may_be_null_but_must_be_present() {
        assert_eq!(
            ClientMessage::from_json(r#"{"type":"signal","to":"x","data":null}"#),
            Ok(ClientMessage::Signal {
                to: "x".into(),
                data: Value::Null
            })
        );
        assert_eq!(
            ClientMessage::from_json(r#"{"type":"signal","to":"x"}"#),
            Err(DecodeError::Fields {
                kind: "signal".into(),
                error: "missing field `data`".into()
            })
        );
    }

    #[test]
    fn classifies_what_is_not_a_message() {
        let err = |s: &str| ClientMessage::from_json(s).unwrap_err();
        assert!(matches!(err("{"), DecodeError::Json(_)));
        assert!(matches!(err(""), DecodeError::Json(_)));
        assert_eq!(err("[1]"), DecodeError::NotAnObject);
        assert_eq!(err(r#"{"v":1}"#), DecodeError::MissingType);
        assert_eq!(err(r#"{"type":7}"#), DecodeError::TypeNotAString);
        assert_eq!(
            err(r#"{"type":"hello"}"#),
            DecodeError::UnknownType("hello".into())
        );
        // A server message is not a client message.
        assert_eq!(
            err(r#"{"type":"welcome"}"#),
            DecodeError::UnknownType("welcome".into())
        );
        assert!(matches!(
            err(r#"{"type":"join","v":"1","swarm":"a"}"#),
            DecodeError::Fields { kind, .. } if kind == "join"
        ));
        assert_eq!(
            err(r#"{"type":"join","v":1}"#).to_string(),
            "join: missing field `swarm`"
        );
        assert_eq!(
            err(r#"{"type":"hello"}"#).to_string(),
            "unknown message type \"hello\""
        );
    }

    #[test]
    fn error_codes_print_as_on_the_wire_and_unknown_ones_survive() {
        for code in ErrorCode::KNOWN {
            let json = serde_json::to_value(&code).unwrap();
            assert_eq!(json, Value::String(code.as_str().into()));
            assert_eq!(ErrorCode::from_wire(code.as_str()), code);
            assert_eq!(code.is_fatal(), code.close_code().is_some());
        }
        let m = ServerMessage::from_json(
            r#"{"type":"error","code":"too-tired","message":"later","fatal":true,"retry":5}"#,
        )
        .unwrap();
        assert_eq!(
            m,
            ServerMessage::Error {
                code: ErrorCode::Other("too-tired".into()),
                message: "later".into(),
                fatal: true,
                to: None,
                supported: None
            }
        );
        assert_eq!(
            m.to_json(),
            r#"{"type":"error","code":"too-tired","message":"later","fatal":true}"#
        );
        assert!(!ErrorCode::Other("too-tired".into()).is_fatal());
    }

    #[test]
    fn error_constructor_sets_fatal_from_the_code() {
        assert_eq!(
            ServerMessage::error(ErrorCode::UnknownPeer, "no").to_json(),
            r#"{"type":"error","code":"unknown-peer","message":"no","fatal":false}"#
        );
        assert_eq!(
            ServerMessage::error(ErrorCode::BadJson, "no").to_json(),
            r#"{"type":"error","code":"bad-json","message":"no","fatal":true}"#
        );
    }

    #[test]
    fn welcome_ice_servers_are_optional_and_take_both_url_forms() {
        let plain = r#"{"type":"welcome","v":1,"swarm":"ab","peer_id":"p","peers":[]}"#;
        let m = ServerMessage::from_json(plain).unwrap();
        assert!(matches!(
            &m,
            ServerMessage::Welcome {
                ice_servers: None,
                ..
            }
        ));
        assert_eq!(m.to_json(), plain, "absent stays absent");

        let text = r#"{"type":"welcome","v":1,"swarm":"ab","peer_id":"p","peers":[],"iceServers":[{"urls":"stun:s.test"},{"urls":["turn:t.test","turns:t.test"],"username":"9:p","credential":"c2VjcmV0","credentialType":"password"}]}"#;
        let ServerMessage::Welcome {
            ice_servers: Some(servers),
            ..
        } = ServerMessage::from_json(text).unwrap()
        else {
            panic!("no iceServers");
        };
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0].urls(), ["stun:s.test"]);
        assert_eq!(servers[0].urls, IceUrls::One("stun:s.test".into()));
        assert_eq!(
            (
                servers[0].username.as_deref(),
                servers[0].credential.as_deref()
            ),
            (None, None)
        );
        assert_eq!(servers[1].urls(), ["turn:t.test", "turns:t.test"]);
        assert_eq!(servers[1].username.as_deref(), Some("9:p"));
        assert_eq!(servers[1].credential.as_deref(), Some("c2VjcmV0"));
        assert_eq!(
            serde_json::to_string(&servers[0]).unwrap(),
            r#"{"urls":"stun:s.test"}"#
        );
        assert_eq!(
            serde_json::to_string(&IceServer::new(vec!["stun:a".into()])).unwrap(),
            r#"{"urls":["stun:a"]}"#
        );
        // A malformed entry is a malformed welcome.
        let bad = r#"{"type":"welcome","v":1,"swarm":"ab","peer_id":"p","peers":[],"iceServers":[{"urls":7}]}"#;
        assert!(matches!(
            ServerMessage::from_json(bad),
            Err(DecodeError::Fields { kind, .. }) if kind == "welcome"
        ));
    }

    #[test]
    fn ice_servers_always_carry_the_list() {
        let empty = r#"{"type":"ice-servers","iceServers":[]}"#;
        let m = ServerMessage::from_json(empty).unwrap();
        assert_eq!(
            m,
            ServerMessage::IceServers {
                ice_servers: vec![]
            }
        );
        assert_eq!(m.to_json(), empty, "an empty list stays on the wire");
        assert_eq!(m.kind(), "ice-servers");

        let text = r#"{"type":"ice-servers","iceServers":[{"urls":"stun:s.test"},{"urls":["turn:t.test"],"username":"9:p","credential":"c2VjcmV0"}],"extra":1}"#;
        let ServerMessage::IceServers { ice_servers } = ServerMessage::from_json(text).unwrap()
        else {
            panic!("not ice-servers");
        };
        assert_eq!(ice_servers.len(), 2);
        assert_eq!(ice_servers[1].urls(), ["turn:t.test"]);
        assert_eq!(ice_servers[1].username.as_deref(), Some("9:p"));

        // The list is not optional here, and the welcome's snake_case would not do.
        for bad in [
            r#"{"type":"ice-servers"}"#,
            r#"{"type":"ice-servers","ice_servers":[]}"#,
            r#"{"type":"ice-servers","iceServers":null}"#,
        ] {
            assert!(
                matches!(
                    ServerMessage::from_json(bad),
                    Err(DecodeError::Fields { ref kind, .. }) if kind == "ice-servers"
                ),
                "{bad}"
            );
        }
        // Each direction keeps its own types.
        assert_eq!(
            ClientMessage::from_json(empty),
            Err(DecodeError::UnknownType("ice-servers".into()))
        );
        assert_eq!(
            ServerMessage::from_json(r#"{"type":"ice"}"#),
            Err(DecodeError::UnknownType("ice".into()))
        );
    }

    #[test]
    fn unknown_server_types_are_told_apart() {
        assert_eq!(
            ServerMessage::from_json(r#"{"type":"hello","x":1}"#),
            Err(DecodeError::UnknownType("hello".into()))
        );
    }
}
