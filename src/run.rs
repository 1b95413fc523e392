//! Running a job end to end: engine → tabulation → primary suppression → outputs.
//!
//! Each table is tabulated by DataFusion, assessed with its safety rules, and written into a
//! staging area; only when every table is complete and checked are the outputs committed to the
//! output location (see [`crate::output`]). A failing table fails the run and nothing is
//! published.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use crate::engine::{self, EngineOptions};
use crate::error::{Error, Result};
use crate::hierarchy::Hierarchy;
use crate::job::{EngineMode, Job, TableJob, TableSource};
use crate::output::Staging;
use crate::progress::Progress;
use crate::publish::{TableWriter, Tally};
use crate::report::{Report, TableReport};
use crate::rules::CellFacts;
use crate::table::CellStatus;
use crate::tabulate::{self, Cells, TableQuery};

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

/// The tabulation request of a table job reading `source`.
pub fn table_query(t: &TableJob, source: String) -> TableQuery {
    TableQuery {
        name: t.name.clone(),
        source,
        explanatory: t.explanatory.clone(),
        response: t.response.clone(),
        contributor: t.contributor.clone(),
        weight: t.weight.clone(),
        top_n: t.safety.top_needed(),
        require_nonnegative: t.safety.has_dominance(),
    }
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
        let query = table_query(t, source);
        let dir = staging.dir().join(&t.name);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let (tally, dims, protection) = if t.secondary == "none" {
            let w = format!(
                "table `{}`: secondary = \"none\": primaries are suppressed but the table is NOT protected against recalculation from totals",
                t.name
            );
            progress.warn(&w);
            report.warnings.push(w);
            // Nothing needs the whole table: assess and write each chunk as it is tabulated.
            let start = Instant::now();
            let mut writer: Option<TableWriter> = None;
            let mut publish_s = 0.0;
            let empty = tabulate::tabulate_streaming(&ctx, &query, &hierarchies, progress, &mut |chunk| {
                let start = Instant::now();
                let a = assess(t, chunk);
                if writer.is_none() {
                    writer = Some(TableWriter::create(&dir, &t.explanatory, &a.cells.dims, a.cells.weight.is_some())?);
                }
                writer.as_mut().expect("created above").write(&a)?;
                publish_s += start.elapsed().as_secs_f64();
                Ok(())
            })
            .await?;
            let writer = match writer {
                Some(w) => w,
                None => TableWriter::create(&dir, &t.explanatory, &empty.dims, empty.weight.is_some())?,
            };
            let tally = writer.finish()?;
            timings.insert("tabulate".to_string(), start.elapsed().as_secs_f64() - publish_s);
            timings.insert("primary_and_write".to_string(), publish_s);
            (tally, empty.dims, None)
        } else {
            let start = Instant::now();
            let cells = tabulate::tabulate(&ctx, &query, &hierarchies, progress).await?;
            timings.insert("tabulate".to_string(), start.elapsed().as_secs_f64());
            let start = Instant::now();
            let mut assessed = assess(t, cells);
            timings.insert("primary".to_string(), start.elapsed().as_secs_f64());
            let stage = progress.stage(&format!("{}: secondary suppression ({})", t.name, t.secondary), 1);
            let start = Instant::now();
            let protection = crate::secondary::protect(&t.name, &mut assessed, &t.secondary, t.seed, t.time_limit_s)?;
            timings.insert("secondary".to_string(), start.elapsed().as_secs_f64());
            stage.finish();
            let start = Instant::now();
            let c = &assessed.cells;
            let mut writer = TableWriter::create(&dir, &t.explanatory, &c.dims, c.weight.is_some())?;
            writer.write(&assessed)?;
            let tally = writer.finish()?;
            timings.insert("write".to_string(), start.elapsed().as_secs_f64());
            (tally, assessed.cells.dims, Some(protection))
        };
        report.tables.push(table_report(t, &tally, &dims, protection.as_ref(), timings));
    }
    for m in &job.microaggregations {
        let r = crate::masking::run_microaggregation(job, m, staging.dir(), progress).await?;
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
    tally: &Tally,
    dims: &[Hierarchy],
    p: Option<&crate::suppress::Protection>,
    timings: BTreeMap<String, f64>,
) -> TableReport {
    TableReport {
        name: t.name.clone(),
        explanatory: t.explanatory.clone(),
        response: t.response.clone(),
        safety: t.safety.text.clone(),
        codes_per_variable: dims.iter().map(|h| (h.variable().to_string(), h.len())).collect(),
        cells: tally.cells,
        primaries: tally.count("U"),
        secondaries: tally.count("M"),
        status_counts: tally.status_counts.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        suppressed_value_share: tally.suppressed_share(),
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
        timings_s: timings,
    }
}
