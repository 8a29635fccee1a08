import { makeVideo } from './swarm.js';

// The test video is made once (ffmpeg) and reused by every test.
export default async function globalSetup(): Promise<void> {
  await makeVideo();
}
