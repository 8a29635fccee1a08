/**
 * A fake web server behind `globalThis.fetch`: files by URL, answered to Range requests
 * with 206 and the bytes asked for (clipped to the file's end), or in the ways a real
 * server or network fails when told to.
 */

/** How the server answers one request (`undefined`: as a good server does). */
export type Misbehaviour = 'ignore-range' | 'not-found' | 'network' | 'hang' | undefined;

export interface FakeHttp {
  /** Every request: URL and the Range header's bytes (end exclusive). */
  readonly requests: { url: string; start: number; end: number }[];
  /** Requests not answered yet, at most at once. */
  mostInFlight: number;
  /** Bytes of each URL sent in 206 answers. */
  readonly served: Map<string, number>;
  /** Chooses how each request is answered. */
  misbehave: (url: string) => Misbehaviour;
}

/** Installs the server; returns it and the function that puts the real fetch back. */
export function installFetch(files: Map<string, Uint8Array>): [FakeHttp, () => void] {
  const real = globalThis.fetch;
  let inFlight = 0;
  const http: FakeHttp = { requests: [], mostInFlight: 0, served: new Map(), misbehave: () => undefined };
  globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const url = String(input);
    const range = new Headers(init?.headers).get('Range') ?? '';
    const m = /^bytes=(\d+)-(\d+)$/.exec(range);
    if (!m) throw new Error(`the fake server got no usable Range header: ${JSON.stringify(range)}`);
    const start = Number(m[1]);
    const end = Number(m[2]) + 1;
    http.requests.push({ url, start, end });
    inFlight++;
    http.mostInFlight = Math.max(http.mostInFlight, inFlight);
    try {
      // Answers come in a later task, as from a network.
      await new Promise((r) => setTimeout(r, 1));
      const how = http.misbehave(url);
      const signal = init?.signal;
      if (how === 'hang') {
        await new Promise<never>((_, reject) => {
          const abort = (): void => reject(new DOMException('aborted', 'AbortError'));
          if (signal?.aborted) abort();
          signal?.addEventListener('abort', abort);
        });
      }
      if (signal?.aborted) throw new DOMException('aborted', 'AbortError');
      if (how === 'network') throw new TypeError('Failed to fetch');
      const file = files.get(url);
      if (file === undefined || how === 'not-found') return new Response('not found', { status: 404 });
      if (how === 'ignore-range') return new Response(file.slice(), { status: 200 });
      if (start >= file.length) return new Response('', { status: 416 });
      const body = file.slice(start, Math.min(end, file.length));
      http.served.set(url, (http.served.get(url) ?? 0) + body.length);
      return new Response(body, { status: 206 });
    } finally {
      inFlight--;
    }
  };
  return [http, () => (globalThis.fetch = real)];
}
