// What the player test pages record of playback, set up before anything is awaited so
// that the tests can read it at any time: the first frame's time (t.firstFrameMs), each
// stall after it (t.stallsMs) and how long playback has been stalled now (t.stalledNow()).
export function watchPlayback(video, t) {
  let waitingSince = null;
  video.addEventListener('waiting', () => { if (t.firstFrameMs !== null && waitingSince === null) waitingSince = performance.now(); });
  video.addEventListener('playing', () => {
    if (waitingSince !== null) t.stallsMs.push(Math.round(performance.now() - waitingSince));
    waitingSince = null;
  });
  t.stalledNow = () => (waitingSince === null ? 0 : performance.now() - waitingSince);
  video.requestVideoFrameCallback?.(() => { t.firstFrameMs = performance.now(); });
}
