// A page as a web developer writes it: the packed npm package, bundled by Vite.
import { Player } from 'ppspp-web';

const video = document.getElementById('video');
const t = { ready: false, error: null, player: null };
window.__t = t;
const params = new URLSearchParams(location.search);
// ?engine=worker: the engine in its Worker, which the bundler must have found.
const options = params.get('engine') ? { engineThread: params.get('engine') } : {};
try {
  t.player = await Player.attach(video, params.get('uri'), options);
  t.ready = true;
  await video.play();
} catch (e) {
  t.error = `${e.code ?? e.name}: ${e.message}`;
}
