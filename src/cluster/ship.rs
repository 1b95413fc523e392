//! Client side of solver partitions: write a level's subtable problems (or a whole-table
//! protection, or microaggregation strata) as Parquet rows to a scratch location every executor
//! can read, run `SELECT partition_id, sdc_solve_subtable(payload)` (`sdc_protect_table`,
//! `sdc_microaggregate_stratum`) through the job's `SessionContext`, and merge the results in
//! partition-id order. The client itself runs no solver.
//!
//! The same code runs in every engine mode — local DataFusion executes the query in-process,
//! Ballista ships it to executors — so local and cluster outputs are byte-identical by
//! construction. Rows are spread over several Parquet files (one scan partition each), so a
//! level with many subtables keeps every executor busy.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, UInt64Type};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tokio::runtime::Handle;

use super::udf::{ANONYMISE_NOMINAL, MICROAGGREGATE_STRATUM, PROTECT_TABLE, SOLVE_SUBTABLE};
use super::wire::{self, Solved, Wire};
use crate::error::{Error, Result};
use crate::microagg::nominal_stratum::{NominalStratumOutcome, NominalStratumTask};
use crate::microagg::{StratumOutcome, StratumTask};
use crate::suppress::{SubtableOutcome, SubtableSolver, SubtableTask, SuppressError, TableOutcome, TableTask};

/// Where solver partitions are written: a place the client writes and every executor reads.
///
/// Local directory (local and standalone modes, a loopback cluster, or any shared mount) or an
/// object-store prefix. The payloads hold unprotected cell values, so the location is private to
/// the run, outside the output, and removed at the end ([`Scratch::remove`]; a local one also on
/// drop).
#[derive(Debug)]
pub enum Scratch {
    /// A private temporary directory.
    Local(tempfile::TempDir),
    /// A private prefix on an object store.
    Store {
        /// `s3://bucket/prefix` (no trailing slash).
        url: String,
        /// The store.
        store: Arc<dyn ObjectStore>,
    },
}

impl Scratch {
    /// Chooses the scratch location of a run writing to `output`, on a remote cluster or not.
    ///
    /// `SDCFLOW_SCRATCH` (a directory or `s3://bucket/prefix`) wins; a cluster run with an
    /// `s3://` output uses a sibling prefix `<output>.sdcflow-scratch-<pid>-<time>`; everything
    /// else a local temporary directory (enough for local, standalone and loopback clusters).
    pub fn for_run(output: &str, remote_cluster: bool) -> Result<Self> {
        let stamp = format!("{}-{}", std::process::id(), chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0));
        let base = match std::env::var("SDCFLOW_SCRATCH") {
            Ok(s) if !s.is_empty() => Some(s),
            _ if remote_cluster && output.starts_with("s3://") => {
                Some(format!("{}.sdcflow-scratch-{stamp}", output.trim_end_matches('/')))
            }
            _ => None,
        };
        match base {
            Some(b) if b.starts_with("s3://") => {
                let store = crate::store::s3_store(&b)?.ok_or_else(|| Error::Internal(format!("no store for {b}")))?;
                let url = if b.contains(".sdcflow-scratch-") {
                    b
                } else {
                    format!("{}/sdcflow-scratch-{stamp}", b.trim_end_matches('/'))
                };
                Ok(Scratch::Store { url, store })
            }
            Some(dir) => {
                std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                let t = tempfile::Builder::new()
                    .prefix("sdcflow-scratch-")
                    .tempdir_in(&dir)
                    .map_err(|e| Error::io(&dir, e))?;
                crate::store::register_active(t.path());
                Ok(Scratch::Local(t))
            }
            None => {
                let t = tempfile::Builder::new()
                    .prefix("sdcflow-scratch-")
                    .tempdir()
                    .map_err(|e| Error::io(std::env::temp_dir(), e))?;
                crate::store::register_active(t.path());
                Ok(Scratch::Local(t))
            }
        }
    }

    /// Where the scratch lives (a directory or an `s3://` prefix), for messages.
    pub fn describe(&self) -> String {
        match self {
            Scratch::Local(t) => t.path().display().to_string(),
            Scratch::Store { url, .. } => url.clone(),
        }
    }

    /// The location of sub-directory `name`, as a path or URL DataFusion can scan.
    pub(crate) fn location(&self, name: &str) -> String {
        match self {
            Scratch::Local(t) => format!("{}/", t.path().join(name).display()),
            Scratch::Store { url, .. } => format!("{url}/{name}/"),
        }
    }

    /// Writes `bytes` as `name/file`.
    pub(crate) async fn put(&self, name: &str, file: &str, bytes: Vec<u8>) -> Result<()> {
        match self {
            Scratch::Local(t) => {
                let dir: PathBuf = t.path().join(name);
                std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
                let p = dir.join(file);
                std::fs::write(&p, bytes).map_err(|e| Error::io(&p, e))
            }
            Scratch::Store { url, store } => {
                let key = format!("{}/{name}/{file}", key_of(url));
                store
                    .put(&StorePath::from(key.as_str()), PutPayload::from(bytes))
                    .await
                    .map(|_| ())
                    .map_err(|e| Error::Store { url: format!("{url}/{name}/{file}"), message: e.to_string() })
            }
        }
    }

    /// Deletes everything written below the scratch location.
    pub async fn remove(self) -> Result<()> {
        match self {
            Scratch::Local(t) => {
                let p = t.path().to_path_buf();
                crate::store::unregister_active(&p);
                t.close().map_err(|e| Error::io(p, e))
            }
            Scratch::Store { url, store } => {
                use futures::TryStreamExt;
                let prefix = StorePath::from(key_of(&url));
                let objects: Vec<_> = store
                    .list(Some(&prefix))
                    .try_collect()
                    .await
                    .map_err(|e| Error::Store { url: url.clone(), message: e.to_string() })?;
                for o in objects {
                    store
                        .delete(&o.location)
                        .await
                        .map_err(|e| Error::Store { url: format!("{url} ({})", o.location), message: e.to_string() })?;
                }
                Ok(())
            }
        }
    }
}

fn key_of(url: &str) -> String {
    url::Url::parse(url).map(|u| u.path().trim_matches('/').to_string()).unwrap_or_default()
}

/// The schema of a partition file: `partition_id` (position in the level) and `payload`.
fn partition_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("partition_id", DataType::UInt64, false),
        Field::new("payload", DataType::Utf8, false),
    ]))
}

/// Where solver partitions run: the job's engine session (the executors of a cluster, or this
/// process), the run's scratch location every executor reads, and at most `files` partition
/// files per query (the job's target partitions: about executors × concurrent tasks). The one
/// value the stages hand their solver work to.
#[derive(Clone)]
pub struct Executor {
    /// The job's engine session.
    pub ctx: SessionContext,
    /// The run's private scratch location.
    pub scratch: Arc<Scratch>,
    /// Partition files per query at most.
    pub files: usize,
    /// Whether the queries run on other machines' executors (a remote cluster): their results
    /// are then verified by this client ([`SubtableSolver::untrusted`]). Local and standalone
    /// engines run every function in this process, on the client's own tables.
    pub remote: bool,
}

impl Executor {
    /// A solver shipping the modular subtables (and whole-table protections) of `table`;
    /// call it from a blocking thread inside the runtime (see [`SqlSubtableSolver::new`]).
    pub fn subtable_solver(&self, table: &str) -> SqlSubtableSolver {
        let mut s =
            SqlSubtableSolver::new(self.ctx.clone(), self.scratch.clone(), Handle::current(), table, self.files);
        s.remote = self.remote;
        s
    }

    /// [`solve_strata`] on this executor.
    pub async fn solve_strata(
        &self,
        name: &str,
        tasks: &[StratumTask],
    ) -> Result<(Vec<StratumOutcome>, BTreeMap<String, usize>)> {
        solve_strata(&self.ctx, &self.scratch, name, tasks, self.files).await
    }

    /// [`anonymise_nominal_strata`] on this executor.
    pub async fn anonymise_nominal_strata(
        &self,
        name: &str,
        tasks: &[NominalStratumTask],
    ) -> Result<(Vec<std::result::Result<NominalStratumOutcome, String>>, BTreeMap<String, usize>)> {
        anonymise_nominal_strata(&self.ctx, &self.scratch, name, tasks, self.files).await
    }
}

/// Ships each level of a modular protection through SQL (see the module docs).
pub struct SqlSubtableSolver {
    ctx: SessionContext,
    scratch: Arc<Scratch>,
    handle: Handle,
    table: String,
    files: usize,
    levels: AtomicUsize,
    tables: AtomicUsize,
    /// Results come from other processes (see [`Executor::remote`]); true unless told otherwise.
    pub remote: bool,
}

impl SqlSubtableSolver {
    /// A solver for table `table` writing at most `files` partition files per level (use the
    /// job's target partitions: about executors × concurrent tasks). `handle` runs the queries;
    /// call [`SubtableSolver::solve_level`] from a blocking thread (not a runtime worker).
    pub fn new(ctx: SessionContext, scratch: Arc<Scratch>, handle: Handle, table: &str, files: usize) -> Self {
        let table = safe_name(table);
        Self {
            ctx,
            scratch,
            handle,
            table,
            files,
            levels: AtomicUsize::new(0),
            tables: AtomicUsize::new(0),
            remote: true,
        }
    }

    async fn solve(&self, tasks: &[SubtableTask]) -> Result<Vec<Result<SubtableOutcome, (String, String)>>> {
        let level = self.levels.fetch_add(1, Ordering::Relaxed);
        let name = format!("__sdc_{}_solve_{level}", self.table);
        let payloads = tasks.iter().map(|t| wire::encode(t).map_err(Error::Internal)).collect::<Result<Vec<_>>>()?;
        let results = run_partitions(&self.ctx, &self.scratch, &name, SOLVE_SUBTABLE, payloads, self.files)
            .await
            .map_err(|e| Error::Engine(format!("solving the subtables of table `{}`: {e}", self.table)))?;
        results
            .iter()
            .map(|r| {
                let s: Solved<std::result::Result<SubtableOutcome, String>> =
                    wire::decode(r).map_err(Error::Internal)?;
                Ok(s.outcome.map_err(|e| (s.worker, e)))
            })
            .collect()
    }

    async fn protect(&self, task: TableTask) -> Result<std::result::Result<TableOutcome, SuppressError>> {
        let n = self.tables.fetch_add(1, Ordering::Relaxed);
        let name = format!("__sdc_{}_protect_{n}", self.table);
        let payload = wire::encode(&task).map_err(Error::Internal)?;
        // The task's copy of the tables is not needed while the solver runs (a 3.6 M-cell
        // table's copy is ~1 GB, and the local solver decodes its own from the payload).
        drop(task);
        let results = run_partitions(&self.ctx, &self.scratch, &name, PROTECT_TABLE, vec![payload], 1)
            .await
            .map_err(|e| Error::Engine(format!("protecting table `{}`: {e}", self.table)))?;
        let s: Solved<std::result::Result<TableOutcome, SuppressError>> =
            wire::decode(&results[0]).map_err(Error::Internal)?;
        Ok(s.outcome)
    }
}

/// Writes `payloads` as rows `(partition_id, payload)` of at most `files` Parquet files under
/// scratch directory `name`, runs `func(payload)` over them through `ctx` and returns the
/// results in partition-id order. Fails unless every partition returns exactly one result.
pub async fn run_partitions(
    ctx: &SessionContext,
    scratch: &Scratch,
    name: &str,
    func: &str,
    payloads: Vec<String>,
    files: usize,
) -> Result<Vec<String>> {
    let n = payloads.len();
    let files = files.min(n).max(1);
    // Row i goes to file i mod files: consecutive problems (similar sizes) spread evenly.
    for f in 0..files {
        let rows: Vec<usize> = (f..n).step_by(files).collect();
        let ids = UInt64Array::from_iter_values(rows.iter().map(|&i| i as u64));
        let col = StringArray::from_iter_values(rows.iter().map(|&i| payloads[i].as_str()));
        let batch = RecordBatch::try_new(partition_schema(), vec![Arc::new(ids), Arc::new(col)])?;
        scratch.put(name, &format!("part-{f:05}.parquet"), parquet_bytes(&batch)?).await?;
    }
    drop(payloads);
    let sql = format!("SELECT partition_id, {func}(payload) AS outcome FROM \"{name}\"");
    query_partitions(ctx, scratch, name, func, &sql, n).await
}

/// One record batch as the bytes of a Parquet file (the scratch files the queries read).
pub(crate) fn parquet_bytes(batch: &RecordBatch) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, batch.schema(), None)?;
    w.write(batch)?;
    w.close()?;
    Ok(buf)
}

/// Registers scratch directory `name`, runs `sql` (which must give one row `(id, result)` per
/// partition, ids `0..n`) through `ctx` and returns the results in id order. On a cluster the
/// query is submitted again when it failed for another reason than `func` refusing a payload
/// (see [`QUERY_ATTEMPTS`]).
pub(crate) async fn query_partitions(
    ctx: &SessionContext,
    scratch: &Scratch,
    name: &str,
    func: &str,
    sql: &str,
    n: usize,
) -> Result<Vec<String>> {
    let location = scratch.location(name);
    ctx.register_parquet(name, &location, ParquetReadOptions::default())
        .await
        .map_err(|e| Error::data(&location, format!("solver partitions: {e}")))?;
    let result = partition_results(ctx, name, func, sql, n).await;
    let _ = ctx.deregister_table(name);
    result
}

/// Runs `sql`, whose rows are `(partition id UInt64, outcome Utf8)` for partitions `0..n`, and
/// returns the outcomes by partition id; on a cluster a failure not raised by `func` submits the
/// query again (see [`QUERY_ATTEMPTS`]). `name` names the query in warnings.
pub(crate) async fn partition_results(
    ctx: &SessionContext,
    name: &str,
    func: &str,
    sql: &str,
    n: usize,
) -> Result<Vec<String>> {
    sparse_partition_results(ctx, name, func, sql, n)
        .await?
        .into_iter()
        .enumerate()
        .map(|(i, o)| o.ok_or_else(|| Error::Internal(format!("solver partition {i} returned no result"))))
        .collect()
}

/// [`partition_results`] where a partition may return nothing (`None`): each at most once.
pub(crate) async fn sparse_partition_results(
    ctx: &SessionContext,
    name: &str,
    func: &str,
    sql: &str,
    n: usize,
) -> Result<Vec<Option<String>>> {
    let attempts = if is_distributed(ctx) { QUERY_ATTEMPTS } else { 1 };
    let mut attempt = 1;
    loop {
        let again = |what: &str| {
            crate::progress::warn_installed(&format!(
                "solver query `{name}` failed on the cluster (attempt {attempt} of {attempts}), running it again: {what}"
            ))
        };
        match async { ctx.sql(sql).await?.collect().await }.await {
            // A payload the function refused fails the same way everywhere: report it now.
            Err(e) if attempt < attempts && !e.to_string().contains(func) => again(&e.to_string()),
            Err(e) => return Err(Error::Engine(e.to_string())),
            Ok(batches) => match results_by_partition(&batches, n)? {
                // Ballista's static planner, re-running a rolled-back final stage after a lost
                // executor, may report a partition twice: the outcomes are pure functions of
                // the partition files, so the query is run again rather than one of them chosen.
                Err(Twice(id)) if attempt < attempts => again(&format!("partition {id} returned twice")),
                Err(Twice(id)) => return Err(Error::Internal(format!("solver partition {id} returned twice"))),
                Ok(out) => return Ok(out),
            },
        }
        attempt += 1;
    }
}

/// A partition id that came back twice from one query.
struct Twice(usize);

/// The outcome of each partition `0..n` of a solver query's result batches; a partition
/// reported twice is `Ok(Err(Twice))`, which running the query again may mend.
fn results_by_partition(batches: &[RecordBatch], n: usize) -> Result<std::result::Result<Vec<Option<String>>, Twice>> {
    let mut out: Vec<Option<String>> = vec![None; n];
    for b in batches {
        let ids = b.column(0).as_primitive::<UInt64Type>();
        let outcomes = b.column(1).as_string::<i32>();
        for r in 0..b.num_rows() {
            let id = ids.value(r) as usize;
            let Some(slot) = out.get_mut(id) else {
                return Err(Error::Internal(format!("unknown solver partition {id}")));
            };
            if slot.is_some() {
                return Ok(Err(Twice(id)));
            }
            if outcomes.is_null(r) {
                return Err(Error::Internal(format!("solver partition {id} returned NULL")));
            }
            *slot = Some(outcomes.value(r).to_string());
        }
    }
    Ok(Ok(out))
}

/// How often a solver query is submitted to a Ballista cluster before its error is final.
///
/// Ballista re-runs the tasks of an executor it declares lost, but a job whose last stage has
/// finished is past that: when an executor holding one of its result partitions dies before
/// the client has fetched it, the fetch fails and so does the query. Solver queries are pure
/// functions of their partition files, and their results are merged by partition id, so
/// submitting the query again gives the same bytes; only the time is lost.
const QUERY_ATTEMPTS: usize = 3;

/// Whether `ctx` runs its queries on Ballista (standalone or a remote scheduler).
pub(crate) fn is_distributed(ctx: &SessionContext) -> bool {
    ctx.state().config().options().extensions.get::<ballista_core::config::BallistaConfig>().is_some()
}

/// Microaggregates the strata of one data set through `ctx` (one stratum per partition row);
/// returns the outcomes in task order and the number of strata each worker solved.
pub async fn solve_strata(
    ctx: &SessionContext,
    scratch: &Scratch,
    name: &str,
    tasks: &[StratumTask],
    files: usize,
) -> Result<(Vec<StratumOutcome>, BTreeMap<String, usize>)> {
    let payloads = tasks
        .iter()
        .map(|t| wire::encode(t).map_err(|e| Error::Internal(format!("microaggregation `{name}`: {e}"))))
        .collect::<Result<Vec<_>>>()?;
    let results = run_partitions(
        ctx,
        scratch,
        &format!("__sdc_{}_strata", safe_name(name)),
        MICROAGGREGATE_STRATUM,
        payloads,
        files,
    )
    .await
    .map_err(|e| Error::Engine(format!("microaggregation `{name}`: solving the strata: {e}")))?;
    by_worker(&results)
}

/// Decodes partition results; the outcomes in order and how many partitions each worker
/// solved.
fn by_worker<T>(results: &[String]) -> Result<(Vec<T>, BTreeMap<String, usize>)>
where
    Solved<T>: Wire,
{
    let mut per_worker = BTreeMap::new();
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        let s: Solved<T> = wire::decode(r).map_err(Error::Internal)?;
        *per_worker.entry(s.worker).or_default() += 1;
        out.push(s.outcome);
    }
    Ok((out, per_worker))
}

/// Anonymises the strata of a nominal microaggregation through `ctx` (one stratum per
/// partition row); returns the outcomes (or each stratum's error) in task order and the number
/// of strata each worker solved.
pub async fn anonymise_nominal_strata(
    ctx: &SessionContext,
    scratch: &Scratch,
    name: &str,
    tasks: &[NominalStratumTask],
    files: usize,
) -> Result<(Vec<std::result::Result<NominalStratumOutcome, String>>, BTreeMap<String, usize>)> {
    let payloads = tasks
        .iter()
        .map(|t| wire::encode(t).map_err(|e| Error::Internal(format!("microaggregation `{name}`: {e}"))))
        .collect::<Result<Vec<_>>>()?;
    let results =
        run_partitions(ctx, scratch, &format!("__sdc_{}_nominal", safe_name(name)), ANONYMISE_NOMINAL, payloads, files)
            .await
            .map_err(|e| Error::Engine(format!("microaggregation `{name}`: anonymising the strata: {e}")))?;
    by_worker(&results)
}

/// `name` with every character SQL identifiers and file names dislike replaced by `_`.
fn safe_name(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

impl SubtableSolver for SqlSubtableSolver {
    fn untrusted(&self) -> bool {
        self.remote
    }

    fn solve_level(&self, tasks: Vec<SubtableTask>) -> std::result::Result<Vec<SubtableOutcome>, SuppressError> {
        if tasks.is_empty() {
            return Ok(Vec::new());
        }
        let results =
            self.handle.block_on(self.solve(&tasks)).map_err(|e| SuppressError::Distributed(e.to_string()))?;
        results
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                r.map_err(|(worker, message)| {
                    SuppressError::Distributed(format!("subtable partition {i} failed on {worker}: {message}"))
                })
            })
            .collect()
    }

    fn protect_table(&self, task: TableTask) -> std::result::Result<TableOutcome, SuppressError> {
        self.handle.block_on(self.protect(task)).map_err(|e| SuppressError::Distributed(e.to_string()))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{session, EngineOptions};
    use crate::job::EngineMode;
    use crate::suppress::{protect, protect_with, Method, ProtectOptions};

    /// The SQL path (partition files + `sdc_solve_subtable`) gives the same protection as the
    /// in-process solver, and strata give the same microaggregation.
    #[test]
    fn sql_partitions_match_in_process_solving() {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let ctx = rt
            .block_on(session(&EngineOptions { mode: EngineMode::Local, target_partitions: 3, memory_limit: None }))
            .unwrap();
        let scratch = Arc::new(Scratch::for_run("unused", false).unwrap());
        let spec = crate::table::synth::SynthSpec {
            dims: vec![vec![3, 2], vec![3]],
            density: 0.9,
            mean_freq: 3.0,
            min_freq: 3,
            protection: 0.15,
            seed: 11,
        };
        let t = crate::table::synth::generate(&spec).unwrap();
        let opts = ProtectOptions { method: Method::Modular, time_limit_s: 60.0, ..Default::default() };
        let solver = SqlSubtableSolver::new(ctx.clone(), scratch.clone(), rt.handle().clone(), "t 1", 3);
        let a = protect_with(&t, &opts, &solver).unwrap();
        let b = protect(&t, &opts).unwrap();
        assert_eq!(a.statuses, b.statuses);
        assert!(a.subtables.len() > 3 && a.subtables.iter().all(|s| s.worker.starts_with("in-process")));
        assert!(a.worker.starts_with("in-process"), "the completion ran through SQL: {:?}", a.worker);
        assert!(b.worker.is_empty());
        // Whole-table methods and linked groups are one table task each.
        for method in [Method::Fast, Method::Optimal] {
            let opts = ProtectOptions { method, time_limit_s: 60.0, ..Default::default() };
            let a = protect_with(&t, &opts, &solver).unwrap();
            let b = protect(&t, &opts).unwrap();
            assert_eq!((a.statuses, a.lower_bound), (b.statuses, b.lower_bound));
            assert!(a.worker.starts_with("in-process"));
        }
        let opts = ProtectOptions { method: Method::Fast, time_limit_s: 60.0, ..Default::default() };
        let a = crate::suppress::protect_linked_with(&[t.clone(), t.clone()], &opts, &solver).unwrap();
        let b = crate::suppress::protect_linked(&[t.clone(), t.clone()], &opts).unwrap();
        assert_eq!(
            a.iter().map(|p| &p.statuses).collect::<Vec<_>>(),
            b.iter().map(|p| &p.statuses).collect::<Vec<_>>()
        );
        // A table the solver cannot protect fails the same way through SQL.
        let mut bad = t.clone();
        bad.set_status(0, crate::table::CellStatus::Primary);
        bad.set_protection(0, 1e12, 1e12, 0.0);
        let e = protect_with(&bad, &opts, &solver).unwrap_err();
        assert_eq!(e, protect(&bad, &opts).unwrap_err());

        let mut r = crate::rng::Rng::new(5);
        let data = crate::microagg::NumericData {
            rows: 60,
            cols: 2,
            values: (0..120).map(|_| r.index(1000) as f64 / 7.0).collect(),
            weights: None,
            strata: Some((0..60).map(|i| (i % 4) as u64).collect()),
        };
        let params = crate::microagg::MicroaggParams { k: 3, ..Default::default() };
        let (plan, tasks) = crate::microagg::plan_strata(&data, &params).unwrap();
        let (outcomes, per_worker) = rt.block_on(solve_strata(&ctx, &scratch, "m", &tasks, 3)).unwrap();
        assert_eq!(per_worker.values().sum::<usize>(), 4);
        let shipped = crate::microagg::finish_strata(&data, &params, plan, outcomes).unwrap();
        let direct = crate::microagg::microaggregate(&data, &params).unwrap();
        assert_eq!((shipped.masked, shipped.group), (direct.masked, direct.group));

        // Nominal strata: same releases through SQL; a bad stratum reports its own error.
        let mut nominal = |seed: u64, cols: usize| crate::microagg::nominal_stratum::NominalStratumTask {
            cols,
            codes: (0..40 * 3).map(|_| r.index(3) as u32).collect(),
            k: 3,
            control: None,
            up_to: 2,
            seed,
            method: Default::default(),
        };
        let mut tasks = vec![nominal(1, 3), nominal(2, 3)];
        tasks.push(crate::microagg::nominal_stratum::NominalStratumTask { k: 1000, ..nominal(3, 3) });
        let (outcomes, per_worker) = rt.block_on(anonymise_nominal_strata(&ctx, &scratch, "n m", &tasks, 2)).unwrap();
        assert_eq!(per_worker.values().sum::<usize>(), 3);
        for (t, o) in tasks.iter().zip(&outcomes) {
            let direct = crate::microagg::nominal_stratum::anonymise_stratum(t);
            assert_eq!(o.as_ref().map(|o| &o.released), direct.as_ref().map(|o| &o.released));
        }
        assert!(outcomes[0].is_ok() && outcomes[2].is_err(), "{outcomes:?}");
    }
}
