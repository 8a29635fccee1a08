/**
 * A small synthetic fragmented MP4 (H.264 + AAC sample entries, one moof + mdat fragment
 * a second of pseudo-random bytes), laid out as ffmpeg writes it with
 * `-movflags frag_keyframe+empty_moov+default_base_moof`: ftyp, moov (mvex), fragments.
 * Enough for the Player's parsing; no decoder ever sees it.
 */
import { ESDS, be, box, concat, fullbox, text, trak } from '../bytes.js';
import { randomBytes } from './webm.js';

export interface SyntheticMp4 {
  file: Uint8Array;
  initLength: number;
  /** Byte offset of each fragment (its moof), and its time in seconds. */
  fragments: { offset: number; time: number }[];
  durationSeconds: number;
}

/** `seconds` fragments of about `fragmentBytes` each (or as many as it says for each second). */
export function syntheticMp4(seconds: number, fragmentBytes: number | ((second: number) => number)): SyntheticMp4 {
  const bytesAt = typeof fragmentBytes === 'number' ? () => fragmentBytes : fragmentBytes;
  const init = concat(
    box('ftyp', text('iso5'), be(512, 4), text('iso5iso6mp41')),
    box(
      'moov',
      fullbox('mvhd', 0, be(0, 8), be(1000, 4), be(seconds * 1000, 4), new Array<number>(80).fill(0)),
      trak(1, 90000, 'vide', box('avc1', new Array<number>(78).fill(0), box('avcC', [1, 0x64, 0x00, 0x1f, 0xff]))),
      trak(2, 48000, 'soun', box('mp4a', new Array<number>(28).fill(0), ESDS)),
      box('mvex', fullbox('trex', 0, be(1, 4), new Array<number>(16).fill(0))),
    ),
  );
  const fragments: Uint8Array[] = [];
  for (let s = 0; s < seconds; s++) {
    const moof = box(
      'moof',
      fullbox('mfhd', 0, be(s + 1, 4)),
      box('traf', fullbox('tfhd', 0, be(1, 4)), fullbox('tfdt', 0, be(s * 90000, 4))),
      box('traf', fullbox('tfhd', 0, be(2, 4)), fullbox('tfdt', 0, be(s * 48000, 4))),
    );
    fragments.push(concat(moof, box('mdat', randomBytes(bytesAt(s), 7000 + s))));
  }
  const file = concat(init, ...fragments);
  const offsets: { offset: number; time: number }[] = [];
  let at = init.length;
  fragments.forEach((f, s) => {
    offsets.push({ offset: at, time: s });
    at += f.length;
  });
  return { file, initLength: init.length, fragments: offsets, durationSeconds: seconds };
}
