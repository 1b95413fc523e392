//! `sdc_route_pairs`: the aggregate that assembles the payload of a part of a primaries-only
//! table from the (leaf cell, contributor) pairs routed to it, where the pairs are.
//!
//! The client plans the parts from the number of records under each leading prefix
//! ([`crate::tabulate::parts::plan_from_counts`]) and sends the plan with the query: each pair
//! of the pre-aggregation is sent to the slots ([`SlotsUdf`]: the chunks of the parts that
//! need it); the query
//!
//! ```sql
//! SELECT slot, sdc_route_pairs(arrow_cast('<task>', 'Dictionary(Int32, Utf8)'), slot,
//!                              d0, …, d{k-1}, cid, v, rec, wt)
//! FROM (SELECT unnest(sdc_slots(<task>, p.cid, p.d0, …, p.d{s-1})) AS slot, p.* FROM pairs p)
//! GROUP BY slot
//! ```
//!
//! sends each chunk of a part (its contributors with one hash, [`crate::tabulate::parts::chunk_of`])
//! to one group of one task (Ballista shuffles by the group key), whose final step numbers the
//! chunk's contributors, cuts the part's shards out of its pairs
//! ([`crate::tabulate::parts::part_shards`]) and writes the chunk's payload to the run's
//! scratch ([`chunk_file`]). `sdc_roll_up` then reads a part's chunk files ([`read_chunk`]),
//! merges them ([`crate::tabulate::parts::roll_up_chunks`]: the chunks' contributors are
//! disjoint) and rolls the part up exactly as before, one single-stage task per file of parts,
//! so a killed roll-up task is simply run again elsewhere. The pairs never reach the client.
//!
//! Why chunks: a group's final state is one allocation of the executor's memory pool, which
//! cannot spill; the part holding the leading variables' totals has every pair, so one group
//! per part needed all pairs of the table in one reservation (1.09 GB at 60 M rows of the
//! benchmark job, refused by a 1 GiB pool). With chunks of at most about
//! [`crate::tabulate::parts::CHUNK_RECORDS`] records, no group is larger than ~64 MB, and
//! the query runs in enough tasks that each holds about
//! [`super::roll_up::ROUTE_TASK_RECORDS`] records' pairs: a task's groups are all in memory
//! until its input ends (DataFusion's aggregate spills them as one sorted run and reads every
//! run back at once to merge, so a task far above its pool fails even with spilling).
//!
//! Determinism: a part's cells do not depend on the order its pairs arrive in nor on how its
//! contributors are numbered (exact sums, multiset top-N), so any partitioning of the
//! aggregation gives payloads that roll up to the same bytes. Partial states are the pairs
//! themselves (each with its contributor as text), so they merge by concatenation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow::array::{Array, ArrayRef, AsArray, ListBuilder, UInt64Builder};
use arrow::datatypes::{DataType, Decimal128Type, Field, FieldRef, Int64Type, UInt64Type};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};
use datafusion::physical_plan::expressions::Literal;

use super::udf::worker_identity;
use super::wire;
use crate::error::Error;
use crate::hierarchy::Hierarchy;
use crate::tabulate::lattice::{Lattice, Pairs, Share};
use crate::tabulate::parts::{chunk_of, pairs_payload, part_shards};

/// SQL name of the aggregate.
pub const ROUTE_PAIRS: &str = "sdc_route_pairs";

/// The type of the aggregate's task argument (`arrow_cast('<task>', TASK_TYPE)`): see
/// [`RoutePairs`].
pub const TASK_TYPE: &str = "Dictionary(Int32, Utf8)";

/// What the executors need to assemble the parts of a table from its pairs.
#[derive(Debug, Clone)]
pub struct RouteTask {
    /// Table name (messages).
    pub table: String,
    /// The table's hierarchies (codes → leaf keys).
    pub dims: Vec<Hierarchy>,
    /// The key of each part's first shard, in key order
    /// ([`crate::tabulate::parts::plan_from_counts`]).
    pub starts: Vec<u128>,
    /// The first slot of each part: part `p`'s chunk `c` is slot `first[p] + c` (the group
    /// key; [`crate::tabulate::parts::chunks_for`] chunks per part).
    pub first: Vec<u64>,
    /// The number of chunks of each part.
    pub chunks: Vec<u64>,
    /// Where the payloads go: the scratch folder (a directory or an `s3://` prefix) that
    /// `sdc_roll_up` reads, one `part-NNNNN-CCCCC.parquet` per chunk of a part ([`chunk_file`]).
    pub folder: String,
}

impl RouteTask {
    /// The part and chunk of `slot`.
    pub fn part_chunk(&self, slot: u64) -> Option<(usize, u64)> {
        let part = self.first.partition_point(|&f| f <= slot).checked_sub(1)?;
        (part < self.starts.len()).then(|| (part, slot - self.first[part]))
    }
}

/// The scratch file of chunk `chunk` of part `part`.
pub fn chunk_file(part: usize, chunk: u64) -> String {
    format!("part-{part:05}-{chunk:05}.parquet")
}

/// `sdc_route_pairs(task, slot, d0, …, d{k-1}, cid, v, rec, wt)` → `Utf8`: writes the
/// payload of the slot's chunk of a part (see the module docs) and returns `"<pairs> <bytes> <worker>"`; `task`
/// is the table's [`RouteTask`] as a `Dictionary(Int32, Utf8)` literal ([`TASK_TYPE`]).
///
/// Why a dictionary: DataFusion evaluates every argument of an aggregate to an array of the
/// batch's length before the accumulator sees it, and a `Utf8` literal becomes the task's text
/// repeated on every row (then copied again when the rows are sorted by group). The task holds
/// every code of the table's hierarchies (tens of KB), so a plain string cost tens of GB of
/// copies per million pairs; a dictionary array holds the text once, with one key per row.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RoutePairs {
    signature: Signature,
}

impl RoutePairs {
    /// The aggregate, ready to register.
    pub fn udaf() -> Arc<AggregateUDF> {
        Arc::new(AggregateUDF::from(Self { signature: Signature::variadic_any(Volatility::Immutable) }))
    }
}

/// A decoded task with its lattice, shared by the accumulators of one query.
#[derive(Debug)]
struct Routed {
    task: RouteTask,
    lat: Lattice,
}

/// The last task decoded in this process: every group of a query has the same one.
static LAST: Mutex<Option<(String, Arc<Routed>)>> = Mutex::new(None);

fn routed(text: &str) -> Result<Arc<Routed>> {
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((t, r)) = last.as_ref() {
        if t == text {
            return Ok(r.clone());
        }
    }
    let task: RouteTask = match wire::decode(text) {
        Ok(t) => t,
        Err(e) => return exec_err!("{ROUTE_PAIRS} on {}: {e}", worker_identity()),
    };
    if task.starts.is_empty() || task.first.len() != task.starts.len() || task.chunks.len() != task.starts.len() {
        return exec_err!("{ROUTE_PAIRS}: a task without parts");
    }
    let lat = Lattice::new(&task.dims).map_err(|e| datafusion::error::DataFusionError::External(e.into()))?;
    let r = Arc::new(Routed { task, lat });
    *last = Some((text.to_string(), r.clone()));
    Ok(r)
}

/// The task text of a `Dictionary(Int32, Utf8)` literal (see [`RoutePairs`]); `func` names
/// the function in the error.
fn task_text<'a>(literal: Option<&'a ScalarValue>, func: &str) -> Result<&'a str> {
    match literal {
        Some(ScalarValue::Dictionary(_, value)) => match value.as_ref() {
            ScalarValue::Utf8(Some(s)) => Ok(s.as_str()),
            _ => exec_err!("{func}: the task must be a dictionary-encoded string literal"),
        },
        _ => exec_err!("{func}: the task must be a dictionary-encoded string literal"),
    }
}

/// Sets `coords[d]` to the node of row `r`'s code of each variable `dims[d]` (`codes[d]`).
fn leaf_coords(
    dims: &[Hierarchy],
    codes: &[&arrow::array::StringArray],
    r: usize,
    coords: &mut [u32],
    func: &str,
) -> Result<()> {
    for (d, h) in dims.iter().enumerate() {
        let code = codes[d].value(r);
        match h.index(code) {
            Some(n) => coords[d] = n as u32,
            None => return exec_err!("{func}: code {code:?} is not in `{}`", h.variable()),
        }
    }
    Ok(())
}

impl AggregateUDFImpl for RoutePairs {
    fn name(&self) -> &str {
        ROUTE_PAIRS
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let literal = args.exprs.first().and_then(|e| e.as_ref().downcast_ref::<Literal>());
        let routed = routed(task_text(literal.map(|l| l.value()), ROUTE_PAIRS)?)?;
        let want = 2 + routed.task.dims.len() + 4;
        if args.exprs.len() != want {
            return exec_err!("{ROUTE_PAIRS}: {} arguments, expected {want}", args.exprs.len());
        }
        Ok(Box::new(PartPairs { routed, slot: None, buf: Vec::new() }))
    }
    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(format!("{}_pairs", args.name), DataType::LargeBinary, true)),
            Arc::new(Field::new(format!("{}_slot", args.name), DataType::UInt64, true)),
        ])
    }
}

/// The pairs of one chunk of a part (its slot): `(leaf key u128, value i128, weight i128,
/// records u64, contributor length u32, contributor bytes)` each, little-endian.
#[derive(Debug)]
struct PartPairs {
    routed: Arc<Routed>,
    slot: Option<u64>,
    buf: Vec<u8>,
}

fn utf8(a: &ArrayRef) -> Result<ArrayRef> {
    Ok(arrow::compute::cast(a, &DataType::Utf8)?)
}

impl Accumulator for PartPairs {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let dims = &self.routed.task.dims;
        let k = dims.len();
        let parts = arrow::compute::cast(&values[1], &DataType::UInt64)?;
        let parts = parts.as_primitive::<UInt64Type>();
        let codes: Vec<ArrayRef> = values[2..2 + k].iter().map(utf8).collect::<Result<_>>()?;
        let codes: Vec<_> = codes.iter().map(|a| a.as_string::<i32>()).collect();
        let cid = utf8(&values[2 + k])?;
        let cid = cid.as_string::<i32>();
        let v = values[3 + k].as_primitive::<Decimal128Type>();
        let rec = arrow::compute::cast(&values[4 + k], &DataType::Int64)?;
        let rec = rec.as_primitive::<Int64Type>();
        let wt = values[5 + k].as_primitive::<Decimal128Type>();
        let mut coords = vec![0u32; k];
        for r in 0..parts.len() {
            if parts.is_null(r) || cid.is_null(r) || codes.iter().any(|c| c.is_null(r)) {
                return exec_err!("{ROUTE_PAIRS}: NULL input");
            }
            self.slot.get_or_insert(parts.value(r));
            leaf_coords(dims, &codes, r, &mut coords, ROUTE_PAIRS)?;
            let c = cid.value(r).as_bytes();
            self.buf.extend_from_slice(&self.routed.lat.key(&coords).to_le_bytes());
            self.buf.extend_from_slice(&v.value(r).to_le_bytes());
            self.buf.extend_from_slice(&wt.value(r).to_le_bytes());
            self.buf.extend_from_slice(&(rec.value(r) as u64).to_le_bytes());
            self.buf.extend_from_slice(&(c.len() as u32).to_le_bytes());
            self.buf.extend_from_slice(c);
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::LargeBinary(Some(std::mem::take(&mut self.buf))), ScalarValue::UInt64(self.slot)])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let bufs = states[0].as_binary::<i64>();
        let parts = states[1].as_primitive::<UInt64Type>();
        for r in 0..bufs.len() {
            if !parts.is_null(r) {
                self.slot.get_or_insert(parts.value(r));
            }
            if !bufs.is_null(r) {
                self.buf.extend_from_slice(bufs.value(r));
            }
        }
        Ok(())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let Some(slot) = self.slot else { return exec_err!("{ROUTE_PAIRS}: a part without pairs") };
        let Routed { task, lat } = self.routed.as_ref();
        let Some((part, chunk)) = task.part_chunk(slot) else {
            return exec_err!("{ROUTE_PAIRS}: slot {slot} of no part");
        };
        let delay = super::udf::test_route_delay_ms();
        if delay > 0 {
            eprintln!("sdcflow {}: routing chunk {chunk} of part {part} of table `{}`", worker_identity(), task.table);
            std::thread::sleep(std::time::Duration::from_millis(delay));
        }
        let pairs = match decode(&std::mem::take(&mut self.buf)) {
            Ok(p) => p,
            Err(e) => return exec_err!("{ROUTE_PAIRS} on {}: {e}", worker_identity()),
        };
        let n = pairs.len();
        let shards = part_shards(lat, &task.starts, part, &pairs.leaf);
        let payload = pairs_payload(&pairs, shards);
        drop(pairs);
        let written = super::roll_up::part_file(part, payload).and_then(|bytes| {
            let len = bytes.len();
            put(&task.folder, &chunk_file(part, chunk), bytes).map(|()| len)
        });
        match written {
            Ok(len) => Ok(ScalarValue::Utf8(Some(format!("{n} {len} {}", worker_identity())))),
            Err(e) => exec_err!("{ROUTE_PAIRS} on {}: part {part} of table `{}`: {e}", worker_identity(), task.table),
        }
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.buf.capacity()
    }
}

/// Writes `bytes` as `folder/file` (a directory, or an `s3://` prefix: one PUT, atomic); a
/// local file is written under a hidden name and renamed, so a killed task leaves no partial
/// payload where `sdc_roll_up` reads (a re-run writes the same part again).
fn put(folder: &str, file: &str, bytes: Vec<u8>) -> crate::error::Result<()> {
    let folder = folder.trim_end_matches('/');
    if folder.starts_with("s3://") {
        let store = crate::store::s3_store(folder)?.ok_or_else(|| Error::Internal(format!("no store for {folder}")))?;
        let url = url::Url::parse(folder).map_err(|e| Error::data(folder, e.to_string()))?;
        let key = object_store::path::Path::from(format!("{}/{file}", url.path().trim_matches('/')).as_str());
        let handle = tokio::runtime::Handle::try_current().map_err(|e| Error::Internal(e.to_string()))?;
        return tokio::task::block_in_place(|| {
            handle.block_on(object_store::ObjectStoreExt::put(store.as_ref(), &key, bytes.into()))
        })
        .map(|_| ())
        .map_err(|e| Error::Store { url: format!("{folder}/{file}"), message: e.to_string() });
    }
    let dir = std::path::Path::new(folder);
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let tmp = dir.join(format!(".{file}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))?;
    let to = dir.join(file);
    std::fs::rename(&tmp, &to).map_err(|e| Error::io(&to, e))
}

/// Reads `folder/file` (a directory or an `s3://` prefix), written by [`put`].
fn get(folder: &str, file: &str) -> crate::error::Result<Vec<u8>> {
    let folder = folder.trim_end_matches('/');
    if folder.starts_with("s3://") {
        let store = crate::store::s3_store(folder)?.ok_or_else(|| Error::Internal(format!("no store for {folder}")))?;
        let url = url::Url::parse(folder).map_err(|e| Error::data(folder, e.to_string()))?;
        let key = object_store::path::Path::from(format!("{}/{file}", url.path().trim_matches('/')).as_str());
        let handle = tokio::runtime::Handle::try_current().map_err(|e| Error::Internal(e.to_string()))?;
        let store_err =
            |e: object_store::Error| Error::Store { url: format!("{folder}/{file}"), message: e.to_string() };
        return tokio::task::block_in_place(|| {
            handle.block_on(async {
                let got = object_store::ObjectStoreExt::get(store.as_ref(), &key).await.map_err(store_err)?;
                got.bytes().await.map_err(store_err)
            })
        })
        .map(|b| b.to_vec());
    }
    let path = std::path::Path::new(folder).join(file);
    std::fs::read(&path).map_err(|e| Error::io(&path, e))
}

/// The payload of one chunk of a part, from its scratch file (`folder/file`: one row
/// `(part_id, inputs)`, [`super::roll_up::part_file`]).
pub fn read_chunk(folder: &str, file: &str) -> crate::error::Result<Vec<u8>> {
    let bytes = bytes::Bytes::from(get(folder, file)?);
    let broken = |e: String| Error::Internal(format!("chunk {folder}/{file}: {e}"));
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes)
        .and_then(|b| b.build())
        .map_err(|e| broken(e.to_string()))?;
    let mut payload: Option<Vec<u8>> = None;
    for batch in reader {
        let batch = batch.map_err(|e| broken(e.to_string()))?;
        let col = batch.column_by_name("inputs").ok_or_else(|| broken("no column `inputs`".into()))?;
        let col = arrow::compute::cast(col, &DataType::LargeBinary).map_err(|e| broken(e.to_string()))?;
        let col = col.as_binary::<i64>();
        for r in 0..col.len() {
            if payload.is_some() || col.is_null(r) {
                return Err(broken("not one payload".into()));
            }
            payload = Some(col.value(r).to_vec());
        }
    }
    payload.ok_or_else(|| broken("no payload".into()))
}

/// SQL name of the function that routes a pair to the slots (chunks of parts) that need it.
pub const SLOTS: &str = "sdc_slots";

/// `sdc_slots(task, cid, d0, …, d{s-1})` → `List(UInt64)`: the slots a pair goes to, given
/// its contributor and its codes of the shards' leading variables: for each part that holds a
/// shard of one of its leading ancestors ([`crate::tabulate::parts::parts_of`]), the part's
/// chunk of the contributor ([`crate::tabulate::parts::chunk_of`]). `UNNEST` makes one row a
/// slot, so the routing query needs no join.
///
/// Why no join with a route table: Ballista's static planner (the one that survives a lost
/// executor) plans joins as sort-merge joins, which shuffled and sorted every pair once more
/// by its leading codes; the adaptive planner had broadcast the small route table.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct SlotsUdf {
    signature: Signature,
}

impl SlotsUdf {
    /// The function, ready to register.
    pub fn udf() -> Arc<ScalarUDF> {
        Arc::new(ScalarUDF::from(Self { signature: Signature::variadic_any(Volatility::Immutable) }))
    }
}

impl ScalarUDFImpl for SlotsUdf {
    fn name(&self) -> &str {
        SLOTS
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(Arc::new(Field::new_list_field(DataType::UInt64, true))))
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let literal = match args.args.first() {
            Some(ColumnarValue::Scalar(v)) => Some(v),
            _ => None,
        };
        let routed = routed(task_text(literal, SLOTS)?)?;
        let Routed { task, lat } = routed.as_ref();
        let split = lat.split();
        if args.args.len() != 2 + split {
            return exec_err!("{SLOTS}: {} arguments, expected {}", args.args.len(), 2 + split);
        }
        let arrays = ColumnarValue::values_to_arrays(&args.args[1..])?;
        let cid = utf8(&arrays[0])?;
        let cid = cid.as_string::<i32>();
        let codes: Vec<ArrayRef> = arrays[1..].iter().map(utf8).collect::<Result<_>>()?;
        let codes: Vec<_> = codes.iter().map(|a| a.as_string::<i32>()).collect();
        // The parts of each combination of leading codes met in this batch.
        let mut parts_of: HashMap<u128, Vec<usize>> = HashMap::new();
        let mut coords = vec![0u32; task.dims.len()];
        let mut out = ListBuilder::new(UInt64Builder::new());
        for r in 0..cid.len() {
            if cid.is_null(r) || codes.iter().any(|c| c.is_null(r)) {
                return exec_err!("{SLOTS}: NULL input");
            }
            leaf_coords(&task.dims[..split], &codes, r, &mut coords, SLOTS)?;
            let key = lat.key(&coords);
            let parts = parts_of.entry(key).or_insert_with(|| crate::tabulate::parts::parts_of(lat, &task.starts, key));
            let c = cid.value(r).as_bytes();
            for &p in parts.iter() {
                out.values().append_value(task.first[p] + chunk_of(c, task.chunks[p]));
            }
            out.append(true);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

/// The pairs of a state buffer, contributors numbered in order of appearance (only equality
/// matters to the roll-up).
fn decode(mut b: &[u8]) -> std::result::Result<Pairs, String> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> std::result::Result<&'a [u8], String> {
        if b.len() < n {
            return Err("pairs truncated".into());
        }
        let (a, rest) = b.split_at(n);
        *b = rest;
        Ok(a)
    }
    let mut pairs = Pairs::default();
    let mut ids: HashMap<&[u8], u32> = HashMap::new();
    while !b.is_empty() {
        let leaf = u128::from_le_bytes(take(&mut b, 16)?.try_into().expect("16 bytes"));
        let value = i128::from_le_bytes(take(&mut b, 16)?.try_into().expect("16 bytes"));
        let weight = i128::from_le_bytes(take(&mut b, 16)?.try_into().expect("16 bytes"));
        let records = u64::from_le_bytes(take(&mut b, 8)?.try_into().expect("8 bytes"));
        let len = u32::from_le_bytes(take(&mut b, 4)?.try_into().expect("4 bytes")) as usize;
        let c = take(&mut b, len)?;
        let next = u32::try_from(ids.len()).map_err(|_| "more than 4 billion contributors in a part".to_string())?;
        pairs.leaf.push(leaf);
        pairs.contributor.push(*ids.entry(c).or_insert(next));
        pairs.share.push(Share { value, weight, records });
    }
    Ok(pairs)
}
