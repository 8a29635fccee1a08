//! A deterministic discrete-event network simulator that runs many real `ppspp` engines
//! over modelled links (bandwidth, drop-tail or strict-priority queues, propagation
//! delay, loss, jitter), with TCP-like competing flows, constant-rate real-time flows and
//! poisoning adversaries. See docs/EXPERIMENTS.md.

pub mod adversary;
pub mod bulk;
pub mod coexist;
pub mod link;
pub mod multipath;
pub mod net;
pub mod plot;
pub mod priority_queue;
pub mod realtime;
pub mod sampling;
pub mod scenario;
pub mod store;
pub mod swarm;
pub mod tcp;
