//! The charts of `report.html`, drawn by `plotters` into SVG strings that the page inlines.
//! Text is written as SVG `<text>` (plotters' SVG backend without a font library), so the
//! page needs no fonts, scripts or network to be read.

use plotters::prelude::*;

/// Colour of a cell status in the heat map (tau-Argus letters; "" = empty cell).
pub fn status_colour(letter: &str) -> RGBColor {
    match letter {
        "S" => RGBColor(214, 230, 214),
        "U" => RGBColor(200, 30, 30),
        "M" => RGBColor(245, 160, 40),
        "P" => RGBColor(60, 110, 200),
        "Z" => RGBColor(240, 240, 240),
        _ => RGBColor(255, 255, 255),
    }
}

/// A vertical bar chart of `values` labelled by `labels`, `y_desc` on the value axis.
pub fn bars(caption: &str, labels: &[String], values: &[f64], y_desc: &str) -> String {
    let mut svg = String::new();
    {
        let width = (160 + 48 * labels.len()).clamp(360, 900) as u32;
        let root = SVGBackend::with_string(&mut svg, (width, 260)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let top = values.iter().cloned().fold(0.0_f64, f64::max);
        let top = if top > 0.0 { top * 1.1 } else { 1.0 };
        let n = labels.len().max(1);
        let chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(56)
            .build_cartesian_2d((0..n).into_segmented(), 0.0..top);
        if let Ok(mut chart) = chart {
            let fmt = |x: &SegmentValue<usize>| match x {
                SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            };
            let _ = chart.configure_mesh().disable_x_mesh().x_labels(n).x_label_formatter(&fmt).y_desc(y_desc).draw();
            // Rectangles in index order (plotters' Histogram sums through a HashMap, whose
            // order, and so the SVG's bytes, changes from run to run).
            let _ = chart.draw_series(values.iter().enumerate().map(|(i, v)| {
                Rectangle::new(
                    [(SegmentValue::Exact(i), 0.0), (SegmentValue::Exact(i + 1), *v)],
                    RGBColor(70, 120, 180).filled(),
                )
            }));
            let _ = chart.draw_series(values.iter().enumerate().map(|(i, v)| {
                Rectangle::new([(SegmentValue::Exact(i), 0.0), (SegmentValue::Exact(i + 1), *v)], WHITE.stroke_width(4))
            }));
        }
        let _ = root.present();
    }
    svg
}

/// The heat map: one square per (row code, column code), coloured by status.
pub fn heat_map(caption: &str, x_codes: &[String], y_codes: &[String], status: &[String]) -> String {
    let mut svg = String::new();
    {
        let (nx, ny) = (x_codes.len().max(1), y_codes.len().max(1));
        let cell = (700 / nx).clamp(6, 28) as u32;
        let w = 90 + cell * nx as u32;
        let h = 70 + cell * ny as u32;
        let root = SVGBackend::with_string(&mut svg, (w.max(240), h)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 15))
            .margin(6)
            .x_label_area_size(24)
            .y_label_area_size(60)
            .build_cartesian_2d(0..nx, 0..ny);
        if let Ok(mut chart) = chart {
            let xl = |i: &usize| x_codes.get(*i).cloned().unwrap_or_default();
            let yl = |i: &usize| y_codes.get(*i).cloned().unwrap_or_default();
            let _ = chart
                .configure_mesh()
                .disable_mesh()
                .x_labels(nx.min(20))
                .y_labels(ny.min(30))
                .x_label_formatter(&xl)
                .y_label_formatter(&yl)
                .draw();
            let _ = chart.draw_series((0..ny).flat_map(|y| {
                (0..nx).map(move |x| {
                    let s = status.get(y * nx + x).map(String::as_str).unwrap_or("");
                    Rectangle::new([(x, y), (x + 1, y + 1)], status_colour(s).filled())
                })
            }));
        }
        let _ = root.present();
    }
    svg
}
