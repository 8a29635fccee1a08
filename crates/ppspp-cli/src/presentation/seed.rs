//! `ppspp seed NAME.ppspp.json`: every rendition of a prepared presentation served from its
//! files, each its own swarm (engine, WebRTC socket, signaling room), in one process.

use super::error::PresentationSeedError;
use super::manifest::Manifest;
use super::parts_store::PartsStore;
use super::prepare::hash_rendition;
use super::source::SourceRendition;
use crate::seed::{SeedArgs, Served, serve};
use crate::stats::StatsPrinter;
use crate::udp::Clock;
use futures_util::FutureExt;
use ppspp::merkle::{HashAlgorithm, MerkleTree};

pub fn run(args: &SeedArgs) -> Result<(), PresentationSeedError> {
    let manifest = Manifest::read(&args.file)?;
    let sources = super::source_renditions(&args.file, &manifest)?;
    // Hashed again: files that changed since `prepare` would be another swarm than the
    // one pages look for, and serving them would only get the seeder banned.
    let mut ready = Vec::with_capacity(sources.len());
    for (r, src) in manifest.renditions.iter().zip(sources) {
        let hash: HashAlgorithm =
            r.hash
                .parse()
                .map_err(|source| PresentationSeedError::BadHash {
                    id: r.id.clone(),
                    hash: r.hash.clone(),
                    source,
                })?;
        let tree = hash_rendition(&src, hash, r.chunk_size as usize)?;
        if tree.root().to_hex() != r.root {
            return Err(PresentationSeedError::RootChanged {
                id: r.id.clone(),
                root: r.root.clone(),
            });
        }
        let store = PartsStore::open(&src.parts, r.chunk_size as usize)?;
        ready.push(Ready { src, tree, store });
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(PresentationSeedError::Runtime)?;
    runtime.block_on(async {
        let stop = crate::shutdown_signal().shared();
        let clock = Clock::new();
        let metrics = crate::seed::start_metrics(args).await?;
        let mut serving = Vec::new();
        for (i, rendition) in ready.into_iter().enumerate() {
            serving.push(serve_rendition(
                args,
                i,
                rendition,
                &clock,
                metrics.clone(),
                stop.clone(),
            ));
        }
        let results = futures_util::future::join_all(serving).await;
        let failed: Vec<PresentationSeedError> =
            results.into_iter().filter_map(Result::err).collect();
        if failed.is_empty() {
            Ok(())
        } else {
            Err(PresentationSeedError::Renditions(failed))
        }
    })
}

/// A rendition checked against the manifest, ready to serve.
struct Ready {
    src: SourceRendition,
    tree: MerkleTree,
    store: PartsStore,
}

async fn serve_rendition(
    args: &SeedArgs,
    index: usize,
    Ready { src, tree, store }: Ready,
    clock: &Clock,
    metrics: Option<std::sync::Arc<crate::metrics::SeedMetrics>>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), PresentationSeedError> {
    let served = Served {
        name: src.id.clone(),
        uri_prefix: Some(src.id.clone()),
        shown: format!("rendition {} ({} bytes)", src.id, src.length()),
        stats: args.stats_json.then(|| StatsPrinter::for_swarm(&src.id)),
        metrics,
    };
    let changed = serve(args, index, &tree, store, clock, served, stop)
        .await
        .map_err(|source| PresentationSeedError::Serve {
            id: src.id.clone(),
            source,
        })?;
    match changed {
        Some(source) => {
            // Said now: the other renditions go on being served until the process stops.
            let error = PresentationSeedError::Stopped {
                id: src.id.clone(),
                source,
            };
            eprintln!("ppspp: {error}");
            Err(error)
        }
        None => Ok(()),
    }
}
