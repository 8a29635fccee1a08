/**
 * A feed's MediaSink that records what the feed does with it, in place of the Player's
 * MediaSource and append queue. The queued appends are done (`idle()` resolves) when the
 * test says so.
 */
import type { InitInfo } from '../../src/media/container.js';
import type { MediaSink } from '../../src/media/feed.js';
import { later } from './tasks.js';

export class FakeMediaSink implements MediaSink {
  /** The initialisation segments a SourceBuffer was made for. */
  readonly started: InitInfo[] = [];
  readonly durations: number[] = [];
  /** The bytes appended, in order. */
  readonly appends: Uint8Array[] = [];
  resets = 0;
  endOfStreamCalls = 0;
  /** What `endOfStream()` answers (false: MediaSource refused, a SourceBuffer updating). */
  endOfStreamTakes = true;
  /** Times the feed asked to be called again. */
  feedsAsked = 0;
  /** What `full()` answers. */
  isFull = false;
  private readonly idleWaiters: (() => void)[] = [];

  start(info: InitInfo): void {
    this.started.push(info);
  }

  setDuration(seconds: number): void {
    this.durations.push(seconds);
  }

  full(): boolean {
    return this.isFull;
  }

  append(bytes: Uint8Array): void {
    this.appends.push(bytes);
  }

  reset(): void {
    this.resets += 1;
  }

  idle(): Promise<void> {
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  endOfStream(): boolean {
    this.endOfStreamCalls += 1;
    return this.endOfStreamTakes;
  }

  scheduleFeed(): void {
    this.feedsAsked += 1;
  }

  /** What was queued is appended: `idle()` resolves. Resolves in a later task, after what waited on it ran. */
  async drain(): Promise<void> {
    for (const resolve of this.idleWaiters.splice(0)) resolve();
    await new Promise<void>((resolve) => later(resolve));
  }
}
