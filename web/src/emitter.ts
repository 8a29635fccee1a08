/**
 * A small typed event emitter: `on('progress', e => …)` is checked against the event map,
 * as in hls.js. A listener that throws does not stop the others (it is reported on the
 * console): user code must not break the download loop.
 */
export class Emitter<Events extends { [K in keyof Events]: unknown }> {
  private readonly listeners = new Map<keyof Events, Set<(payload: never) => void>>();

  on<K extends keyof Events>(type: K, listener: (payload: Events[K]) => void): this {
    let set = this.listeners.get(type);
    if (!set) {
      set = new Set();
      this.listeners.set(type, set);
    }
    set.add(listener as (payload: never) => void);
    return this;
  }

  once<K extends keyof Events>(type: K, listener: (payload: Events[K]) => void): this {
    const wrapper = (payload: Events[K]): void => {
      this.off(type, wrapper);
      listener(payload);
    };
    return this.on(type, wrapper);
  }

  off<K extends keyof Events>(type: K, listener: (payload: Events[K]) => void): this {
    this.listeners.get(type)?.delete(listener as (payload: never) => void);
    return this;
  }

  protected emit<K extends keyof Events>(type: K, payload: Events[K]): void {
    const set = this.listeners.get(type);
    if (!set) return;
    for (const listener of [...set]) {
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
