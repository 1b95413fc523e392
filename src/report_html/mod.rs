//! `report.html`: the page a statistical office looks at. One self-contained file (inline CSS
//! and SVG, no scripts, no network) rendered from `report.json` alone, so `sdcflow report OUT`
//! can re-render it at any time: per table the counts by status, suppressed value and cost
//! against the lower bound, the suppressed share by hierarchy level of each variable and a
//! picture of the pattern; per microaggregation its loss against MDAV and the lower bound, the
//! group sizes and the error per variable (numeric) or per table dimension (nominal).
//!
//! Every figure shown from `report.json` carries a `data-field` attribute naming its JSON
//! field, so tests (and scrapers) can check the page against the report.

mod charts;

use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::masking::{MicroaggregationReport, NominalReport, NumericReport};
use crate::publish::report::{Report, TableReport};

/// `sdcflow report OUT`: renders `OUT/report.html` again from `OUT/report.json`; the page is
/// replaced by a rename, so a reader never sees half of it. Returns the page's path.
pub fn render_output(out: &Path) -> Result<PathBuf> {
    let json = out.join("report.json");
    let text = std::fs::read(&json).map_err(|e| match e.kind() {
        // A wrong argument, not a failing disk: an input error (exit 2) saying what is expected.
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => Error::data(
            json.display().to_string(),
            format!(
                "not found: {} is not the output directory of a sdcflow run (it has no report.json); pass the \
                 `[output] dir` of a run",
                out.display()
            ),
        ),
        _ => Error::io(&json, e),
    })?;
    let report: Report = serde_json::from_slice(&text)
        .map_err(|e| Error::data(json.display().to_string(), format!("not an sdcflow report: {e}")))?;
    let page = out.join("report.html");
    let tmp = out.join(".report.html.sdcflow-tmp");
    std::fs::write(&tmp, render(&report)).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, &page).map_err(|e| Error::io(&page, e))?;
    Ok(page)
}

/// Escapes text for HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A number as the page shows it: integers without decimals, others with up to 6 significant
/// decimals (the same text the tests compute from `report.json`).
pub fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        let s = format!("{x:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A percentage with 2 decimals.
fn pct(x: f64) -> String {
    format!("{:.2} %", 100.0 * x)
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1100px;color:#222}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}\
th{background:#f3f3f3}td.l,th.l{text-align:left}section{border-top:2px solid #446;margin-top:2em}\
.warn{color:#a40}.legend span{display:inline-block;padding:0 8px;margin-right:6px}";

/// Renders the whole page.
pub fn render(r: &Report) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>sdcflow report</title>\
         <style>{STYLE}</style></head><body>\n<h1>sdcflow report</h1>\n<p>Input <code>{}</code>, \
         written by sdcflow {}.</p>\n",
        esc(&r.input),
        esc(&r.sdcflow_version)
    );
    if !r.warnings.is_empty() {
        h.push_str("<h2>Warnings</h2><ul class=\"warn\">");
        for w in &r.warnings {
            let _ = write!(h, "<li>{}</li>", esc(w));
        }
        h.push_str("</ul>\n");
    }
    for t in &r.tables {
        table_section(&mut h, t);
    }
    for m in &r.microaggregations {
        micro_section(&mut h, m);
    }
    h.push_str("</body></html>\n");
    h
}

fn row(h: &mut String, label: &str, field: &str, value: String) {
    let _ = write!(h, "<tr><th class=\"l\">{}</th><td data-field=\"{field}\">{}</td></tr>", esc(label), esc(&value));
}

fn table_section(h: &mut String, t: &TableReport) {
    let _ = write!(
        h,
        "<section class=\"table\" data-table=\"{0}\"><h2>Table {0}</h2>\n<p>{1} by {2}; rules <code>{3}</code>; \
         method <code>{4}</code>.</p>\n",
        esc(&t.name),
        esc(t.response.as_deref().unwrap_or("frequency")),
        esc(&t.explanatory.join(" × ")),
        esc(&t.safety),
        esc(&t.method)
    );
    if !t.protected_against_recalculation {
        h.push_str("<p class=\"warn\"><b>NOT protected against recalculation from its totals.</b></p>\n");
    }
    h.push_str("<table class=\"summary\">");
    row(h, "cells", "cells", t.cells.to_string());
    row(h, "primary suppressions", "primaries", t.primaries.to_string());
    row(h, "secondary suppressions", "secondaries", t.secondaries.to_string());
    row(h, "total value", "total_value", num(t.total_value));
    row(h, "suppressed value", "suppressed_value", num(t.suppressed_value));
    row(h, "suppressed share of the value", "suppressed_value_share", pct(t.suppressed_value_share));
    if let Some(c) = t.secondary_cost {
        row(h, "cost of the secondary suppressions", "secondary_cost", num(c));
    }
    if let Some(b) = t.lower_bound {
        row(h, "lower bound on that cost", "lower_bound", num(b));
    }
    if let Some(g) = t.gap {
        row(h, "gap to the lower bound, (cost − bound) / cost", "gap", pct(g));
    }
    row(h, "audit", "audit", t.audit.clone());
    h.push_str("</table>\n<h3>Cells by status</h3><table class=\"status\"><tr>");
    for k in t.status_counts.keys() {
        let _ = write!(h, "<th>{}</th>", esc(k));
    }
    h.push_str("</tr><tr>");
    for (k, v) in &t.status_counts {
        let _ = write!(h, "<td data-field=\"status_counts.{}\">{v}</td>", esc(k));
    }
    h.push_str("</tr></table>\n<h3>Suppressed share by hierarchy level</h3>\n");
    for (var, levels) in &t.suppressed_by_level {
        let labels: Vec<String> =
            levels.iter().map(|l| if l.level == 0 { "total".into() } else { format!("level {}", l.level) }).collect();
        let share: Vec<f64> = levels
            .iter()
            .map(|l| if l.cells > 0 { 100.0 * l.suppressed as f64 / l.cells as f64 } else { 0.0 })
            .collect();
        let _ = write!(h, "<div class=\"chart\" data-chart=\"level-{}\">", esc(var));
        h.push_str(&charts::bars(&format!("{var}: suppressed cells by level"), &labels, &share, "% of cells"));
        h.push_str("</div>\n<table class=\"levels\"><tr><th class=\"l\">level</th><th>cells</th><th>suppressed</th><th>suppressed value</th></tr>");
        for l in levels {
            let _ = write!(
                h,
                "<tr><td class=\"l\">{}</td><td>{}</td><td data-field=\"suppressed_by_level.{}.{}.suppressed\">{}</td><td>{}</td></tr>",
                l.level,
                l.cells,
                esc(var),
                l.level,
                l.suppressed,
                num(l.suppressed_value)
            );
        }
        h.push_str("</table>\n");
    }
    if let Some(m) = &t.heat_map {
        let _ = write!(
            h,
            "<h3>The pattern: {} × {} at their finest level</h3>\n<div class=\"chart\" data-chart=\"heat-map\">",
            esc(&m.y),
            esc(&m.x)
        );
        h.push_str(&charts::heat_map(
            &format!("{} (rows) × {} (columns)", m.y, m.x),
            &m.x_codes,
            &m.y_codes,
            &m.status,
        ));
        h.push_str("</div>\n<p class=\"legend\">");
        for (s, what) in [("S", "published"), ("U", "primary"), ("M", "secondary"), ("P", "protected"), ("", "empty")] {
            let c = charts::status_colour(s);
            let _ = write!(h, "<span style=\"background:rgb({},{},{})\">{what}</span>", c.0, c.1, c.2);
        }
        h.push_str("</p>\n");
    }
    h.push_str("</section>\n");
}

/// `x` when it is finite (report.json writes other values as `null`, which the page skips).
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

fn micro_section(h: &mut String, m: &MicroaggregationReport) {
    let (name, kind, method, k, rows) = match m {
        MicroaggregationReport::Numeric(r) => (&r.name, &r.kind, &r.method, r.k, r.rows),
        MicroaggregationReport::Nominal(r) => (&r.name, &r.kind, &r.method, r.k, r.rows),
    };
    let _ = write!(
        h,
        "<section class=\"microaggregation\" data-micro=\"{0}\"><h2>Microaggregation {0}</h2>\n<p>{1}, method \
         <code>{2}</code>, k = {3}, {4} records.</p>\n<table class=\"summary\">",
        esc(name),
        esc(kind),
        esc(method),
        k,
        rows
    );
    match m {
        MicroaggregationReport::Numeric(r) => numeric_section(h, r),
        MicroaggregationReport::Nominal(r) => nominal_section(h, r),
    }
    h.push_str("</section>\n");
}

fn numeric_section(h: &mut String, r: &NumericReport) {
    for (label, key, value) in [
        ("SSE", "sse", finite(r.sse)),
        ("SSE of MDAV", "mdav_sse", finite(r.mdav_sse)),
        ("lower bound on the optimal SSE", "lower_bound", r.lower_bound.and_then(finite)),
        ("gap to the lower bound (%)", "gap_percent", r.gap_percent.and_then(finite)),
        ("information loss IL (%)", "information_loss_percent", finite(r.information_loss_percent)),
        ("groups", "groups", Some(r.groups as f64)),
    ] {
        if let Some(x) = value {
            row(h, label, key, num(x));
        }
    }
    h.push_str("</table>\n");
    let (labels, counts): (Vec<String>, Vec<f64>) =
        r.group_size_histogram.iter().map(|&(size, n)| (size.to_string(), n as f64)).unzip();
    h.push_str("<div class=\"chart\" data-chart=\"group-sizes\">");
    h.push_str(&charts::bars("groups by size", &labels, &counts, "groups"));
    h.push_str("</div>\n");
    let vars = &r.per_variable;
    let labels: Vec<String> = vars.iter().map(|v| v.variable.clone()).collect();
    let il: Vec<f64> = vars.iter().map(|v| finite(v.information_loss_percent).unwrap_or(0.0)).collect();
    h.push_str("<div class=\"chart\" data-chart=\"per-variable\">");
    h.push_str(&charts::bars("information loss per variable", &labels, &il, "IL (%)"));
    h.push_str(
        "</div>\n<table class=\"per-variable\"><tr><th class=\"l\">variable</th><th>SSE</th><th>IL (%)</th></tr>",
    );
    for (v, l) in vars.iter().zip(&labels) {
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td data-field=\"per_variable.{0}.sse\">{}</td><td>{}</td></tr>",
            esc(l),
            num(finite(v.sse).unwrap_or(0.0)),
            num(finite(v.information_loss_percent).unwrap_or(0.0))
        );
    }
    h.push_str("</table>\n");
}

fn nominal_section(h: &mut String, r: &NominalReport) {
    h.push_str("</table>\n");
    for (i, s) in r.reports.iter().enumerate() {
        let _ = write!(
            h,
            "<h3>Stratum {}</h3><table class=\"per-dimension\"><tr><th>table dimension</th><th>χ² (control)</th>\
             <th>max abs. error (control)</th><th>χ² (all)</th><th>max abs. error (all)</th><th>max rel. error (all)</th></tr>",
            i + 1
        );
        let mut labels = Vec::new();
        let mut chi = Vec::new();
        for d in &s.per_dimension {
            let g = |x: f64| finite(x).unwrap_or(0.0);
            let dim = d.dimension;
            let _ = write!(
                h,
                "<tr><td>{dim}</td><td data-field=\"reports.{i}.per_dimension.{dim}.control.chi2\">{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td><td>{}</td></tr>",
                num(g(d.control.chi2)),
                num(g(d.control.max_abs_error)),
                num(g(d.all.chi2)),
                num(g(d.all.max_abs_error)),
                num(g(d.all.max_rel_error))
            );
            labels.push(format!("{dim}-dim"));
            chi.push(g(d.all.chi2));
        }
        h.push_str("</table>\n");
        if i == 0 {
            h.push_str("<div class=\"chart\" data-chart=\"chi2\">");
            h.push_str(&charts::bars("χ² by table dimension (all tables)", &labels, &chi, "χ²"));
            h.push_str("</div>\n");
        }
    }
}
