//! A client of the signaling protocol (docs/SIGNALING.md, version 1): join a swarm's room,
//! learn a sample of its peers, relay opaque `data` to and from them.

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async};

/// The protocol version this client speaks.
pub const VERSION: u64 = 1;

/// How long connecting and joining may take before we give up.
const JOIN_TIMEOUT: Duration = Duration::from_secs(10);

/// What the server told us.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerMsg {
    /// A relayed `signal` from another peer of the room.
    Signal { from: String, data: Value },
    /// A peer of the room left.
    PeerLeft { peer_id: String },
    /// An error; after a fatal one the server closes the connection.
    Error {
        code: String,
        message: String,
        fatal: bool,
    },
}

/// A joined connection to a signaling server.
pub struct SignalClient {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    /// Our peer id, assigned by the server.
    pub peer_id: String,
    /// The sample of peers already in the room when we joined.
    pub peers: Vec<String>,
}

impl SignalClient {
    /// Connects to `url` and joins the room of `swarm` (lowercase hex root).
    pub async fn join(url: &str, swarm: &str) -> Result<SignalClient, String> {
        match tokio::time::timeout(JOIN_TIMEOUT, Self::join_inner(url, swarm)).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "signaling server {url} did not answer within {} s",
                JOIN_TIMEOUT.as_secs()
            )),
        }
    }

    async fn join_inner(url: &str, swarm: &str) -> Result<SignalClient, String> {
        let (mut ws, _) = connect_async(url)
            .await
            .map_err(|e| format!("cannot reach the signaling server {url}: {e}"))?;
        let join = json!({"type": "join", "v": VERSION, "swarm": swarm});
        ws.send(Message::text(join.to_string()))
            .await
            .map_err(|e| format!("signaling server {url}: cannot send join: {e}"))?;
        loop {
            let msg = match ws.next().await {
                Some(Ok(m)) => m,
                Some(Err(e)) => return Err(format!("signaling server {url}: {e}")),
                None => return Err(format!("signaling server {url} closed before welcome")),
            };
            let Message::Text(text) = msg else {
                if let Message::Close(_) = msg {
                    return Err(format!("signaling server {url} closed before welcome"));
                }
                continue;
            };
            let v: Value = serde_json::from_str(text.as_str())
                .map_err(|e| format!("signaling server {url} sent bad JSON: {e}"))?;
            match v.get("type").and_then(Value::as_str) {
                Some("welcome") => {
                    let peer_id = v
                        .get("peer_id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| format!("signaling server {url}: welcome without peer_id"))?
                        .to_string();
                    let peers = v
                        .get("peers")
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .filter_map(|p| p.as_str().map(str::to_string))
                                .collect()
                        })
                        .unwrap_or_default();
                    return Ok(SignalClient { ws, peer_id, peers });
                }
                Some("error") => {
                    let code = v.get("code").and_then(Value::as_str).unwrap_or("?");
                    let message = v.get("message").and_then(Value::as_str).unwrap_or("");
                    return Err(format!(
                        "signaling server {url} refused to join: {code}: {message}"
                    ));
                }
                // Anything else before the welcome is ignored (forward compatible).
                _ => {}
            }
        }
    }

    /// Relays `data` to peer `to`.
    pub async fn signal(&mut self, to: &str, data: Value) -> Result<(), String> {
        let msg = json!({"type": "signal", "to": to, "data": data});
        self.ws
            .send(Message::text(msg.to_string()))
            .await
            .map_err(|e| format!("signaling: cannot send: {e}"))
    }

    /// The next message from the server; `None` once the connection is closed. Cancel-safe.
    pub async fn recv(&mut self) -> Option<ServerMsg> {
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
            let Ok(v) = serde_json::from_str::<Value>(text.as_str()) else {
                continue;
            };
            if let Some(m) = parse_server_msg(&v) {
                return Some(m);
            }
        }
    }

    /// Leaves the room and closes the connection.
    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}

/// Parses one server message; `None` for types this client does not act on.
fn parse_server_msg(v: &Value) -> Option<ServerMsg> {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    match v.get("type")?.as_str()? {
        "signal" => Some(ServerMsg::Signal {
            from: s("from")?,
            data: v.get("data").cloned().unwrap_or(Value::Null),
        }),
        "peer-left" => Some(ServerMsg::PeerLeft {
            peer_id: s("peer_id")?,
        }),
        "error" => Some(ServerMsg::Error {
            code: s("code").unwrap_or_default(),
            message: s("message").unwrap_or_default(),
            fatal: v.get("fatal").and_then(Value::as_bool).unwrap_or(false),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWARM: &str = "c89800bfc82ed01ed6e3bfd5408c51274491f7d4";

    async fn next(c: &mut SignalClient) -> ServerMsg {
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
        let mut b = SignalClient::join(&url, SWARM).await.unwrap();
        assert_eq!(b.peers, vec![a.peer_id.clone()]);

        b.signal(&a.peer_id, json!({"kind": "offer", "sdp": "x"}))
            .await
            .unwrap();
        assert_eq!(
            next(&mut a).await,
            ServerMsg::Signal {
                from: b.peer_id.clone(),
                data: json!({"kind": "offer", "sdp": "x"})
            }
        );
        a.signal(&b.peer_id, json!({"kind": "answer"}))
            .await
            .unwrap();
        assert_eq!(
            next(&mut b).await,
            ServerMsg::Signal {
                from: a.peer_id.clone(),
                data: json!({"kind": "answer"})
            }
        );

        // An unknown addressee is a non-fatal error, and the connection goes on.
        b.signal("00000000000000000000000000000000", Value::Null)
            .await
            .unwrap();
        match next(&mut b).await {
            ServerMsg::Error { code, fatal, .. } => {
                assert_eq!(code, "unknown-peer");
                assert!(!fatal);
            }
            other => panic!("expected an error, got {other:?}"),
        }

        let a_id = a.peer_id.clone();
        a.close().await;
        assert_eq!(next(&mut b).await, ServerMsg::PeerLeft { peer_id: a_id });

        // The server going away ends the stream.
        let (shut, end) = tokio::join!(
            server.shutdown(),
            tokio::time::timeout(Duration::from_secs(10), b.recv())
        );
        shut.unwrap();
        assert_eq!(end.expect("closed within 10 s"), None);
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
        assert!(err.contains("bad-swarm"), "{err}");
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
        assert!(err.contains("cannot reach the signaling server"), "{err}");
    }
}
