/**
 * The contract between the Player and what feeds its MediaSource: a file's feed
 * (`vod-feed.ts`) or a live stream's (`live-playback.ts`). The Player owns MediaSource,
 * the video element's events and the timers; a feed decides what to append and when,
 * and where playback and the engine go.
 */
import type { InitInfo } from './container.js';

/** What the Player calls on its feed. */
export interface Feed {
  /** Appends what is ready, as far as MediaSource takes more (called from a task the feed or the Player asked for). */
  feed(): void;
  /** Playback moved on (`timeupdate`). */
  onTimeUpdate(): void;
  /** The Player's periodic look, which comes while playback waits too (no `timeupdate` comes then). */
  onTick(): void;
  /** The video element seeks. */
  onSeeking(): void;
  /**
   * A ManagedMediaSource removed media time `ranges` on its own. True if media ahead of
   * the playhead went and is appended again (a browser eviction, counted in the stats).
   */
  onBrowserEvicted(ranges: [number, number][]): boolean;
  /** The Player is destroyed: nothing more is appended or reported. */
  close(): void;
}

/** The Player's MediaSource, as a feed appends to it. */
export interface MediaSink {
  /** Makes the SourceBuffer for the initialisation segment `info` (throws `mse-unsupported`). */
  start(info: InitInfo): void;
  /** Sets the media's duration (a file's; a live stream has none). */
  setDuration(seconds: number): void;
  /** Whether enough waits to be appended already: more waits for MediaSource to take it. */
  full(): boolean;
  /** Queues `bytes` (whole segments, or the initialisation segment) for MediaSource. */
  append(bytes: Uint8Array): void;
  /** Drops what is queued and what MediaSource is parsing (appending goes on elsewhere). */
  reset(): void;
  /** Resolves once everything queued is appended. */
  idle(): Promise<void>;
  /** Ends the stream if MediaSource is open; false if it refused now (a SourceBuffer still updating). */
  endOfStream(): boolean;
  /** Asks for `feed()` again soon. */
  scheduleFeed(): void;
}
