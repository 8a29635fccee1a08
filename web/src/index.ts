/**
 * ppspp-web: peer-to-peer video for web pages over PPSPP (RFC 7574).
 *
 * ```ts
 * import { Player } from 'ppspp-web';
 * const player = await Player.attach(video, 'ppspp://…?len=…&signal=ws://…');
 * player.on('stats', (s) => console.log(s.downloadBps, s.offload));
 * ```
 */
export { Player, type PlayerEvents, type PlayerStats, type StartupTimes } from './player.js';
export type { Stall, StallCause } from './media/stall-watch.js';
export type { LiveJoin } from './media/live-feed.js';
export { Peer, type PeerEvents, type SeedOptions, type FetchOptions } from './peer.js';
export { PpsppError, type ErrorCode } from './errors.js';
export type { PeerOptions, PlayerOptions, HttpOriginOptions, PresentationOptions } from './options.js';
export {
  Presentation, type PresentationEvents, type PresentationStats, type RenditionStats, type LoadOutcome,
} from './presentation/presentation.js';
export type { Manifest, Rendition, ManifestPart, SegmentRef } from './presentation/manifest.js';
export type { LiveManifest, LiveRenditionEntry, LivePartEntry, LiveInit } from './presentation/live-manifest.js';
export type { LiveSegmentRef } from './presentation/live-delivery.js';
export type { SelectedPair } from './connections.js';
export type { SwarmStats, PeerChannelStats, SwarmEvents } from './swarm.js';
export type { ContentInfo, EngineStats, ChannelStats } from './wasm.js';
export { loadWasm } from './wasm.js';
export { clearSavedChunks, type StorageFallback, type StorageFallbackReason } from './saved-chunks.js';
