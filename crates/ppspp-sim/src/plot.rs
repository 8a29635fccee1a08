//! CSV and PNG output of the experiments: line plots, CSV tables, and the shapes the bulk
//! experiments share (a run's samples against time, one CSV of single-flow runs). Text is
//! drawn with DejaVu Sans from Debian's `fonts-dejavu-core` (installed by
//! scripts/setup.sh), loaded at run time: nothing is downloaded.

use crate::bulk::{BulkRun, Sample};
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::OnceLock;

const FONT_PATHS: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

/// Loads the font once; an error names the package to install.
pub fn init_font() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        let path = std::env::var("PPSPP_SIM_FONT")
            .ok()
            .or_else(|| {
                FONT_PATHS
                    .iter()
                    .find(|p| Path::new(p).exists())
                    .map(|p| p.to_string())
            })
            .ok_or("no DejaVuSans.ttf: run scripts/setup.sh (installs fonts-dejavu-core)")?;
        let bytes = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
        register_font(
            "sans-serif",
            FontStyle::Normal,
            Box::leak(bytes.into_boxed_slice()),
        )
        .map_err(|_| format!("{path}: not a usable font"))
    })
    .clone()
}

/// A named line.
pub struct Series {
    /// Its name in the legend.
    pub name: String,
    /// Its (x, y) points in order.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// A line named `name` through `points`.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
        }
    }

    /// A line named `name` of `value` of each of `run`'s samples against its time.
    pub fn over_time(
        name: impl Into<String>,
        run: &BulkRun,
        value: impl Fn(&Sample) -> f64,
    ) -> Series {
        Series::new(name, run.samples.iter().map(|s| (s.t, value(s))).collect())
    }
}

/// Draws `series` as lines into a 1000×600 PNG.
pub fn lines(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<(), String> {
    init_font()?;
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for s in series {
        for &(x, y) in &s.points {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
    }
    if x0 >= x1 {
        x0 = 0.0;
        x1 = x1.max(0.0) + 1.0;
    }
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.08 };
    let root = BitMapBackend::new(path, (1000, 600)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, 0.0..y1)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(|e| err(&e))?;
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).stroke_width(2);
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), color))
            .map_err(|e| err(&e))?
            .label(s.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(
                    vec![(x, y), (x + 20, y)],
                    Palette99::pick(i).stroke_width(2),
                )
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// Draws `series` against time in seconds, as `lines` does.
pub fn time_lines(
    path: &Path,
    title: &str,
    y_label: &str,
    series: &[Series],
) -> Result<(), String> {
    lines(path, title, "time (s)", y_label, series)
}

/// Draws one line per labelled run, `value` of its samples against time, named
/// `name(label)`.
pub fn runs_over_time<'a>(
    path: &Path,
    title: &str,
    y_label: &str,
    runs: impl IntoIterator<Item = &'a (String, BulkRun)>,
    name: impl Fn(&str) -> String,
    value: impl Fn(&Sample) -> f64,
) -> Result<(), String> {
    let series: Vec<Series> = runs
        .into_iter()
        .map(|(label, r)| Series::over_time(name(label), r, &value))
        .collect();
    time_lines(path, title, y_label, &series)
}

/// Writes single-flow runs as CSV: `label_column` (the run's label), time, goodput,
/// window, queueing delay and bytes downloaded of each sample.
pub fn runs_csv(path: &Path, label_column: &str, runs: &[(String, BulkRun)]) -> Result<(), String> {
    let mut rows = Vec::new();
    for (name, r) in runs {
        for s in &r.samples {
            rows.push(vec![
                name.clone(),
                format!("{:.1}", s.t),
                format!("{:.4}", s.rate_mbps[0]),
                format!("{:.2}", s.cwnd[0]),
                format!("{:.2}", s.queue_ms),
                s.progress[0].to_string(),
            ]);
        }
    }
    csv(
        path,
        &format!("{label_column},t_s,rate_mbps,cwnd,queue_ms,bytes_downloaded"),
        &rows,
    )
}

/// Writes rows as CSV under a header.
pub fn csv(path: &Path, header: &str, rows: &[Vec<String>]) -> Result<(), String> {
    let mut out = String::new();
    out.push_str(header);
    out.push('\n');
    for r in rows {
        let _ = writeln!(out, "{}", r.join(","));
    }
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))
}
