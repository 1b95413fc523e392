//! Tabulation: hierarchical tables with contributor statistics.
//!
//! Every combination of hierarchy levels of every explanatory variable (totals included) is a
//! grouping set; per nonempty cell we need `freq` (number of contributors), `records`, `value`,
//! `weight` and the largest per-contributor totals. The naive plan — `GROUP BY GROUPING SETS
//! ((cell…, contributor))` over the microdata — materialises one row per (cell, contributor) for
//! every grouping set and exhausted 60 GB of temp disk in DuckDB on 2 M rows × 7 dimensions.
//! sdcflow aggregates once and rolls up smartly:
//!
//! ```text
//! microdata ─► DataFusion: (leaf cell, contributor) sums      one pass, spills if needed,
//!                │                                            distributed on a cluster
//!                ▼
//!          lattice roll-up (lattice.rs): shard per node of the first variable, each
//!          contributor rolled up the other variables once, folded into the shard's cells
//!                ▼
//!          cells sorted by coordinates (shards come out in key order)
//! ```
//!
//! Primaries-only tables are rolled up in parts of whole shards wherever the engine runs
//! queries ([`parts`]; the executors on a cluster), so their cells never reach the client.
//!
//! Without a contributor variable each record is a contributor: DataFusion summarises the leaf
//! cells (count, sums, top-N of records) and the roll-up merges summaries. Sums are exact
//! (DECIMAL(38,6) → i128) and the top-N lists are multisets, so results do not depend on
//! partitioning or thread count: local DataFusion and Ballista give byte-identical cells.

pub mod lattice;
pub mod parts;
pub mod topn;

use std::collections::HashMap;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Decimal128Type, Float64Type, Int64Type, UInt64Type};
use datafusion::prelude::SessionContext;

use crate::error::{nearest, Error, Result};
use crate::hierarchy::{Hierarchy, HierarchySpec};
use crate::progress::Progress;
use lattice::{CellStats, Lattice, Pairs, Share};
use topn::TopN;

/// Scale of the exact decimal sums (6 fractional digits).
pub const SCALE: i32 = 6;
pub(crate) const SCALE_F: f64 = 1e6;

/// What to tabulate.
#[derive(Debug, Clone)]
pub struct TableQuery {
    /// Table name (for messages).
    pub name: String,
    /// Registered table or view holding the records.
    pub source: String,
    /// Explanatory variables.
    pub explanatory: Vec<String>,
    /// Response variable (`None`: frequency table, value = number of records or Σ weight).
    pub response: Option<String>,
    /// Contributor (holding) variable (`None`: each record is a contributor).
    pub contributor: Option<String>,
    /// Weight variable.
    pub weight: Option<String>,
    /// How many largest contributions per cell to keep (≥ 2).
    pub top_n: usize,
    /// Reject negative contributions (dominance rules need non-negative ones).
    pub require_nonnegative: bool,
}

/// The tabulated cells, columnar and sorted by coordinates (hierarchy pre-order per dimension).
#[derive(Debug, Clone, PartialEq)]
pub struct Cells {
    /// Hierarchy of each explanatory variable, in table order.
    pub dims: Vec<Hierarchy>,
    /// Node index per dimension, `dims.len()` entries per cell.
    pub coords: Vec<u32>,
    /// Number of contributors.
    pub freq: Vec<u64>,
    /// Number of records.
    pub records: Vec<u64>,
    /// Cell total (for rules and solvers, which work in floating point).
    pub value: Vec<f64>,
    /// Cell total exactly, × 10^[`SCALE`]: what is published (a float cannot hold every total
    /// above 2^53, nor every sum of decimals).
    pub exact: Vec<i128>,
    /// Σ weight, when the table is weighted.
    pub weight: Option<Vec<f64>>,
    /// Largest contributions, `top_n` entries per cell, descending, 0-padded.
    pub top: Vec<f64>,
    /// Entries of `top` per cell.
    pub top_n: usize,
}

impl Cells {
    /// A table without cells over `dims`.
    pub fn empty(dims: Vec<Hierarchy>, top_n: usize, weighted: bool) -> Self {
        Self {
            dims,
            coords: Vec::new(),
            freq: Vec::new(),
            records: Vec::new(),
            value: Vec::new(),
            exact: Vec::new(),
            weight: weighted.then(Vec::new),
            top: Vec::new(),
            top_n,
        }
    }

    /// Appends the cells of `other` (same dimensions), which must all sort after these.
    pub fn append(&mut self, other: Cells) {
        self.coords.extend(other.coords);
        self.freq.extend(other.freq);
        self.records.extend(other.records);
        self.value.extend(other.value);
        self.exact.extend(other.exact);
        if let (Some(w), Some(o)) = (self.weight.as_mut(), other.weight) {
            w.extend(o);
        }
        self.top.extend(other.top);
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.freq.len()
    }

    /// Whether there are no cells.
    pub fn is_empty(&self) -> bool {
        self.freq.is_empty()
    }

    /// Coordinates of cell `i`.
    pub fn coord(&self, i: usize) -> &[u32] {
        let k = self.dims.len();
        &self.coords[i * k..(i + 1) * k]
    }

    /// Largest contributions of cell `i`.
    pub fn tops(&self, i: usize) -> &[f64] {
        &self.top[i * self.top_n..(i + 1) * self.top_n]
    }

    /// Codes of cell `i`.
    pub fn codes(&self, i: usize) -> Vec<&str> {
        self.coord(i).iter().zip(&self.dims).map(|(&n, h)| h.code(n as usize)).collect()
    }
}

fn q(id: &str) -> String {
    format!("\"{}\"", id.replace('"', "\"\""))
}

/// Checks the source's columns: existence (with suggestions), numeric response and weight.
async fn check_columns(ctx: &SessionContext, t: &TableQuery) -> Result<()> {
    let df = ctx.table(t.source.as_str()).await.map_err(|e| Error::data(&t.source, e.to_string()))?;
    let schema = df.schema().clone();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let mut errs = Vec::new();
    let mut want: Vec<(&str, &str, bool)> = t.explanatory.iter().map(|e| (e.as_str(), "explanatory", false)).collect();
    if let Some(r) = &t.response {
        want.push((r, "response", true));
    }
    if let Some(w) = &t.weight {
        want.push((w, "weight", true));
    }
    if let Some(c) = &t.contributor {
        want.push((c, "contributor", false));
    }
    for (col, role, numeric) in want {
        match schema.fields().iter().find(|f| f.name() == col) {
            None => {
                let hint =
                    nearest(col, names.iter().copied()).map(|n| format!(" (did you mean {n:?}?)")).unwrap_or_default();
                errs.push(Error::data(
                    &t.source,
                    format!("table `{}`: {role} column {col:?} not found{hint}; columns: {}", t.name, names.join(", ")),
                ));
            }
            Some(f) if numeric && !f.data_type().is_numeric() => errs.push(Error::data(
                &t.source,
                format!("table `{}`: {role} column {col:?} must be numeric, found {}", t.name, f.data_type()),
            )),
            Some(_) => {}
        }
    }
    Error::collect(errs)
}

pub(crate) async fn collect(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    let df = ctx.sql(sql).await.map_err(|e| engine_error(e, sql))?;
    df.collect().await.map_err(|e| engine_error(e, sql))
}

/// An engine error with the statement that caused it (shortened), for bug reports.
fn engine_error(e: datafusion::error::DataFusionError, sql: &str) -> Error {
    let short: String = sql.chars().take(400).collect();
    Error::Engine(format!("{e}\n  while running: {short}{}", if sql.len() > 400 { " …" } else { "" }))
}

/// Counts, per column of table `t`, the rows that `bad` (an SQL expression of the quoted column
/// that is 1 for a bad row) flags, in one scan; every column with bad rows becomes one error
/// "column X has N {what}; {advice}".
async fn count_bad_rows(
    ctx: &SessionContext,
    t: &TableQuery,
    cols: &[&String],
    bad: impl Fn(&str) -> String,
    what: &str,
    advice: &str,
) -> Result<()> {
    if cols.is_empty() {
        return Ok(());
    }
    let exprs: Vec<String> = cols.iter().map(|c| format!("SUM({})", bad(&q(c)))).collect();
    let batches = collect(ctx, &format!("SELECT {} FROM {}", exprs.join(", "), q(&t.source))).await?;
    let mut errs = Vec::new();
    if let Some(b) = batches.first() {
        for (i, c) in cols.iter().enumerate() {
            let counts = arrow::compute::cast(b.column(i), &DataType::Int64)?;
            let n = counts.as_primitive::<Int64Type>().value(0);
            if n > 0 {
                errs.push(Error::data(&t.source, format!("table `{}`: column {c:?} has {n} {what}; {advice}", t.name)));
            }
        }
    }
    Error::collect(errs)
}

/// Fails on NaN or infinite values in the response and weight columns (naming the column and
/// count): they cannot be cast to DECIMAL and have no meaning in a published total.
async fn check_finite(ctx: &SessionContext, t: &TableQuery) -> Result<()> {
    let cols: Vec<&String> = t.response.iter().chain(t.weight.iter()).collect();
    let nonfinite = |c: &str| {
        let x = format!("CAST({c} AS DOUBLE)");
        format!("CASE WHEN isnan({x}) OR abs({x}) = CAST('inf' AS DOUBLE) THEN 1 ELSE 0 END")
    };
    count_bad_rows(ctx, t, &cols, nonfinite, "NaN or infinite values", "impute or drop them in a SQL view").await
}

/// Fails on NULLs in the table's columns (naming the column and count) and, when required, on
/// negative contributions (naming a culprit).
async fn check_values(ctx: &SessionContext, t: &TableQuery) -> Result<()> {
    let mut cols: Vec<&String> = t.explanatory.iter().collect();
    cols.extend(t.response.iter());
    cols.extend(t.contributor.iter());
    cols.extend(t.weight.iter());
    let null = |c: &str| format!("CASE WHEN {c} IS NULL THEN 1 ELSE 0 END");
    count_bad_rows(ctx, t, &cols, null, "NULL values", "filter or recode them in a SQL view").await?;
    check_finite(ctx, t).await?;
    if t.require_nonnegative {
        for col in t.response.iter().chain(t.weight.iter()) {
            let sql = format!("SELECT COUNT(*), MIN({c}) FROM {s} WHERE {c} < 0", c = q(col), s = q(&t.source));
            let b = collect(ctx, &sql).await?;
            let n = b[0].column(0).as_primitive::<Int64Type>().value(0);
            if n > 0 {
                let min = arrow::compute::cast(b[0].column(1), &DataType::Float64)?;
                return Err(Error::data(
                    &t.source,
                    format!(
                        "table `{}`: column {col:?} has {n} negative values (smallest {}); dominance rules (NK, P, PQ) need non-negative contributions",
                        t.name,
                        min.as_primitive::<Float64Type>().value(0)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Distinct codes of each explanatory variable, as strings.
async fn distinct_codes(ctx: &SessionContext, t: &TableQuery) -> Result<Vec<Vec<String>>> {
    let mut out = Vec::new();
    for e in &t.explanatory {
        let sql = format!("SELECT DISTINCT CAST({c} AS VARCHAR) FROM {s}", c = q(e), s = q(&t.source));
        let mut codes = Vec::new();
        for b in collect(ctx, &sql).await? {
            let col = arrow::compute::cast(b.column(0), &DataType::Utf8)?;
            codes.extend(col.as_string::<i32>().iter().flatten().map(str::to_string));
        }
        codes.sort_unstable();
        out.push(codes);
    }
    Ok(out)
}

/// Per-dimension lookup from a code to its node, and the packed key of each row's leaf cell
/// (with fewer `dims` than the lattice: the key holding the nodes of the leading variables).
pub(crate) fn leaf_keys(b: &RecordBatch, dims: &[Hierarchy], lat: &Lattice) -> Result<Vec<u128>> {
    let mut keys = vec![0u128; b.num_rows()];
    let mut coords = vec![0u32; dims.len()];
    let cast: Vec<arrow::array::ArrayRef> = (0..dims.len())
        .map(|c| arrow::compute::cast(b.column(c), &DataType::Utf8))
        .collect::<std::result::Result<_, _>>()?;
    let strs: Vec<_> = cast.iter().map(|a| a.as_string::<i32>()).collect();
    for (r, key) in keys.iter_mut().enumerate() {
        for (d, h) in dims.iter().enumerate() {
            let code = strs[d].value(r);
            coords[d] = h.index(code).ok_or_else(|| {
                Error::Internal(format!("tabulated code {code:?} of `{}` is not in its hierarchy", h.variable()))
            })? as u32;
        }
        *key = lat.key(&coords);
    }
    Ok(keys)
}

/// Numbers contributors in arrival order; only equality of the numbers matters downstream.
#[derive(Default)]
struct ContributorIds {
    ints: HashMap<i128, u32>,
    strings: HashMap<String, u32>,
}

impl ContributorIds {
    fn number(&mut self, col: &dyn Array, out: &mut Vec<u32>) -> Result<()> {
        let next = |n: usize| -> Result<u32> {
            u32::try_from(n).map_err(|_| Error::data("tabulation", "more than 4 billion contributors"))
        };
        // Integer ids keep their value (as i128, so that u64 ids above 2^63 stay distinct); the
        // column's type is fixed by the schema, so every batch takes the same path.
        let ints: Option<Vec<i128>> = match col.data_type() {
            DataType::UInt64 => Some(col.as_primitive::<UInt64Type>().values().iter().map(|&v| v as i128).collect()),
            t if t.is_integer() => Some(
                arrow::compute::cast(col, &DataType::Int64)?
                    .as_primitive::<Int64Type>()
                    .values()
                    .iter()
                    .map(|&v| v as i128)
                    .collect(),
            ),
            _ => None,
        };
        if let Some(values) = ints {
            for v in values {
                let n = self.ints.len() + self.strings.len();
                let id = match self.ints.get(&v) {
                    Some(&id) => id,
                    None => *self.ints.entry(v).or_insert(next(n)?),
                };
                out.push(id);
            }
        } else {
            let c = arrow::compute::cast(col, &DataType::Utf8)?;
            for v in c.as_string::<i32>().iter() {
                let v = v.unwrap_or_default();
                let n = self.ints.len() + self.strings.len();
                let id = match self.strings.get(v) {
                    Some(&id) => id,
                    None => *self.strings.entry(v.to_string()).or_insert(next(n)?),
                };
                out.push(id);
            }
        }
        Ok(())
    }
}

/// Runs `sql` and hands each result batch to `f` as it arrives (nothing is collected).
async fn for_each_batch(ctx: &SessionContext, sql: &str, mut f: impl FnMut(&RecordBatch) -> Result<()>) -> Result<()> {
    use futures::StreamExt;
    let df = ctx.sql(sql).await.map_err(|e| engine_error(e, sql))?;
    let mut stream = df.execute_stream().await.map_err(|e| engine_error(e, sql))?;
    while let Some(b) = stream.next().await {
        f(&b.map_err(|e| engine_error(e, sql))?)?;
    }
    Ok(())
}

/// Receives the cells of a table in key order, a chunk at a time.
pub type CellSink<'a> = dyn FnMut(Cells) -> Result<()> + Send + 'a;

/// Tabulates one table into memory (see [`tabulate_streaming`]).
pub async fn tabulate(
    ctx: &SessionContext,
    t: &TableQuery,
    hierarchies: &HashMap<String, HierarchySpec>,
    progress: &Progress,
) -> Result<Cells> {
    let mut all: Option<Cells> = None;
    let empty = tabulate_streaming(ctx, t, hierarchies, progress, &mut |chunk| {
        match &mut all {
            None => all = Some(chunk),
            Some(a) => a.append(chunk),
        }
        Ok(())
    })
    .await?;
    Ok(all.unwrap_or(empty))
}

/// Tabulates one table, handing the cells to `sink` in chunks, in key order, as the roll-up
/// produces them, so a table larger than memory can be written as it is computed. Returns an
/// empty [`Cells`] carrying the resolved hierarchies.
///
/// The contributor pre-aggregation runs in DataFusion (one pass over the records, spilling if
/// needed, distributed on a cluster); its (leaf cell, contributor) pairs are rolled up over
/// the cell lattice by [`lattice`].
pub async fn tabulate_streaming(
    ctx: &SessionContext,
    t: &TableQuery,
    hierarchies: &HashMap<String, HierarchySpec>,
    progress: &Progress,
    sink: &mut CellSink<'_>,
) -> Result<Cells> {
    Ok(tabulate_into(ctx, t, hierarchies, progress, Target::Cells(sink)).await?.0)
}

/// Receives the payload of each part of a table ([`parts::plan_parts`]) with its number.
pub type PartSink<'a> = dyn FnMut(usize, Vec<u8>) -> Result<()> + Send + 'a;

/// Tabulates one table as parts: the contributor pre-aggregation as in
/// [`tabulate_streaming`], then the roll-up cut into parts of about `part_cells` cells whose
/// payloads go to `emit` (to be rolled up wherever the engine runs them). Returns an empty
/// [`Cells`] carrying the resolved hierarchies, and the number of parts.
pub async fn tabulate_parts(
    ctx: &SessionContext,
    t: &TableQuery,
    hierarchies: &HashMap<String, HierarchySpec>,
    progress: &Progress,
    part_cells: u64,
    emit: &mut PartSink<'_>,
) -> Result<(Cells, usize)> {
    tabulate_into(ctx, t, hierarchies, progress, Target::Parts { part_cells, emit }).await
}

/// Where the pre-aggregated inputs go: rolled up here, or cut into parts.
enum Target<'s, 'a> {
    Cells(&'s mut CellSink<'a>),
    Parts { part_cells: u64, emit: &'s mut PartSink<'a> },
}

/// Checks the source's columns and values and resolves the table's hierarchies from the codes
/// found in the data (every error reported at once).
pub(crate) async fn resolve_dims(
    ctx: &SessionContext,
    t: &TableQuery,
    hierarchies: &HashMap<String, HierarchySpec>,
) -> Result<Vec<Hierarchy>> {
    check_columns(ctx, t).await?;
    check_values(ctx, t).await?;
    let codes = distinct_codes(ctx, t).await?;
    let mut dims = Vec::new();
    let mut errs = Vec::new();
    for (e, c) in t.explanatory.iter().zip(&codes) {
        let spec = hierarchies.get(e).cloned().unwrap_or(HierarchySpec::Flat);
        match Hierarchy::resolve(e, &spec, c) {
            Ok(h) => dims.push(h),
            Err(err) => errs.push(err),
        }
    }
    Error::collect(errs)?;
    Ok(dims)
}

/// The contributor pre-aggregation of a table with a contributor variable: one row per
/// (leaf cell, contributor) pair, columns `d0, …, d{k-1}` (codes as strings), `cid` (the
/// contributor as in the data), `v` and `wt` (exact sums, DECIMAL(38, [`SCALE`])) and `rec`
/// (records).
pub(crate) fn pairs_sql(t: &TableQuery) -> String {
    let (dcols, dsel, contribution, wexpr) = select_parts(t);
    let c = t.contributor.as_deref().unwrap_or_default();
    format!(
        "SELECT {d}, cid, SUM(v) AS v, COUNT(*) AS rec, SUM(wt) AS wt FROM \
         (SELECT {dsel}, {c} AS cid, {contribution} AS v, {wexpr} AS wt FROM {src}) GROUP BY {d}, cid",
        d = dcols.join(", "),
        dsel = dsel.join(", "),
        c = q(c),
        src = q(&t.source)
    )
}

/// The number of records under each combination of codes of the first `lead` explanatory
/// variables: columns `d0, …, d{lead-1}` (codes as strings, as in [`pairs_sql`]) and `n`.
pub(crate) fn records_sql(t: &TableQuery, lead: usize) -> String {
    let (dcols, dsel, _, _) = select_parts(t);
    format!(
        "SELECT {d}, COUNT(*) AS n FROM (SELECT {dsel} FROM {src}) GROUP BY {d}",
        d = dcols[..lead].join(", "),
        dsel = dsel[..lead].join(", "),
        src = q(&t.source)
    )
}

/// The pieces of the pre-aggregation queries: the leaf columns' names and their selection,
/// the contribution and the weight as exact decimals.
fn select_parts(t: &TableQuery) -> (Vec<String>, Vec<String>, String, String) {
    let dcols: Vec<String> = (0..t.explanatory.len()).map(|i| format!("d{i}")).collect();
    let dsel: Vec<String> =
        t.explanatory.iter().enumerate().map(|(i, e)| format!("CAST({} AS VARCHAR) AS d{i}", q(e))).collect();
    let dec = format!("DECIMAL(38,{SCALE})");
    let contribution = match (&t.response, &t.weight) {
        // Decimal, not float, multiplication: weighted totals are exact to SCALE decimals.
        (Some(r), Some(w)) => format!("CAST(CAST({} AS {dec}) * CAST({} AS {dec}) AS {dec})", q(r), q(w)),
        (Some(r), None) => format!("CAST({} AS {dec})", q(r)),
        (None, Some(w)) => format!("CAST({} AS {dec})", q(w)),
        (None, None) => format!("CAST(1 AS {dec})"),
    };
    let wexpr = match &t.weight {
        Some(w) => format!("CAST({} AS {dec})", q(w)),
        None => format!("CAST(0 AS {dec})"),
    };
    (dcols, dsel, contribution, wexpr)
}

async fn tabulate_into(
    ctx: &SessionContext,
    t: &TableQuery,
    hierarchies: &HashMap<String, HierarchySpec>,
    progress: &Progress,
    target: Target<'_, '_>,
) -> Result<(Cells, usize)> {
    let dims = resolve_dims(ctx, t, hierarchies).await?;
    let lat = Lattice::new(&dims)?;
    // The top list capacity is a compile-time size: the smallest of 2, 4, 8 that holds top_n.
    let parts = match t.top_n {
        0..=2 => tabulate_with::<2>(ctx, t, &dims, &lat, progress, target).await?,
        3..=4 => tabulate_with::<4>(ctx, t, &dims, &lat, progress, target).await?,
        _ => tabulate_with::<8>(ctx, t, &dims, &lat, progress, target).await?,
    };
    Ok((Cells::empty(dims, t.top_n, t.weight.is_some()), parts))
}

async fn tabulate_with<const N: usize>(
    ctx: &SessionContext,
    t: &TableQuery,
    dims: &[Hierarchy],
    lat: &Lattice,
    progress: &Progress,
    target: Target<'_, '_>,
) -> Result<usize> {
    let k = dims.len();
    let src = q(&t.source);
    let (dcols, dsel, contribution, wexpr) = select_parts(t);
    let stage = progress.stage(&format!("{}: contributor pre-aggregation", t.name), 1);
    let mut emitted = 0usize;
    // Rolls `inputs` up here, or cuts them into parts; the number of parts (0 here).
    let what = if matches!(target, Target::Parts { .. }) { "cutting into parts" } else { "roll-up" };
    let roll = |inputs: parts::Inputs<'_, N>| -> Result<usize> {
        match target {
            Target::Cells(sink) => {
                let mut chunk = |rolled: Vec<(u128, CellStats<N>)>| -> Result<()> {
                    emitted += rolled.len();
                    sink(to_cells(t.top_n, t.weight.is_some(), dims, lat, rolled))
                };
                match inputs {
                    parts::Inputs::Pairs(p) => lattice::roll_up_pairs::<N>(lat, p, SCALE_F, &mut chunk)?,
                    parts::Inputs::Leaves(l) => lattice::roll_up_leaf_cells::<N>(lat, l, &mut chunk)?,
                }
                Ok(0)
            }
            Target::Parts { part_cells, emit } => parts::plan_parts(lat, &inputs, part_cells, emit),
        }
    };
    let n_parts;
    match &t.contributor {
        Some(_) => {
            let sql = pairs_sql(t);
            let mut pairs = Pairs::default();
            let mut ids = ContributorIds::default();
            for_each_batch(ctx, &sql, |b| {
                pairs.leaf.extend(leaf_keys(b, dims, lat)?);
                ids.number(b.column(k).as_ref(), &mut pairs.contributor)?;
                let v = b.column(k + 1).as_primitive::<Decimal128Type>();
                let rec = b.column(k + 2).as_primitive::<Int64Type>();
                let wt = b.column(k + 3).as_primitive::<Decimal128Type>();
                pairs.share.extend((0..b.num_rows()).map(|r| Share {
                    value: v.value(r),
                    weight: wt.value(r),
                    records: rec.value(r) as u64,
                }));
                Ok(())
            })
            .await?;
            stage.finish();
            let stage = progress.stage(&format!("{}: {what} of {} contributions", t.name, pairs.len()), 1);
            n_parts = roll(parts::Inputs::Pairs(&pairs))?;
            stage.finish();
        }
        None => {
            let top_fn = TopN::name_for(N);
            let sql = format!(
                "SELECT {d}, COUNT(*) AS freq, SUM(v) AS v, SUM(wt) AS wt, {top_fn}(CAST(v AS DOUBLE)) AS tops \
                 FROM (SELECT {dsel}, {contribution} AS v, {wexpr} AS wt FROM {src}) GROUP BY {d}",
                d = dcols.join(", "),
                dsel = dsel.join(", ")
            );
            let mut leaves: Vec<(u128, CellStats<N>)> = Vec::new();
            for_each_batch(ctx, &sql, |b| {
                let keys = leaf_keys(b, dims, lat)?;
                let freq = b.column(k).as_primitive::<Int64Type>();
                let v = b.column(k + 1).as_primitive::<Decimal128Type>();
                let wt = b.column(k + 2).as_primitive::<Decimal128Type>();
                let tops = b.column(k + 3).as_list::<i32>();
                for (r, key) in keys.into_iter().enumerate() {
                    let mut s = CellStats::<N> {
                        freq: freq.value(r) as u64,
                        records: freq.value(r) as u64,
                        value: v.value(r),
                        weight: wt.value(r),
                        ..Default::default()
                    };
                    let list = tops.value(r);
                    let list = list.as_primitive::<Float64Type>().values();
                    s.ntop = list.len().min(N) as u8;
                    s.top[..s.ntop as usize].copy_from_slice(&list[..s.ntop as usize]);
                    leaves.push((key, s));
                }
                Ok(())
            })
            .await?;
            stage.finish();
            let stage = progress.stage(&format!("{}: {what} of {} leaf cells", t.name, leaves.len()), 1);
            n_parts = roll(parts::Inputs::Leaves(&leaves))?;
            stage.finish();
        }
    }
    if n_parts > 0 {
        progress.detail(&format!("{}: {n_parts} parts", t.name));
    } else {
        progress.detail(&format!("{}: {emitted} cells", t.name));
    }
    Ok(n_parts)
}

/// Writes `units` × 10^-[`SCALE`] as a plain decimal: no exponent, no trailing zeros
/// (`1234.5`, `-0.000001`, `9007199254740993`).
pub fn format_exact(units: i128) -> String {
    let scale = 10i128.pow(SCALE as u32);
    let (int, frac) = (units / scale, (units % scale).unsigned_abs());
    let sign = if units < 0 && int == 0 { "-" } else { "" };
    if frac == 0 {
        return format!("{sign}{int}");
    }
    let digits = format!("{frac:0width$}", width = SCALE as usize);
    format!("{sign}{int}.{}", digits.trim_end_matches('0'))
}

/// Cells in the output layout from rolled-up statistics (already in key order).
pub(crate) fn to_cells<const N: usize>(
    top_n: usize,
    weighted: bool,
    dims: &[Hierarchy],
    lat: &Lattice,
    rolled: Vec<(u128, CellStats<N>)>,
) -> Cells {
    let n = top_n;
    let k = dims.len();
    let mut cells = Cells {
        dims: dims.to_vec(),
        coords: Vec::with_capacity(rolled.len() * k),
        freq: Vec::with_capacity(rolled.len()),
        records: Vec::with_capacity(rolled.len()),
        value: Vec::with_capacity(rolled.len()),
        exact: Vec::with_capacity(rolled.len()),
        weight: weighted.then(|| Vec::with_capacity(rolled.len())),
        top: Vec::with_capacity(rolled.len() * n),
        top_n: n,
    };
    for (key, s) in rolled {
        lat.unpack(key, &mut cells.coords);
        cells.freq.push(s.freq);
        cells.records.push(s.records);
        cells.value.push(s.value as f64 / SCALE_F);
        cells.exact.push(s.value);
        if let Some(w) = cells.weight.as_mut() {
            w.push(s.weight as f64 / SCALE_F);
        }
        // Unused slots are 0 (fewer contributors than n).
        let used = (s.ntop as usize).min(n);
        cells.top.extend_from_slice(&s.top[..used]);
        cells.top.extend(std::iter::repeat_n(0.0, n - used));
    }
    cells
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, StringArray, UInt64Array};

    #[test]
    fn exact_totals_print_as_plain_decimals() {
        assert_eq!(format_exact(1_234_500_000), "1234.5");
        assert_eq!(format_exact(-1), "-0.000001");
        assert_eq!(format_exact(-2_500_000), "-2.5");
        assert_eq!(format_exact(0), "0");
        assert_eq!(format_exact(9_007_199_254_740_993 * 1_000_000), "9007199254740993");
        assert_eq!(format_exact(100_000_000), "100");
    }

    #[test]
    fn contributor_numbers_are_stable_and_never_merge_ids() {
        let mut ids = ContributorIds::default();
        let mut out = Vec::new();
        let big = UInt64Array::from(vec![u64::MAX, u64::MAX - 1, 7, u64::MAX]);
        ids.number(&big, &mut out).unwrap();
        let again = UInt64Array::from(vec![7, u64::MAX - 1]);
        ids.number(&again, &mut out).unwrap();
        assert_eq!(out, vec![0, 1, 2, 0, 2, 1], "ids above 2^63 stay distinct; batches agree");

        let mut ids = ContributorIds::default();
        let mut out = Vec::new();
        ids.number(&Int32Array::from(vec![-3, 4, -3]), &mut out).unwrap();
        ids.number(&StringArray::from(vec!["a", "b", "a"]), &mut Vec::new()).unwrap();
        assert_eq!(out, vec![0, 1, 0]);
    }
}
