//! Progress bars on stderr; indicatif hides them when stderr is not a terminal.

use indicatif::{ProgressBar, ProgressStyle};

fn bar(len: u64, verb: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{verb} {{bar:40}} {{bytes}}/{{total_bytes}} {{bytes_per_sec}} eta {{eta}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

pub fn hashing_bar(len: u64) -> ProgressBar {
    bar(len, "hashing    ")
}

pub fn download_bar(len: u64) -> ProgressBar {
    bar(len, "downloading")
}
