//! `ppspp live` and `ppspp fetch --live` as a user runs them: ffmpeg's test source at real
//! time into the live source (WebM, and fragmented MP4 signed chunk by chunk), a recording
//! from its edge that ffprobe reads, the key kept across restarts, and input that is not a
//! stream refused. Every wait is bounded.

mod common;

use common::{Running, finish, ppspp, run, spawn_command, stderr, temp_dir};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How ffmpeg writes the live stream.
#[derive(Clone, Copy)]
enum Format {
    /// VP8 in WebM, a Cluster per keyframe.
    Webm,
    /// H.264 in fragmented MP4, a fragment per keyframe.
    Mp4,
}

/// ffmpeg's test pattern, `secs` long, on stdout (`realtime`: paced as live).
fn ffmpeg(secs: u32, realtime: bool, format: Format) -> Child {
    let mut cmd = Command::new("ffmpeg");
    cmd.args(["-loglevel", "error"]);
    if realtime {
        cmd.arg("-re");
    }
    cmd.args(["-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-t"])
        .arg(secs.to_string());
    match format {
        Format::Webm => cmd.args([
            "-c:v",
            "libvpx",
            "-deadline",
            "realtime",
            "-b:v",
            "400k",
            "-g",
            "25",
            "-f",
            "webm",
            "-",
        ]),
        Format::Mp4 => cmd.args([
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-tune",
            "zerolatency",
            "-g",
            "25",
            "-movflags",
            "frag_keyframe+empty_moov+default_base_moof",
            "-f",
            "mp4",
            "-",
        ]),
    };
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("ffmpeg (scripts/setup.sh installs it)")
}

/// The video frames ffprobe counts in `file`, and their codec.
fn probe(file: &std::path::Path) -> (String, u64) {
    let probe = Command::new("ffprobe")
        .args([
            "-v",
            "error",
            "-count_frames",
            "-select_streams",
            "v",
            "-show_entries",
            "stream=codec_name,nb_read_frames",
            "-of",
            "csv=p=0",
        ])
        .arg(file)
        .output()
        .expect("ffprobe");
    let text = String::from_utf8_lossy(&probe.stdout).trim().to_string();
    text.split_once(',')
        .and_then(|(codec, n)| Some((codec.to_string(), n.parse().ok()?)))
        .unwrap_or_else(|| {
            panic!(
                "ffprobe: {text:?} {}",
                String::from_utf8_lossy(&probe.stderr)
            )
        })
}

/// `ppspp live` reading `input`'s stdout, with `args`.
fn live(input: &mut Child, key: &std::path::Path, args: &[&str]) -> Running {
    let mut cmd = ppspp();
    cmd.args(["live", "--udp", "127.0.0.1:0", "--linger", "2", "--key"])
        .arg(key)
        .args(args)
        .stdin(Stdio::from(input.stdout.take().expect("ffmpeg's stdout")));
    spawn_command(cmd)
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_live_stream_is_recorded_from_its_edge_and_plays() {
    let dir = temp_dir("live-record");
    let key = dir.join("source.key");
    let mut source = Killed(ffmpeg(9, true, Format::Webm));
    let mut streaming = live(&mut source.0, &key, &[]);
    let uri = streaming.next_line(Duration::from_secs(20));
    // The URI names the stream; the initialisation segment travels in it.
    assert!(
        uri.starts_with("ppspp://live/") && !uri.contains("init="),
        "{uri}"
    );
    // Join a little after the start, as a late viewer.
    std::thread::sleep(Duration::from_secs(2));
    let out = dir.join("recording.webm");
    let (codec, frames) = record(&uri, &out);
    assert_eq!(codec, "vp8");
    // One initialisation segment: the copies in front of each Cluster are left out.
    assert_eq!(
        count(&std::fs::read(&out).unwrap(), &[0x1a, 0x45, 0xdf, 0xa3]),
        1
    );
    // Joined about 2 s in, of 9 s at 25 frames a second.
    assert!(frames >= 100, "{frames} frames recorded");
    ends_by_itself(&mut streaming);

    // Restarted with its key, the stream keeps its swarm ID.
    let mut again = Killed(ffmpeg(1, false, Format::Webm));
    let restarted = live(&mut again.0, &key, &[]);
    let uri2 = restarted.next_line(Duration::from_secs(20));
    let id = |u: &str| u.split('?').next().unwrap_or_default().to_string();
    assert_eq!(id(&uri), id(&uri2));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fragmented_mp4_signed_chunk_by_chunk_is_recorded_and_plays() {
    let dir = temp_dir("live-mp4");
    let mut source = Killed(ffmpeg(12, true, Format::Mp4));
    let mut streaming = live(
        &mut source.0,
        &dir.join("source.key"),
        &["--chunks-per-signature", "1"],
    );
    let uri = streaming.next_line(Duration::from_secs(20));
    assert!(uri.contains("sig=1") && !uri.contains("init="), "{uri}");
    std::thread::sleep(Duration::from_secs(1));
    // A first recording, stopped after a few seconds: it gives the initialisation
    // segment as the stream carries it.
    let first = dir.join("first.mp4");
    let recording = ppspp()
        .args(["fetch", "--live", &uri, "-o", first.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ppspp fetch --live");
    std::thread::sleep(Duration::from_secs(3));
    let _ = Command::new("kill")
        .args(["-INT", &recording.id().to_string()])
        .status();
    let o = finish(recording, Duration::from_secs(20), "ppspp fetch --live");
    assert!(o.status.success(), "{}", stderr(&o));
    let recorded = std::fs::read(&first).unwrap();
    assert_eq!(count(&recorded, b"ftyp"), 1);
    let moof = recorded.windows(4).position(|w| w == b"moof").unwrap() - 4;
    // The older URI form, with the initialisation segment in it, is still read; recorded
    // to the stream's end.
    let older = format!("{uri}&init={}", ppspp::hex::encode(&recorded[..moof]));
    let out = dir.join("recording.mp4");
    let (codec, frames) = record(&older, &out);
    assert_eq!(codec, "h264");
    // Joined about 5 s in, of 12 s at 25 frames a second.
    assert!(frames >= 100, "{frames} frames recorded");
    assert_eq!(count(&std::fs::read(&out).unwrap(), b"ftyp"), 1);
    ends_by_itself(&mut streaming);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `ppspp fetch --live` of `uri` into `out`, until 4 s bring nothing new; the codec and
/// the frames ffprobe reads in the recording.
fn record(uri: &str, out: &std::path::Path) -> (String, u64) {
    let o = run(
        &[
            "fetch",
            "--live",
            uri,
            "-o",
            out.to_str().unwrap(),
            "--give-up-after",
            "4",
        ],
        Duration::from_secs(40),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("0 rejected"), "{}", stderr(&o));
    probe(out)
}

/// How often `needle` occurs in `bytes`.
fn count(bytes: &[u8], needle: &[u8]) -> usize {
    bytes.windows(needle.len()).filter(|w| *w == needle).count()
}

/// The source stops by itself once its input ended and the stream's tail was served.
fn ends_by_itself(streaming: &mut Running) {
    let status = finish(
        std::mem::replace(&mut streaming.child, dummy()),
        Duration::from_secs(20),
        "ppspp live",
    );
    assert!(status.status.success());
}

/// A child that has already exited, to take the place of one handed to `finish`.
fn dummy() -> Child {
    let mut c = Command::new("true").spawn().expect("true");
    let _ = c.wait();
    c
}

#[test]
fn input_that_is_not_a_stream_is_refused_clearly() {
    let dir = temp_dir("live-bad-input");
    let mut echo = Killed(
        Command::new("sh")
            .args(["-c", "echo '#EXTM3U not a stream'"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut cmd = ppspp();
    cmd.args(["live", "--udp", "127.0.0.1:0", "--key"])
        .arg(dir.join("k"))
        .stdin(Stdio::from(echo.0.stdout.take().unwrap()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let o = finish(cmd.spawn().unwrap(), Duration::from_secs(20), "ppspp live");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("neither WebM nor MP4"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
