//! Where a serving command listens, and how it runs its engine there: what `ppspp seed`
//! (a file or a presentation's renditions), `ppspp live` and `ppspp hls|dash live` share.
//! Each binds its UDP socket, joins its room on the signaling server as a seeder, says
//! where it serves, and drives its engine until stopped; only what the engine serves and
//! what its events mean differ.

use std::net::SocketAddr;

use clap::Args;
use ppspp::engine::{ChannelStats, Engine, Event};
use ppspp::store::ChunkStore;
use tokio::net::UdpSocket;

use crate::ice_args::{IceArgs, IceArgsError};

use crate::metrics::SwarmMetrics;
use crate::net::{self, Flow, Links, LiveFeed, Peer};
use crate::rtc::{RtcConfig, RtcError, RtcTransport};
use crate::signal::{JoinAnyError, join_first};
use crate::stats::StatsPrinter;
use crate::udp::{self, Clock};

/// Where to serve: plain UDP, WebRTC through a signaling server, or both.
#[derive(Args, Debug, Clone)]
pub struct ListenArgs {
    /// Serve plain RFC 7574 over UDP on this address (e.g. 127.0.0.1:7000; port 0 picks
    /// one). A presentation's renditions take the ports after it.
    #[arg(long)]
    pub udp: Option<SocketAddr>,
    /// Signaling server for WebRTC peers (ws://HOST:PORT/ws): join the swarm's room there
    /// and answer offers. Several (repeat, or comma-separated): instances of one site's
    /// signaling; the first that answers is used, the next ones when it drops.
    #[arg(long, value_name = "URL", value_delimiter = ',')]
    pub signal: Vec<String>,
    /// Local address of the WebRTC socket, advertised as the host candidate (a specific IP;
    /// port 0 picks one). Default: 127.0.0.1:0, reachable from this machine only.
    #[arg(long)]
    pub bind: Option<SocketAddr>,
    #[command(flatten)]
    pub ice: IceArgs,
}

/// Why a serving command cannot listen where it was told.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "say where to serve: --udp ADDR (e.g. --udp 127.0.0.1:7000) and/or --signal ws://HOST:PORT/ws"
    )]
    Nowhere,
    /// `--udp`'s port plus the swarm's index passes 65535.
    #[error("--udp {base}: no port left for swarm {index}")]
    NoPortLeft { base: SocketAddr, index: usize },
    #[error("cannot bind UDP {addr}: {source}")]
    BindUdp {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The bound UDP socket would not say its address.
    #[error("cannot read the bound address: {0}")]
    LocalAddr(#[source] std::io::Error),
    #[error(transparent)]
    Join(#[from] JoinAnyError),
    #[error(transparent)]
    Ice(#[from] IceArgsError),
    #[error(transparent)]
    Rtc(#[from] RtcError),
}

impl ListenArgs {
    /// Refuses a command given nowhere to serve.
    pub fn check(&self) -> Result<(), ServeError> {
        if self.udp.is_none() && self.signal.is_empty() {
            return Err(ServeError::Nowhere);
        }
        Ok(())
    }

    /// The signaling URL a URI names: the first (the instances share their rooms).
    pub fn signal_url(&self) -> Option<String> {
        self.signal.first().cloned()
    }

    /// Binds swarm number `index`'s UDP socket (a presentation's renditions: the ports
    /// after the given one) and joins `room` as a seeder, for an engine of at most
    /// `max_peers` channels.
    pub async fn open(
        &self,
        index: usize,
        room: &str,
        max_peers: usize,
    ) -> Result<Endpoint, ServeError> {
        let socket = match self.udp {
            Some(a) => {
                let a = udp_for(a, index)?;
                Some(udp::bind(a).map_err(|source| ServeError::BindUdp { addr: a, source })?)
            }
            None => None,
        };
        let mut end = Endpoint {
            socket,
            rtc: None,
            udp: None,
            described: Vec::new(),
        };
        if let Some(s) = &end.socket {
            let local = s.local_addr().map_err(ServeError::LocalAddr)?;
            end.udp = Some(local.to_string());
            end.described.push(format!("udp {local}"));
        }
        if !self.signal.is_empty() {
            let (client, joined) = join_first(&self.signal, 0, room).await?;
            let url = client.url.clone();
            let servers = self.ice.servers(client.ice_servers())?;
            let config = RtcConfig {
                seeder: true,
                max_conns: crate::rtc::max_conns_for(max_peers),
                relay_only: self.ice.relay_only,
                stack: self.ice.webrtc_stack,
                data_batch_bytes: self.ice.data_batch_bytes as usize,
            };
            let bind = self
                .bind
                .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
            let mut t = RtcTransport::bind(bind, client, room, config)?;
            t.fail_over_to(self.signal.clone(), joined);
            t.gather_and_report(&servers).await;
            end.described.push(format!(
                "webrtc {} via {url} (peer {})",
                t.local_addr(),
                t.peer_id().unwrap_or("?")
            ));
            end.rtc = Some(t);
        }
        Ok(end)
    }
}

/// The UDP address of swarm `index`: the given one for the first, the next ports for the
/// others (port 0: each picks one).
pub fn udp_for(base: SocketAddr, index: usize) -> Result<SocketAddr, ServeError> {
    if base.port() == 0 {
        return Ok(base);
    }
    let port = u16::try_from(usize::from(base.port()) + index)
        .map_err(|_| ServeError::NoPortLeft { base, index })?;
    Ok(SocketAddr::new(base.ip(), port))
}

/// A serving command's sockets: its UDP socket and WebRTC transport, and both in words.
pub struct Endpoint {
    socket: Option<UdpSocket>,
    rtc: Option<RtcTransport>,
    /// The UDP address a URI names, if serving over UDP.
    pub udp: Option<String>,
    /// Where it serves, for the "serving … on …" line.
    pub described: Vec<String>,
}

/// What a serving engine reports as it runs.
#[derive(Default)]
pub struct Reports {
    /// `--stats-json` lines.
    pub stats: Option<StatsPrinter>,
    /// `--metrics` figures.
    pub metrics: Option<SwarmMetrics>,
}

impl Endpoint {
    /// Runs `engine` here until `on_event` says stop or `stop` resolves (a live source's
    /// chunks from `live`), then says goodbye to its peers (see [`net::run`]).
    pub async fn run<S: ChunkStore>(
        mut self,
        engine: &mut Engine<Peer, S>,
        clock: &Clock,
        mut reports: Reports,
        live: Option<&mut LiveFeed>,
        on_event: impl FnMut(&mut Engine<Peer, S>, Event<Peer>) -> Flow,
        stop: impl std::future::Future<Output = ()>,
    ) -> Vec<ChannelStats<Peer>> {
        net::run(
            engine,
            Links {
                udp: self.socket.as_ref(),
                rtc: self.rtc.as_mut(),
                origin: None,
                live,
                metrics: reports.metrics.as_mut(),
            },
            clock,
            reports.stats.take(),
            on_event,
            stop,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renditions_take_the_ports_after_the_given_one() {
        let base: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        assert_eq!(udp_for(base, 0).unwrap(), base);
        assert_eq!(udp_for(base, 2).unwrap().port(), 7002);
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        assert_eq!(udp_for(any, 3).unwrap(), any);
        let top: SocketAddr = "127.0.0.1:65535".parse().unwrap();
        assert!(
            udp_for(top, 1)
                .unwrap_err()
                .to_string()
                .contains("no port left")
        );
    }
}
