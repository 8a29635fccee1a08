//! A deterministic discrete-event network simulator that runs many real `ppspp` engines
//! over modelled links (bandwidth, drop-tail queues, propagation delay, loss, jitter),
//! with TCP-like competing flows and poisoning adversaries. See docs/EXPERIMENTS.md.

pub mod adversary;
pub mod bulk;
pub mod link;
pub mod net;
pub mod plot;
pub mod scenario;
pub mod store;
pub mod swarm;
pub mod tcp;
