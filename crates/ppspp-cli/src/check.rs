//! `ppspp check FILE`: whether a video streams well through a page's MediaSource, before
//! it is hashed and published. MediaSource takes WebM and fragmented MP4 only, a page must
//! fetch a whole media segment before it can show it, and seeks land on segment starts:
//! so a plain MP4 is an error, and segments longer than a few seconds (keyframes far
//! apart) are a warning. Reads headers only: memory stays small for any file size.

use crate::live::segmenter::{SegmentError, ebml_header, mp4_header};
use clap::Args;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The video file to look at (WebM or MP4).
    file: PathBuf,
}

/// Segments longer than this (seconds) are reported: a page waits for a whole one before
/// its first frame and after each seek.
pub const LONG_SEGMENT_SECONDS: f64 = 4.0;

/// The largest header box or element read whole (`moov`, `moof`, a Cluster's start).
const MAX_HEADER_READ: u64 = 64 << 20;

/// What the file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    WebM,
    FragmentedMp4,
}

/// One media segment: where it starts, its length, its start in media seconds (if read).
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    pub offset: u64,
    pub len: u64,
    pub start: Option<f64>,
}

/// What `check` found.
#[derive(Debug, PartialEq)]
pub struct Report {
    pub kind: Kind,
    /// Bytes before the first media segment.
    pub init_len: u64,
    pub segments: Vec<Segment>,
    /// Why segment times could not all be read (unknown-size Clusters, say), if so.
    pub note: Option<String>,
}

impl Report {
    /// Each segment's duration, where the next one's start says it.
    pub fn durations(&self) -> Vec<f64> {
        self.segments
            .windows(2)
            .filter_map(|w| Some(w[1].start? - w[0].start?))
            .collect()
    }

    /// Warnings for a page playing this file.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let longest = self.durations().into_iter().fold(0.0f64, f64::max);
        if longest > LONG_SEGMENT_SECONDS {
            out.push(format!(
                "the longest media segment lasts {longest:.1} s: a page fetches a whole segment before its first frame and after each seek. Encode with a keyframe every 1-2 s and a segment per keyframe (ffmpeg -g 50 -keyint_min 50 at 25 fps; for MP4 also -movflags frag_keyframe+empty_moov+default_base_moof)"
            ));
        }
        if self.segments.is_empty() {
            out.push("no media segment: nothing to play".into());
        }
        out
    }
}

/// Why a file cannot stream through MediaSource, or could not be read to tell.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// Reading the file failed.
    #[error("{0}")]
    Read(#[from] io::Error),
    /// A box or element header that does not parse.
    #[error("at byte {at}: {source}")]
    BadHeader {
        at: u64,
        #[source]
        source: SegmentError,
    },
    /// The file ends inside an MP4 box header.
    #[error("a box header cut off at byte {0}")]
    CutBoxHeader(u64),
    /// A `moov` or `moof` too large to read whole.
    #[error("a {} box of {size} bytes at byte {at}", String::from_utf8_lossy(.kind))]
    BoxTooLarge { kind: [u8; 4], size: u64, at: u64 },
    /// Media data before the first fragment: a plain MP4.
    #[error("an MP4 whose media comes before any fragment (mdat at byte {at}{}): MediaSource cannot stream it. Remux it: ffmpeg -i IN -c copy -movflags frag_keyframe+empty_moov+default_base_moof OUT.mp4", unfragmented_note(.fragmented))]
    MediaBeforeFragment { at: u64, fragmented: bool },
    /// An MP4 without `mvex`.
    #[error(
        "an MP4 that is not fragmented (no mvex in its moov): MediaSource cannot stream it. Remux it: ffmpeg -i IN -c copy -movflags frag_keyframe+empty_moov+default_base_moof OUT.mp4"
    )]
    NotFragmented,
    /// The WebM's EBML header does not parse.
    #[error("{0}")]
    BadEbmlHeader(#[source] SegmentError),
    #[error("the EBML header is cut off")]
    CutEbmlHeader,
    #[error("an EBML header of unknown size")]
    EbmlHeaderSizeUnknown,
    /// Nothing (readable) after the EBML header.
    #[error("no Segment after the EBML header")]
    NoSegment,
    /// Another element where the Segment should start.
    #[error("no Segment after the EBML header (element {0:#x})")]
    NotSegment(u32),
    /// Only a Cluster may be of unknown size (a live recording's): anything else has no end.
    #[error("an element of unknown size at byte {0} that is no Cluster")]
    UnknownSizeElement(u64),
    #[error("neither WebM nor MP4: a page plays WebM or fragmented MP4")]
    UnknownContainer,
}

/// The end of [`FormatError::MediaBeforeFragment`]'s position: why, when `mvex` is missing.
fn unfragmented_note(fragmented: &bool) -> &'static str {
    if *fragmented {
        ""
    } else {
        ", no mvex in moov: not fragmented"
    }
}

/// What `ppspp check` could not do, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The file could not be opened or its length read.
    #[error("{}: {source}", .path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The file is not something a page can stream.
    #[error("{}: {source}", .path.display())]
    Format {
        path: PathBuf,
        #[source]
        source: FormatError,
    },
}

fn read_at<R: Read + Seek>(r: &mut R, at: u64, len: u64) -> Result<Vec<u8>, FormatError> {
    r.seek(SeekFrom::Start(at))?;
    let mut buf = Vec::new();
    r.take(len).read_to_end(&mut buf)?;
    Ok(buf)
}

fn be(b: &[u8], at: usize, n: usize) -> Option<u64> {
    let s = b.get(at..at + n)?;
    Some(s.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x)))
}

/// The children of an MP4 box body: (type, body).
fn boxes(b: &[u8]) -> impl Iterator<Item = ([u8; 4], &[u8])> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let (kind, size, head) = mp4_header(b.get(at..)?).ok()??;
        let end = at.checked_add(usize::try_from(size).ok()?)?;
        let body = b.get(at + head..end)?;
        at = end;
        Some((kind, body))
    })
}

fn child<'a>(b: &'a [u8], kind: &[u8; 4]) -> Option<&'a [u8]> {
    boxes(b).find(|(k, _)| k == kind).map(|(_, body)| body)
}

/// A `moov`'s video track (or its first): (track ID, timescale), and whether it has `mvex`.
fn read_moov(moov: &[u8]) -> (Option<(u64, u64)>, bool) {
    let fragmented = child(moov, b"mvex").is_some();
    let mut first = None;
    for (kind, trak) in boxes(moov) {
        if &kind != b"trak" {
            continue;
        }
        let id = child(trak, b"tkhd").and_then(|t| {
            let v1 = t.first() == Some(&1);
            be(t, if v1 { 20 } else { 12 }, 4)
        });
        let mdia = child(trak, b"mdia");
        let scale = mdia.and_then(|m| child(m, b"mdhd")).and_then(|m| {
            let v1 = m.first() == Some(&1);
            be(m, if v1 { 20 } else { 12 }, 4)
        });
        let video = mdia
            .and_then(|m| child(m, b"hdlr"))
            .and_then(|h| h.get(8..12))
            == Some(b"vide".as_slice());
        if let (Some(id), Some(scale)) = (id, scale) {
            if video {
                return (Some((id, scale)), fragmented);
            }
            first.get_or_insert((id, scale));
        }
    }
    (first, fragmented)
}

/// A `moof`'s decode time of `track` (or of its first `traf`), in the track's units.
fn moof_time(moof: &[u8], track: u64) -> Option<u64> {
    let mut first = None;
    for (kind, traf) in boxes(moof) {
        if &kind != b"traf" {
            continue;
        }
        let id = child(traf, b"tfhd").and_then(|t| be(t, 4, 4));
        let time = child(traf, b"tfdt").and_then(|t| {
            let v1 = t.first() == Some(&1);
            be(t, 4, if v1 { 8 } else { 4 })
        });
        if id == Some(track) {
            return time;
        }
        first = first.or(time);
    }
    first
}

fn check_mp4<R: Read + Seek>(r: &mut R, len: u64) -> Result<Report, FormatError> {
    let mut at = 0u64;
    let mut track = None;
    let mut fragmented = false;
    let mut init_len = None;
    let mut segments: Vec<Segment> = Vec::new();
    while at < len {
        let head = read_at(r, at, 16)?;
        let (kind, size, _) = mp4_header(&head)
            .map_err(|source| FormatError::BadHeader { at, source })?
            .ok_or(FormatError::CutBoxHeader(at))?;
        let end = at.saturating_add(size).min(len);
        match &kind {
            b"moov" | b"moof" if size > MAX_HEADER_READ => {
                return Err(FormatError::BoxTooLarge { kind, size, at });
            }
            b"moov" => {
                let body = read_at(r, at, size)?;
                let (t, f) = read_moov(body.get(8..).unwrap_or_default());
                track = t;
                fragmented = f;
            }
            b"moof" => {
                init_len.get_or_insert(at);
                let body = read_at(r, at, size)?;
                let start = track.and_then(|(id, scale)| {
                    let t = moof_time(body.get(8..).unwrap_or_default(), id)?;
                    (scale > 0).then(|| t as f64 / scale as f64)
                });
                segments.push(Segment {
                    offset: at,
                    len: 0,
                    start,
                });
            }
            b"mdat" if segments.is_empty() => {
                return Err(FormatError::MediaBeforeFragment { at, fragmented });
            }
            _ => {}
        }
        at = end;
        if let Some(s) = segments.last_mut() {
            s.len = end - s.offset;
        }
    }
    if !fragmented {
        return Err(FormatError::NotFragmented);
    }
    Ok(Report {
        kind: Kind::FragmentedMp4,
        init_len: init_len.unwrap_or(len),
        segments,
        note: None,
    })
}

const SEGMENT: u32 = 0x1853_8067;
const CLUSTER: u32 = 0x1F43_B675;
const INFO: u32 = 0x1549_A966;
const TIMECODE_SCALE: u32 = 0x2A_D7B1;
const TIMECODE: u32 = 0xE7;

/// The children of an EBML body whose bytes are all here: (ID, data).
fn elements(b: &[u8]) -> impl Iterator<Item = (u32, &[u8])> {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        let (id, size, head) = ebml_header(b.get(at..)?).ok()??;
        let size = usize::try_from(size?).ok()?;
        let start = at + head;
        let data = b.get(start..start.checked_add(size)?)?;
        at = start + size;
        Some((id, data))
    })
}

fn check_webm<R: Read + Seek>(r: &mut R, len: u64) -> Result<Report, FormatError> {
    let head = read_at(r, 0, 64)?;
    let (_, size, hlen) = ebml_header(&head)
        .map_err(FormatError::BadEbmlHeader)?
        .ok_or(FormatError::CutEbmlHeader)?;
    let mut at = hlen as u64 + size.ok_or(FormatError::EbmlHeaderSizeUnknown)?;
    let seg = read_at(r, at, 16)?;
    let (id, seg_size, seg_head) = ebml_header(&seg)
        .map_err(FormatError::BadEbmlHeader)?
        .ok_or(FormatError::NoSegment)?;
    if id != SEGMENT {
        return Err(FormatError::NotSegment(id));
    }
    at += seg_head as u64;
    let end = seg_size.map_or(len, |s| at.saturating_add(s).min(len));
    let mut scale_ns = 1_000_000u64;
    let mut init_len = None;
    let mut segments: Vec<Segment> = Vec::new();
    let mut note = None;
    while at < end {
        let head = read_at(r, at, 16)?;
        let Some((id, size, hlen)) =
            ebml_header(&head).map_err(|source| FormatError::BadHeader { at, source })?
        else {
            break;
        };
        if id == CLUSTER {
            init_len.get_or_insert(at);
            let first = read_at(r, at + hlen as u64, 32)?;
            let start = ebml_header(&first)
                .ok()
                .flatten()
                .and_then(|(cid, csize, chead)| {
                    let csize = usize::try_from(csize?).ok()?;
                    (cid == TIMECODE)
                        .then(|| be(&first, chead, csize))
                        .flatten()
                });
            let start = start.map(|tc| tc as f64 * scale_ns as f64 / 1e9);
            let Some(size) = size else {
                note = Some("Clusters of unknown size (a live recording): segments after the first not measured".to_string());
                segments.push(Segment {
                    offset: at,
                    len: end - at,
                    start,
                });
                break;
            };
            segments.push(Segment {
                offset: at,
                len: hlen as u64 + size,
                start,
            });
        } else if id == INFO {
            let body = read_at(r, at + hlen as u64, size.unwrap_or(0).min(MAX_HEADER_READ))?;
            if let Some((_, s)) = elements(&body).find(|(i, _)| *i == TIMECODE_SCALE) {
                scale_ns = be(s, 0, s.len().min(8)).unwrap_or(scale_ns);
            }
        }
        let Some(size) = size else {
            return Err(FormatError::UnknownSizeElement(at));
        };
        at += hlen as u64 + size;
    }
    Ok(Report {
        kind: Kind::WebM,
        init_len: init_len.unwrap_or(len),
        segments,
        note,
    })
}

/// Looks at `r` (`len` bytes): what it is and how its media segments are laid out.
pub fn inspect<R: Read + Seek>(r: &mut R, len: u64) -> Result<Report, FormatError> {
    let head = read_at(r, 0, 8)?;
    if head.get(..4) == Some(&[0x1A, 0x45, 0xDF, 0xA3]) {
        check_webm(r, len)
    } else if head.get(4..8) == Some(b"ftyp") {
        check_mp4(r, len)
    } else {
        Err(FormatError::UnknownContainer)
    }
}

pub fn run(args: &CheckArgs) -> Result<(), CheckError> {
    let path = args.file.display();
    let open = |source| CheckError::Open {
        path: args.file.clone(),
        source,
    };
    let mut file = File::open(&args.file).map_err(open)?;
    let len = file.metadata().map_err(open)?.len();
    let report = inspect(&mut file, len).map_err(|source| CheckError::Format {
        path: args.file.clone(),
        source,
    })?;
    let kind = match report.kind {
        Kind::WebM => "WebM",
        Kind::FragmentedMp4 => "fragmented MP4",
    };
    let durations = report.durations();
    let longest = durations.iter().copied().fold(0.0f64, f64::max);
    let biggest = report.segments.iter().map(|s| s.len).max().unwrap_or(0);
    let first = report.segments.first().map_or(0, |s| s.len);
    println!(
        "{path}: {kind}, {len} bytes: {init} bytes of initialization segment, {n} media segments (first {first} bytes, largest {biggest} bytes{dur})",
        init = report.init_len,
        n = report.segments.len(),
        dur = if durations.is_empty() {
            String::new()
        } else {
            format!(", longest {longest:.2} s")
        },
    );
    if let Some(note) = &report.note {
        println!("note: {note}");
    }
    for w in report.warnings() {
        println!("warning: {w}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn mp4_box(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut out = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(body);
        out
    }

    fn full(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        mp4_box(kind, &[&[0, 0, 0, 0], body].concat())
    }

    /// An fMP4 with a video track (ID 1, timescale 1000) and a fragment at each of `times` (ms).
    fn fmp4(times: &[u32], mvex: bool) -> Vec<u8> {
        let tkhd = full(b"tkhd", &[&[0; 8][..], &1u32.to_be_bytes()].concat());
        let mdhd = full(b"mdhd", &[&[0; 8][..], &1000u32.to_be_bytes()].concat());
        let hdlr = full(b"hdlr", &[&[0; 4][..], b"vide"].concat());
        let mdia = mp4_box(b"mdia", &[mdhd, hdlr].concat());
        let trak = mp4_box(b"trak", &[tkhd, mdia].concat());
        let mut moov_body = trak;
        if mvex {
            moov_body.extend(mp4_box(b"mvex", &[]));
        }
        let mut out = [mp4_box(b"ftyp", b"iso5"), mp4_box(b"moov", &moov_body)].concat();
        for &t in times {
            let tfhd = full(b"tfhd", &1u32.to_be_bytes());
            let tfdt = full(b"tfdt", &t.to_be_bytes());
            out.extend(mp4_box(b"moof", &mp4_box(b"traf", &[tfhd, tfdt].concat())));
            out.extend(mp4_box(b"mdat", &[7; 100]));
        }
        out
    }

    fn report(file: &[u8]) -> Result<Report, FormatError> {
        inspect(&mut Cursor::new(file), file.len() as u64)
    }

    #[test]
    fn a_fragmented_mp4_with_2_s_fragments_passes() {
        let file = fmp4(&[0, 2000, 4000], true);
        let r = report(&file).unwrap();
        assert_eq!(r.kind, Kind::FragmentedMp4);
        assert_eq!(r.segments.len(), 3);
        assert_eq!(r.durations(), vec![2.0, 2.0]);
        assert_eq!(r.segments[0].offset, r.init_len);
        assert_eq!(
            r.segments.iter().map(|s| s.len).sum::<u64>() + r.init_len,
            file.len() as u64
        );
        assert!(r.warnings().is_empty(), "{:?}", r.warnings());
    }

    #[test]
    fn fragments_of_10_s_are_a_warning() {
        let r = report(&fmp4(&[0, 10_000, 20_000], true)).unwrap();
        let w = r.warnings();
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("10.0 s") && w[0].contains("-g 50"), "{w:?}");
    }

    #[test]
    fn a_plain_mp4_is_an_error_that_says_how_to_remux() {
        let plain = [
            mp4_box(b"ftyp", b"isom"),
            fmp4(&[], false)[12..].to_vec(),
            mp4_box(b"mdat", &[1; 50]),
        ]
        .concat();
        let err = report(&plain).unwrap_err().to_string();
        assert!(
            err.contains("not fragmented") && err.contains("frag_keyframe"),
            "{err}"
        );
        let err = report(&fmp4(&[0], false)).unwrap_err().to_string();
        assert!(err.contains("not fragmented"), "{err}");
    }

    fn el(id: &[u8], body: &[u8]) -> Vec<u8> {
        let mut out = id.to_vec();
        out.push(0x01); // an 8-byte size
        out.extend_from_slice(&(body.len() as u64).to_be_bytes()[1..]);
        out.extend_from_slice(body);
        out
    }

    fn webm(timecodes_ms: &[u16]) -> Vec<u8> {
        let info = el(
            &[0x15, 0x49, 0xA9, 0x66],
            &el(&[0x2A, 0xD7, 0xB1], &[0x0F, 0x42, 0x40]),
        );
        let mut seg = info;
        for &tc in timecodes_ms {
            seg.extend(el(
                &[0x1F, 0x43, 0xB6, 0x75],
                &[el(&[0xE7], &tc.to_be_bytes()), el(&[0xA3], &[0; 80])].concat(),
            ));
        }
        [
            el(&[0x1A, 0x45, 0xDF, 0xA3], &el(&[0x42, 0x82], b"webm")),
            el(&[0x18, 0x53, 0x80, 0x67], &seg),
        ]
        .concat()
    }

    #[test]
    fn webm_clusters_are_measured_from_their_timecodes() {
        let r = report(&webm(&[0, 2000, 4000, 9000])).unwrap();
        assert_eq!(r.kind, Kind::WebM);
        assert_eq!(r.durations(), vec![2.0, 2.0, 5.0]);
        assert_eq!(r.warnings().len(), 1, "a 5 s Cluster");
        assert!(
            report(&webm(&[0, 1000, 2000]))
                .unwrap()
                .warnings()
                .is_empty()
        );
    }

    #[test]
    fn neither_container_nor_a_cut_header_panics() {
        assert!(
            report(b"hello world, not a video")
                .unwrap_err()
                .to_string()
                .contains("neither WebM nor MP4")
        );
        let file = fmp4(&[0, 2000], true);
        for cut in [20, 40, file.len() - 50] {
            let _ = report(&file[..cut]);
        }
        let w = webm(&[0, 2000]);
        for cut in [5, 30, w.len() - 20] {
            let _ = report(&w[..cut]);
        }
    }
}
