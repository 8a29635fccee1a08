/**
 * The loop that drives a sans-IO machine of the Wasm module (the engine's `WasmPeer`, the
 * fetch-by-root `WasmDiscovery`): datagrams and timers go in, datagrams come out. The
 * machine owns no socket and reads no clock; this class passes `performance.now()` into
 * every call, sends what it has to send, and keeps one `setTimeout` armed for its next
 * deadline. The machine never calls back into JavaScript, so nothing here can re-enter it.
 */

/** What a machine of the Wasm module offers its driver (both `WasmPeer` and `WasmDiscovery` have it). */
export interface SansIoMachine {
  /** One datagram from `peer`'s data channel. */
  handleDatagram(peer: number, data: Uint8Array, nowMs: number): void;
  /** The next datagram to send, or `undefined`; {@link transmitPeer} says to whom. */
  pollTransmit(nowMs: number): Uint8Array | undefined;
  /** The peer of the datagram {@link pollTransmit} returned last. */
  transmitPeer(): number;
  /** Milliseconds until {@link handleTimeout} is due (0: now), or -1 when nothing is scheduled. */
  pollTimeout(nowMs: number): number;
  handleTimeout(nowMs: number): void;
}

export interface DriverHooks {
  /** Hands one datagram to the transport (the peer's data channel). */
  send(peer: number, payload: Uint8Array): void;
  /**
   * Runs in each turn after its datagrams were sent: read what the machine produced
   * (events, a result). It may close the driver; the turn then ends there.
   */
  afterSend?(): void;
}

/** Most datagrams sent in one turn of the loop before yielding to the page. */
export const MAX_SENDS_PER_TURN = 512;

/**
 * The loop runs as a task posted on a MessageChannel: after the data-channel messages
 * already queued (so their ACKs go out together, much faster than a microtask per message:
 * BENCHMARKS.md, "Measurements behind design choices"), and without setTimeout's 4 ms clamp
 * for nested timers.
 * One channel serves every driver of the page.
 */
let kickChannel: MessageChannel | null = null;
const pendingKicks: Driver[] = [];

export class Driver {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private timerDue = Infinity;
  private queued = false;
  private closedValue = false;

  constructor(
    private readonly machine: SansIoMachine,
    private readonly hooks: DriverHooks,
  ) {}

  /** True once {@link close} was called: inputs are ignored and the loop stays still. */
  get closed(): boolean {
    return this.closedValue;
  }

  /** One datagram from `peer`: into the machine now, and the loop runs soon. */
  datagram(peer: number, data: Uint8Array): void {
    if (this.closedValue) return;
    this.machine.handleDatagram(peer, data, performance.now());
    this.kick();
  }

  /**
   * Runs the loop soon, once, however many inputs arrive before it does. Call it after
   * any other input given to the machine (a connection, a lost peer, a new playhead).
   */
  kick(): void {
    if (this.queued || this.closedValue) return;
    this.queued = true;
    if (!kickChannel) {
      kickChannel = new MessageChannel();
      kickChannel.port1.onmessage = () => Driver.runKicked();
      // In Node (the unit tests) an open port would keep the process alive.
      (kickChannel.port1 as { unref?: () => void }).unref?.();
    }
    kickChannel.port2.postMessage(null);
    pendingKicks.push(this);
  }

  /** Runs one turn of every kicked driver (the MessageChannel task). */
  static runKicked(): void {
    for (const driver of pendingKicks.splice(0)) {
      driver.queued = false;
      driver.turn();
    }
  }

  /** Sends at most `limit` of the datagrams the machine has ready now; returns how many it sent. */
  flush(limit = Infinity, now = performance.now()): number {
    let sends = 0;
    while (sends < limit) {
      const payload = this.machine.pollTransmit(now);
      if (payload === undefined) break;
      this.hooks.send(this.machine.transmitPeer(), payload);
      sends++;
    }
    return sends;
  }

  /** Sends, lets the owner read what came out, and arms the timer for the next deadline. */
  private turn(): void {
    if (this.closedValue) return;
    const now = performance.now();
    const sends = this.flush(MAX_SENDS_PER_TURN, now);
    this.hooks.afterSend?.();
    if (this.closedValue) return;
    // More to send right away: yield to the page first, then go on.
    this.schedule(sends >= MAX_SENDS_PER_TURN ? 0 : this.machine.pollTimeout(now));
  }

  /** One timer, for the earliest deadline asked for. */
  private schedule(waitMs: number): void {
    if (waitMs < 0) return;
    const due = performance.now() + waitMs;
    if (this.timer !== null && due >= this.timerDue) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timerDue = due;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerDue = Infinity;
      if (this.closedValue) return;
      this.machine.handleTimeout(performance.now());
      this.turn();
    }, Math.max(0, waitMs));
  }

  /** Stops the loop: its timer is cleared and later inputs and kicks are ignored. */
  close(): void {
    this.closedValue = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }
}
