//! Rooms in Redis, shared by every instance that serves one site (`--redis`).
//!
//! Each instance keeps its own clients in a [`Registry`] (their queues, and which peer ids
//! each knows) and puts what the other instances need in Redis:
//! - a room is a sorted set of peer ids scored by expiry, so `join` enforces
//!   `max_peers_per_room` across instances and samples the whole room;
//! - a peer id's key names the instance its client is on, so a signal to it is published
//!   on that instance's inbox channel;
//! - every instance refreshes its peers' expiry every third of `peer_ttl`, and puts them
//!   back if Redis lost them (a restart). The peers of an instance that died expire, and
//!   whoever next refreshes or joins their room removes them and announces their departure;
//! - departures go out on one channel that every instance listens to, and each tells its
//!   own clients that knew the peer.
//!
//! The Lua scripts make each step one atomic round trip. They build some key names
//! themselves, so a Redis Cluster is not supported: use one Redis (with a replica and
//! Sentinel for failover, if needed). `ZRANDMEMBER` needs Redis 6.2 or newer.

mod inbox;

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::{ConnectionManager, ConnectionManagerConfig, PubSubStream};
use redis::{RedisError, RedisResult, Script};
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinHandle;
use tokio::time::timeout;

use crate::locality::{self, Locality};
use crate::metrics::Metrics;
use crate::protocol::{ErrorCode, undelivered};
use crate::redis_config::RedisConfig;
use crate::registry::{
    Admission, JoinRefused, Limits, NotHere, Outbound, PeerKey, Registry, Relayed, Removed,
    new_peer_key, parse_peer_id, peer_id_hex, room_full,
};
use inbox::{Inbox, departure_prefix, parse_departure};

/// How long a Redis command or connection attempt may take before it counts as failed.
const REDIS_TIMEOUT: Duration = Duration::from_secs(2);

/// How often a refresh is tried while Redis does not answer.
const DOWN_RETRY: Duration = Duration::from_millis(250);

/// Peer ids refreshed by one script call: bounds how long one call holds Redis.
const REFRESH_BATCH: usize = 512;

/// Back-off between attempts to subscribe again.
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

struct Scripts {
    join: Script,
    refresh: Script,
    leave: Script,
    relay: Script,
}

/// Key and channel names, all under the configured prefix.
struct Names {
    prefix: String,
    /// This instance's random id.
    instance: String,
}

impl Names {
    fn room(&self, swarm: &str) -> String {
        format!("{}:room:{swarm}", self.prefix)
    }

    /// The room's localities (the key the scripts' sweep derives from the room's).
    fn localities(&self, swarm: &str) -> String {
        format!("{}:loc", self.room(swarm))
    }

    fn peer_prefix(&self) -> String {
        format!("{}:peer:", self.prefix)
    }

    fn peer(&self, id: &str) -> String {
        format!("{}:peer:{id}", self.prefix)
    }

    /// A peer key's value: where its client is, and in which room.
    fn whereabouts(&self, swarm: &str) -> String {
        format!("{} {swarm}", self.instance)
    }

    fn inbox_prefix(&self) -> String {
        format!("{}:inbox:", self.prefix)
    }

    fn inbox_of(&self, instance: &str) -> String {
        format!("{}:inbox:{instance}", self.prefix)
    }

    fn departures(&self) -> String {
        format!("{}:left", self.prefix)
    }
}

struct Node {
    registry: Registry,
    client: redis::Client,
    con: ConnectionManager,
    names: Names,
    ttl: Duration,
    scripts: Scripts,
    /// Whether the last refresh reached Redis.
    up: AtomicBool,
    /// Whether this instance's inbox is subscribed: until it is, signals to its clients
    /// would be lost, so it takes no joins.
    subscribed: AtomicBool,
    /// Wakes the refresher at once: the subscriber reconnected, and Redis may have
    /// restarted empty.
    resync: Notify,
    /// Tells the subscriber to subscribe again: Redis no longer lists its subscription.
    resubscribe: Notify,
    metrics: Arc<Metrics>,
}

/// The Redis-backed rooms of one instance.
pub(crate) struct Cluster {
    node: Arc<Node>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn unavailable() -> JoinRefused {
    JoinRefused(
        ErrorCode::Unavailable,
        "the server cannot reach its room store; try again, or another server".into(),
    )
}

fn timed_out(what: &str) -> RedisError {
    io::Error::new(io::ErrorKind::TimedOut, format!("{what} timed out")).into()
}

impl Cluster {
    /// Connects to Redis and subscribes this instance's channels. Fails if Redis cannot
    /// be reached now, or is older than 6.2; once running, outages are waited out.
    pub(crate) async fn connect(
        config: &RedisConfig,
        limits: Limits,
        metrics: Arc<Metrics>,
    ) -> io::Result<Cluster> {
        let url = config.redacted_url();
        let cannot = |e: &dyn std::fmt::Display| {
            io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!("cannot use Redis at {url}: {e}"),
            )
        };
        let client = redis::Client::open(config.url.as_str()).map_err(|e| cannot(&e))?;
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(REDIS_TIMEOUT))
            .set_response_timeout(Some(REDIS_TIMEOUT))
            .set_number_of_retries(2)
            .set_max_delay(MAX_BACKOFF);
        let mut con = timeout(
            REDIS_TIMEOUT * 2,
            client.get_connection_manager_with_config(manager),
        )
        .await
        .map_err(|_| cannot(&"connecting timed out"))?
        .map_err(|e| cannot(&e))?;
        let probe: RedisResult<Vec<String>> = redis::cmd("ZRANDMEMBER")
            .arg(format!("{}:probe", config.key_prefix))
            .arg(1)
            .query_async(&mut con)
            .await;
        probe.map_err(|e| cannot(&format!("{e} (Redis 6.2 or newer is needed)")))?;
        let names = Names {
            prefix: config.key_prefix.clone(),
            instance: peer_id_hex(new_peer_key()),
        };
        let node = Arc::new(Node {
            registry: Registry::new(limits),
            client,
            con,
            names,
            ttl: config.peer_ttl,
            scripts: Scripts {
                join: Script::new(concat!(
                    include_str!("prelude.lua"),
                    include_str!("join.lua")
                )),
                refresh: Script::new(concat!(
                    include_str!("prelude.lua"),
                    include_str!("refresh.lua")
                )),
                leave: Script::new(include_str!("leave.lua")),
                relay: Script::new(include_str!("relay.lua")),
            },
            up: AtomicBool::new(true),
            subscribed: AtomicBool::new(false),
            resync: Notify::new(),
            resubscribe: Notify::new(),
            metrics,
        });
        // Subscribed before the first welcome, so no signal to a client here is lost.
        let (ready, subscribed) = oneshot::channel();
        let subscriber = tokio::spawn(subscriber(node.clone(), ready));
        match timeout(REDIS_TIMEOUT * 2, subscribed).await {
            Ok(Ok(())) => {}
            _ => {
                subscriber.abort();
                return Err(cannot(&"subscribing failed"));
            }
        }
        let refresher = tokio::spawn(refresher(node.clone()));
        tracing::info!(instance = %node.names.instance, redis = %url, "rooms are in Redis");
        Ok(Cluster {
            node,
            tasks: vec![subscriber, refresher],
        })
    }

    pub(crate) fn registry(&self) -> &Registry {
        &self.node.registry
    }

    /// Whether Redis answers and this instance's subscription stands (for `/health`).
    pub(crate) fn is_up(&self) -> bool {
        self.node.up.load(Ordering::Relaxed) && self.node.subscribed.load(Ordering::Relaxed)
    }

    /// Admits a new peer at `at` to `swarm`'s room (all instances' peers count towards its
    /// limit), with a sample of the whole room: the closest of a random draw of
    /// candidates (`Limits::candidates`), after the places drawn at random.
    pub(crate) async fn join(&self, swarm: &str, at: &Locality) -> Result<Admission, JoinRefused> {
        let node = &self.node;
        let lim = *node.registry.limits();
        node.registry.may_open(swarm)?;
        if !node.subscribed.load(Ordering::Relaxed) {
            return Err(unavailable());
        }
        let names = &node.names;
        let room = names.room(swarm);
        let whereabouts = names.whereabouts(swarm);
        let departure = departure_prefix(&names.instance, swarm);
        // A drawn id is taken only by astronomical chance; a few draws settle it.
        for _ in 0..4 {
            let key = new_peer_key();
            let id = peer_id_hex(key);
            type Answer = (String, Vec<String>, Vec<String>, Vec<Option<String>>, u64);
            let answer: RedisResult<Answer> = node
                .metrics
                .redis(
                    "join",
                    node.scripts
                        .join
                        .key(&room)
                        .key(names.peer(&id))
                        .key(names.localities(swarm))
                        .arg(&id)
                        .arg(&whereabouts)
                        .arg(node.ttl_ms())
                        .arg(lim.max_peers_per_room)
                        .arg(lim.candidates())
                        .arg(names.departures())
                        .arg(&departure)
                        .arg(at.tag())
                        .invoke_async(&mut node.con.clone()),
                )
                .await;
            let (status, expired, candidates, tags, size) =
                answer.map_err(|e| node.unavailable("join", &e))?;
            node.expired(swarm, &expired);
            match status.as_str() {
                "ok" => {
                    let held = usize::try_from(size).unwrap_or(usize::MAX) < lim.p2p_min_peers;
                    let candidates: Vec<(PeerKey, Locality)> =
                        if held { Vec::new() } else { candidates }
                            .iter()
                            .zip(tags.iter().map(Some).chain(std::iter::repeat(None)))
                            .filter_map(|(s, tag)| {
                                let k = parse_peer_id(s).filter(|k| *k != key)?;
                                let at = tag.and_then(Option::as_deref).map(Locality::from_tag);
                                Some((k, at.unwrap_or_default()))
                            })
                            .collect();
                    let sample = locality::sample(
                        at,
                        &candidates,
                        lim.sample_size,
                        lim.random_places,
                        &mut rand::rng(),
                    );
                    let mailbox = node.registry.admit(swarm, key, &sample, at.clone());
                    return Ok(Admission {
                        key,
                        mailbox,
                        sample,
                        held,
                    });
                }
                "full" => return Err(room_full(lim.max_peers_per_room)),
                _ => {}
            }
        }
        Err(JoinRefused(
            ErrorCode::Unavailable,
            "no free peer id could be drawn; try again".into(),
        ))
    }

    /// Delivers a signal to a peer here, or publishes it to the addressee's instance.
    pub(crate) async fn relay(&self, from: PeerKey, to: PeerKey, text: Outbound) -> Relayed {
        let node = &self.node;
        let NotHere { swarm } = match node.registry.relay(from, to, text.clone()) {
            Ok(done) => return done,
            Err(elsewhere) => elsewhere,
        };
        let to_id = peer_id_hex(to);
        let message = Inbox::Signal {
            from: peer_id_hex(from),
            to: to_id.clone(),
            swarm: swarm.to_string(),
            reply: node.names.instance.clone(),
            text: text.to_string(),
        }
        .to_json();
        let published: RedisResult<i64> = node
            .metrics
            .redis(
                "relay",
                node.scripts
                    .relay
                    .key(node.names.peer(&to_id))
                    .arg(&*swarm)
                    .arg(node.names.inbox_prefix())
                    .arg(message)
                    .invoke_async(&mut node.con.clone()),
            )
            .await;
        match published {
            Ok(n) if n > 0 => {
                node.registry.learned(from, to);
                Relayed::Delivered
            }
            Ok(_) => Relayed::UnknownPeer,
            Err(e) => {
                tracing::warn!(error = %e, "Redis did not take a signal");
                Relayed::Unavailable
            }
        }
    }

    /// Removes a peer here and announces it to every instance.
    pub(crate) async fn leave(&self, key: PeerKey) {
        let removed = self.node.registry.leave(key);
        self.node.forget(removed).await;
    }
}

impl Node {
    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX)
    }

    fn unavailable(&self, what: &str, e: &RedisError) -> JoinRefused {
        tracing::warn!(error = %e, "Redis did not answer a {what}");
        unavailable()
    }

    /// Takes removed peers out of Redis and announces them. Failures are left to expiry.
    async fn forget(&self, removed: Vec<Removed>) {
        for (key, swarm) in removed {
            let id = peer_id_hex(key);
            let message = format!("{}{id}", departure_prefix(&self.names.instance, &swarm));
            let done: RedisResult<i64> = self
                .metrics
                .redis(
                    "leave",
                    self.scripts
                        .leave
                        .key(self.names.room(&swarm))
                        .key(self.names.peer(&id))
                        .key(self.names.localities(&swarm))
                        .arg(&id)
                        .arg(self.names.whereabouts(&swarm))
                        .arg(self.names.departures())
                        .arg(message)
                        .invoke_async(&mut self.con.clone()),
                )
                .await;
            if let Err(e) = done {
                tracing::debug!(peer = %id, error = %e, "leave not recorded; the peer expires instead");
            }
        }
    }

    /// Peers of `swarm` a script of ours found expired (and announced to the others):
    /// tells the clients here.
    fn expired(self: &Arc<Self>, swarm: &str, ids: &[String]) {
        for key in ids.iter().filter_map(|id| parse_peer_id(id)) {
            self.departed(swarm, key);
        }
    }

    fn departed(self: &Arc<Self>, swarm: &str, key: PeerKey) {
        let removed = self.registry.departed(swarm, key);
        if !removed.is_empty() {
            let node = self.clone();
            tokio::spawn(async move { node.forget(removed).await });
        }
    }

    fn on_message(self: &Arc<Self>, channel: &str, payload: &str) {
        if channel == self.names.departures() {
            if let Some((instance, swarm, peer)) = parse_departure(payload)
                && instance != self.names.instance
                && let Some(key) = parse_peer_id(peer)
            {
                self.departed(swarm, key);
            }
            return;
        }
        match Inbox::from_json(payload) {
            Some(Inbox::Signal {
                from,
                to,
                swarm,
                reply,
                text,
            }) => {
                let (Some(f), Some(t)) = (parse_peer_id(&from), parse_peer_id(&to)) else {
                    return;
                };
                let error = match self.registry.deliver(f, t, &swarm, text.into()) {
                    Relayed::Delivered => return,
                    Relayed::UnknownPeer | Relayed::Unavailable => {
                        undelivered(ErrorCode::UnknownPeer, "no such peer in this room", to)
                    }
                    Relayed::Busy(why) => undelivered(ErrorCode::PeerBusy, why.explain(), to),
                };
                let bounce = Inbox::Bounce {
                    to: from,
                    text: error.to_json(),
                };
                let node = self.clone();
                tokio::spawn(async move {
                    let channel = node.names.inbox_of(&reply);
                    let mut publish = redis::cmd("PUBLISH");
                    publish.arg(channel).arg(bounce.to_json());
                    let sent: RedisResult<i64> = node
                        .metrics
                        .redis("bounce", publish.query_async(&mut node.con.clone()))
                        .await;
                    if let Err(e) = sent {
                        tracing::debug!(error = %e, "bounce not sent");
                    }
                });
            }
            Some(Inbox::Bounce { to, text }) => {
                if let Some(key) = parse_peer_id(&to) {
                    self.registry.notify(key, text.into());
                }
            }
            None => tracing::debug!("unreadable inbox message ignored"),
        }
    }

    /// Refreshes every peer here, sweeps their rooms, and checks the subscription.
    /// `false` if Redis did not answer.
    async fn refresh(self: &Arc<Self>) -> bool {
        for (swarm, ids) in self.registry.snapshot() {
            for batch in ids.chunks(REFRESH_BATCH) {
                let mut call = self.scripts.refresh.prepare_invoke();
                call.key(self.names.room(&swarm))
                    .key(self.names.localities(&swarm))
                    .arg(self.ttl_ms())
                    .arg(self.names.peer_prefix())
                    .arg(self.names.whereabouts(&swarm))
                    .arg(self.names.departures())
                    .arg(departure_prefix(&self.names.instance, &swarm));
                for (key, tag) in batch {
                    call.arg(peer_id_hex(*key)).arg(tag);
                }
                let expired: Vec<String> = match self
                    .metrics
                    .redis("refresh", call.invoke_async(&mut self.con.clone()))
                    .await
                {
                    Ok(expired) => expired,
                    Err(e) => {
                        tracing::debug!(error = %e, "refresh failed");
                        return false;
                    }
                };
                self.expired(&swarm, &expired);
                // Peers that left while the script ran were just put back: remove them again.
                let gone: Vec<Removed> = batch
                    .iter()
                    .filter(|(k, _)| !self.registry.contains(*k))
                    .map(|(k, _)| (*k, swarm.clone()))
                    .collect();
                self.forget(gone).await;
            }
        }
        let mut numsub = redis::cmd("PUBSUB");
        numsub
            .arg("NUMSUB")
            .arg(self.names.inbox_of(&self.names.instance));
        let listeners: RedisResult<(String, i64)> = self
            .metrics
            .redis(
                "subscription-check",
                numsub.query_async(&mut self.con.clone()),
            )
            .await;
        match listeners {
            Ok((_, 0)) => {
                tracing::warn!("Redis lost this instance's subscription; subscribing again");
                // Wakes the subscriber only if it waits on a subscription now; a permit
                // kept for later would end the next, good one.
                self.resubscribe.notify_waiters();
                true
            }
            Ok(_) => true,
            Err(_) => false,
        }
    }
}

async fn subscribe(node: &Node) -> RedisResult<PubSubStream> {
    let mut pubsub = timeout(REDIS_TIMEOUT, node.client.get_async_pubsub())
        .await
        .map_err(|_| timed_out("connecting for pub/sub"))??;
    timeout(REDIS_TIMEOUT, async {
        pubsub
            .subscribe(node.names.inbox_of(&node.names.instance))
            .await?;
        pubsub.subscribe(node.names.departures()).await
    })
    .await
    .map_err(|_| timed_out("subscribing"))??;
    Ok(pubsub.into_on_message())
}

/// Listens to this instance's inbox and the departures, and subscribes again whenever the
/// subscription is lost.
async fn subscriber(node: Arc<Node>, ready: oneshot::Sender<()>) {
    let mut ready = Some(ready);
    let mut backoff = MIN_BACKOFF;
    loop {
        match subscribe(&node).await {
            Ok(mut stream) => {
                backoff = MIN_BACKOFF;
                node.subscribed.store(true, Ordering::Relaxed);
                match ready.take() {
                    Some(ready) => {
                        let _ = ready.send(());
                    }
                    None => {
                        tracing::info!("subscribed to Redis again");
                        node.resync.notify_one();
                    }
                }
                loop {
                    tokio::select! {
                        message = stream.next() => match message {
                            Some(m) => {
                                if let Ok(payload) = m.get_payload::<String>() {
                                    node.on_message(m.get_channel_name(), &payload);
                                }
                            }
                            None => break,
                        },
                        _ = node.resubscribe.notified() => break,
                    }
                }
                node.subscribed.store(false, Ordering::Relaxed);
                tracing::warn!("the Redis subscription ended; subscribing again");
            }
            Err(e) => tracing::debug!(error = %e, "cannot subscribe to Redis"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Refreshes this instance's peers every third of the peer ttl, at once after the
/// subscription came back, and every `DOWN_RETRY` while Redis does not answer, so that
/// peers whose keys expired meanwhile are found again soon after it does.
async fn refresher(node: Arc<Node>) {
    let mut tick = tokio::time::interval(node.ttl / 3);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let down = !node.up.load(Ordering::Relaxed);
        tokio::select! {
            _ = tick.tick() => {}
            _ = node.resync.notified() => {}
            _ = tokio::time::sleep(DOWN_RETRY), if down => {}
        }
        let up = node.refresh().await;
        if node.up.swap(up, Ordering::Relaxed) != up {
            if up {
                tracing::info!("Redis answers again");
            } else {
                tracing::warn!("Redis does not answer: joins are refused until it does");
            }
        }
    }
}
