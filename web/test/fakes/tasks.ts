/**
 * Scheduling and waiting for the fakes and the tests that use them.
 *
 * The fakes deliver network messages as macrotasks posted on a MessageChannel (as a
 * browser delivers data-channel and WebSocket messages): never synchronously inside the
 * call that sent them, and without setTimeout, so they keep flowing when a test fakes
 * the timers.
 */
import type { Emitter } from '../../src/emitter.js';

const queue: (() => void)[] = [];
let channel: MessageChannel | null = null;

/** Runs `fn` in a later task. */
export function later(fn: () => void): void {
  if (!channel) {
    channel = new MessageChannel();
    channel.port1.onmessage = () => {
      const next = queue.shift();
      next?.();
    };
    // Node: do not keep the test worker alive for this port.
    (channel.port1 as unknown as { unref?: () => void }).unref?.();
  }
  queue.push(fn);
  channel.port2.postMessage(null);
}


/**
 * Resolves with the first `type` event whose payload satisfies `match`; rejects after
 * `timeoutMs` saying what it waited for (a bound, not a sleep: it resolves as soon as the
 * event comes).
 */
export function nextEvent<E extends { [K in keyof E]: unknown }, K extends keyof E>(
  emitter: Emitter<E>,
  type: K,
  match: (payload: E[K]) => boolean = () => true,
  timeoutMs = 4_000,
): Promise<E[K]> {
  return new Promise((resolve, reject) => {
    const listener = (payload: E[K]): void => {
      if (!match(payload)) return;
      clearTimeout(timer);
      emitter.off(type, listener);
      resolve(payload);
    };
    const timer = setTimeout(() => {
      emitter.off(type, listener);
      reject(new Error(`no matching '${String(type)}' event within ${timeoutMs} ms`));
    }, timeoutMs);
    emitter.on(type, listener);
  });
}

/**
 * Resolves once `condition()` is true, checking it on a short poll; rejects after
 * `timeoutMs` with `what`, or with what `condition` threw. For conditions no event
 * announces. The default timeouts here stay under vitest's 5 s per test, so that a wait
 * never outlives its test (and polls a swarm the test has closed).
 */
export function until(condition: () => boolean, what: string, timeoutMs = 4_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const check = (): void => {
      let done: boolean;
      try {
        done = condition();
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      if (done) {
        resolve();
        return;
      }
      if (Date.now() - started > timeoutMs) {
        reject(new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`));
        return;
      }
      setTimeout(check, 5);
    };
    check();
  });
}

/**
 * Resolves once `condition()` is true, checking after each task the fakes deliver, and
 * never letting time pass: for tests on fake timers (vi.waitFor would advance them).
 * Rejects after `maxTasks` tasks with `what`.
 */
export async function untilTasks(condition: () => boolean, what: string, maxTasks = 10_000): Promise<void> {
  for (let i = 0; i < maxTasks; i++) {
    if (condition()) return;
    await new Promise<void>((resolve) => later(resolve));
  }
  if (!condition()) throw new Error(`not true after ${maxTasks} tasks: ${what}`);
}
