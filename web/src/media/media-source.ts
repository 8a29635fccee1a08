/**
 * Which MediaSource a page plays through: the standard `MediaSource`, or
 * `ManagedMediaSource` (Safari 17+, and the only one on iPhone since iOS 17.1), which
 * the browser may pause (`startstreaming` / `endstreaming`: append only while it
 * streams) and whose buffer it may evict on its own (`bufferedchange` on each
 * SourceBuffer).
 */
import { PpsppError } from '../errors.js';

export type MediaSourceKind = 'standard' | 'managed';

/** The constructor's static members the Player uses (both classes have them). */
export interface MediaSourceClass {
  new (): MediaSource;
  isTypeSupported(type: string): boolean;
}

/** The chosen class and what it is. */
export interface ChosenMediaSource {
  kind: MediaSourceKind;
  Class: MediaSourceClass;
}

function managedClass(): MediaSourceClass | undefined {
  return (globalThis as { ManagedMediaSource?: MediaSourceClass }).ManagedMediaSource;
}

function standardClass(): MediaSourceClass | undefined {
  return (globalThis as { MediaSource?: MediaSourceClass }).MediaSource;
}

/**
 * The MediaSource to use for the `mediaSource` option: `'auto'` takes `MediaSource`
 * where there is one and `ManagedMediaSource` where there is not (iPhone); `'managed'`
 * takes `ManagedMediaSource` (Safari on a Mac has both). Throws `mse-unsupported` where
 * the one asked for is missing.
 */
export function chooseMediaSource(wanted: 'auto' | 'managed'): ChosenMediaSource {
  const managed = managedClass();
  const standard = standardClass();
  if (wanted === 'managed') {
    if (!managed) throw new PpsppError('mse-unsupported', 'this browser has no ManagedMediaSource (option mediaSource: "managed")');
    return { kind: 'managed', Class: managed };
  }
  if (standard) return { kind: 'standard', Class: standard };
  if (managed) return { kind: 'managed', Class: managed };
  throw new PpsppError('mse-unsupported', 'this browser has neither MediaSource nor ManagedMediaSource: it cannot play from a swarm');
}

/** A ManagedMediaSource's `streaming` (absent on a standard one: always true). */
export function isStreaming(ms: MediaSource): boolean {
  return (ms as { streaming?: boolean }).streaming !== false;
}

/** The time ranges a `bufferedchange` event says the browser removed (none if it says nothing). */
export function removedRanges(event: Event): [number, number][] {
  const r = (event as { removedRanges?: TimeRanges }).removedRanges;
  const out: [number, number][] = [];
  if (!r) return out;
  for (let i = 0; i < r.length; i++) out.push([r.start(i), r.end(i)]);
  return out;
}
