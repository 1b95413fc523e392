//! Running a job end to end: engine → tabulation → primary suppression → outputs.
//!
//! Each table is tabulated by DataFusion, assessed with its safety rules, and written into a
//! staging area; only when every table is complete and checked are the outputs committed to the
//! output location (see [`crate::publish::staging`]). A failing table fails the run and nothing is
//! published.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::cluster::ship::{Executor, Scratch};
use crate::engine::{self, EngineOptions};
use crate::error::{Error, Result};
use crate::hierarchy::Hierarchy;
use crate::job::{EngineMode, Job, TableJob, TableSource};
use crate::progress::Progress;
use crate::publish::report::{Report, TableReport};
use crate::publish::staging::Staging;
use crate::publish::{TableWriter, Tally};
use crate::rules::{assess, AssessedTable};
use crate::tabulate::{self, TableQuery};

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
///
/// The output location is checked before any work ([`crate::publish::staging::check_target`]), and the
/// outputs are committed as the very last step, after the solver scratch is removed: a run that
/// reports a failure has published nothing.
pub async fn run_job(job: &Job, mode: Option<EngineMode>, out: Option<&str>, progress: &Progress) -> Result<Summary> {
    let output = out.unwrap_or(&job.output);
    crate::publish::staging::check_target(output, job).await?;
    // Solver partitions hold unprotected cells: their scratch location is removed whatever
    // the outcome (a failed removal fails an otherwise successful run).
    let solve_scratch =
        Arc::new(Scratch::for_run(output, matches!(mode.as_ref().unwrap_or(&job.mode), EngineMode::Remote(_)))?);
    progress.detail(&format!("solver partitions staged in {}", solve_scratch.describe()));
    let mut staging = Staging::new(output)?;
    let result = run_job_with(job, mode, out, progress, &solve_scratch, &mut staging).await;
    let removed = match Arc::try_unwrap(solve_scratch) {
        Ok(s) => s.remove().await,
        Err(_) => Err(Error::Internal("solver scratch still in use at the end of the run".into())),
    };
    let summary = match (result, removed) {
        (Ok(s), Ok(())) => s,
        (Err(e), _) | (_, Err(e)) => {
            // Files the executors wrote below an object-store run prefix go too.
            staging.abort().await;
            return Err(e);
        }
    };
    staging.commit().await?;
    Ok(summary)
}

async fn run_job_with(
    job: &Job,
    mode: Option<EngineMode>,
    out: Option<&str>,
    progress: &Progress,
    solve_scratch: &Arc<Scratch>,
    staging: &mut Staging,
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
    let mut report = Report {
        sdcflow_version: env!("CARGO_PKG_VERSION").into(),
        input: job.microdata.clone(),
        ..Default::default()
    };
    let hierarchies: HashMap<_, _> = job.hierarchies.clone().into_iter().collect();
    // Solver work (modular subtables, whole-table protections, microaggregation strata) runs
    // where the engine runs queries: the executors on a cluster.
    let executor = Executor {
        ctx: ctx.clone(),
        scratch: solve_scratch.clone(),
        files: job.target_partitions,
        remote: matches!(mode, EngineMode::Remote(_)),
    };
    // Tables of a `[[linked]]` group wait here until the whole group is assessed.
    let mut pending: HashMap<String, PendingTable> = HashMap::new();
    for t in &job.tables {
        let mut timings = BTreeMap::new();
        let source = match &t.source {
            Some(TableSource::View(v)) => v.clone(),
            Some(TableSource::SqlFile(f)) => {
                let sql = std::fs::read_to_string(f).map_err(|e| Error::unreadable(f, &e))?;
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
        let linked = job.linked.iter().find(|g| g.contains(&t.name));
        if !t.secondary.protects() {
            let w = format!(
                "table `{}`: secondary = \"none\": primaries are suppressed but the table is NOT protected against recalculation from totals",
                t.name
            );
            progress.warn(&w);
            report.warnings.push(w);
        }
        if !t.secondary.protects() && t.apriori.is_none() && linked.is_none() {
            // Nothing needs the whole table: it is rolled up, assessed and written in parts
            // where the engine runs queries (the executors on a cluster); the client only
            // checks and commits them.
            let start = Instant::now();
            let parted = crate::cluster::roll_up::roll_up_table(
                &executor,
                staging,
                &query,
                &t.safety,
                &hierarchies,
                progress,
                job.part_cells,
            )
            .await?;
            let Some(parted) = parted else { return Err(no_rows(t, &job.microdata)) };
            timings.insert("tabulate_primary_and_write".to_string(), start.elapsed().as_secs_f64());
            let mut r = table_report(t, &parted.tally, &parted.dims, None, timings);
            r.files = (0..parted.parts).flat_map(|i| crate::publish::parts::part_files(&t.name, i)).collect();
            r.parts_per_worker = parted.parts_per_worker;
            r.routed_inputs = parted.routed;
            report.tables.push(r);
            continue;
        }
        let start = Instant::now();
        let cells = tabulate::tabulate(&ctx, &query, &hierarchies, progress).await?;
        if cells.is_empty() {
            return Err(no_rows(t, &job.microdata));
        }
        timings.insert("tabulate".to_string(), start.elapsed().as_secs_f64());
        let start = Instant::now();
        let mut assessed = assess(&t.safety, cells);
        let apriori = match &t.apriori {
            Some(path) => {
                let dims = crate::protect::dimensions(&assessed.cells);
                let f = crate::protect::read_apriori(path, t.apriori_separator, &dims)?;
                crate::protect::apply_apriori_statuses(&t.safety, &mut assessed, &f)?;
                Some(f)
            }
            None => None,
        };
        timings.insert("primary".to_string(), start.elapsed().as_secs_f64());
        if let Some(group) = linked {
            pending.insert(t.name.clone(), (assessed, apriori, timings));
            if group.iter().all(|n| pending.contains_key(n)) {
                protect_linked_group(job, group, &mut pending, staging.dir(), &mut report, progress, &executor).await?;
            }
            continue;
        }
        let mut protection = None;
        if t.secondary.protects() {
            let stage = progress.stage(&format!("{}: secondary suppression ({})", t.name, t.secondary), 1);
            let start = Instant::now();
            // Too many primaries is known before protecting: said even when protection then
            // fails (e.g. at the time limit), so the user learns what to coarsen.
            let detail = crate::protect::detail_warning(&t.name, &assessed, None);
            // Modular subtables run where the engine runs queries (executors on a cluster).
            let (a, p) = match crate::protect::protect_table(&executor, t, assessed, apriori).await {
                Ok(done) => done,
                Err(e) => {
                    if let Some(w) = detail {
                        progress.warn(&w);
                    }
                    return Err(e);
                }
            };
            assessed = a;
            if p.stopped_by_time_limit {
                let w = time_limit_warning(&t.name, t.time_limit_s);
                progress.warn(&w);
                report.warnings.push(w);
            }
            if let Some(w) = crate::protect::detail_warning(&t.name, &assessed, Some(p.suppressed_value_share)) {
                progress.warn(&w);
                report.warnings.push(w);
            }
            protection = Some(p);
            if !t.singleton_rule {
                let w = format!(
                    "table `{}`: secondary.singleton = false: a singleton respondent may recover sensitive cells",
                    t.name
                );
                progress.warn(&w);
                report.warnings.push(w);
            }
            timings.insert("secondary".to_string(), start.elapsed().as_secs_f64());
            stage.finish();
        }
        write_table(staging.dir(), t, &assessed, protection.as_ref(), timings, &mut report)?;
    }
    for m in &job.microaggregations {
        // Strata run where the engine runs queries (executors on a cluster).
        let (masked, mut r) = crate::masking::run_microaggregation(job, m, progress, &executor).await?;
        let file = crate::publish::table::write_masked(staging.dir(), &m.name, &masked)?;
        r.set_file(file);
        report.microaggregations.push(r);
    }
    let json = serde_json::to_vec_pretty(&report).map_err(|e| Error::Internal(e.to_string()))?;
    let rp = staging.dir().join("report.json");
    std::fs::write(&rp, json).map_err(|e| Error::io(&rp, e))?;
    let hp = staging.dir().join("report.html");
    std::fs::write(&hp, crate::report_html::render(&report)).map_err(|e| Error::io(&hp, e))?;
    Ok(Summary { output, report })
}

/// The input error for a table without records: publishing an empty table (and an audit that
/// "passed" on nothing) would hide a wrong path, filter or view.
fn no_rows(t: &TableJob, microdata: &str) -> Error {
    let from = match &t.source {
        Some(TableSource::View(v)) => format!("view `{v}`"),
        Some(TableSource::SqlFile(f)) => f.display().to_string(),
        None => microdata.to_string(),
    };
    Error::data(from, format!("table `{}` has no records (0 rows to tabulate); nothing was published", t.name))
}

/// Stage timings of one table.
type Timings = BTreeMap<String, f64>;

/// A table of a `[[linked]]` group waiting for the rest of its group: assessed cells, its
/// a-priori file and its timings so far.
type PendingTable = (AssessedTable, Option<crate::protect::AprioriFile>, Timings);

/// Writes one protected table into the staging directory and adds its report.
fn write_table(
    staging: &Path,
    t: &TableJob,
    assessed: &AssessedTable,
    protection: Option<&crate::suppress::Protection>,
    mut timings: BTreeMap<String, f64>,
    report: &mut Report,
) -> Result<()> {
    let start = Instant::now();
    let c = &assessed.cells;
    let mut writer = TableWriter::create(staging, &t.name, &t.explanatory, &c.dims, c.weight.is_some())?;
    writer.write(assessed)?;
    let tally = writer.finish()?;
    timings.insert("write".to_string(), start.elapsed().as_secs_f64());
    report.tables.push(table_report(t, &tally, &c.dims, protection, timings));
    Ok(())
}

/// Protects a complete `[[linked]]` group jointly (the joint solve and audit run where the
/// engine runs queries: an executor on a cluster) and writes its tables (in job order).
async fn protect_linked_group(
    job: &Job,
    group: &[String],
    pending: &mut HashMap<String, PendingTable>,
    staging: &Path,
    report: &mut Report,
    progress: &Progress,
    executor: &Executor,
) -> Result<()> {
    let jobs: Vec<&TableJob> = job.tables.iter().filter(|t| group.contains(&t.name)).collect();
    let mut timings = Vec::with_capacity(jobs.len());
    let mut owned = Vec::with_capacity(jobs.len());
    for t in &jobs {
        let (a, f, tm) = pending.remove(&t.name).expect("every table of the group is pending");
        timings.push(tm);
        owned.push((t.name.clone(), a, f));
    }
    let first = jobs[0];
    let stage = progress.stage(&format!("{}: linked secondary suppression ({})", group.join("+"), first.secondary), 1);
    let start = Instant::now();
    let solver = executor.subtable_solver(&group.join("+"));
    let settings = first.clone();
    // The solver blocks on engine queries: run it off the runtime's worker threads.
    let (owned, protections) = tokio::task::spawn_blocking(move || {
        let mut refs: Vec<(&str, &mut AssessedTable, Option<&crate::protect::AprioriFile>)> =
            owned.iter_mut().map(|(n, a, f)| (n.as_str(), a, f.as_ref())).collect();
        let ps = crate::protect::protect_linked(&mut refs, &settings, &solver);
        ps.map(|ps| (owned, ps))
    })
    .await
    .map_err(|e| Error::Internal(format!("linked secondary suppression task: {e}")))??;
    let secs = start.elapsed().as_secs_f64();
    stage.finish();
    if protections.iter().any(|p| p.stopped_by_time_limit) {
        let w = time_limit_warning(&group.join("+"), first.time_limit_s);
        progress.warn(&w);
        report.warnings.push(w);
    }
    for (((t, mut tm), (_, a, _)), p) in jobs.into_iter().zip(timings).zip(owned).zip(&protections) {
        if let Some(w) = crate::protect::detail_warning(&t.name, &a, Some(p.suppressed_value_share)) {
            progress.warn(&w);
            report.warnings.push(w);
        }
        tm.insert("secondary".to_string(), secs);
        write_table(staging, t, &a, Some(p), tm, report)?;
        if let Some(r) = report.tables.last_mut() {
            r.audit = format!("passed (joint audit of linked tables {}): {}", group.join(", "), p.audit.describe());
        }
    }
    Ok(())
}

/// The warning of a table whose search was ended by its time limit, not by its work budget.
fn time_limit_warning(table: &str, limit_s: f64) -> String {
    format!(
        "table `{table}`: secondary.time_limit_s = {limit_s} s ended the search before its work budget: the pattern \
         is audited and safe, but depends on machine speed (the same input and seed may give another pattern \
         elsewhere); raise the limit for a reproducible result"
    )
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
        total_value: tally.total_abs,
        suppressed_value: tally.suppressed_abs,
        suppressed_by_level: dims
            .iter()
            .zip(&tally.by_level)
            .map(|(h, levels)| (h.variable().to_string(), levels.clone()))
            .collect(),
        heat_map: tally.heat_map.clone(),
        method: t.secondary.reported(p.map(|p| p.method)),
        protected_against_recalculation: p.is_some(),
        audit: match p {
            Some(p) => format!("passed: {}", p.audit.describe()),
            None => "not run: secondary method \"none\" publishes primaries only".into(),
        },
        secondary_cost: p.map(|p| p.secondary_cost),
        lower_bound: p.and_then(|p| p.lower_bound),
        gap: p.and_then(|p| p.gap),
        stopped_by_time_limit: p.is_some_and(|p| p.stopped_by_time_limit),
        files: crate::publish::table_files(&t.name).to_vec(),
        subtables_per_worker: p
            .map(|p| {
                let mut m = BTreeMap::new();
                for s in p.subtables.iter().filter(|s| !s.worker.is_empty()) {
                    *m.entry(s.worker.clone()).or_default() += 1;
                }
                m
            })
            .unwrap_or_default(),
        protected_on: p.map(|p| p.worker.clone()).unwrap_or_default(),
        parts_per_worker: BTreeMap::new(),
        routed_inputs: None,
        timings_s: timings,
    }
}
