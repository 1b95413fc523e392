//! Client side of solver partitions: write a level's subtable problems as Parquet rows to a
//! scratch location every executor can read, run `SELECT partition_id,
//! sdc_solve_subtable(payload)` through the job's `SessionContext`, and merge the results in
//! partition-id order.
//!
//! The same code runs in every engine mode — local DataFusion executes the query in-process,
//! Ballista ships it to executors — so local and cluster outputs are byte-identical by
//! construction. Rows are spread over several Parquet files (one scan partition each), so a
//! level with many subtables keeps every executor busy.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, UInt64Type};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tokio::runtime::Handle;

use super::udf::SOLVE_SUBTABLE;
use super::wire;
use crate::error::{Error, Result};
use crate::job::EngineMode;
use crate::run::AssessedTable;
use crate::suppress::{Protection, SubtableOutcome, SubtableSolver, SubtableTask, SuppressError};

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
    /// Chooses the scratch location of a run writing to `output` in `mode`.
    ///
    /// `SDCFLOW_SCRATCH` (a directory or `s3://bucket/prefix`) wins; a cluster run with an
    /// `s3://` output uses a sibling prefix `<output>.sdcflow-scratch-<pid>-<time>`; everything
    /// else a local temporary directory (enough for local, standalone and loopback clusters).
    pub fn for_run(output: &str, mode: &EngineMode) -> Result<Self> {
        let stamp = format!("{}-{}", std::process::id(), chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0));
        let base = match std::env::var("SDCFLOW_SCRATCH") {
            Ok(s) if !s.is_empty() => Some(s),
            _ if matches!(mode, EngineMode::Remote(_)) && output.starts_with("s3://") => {
                Some(format!("{}.sdcflow-scratch-{stamp}", output.trim_end_matches('/')))
            }
            _ => None,
        };
        match base {
            Some(b) if b.starts_with("s3://") => {
                let store = crate::engine::s3_store(&b)?.ok_or_else(|| Error::Internal(format!("no store for {b}")))?;
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
                Ok(Scratch::Local(t))
            }
            None => {
                let t = tempfile::Builder::new()
                    .prefix("sdcflow-scratch-")
                    .tempdir()
                    .map_err(|e| Error::io(std::env::temp_dir(), e))?;
                Ok(Scratch::Local(t))
            }
        }
    }

    /// The location of sub-directory `name`, as a path or URL DataFusion can scan.
    fn location(&self, name: &str) -> String {
        match self {
            Scratch::Local(t) => format!("{}/", t.path().join(name).display()),
            Scratch::Store { url, .. } => format!("{url}/{name}/"),
        }
    }

    /// Writes `bytes` as `name/file`.
    async fn put(&self, name: &str, file: &str, bytes: Vec<u8>) -> Result<()> {
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

/// Ships each level of a modular protection through SQL (see the module docs).
pub struct SqlSubtableSolver {
    ctx: SessionContext,
    scratch: Arc<Scratch>,
    handle: Handle,
    table: String,
    files: usize,
    levels: AtomicUsize,
}

impl SqlSubtableSolver {
    /// A solver for table `table` writing at most `files` partition files per level (use the
    /// job's target partitions: about executors × concurrent tasks). `handle` runs the queries;
    /// call [`SubtableSolver::solve_level`] from a blocking thread (not a runtime worker).
    pub fn new(ctx: SessionContext, scratch: Arc<Scratch>, handle: Handle, table: &str, files: usize) -> Self {
        let table = table.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        Self { ctx, scratch, handle, table, files: files.max(2), levels: AtomicUsize::new(0) }
    }

    async fn solve(&self, tasks: &[SubtableTask]) -> Result<Vec<Result<SubtableOutcome, (String, String)>>> {
        let level = self.levels.fetch_add(1, Ordering::Relaxed);
        let name = format!("__sdc_{}_solve_{level}", self.table);
        let files = self.files.min(tasks.len()).max(1);
        // Row i goes to file i mod files: consecutive subtables (similar sizes) spread evenly.
        for f in 0..files {
            let rows: Vec<usize> = (f..tasks.len()).step_by(files).collect();
            let ids = UInt64Array::from_iter_values(rows.iter().map(|&i| i as u64));
            let payloads = StringArray::from_iter_values(rows.iter().map(|&i| wire::encode_task(&tasks[i])));
            let batch = RecordBatch::try_new(partition_schema(), vec![Arc::new(ids), Arc::new(payloads)])?;
            let mut buf = Vec::new();
            let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, partition_schema(), None)?;
            w.write(&batch)?;
            w.close()?;
            self.scratch.put(&name, &format!("part-{f:05}.parquet"), buf).await?;
        }
        let location = self.scratch.location(&name);
        self.ctx
            .register_parquet(&name, &location, ParquetReadOptions::default())
            .await
            .map_err(|e| Error::data(&location, format!("solver partitions: {e}")))?;
        let sql = format!("SELECT partition_id, {SOLVE_SUBTABLE}(payload) AS outcome FROM \"{name}\"");
        let result = async { self.ctx.sql(&sql).await?.collect().await }.await;
        let _ = self.ctx.deregister_table(name.as_str());
        let batches =
            result.map_err(|e| Error::Engine(format!("solving the subtables of table `{}`: {e}", self.table)))?;
        let mut out: Vec<Option<Result<SubtableOutcome, (String, String)>>> = vec![None; tasks.len()];
        for b in &batches {
            let ids = b.column(0).as_primitive::<UInt64Type>();
            let outcomes = b.column(1).as_string::<i32>();
            for r in 0..b.num_rows() {
                let id = ids.value(r) as usize;
                let slot = out.get_mut(id).ok_or_else(|| Error::Internal(format!("unknown solver partition {id}")))?;
                if slot.is_some() {
                    return Err(Error::Internal(format!("solver partition {id} returned twice")));
                }
                if outcomes.is_null(r) {
                    return Err(Error::Internal(format!("solver partition {id} returned NULL")));
                }
                *slot = Some(wire::decode_outcome(outcomes.value(r)).map_err(Error::Internal)?);
            }
        }
        out.into_iter()
            .enumerate()
            .map(|(i, o)| o.ok_or_else(|| Error::Internal(format!("solver partition {i} returned no result"))))
            .collect()
    }
}

impl SubtableSolver for SqlSubtableSolver {
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
}

/// Protects an assessed table with its secondary method, modular subtables solved through
/// `ctx` (on the executors of a cluster, in-process otherwise); runs the solver on a blocking
/// thread so the engine's runtime stays free to drive the queries.
pub async fn protect_table(
    ctx: &SessionContext,
    scratch: &Arc<Scratch>,
    t: &crate::job::TableJob,
    mut assessed: AssessedTable,
    files: usize,
) -> Result<(AssessedTable, Protection)> {
    let solver = SqlSubtableSolver::new(ctx.clone(), scratch.clone(), Handle::current(), &t.name, files);
    let (name, method, seed, limit) = (t.name.clone(), t.secondary.clone(), t.seed, t.time_limit_s);
    tokio::task::spawn_blocking(move || {
        let p = crate::secondary::protect_with(&name, &mut assessed, &method, seed, limit, &solver)?;
        Ok((assessed, p))
    })
    .await
    .map_err(|e| Error::Internal(format!("secondary suppression task: {e}")))?
}
