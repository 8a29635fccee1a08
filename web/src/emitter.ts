/**
 * A small typed event emitter: `on('progress', e => …)` is checked against the event map,
 * as in hls.js. A listener that throws does not stop the others (it is reported on the
 * console): user code must not break the download loop.
 *
 * A listener is registered at most once per type, as with `addEventListener`: adding it
 * again (with `on` or `once`) changes nothing, and `off` removes it however it was added.
 */
type Listener = (payload: never) => void;

/** How a listener was added; the object's identity marks one registration. */
interface Registration {
  once: boolean;
}

export class Emitter<Events extends { [K in keyof Events]: unknown }> {
  private readonly listeners = new Map<keyof Events, Map<Listener, Registration>>();

  private add<K extends keyof Events>(type: K, listener: (payload: Events[K]) => void, once: boolean): this {
    let registered = this.listeners.get(type);
    if (!registered) {
      registered = new Map();
      this.listeners.set(type, registered);
    }
    if (!registered.has(listener as Listener)) registered.set(listener as Listener, { once });
    return this;
  }

  on<K extends keyof Events>(type: K, listener: (payload: Events[K]) => void): this {
    return this.add(type, listener, false);
  }

  /** Like {@link on}, but the listener is removed before its first call; `off(listener)` removes it before that. */
  once<K extends keyof Events>(type: K, listener: (payload: Events[K]) => void): this {
    return this.add(type, listener, true);
  }

  off<K extends keyof Events>(type: K, listener: (payload: Events[K]) => void): this {
    this.listeners.get(type)?.delete(listener as Listener);
    return this;
  }

  /**
   * Calls the listeners registered when the emit starts (one added by a listener waits
   * for the next emit; one removed by a listener is still called, unless it was a `once`
   * listener: those are called at most once, however listeners re-enter `emit`).
   */
  protected emit<K extends keyof Events>(type: K, payload: Events[K]): void {
    const registered = this.listeners.get(type);
    if (!registered) return;
    for (const [listener, registration] of [...registered]) {
      if (registration.once) {
        if (registered.get(listener) !== registration) continue;
        registered.delete(listener);
      }
      try {
        (listener as (payload: Events[K]) => void)(payload);
      } catch (err) {
        console.error(`ppspp-web: a '${String(type)}' listener threw`, err);
      }
    }
  }

  protected removeAllListeners(): void {
    this.listeners.clear();
  }
}
