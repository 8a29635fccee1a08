//! Shared by the integration tests: the known-answer vectors and
//! a virtual network that drives any [`ppspp::engine::SansIo`] peer.
#![allow(dead_code, unused_imports)]

pub mod engines;
mod vectors;
pub mod virtual_net;

pub use vectors::*;
