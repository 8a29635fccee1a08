// A page as a web developer writes it: the packed npm package, bundled by Vite.
import { Player } from 'ppspp-web';

const video = document.getElementById('video');
const t = { ready: false, error: null, player: null };
window.__t = t;
try {
  t.player = await Player.attach(video, new URLSearchParams(location.search).get('uri'));
  t.ready = true;
  await video.play();
} catch (e) {
  t.error = `${e.code ?? e.name}: ${e.message}`;
}
