import { makeHdVideos, makeVideo } from './swarm.js';

// Videos that several spec files use are made once here, before the workers start: made
// by each file's own setup, two workers needing the same one at once encoded it twice.
export default async function globalSetup(): Promise<void> {
  await makeVideo();
  makeHdVideos();
}
