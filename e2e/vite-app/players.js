// web/README.md's player recipes as a web developer writes them: the packed npm package
// and the players from npm, bundled by Vite. ?player= hls | shaka | videojs; ?manifest=
// the presentation; ?src= the master playlist or MPD; ?signal= the signaling server (else
// HTTP only); ?streamKey= a live presentation's stream key.
import Hls from 'hls.js';
import shaka from 'shaka-player';
import videojs from 'video.js';
import { Presentation } from 'ppspp-web';
import { hlsFragmentLoader } from 'ppspp-web/hls';
import { registerShakaScheme } from 'ppspp-web/shaka';
import { registerVideojsHls } from 'ppspp-web/videojs';

const params = new URLSearchParams(location.search);
const video = document.getElementById('video');
const t = { error: null, presentation: null };
window.__t = t;
try {
  const options = { signal: params.get('signal') ?? false };
  if (params.get('streamKey')) options.streamKey = params.get('streamKey');
  // Not awaited: the player reads its playlists or MPD while the presentation loads.
  const loading = Presentation.load(params.get('manifest'), options);
  loading.then((presentation) => (t.presentation = presentation), () => {});
  const src = params.get('src');
  switch (params.get('player')) {
    case 'hls': {
      const hls = new Hls({ fLoader: hlsFragmentLoader(loading) });
      hls.loadSource(src);
      hls.attachMedia(video);
      (await loading).attachMedia(video);
      break;
    }
    case 'shaka': {
      shaka.polyfill.installAll();
      registerShakaScheme(shaka, loading);
      const player = new shaka.Player();
      await player.attach(video);
      await player.load(src);
      (await loading).attachMedia(video);
      break;
    }
    case 'videojs': {
      registerVideojsHls(videojs, Hls, loading);
      videojs(video).src({ src, type: 'application/x-mpegURL' });
      break;
    }
    default:
      throw new Error(`unknown player ${params.get('player')}`);
  }
  await video.play();
} catch (e) {
  t.error = `${e.code ?? e.name}: ${e.message}`;
}
