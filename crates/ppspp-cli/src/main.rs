//! `ppspp`: the native command-line peer. This adapter only parses arguments, does file I/O
//! and prints; all protocol logic lives in the `ppspp` crate.

use clap::{Parser, Subcommand};
use ppspp_cli::presentation::{self, DashCommand, HlsCommand};
use ppspp_cli::{check, fetch, live, root, seed};
use std::error::Error;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "ppspp",
    version,
    about = "Peer-to-peer content delivery with PPSPP (RFC 7574)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the Merkle root hash (the swarm ID) of a file, then its chunk count.
    Root(root::RootArgs),
    /// Say whether a video streams well in a page (WebM or fragmented MP4, segments of a
    /// few seconds); an error for one that cannot.
    Check(check::CheckArgs),
    /// Serve a file to the swarm; prints its swarm URI first.
    Seed(seed::SeedArgs),
    /// Download and verify content from a swarm URI or root hash.
    Fetch(fetch::FetchArgs),
    /// Stream live from stdin (WebM or fragmented MP4), signing every chunk; prints the
    /// live URI first.
    Live(live::LiveArgs),
    /// HLS presentations: `ppspp hls prepare MASTER.m3u8` makes each rendition a swarm.
    Hls {
        #[command(subcommand)]
        command: HlsCommand,
    },
    /// DASH presentations: `ppspp dash prepare MANIFEST.mpd` makes each Representation a
    /// swarm.
    Dash {
        #[command(subcommand)]
        command: DashCommand,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // wss:// signaling's TLS on aws-lc-rs (already here for str0m's DTLS), chosen explicitly
    // so that no other crate's rustls features can leave the choice ambiguous.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    // Each command has its own error type; what the user sees is its message.
    let result: Result<(), Box<dyn Error>> = match cli.command {
        Command::Root(args) => root::run(&args).map_err(Into::into),
        Command::Check(args) => check::run(&args).map_err(Into::into),
        Command::Seed(args) => seed::run(&args).map_err(Into::into),
        Command::Fetch(args) => fetch::run(&args).map_err(Into::into),
        Command::Live(args) => live::run(&args).map_err(Into::into),
        Command::Hls { command } => presentation::run_hls(&command).map_err(Into::into),
        Command::Dash { command } => presentation::run_dash(&command).map_err(Into::into),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("ppspp: error: {message}");
            ExitCode::FAILURE
        }
    }
}
