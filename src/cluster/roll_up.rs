//! Client side of the distributed roll-up of a primaries-only table: its parts are written as
//! Parquet files `(part_id, inputs)` to the run's scratch location, and `SELECT part_id,
//! sdc_roll_up(task, part_id, inputs)` runs through the job's `SessionContext`: one task per
//! file group on the executors of a cluster (re-run elsewhere when an executor dies), in this
//! process otherwise. Each task rolls its part up, applies the primary rules and writes the
//! part's files into the run's staging directory ([`crate::publish::parts`]); only summaries
//! come back, and the client commits the table only when every part is there exactly as
//! reported. The client never holds a cell.
//!
//! Who writes the part files to the scratch: on a cluster, for a table with a contributor
//! variable, the executors ([`roll_up_routed`]: the client plans the parts from record counts and
//! never receives the pairs); otherwise the client, which cuts the pre-aggregated inputs into
//! parts ([`crate::tabulate::parts`]).

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{AsArray, LargeBinaryArray, RecordBatch, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, UInt64Type};
use datafusion::prelude::SessionContext;

use super::part_agg::{self, RouteTask, ROUTE_PAIRS, SLOTS, TASK_TYPE};
use super::ship::{is_distributed, parquet_bytes, query_partitions, sparse_partition_results, Executor};
use super::udf::ROLL_UP;
use super::wire::{self, Solved};
use crate::error::{Error, Result};
use crate::hierarchy::{Hierarchy, HierarchySpec};
use crate::progress::Progress;
use crate::publish::parts::{check_parts, check_remote_parts, PartSummary, PartTask};
use crate::publish::staging::Staging;
use crate::publish::Tally;
use crate::rules::Safety;
use crate::tabulate::lattice::Lattice;
use crate::tabulate::parts::{self, PartLayout};
use crate::tabulate::{self, TableQuery};

/// A primaries-only table written in parts.
#[derive(Debug)]
pub struct PartedTable {
    /// The table's hierarchies.
    pub dims: Vec<Hierarchy>,
    /// Report figures of all parts.
    pub tally: Tally,
    /// Parts written by each worker.
    pub parts_per_worker: BTreeMap<String, usize>,
    /// Number of parts.
    pub parts: usize,
    /// Parts assembled on the executors: what the client received instead of the pairs.
    pub routed: Option<RoutedInputs>,
}

/// What the client of a routed roll-up ([`roll_up_table`] on a cluster) received: counts and
/// summaries, not the pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RoutedInputs {
    /// Records of the table (the sum of the counts).
    pub records: u64,
    /// (Leaf cell, contributor) pairs routed to the parts, summed over the parts (a pair is in
    /// every part that needs it: the table's pairs × up to the leading chains' product).
    pub routed_pairs: u64,
    /// Rows the client received for the table's tabulation and roll-up: one per leading
    /// combination of codes (the counts), one per chunk of a part (its routing) and one per
    /// part (its summary).
    pub rows_to_client: u64,
}

/// Tabulates `query`, rolls it up in parts of about `part_cells` cells where `ctx` runs
/// queries, applies `safety` and writes every part into the run's staging (its directory, or
/// on an object store the run's prefix); returns `None` for a table without records.
///
/// On a cluster (Ballista, standalone included) a table with a contributor variable never
/// sends its pairs to the client ([`roll_up_routed`]); otherwise the client cuts the
/// pre-aggregated inputs into part payloads written to the scratch.
pub async fn roll_up_table(
    executor: &Executor,
    staging: &mut Staging,
    query: &TableQuery,
    safety: &Safety,
    hierarchies: &HashMap<String, HierarchySpec>,
    progress: &Progress,
    part_cells: u64,
) -> Result<Option<PartedTable>> {
    if query.contributor.is_some() && is_distributed(&executor.ctx) {
        return roll_up_routed(executor, staging, query, safety, hierarchies, progress, part_cells).await;
    }
    let (ctx, scratch) = (&executor.ctx, executor.scratch.as_ref());
    let name = scratch_name(query, "parts");
    let handle = tokio::runtime::Handle::current();
    let (empty, parts) = tabulate::tabulate_parts(ctx, query, hierarchies, progress, part_cells, &mut |i, inputs| {
        let bytes = part_file(i, inputs)?;
        // The planner is synchronous CPU work on this thread; the write may be an upload.
        tokio::task::block_in_place(|| handle.block_on(scratch.put(&name, &format!("part-{i:05}.parquet"), bytes)))
    })
    .await?;
    if parts == 0 {
        return Ok(None);
    }
    roll_up_payloads(executor, staging, query, safety, empty.dims, &name, parts, progress, None, None).await.map(Some)
}

/// Rolls up the `parts` payloads in the scratch folder `name` (`sdc_roll_up`, one task per
/// file), then checks and commits the parts; with `chunks` (the folder of the routed parts'
/// chunk files) the rows of `name` hold the names of each part's chunk files instead.
#[allow(clippy::too_many_arguments)]
async fn roll_up_payloads(
    executor: &Executor,
    staging: &mut Staging,
    query: &TableQuery,
    safety: &Safety,
    dims: Vec<Hierarchy>,
    name: &str,
    parts: usize,
    progress: &Progress,
    routed: Option<RoutedInputs>,
    chunks: Option<String>,
) -> Result<PartedTable> {
    let scratch = executor.scratch.as_ref();
    // Routed parts are one file each: plan as many partitions (tasks) as parts.
    let ctx = &if chunks.is_some() { with_partitions(&executor.ctx, parts) } else { executor.ctx.clone() };
    let root = staging.parts_root()?;
    let task = PartTask {
        table: query.name.clone(),
        explanatory: query.explanatory.clone(),
        layout: PartLayout { dims: dims.clone(), top_n: query.top_n, weighted: query.weight.is_some() },
        safety: safety.text.clone(),
        root: root.clone(),
        chunks,
    };
    let header = wire::encode(&task).map_err(Error::Internal)?.replace('\'', "''");
    let sql = format!(
        "SELECT part_id, {ROLL_UP}('{header}', part_id, arrow_cast(inputs, 'LargeBinary')) AS outcome FROM \"{name}\""
    );
    let stage = progress.stage(&format!("{}: roll-up and writing of {parts} parts", query.name), 1);
    let results = query_partitions(ctx, scratch, name, ROLL_UP, &sql, parts)
        .await
        .map_err(|e| Error::Engine(format!("rolling up table `{}`: {e}", query.name)))?;
    stage.finish();
    commit(staging, query, &root, dims, results, routed).await
}

/// A context like `ctx` whose queries are planned in `n` partitions: the scan of `n` files is
/// `n` tasks (the session's settings travel with every Ballista job).
fn with_partitions(ctx: &SessionContext, n: usize) -> SessionContext {
    let mut state = ctx.state();
    state.config_mut().options_mut().execution.target_partitions = n.max(1);
    SessionContext::new_with_state(state)
}

/// The scratch folder `what` of table `query`.
fn scratch_name(query: &TableQuery, what: &str) -> String {
    format!("__sdc_{}_{what}", query.name.replace(|c: char| !c.is_ascii_alphanumeric(), "_"))
}

/// Checks the parts' results and files and merges their report figures.
async fn commit(
    staging: &mut Staging,
    query: &TableQuery,
    root: &str,
    dims: Vec<Hierarchy>,
    results: Vec<String>,
    routed: Option<RoutedInputs>,
) -> Result<PartedTable> {
    let parts = results.len();
    let mut summaries = Vec::with_capacity(parts);
    let mut parts_per_worker = BTreeMap::new();
    for (i, r) in results.iter().enumerate() {
        let s: Solved<std::result::Result<PartSummary, String>> = wire::decode(r).map_err(Error::Internal)?;
        let summary = s.outcome.map_err(|e| {
            Error::Engine(format!("rolling up table `{}`: part {i} failed on {}: {e}", query.name, s.worker))
        })?;
        *parts_per_worker.entry(s.worker.clone()).or_default() += 1;
        summaries.push((summary, s.worker));
    }
    let tally = if root.starts_with("s3://") {
        let tally = check_remote_parts(root, &query.name, parts, &summaries).await?;
        staging.add_remote_files(summaries.into_iter().flat_map(|(s, _)| s.files));
        tally
    } else {
        check_parts(Path::new(root), &query.name, parts, &summaries)?
    };
    Ok(PartedTable { dims, tally, parts_per_worker, parts, routed })
}

/// [`roll_up_table`] without the pairs on the client: the client asks the engine for the
/// number of records under each combination of codes of the shards' leading variables, plans
/// the parts from those counts ([`parts::plan_from_counts`]: the plan the pairs give), and runs
/// `SELECT slot, sdc_route_pairs(…) FROM (SELECT unnest(sdc_slots(…)) AS slot, … FROM pairs)
/// GROUP BY slot` (the plan travels in the query's task literal): the pairs of
/// each chunk of a part (its contributors of one hash) meet in one task, which writes the
/// chunk's payload to the scratch ([`super::part_agg`]); each roll-up task then reads its
/// parts' chunk files and rolls them up as the client's payloads would be. The client holds
/// the counts, a short row per chunk and one per part.
async fn roll_up_routed(
    executor: &Executor,
    staging: &mut Staging,
    query: &TableQuery,
    safety: &Safety,
    hierarchies: &HashMap<String, HierarchySpec>,
    progress: &Progress,
    part_cells: u64,
) -> Result<Option<PartedTable>> {
    let (ctx, scratch) = (&executor.ctx, executor.scratch.as_ref());
    let dims = tabulate::resolve_dims(ctx, query, hierarchies).await?;
    let lat = Lattice::new(&dims)?;
    let split = lat.split();
    let pairs_sql = tabulate::pairs_sql(query);
    let stage = progress.stage(&format!("{}: records per leading node", query.name), 1);
    let batches = tabulate::collect(ctx, &tabulate::records_sql(query, split)).await?;
    stage.finish();
    let mut prefixes = Vec::new();
    let mut counts = Vec::new();
    for b in &batches {
        prefixes.extend(tabulate::leaf_keys(b, &dims[..split], &lat)?);
        counts.extend(arrow::compute::cast(b.column(split), &DataType::UInt64)?.as_primitive::<UInt64Type>().values());
    }
    let records: u64 = counts.iter().sum();
    if records == 0 {
        return Ok(None);
    }
    let starts = parts::plan_from_counts(&lat, &prefixes, &counts, part_cells);
    let n = starts.len();
    progress.detail(&format!("{}: {records} records in {n} parts, planned from {} counts", query.name, counts.len()));

    // Per part: the records routed to it (each once: they bound its pairs, hence its chunks).
    let mut part_records = vec![0u64; n];
    for (i, &p) in prefixes.iter().enumerate() {
        for part in parts::parts_of(&lat, &starts, p) {
            part_records[part] += counts[i];
        }
    }
    // Each part's pairs are cut by contributor into chunks, each its own aggregate group
    // ("slot") and payload file: no group holds more than about `CHUNK_RECORDS` pairs.
    let per_chunk = chunk_records();
    let chunks: Vec<u64> = part_records.iter().map(|&r| parts::chunks_for(r, per_chunk)).collect();
    let first: Vec<u64> = chunks.iter().scan(0u64, |acc, &c| Some(std::mem::replace(acc, *acc + c))).collect();
    let slots = (first[n - 1] + chunks[n - 1]) as usize;

    // Each chunk's pairs meet in one task, which writes the chunk's payload to the scratch.
    let name = scratch_name(query, "parts");
    let folder = scratch.location(&name);
    let task =
        RouteTask { table: query.name.clone(), dims: dims.clone(), starts, first: first.clone(), chunks, folder };
    let header = wire::encode(&task).map_err(Error::Internal)?.replace('\'', "''");
    let dargs: Vec<String> = (0..dims.len()).map(|i| format!("d{i}")).collect();
    let dsel: Vec<String> = (0..dims.len()).map(|i| format!("p.d{i}")).collect();
    let lead: Vec<String> = (0..split).map(|i| format!("p.d{i}")).collect();
    let sql = format!(
        "SELECT slot, {ROUTE_PAIRS}(arrow_cast('{header}', '{TASK_TYPE}'), slot, {d}, cid, v, rec, wt) AS outcome \
         FROM (SELECT unnest({SLOTS}(arrow_cast('{header}', '{TASK_TYPE}'), p.cid, {lead})) AS slot, {dsel}, p.cid, \
         p.v, p.rec, p.wt FROM ({pairs_sql}) p) GROUP BY slot",
        d = dargs.join(", "),
        dsel = dsel.join(", "),
        lead = lead.join(", ")
    );
    // Enough tasks that each holds a bounded share of the pairs (see `routing_tasks`).
    let tasks = routing_tasks(ctx, part_records.iter().sum(), route_task_records());
    let stage = progress
        .stage(&format!("{}: contributions routed to {n} parts in {slots} chunks by {tasks} tasks", query.name), 1);
    let routed = sparse_partition_results(&with_partitions(ctx, tasks), &name, ROUTE_PAIRS, &sql, slots).await;
    let routed = routed.map_err(|e| Error::Engine(format!("routing the pairs of table `{}`: {e}", query.name)))?;
    stage.finish();
    // Every part holds at least one pair (its shards are nonempty); a chunk may be empty.
    let mut pairs = 0u64;
    let mut part_pairs = vec![0u64; n];
    let mut names: Vec<Vec<String>> = vec![Vec::new(); n];
    let mut returned = 0u64;
    for (slot, r) in routed.iter().enumerate() {
        let Some(r) = r else { continue };
        let (part, chunk) = task.part_chunk(slot as u64).expect("slots are below the last part's end");
        match r.split(' ').next().and_then(|x| x.parse::<u64>().ok()) {
            Some(p) if p > 0 => {
                pairs += p;
                part_pairs[part] += p;
            }
            _ => {
                return Err(Error::Internal(format!(
                    "table `{}`: chunk {chunk} of part {part} routed {r:?}",
                    query.name
                )))
            }
        }
        names[part].push(part_agg::chunk_file(part, chunk));
        returned += 1;
    }
    if let Some(part) = names.iter().position(Vec::is_empty) {
        return Err(Error::Internal(format!("table `{}`: part {part} routed no pairs", query.name)));
    }
    let inputs =
        RoutedInputs { records, routed_pairs: pairs, rows_to_client: counts.len() as u64 + returned + n as u64 };

    // The roll-up reads a list of each part's chunk files, one part per task (file), the parts
    // with the most routed pairs first: Ballista hands the next task to the first free slot, so
    // executors that finish early take more parts and the longest part does not start last.
    // (Fixed groups of parts, one per target partition, left an executor idle for a fifth of
    // the roll-up at 20 M × 7: a part's records predicted its time badly — the totals part,
    // whose cells have the most contributors, took 3× its share.)
    let index = scratch_name(query, "roll_up");
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&p| (std::cmp::Reverse(part_pairs[p]), p));
    for (f, &p) in order.iter().enumerate() {
        let list = names[p].join("\n");
        scratch.put(&index, &format!("part-{f:05}.parquet"), index_file(&[p as u64], &[list.as_bytes()])?).await?;
    }
    roll_up_payloads(executor, staging, query, safety, dims, &index, n, progress, Some(inputs), Some(task.folder))
        .await
        .map(Some)
}

/// Records per chunk of a routed part: [`parts::CHUNK_RECORDS`], or the environment variable
/// `SDCFLOW_CHUNK_RECORDS` (tests and benchmarks: more, smaller chunks; chunks never change an
/// output).
fn chunk_records() -> u64 {
    records_setting("SDCFLOW_CHUNK_RECORDS", parts::CHUNK_RECORDS)
}

/// A count of records from the environment variable `name` (tests and benchmarks), else
/// `default`; at least 1.
fn records_setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default).max(1)
}

/// Routed records per task of the routing query, on average, at most: 4 chunks of
/// [`parts::CHUNK_RECORDS`] (about 130 MB of pairs at the 60 M × 7 benchmark's 32 MB a chunk).
///
/// Why: the aggregate's groups are few and large (one per chunk), and when the pool refuses,
/// DataFusion's hash aggregate spills them as one sorted run and reads every run back at once
/// to merge, so a task whose groups outgrow the executor's pool still fails
/// (`ResourcesExhausted`). With
/// `target_partitions` = 4 tasks, the 236 chunks of 60 M rows × 7 variables asked for 1.9 GB in
/// one task (BENCHMARKS, "Session 25"); the number of tasks must grow with the table instead.
pub const ROUTE_TASK_RECORDS: u64 = 4 * parts::CHUNK_RECORDS;

/// [`ROUTE_TASK_RECORDS`], or the environment variable `SDCFLOW_ROUTE_TASK_RECORDS` (tests:
/// more tasks on small tables; the number of tasks never changes an output).
fn route_task_records() -> u64 {
    records_setting("SDCFLOW_ROUTE_TASK_RECORDS", ROUTE_TASK_RECORDS)
}

/// Partitions (tasks a stage) of the routing query for `records` routed records: the
/// session's `target_partitions`, or more so that each task holds about `per_task` records'
/// pairs at most. A partition count applies to every stage of the query (DataFusion plans each
/// hash repartition with `target_partitions`), so it is not simply one per chunk: that made the
/// shuffles hundreds of tasks × hundreds of files on small tables.
fn routing_tasks(ctx: &SessionContext, records: u64, per_task: u64) -> usize {
    let configured = ctx.state().config().options().execution.target_partitions;
    configured.max(records.div_ceil(per_task.max(1)) as usize)
}

/// One part's scratch file: a single row `(part_id, inputs)`.
pub(crate) fn part_file(part: usize, inputs: Vec<u8>) -> Result<Vec<u8>> {
    index_file(&[part as u64], &[inputs.as_slice()])
}

/// Rows `(part_id, inputs)`: payloads, or the names of a part's chunk files.
fn index_file(parts: &[u64], inputs: &[&[u8]]) -> Result<Vec<u8>> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("part_id", DataType::UInt64, false),
        Field::new("inputs", DataType::LargeBinary, false),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![Arc::new(UInt64Array::from(parts.to_vec())), Arc::new(LargeBinaryArray::from_vec(inputs.to_vec()))],
    )?;
    parquet_bytes(&batch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionConfig;

    /// The routing query keeps the session's partitions on small tables and gets one task per
    /// `per_task` routed records on large ones (60 M × 7: 236 chunks in 4 tasks failed in a
    /// 1 GiB pool); [`with_partitions`] carries the count to the plan.
    #[test]
    fn routing_tasks_grow_with_the_routed_records() {
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(4));
        assert_eq!(routing_tasks(&ctx, 1000, ROUTE_TASK_RECORDS), 4);
        assert_eq!(routing_tasks(&ctx, 4 * ROUTE_TASK_RECORDS, ROUTE_TASK_RECORDS), 4);
        assert_eq!(routing_tasks(&ctx, 4 * ROUTE_TASK_RECORDS + 1, ROUTE_TASK_RECORDS), 5);
        // 60 M × 7: 47 parts, ~212 Mi routed records.
        assert_eq!(routing_tasks(&ctx, 212 << 20, ROUTE_TASK_RECORDS), 53);
        let wide = with_partitions(&ctx, 53);
        assert_eq!(wide.state().config().options().execution.target_partitions, 53);
        assert_eq!(routing_tasks(&wide, 10, 0), 53, "a zero budget counts as one record a task");
    }
}
