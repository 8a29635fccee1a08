//! Finds the initialisation segment and the media segments' starts in a live WebM or
//! fragmented MP4 byte stream, as it arrives.
//!
//! - WebM: the EBML header and the Segment's children before the first Cluster are the
//!   initialisation segment; each Cluster starts a media segment (ffmpeg starts one at
//!   every video keyframe). Clusters of unknown size (live muxers) end where the next
//!   top-level element begins.
//! - MP4: the boxes before the first `moof` (or `styp`) are the initialisation segment
//!   (`ftyp`, `moov`); each `moof` (or the `styp` before it) starts a media segment.
//!
//! The source cuts a chunk where a media segment starts and where one ends, so a viewer
//! can start at any chunk that begins a segment, and a segment is not held back waiting
//! for the next one's bytes.

use std::collections::VecDeque;

/// Bytes of the stream, in order.
#[derive(Debug, PartialEq, Eq)]
pub struct Piece {
    pub bytes: Vec<u8>,
    /// A media segment starts with these bytes.
    pub starts_segment: bool,
    /// A media segment ends with these bytes.
    pub ends_segment: bool,
}

/// The containers a live stream may come in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    WebM,
    Mp4,
}

/// The longest initialisation segment accepted: it travels in front of every media segment.
pub const MAX_INIT_LEN: usize = 16 * 1024;

const EBML: u32 = 0x1A45_DFA3;
const SEGMENT: u32 = 0x1853_8067;
const CLUSTER: u32 = 0x1F43_B675;
/// Elements that sit next to Clusters in a Segment: one of them ends an unknown-size
/// Cluster.
const SEGMENT_CHILDREN: [u32; 8] = [
    CLUSTER,
    0x1C53_BB6B, // Cues
    0x1254_C367, // Tags
    0x114D_9B74, // SeekHead
    0x1549_A966, // Info
    0x1654_AE6B, // Tracks
    0x1043_A770, // Chapters
    0x1941_A469, // Attachments
];

/// Why the stream cannot be cut.
#[derive(Debug, PartialEq, Eq)]
pub enum SegmentError {
    /// Neither an EBML header nor an `ftyp` box at the start.
    UnknownContainer,
    /// No media segment within [`MAX_INIT_LEN`] bytes.
    InitTooLong,
    /// An element or box whose size cannot be read or is unknown where it must be known.
    Malformed(&'static str),
}

impl std::fmt::Display for SegmentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SegmentError::UnknownContainer => {
                f.write_str("the input is neither WebM nor MP4 (use -f webm or fragmented -f mp4)")
            }
            SegmentError::InitTooLong => write!(
                f,
                "no media segment within the first {MAX_INIT_LEN} bytes (fragmented MP4 needs -movflags frag_keyframe+empty_moov+default_base_moof)"
            ),
            SegmentError::Malformed(why) => write!(f, "malformed stream: {why}"),
        }
    }
}

impl std::error::Error for SegmentError {}

/// An EBML element header: ID, size (`None`: unknown) and header length.
pub(crate) fn ebml_header(b: &[u8]) -> Result<Option<(u32, Option<u64>, usize)>, SegmentError> {
    let Some(&first) = b.first() else {
        return Ok(None);
    };
    let id_len = first.leading_zeros() as usize + 1;
    if id_len > 4 {
        return Err(SegmentError::Malformed("EBML ID longer than 4 bytes"));
    }
    let Some(&size_first) = b.get(id_len) else {
        return Ok(None);
    };
    let size_len = size_first.leading_zeros() as usize + 1;
    if size_len > 8 {
        return Err(SegmentError::Malformed("EBML size longer than 8 bytes"));
    }
    let Some(size_bytes) = b.get(id_len..id_len + size_len) else {
        return Ok(None);
    };
    let id = b[..id_len]
        .iter()
        .fold(0u32, |a, &x| (a << 8) | u32::from(x));
    let marker = 1u64 << (7 * size_len);
    let raw = size_bytes
        .iter()
        .fold(0u64, |a, &x| (a << 8) | u64::from(x));
    let value = raw & (marker - 1);
    let size = (value != marker - 1).then_some(value);
    Ok(Some((id, size, id_len + size_len)))
}

/// An MP4 box header: type, total size and header length.
pub(crate) fn mp4_header(b: &[u8]) -> Result<Option<([u8; 4], u64, usize)>, SegmentError> {
    let Some(head) = b.get(..8) else {
        return Ok(None);
    };
    let size = u64::from(u32::from_be_bytes([head[0], head[1], head[2], head[3]]));
    let kind = [head[4], head[5], head[6], head[7]];
    let (size, len) = match size {
        0 => {
            return Err(SegmentError::Malformed(
                "an MP4 box running to the end of the stream",
            ));
        }
        1 => match b.get(8..16) {
            Some(large) => (u64::from_be_bytes(large.try_into().unwrap_or_default()), 16),
            None => return Ok(None),
        },
        n => (n, 8),
    };
    if size < len as u64 {
        return Err(SegmentError::Malformed(
            "an MP4 box shorter than its header",
        ));
    }
    Ok(Some((kind, size, len)))
}

/// Cuts a live stream; see the module docs.
#[derive(Debug, Default)]
pub struct Segmenter {
    container: Option<Container>,
    /// Bytes taken in and not yet handed out.
    buf: Vec<u8>,
    /// Before the first media segment: where the scan of the initialisation segment is.
    scan: usize,
    init: Option<Vec<u8>>,
    /// Body bytes of the current element to hand out without looking.
    pass: u64,
    /// Whether the segment ends with the bytes being passed.
    pass_ends_segment: bool,
    /// Inside a WebM Cluster of unknown size.
    in_cluster: bool,
    /// The last MP4 box was a `styp` (its `moof` continues the segment).
    after_styp: bool,
    out: VecDeque<Piece>,
}

impl Segmenter {
    pub fn new() -> Segmenter {
        Segmenter::default()
    }

    /// The initialisation segment, once the first media segment began.
    pub fn init(&self) -> Option<&[u8]> {
        self.init.as_deref()
    }

    /// The next piece of media after the initialisation segment.
    pub fn pop(&mut self) -> Option<Piece> {
        self.out.pop_front()
    }

    /// Takes in the next bytes of the stream.
    pub fn push(&mut self, data: &[u8]) -> Result<(), SegmentError> {
        self.buf.extend_from_slice(data);
        if self.init.is_none() {
            self.find_init()?;
            if self.init.is_none() {
                return Ok(());
            }
        }
        self.cut()
    }

    fn find_init(&mut self) -> Result<(), SegmentError> {
        if self.container.is_none() {
            if self.buf.len() < 8 {
                return Ok(());
            }
            self.container = Some(container_of(&self.buf).ok_or(SegmentError::UnknownContainer)?);
        }
        loop {
            if self.scan > MAX_INIT_LEN {
                return Err(SegmentError::InitTooLong);
            }
            let Some(rest) = self.buf.get(self.scan..) else {
                return Ok(());
            };
            let media_starts = match self.container {
                Some(Container::WebM) => {
                    let Some((id, size, len)) = ebml_header(rest)? else {
                        return Ok(());
                    };
                    match (id, size) {
                        (CLUSTER, _) => true,
                        // Into the Segment: its children come next.
                        (SEGMENT, _) => {
                            self.scan += len;
                            false
                        }
                        (_, Some(size)) => {
                            self.scan += len + size as usize;
                            false
                        }
                        (_, None) => {
                            return Err(SegmentError::Malformed("an element of unknown size"));
                        }
                    }
                }
                _ => {
                    let Some((kind, size, _)) = mp4_header(rest)? else {
                        return Ok(());
                    };
                    if &kind == b"moof" || &kind == b"styp" {
                        true
                    } else {
                        self.scan += size as usize;
                        false
                    }
                }
            };
            if media_starts {
                let rest = self.buf.split_off(self.scan);
                self.init = Some(std::mem::replace(&mut self.buf, rest));
                return Ok(());
            }
        }
    }

    fn emit(&mut self, n: usize, starts_segment: bool, ends_segment: bool) {
        let rest = self.buf.split_off(n);
        let bytes = std::mem::replace(&mut self.buf, rest);
        self.out.push_back(Piece {
            bytes,
            starts_segment,
            ends_segment,
        });
    }

    fn cut(&mut self) -> Result<(), SegmentError> {
        loop {
            if self.pass > 0 {
                if self.buf.is_empty() {
                    return Ok(());
                }
                let n = self.pass.min(self.buf.len() as u64);
                self.pass -= n;
                let ends = self.pass == 0 && self.pass_ends_segment;
                self.emit(n as usize, false, ends);
                continue;
            }
            match self.container {
                Some(Container::WebM) => {
                    let Some((id, size, len)) = ebml_header(&self.buf)? else {
                        return Ok(());
                    };
                    if self.in_cluster && SEGMENT_CHILDREN.contains(&id) {
                        // An unknown-size Cluster ends where a Segment child begins.
                        self.in_cluster = false;
                        if let Some(last) = self.out.back_mut() {
                            last.ends_segment = true;
                        }
                    }
                    let starts = id == CLUSTER;
                    match size {
                        Some(size) => {
                            self.pass = size;
                            self.pass_ends_segment = starts;
                            self.emit(len, starts, starts && size == 0);
                        }
                        None if starts => {
                            self.in_cluster = true;
                            self.emit(len, true, false);
                        }
                        None => {
                            return Err(SegmentError::Malformed("an element of unknown size"));
                        }
                    }
                }
                _ => {
                    let Some((kind, size, len)) = mp4_header(&self.buf)? else {
                        return Ok(());
                    };
                    let starts = &kind == b"styp" || (&kind == b"moof" && !self.after_styp);
                    self.after_styp = &kind == b"styp";
                    // A fragment is a moof and its mdat: it ends with the mdat.
                    let ends = &kind == b"mdat";
                    self.pass = size - len as u64;
                    self.pass_ends_segment = ends;
                    self.emit(len, starts, ends && self.pass == 0);
                }
            }
        }
    }
}

/// The container a stream (or its initialisation segment) starts as.
pub fn container_of(start: &[u8]) -> Option<Container> {
    if start.starts_with(&EBML.to_be_bytes()) {
        Some(Container::WebM)
    } else if start.get(4..8) == Some(b"ftyp") {
        Some(Container::Mp4)
    } else {
        None
    }
}

/// Whether a live chunk begins a media segment (the source cuts chunks there): where a
/// viewer may start.
pub fn starts_segment(container: Container, chunk: &[u8]) -> bool {
    match container {
        Container::WebM => chunk.starts_with(&CLUSTER.to_be_bytes()),
        Container::Mp4 => chunk
            .get(4..8)
            .is_some_and(|k| k == b"moof" || k == b"styp"),
    }
}

/// Cuts pieces into chunks of at most `chunk_size` bytes, and early where a media segment
/// starts or ends. A segment's last bytes are cut into as many chunks as complete the
/// signing group (`group` chunks under one signature): the source then signs the segment's
/// end at once, rather than when the next segment fills the group.
#[derive(Debug)]
pub struct Chunker {
    chunk_size: usize,
    group: u64,
    /// The chunk being filled.
    current: Vec<u8>,
    /// The last full chunk, held back until the segment goes on (or ends).
    held: Option<Vec<u8>>,
    /// Chunks handed out.
    emitted: u64,
}

impl Chunker {
    pub fn new(chunk_size: usize, group: u64) -> Chunker {
        Chunker {
            chunk_size: chunk_size.max(1),
            group: group.max(1),
            current: Vec::new(),
            held: None,
            emitted: 0,
        }
    }

    fn emit(&mut self, chunk: Vec<u8>, out: &mut Vec<Vec<u8>>) {
        self.emitted += 1;
        out.push(chunk);
    }

    /// Adds a piece; chunks ready go to `out`.
    pub fn add(&mut self, piece: &Piece, out: &mut Vec<Vec<u8>>) {
        if piece.starts_segment {
            self.flush(out);
        }
        let mut rest = &piece.bytes[..];
        while !rest.is_empty() {
            let room = self.chunk_size - self.current.len();
            let (now, later) = rest.split_at(room.min(rest.len()));
            self.current.extend_from_slice(now);
            rest = later;
            if self.current.len() == self.chunk_size {
                let full = std::mem::take(&mut self.current);
                if let Some(previous) = self.held.replace(full) {
                    self.emit(previous, out);
                }
            }
        }
        if piece.ends_segment {
            self.flush(out);
        }
    }

    /// Ends the segment (or the stream): its tail goes out cut to complete the group.
    pub fn flush(&mut self, out: &mut Vec<Vec<u8>>) {
        let mut tail = self.held.take().unwrap_or_default();
        tail.append(&mut self.current);
        if tail.is_empty() {
            return;
        }
        // The same cut a viewer finds again from the segment's chunk count.
        let pieces = ppspp::live::segment::tail_pieces(
            tail.len(),
            self.chunk_size,
            self.group,
            self.emitted,
        );
        let mut at = 0;
        for len in ppspp::live::segment::split_evenly(tail.len(), pieces) {
            self.emit(tail[at..at + len].to_vec(), out);
            at += len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ebml(id: &[u8], body: &[u8]) -> Vec<u8> {
        let mut v = id.to_vec();
        // 8-byte size.
        v.push(0x01);
        v.extend_from_slice(&(body.len() as u64).to_be_bytes()[1..]);
        v.extend_from_slice(body);
        v
    }

    fn webm(clusters: &[&[u8]], unknown_size: bool) -> (Vec<u8>, usize) {
        let mut s = ebml(&[0x1A, 0x45, 0xDF, 0xA3], b"hdr");
        s.extend_from_slice(&[
            0x18, 0x53, 0x80, 0x67, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        ]);
        s.extend(ebml(&[0x16, 0x54, 0xAE, 0x6B], b"tracks"));
        let init = s.len();
        for c in clusters {
            if unknown_size {
                s.extend_from_slice(&[0x1F, 0x43, 0xB6, 0x75, 0xFF]);
                s.extend(ebml(&[0xA3], c));
            } else {
                s.extend(ebml(&[0x1F, 0x43, 0xB6, 0x75], &ebml(&[0xA3], c)));
            }
        }
        (s, init)
    }

    /// Feeds `stream` in pieces of `step` bytes; returns the init and the chunks.
    fn run(stream: &[u8], step: usize, cs: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
        let mut seg = Segmenter::new();
        let mut chunker = Chunker::new(cs, 4);
        let mut chunks = Vec::new();
        for part in stream.chunks(step) {
            seg.push(part).unwrap();
            while let Some(p) = seg.pop() {
                chunker.add(&p, &mut chunks);
            }
        }
        chunker.flush(&mut chunks);
        (seg.init().unwrap().to_vec(), chunks)
    }

    #[test]
    fn webm_is_cut_at_every_cluster_whatever_the_reads() {
        for unknown in [false, true] {
            let (stream, init_len) = webm(&[&[1; 50], &[2; 7], &[3; 130]], unknown);
            for step in [1, 3, 64, 4096] {
                let (init, chunks) = run(&stream, step, 64);
                assert_eq!(init, stream[..init_len]);
                assert_eq!(chunks.concat(), stream[init_len..], "{unknown} {step}");
                let starts: Vec<bool> = chunks
                    .iter()
                    .map(|c| starts_segment(Container::WebM, c))
                    .collect();
                assert_eq!(starts.iter().filter(|s| **s).count(), 3, "{starts:?}");
                assert!(chunks.iter().all(|c| !c.is_empty() && c.len() <= 64));
                // Every segment ends a signing group of 4.
                let mut count = 0;
                for c in &chunks {
                    if starts_segment(Container::WebM, c) {
                        assert_eq!(count % 4, 0, "{unknown} {step}");
                    }
                    count += 1;
                }
                assert_eq!(count % 4, 0);
            }
        }
    }

    fn mp4_box(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
        let mut v = ((body.len() + 8) as u32).to_be_bytes().to_vec();
        v.extend_from_slice(kind);
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn fragmented_mp4_is_cut_at_every_fragment() {
        let mut stream = mp4_box(b"ftyp", b"isom");
        stream.extend(mp4_box(b"moov", &[9; 40]));
        let init_len = stream.len();
        for i in 0..3u8 {
            stream.extend(mp4_box(b"moof", &[i; 20]));
            stream.extend(mp4_box(b"mdat", &[i; 90]));
        }
        for step in [1, 5, 1000] {
            let (init, chunks) = run(&stream, step, 64);
            assert_eq!(init, stream[..init_len]);
            assert_eq!(chunks.concat(), stream[init_len..]);
            // Each fragment, 28 + 98 bytes, in 4 chunks (a signing group) of at most 64.
            let lens: Vec<usize> = chunks.iter().map(Vec::len).collect();
            assert_eq!(lens, [32, 32, 31, 31].repeat(3));
            assert!(starts_segment(Container::Mp4, &chunks[4]));
            assert!(!starts_segment(Container::Mp4, &chunks[1]));
        }
    }

    #[test]
    fn other_input_is_refused_clearly() {
        let mut seg = Segmenter::new();
        assert_eq!(
            seg.push(b"#EXTM3U\n#EXT-X-VERSION:3\n"),
            Err(SegmentError::UnknownContainer)
        );
        // An MP4 that never fragments.
        let mut seg = Segmenter::new();
        let mut stream = mp4_box(b"ftyp", b"isom");
        stream.extend(mp4_box(b"mdat", &[0; MAX_INIT_LEN]));
        assert_eq!(seg.push(&stream), Err(SegmentError::InitTooLong));
    }
}
