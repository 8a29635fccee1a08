//! Server-reflexive and relayed candidates for the native WebRTC peer: a STUN binding to
//! learn the address a NAT gives us, and a TURN allocation (with the signaling server's
//! time-limited credentials) to be reachable through a relay. str0m leaves gathering to
//! the application, so this drives webrtc-rs's sans-IO TURN client (`rtc-turn`, which also
//! does plain STUN bindings) on the peer's one UDP socket.
//!
//! Datagrams from a STUN/TURN server go here first ([`Gatherer::owns`]); what the relay
//! forwards from peers comes back as [`Relayed`] and is fed to str0m as received on the
//! relayed address, and what str0m sends from that address goes out through the relay
//! ([`Gatherer::send_relayed`]).

use bytes::BytesMut;
use ppspp_signal_protocol::IceServer;
use rtc_turn::client::{Client, ClientConfig, Event};
use sansio::Protocol;
use shared::{TaggedBytesMut, TransportContext, TransportMessage, TransportProtocol};
use std::collections::VecDeque;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Instant;

/// A candidate learnt from a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learnt {
    /// Our address as the STUN server saw it (through our NAT).
    ServerReflexive(SocketAddr),
    /// An address on the TURN server that relays to and from us.
    Relayed(SocketAddr),
}

/// Data a peer sent to one of our relayed addresses.
#[derive(Debug)]
pub struct Relayed {
    pub peer: SocketAddr,
    pub relay: SocketAddr,
    pub data: BytesMut,
}

struct Server {
    url: String,
    addr: SocketAddr,
    client: Client,
    /// The relayed address of this server's allocation, once granted.
    relay: Option<SocketAddr>,
    /// What is still awaited from it: a binding answer, and (TURN) an allocation answer.
    awaiting_binding: bool,
    awaiting_allocation: bool,
    /// Allocations asked for again after a stale-nonce answer.
    allocation_retries: u32,
}

/// How often an allocation is asked for again after a stale-nonce answer (RFC 8656
/// §7.3's 438, which a server gives when the nonce it handed out has changed since): the
/// client starts over and so learns the current nonce.
const MAX_ALLOCATION_RETRIES: u32 = 2;

/// Whether an allocation error is the server's stale-nonce answer (rtc-turn reports it as
/// text: "… (error 438: …)").
fn is_stale_nonce(error: &str) -> bool {
    error.contains("(error 438")
}

/// The STUN and TURN clients of one UDP socket.
pub struct Gatherer {
    local: SocketAddr,
    servers: Vec<Server>,
    learnt: VecDeque<Learnt>,
    relayed: VecDeque<Relayed>,
    /// What went wrong, once per server, for the user.
    pub problems: Vec<String>,
}

/// A `stun:`/`turn:` URL's host and port, if it is one this peer can use (UDP).
fn udp_server(url: &str) -> Option<(bool, String)> {
    let (turn, rest) = if let Some(r) = url.strip_prefix("stun:") {
        (false, r)
    } else if let Some(r) = url.strip_prefix("turn:") {
        (true, r)
    } else {
        return None; // stuns:/turns: (TLS) are not supported here
    };
    let (hostport, query) = rest.split_once('?').unwrap_or((rest, ""));
    if query.split('&').any(|kv| kv == "transport=tcp") {
        return None;
    }
    let hostport = if hostport
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        hostport.to_string()
    } else {
        format!("{hostport}:3478")
    };
    Some((turn, hostport))
}

impl Gatherer {
    /// Clients for every usable URL of `servers`, sending from `local`; each asks for our
    /// server-reflexive address, each TURN one also for an allocation.
    pub fn start(local: SocketAddr, servers: &[IceServer], now: Instant) -> Gatherer {
        let mut g = Gatherer {
            local,
            servers: Vec::new(),
            learnt: VecDeque::new(),
            relayed: VecDeque::new(),
            problems: Vec::new(),
        };
        let crypto: Arc<dyn crypto::RTCCryptoProvider> =
            Arc::new(crypto::providers::AwsLcRsProvider::new());
        for server in servers {
            for url in server.urls.as_slice() {
                let Some((turn, hostport)) = udp_server(url) else {
                    continue;
                };
                let addr = match hostport
                    .to_socket_addrs()
                    .map(|mut a| a.find(|a| a.is_ipv4() == local.is_ipv4()))
                {
                    Ok(Some(a)) => a,
                    _ => {
                        g.problems.push(format!("{url}: cannot resolve {hostport}"));
                        continue;
                    }
                };
                let (username, password) = match (turn, &server.username, &server.credential) {
                    (true, Some(u), Some(c)) => (u.clone(), c.clone()),
                    (true, _, _) => {
                        g.problems.push(format!(
                            "{url}: a TURN server needs a username and credential"
                        ));
                        continue;
                    }
                    (false, _, _) => (String::new(), String::new()),
                };
                let config = ClientConfig {
                    stun_serv_addr: addr.to_string(),
                    turn_serv_addr: if turn {
                        addr.to_string()
                    } else {
                        String::new()
                    },
                    local_addr: local,
                    transport_protocol: TransportProtocol::UDP,
                    username,
                    password,
                    ..Default::default()
                };
                let mut client = match Client::new(config, crypto.clone()) {
                    Ok(c) => c,
                    Err(e) => {
                        g.problems.push(format!("{url}: {e}"));
                        continue;
                    }
                };
                let asked = client.send_binding_request(now).map(|_| ()).and_then(|()| {
                    if turn {
                        client.allocate(now).map(|_| ())
                    } else {
                        Ok(())
                    }
                });
                if let Err(e) = asked {
                    g.problems.push(format!("{url}: {e}"));
                    continue;
                }
                g.servers.push(Server {
                    url: url.clone(),
                    addr,
                    client,
                    relay: None,
                    awaiting_binding: true,
                    awaiting_allocation: turn,
                    allocation_retries: 0,
                });
            }
        }
        g
    }

    /// Whether every server has answered (or failed) what it was asked at the start.
    pub fn settled(&self) -> bool {
        self.servers
            .iter()
            .all(|s| !s.awaiting_binding && !s.awaiting_allocation)
    }

    /// Whether a datagram from `from` is a STUN/TURN server's (and so for [`handle`](Self::handle)).
    pub fn owns(&self, from: SocketAddr) -> bool {
        self.servers.iter().any(|s| s.addr == from)
    }

    /// The relayed addresses granted so far.
    pub fn is_relay(&self, addr: SocketAddr) -> bool {
        self.servers.iter().any(|s| s.relay == Some(addr))
    }

    fn tagged(&self, now: Instant, peer: SocketAddr, data: &[u8]) -> TaggedBytesMut {
        TransportMessage {
            now,
            transport: TransportContext {
                local_addr: self.local,
                peer_addr: peer,
                transport_protocol: TransportProtocol::UDP,
                ecn: None,
            },
            message: BytesMut::from(data),
        }
    }

    /// A datagram from server `from`. Every client of that address sees it (a STUN and a
    /// TURN entry may name the same server): each takes the responses to its own requests
    /// and drops the rest.
    pub fn handle(&mut self, now: Instant, from: SocketAddr, data: &[u8]) {
        for i in 0..self.servers.len() {
            if self.servers[i].addr != from {
                continue;
            }
            let msg = self.tagged(now, from, data);
            // A malformed or unexpected message is dropped, as any bad datagram is.
            let _ = self.servers[i].client.handle_read(msg);
            self.collect(now, i);
        }
    }

    fn collect(&mut self, now: Instant, i: usize) {
        while let Some(event) = self.servers[i].client.poll_event() {
            let server = &mut self.servers[i];
            match event {
                Event::BindingResponse(_, srflx) => {
                    server.awaiting_binding = false;
                    let l = Learnt::ServerReflexive(srflx);
                    if !self.learnt.contains(&l) {
                        self.learnt.push_back(l);
                    }
                }
                Event::AllocateResponse(_, relay) => {
                    server.awaiting_allocation = false;
                    server.relay = Some(relay);
                    self.learnt.push_back(Learnt::Relayed(relay));
                }
                Event::AllocateError(_, e) => {
                    let e = e.to_string();
                    if is_stale_nonce(&e)
                        && server.allocation_retries < MAX_ALLOCATION_RETRIES
                        && server.client.allocate(now).is_ok()
                    {
                        server.allocation_retries += 1;
                        continue;
                    }
                    server.awaiting_allocation = false;
                    self.problems
                        .push(format!("{}: allocation refused: {e}", server.url));
                }
                Event::BindingError(_, e) => {
                    server.awaiting_binding = false;
                    self.problems
                        .push(format!("{}: binding failed: {e}", server.url));
                }
                Event::TransactionTimeout(_) => {
                    // Which request timed out does not matter: this server is not answering.
                    if server.awaiting_binding || server.awaiting_allocation {
                        self.problems.push(format!("{}: no answer", server.url));
                    }
                    server.awaiting_binding = false;
                    server.awaiting_allocation = false;
                }
                Event::DataIndicationOrChannelData(_, peer, data) => {
                    if let Some(relay) = server.relay {
                        self.relayed.push_back(Relayed { peer, relay, data });
                    }
                }
                _ => {}
            }
        }
    }

    /// The next candidate learnt.
    pub fn poll_learnt(&mut self) -> Option<Learnt> {
        self.learnt.pop_front()
    }

    /// The next datagram a peer sent us through a relay.
    pub fn poll_relayed(&mut self) -> Option<Relayed> {
        self.relayed.pop_front()
    }

    /// Sends `data` to `peer` through the relay at `relay`; it waits for a permission the
    /// first time (that datagram is lost: ICE retransmits its checks).
    pub fn send_relayed(&mut self, now: Instant, relay: SocketAddr, peer: SocketAddr, data: &[u8]) {
        let Some(server) = self.servers.iter_mut().find(|s| s.relay == Some(relay)) else {
            return;
        };
        if let Ok(mut r) = server.client.relay(relay)
            && matches!(r.create_permission(now, peer), Ok(None))
        {
            let _ = r.send_to(now, data, peer);
        }
    }

    /// The next datagram to send, and to whom.
    pub fn poll_transmit(&mut self) -> Option<(SocketAddr, BytesMut)> {
        for s in &mut self.servers {
            if let Some(t) = s.client.poll_write() {
                return Some((t.transport.peer_addr, t.message));
            }
        }
        None
    }

    pub fn poll_timeout(&mut self) -> Option<Instant> {
        self.servers
            .iter_mut()
            .filter_map(|s| s.client.poll_timeout())
            .min()
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        for i in 0..self.servers.len() {
            let _ = self.servers[i].client.handle_timeout(now);
            self.collect(now, i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_stun_and_turn_urls_are_used_and_the_rest_left_out() {
        assert_eq!(
            udp_server("stun:192.0.2.1:3479"),
            Some((false, "192.0.2.1:3479".into()))
        );
        assert_eq!(
            udp_server("stun:192.0.2.1"),
            Some((false, "192.0.2.1:3478".into()))
        );
        assert_eq!(
            udp_server("turn:turn.example.org?transport=udp"),
            Some((true, "turn.example.org:3478".into()))
        );
        assert_eq!(udp_server("turn:192.0.2.1:3478?transport=tcp"), None);
        assert_eq!(udp_server("turns:192.0.2.1:5349"), None);
        assert_eq!(udp_server("https://example.org"), None);
    }

    #[test]
    fn a_server_that_cannot_be_used_is_a_problem_not_a_failure() {
        let local: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let mut no_credentials = IceServer::new(vec!["turn:127.0.0.1:3478".into()]);
        no_credentials.username = None;
        let unresolvable = IceServer::new(vec!["stun:no-such-host.invalid:3478".into()]);
        let g = Gatherer::start(local, &[no_credentials, unresolvable], Instant::now());
        assert!(g.settled(), "nothing to wait for");
        assert_eq!(g.problems.len(), 2, "{:?}", g.problems);
        assert!(g.problems[0].contains("needs a username and credential"));
        assert!(g.problems[1].contains("cannot resolve"));
    }

    #[test]
    fn a_stun_binding_is_asked_for_and_its_answer_is_a_server_reflexive_candidate() {
        let local: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let server: SocketAddr = "127.0.0.1:3478".parse().unwrap();
        let now = Instant::now();
        let mut g = Gatherer::start(
            local,
            &[IceServer::new(vec!["stun:127.0.0.1:3478".into()])],
            now,
        );
        let (to, request) = g.poll_transmit().expect("a binding request");
        assert_eq!(to, server);
        assert!(!g.settled());
        // The server's answer, built as a STUN server would: same transaction, our address
        // as it saw it.
        let mut req = stun::message::Message::new();
        req.raw = request.to_vec();
        req.decode().unwrap();
        let mapped: SocketAddr = "203.0.113.9:50000".parse().unwrap();
        let mut resp = stun::message::Message::new();
        resp.build(&[
            Box::new(req.transaction_id),
            Box::new(stun::message::BINDING_SUCCESS),
            Box::new(stun::xoraddr::XorMappedAddress {
                ip: mapped.ip(),
                port: mapped.port(),
            }),
        ])
        .unwrap();
        assert!(g.owns(server) && !g.owns(mapped));
        g.handle(now, server, &resp.raw);
        assert_eq!(g.poll_learnt(), Some(Learnt::ServerReflexive(mapped)));
        assert!(g.settled());
    }

    /// A TURN server's answer to request `req` (sent by the gatherer): same transaction,
    /// method Allocate, class `class`, with `attrs`.
    fn answer(
        req: &[u8],
        class: stun::message::MessageClass,
        attrs: Vec<Box<dyn stun::message::Setter>>,
    ) -> Vec<u8> {
        let mut r = stun::message::Message::new();
        r.raw = req.to_vec();
        r.decode().unwrap();
        assert_eq!(r.typ.method, stun::message::METHOD_ALLOCATE, "an Allocate");
        let mut all: Vec<Box<dyn stun::message::Setter>> = vec![
            Box::new(r.transaction_id),
            Box::new(stun::message::MessageType::new(
                stun::message::METHOD_ALLOCATE,
                class,
            )),
        ];
        all.extend(attrs);
        let mut m = stun::message::Message::new();
        m.build(&all).unwrap();
        m.raw
    }

    fn error(code: u16, nonce: &str) -> Vec<Box<dyn stun::message::Setter>> {
        use stun::textattrs::TextAttribute;
        vec![
            Box::new(stun::error_code::ErrorCodeAttribute {
                code: stun::error_code::ErrorCode(code),
                reason: b"test".to_vec(),
            }),
            Box::new(TextAttribute::new(
                stun::attributes::ATTR_REALM,
                "ppspp.test".into(),
            )),
            Box::new(TextAttribute::new(
                stun::attributes::ATTR_NONCE,
                nonce.into(),
            )),
        ]
    }

    /// The next Allocate the gatherer sends (a binding request may come first).
    fn next_allocate(g: &mut Gatherer) -> Vec<u8> {
        while let Some((_, bytes)) = g.poll_transmit() {
            let mut m = stun::message::Message::new();
            m.raw = bytes.to_vec();
            m.decode().unwrap();
            if m.typ.method == stun::message::METHOD_ALLOCATE {
                return bytes.to_vec();
            }
        }
        panic!("no Allocate request sent");
    }

    /// A gatherer with one TURN server (and its credentials); the server's address.
    fn turn_gatherer() -> (Gatherer, SocketAddr, Instant) {
        let local: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let now = Instant::now();
        let mut turn = IceServer::new(vec!["turn:127.0.0.1:3478".into()]);
        turn.username = Some("u".into());
        turn.credential = Some("p".into());
        let g = Gatherer::start(local, &[turn], now);
        (g, "127.0.0.1:3478".parse().unwrap(), now)
    }

    #[test]
    fn a_stale_nonce_answer_to_the_allocation_is_asked_again_and_then_granted() {
        let (mut g, server, now) = turn_gatherer();
        let unauthorized = stun::message::CLASS_ERROR_RESPONSE;
        // The anonymous attempt is told the realm and nonce; the signed one is told the
        // nonce went stale (the server's session changed in between).
        let attempt = next_allocate(&mut g);
        g.handle(
            now,
            server,
            &answer(&attempt, unauthorized, error(401, "n1")),
        );
        let signed = next_allocate(&mut g);
        g.handle(
            now,
            server,
            &answer(&signed, unauthorized, error(438, "n2")),
        );
        assert!(g.problems.is_empty(), "{:?}", g.problems);
        assert!(!g.settled(), "the allocation is still awaited");
        // It starts over, learns the current nonce, and the allocation is granted.
        let again = next_allocate(&mut g);
        g.handle(now, server, &answer(&again, unauthorized, error(401, "n2")));
        let signed = next_allocate(&mut g);
        let relay: SocketAddr = "127.0.0.1:49152".parse().unwrap();
        let granted = answer(
            &signed,
            stun::message::CLASS_SUCCESS_RESPONSE,
            vec![
                Box::new(rtc_turn::proto::relayaddr::RelayedAddress {
                    ip: relay.ip(),
                    port: relay.port(),
                }),
                Box::new(rtc_turn::proto::lifetime::Lifetime(
                    std::time::Duration::from_secs(600),
                )),
            ],
        );
        g.handle(now, server, &granted);
        let learnt: Vec<Learnt> = std::iter::from_fn(|| g.poll_learnt()).collect();
        assert!(learnt.contains(&Learnt::Relayed(relay)), "{learnt:?}");
        assert!(g.problems.is_empty(), "{:?}", g.problems);
    }

    #[test]
    fn stale_nonce_answers_without_end_are_a_problem_after_a_few_tries() {
        let (mut g, server, now) = turn_gatherer();
        let err = stun::message::CLASS_ERROR_RESPONSE;
        for round in 0..=MAX_ALLOCATION_RETRIES {
            let attempt = next_allocate(&mut g);
            g.handle(now, server, &answer(&attempt, err, error(401, "n")));
            let signed = next_allocate(&mut g);
            g.handle(now, server, &answer(&signed, err, error(438, "n")));
            assert_eq!(g.problems.is_empty(), round < MAX_ALLOCATION_RETRIES);
        }
        assert!(
            g.problems[0].contains("allocation refused"),
            "{:?}",
            g.problems
        );
    }
}
