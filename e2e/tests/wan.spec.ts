/**
 * Across NATs: pages in homes of the emulated internet (scripts/wan.sh), behind
 * routers that keep source ports (endpoint-independent mapping, address- and
 * port-dependent filtering, as most home routers), with the seeder, the signaling server
 * and STUN on coturn in the public segment. Skipped, with the reason, where network
 * namespaces cannot be made.
 */
import { createHmac } from 'node:crypto';
import type { Page } from '@playwright/test';
import { VIDEO, VIDEO_SECONDS, expectPlayedPast, makeVideo, pageStats } from './swarm.js';
import { PUBLIC_IP, TURN_SECRET, startStun, startTurn } from './wan.js';
import { type WanRun, expect, test } from './wan-fixture.js';
import { ALONE } from './spec-setup.js';

/** The test player for `uri` on the swarm's web server, with `query` added. */
function player(web: string, uri: string, query = ''): string {
  return `${web}/e2e/player.html?uri=${encodeURIComponent(uri)}${query}`;
}

/** A page of the test player in `home`, once its script runs. */
async function playerPage(run: WanRun, home: number, url: string, label?: string): Promise<Page> {
  const page = await run.page(home, url, { label });
  await page.waitForFunction(() => 'error' in ((window as unknown as { __t?: object }).__t ?? {}), null, { timeout: 15_000 });
  return page;
}

const STUN_ONLY = `&ice=${encodeURIComponent(JSON.stringify([{ urls: `stun:${PUBLIC_IP}:3478` }]))}`;

test.describe('across NATs', () => {
  // Each test builds an internet of its own, so the tests may run on any free workers at
  // once: one after another, the file's were the shared group's last minute and a half.
  test.describe.configure({ mode: 'parallel' });

  test('two pages in two homes play from each other over a server-reflexive pair', async ({ run }) => {
    test.setTimeout(180_000);
    await makeVideo();
    const wan = run.up('a');
    run.keep('stun', await startStun(wan));
    // A seeder slower than two pages' playback: they must trade to play on.
    const swarm = await run.swarm(VIDEO, 100_000);
    const pages: Page[] = [];
    for (const home of [1, 2]) pages.push(await playerPage(run, home, player(swarm.web, swarm.uri, STUN_ONLY)));
    for (const page of pages) await expectPlayedPast(page, VIDEO_SECONDS / 4, 90_000);
    // Each page reaches the other through its router's public address: the pair is
    // server- or peer-reflexive, never a host pair across homes and never a relay.
    await expect
      .poll(async () => {
        const pairs = await Promise.all(
          pages.map((p) =>
            p.evaluate(() =>
              (window as unknown as { __t: { player: { selectedPairs(): Promise<{ local: string; remote: string }[]> } } }).__t.player.selectedPairs(),
            ),
          ),
        );
        return pairs.map((ps) => ps.some((p) => /^203\.0\.113\.[12]$/.test(p.remote)));
      }, { timeout: 60_000, message: 'both pages hold a pair to the other home' })
      .toEqual([true, true]);
    for (const page of pages) await expectPlayedPast(page, VIDEO_SECONDS - 3, 120_000);
    const stats = await Promise.all(pages.map((p) => pageStats(p)));
    const downloaded = stats.reduce((a, s) => a + s.bytesDownloaded, 0);
    const fromPeers = stats.reduce((a, s) => a + s.bytesFromPeers, 0);
    expect(fromPeers, 'the pages exchanged across the NATs').toBeGreaterThan(0);
    const last = [...swarm.seeder.lines].reverse().find((l) => l.startsWith('{'));
    const s = last ? (JSON.parse(last) as { bytes_uploaded?: number; channels: { bytes_up: number }[] }) : null;
    const seederUp = s ? (s.bytes_uploaded ?? s.channels.reduce((a, c) => a + c.bytes_up, 0)) : 0;
    expect(seederUp, 'the seeder uploaded less than the pages downloaded').toBeLessThan(downloaded);
  });

  test('a page behind the symmetric NAT plays through a TURN relay from the welcome', async ({ run }) => {
    test.setTimeout(180_000);
    await makeVideo();
    const wan = run.up('b');
    run.keep('turn', await startTurn(wan));
    // No ice= in the pages: their servers and credentials come from the welcome.
    const swarm = await run.swarm(VIDEO, 100_000, { ttl: 600 });
    const pages: Page[] = [];
    for (const home of [1, 3]) pages.push(await playerPage(run, home, player(swarm.web, swarm.uri)));
    for (const page of pages) await expectPlayedPast(page, VIDEO_SECONDS / 4, 90_000);
    // The two homes meet only through the relay: each page holds a pair to the seeder and
    // one to the other page, and that one has a relay candidate at one end (the side that
    // learnt the relay address from a check before its candidate arrived sees it as
    // peer-reflexive; the other side's local candidate is still the relay).
    await expect
      .poll(async () => {
        const pairs = await Promise.all(pages.map((p) => selectedPairs(p)));
        const relayed = pairs.flat().some((p) => p.localType === 'relay' || p.remoteType === 'relay');
        return { relayed, counts: pairs.map((ps) => ps.length) };
      }, { timeout: 90_000, message: 'the pages hold a relayed pair to each other' })
      .toEqual({ relayed: true, counts: [2, 2] });
    for (const page of pages) await expectPlayedPast(page, VIDEO_SECONDS - 3, 120_000);
    const stats = await Promise.all(pages.map((p) => pageStats(p)));
    expect(stats.reduce((a, s) => a + s.bytesFromPeers, 0), 'the pages exchanged through the relay').toBeGreaterThan(0);
  });

  test("relay-only pages (iceTransportPolicy 'relay') meet only through TURN: no peer sees a home's address", async ({ run }) => {
    test.setTimeout(180_000);
    await makeVideo();
    const wan = run.up('a');
    run.keep('turn', await startTurn(wan));
    // A seeder slower than two pages' playback: they must trade through the relay.
    const swarm = await run.swarm(VIDEO, 100_000, { ttl: 600 });
    const pages: Page[] = [];
    for (const home of [1, 2]) pages.push(await playerPage(run, home, player(swarm.web, swarm.uri, '&relay=1')));
    for (const page of pages) await expectPlayedPast(page, VIDEO_SECONDS / 4, 90_000);
    await expect
      .poll(async () => (await Promise.all(pages.map((p) => selectedPairs(p)))).map((ps) => ps.length), {
        timeout: 90_000,
        message: 'each page holds pairs to the seeder and the other page',
      })
      .toEqual([2, 2]);
    const pairs = (await Promise.all(pages.map((p) => selectedPairs(p)))).flat();
    // Every local end is a relay; no remote end is a home router's public address
    // (203.0.113.1-2): the pages saw each other only as relay addresses.
    expect(pairs.map((p) => p.localType), JSON.stringify(pairs)).toEqual(pairs.map(() => 'relay'));
    expect(pairs.filter((p) => /^203\.0\.113\./.test(p.remote)), JSON.stringify(pairs)).toEqual([]);
    for (const page of pages) await expectPlayedPast(page, VIDEO_SECONDS - 3, 120_000);
    const stats = await Promise.all(pages.map((p) => pageStats(p)));
    expect(stats.reduce((a, s) => a + s.bytesFromPeers, 0), 'the pages exchanged through the relay').toBeGreaterThan(0);
  });

  test('an expired TURN credential is refused and the page says so with a typed error', async ({ run }) => {
    test.setTimeout(120_000);
    await makeVideo();
    const wan = run.up('e');
    const turn = run.keep('turn', await startTurn(wan));
    // The only peer is a seeder in another home, reachable through a relay only (a
    // direct path found first would stop the browser gathering before it asks the relay).
    const swarm = await run.swarm(VIDEO, undefined, undefined, 1);
    // Credentials made right with the TURN server's secret, but expired a minute ago.
    const username = `${Math.floor(Date.now() / 1000) - 60}:e2e-page`;
    const credential = createHmac('sha1', TURN_SECRET).update(username).digest('base64');
    const ice = encodeURIComponent(JSON.stringify([{ urls: `turn:${PUBLIC_IP}:3478?transport=udp`, username, credential }]));
    const page = await run.page(3, player(swarm.web, swarm.uri, `&ice=${ice}`));
    await expect
      .poll(() => page.evaluate(() => (window as unknown as { __t?: { errors: string[] } }).__t?.errors ?? []), {
        timeout: 30_000,
        message: 'the page reports the refused credential',
      })
      .toContainEqual(expect.stringMatching(/^ice-server-error: TURN server turn:198\.51\.100\.10:3478\?transport=udp refused the credentials of the iceServers option .*401/));
    // The refusal is the TURN server's: 401 for this username (made with the secret that
    // the relay test's fresh credentials pass with, so what differs is the expiry).
    expect(turn.lines.some((l) => l.includes(`<${username}>`) && l.includes('401'))).toBe(true);
  });

  test('a page whose every ICE attempt fails slowly reports no-peers within its timeout', async ({ run }) => {
    test.setTimeout(120_000);
    await makeVideo();
    run.up('f');
    // The only peer is a seeder in a home (host candidate only, no STUN), the page is
    // behind the symmetric NAT without TURN: their checks go unanswered until ICE gives up.
    const swarm = await run.swarm(VIDEO, undefined, undefined, 1);
    const started = Date.now();
    const page = await run.page(3, player(swarm.web, swarm.uri, '&connect=60000'));
    await expect
      .poll(() => page.evaluate(() => (window as unknown as { __t?: { errors: string[] } }).__t?.errors ?? []), {
        timeout: 30_000,
        message: 'the page reports no-peers',
      })
      .toContainEqual(expect.stringMatching(/^no-peers: no peer of swarm \w+ reachable for 1\d s \(1 connection attempt not open yet\); still trying$/));
    // Within its 10 s (and long before the 60 s connection timeout ends the attempt).
    expect(Date.now() - started).toBeLessThan(25_000);
    const stats = await page.evaluate(() => (window as unknown as { __t: { player: { stats(): { connections: number; chunksHave: number } } } }).__t.player.stats());
    expect(stats).toMatchObject({ connections: 1, chunksHave: 0 });
  });

  // Stalls timed on lossy paths: the machine to itself.
  test('six pages on 40 ms round trips with 1 % loss play without a stall over 1 s', ALONE, async ({ run }) => {
    test.setTimeout(180_000);
    await makeVideo();
    // 20 ms each way and 1 % loss each way at every home's router: 40 ms to the public
    // segment, 80 ms between homes.
    const wan = run.up('d', ['--delay', '20', '--loss', '1', '--seed', '7']);
    run.keep('stun', await startStun(wan));
    const swarm = await run.swarm(VIDEO);
    // Every home's browser first: a Chromium launch takes a core for a second or more, and
    // launches during the first page's start-up held it back (six viewers on two cores is
    // the harness, not a viewer's machine).
    for (const home of [1, 2, 3]) await run.browser(home);
    const pages: Page[] = [];
    // Two pages per home, each in its own browser context (its own WebRTC stack). Their
    // videos are not displayed: compositing six videos' frames in software took about a
    // third of the two cores, which the pages' own work and the seeder then lacked.
    for (const home of [1, 2, 3]) {
      for (const i of [1, 2]) pages.push(await run.page(home, player(swarm.web, swarm.uri, `${STUN_ONLY}&hidden=1`), { label: `page ${i} in home${home}` }));
    }
    for (const page of pages) await expectPlayedPast(page, VIDEO_SECONDS - 3, 120_000);
    const seen = await Promise.all(
      pages.map((p) =>
        p.evaluate(() => {
          type Stall = { start: number; end: number; durationMs: number; noDataMs: number; cause: string; position: number };
          const t = (window as unknown as { __t: { firstFrameMs: number | null; stalls: Stall[]; lags: [number, number][] } }).__t;
          // How long the page's own main thread was held back during a stall (its lag timer):
          // a stall with media buffered, or one in which the page could not take in what came,
          // is the CPU's rather than the paths'.
          const lag = (s: Stall) => t.lags.filter(([at, late]) => at - late < s.end && at > s.start).reduce((a, [, late]) => a + late, 0);
          return {
            firstFrame: t.firstFrameMs !== null,
            longStalls: t.stalls
              .filter((s) => s.durationMs > 1000)
              .map((s) => `${Math.round(s.durationMs)} ms ${s.cause} (${Math.round(s.noDataMs)} ms without data, main thread ${lag(s)} ms late) at ${s.position.toFixed(1)} s`),
          };
        }),
      ),
    );
    // The links' lines say whether the emulator kept its delays (a late one lengthens the path).
    const message = `each page's first frame and stalls over 1 s: ${JSON.stringify(seen)}\nlinks: ${run.wan.linkLines().join(' | ')}`;
    if (process.env.E2E_DIAGNOSE) console.log(message);
    expect(seen, message).toEqual(pages.map(() => ({ firstFrame: true, longStalls: [] })));
    // The paths were as long as they should be: the seeder's round trip to each page.
    const last = [...swarm.seeder.lines].reverse().find((l) => l.startsWith('{'));
    const rtts = last ? (JSON.parse(last) as { channels: { rtt_ms: number }[] }).channels.map((c) => c.rtt_ms) : [];
    expect(rtts.length).toBeGreaterThan(0);
    for (const rtt of rtts) expect(rtt).toBeGreaterThanOrEqual(38);
  });
});

type Pair = { local: string; remote: string; localType: string; remoteType: string };

function selectedPairs(page: Page): Promise<Pair[]> {
  return page.evaluate(() =>
    (window as unknown as { __t: { player: { selectedPairs(): Promise<Pair[]> } } }).__t.player.selectedPairs(),
  );
}
