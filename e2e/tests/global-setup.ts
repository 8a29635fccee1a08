import { ensurePackedApp } from './packed-app.js';
import { makeTestMedia } from './test-media.js';

// The test media are made once here, before the workers start: made by each file's own
// setup, two workers needing the same one at once encoded it twice, and an encode beside
// running tests took their CPU.
export default async function globalSetup(): Promise<void> {
  await makeTestMedia();
  // The shared group runs package.spec beside other specs, whose pages load web/, which
  // npm pack rebuilds: the packed app is made here, before any page runs.
  if (process.env.E2E_GROUP === 'shared') ensurePackedApp();
}
