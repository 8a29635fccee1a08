//! CSV and PNG output. Text is drawn with DejaVu Sans from Debian's `fonts-dejavu-core`
//! (installed by scripts/setup.sh), loaded at run time: nothing is downloaded.

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
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
        }
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
