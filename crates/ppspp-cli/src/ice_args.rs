//! The WebRTC options `seed` and `fetch` share: STUN/TURN servers of the command line
//! (added to those of the signaling server's welcome), and the WebRTC stack.

use ppspp_signal_protocol::IceServer;

#[derive(clap::Args, Debug, Default, Clone)]
pub struct IceArgs {
    /// A STUN server (stun:HOST[:PORT]) to learn this peer's public address from, so peers
    /// behind other NATs can reach it (repeatable). The signaling server's welcome may name
    /// more, which are used too.
    #[arg(long = "stun", value_name = "URL")]
    pub stun: Vec<String>,
    /// A TURN server (turn:HOST[:PORT]) to relay through when no direct path works
    /// (repeatable; needs --turn-username and --turn-credential). The welcome's TURN servers
    /// come with credentials of their own.
    #[arg(long = "turn", value_name = "URL")]
    pub turn: Vec<String>,
    /// The username for --turn.
    #[arg(long = "turn-username")]
    pub turn_username: Option<String>,
    /// The credential for --turn (or the environment variable PPSPP_TURN_CREDENTIAL, which
    /// keeps it out of the process list).
    #[arg(long = "turn-credential")]
    pub turn_credential: Option<String>,
    /// Offer relayed candidates only: peers are reached through TURN alone (a network that
    /// allows nothing else, or a test of the relay).
    #[arg(long = "relay-only")]
    pub relay_only: bool,
    /// The WebRTC implementation: str0m; webrtc-rs in builds with the `webrtc-rs` feature,
    /// kept to re-measure the choice (docs/ARCHITECTURE.md).
    #[arg(long = "webrtc-stack", value_enum, default_value_t)]
    pub webrtc_stack: crate::rtc::Stack,
    /// Chunks to a peer that says it reads them so share one data-channel message of up
    /// to this many bytes while the path to it loses nothing (browsers' `dataBatchBytes`);
    /// 0: one chunk per message.
    #[arg(long = "data-batch-bytes", value_name = "BYTES",
          default_value_t = crate::rtc::DEFAULT_DATA_BATCH_BYTES as u32,
          value_parser = clap::value_parser!(u32).range(0..=crate::rtc::MAX_DATA_BATCH_BYTES as i64))]
    pub data_batch_bytes: u32,
}

/// STUN/TURN options that do not make a usable set of servers.
#[derive(Debug, thiserror::Error)]
pub enum IceArgsError {
    #[error("--stun takes a stun: URL, not {0}")]
    NotStun(String),
    /// The `--turn` URLs, all of them, as given.
    #[error("--turn takes turn: URLs, not {}", .0.join(", "))]
    NotTurn(Vec<String>),
    #[error("--turn needs --turn-username and --turn-credential (or PPSPP_TURN_CREDENTIAL)")]
    NoTurnCredentials,
    #[error("--relay-only needs a TURN server (--turn, or the signaling server's)")]
    RelayWithoutTurn,
}

impl IceArgs {
    /// The command line's servers followed by the welcome's; an error for TURN without
    /// credentials, or --relay-only without any TURN server.
    pub fn servers(&self, welcome: &[IceServer]) -> Result<Vec<IceServer>, IceArgsError> {
        let mut servers: Vec<IceServer> = Vec::new();
        for url in &self.stun {
            if !url.starts_with("stun:") {
                return Err(IceArgsError::NotStun(url.clone()));
            }
            servers.push(IceServer::new(vec![url.clone()]));
        }
        if !self.turn.is_empty() {
            if self.turn.iter().any(|u| !u.starts_with("turn:")) {
                return Err(IceArgsError::NotTurn(self.turn.clone()));
            }
            let credential = self
                .turn_credential
                .clone()
                .or_else(|| std::env::var("PPSPP_TURN_CREDENTIAL").ok());
            let (Some(username), Some(credential)) = (self.turn_username.clone(), credential)
            else {
                return Err(IceArgsError::NoTurnCredentials);
            };
            let mut s = IceServer::new(self.turn.clone());
            s.username = Some(username);
            s.credential = Some(credential);
            servers.push(s);
        }
        servers.extend(welcome.iter().cloned());
        if self.relay_only
            && !servers
                .iter()
                .any(|s| s.urls().iter().any(|u| u.starts_with("turn:")) && s.username.is_some())
        {
            return Err(IceArgsError::RelayWithoutTurn);
        }
        Ok(servers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn_from_welcome() -> IceServer {
        let mut s = IceServer::new(vec!["turn:198.51.100.1:3478?transport=udp".into()]);
        s.username = Some("1700000000:peer".into());
        s.credential = Some("c=".into());
        s
    }

    #[test]
    fn the_command_lines_servers_come_first_then_the_welcomes() {
        let args = IceArgs {
            stun: vec!["stun:192.0.2.1:3478".into()],
            turn: vec!["turn:192.0.2.2".into()],
            turn_username: Some("u".into()),
            turn_credential: Some("p".into()),
            ..IceArgs::default()
        };
        let servers = args.servers(&[turn_from_welcome()]).unwrap();
        let urls: Vec<&str> = servers.iter().map(|s| s.urls()[0].as_str()).collect();
        assert_eq!(
            urls,
            [
                "stun:192.0.2.1:3478",
                "turn:192.0.2.2",
                "turn:198.51.100.1:3478?transport=udp"
            ]
        );
        assert_eq!(servers[1].username.as_deref(), Some("u"));
        assert_eq!(servers[1].credential.as_deref(), Some("p"));
    }

    #[test]
    fn bad_options_are_refused_with_a_reason() {
        let stun = IceArgs {
            stun: vec!["turn:x".into()],
            ..Default::default()
        };
        assert!(
            stun.servers(&[])
                .unwrap_err()
                .to_string()
                .contains("--stun takes a stun: URL")
        );
        let turn = IceArgs {
            turn: vec!["turn:x".into()],
            ..Default::default()
        };
        assert!(
            turn.servers(&[])
                .unwrap_err()
                .to_string()
                .contains("--turn needs --turn-username")
        );
        let relay = IceArgs {
            relay_only: true,
            ..Default::default()
        };
        assert!(
            relay
                .servers(&[])
                .unwrap_err()
                .to_string()
                .contains("--relay-only needs a TURN server")
        );
        // The welcome's TURN server is enough for --relay-only.
        assert!(relay.servers(&[turn_from_welcome()]).is_ok());
    }
}
