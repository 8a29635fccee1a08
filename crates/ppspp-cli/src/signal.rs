//! A client of the signaling protocol (docs/SIGNALING.md, version 1): join a swarm's room,
//! learn a sample of its peers, relay opaque `data` to and from them. The messages are
//! `ppspp-signal-protocol`'s, the same types the server parses and prints.

use futures_util::{SinkExt, StreamExt};
use ppspp_signal_protocol::{
    ClientMessage, DecodeError, ErrorCode, IceServer, PROTOCOL_VERSION, ServerMessage,
};
use serde_json::Value;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async};

/// How long connecting and joining may take before we give up.
const JOIN_TIMEOUT: Duration = Duration::from_secs(10);

/// A joined connection to a signaling server.
pub struct SignalClient {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    /// Our peer id, assigned by the server.
    pub peer_id: String,
    /// The sample of peers already in the room when we joined.
    pub peers: Vec<String>,
    /// The welcome's `iceServers` (empty when the server sent none).
    ice_servers: Vec<IceServer>,
    /// The server's URL.
    pub url: String,
}

/// Why joining a room at one signaling server failed.
#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    #[error("signaling server {url} did not answer within {} s", JOIN_TIMEOUT.as_secs())]
    Timeout { url: String },
    #[error("cannot reach the signaling server {url}: {source}")]
    Connect {
        url: String,
        #[source]
        source: Box<tungstenite::Error>,
    },
    #[error("signaling server {url}: cannot send join: {source}")]
    SendJoin {
        url: String,
        #[source]
        source: Box<tungstenite::Error>,
    },
    /// The connection failed while we waited for the welcome.
    #[error("signaling server {url}: {source}")]
    Receive {
        url: String,
        #[source]
        source: Box<tungstenite::Error>,
    },
    #[error("signaling server {url} closed before welcome")]
    ClosedBeforeWelcome { url: String },
    /// The server answered our join with an error message.
    #[error("signaling server {url} refused to join: {code}: {message}")]
    Refused {
        url: String,
        code: ErrorCode,
        message: String,
    },
    /// `error` is serde_json's explanation.
    #[error("signaling server {url} sent bad JSON: {error}")]
    BadJson { url: String, error: String },
    /// A welcome or error message with missing or mistyped fields.
    #[error("signaling server {url} sent a malformed {kind}: {error}")]
    Malformed {
        url: String,
        kind: String,
        error: String,
    },
    /// Relaying a message to a peer failed.
    #[error("signaling: cannot send: {0}")]
    Send(#[source] Box<tungstenite::Error>),
}

/// For callers whose errors are the messages they print (the load generator's).
impl From<SignalError> for String {
    fn from(e: SignalError) -> String {
        e.to_string()
    }
}

/// Why no signaling server of a list welcomed us.
#[derive(Debug, thiserror::Error)]
pub enum JoinAnyError {
    #[error("no signaling server given")]
    NoServer,
    /// Every URL's failure, in the order tried.
    #[error("{}", join_failures(.0))]
    AllFailed(Vec<SignalError>),
    /// The task joining in the background ended without an answer (cancelled, say).
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
}

fn join_failures(failures: &[SignalError]) -> String {
    let texts: Vec<String> = failures.iter().map(ToString::to_string).collect();
    texts.join("; ")
}

/// Joins `swarm`'s room at the first of `urls`, starting at `first` and going round, that
/// welcomes us (instances of one site's signaling share rooms, so any will do). Returns
/// the client and the index of its URL, or every URL's failure.
pub async fn join_first(
    urls: &[String],
    first: usize,
    swarm: &str,
) -> Result<(SignalClient, usize), JoinAnyError> {
    let mut failures = Vec::new();
    for k in 0..urls.len() {
        let i = (first + k) % urls.len();
        match SignalClient::join(&urls[i], swarm).await {
            Ok(client) => return Ok((client, i)),
            Err(e) => failures.push(e),
        }
    }
    if failures.is_empty() {
        return Err(JoinAnyError::NoServer);
    }
    Err(JoinAnyError::AllFailed(failures))
}

impl SignalClient {
    /// Connects to `url` and joins the room of `swarm` (lowercase hex root).
    pub async fn join(url: &str, swarm: &str) -> Result<SignalClient, SignalError> {
        match tokio::time::timeout(JOIN_TIMEOUT, Self::join_inner(url, swarm)).await {
            Ok(r) => r,
            Err(_) => Err(SignalError::Timeout {
                url: url.to_owned(),
            }),
        }
    }

    async fn join_inner(url: &str, swarm: &str) -> Result<SignalClient, SignalError> {
        let url_owned = || url.to_owned();
        let (mut ws, _) = connect_async(url).await.map_err(|e| SignalError::Connect {
            url: url_owned(),
            source: Box::new(e),
        })?;
        let join = ClientMessage::Join {
            v: PROTOCOL_VERSION,
            swarm: swarm.to_owned(),
        };
        ws.send(Message::text(join.to_json()))
            .await
            .map_err(|e| SignalError::SendJoin {
                url: url_owned(),
                source: Box::new(e),
            })?;
        loop {
            let msg = match ws.next().await {
                Some(Ok(m)) => m,
                Some(Err(e)) => {
                    return Err(SignalError::Receive {
                        url: url_owned(),
                        source: Box::new(e),
                    });
                }
                None => return Err(SignalError::ClosedBeforeWelcome { url: url_owned() }),
            };
            let Message::Text(text) = msg else {
                if let Message::Close(_) = msg {
                    return Err(SignalError::ClosedBeforeWelcome { url: url_owned() });
                }
                continue;
            };
            match ServerMessage::from_json(text.as_str()) {
                Ok(ServerMessage::Welcome {
                    peer_id,
                    peers,
                    ice_servers,
                    ..
                }) => {
                    return Ok(SignalClient {
                        ws,
                        peer_id,
                        peers,
                        ice_servers: ice_servers.unwrap_or_default(),
                        url: url.to_owned(),
                    });
                }
                Ok(ServerMessage::Error { code, message, .. }) => {
                    return Err(SignalError::Refused {
                        url: url_owned(),
                        code,
                        message,
                    });
                }
                Err(DecodeError::Json(error)) => {
                    return Err(SignalError::BadJson {
                        url: url_owned(),
                        error,
                    });
                }
                Err(DecodeError::Fields { kind, error })
                    if kind == "welcome" || kind == "error" =>
                {
                    return Err(SignalError::Malformed {
                        url: url_owned(),
                        kind,
                        error,
                    });
                }
                // Anything else before the welcome is ignored (forward compatible).
                Ok(_) | Err(_) => {}
            }
        }
    }

    /// The STUN and TURN servers the signaling server gave us in its welcome (TURN ones
    /// with a username and credential issued for this join, valid for a limited time; see
    /// docs/SIGNALING.md). Empty when it has none configured.
    /// The welcome's STUN and TURN servers (TURN with credentials made for this client).
    pub fn ice_servers(&self) -> &[IceServer] {
        &self.ice_servers
    }

    /// Relays `data` to peer `to`.
    pub async fn signal(&mut self, to: &str, data: Value) -> Result<(), SignalError> {
        let msg = ClientMessage::Signal {
            to: to.to_owned(),
            data,
        };
        self.ws
            .send(Message::text(msg.to_json()))
            .await
            .map_err(|e| SignalError::Send(Box::new(e)))
    }

    /// The next message from the server; `None` once the connection is closed. Messages
    /// that are not JSON, of a type this version does not define, or malformed are
    /// skipped. Cancel-safe.
    pub async fn recv(&mut self) -> Option<ServerMessage> {
        loop {
            let msg = match self.ws.next().await? {
                Ok(m) => m,
                Err(_) => return None,
            };
            let text = match msg {
                Message::Text(t) => t,
                Message::Close(_) => return None,
                _ => continue,
            };
            if let Ok(m) = ServerMessage::from_json(text.as_str()) {
                return Some(m);
            }
        }
    }

    /// Leaves the room and closes the connection.
    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ppspp_signal_protocol::ErrorCode;
    use serde_json::json;

    const SWARM: &str = "c89800bfc82ed01ed6e3bfd5408c51274491f7d4";

    async fn next(c: &mut SignalClient) -> ServerMessage {
        tokio::time::timeout(Duration::from_secs(5), c.recv())
            .await
            .expect("a message within 5 s")
            .expect("connection open")
    }

    #[tokio::test]
    async fn join_signal_error_and_peer_left() {
        let server = ppspp_signal::spawn(
            "127.0.0.1:0".parse().unwrap(),
            ppspp_signal::Config::default(),
        )
        .await
        .unwrap();
        let url = server.url();
        let mut a = SignalClient::join(&url, SWARM).await.unwrap();
        assert!(a.peers.is_empty());
        assert_eq!(a.peer_id.len(), 32);
        assert!(a.ice_servers().is_empty(), "no ICE servers configured");
        let mut b = SignalClient::join(&url, SWARM).await.unwrap();
        assert_eq!(b.peers, vec![a.peer_id.clone()]);

        b.signal(&a.peer_id, json!({"kind": "offer", "sdp": "x"}))
            .await
            .unwrap();
        assert_eq!(
            next(&mut a).await,
            ServerMessage::Signal {
                from: b.peer_id.clone(),
                data: json!({"kind": "offer", "sdp": "x"})
            }
        );
        a.signal(&b.peer_id, json!({"kind": "answer"}))
            .await
            .unwrap();
        assert_eq!(
            next(&mut b).await,
            ServerMessage::Signal {
                from: a.peer_id.clone(),
                data: json!({"kind": "answer"})
            }
        );

        // An unknown addressee is a non-fatal error, and the connection goes on.
        b.signal("00000000000000000000000000000000", Value::Null)
            .await
            .unwrap();
        match next(&mut b).await {
            ServerMessage::Error {
                code, fatal, to, ..
            } => {
                assert_eq!(code, ErrorCode::UnknownPeer);
                assert!(!fatal);
                assert_eq!(to.as_deref(), Some("00000000000000000000000000000000"));
            }
            other => panic!("expected an error, got {other:?}"),
        }

        let a_id = a.peer_id.clone();
        a.close().await;
        assert_eq!(
            next(&mut b).await,
            ServerMessage::PeerLeft { peer_id: a_id }
        );

        // The server going away ends the stream.
        let (shut, end) = tokio::join!(
            server.shutdown(),
            tokio::time::timeout(Duration::from_secs(10), b.recv())
        );
        shut.unwrap();
        assert_eq!(end.expect("closed within 10 s"), None);
    }

    #[tokio::test]
    async fn ice_servers_from_the_welcome() {
        let config = ppspp_signal::Config {
            stun_urls: vec!["stun:198.51.100.1:3478".into()],
            turn_urls: vec!["turn:198.51.100.1:3478?transport=udp".into()],
            turn_secret: Some(ppspp_signal::TurnSecret::new("cli-test-secret-0123")),
            ..ppspp_signal::Config::default()
        };
        let server = ppspp_signal::spawn("127.0.0.1:0".parse().unwrap(), config)
            .await
            .unwrap();
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let a = SignalClient::join(&server.url(), SWARM).await.unwrap();
        let servers = a.ice_servers();
        assert_eq!(servers.len(), 2, "{servers:?}");
        assert_eq!(servers[0].urls(), ["stun:198.51.100.1:3478"]);
        assert_eq!(
            (&servers[0].username, &servers[0].credential),
            (&None, &None)
        );
        assert_eq!(servers[1].urls(), ["turn:198.51.100.1:3478?transport=udp"]);
        let username = servers[1].username.as_deref().expect("a TURN username");
        let (expiry, peer) = username.split_once(':').expect("<expiry>:<peer id>");
        assert_eq!(peer, a.peer_id);
        let expiry: u64 = expiry.parse().expect("a Unix time");
        assert!(
            (before + 86_400..=before + 86_400 + 5).contains(&expiry),
            "{expiry}"
        );
        let secret = ppspp_signal::TurnSecret::new("cli-test-secret-0123");
        assert_eq!(
            servers[1].credential.as_deref(),
            Some(ppspp_signal::ice::turn_credential(&secret, username).as_str())
        );
        a.close().await;
        server.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn bad_swarm_and_unreachable_server_are_errors() {
        let server = ppspp_signal::spawn(
            "127.0.0.1:0".parse().unwrap(),
            ppspp_signal::Config::default(),
        )
        .await
        .unwrap();
        let err = SignalClient::join(&server.url(), "NOT-HEX")
            .await
            .err()
            .expect("bad swarm refused");
        assert!(err.to_string().contains("bad-swarm"), "{err}");
        server.shutdown().await.unwrap();

        // A port nobody listens on: bind one, then drop it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = SignalClient::join(&format!("ws://127.0.0.1:{port}/ws"), SWARM)
            .await
            .err()
            .expect("unreachable server");
        assert!(
            err.to_string()
                .contains("cannot reach the signaling server"),
            "{err}"
        );
    }
}
