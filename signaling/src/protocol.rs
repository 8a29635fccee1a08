//! The wire protocol: JSON text frames with a `"type"` field. `docs/SIGNALING.md` is the
//! specification and the `ppspp-signal-protocol` crate its messages (re-exported here);
//! this module adds what is the server's own: which error code a frame it cannot parse
//! gets, and which swarm ids and peer ids it accepts and assigns.

pub use ppspp_signal_protocol::{
    ClientMessage, DecodeError, ErrorCode, IceServer, IceUrls, PROTOCOL_VERSION, ServerMessage,
    WS_PATH, close_code,
};

/// Length in hex digits of a server-assigned peer id (16 random bytes).
pub const PEER_ID_HEX_LEN: usize = 32;

/// Why a client frame could not be understood, and the (fatal) error code it is answered
/// with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub DecodeError);

impl ParseError {
    /// The error code sent to the client: `bad-json`, `unknown-type` or `bad-message`.
    pub fn code(&self) -> ErrorCode {
        match self.0 {
            DecodeError::Json(_) => ErrorCode::BadJson,
            DecodeError::UnknownType(_) => ErrorCode::UnknownType,
            DecodeError::NotAnObject
            | DecodeError::MissingType
            | DecodeError::TypeNotAString
            | DecodeError::Fields { .. } => ErrorCode::BadMessage,
        }
    }

    /// A human-readable explanation.
    pub fn message(&self) -> String {
        self.0.to_string()
    }
}

/// A non-fatal error about a signal to `to` that was not delivered.
pub(crate) fn undelivered(code: ErrorCode, message: &str, to: String) -> ServerMessage {
    let mut msg = ServerMessage::error(code, message);
    if let ServerMessage::Error { to: t, .. } = &mut msg {
        *t = Some(to);
    }
    msg
}

/// Parses one client text frame. Unknown extra fields are ignored (room for additions
/// within a version).
pub fn parse_client(text: &str) -> Result<ClientMessage, ParseError> {
    ClientMessage::from_json(text).map_err(ParseError)
}

/// Whether `swarm` is a valid swarm id: a Merkle root in lowercase hex, 40 (SHA-1) or 64
/// (SHA-256) digits.
pub fn valid_swarm_id(swarm: &str) -> bool {
    (swarm.len() == 40 || swarm.len() == 64)
        && swarm
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_four_client_messages() {
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
        assert_eq!(parse_client(r#"{"type":"ice"}"#), Ok(ClientMessage::Ice));
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
            let json = serde_json::to_value(&code).unwrap();
            assert_eq!(json, serde_json::Value::String(code.as_str().into()));
        }
    }
}
