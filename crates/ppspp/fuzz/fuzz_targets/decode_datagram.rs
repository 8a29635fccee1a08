//! Decodes arbitrary bytes as a datagram in every chunk addressing method. Decoding must
//! never panic, and the messages decoded before any error must re-encode into a datagram
//! that decodes to the same messages.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ppspp::codec::{ChunkAddressing, CodecConfig, decode_datagram, encode_datagram};

fuzz_target!(|bytes: &[u8]| {
    for addressing in ChunkAddressing::ALL {
        let config = CodecConfig::with_addressing(addressing);
        let Ok(datagram) = decode_datagram(bytes, &config) else {
            continue;
        };
        let mut messages = Vec::new();
        for m in datagram.messages() {
            match m {
                Ok(m) => messages.push(m),
                Err(e) => {
                    assert!(e.offset() <= bytes.len());
                    let _ = e.to_string();
                }
            }
        }
        let mut out = Vec::new();
        encode_datagram(datagram.channel, &messages, &config, &mut out)
            .expect("decoded messages re-encode");
        assert!(out.len() <= bytes.len());
        let again = decode_datagram(&out, &config).expect("re-encoded datagram decodes");
        assert_eq!(again.channel, datagram.channel);
        let again = again
            .collect_messages()
            .expect("re-encoded messages decode");
        assert_eq!(again, messages);
    }
});
