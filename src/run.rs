//! Running a job end to end: engine → tabulation → primary suppression → outputs.
//!
//! Each table is tabulated by DataFusion, assessed with its safety rules, and written into a
//! staging area; only when every table is complete and checked are the outputs committed to the
//! output location (see [`crate::output`]). A failing table fails the run and nothing is
//! published.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::engine::{self, EngineOptions};
use crate::error::{Error, Result};
use crate::job::{EngineMode, Job, TableJob, TableSource};
use crate::output::Staging;
use crate::progress::Progress;
use crate::report::{Report, TableReport};
use crate::rules::CellFacts;
use crate::table::CellStatus;
use crate::tabulate::{self, Cells, TableQuery, TabulateOptions};

/// A tabulated table with its primary statuses and protection levels.
#[derive(Debug, Clone)]
pub struct AssessedTable {
    /// The cells.
    pub cells: Cells,
    /// Status per cell.
    pub status: Vec<CellStatus>,
    /// Lower protection level per cell.
    pub lpl: Vec<f64>,
    /// Upper protection level per cell.
    pub upl: Vec<f64>,
}

/// Applies the table's safety rules to every cell.
pub fn assess(t: &TableJob, cells: Cells) -> AssessedTable {
    let mut status = Vec::with_capacity(cells.len());
    let mut level = Vec::with_capacity(cells.len());
    for i in 0..cells.len() {
        let a = t.safety.assess(&CellFacts {
            freq: cells.freq[i],
            value: cells.value[i],
            top: cells.tops(i),
            manual: false,
        });
        status.push(a.status);
        level.push(a.protection);
    }
    AssessedTable { cells, status, lpl: level.clone(), upl: level }
}

/// What a finished run produced.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Where the outputs went.
    pub output: String,
    /// The report that was written.
    pub report: Report,
}

/// Runs `job`. `mode` overrides the job's engine mode (e.g. `--cluster`).
pub async fn run_job(job: &Job, mode: Option<EngineMode>, out: Option<&str>, progress: &Progress) -> Result<Summary> {
    // Solver partitions hold unprotected cells: their scratch location is removed whatever
    // the outcome (a failed removal fails an otherwise successful run).
    let output = out.unwrap_or(&job.output);
    let solve_scratch = Arc::new(crate::dist::ship::Scratch::for_run(output, mode.as_ref().unwrap_or(&job.mode))?);
    progress.detail(&format!("solver partitions staged in {}", solve_scratch.describe()));
    let result = run_job_with(job, mode, out, progress, &solve_scratch).await;
    let removed = match Arc::try_unwrap(solve_scratch) {
        Ok(s) => s.remove().await,
        Err(_) => Err(Error::Internal("solver scratch still in use at the end of the run".into())),
    };
    let summary = result?;
    removed?;
    Ok(summary)
}

async fn run_job_with(
    job: &Job,
    mode: Option<EngineMode>,
    out: Option<&str>,
    progress: &Progress,
    solve_scratch: &Arc<crate::dist::ship::Scratch>,
) -> Result<Summary> {
    let output = out.unwrap_or(&job.output).to_string();
    let mode = mode.unwrap_or_else(|| job.mode.clone());
    let ctx = engine::session(&EngineOptions {
        mode: mode.clone(),
        target_partitions: job.target_partitions,
        memory_limit: job.memory_limit,
    })
    .await?;
    progress.detail(&format!("engine: {mode:?}, {} partitions", job.target_partitions));
    engine::register_microdata(&ctx, &job.microdata, job.csv_delimiter).await?;
    let last_view = engine::run_preludes(&ctx, &job.sql).await?;
    let staging = Staging::new(&output)?;
    let scratch = tempfile::Builder::new()
        .prefix("sdcflow-scratch-")
        .tempdir()
        .map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let mut report = Report {
        sdcflow_version: env!("CARGO_PKG_VERSION").into(),
        input: job.microdata.clone(),
        ..Default::default()
    };
    let hierarchies: HashMap<_, _> = job.hierarchies.clone().into_iter().collect();
    for t in &job.tables {
        let mut timings = BTreeMap::new();
        let source = match &t.source {
            Some(TableSource::View(v)) => v.clone(),
            Some(TableSource::SqlFile(f)) => {
                let sql = std::fs::read_to_string(f).map_err(|e| Error::io(f, e))?;
                let name = format!("__sdc_{}_source", t.name);
                ctx.sql(&format!("CREATE OR REPLACE VIEW \"{name}\" AS {}", sql.trim().trim_end_matches(';')))
                    .await
                    .map_err(|e| {
                        Error::data(f.display().to_string(), format!("table `{}` source query: {e}", t.name))
                    })?;
                name
            }
            None => last_view.clone().unwrap_or_else(|| "microdata".into()),
        };
        let query = TableQuery {
            name: t.name.clone(),
            source,
            explanatory: t.explanatory.clone(),
            response: t.response.clone(),
            contributor: t.contributor.clone(),
            weight: t.weight.clone(),
            top_n: t.safety.top_needed(),
            require_nonnegative: t.safety.has_dominance(),
        };
        let opts = TabulateOptions {
            grouping_sets_per_query: job.grouping_sets_per_query,
            mode: mode.clone(),
            scratch: scratch.path().to_path_buf(),
        };
        let start = Instant::now();
        let cells = tabulate::tabulate(&ctx, &query, &hierarchies, &opts, progress).await?;
        timings.insert("tabulate".to_string(), start.elapsed().as_secs_f64());
        let start = Instant::now();
        let mut assessed = assess(t, cells);
        timings.insert("primary".to_string(), start.elapsed().as_secs_f64());
        let mut protection = None;
        if t.secondary != "none" {
            let stage = progress.stage(&format!("{}: secondary suppression ({})", t.name, t.secondary), 1);
            let start = Instant::now();
            // Modular subtables run where the engine runs queries (executors on a cluster).
            let (a, p) =
                crate::dist::ship::protect_table(&ctx, solve_scratch, t, assessed, job.target_partitions).await?;
            assessed = a;
            protection = Some(p);
            timings.insert("secondary".to_string(), start.elapsed().as_secs_f64());
            stage.finish();
        } else {
            let w = format!(
                "table `{}`: secondary = \"none\": primaries are suppressed but the table is NOT protected against recalculation from totals",
                t.name
            );
            progress.warn(&w);
            report.warnings.push(w);
        }
        let start = Instant::now();
        let dir = staging.dir().join(&t.name);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        write_cells_parquet(&dir.join("cells.parquet"), t, &assessed)?;
        write_published_csv(&dir.join("published.csv"), t, &assessed)?;
        timings.insert("write".to_string(), start.elapsed().as_secs_f64());
        report.tables.push(table_report(t, &assessed, protection.as_ref(), timings));
    }
    for m in &job.microaggregations {
        // Numeric strata run where the engine runs queries (executors on a cluster).
        let engine = Some((&ctx, solve_scratch.as_ref(), job.target_partitions));
        let r = crate::masking::run_microaggregation_on(job, m, staging.dir(), progress, engine).await?;
        report.microaggregations.push(r);
    }
    let json = serde_json::to_vec_pretty(&report).map_err(|e| Error::Internal(e.to_string()))?;
    let rp = staging.dir().join("report.json");
    std::fs::write(&rp, json).map_err(|e| Error::io(&rp, e))?;
    staging.commit().await?;
    Ok(Summary { output, report })
}

fn table_report(
    t: &TableJob,
    a: &AssessedTable,
    p: Option<&crate::suppress::Protection>,
    timings: BTreeMap<String, f64>,
) -> TableReport {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for s in &a.status {
        *counts.entry(s.letter().to_string()).or_default() += 1;
    }
    let total: f64 = a.cells.value.iter().map(|v| v.abs()).sum();
    let suppressed: f64 =
        a.status.iter().zip(&a.cells.value).filter(|(s, _)| s.is_suppressed()).map(|(_, v)| v.abs()).sum();
    TableReport {
        name: t.name.clone(),
        explanatory: t.explanatory.clone(),
        response: t.response.clone(),
        safety: t.safety.text.clone(),
        codes_per_variable: a.cells.dims.iter().map(|h| (h.variable().to_string(), h.len())).collect(),
        cells: a.cells.len(),
        primaries: counts.get("U").copied().unwrap_or(0),
        secondaries: counts.get("M").copied().unwrap_or(0),
        status_counts: counts,
        suppressed_value_share: if total > 0.0 { suppressed / total } else { 0.0 },
        method: t.secondary.clone(),
        protected_against_recalculation: p.is_some(),
        audit: match p {
            Some(p) => format!(
                "passed: {} sensitive cells, attacker LPs solved: {}, 0 under-protected",
                p.audit.sensitive, p.audit.lps_solved
            ),
            None => "not run: secondary method \"none\" publishes primaries only".into(),
        },
        secondary_cost: p.map(|p| p.secondary_cost),
        lower_bound: p.and_then(|p| p.lower_bound),
        gap: p.and_then(|p| p.gap),
        files: vec![format!("{}/cells.parquet", t.name), format!("{}/published.csv", t.name)],
        subtables_per_worker: p
            .map(|p| {
                let mut m = BTreeMap::new();
                for s in p.subtables.iter().filter(|s| !s.worker.is_empty()) {
                    *m.entry(s.worker.clone()).or_default() += 1;
                }
                m
            })
            .unwrap_or_default(),
        timings_s: timings,
    }
}

/// Arrow batch of the cells in the table-output contract column order.
pub fn cells_batch(t: &TableJob, a: &AssessedTable) -> Result<RecordBatch> {
    let c = &a.cells;
    let mut fields = Vec::new();
    let mut cols: Vec<ArrayRef> = Vec::new();
    for (d, h) in c.dims.iter().enumerate() {
        fields.push(Field::new(h.variable(), DataType::Utf8, false));
        let k = c.dims.len();
        cols.push(Arc::new(StringArray::from_iter_values((0..c.len()).map(|i| h.code(c.coords[i * k + d] as usize)))));
    }
    let f64col = |v: Vec<f64>| -> ArrayRef { Arc::new(Float64Array::from(v)) };
    fields.push(Field::new("freq", DataType::UInt64, false));
    cols.push(Arc::new(UInt64Array::from(c.freq.clone())));
    fields.push(Field::new("value", DataType::Float64, false));
    cols.push(f64col(c.value.clone()));
    fields.push(Field::new("top1", DataType::Float64, false));
    cols.push(f64col((0..c.len()).map(|i| c.tops(i)[0]).collect()));
    fields.push(Field::new("top2", DataType::Float64, false));
    cols.push(f64col((0..c.len()).map(|i| c.tops(i)[1]).collect()));
    fields.push(Field::new("status", DataType::Utf8, false));
    cols.push(Arc::new(StringArray::from_iter_values(a.status.iter().map(|s| s.letter()))));
    fields.push(Field::new("lpl", DataType::Float64, false));
    cols.push(f64col(a.lpl.clone()));
    fields.push(Field::new("upl", DataType::Float64, false));
    cols.push(f64col(a.upl.clone()));
    fields.push(Field::new("records", DataType::UInt64, false));
    cols.push(Arc::new(UInt64Array::from(c.records.clone())));
    if let Some(w) = &c.weight {
        fields.push(Field::new("weight", DataType::Float64, false));
        cols.push(f64col(w.clone()));
    }
    let _ = t;
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

fn write_cells_parquet(path: &Path, t: &TableJob, a: &AssessedTable) -> Result<()> {
    let batch = cells_batch(t, a)?;
    let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_created_by(format!("sdcflow {}", env!("CARGO_PKG_VERSION")))
        .build();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props))?;
    w.write(&batch)?;
    w.close()?;
    Ok(())
}

/// Quotes a CSV field when needed (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn write_published_csv(path: &Path, t: &TableJob, a: &AssessedTable) -> Result<()> {
    use std::io::Write;
    let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let mut w = std::io::BufWriter::new(file);
    let io = |e| Error::io(path, e);
    let header: Vec<String> =
        t.explanatory.iter().map(|e| csv_field(e)).chain(std::iter::once("value".to_string())).collect();
    writeln!(w, "{}", header.join(",")).map_err(io)?;
    for i in 0..a.cells.len() {
        let codes: Vec<String> = a.cells.codes(i).into_iter().map(csv_field).collect();
        let value = if a.status[i].is_suppressed() { String::new() } else { format!("{}", a.cells.value[i]) };
        writeln!(w, "{},{value}", codes.join(",")).map_err(io)?;
    }
    w.flush().map_err(io)?;
    Ok(())
}
