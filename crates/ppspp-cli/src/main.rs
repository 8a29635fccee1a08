//! `ppspp`: the native command-line peer. This adapter only parses arguments, does file I/O
//! and prints; all protocol logic lives in the `ppspp` crate.

mod root;

use clap::{Parser, Subcommand};
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Root(args) => root::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("ppspp: error: {message}");
            ExitCode::FAILURE
        }
    }
}
