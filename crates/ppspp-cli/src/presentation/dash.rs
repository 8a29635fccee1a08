//! A DASH presentation on disk (a packager's output, e.g. ffmpeg's `dash` muxer) as the
//! renditions `prepare` hashes: each Representation's initialisation segment and media
//! segments, in order, as parts of files. Parsing is dash-mpd-core's; the segment
//! addressing (templates, timelines, lists, one indexed file) is resolved here.

use super::error::DashError;
use super::source::{PartFiles, SourcePart, SourceRendition, Variant, codec_kinds};
use dash_mpd_core::{
    AdaptationSet, BaseURL, Initialization, MPD, Period, Representation, SegmentTemplate,
    SegmentTimeline,
};
use std::path::{Path, PathBuf};

/// The renditions of the MPD at `path`: every video and audio Representation of its one
/// Period. Text tracks are left out: they stay plain HTTP.
pub fn renditions(path: &Path) -> Result<Vec<SourceRendition>, DashError> {
    let xml = std::fs::read_to_string(path).map_err(|source| DashError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mpd = dash_mpd_core::parse(&xml).map_err(|source| DashError::NotAnMpd {
        path: path.to_path_buf(),
        source,
    })?;
    if mpd.mpdtype.as_deref() == Some("dynamic") {
        return Err(DashError::Live(path.to_path_buf()));
    }
    let period = match mpd.periods.as_slice() {
        [p] => p,
        [] => return Err(DashError::NoPeriod(path.to_path_buf())),
        _ => {
            return Err(DashError::Periods {
                path: path.to_path_buf(),
                count: mpd.periods.len(),
            });
        }
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let total_secs = period
        .duration
        .or(mpd.mediaPresentationDuration)
        .map(|d| d.as_secs_f64());
    let mut files = PartFiles::new(dir);
    let mut out = Vec::new();
    for (v, base, set, rep) in media_representations(path, dir, &mpd, period)? {
        let (parts, duration_secs) =
            representation_parts(&mut files, &base, period, set, rep, total_secs).map_err(|e| {
                DashError::Representation {
                    path: path.to_path_buf(),
                    id: v.uri.clone(),
                    source: Box::new(e),
                }
            })?;
        out.push(SourceRendition {
            id: v.uri,
            kind: v.kind.into(),
            bandwidth: v.bandwidth,
            resolution: v.resolution,
            duration_secs,
            parts,
        });
    }
    if out.is_empty() {
        return Err(DashError::NoRepresentation(path.to_path_buf()));
    }
    Ok(out)
}

/// A live MPD as `dash live` follows it.
pub struct LiveMpd {
    /// It is no longer dynamic: nothing more comes.
    pub ended: bool,
    pub representations: Vec<LiveRepresentation>,
}

/// A Representation of a live MPD: what it is, and what it lists now.
pub struct LiveRepresentation {
    /// `uri` is the Representation's id.
    pub variant: Variant,
    pub init: Option<PathBuf>,
    /// Each listed segment's `$Number$` and file.
    pub segments: Vec<(u64, PathBuf)>,
}

/// The live MPD at `path` (ffmpeg's `dash` muxer: one Period, SegmentTemplate with a
/// SegmentTimeline); `Ok(None)` while it cannot be read (being rewritten), an error for a
/// form that cannot be followed.
pub fn read_live(path: &Path) -> Result<Option<LiveMpd>, DashError> {
    let Ok(xml) = std::fs::read_to_string(path) else {
        return Ok(None);
    };
    let Ok(mpd) = dash_mpd_core::parse(&xml) else {
        return Ok(None);
    };
    let period = match mpd.periods.as_slice() {
        [p] => p,
        [] => return Ok(None),
        _ => {
            return Err(DashError::LivePeriods {
                path: path.to_path_buf(),
                count: mpd.periods.len(),
            });
        }
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut representations = Vec::new();
    for (variant, base, set, rep) in media_representations(path, dir, &mpd, period)? {
        let (init, segments) =
            live_segments(&base, period, set, rep).map_err(|e| DashError::Representation {
                path: path.to_path_buf(),
                id: variant.uri.clone(),
                source: Box::new(e),
            })?;
        representations.push(LiveRepresentation {
            variant,
            init,
            segments,
        });
    }
    Ok(Some(LiveMpd {
        ended: mpd.mpdtype.as_deref() != Some("dynamic"),
        representations,
    }))
}

/// Every video and audio Representation of `period` (text is left out: it stays plain
/// HTTP): what it is (its id as `uri`), where its relative URLs resolve, and where it sits.
#[allow(clippy::type_complexity)]
fn media_representations<'a>(
    path: &Path,
    dir: &Path,
    mpd: &MPD,
    period: &'a Period,
) -> Result<Vec<(Variant, BaseDir, &'a AdaptationSet, &'a Representation)>, DashError> {
    let mut out = Vec::new();
    for set in &period.adaptations {
        for rep in &set.representations {
            let Some(kind) = kind_of(set, rep) else {
                continue;
            };
            let id = rep
                .id
                .clone()
                .ok_or_else(|| DashError::NoRepresentationId(path.to_path_buf()))?;
            let variant = Variant {
                uri: id,
                kind,
                bandwidth: rep.bandwidth,
                resolution: rep.width.zip(rep.height).map(|(w, h)| format!("{w}x{h}")),
            };
            out.push((variant, base_dir(dir, mpd, period, set, rep)?, set, rep));
        }
    }
    Ok(out)
}

/// A live Representation's initialisation file and listed segments.
#[allow(clippy::type_complexity)]
fn live_segments(
    base: &BaseDir,
    period: &Period,
    set: &AdaptationSet,
    rep: &Representation,
) -> Result<(Option<PathBuf>, Vec<(u64, PathBuf)>), DashError> {
    let t = merged_template(period, set, rep).ok_or(DashError::LiveWithoutTemplate)?;
    let timeline = t
        .SegmentTimeline
        .as_ref()
        .ok_or(DashError::LiveWithoutTimeline)?;
    let id = rep.id.as_deref().unwrap_or("");
    let bandwidth = rep.bandwidth.unwrap_or(0);
    let init = match &t.initialization {
        Some(i) => Some(super::manifest::local_path(
            &base.dir,
            &expand(i, id, bandwidth, None, None)?,
        )?),
        None => None,
    };
    let media = t.media.as_deref().ok_or(DashError::NoMediaAttribute)?;
    let first = t.startNumber.unwrap_or(1);
    let timescale = t.timescale.unwrap_or(1).max(1);
    let mut segments = Vec::new();
    for (i, (time, _)) in timeline_segments(timeline, timescale, None)?
        .into_iter()
        .enumerate()
    {
        let number = first + i as u64;
        let uri = expand(media, id, bandwidth, Some(number), Some(time))?;
        segments.push((number, super::manifest::local_path(&base.dir, &uri)?));
    }
    Ok((init, segments))
}

/// What a Representation carries: video, audio, or both in one stream; `None` for text
/// and anything else.
fn kind_of(set: &AdaptationSet, rep: &Representation) -> Option<&'static str> {
    let content = rep.contentType.as_deref().or(set.contentType.as_deref());
    let mime = rep.mimeType.as_deref().or(set.mimeType.as_deref());
    let codecs = rep
        .codecs
        .as_deref()
        .or(set.codecs.as_deref())
        .unwrap_or("");
    let kind = content.or_else(|| mime.and_then(|m| m.split('/').next()))?;
    match kind {
        "video" if codec_kinds(codecs) == (true, true) => Some("muxed"),
        "video" => Some("video"),
        "audio" => Some("audio"),
        _ => None,
    }
}

/// The folder the Representation's relative URLs resolve against: the MPD's, then each
/// level's first BaseURL in turn (a BaseURL naming a file leaves its folder).
fn base_dir(
    dir: &Path,
    mpd: &MPD,
    period: &Period,
    set: &AdaptationSet,
    rep: &Representation,
) -> Result<BaseDir, DashError> {
    let mut folder = String::new();
    let mut file = None;
    for bases in [&mpd.base_url, &period.BaseURL, &set.BaseURL, &rep.BaseURL] {
        let Some(BaseURL { base, .. }) = bases.first() else {
            continue;
        };
        let base = base.trim();
        if base.contains("://") || base.starts_with('/') {
            return Err(DashError::BaseUrlNotRelative(base.to_string()));
        }
        match base.rsplit_once('/') {
            Some((d, f)) => {
                folder.push_str(d);
                folder.push('/');
                file = (!f.is_empty()).then(|| f.to_string());
            }
            None => file = (!base.is_empty()).then(|| base.to_string()),
        }
    }
    Ok(BaseDir {
        dir: super::manifest::local_path(dir, &folder)?,
        file,
    })
}

/// Where relative URLs resolve, and the file a BaseURL names, if one does.
struct BaseDir {
    dir: PathBuf,
    file: Option<String>,
}

impl BaseDir {
    /// The file a segment without its own URL lies in.
    fn file(&self) -> Result<&str, DashError> {
        self.file.as_deref().ok_or(DashError::NoMediaFile)
    }
}

/// The Representation's parts in order, and its duration in seconds.
fn representation_parts(
    files: &mut PartFiles,
    base: &BaseDir,
    period: &Period,
    set: &AdaptationSet,
    rep: &Representation,
    total_secs: Option<f64>,
) -> Result<(Vec<SourcePart>, f64), DashError> {
    if let Some(template) = merged_template(period, set, rep) {
        return template_parts(files, base, rep, &template, total_secs);
    }
    if let Some(list) = rep
        .SegmentList
        .as_ref()
        .or(set.SegmentList.as_ref())
        .or(period.SegmentList.as_ref())
    {
        let mut parts = Vec::new();
        if let Some(init) = &list.Initialization {
            parts.push(init_part(files, base, init)?);
        }
        for seg in &list.segment_urls {
            let uri = match &seg.media {
                Some(m) => m.as_str(),
                None => base.file()?,
            };
            parts.push(files.part(&base.dir, uri, range(seg.mediaRange.as_deref())?)?);
        }
        if parts.is_empty() {
            return Err(DashError::EmptySegmentList);
        }
        let nominal = list.duration.map(|d| {
            d as f64 / list.timescale.unwrap_or(1).max(1) as f64 * list.segment_urls.len() as f64
        });
        let secs = at_most(nominal, total_secs);
        return Ok((parts, secs));
    }
    // SegmentBase, or a BaseURL alone: one file holds the whole stream, and players ask for
    // byte ranges of it (its index tells them which).
    let file = base.file()?;
    Ok((
        vec![files.part(&base.dir, file, None)?],
        total_secs.unwrap_or(0.0),
    ))
}

fn init_part(
    files: &mut PartFiles,
    base: &BaseDir,
    init: &Initialization,
) -> Result<SourcePart, DashError> {
    let uri = match &init.sourceURL {
        Some(u) => u.as_str(),
        None => base.file()?,
    };
    Ok(files.part(&base.dir, uri, range(init.range.as_deref())?)?)
}

/// A byte range `a-b` (inclusive, as DASH writes it) as (length, offset).
fn range(r: Option<&str>) -> Result<Option<(u64, Option<u64>)>, DashError> {
    let Some(r) = r else { return Ok(None) };
    let bad = || DashError::BadRange(r.to_string());
    let (a, b) = r.split_once('-').ok_or_else(bad)?;
    let a: u64 = a.trim().parse().map_err(|_| bad())?;
    let b: u64 = b.trim().parse().map_err(|_| bad())?;
    if b < a {
        return Err(bad());
    }
    Ok(Some((b - a + 1, Some(a))))
}

/// The SegmentTemplate in force: the Representation's, with what it leaves out taken
/// from the AdaptationSet's and then the Period's.
fn merged_template(
    period: &Period,
    set: &AdaptationSet,
    rep: &Representation,
) -> Option<SegmentTemplate> {
    let levels: Vec<&SegmentTemplate> = [
        rep.SegmentTemplate.as_ref(),
        set.SegmentTemplate.as_ref(),
        period.SegmentTemplate.as_ref(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut t = (*levels.first()?).clone();
    for parent in &levels[1..] {
        t.media = t.media.or_else(|| parent.media.clone());
        t.initialization = t.initialization.or_else(|| parent.initialization.clone());
        t.startNumber = t.startNumber.or(parent.startNumber);
        t.endNumber = t.endNumber.or(parent.endNumber);
        t.duration = t.duration.or(parent.duration);
        t.timescale = t.timescale.or(parent.timescale);
        t.Initialization = t.Initialization.or_else(|| parent.Initialization.clone());
        t.SegmentTimeline = t.SegmentTimeline.or_else(|| parent.SegmentTimeline.clone());
    }
    Some(t)
}

fn template_parts(
    files: &mut PartFiles,
    base: &BaseDir,
    rep: &Representation,
    t: &SegmentTemplate,
    total_secs: Option<f64>,
) -> Result<(Vec<SourcePart>, f64), DashError> {
    let id = rep.id.as_deref().unwrap_or("");
    let bandwidth = rep.bandwidth.unwrap_or(0);
    let timescale = t.timescale.unwrap_or(1).max(1);
    let mut parts = Vec::new();
    if let Some(init) = &t.initialization {
        let uri = expand(init, id, bandwidth, None, None)?;
        parts.push(files.part(&base.dir, &uri, None)?);
    } else if let Some(init) = &t.Initialization {
        parts.push(init_part(files, base, init)?);
    }
    let media = t.media.as_deref().ok_or(DashError::NoMediaAttribute)?;
    let first = t.startNumber.unwrap_or(1);
    let segments = match &t.SegmentTimeline {
        Some(timeline) => timeline_segments(timeline, timescale, total_secs)?,
        None => {
            let d = t
                .duration
                .filter(|d| *d > 0.0)
                .ok_or(DashError::NoTimelineNorDuration)?;
            let total = total_secs.ok_or(DashError::NoDuration)?;
            let count = match t.endNumber {
                Some(end) if end >= first => end - first + 1,
                _ => (total * timescale as f64 / d).ceil() as u64,
            };
            (0..count).map(|i| (i * d as u64, d as u64)).collect()
        }
    };
    if segments.is_empty() {
        return Err(DashError::EmptyTemplate);
    }
    let mut ticks = 0u64;
    for (i, (time, duration)) in segments.iter().enumerate() {
        let uri = expand(media, id, bandwidth, Some(first + i as u64), Some(*time))?;
        parts.push(files.part(&base.dir, &uri, None)?);
        ticks += duration;
    }
    Ok((
        parts,
        at_most(Some(ticks as f64 / timescale as f64), total_secs),
    ))
}

/// Segments' nominal durations summed, but no more than the presentation's: the last
/// segment of a template or list may be shorter than the others.
fn at_most(nominal: Option<f64>, total: Option<f64>) -> f64 {
    match (nominal, total) {
        (Some(n), Some(t)) => n.min(t),
        (n, t) => n.or(t).unwrap_or(0.0),
    }
}

/// The (start time, duration) of every segment of a timeline, in timescale units. A
/// negative repeat count repeats until the end of the presentation.
fn timeline_segments(
    timeline: &SegmentTimeline,
    timescale: u64,
    total_secs: Option<f64>,
) -> Result<Vec<(u64, u64)>, DashError> {
    let mut out = Vec::new();
    let mut time = 0u64;
    let end = total_secs.map(|s| (s * timescale as f64).round() as u64);
    for (i, s) in timeline.segments.iter().enumerate() {
        if s.d == 0 {
            return Err(DashError::ZeroDuration);
        }
        if let Some(t) = s.t {
            time = t;
        }
        let repeats = match s.r {
            Some(r) if r >= 0 => r as u64,
            None => 0,
            Some(_) => {
                // Until the next entry's start, or the presentation's end.
                let until = match timeline.segments.get(i + 1).and_then(|n| n.t) {
                    Some(t) => t,
                    None => end.ok_or(DashError::RepeatWithoutDuration)?,
                };
                until.saturating_sub(time).div_ceil(s.d).saturating_sub(1)
            }
        };
        if out.len() as u64 + repeats > 1_000_000 {
            return Err(DashError::TooManySegments);
        }
        for _ in 0..=repeats {
            out.push((time, s.d));
            time += s.d;
        }
    }
    Ok(out)
}

/// A template URL with its identifiers filled in: `$RepresentationID$`, `$Bandwidth$`,
/// `$Number$` and `$Time$` (each with an optional `%0Nd` width), and `$$`.
fn expand(
    template: &str,
    id: &str,
    bandwidth: u64,
    number: Option<u64>,
    time: Option<u64>,
) -> Result<String, DashError> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find('$') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let end = after
            .find('$')
            .ok_or_else(|| DashError::UnclosedIdentifier(template.to_string()))?;
        let ident = &after[..end];
        rest = &after[end + 1..];
        let (name, format) = match ident.split_once('%') {
            Some((n, f)) => (n, Some(f)),
            None => (ident, None),
        };
        let value = match name {
            "" => {
                out.push('$');
                continue;
            }
            "RepresentationID" => {
                out.push_str(id);
                continue;
            }
            "Bandwidth" => bandwidth,
            "Number" => number.ok_or_else(|| DashError::MeaninglessIdentifier {
                template: template.to_string(),
                identifier: "Number",
            })?,
            "Time" => time.ok_or_else(|| DashError::MeaninglessIdentifier {
                template: template.to_string(),
                identifier: "Time",
            })?,
            other => {
                return Err(DashError::UnknownIdentifier {
                    template: template.to_string(),
                    identifier: other.to_string(),
                });
            }
        };
        match format {
            None => out.push_str(&value.to_string()),
            Some(f) => {
                let width = f
                    .strip_prefix('0')
                    .and_then(|w| w.strip_suffix('d'))
                    .and_then(|w| w.parse::<usize>().ok())
                    .filter(|w| *w <= 32)
                    .ok_or_else(|| DashError::BadFormat {
                        template: template.to_string(),
                        format: f.to_string(),
                    })?;
                out.push_str(&format!("{value:0width$}"));
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_expand_as_dash_says() {
        let e = |t: &str| expand(t, "v1", 800_000, Some(7), Some(25600));
        assert_eq!(
            e("chunk-stream$RepresentationID$-$Number%05d$.m4s").unwrap(),
            "chunk-streamv1-00007.m4s"
        );
        assert_eq!(e("$Bandwidth$/$Time$.m4s").unwrap(), "800000/25600.m4s");
        assert_eq!(e("a$$b$Number$").unwrap(), "a$b7");
        assert!(e("$Foo$").is_err());
        assert!(e("$Number%5d$").is_err());
        assert!(e("x$Number").is_err());
        assert!(expand("$Number$", "", 0, None, None).is_err());
    }

    #[test]
    fn timelines_repeat_and_run_to_the_end() {
        let s = |t: Option<u64>, d: u64, r: Option<i64>| dash_mpd_core::S {
            t,
            d,
            r,
            ..Default::default()
        };
        let tl = SegmentTimeline {
            segments: vec![s(Some(0), 100, Some(2)), s(None, 50, None)],
        };
        assert_eq!(
            timeline_segments(&tl, 100, None).unwrap(),
            [(0, 100), (100, 100), (200, 100), (300, 50)]
        );
        // r = -1: until the presentation's end (10.5 s at timescale 10 = 105 ticks).
        let tl = SegmentTimeline {
            segments: vec![s(Some(0), 20, Some(-1))],
        };
        let segs = timeline_segments(&tl, 10, Some(10.5)).unwrap();
        assert_eq!(segs.len(), 6);
        assert_eq!(segs.last(), Some(&(100, 20)));
        assert!(timeline_segments(&tl, 10, None).is_err());
    }

    #[test]
    fn ranges_are_inclusive() {
        assert_eq!(range(Some("0-99")).unwrap(), Some((100, Some(0))));
        assert_eq!(range(Some("100-100")).unwrap(), Some((1, Some(100))));
        assert!(range(Some("9-1")).is_err());
        assert!(range(Some("abc")).is_err());
        assert_eq!(range(None).unwrap(), None);
    }
}
