/**
 * Watches what the browser says of the STUN and TURN servers while it gathers candidates,
 * so that a page whose relays refuse it, or whose servers never answer, says so instead of
 * silently reaching fewer peers: a TURN server that refuses the credentials (401) is
 * reported as an `ice-server-error`, and when they came from the signaling server fresh
 * ones are asked for; a connection that gathered no server-reflexive or relay candidate
 * while a server was unreachable (701) is reported once.
 *
 * Two things look like an unreachable server and are not: a loopback address never reaches
 * a server on another host (its 701 comes with every gathering), and Chromium stops
 * gathering once a connection is up, so one that connected before gathering ended may have
 * had its server answers cut short. Such a connection says nothing of the servers.
 */
import { PpsppError } from './errors.js';

/** STUN/TURN error code of a refused credential (RFC 8489 §14.8: Unauthorized). */
const UNAUTHORIZED = 401;
/** The browser's code for a server that did not answer from some local address (W3C webrtc-pc). */
const UNREACHABLE = 701;

/** A loopback address as an icecandidateerror gives it (browsers may hide its last part: `127.0.0.x`). */
function isLoopback(address: string | null): boolean {
  if (address == null) return false;
  const a = address.replace(/^\[|\]$/g, '');
  return a.startsWith('127.') || a === '::1';
}

export interface IceServerWatchHandlers {
  /** The ICE servers the signaling server sent (their credentials may be renewed). */
  signaled(): RTCIceServer[];
  /** Asks the signaling server for fresh credentials. */
  refresh(): void;
  error(err: PpsppError): void;
}

function urlsOf(server: RTCIceServer): string[] {
  return typeof server.urls === 'string' ? [server.urls] : [...server.urls];
}

export class IceServerWatch {
  /** What was reported already (URL, code and username), so each is said once. */
  private readonly reported = new Set<string>();
  private unreachableReported = false;
  /** Some connection gathered a server-reflexive or relay candidate: a server answers. */
  private answered = false;

  constructor(private readonly handlers: IceServerWatchHandlers) {}

  /** Watches `pc`, made with `servers`. */
  watch(pc: RTCPeerConnection, servers: RTCIceServer[]): void {
    if (servers.length === 0) return;
    const unreachable = new Set<string>();
    let gathered = false;
    let connectedWhileGathering = false;
    pc.addEventListener('icecandidate', (ev: RTCPeerConnectionIceEvent) => {
      const type = ev.candidate?.type;
      if (type === 'srflx' || type === 'relay') {
        gathered = true;
        this.answered = true;
      }
    });
    pc.addEventListener('icecandidateerror', (ev: Event) => {
      const e = ev as RTCPeerConnectionIceErrorEvent;
      if (e.errorCode === UNREACHABLE) {
        if (!isLoopback(e.address)) unreachable.add(e.url);
      } else if (e.errorCode === UNAUTHORIZED && /^turns?:/.test(e.url)) this.refused(e, servers);
    });
    pc.addEventListener('iceconnectionstatechange', () => {
      const up = pc.iceConnectionState === 'connected' || pc.iceConnectionState === 'completed';
      if (up && pc.iceGatheringState !== 'complete') connectedWhileGathering = true;
    });
    pc.addEventListener('icegatheringstatechange', () => {
      if (pc.iceGatheringState !== 'complete' || gathered || connectedWhileGathering || unreachable.size === 0) return;
      if (this.answered || this.unreachableReported) return;
      this.unreachableReported = true;
      this.handlers.error(
        new PpsppError(
          'ice-server-error',
          `no STUN/TURN server answered (${[...unreachable].join(', ')}): this page reaches only peers that can reach it directly`,
        ),
      );
    });
  }

  private refused(e: RTCPeerConnectionIceErrorEvent, servers: RTCIceServer[]): void {
    const server = servers.find((s) => urlsOf(s).includes(e.url));
    const signaled = server !== undefined && this.handlers.signaled().some((s) => s.username === server.username && urlsOf(s).includes(e.url));
    if (signaled) this.handlers.refresh();
    const key = `${e.url} ${e.errorCode} ${server?.username ?? ''}`;
    if (this.reported.has(key)) return;
    this.reported.add(key);
    const whose = signaled
      ? 'the credentials the signaling server issued (expired, or its TURN secret differs from the TURN server\'s); fresh ones were asked for'
      : 'the credentials of the iceServers option (expired or wrong)';
    this.handlers.error(
      new PpsppError('ice-server-error', `TURN server ${e.url} refused ${whose}: ${e.errorCode} ${e.errorText}`.trim()),
    );
  }
}
