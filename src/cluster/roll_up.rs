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

use arrow::array::{ArrayRef, AsArray, LargeBinaryArray, RecordBatch, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, UInt64Type};

use super::part_agg::{RouteTask, ROUTE_PAIRS, TASK_TYPE};
use super::ship::{is_distributed, parquet_bytes, partition_results, query_partitions, Executor};
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
    /// combination of codes (the counts) and two per part (its routing and its summary).
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
    roll_up_payloads(executor, staging, query, safety, empty.dims, &name, parts, progress, None).await.map(Some)
}

/// Rolls up the `parts` payloads in the scratch folder `name` (`sdc_roll_up`, one task per
/// file), then checks and commits the parts.
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
) -> Result<PartedTable> {
    let (ctx, scratch) = (&executor.ctx, executor.scratch.as_ref());
    let root = staging.parts_root()?;
    let task = PartTask {
        table: query.name.clone(),
        explanatory: query.explanatory.clone(),
        layout: PartLayout { dims: dims.clone(), top_n: query.top_n, weighted: query.weight.is_some() },
        safety: safety.text.clone(),
        root: root.clone(),
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
/// the parts from those counts ([`parts::plan_from_counts`]: the plan the pairs give), writes
/// a route table (leading codes → parts that need them) to the scratch, and runs
/// `SELECT part_id, sdc_route_pairs(…) FROM pairs JOIN routes … GROUP BY part_id`: each
/// part's pairs meet in one task, which writes the part's payload to the scratch
/// ([`super::part_agg`]); the payloads are then rolled up as the client's would be. The client
/// holds the counts and two short rows per part.
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
    let mut codes: Vec<Vec<String>> = vec![Vec::new(); split];
    for b in &batches {
        prefixes.extend(tabulate::leaf_keys(b, &dims[..split], &lat)?);
        counts.extend(arrow::compute::cast(b.column(split), &DataType::UInt64)?.as_primitive::<UInt64Type>().values());
        for (d, c) in codes.iter_mut().enumerate() {
            let col = arrow::compute::cast(b.column(d), &DataType::Utf8)?;
            c.extend(col.as_string::<i32>().iter().map(|x| x.unwrap_or_default().to_string()));
        }
    }
    let records: u64 = counts.iter().sum();
    if records == 0 {
        return Ok(None);
    }
    let starts = parts::plan_from_counts(&lat, &prefixes, &counts, part_cells);
    let n = starts.len();
    progress.detail(&format!("{}: {records} records in {n} parts, planned from {} counts", query.name, counts.len()));

    // The route table: each combination of leading codes with every part that needs its pairs.
    let mut route_codes: Vec<Vec<&str>> = vec![Vec::new(); split];
    let mut route_parts: Vec<u64> = Vec::new();
    for (i, &p) in prefixes.iter().enumerate() {
        for part in parts::parts_of(&lat, &starts, p) {
            for (d, c) in route_codes.iter_mut().enumerate() {
                c.push(&codes[d][i]);
            }
            route_parts.push(part as u64);
        }
    }
    let routes = scratch_name(query, "routes");
    scratch.put(&routes, "routes.parquet", routes_file(&route_codes, &route_parts)?).await?;
    drop(route_codes);

    // Each part's pairs meet in one task, which writes the part's payload to the scratch.
    let name = scratch_name(query, "parts");
    let folder = scratch.location(&name);
    let task = RouteTask { table: query.name.clone(), dims: dims.clone(), starts, folder };
    let header = wire::encode(&task).map_err(Error::Internal)?.replace('\'', "''");
    let dargs: Vec<String> = (0..dims.len()).map(|i| format!("p.d{i}")).collect();
    let on: Vec<String> = (0..split).map(|i| format!("p.d{i} = r.r{i}")).collect();
    let sql = format!(
        "SELECT r.part_id, {ROUTE_PAIRS}(arrow_cast('{header}', '{TASK_TYPE}'), r.part_id, {d}, p.cid, p.v, p.rec, p.wt) AS outcome \
         FROM ({pairs_sql}) p JOIN \"{routes}\" r ON {on} GROUP BY r.part_id",
        d = dargs.join(", "),
        on = on.join(" AND ")
    );
    let location = scratch.location(&routes);
    ctx.register_parquet(&routes, &location, datafusion::prelude::ParquetReadOptions::default())
        .await
        .map_err(|e| Error::data(&location, format!("part routes: {e}")))?;
    let stage = progress.stage(&format!("{}: contributions routed to {n} parts", query.name), 1);
    let routed = partition_results(ctx, &routes, ROUTE_PAIRS, &sql, n).await;
    let _ = ctx.deregister_table(routes.as_str());
    let routed = routed.map_err(|e| Error::Engine(format!("routing the pairs of table `{}`: {e}", query.name)))?;
    stage.finish();
    // Every part holds at least one pair (its shards are nonempty).
    let mut pairs = 0u64;
    for (i, r) in routed.iter().enumerate() {
        match r.split(' ').next().and_then(|x| x.parse::<u64>().ok()) {
            Some(p) if p > 0 => pairs += p,
            _ => return Err(Error::Internal(format!("table `{}`: part {i} routed {r:?}", query.name))),
        }
    }
    let inputs = RoutedInputs { records, routed_pairs: pairs, rows_to_client: (counts.len() + 2 * n) as u64 };
    roll_up_payloads(executor, staging, query, safety, dims, &name, n, progress, Some(inputs)).await.map(Some)
}

/// The route table's file: `r0, …` (leading codes) and `part_id`, one row per (combination,
/// part).
fn routes_file(codes: &[Vec<&str>], parts: &[u64]) -> Result<Vec<u8>> {
    let mut fields: Vec<Field> = (0..codes.len()).map(|i| Field::new(format!("r{i}"), DataType::Utf8, false)).collect();
    fields.push(Field::new("part_id", DataType::UInt64, false));
    let schema = Arc::new(Schema::new(fields));
    let mut columns: Vec<ArrayRef> = codes.iter().map(|c| Arc::new(StringArray::from(c.clone())) as ArrayRef).collect();
    columns.push(Arc::new(UInt64Array::from(parts.to_vec())));
    parquet_bytes(&RecordBatch::try_new(schema, columns)?)
}

/// One part's scratch file: a single row `(part_id, inputs)`.
pub(crate) fn part_file(part: usize, inputs: Vec<u8>) -> Result<Vec<u8>> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("part_id", DataType::UInt64, false),
        Field::new("inputs", DataType::LargeBinary, false),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(UInt64Array::from(vec![part as u64])),
            Arc::new(LargeBinaryArray::from_vec(vec![inputs.as_slice()])),
        ],
    )?;
    parquet_bytes(&batch)
}
