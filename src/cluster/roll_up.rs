//! Client side of the distributed roll-up of a primaries-only table: the pre-aggregated
//! inputs are cut into parts ([`crate::tabulate::parts`]), each part is written as one Parquet
//! file `(part_id, inputs)` to the run's scratch location, and `SELECT part_id,
//! sdc_roll_up(task, part_id, inputs)` runs through the job's `SessionContext`: one task per
//! file group on the executors of a cluster (re-run elsewhere when an executor dies), in this
//! process otherwise. Each task rolls its part up, applies the primary rules and writes the
//! part's files into the run's staging directory ([`crate::publish::parts`]); only summaries
//! come back, and the client commits the table only when every part is there exactly as
//! reported. The client never holds a cell.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{LargeBinaryArray, RecordBatch, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};

use super::ship::{query_partitions, Executor};
use super::udf::ROLL_UP;
use super::wire::{self, Solved};
use crate::error::{Error, Result};
use crate::hierarchy::{Hierarchy, HierarchySpec};
use crate::progress::Progress;
use crate::publish::parts::{check_parts, check_remote_parts, PartSummary, PartTask};
use crate::publish::staging::Staging;
use crate::publish::Tally;
use crate::rules::Safety;
use crate::tabulate::parts::PartLayout;
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
}

/// Tabulates `query`, rolls it up in parts of about `part_cells` cells where `ctx` runs
/// queries, applies `safety` and writes every part into the run's staging (its directory, or
/// on an object store the run's prefix); returns `None` for a table without records.
pub async fn roll_up_table(
    executor: &Executor,
    staging: &mut Staging,
    query: &TableQuery,
    safety: &Safety,
    hierarchies: &HashMap<String, HierarchySpec>,
    progress: &Progress,
    part_cells: u64,
) -> Result<Option<PartedTable>> {
    let (ctx, scratch) = (&executor.ctx, executor.scratch.as_ref());
    let name = format!("__sdc_{}_parts", query.name.replace(|c: char| !c.is_ascii_alphanumeric(), "_"));
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
    let root = staging.parts_root()?;
    let task = PartTask {
        table: query.name.clone(),
        explanatory: query.explanatory.clone(),
        layout: PartLayout { dims: empty.dims.clone(), top_n: query.top_n, weighted: query.weight.is_some() },
        safety: safety.text.clone(),
        root: root.clone(),
    };
    let header = wire::encode(&task).map_err(Error::Internal)?.replace('\'', "''");
    let sql = format!(
        "SELECT part_id, {ROLL_UP}('{header}', part_id, arrow_cast(inputs, 'LargeBinary')) AS outcome FROM \"{name}\""
    );
    let stage = progress.stage(&format!("{}: roll-up and writing of {parts} parts", query.name), 1);
    let results = query_partitions(ctx, scratch, &name, ROLL_UP, &sql, parts)
        .await
        .map_err(|e| Error::Engine(format!("rolling up table `{}`: {e}", query.name)))?;
    stage.finish();
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
        let tally = check_remote_parts(&root, &query.name, parts, &summaries).await?;
        staging.add_remote_files(summaries.into_iter().flat_map(|(s, _)| s.files));
        tally
    } else {
        check_parts(Path::new(&root), &query.name, parts, &summaries)?
    };
    Ok(Some(PartedTable { dims: empty.dims, tally, parts_per_worker, parts }))
}

/// One part's scratch file: a single row `(part_id, inputs)`.
fn part_file(part: usize, inputs: Vec<u8>) -> Result<Vec<u8>> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("part_id", DataType::UInt64, false),
        Field::new("inputs", DataType::LargeBinary, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(UInt64Array::from(vec![part as u64])),
            Arc::new(LargeBinaryArray::from_vec(vec![inputs.as_slice()])),
        ],
    )?;
    let mut buf = Vec::new();
    let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, schema, None)?;
    w.write(&batch)?;
    w.close()?;
    Ok(buf)
}
