/**
 * The presentation a player integration is given: loaded, or still loading. A page may
 * pass `Presentation.load(…)`'s promise rather than wait for it, so that the player reads
 * its playlists while the manifest and the engine load. A segment asked for meanwhile
 * waits for the presentation, at most the segment's own timeout (then it times out, as a
 * slow load does, and the player tries again). If the presentation fails to load, its
 * segments fail as network errors: nothing unverified reaches the player, as with an
 * awaited `Presentation.load` that rejects; the page hears why from its promise.
 */
import type { Presentation } from '../presentation/presentation.js';

/** A presentation, or the promise of one (`Presentation.load(…)` not awaited). */
export type PresentationSource = Presentation | PromiseLike<Presentation>;

/** Where the presentation stands for a request: loaded, failed to load (and why), or not loaded in time. */
export type SlotState = { presentation: Presentation } | { failed: unknown } | { late: true };

function isPromiseLike(source: PresentationSource): source is PromiseLike<Presentation> {
  return typeof (source as PromiseLike<Presentation>).then === 'function';
}

export class PresentationSlot {
  private state: SlotState | null = null;
  private readonly settled: Promise<void>;

  constructor(source: PresentationSource) {
    if (isPromiseLike(source)) {
      // Handling the rejection here keeps it from being reported as unhandled; the page
      // hears why from its own promise.
      this.settled = Promise.resolve(source).then(
        (presentation) => {
          this.state = { presentation };
        },
        (failed: unknown) => {
          this.state = { failed };
        },
      );
    } else {
      this.state = { presentation: source };
      this.settled = Promise.resolve();
    }
  }

  /** Where it stands now (null: still loading). */
  now(): SlotState | null {
    return this.state;
  }

  /** Where it stands once it settles, waiting at most `ms` (`late` past that). */
  within(ms: number): Promise<SlotState> {
    if (this.state) return Promise.resolve(this.state);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<SlotState>((resolve) => (timer = setTimeout(() => resolve({ late: true }), ms)));
    return Promise.race([this.settled.then(() => this.state!), late]).finally(() => clearTimeout(timer));
  }

  /** Calls `f` with the presentation once it is loaded (at once if it is; never if it fails). */
  whenLoaded(f: (p: Presentation) => void): void {
    const call = (): void => {
      if (this.state && 'presentation' in this.state) f(this.state.presentation);
    };
    if (this.state) call();
    else void this.settled.then(call);
  }

  /** The presentation if it is loaded. */
  loaded(): Presentation | null {
    return this.state && 'presentation' in this.state ? this.state.presentation : null;
  }
}
