//! What instances send each other over Redis pub/sub: signals and bounced signals to an
//! instance's inbox channel, departures on the channel every instance listens to.

use serde::{Deserialize, Serialize};

/// A message to one instance's inbox (JSON).
#[derive(Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "k", rename_all = "kebab-case")]
pub(crate) enum Inbox {
    /// A client's signal for a peer of the receiving instance.
    Signal {
        from: String,
        to: String,
        swarm: String,
        /// The sender's instance, where a bounce goes.
        reply: String,
        /// The `signal` message as the addressee receives it.
        text: String,
    },
    /// A signal that could not be delivered: the `error` its sender receives.
    Bounce { to: String, text: String },
}

impl Inbox {
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).expect("plain strings serialize")
    }

    pub(crate) fn from_json(text: &str) -> Option<Inbox> {
        serde_json::from_str(text).ok()
    }
}

/// A departure: `"<instance> <swarm> <peer id>"`. The instance that announces it has told its
/// own clients already, and ignores its own message.
pub(crate) fn departure_prefix(instance: &str, swarm: &str) -> String {
    format!("{instance} {swarm} ")
}

/// The parts of a departure message: instance, swarm, peer id.
pub(crate) fn parse_departure(text: &str) -> Option<(&str, &str, &str)> {
    let mut parts = text.split(' ');
    let (instance, swarm, peer) = (parts.next()?, parts.next()?, parts.next()?);
    parts.next().is_none().then_some((instance, swarm, peer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inbox_messages_round_trip() {
        let m = Inbox::Signal {
            from: "a".into(),
            to: "b".into(),
            swarm: "c".into(),
            reply: "d".into(),
            text: r#"{"type":"signal"}"#.into(),
        };
        assert_eq!(Inbox::from_json(&m.to_json()), Some(m));
        let b = Inbox::Bounce {
            to: "a".into(),
            text: "e".into(),
        };
        assert!(b.to_json().contains(r#""k":"bounce""#));
        assert_eq!(Inbox::from_json("{}"), None);
    }

    #[test]
    fn departures_parse() {
        let m = format!("{}{}", departure_prefix("i", "s"), "p");
        assert_eq!(parse_departure(&m), Some(("i", "s", "p")));
        assert_eq!(parse_departure("i s"), None);
        assert_eq!(parse_departure("i s p q"), None);
    }
}
