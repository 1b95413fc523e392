//! Tabulation: hierarchical tables with contributor statistics, computed by DataFusion.
//!
//! Every combination of hierarchy levels of every explanatory variable (totals included) is a
//! grouping set; per nonempty cell we need `freq` (number of contributors), `records`, `value`,
//! `weight` and the largest per-contributor totals. The naive plan — `GROUP BY GROUPING SETS
//! ((cell…, contributor))` over the microdata — materialises one row per (cell, contributor) for
//! every grouping set and exhausted 60 GB of temp disk in DuckDB on 2 M rows × 7 dimensions.
//! sdcflow splits the contributors instead:
//!
//! ```text
//! microdata ─► base: (leaf cell, contributor) sums            one pass, spills if needed
//!                │
//!                ├─ contributors in ONE leaf cell ─► leaf summary: count, sum, top-N per leaf
//!                │      their total is the same in every ancestor cell, so statistics roll up
//!                │      exactly: counts and sums add, top-N lists merge (`sdc_top<N>`)
//!                │      ─► GROUPING SETS over leaf cells (not records)
//!                │
//!                └─ contributors in SEVERAL leaf cells (few) ─► per grouping set re-aggregate
//!                       (cell, contributor), then count / sum / top-N per cell
//!                                     ▼
//!              merge both parts per cell (disjoint contributors: add, merge top-N)
//! ```
//!
//! Sums are exact (DECIMAL(38,6)), so results do not depend on partitioning: local DataFusion
//! and Ballista give byte-identical cells. Grouping sets are evaluated in chunks
//! ([`TabulateOptions::grouping_sets_per_query`]) to bound memory.

pub mod topn;

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Decimal128Type, Float64Type, Int64Type};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use crate::error::{nearest, Error, Result};
use crate::hierarchy::{Hierarchy, HierarchySpec};
use crate::job::EngineMode;
use crate::progress::Progress;
use topn::TopN;

/// Scale of the exact decimal sums (6 fractional digits).
pub const SCALE: i32 = 6;
const SCALE_F: f64 = 1e6;

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

/// Tabulation settings.
#[derive(Debug, Clone)]
pub struct TabulateOptions {
    /// Grouping sets per query (bounds memory).
    pub grouping_sets_per_query: usize,
    /// Engine mode: decides how intermediate results are kept (memory or Parquet files).
    pub mode: EngineMode,
    /// Directory for intermediate Parquet files in Ballista modes.
    pub scratch: std::path::PathBuf,
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
    /// Cell total.
    pub value: Vec<f64>,
    /// Σ weight, when the table is weighted.
    pub weight: Option<Vec<f64>>,
    /// Largest contributions, `top_n` entries per cell, descending, 0-padded.
    pub top: Vec<f64>,
    /// Entries of `top` per cell.
    pub top_n: usize,
}

impl Cells {
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

/// Accumulated statistics of one cell in the Rust merge (fixed size: millions of them).
#[derive(Debug, Clone)]
struct Acc {
    freq: u64,
    records: u64,
    value: i128,
    weight: i128,
    top: [f64; topn::MAX_TOP],
    ntop: u8,
    /// Which contributor populations (bit 0: single-cell, bit 1: multi-cell) were absorbed.
    parts: u8,
}

impl Acc {
    /// Adds a disjoint population's statistics.
    fn merge(&mut self, freq: u64, records: u64, value: i128, weight: i128, top: &[f64], n: usize) {
        self.freq += freq;
        self.records += records;
        self.value += value;
        self.weight += weight;
        let mut all: Vec<f64> = self.top[..self.ntop as usize].iter().chain(top).copied().collect();
        all.sort_unstable_by(|a, b| b.total_cmp(a));
        all.truncate(n);
        self.top[..all.len()].copy_from_slice(&all);
        self.ntop = all.len() as u8;
    }
}

/// Packs a cell's node indices into one integer whose order is the coordinates' lexicographic
/// order (dimension 0 in the highest bits), so sorting keys sorts cells.
#[derive(Debug, Clone)]
struct KeyPacker {
    bits: Vec<u32>,
}

impl KeyPacker {
    fn new(dims: &[Hierarchy]) -> Result<Self> {
        let bits: Vec<u32> = dims.iter().map(|h| (usize::BITS - h.len().leading_zeros()).max(1)).collect();
        if bits.iter().sum::<u32>() > 128 {
            return Err(Error::data(
                "tabulation",
                "too many codes across the explanatory variables (cell keys exceed 128 bits)",
            ));
        }
        Ok(Self { bits })
    }

    fn push(&self, key: u128, dim: usize, node: usize) -> u128 {
        (key << self.bits[dim]) | node as u128
    }

    fn unpack(&self, mut key: u128, out: &mut Vec<u32>) {
        let start = out.len();
        for &b in self.bits.iter().rev() {
            out.push((key & ((1u128 << b) - 1)) as u32);
            key >>= b;
        }
        out[start..].reverse();
    }
}

fn q(id: &str) -> String {
    format!("\"{}\"", id.replace('"', "\"\""))
}

fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
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

async fn collect(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    let df = ctx.sql(sql).await.map_err(|e| engine_error(e, sql))?;
    df.collect().await.map_err(|e| engine_error(e, sql))
}

/// An engine error with the statement that caused it (shortened), for bug reports.
fn engine_error(e: datafusion::error::DataFusionError, sql: &str) -> Error {
    let short: String = sql.chars().take(400).collect();
    Error::Engine(format!("{e}\n  while running: {short}{}", if sql.len() > 400 { " …" } else { "" }))
}

/// Fails on NULLs in the table's columns (naming the column and count) and, when required, on
/// negative contributions (naming a culprit).
async fn check_values(ctx: &SessionContext, t: &TableQuery) -> Result<()> {
    let mut cols: Vec<&String> = t.explanatory.iter().collect();
    cols.extend(t.response.iter());
    cols.extend(t.contributor.iter());
    cols.extend(t.weight.iter());
    let exprs: Vec<String> = cols.iter().map(|c| format!("COUNT(*) - COUNT({})", q(c))).collect();
    let batches = collect(ctx, &format!("SELECT {} FROM {}", exprs.join(", "), q(&t.source))).await?;
    let mut errs = Vec::new();
    if let Some(b) = batches.first() {
        for (i, c) in cols.iter().enumerate() {
            let n = b.column(i).as_primitive::<Int64Type>().value(0);
            if n > 0 {
                errs.push(Error::data(
                    &t.source,
                    format!(
                        "table `{}`: column {c:?} has {n} NULL values; filter or recode them in a SQL view",
                        t.name
                    ),
                ));
            }
        }
    }
    Error::collect(errs)?;
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

/// Level columns of dimension `i`: SQL expressions over `d{i}` (and a join when needed).
struct Levels {
    /// `(select expressions, optional join clause)`; expressions are aliased `l{i}_{d}`.
    exprs: Vec<String>,
    join: Option<String>,
    cols: Vec<String>,
}

fn levels_for(i: usize, h: &Hierarchy) -> Levels {
    let depth = h.depth().max(1);
    let cols: Vec<String> = (1..=depth).map(|d| format!("l{i}_{d}")).collect();
    if let Some(w) = h.widths() {
        let mut end = 0;
        let exprs = w
            .iter()
            .enumerate()
            .map(|(d, width)| {
                end += width;
                if d + 1 == w.len() {
                    format!("d{i} AS l{i}_{}", d + 1)
                } else {
                    format!("substr(d{i}, 1, {end}) AS l{i}_{}", d + 1)
                }
            })
            .collect();
        return Levels { exprs, join: None, cols };
    }
    if depth == 1 {
        return Levels { exprs: vec![format!("d{i} AS l{i}_1")], join: None, cols };
    }
    // Explicit tree: a VALUES table leaf → ancestor per depth, shipped inside the plan so every
    // executor sees it.
    let rows: Vec<String> = h
        .leaves()
        .map(|leaf| {
            let anc: Vec<String> = (1..=depth).map(|d| lit(h.code(h.ancestor_at(leaf, d)))).collect();
            format!("({}, {})", lit(h.code(leaf)), anc.join(", "))
        })
        .collect();
    let names: Vec<String> = std::iter::once(format!("h{i}_leaf")).chain(cols.iter().cloned()).collect();
    let join = format!(
        "JOIN (SELECT * FROM (VALUES {}) AS t({})) AS h{i} ON d{i} = h{i}_leaf",
        rows.join(", "),
        names.join(", ")
    );
    Levels { exprs: cols.iter().map(|c| format!("h{i}.{c} AS {c}")).collect(), join: Some(join), cols }
}

/// Keeps an intermediate result where every executor can read it: memory in local mode,
/// Parquet files in the scratch directory otherwise.
async fn materialize(ctx: &SessionContext, opts: &TabulateOptions, name: &str, sql: &str) -> Result<()> {
    let df = ctx.sql(sql).await.map_err(|e| engine_error(e, sql))?;
    match opts.mode {
        EngineMode::Local => {
            let schema = Arc::new(df.schema().as_arrow().clone());
            let parts = df.collect_partitioned().await?;
            let table = MemTable::try_new(schema, parts)?;
            ctx.deregister_table(name)?;
            ctx.register_table(name, Arc::new(table))?;
        }
        _ => {
            // Ballista: executors cannot see client memory, so the (cell-level, already
            // aggregated) intermediate result goes to a Parquet file they can read.
            let schema = Arc::new(df.schema().as_arrow().clone());
            let batches = df.collect().await?;
            let dir = opts.scratch.join(name);
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
            let file_path = dir.join("part-0.parquet");
            let file = std::fs::File::create(&file_path).map_err(|e| Error::io(&file_path, e))?;
            let mut w = parquet::arrow::ArrowWriter::try_new(file, schema, None)?;
            for b in &batches {
                w.write(b)?;
            }
            w.close()?;
            ctx.deregister_table(name)?;
            ctx.register_parquet(name, dir.display().to_string(), Default::default()).await?;
        }
    }
    Ok(())
}

/// All level combinations: one entry per grouping set, the chosen depth per dimension (0 = total).
fn grouping_sets(depths: &[usize]) -> Vec<Vec<usize>> {
    let mut sets = vec![vec![]];
    for &d in depths {
        let mut next = Vec::with_capacity(sets.len() * (d + 1));
        for s in &sets {
            for l in 0..=d {
                let mut s2: Vec<usize> = s.clone();
                s2.push(l);
                next.push(s2);
            }
        }
        sets = next;
    }
    sets
}

/// Tabulates one table. Registers helper tables named after the table (`__sdc_<name>_*`).
pub async fn tabulate(
    ctx: &SessionContext,
    t: &TableQuery,
    hierarchies: &HashMap<String, HierarchySpec>,
    opts: &TabulateOptions,
    progress: &Progress,
) -> Result<Cells> {
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
    let k = dims.len();
    let n = t.top_n;
    let top_fn = TopN::name_for(n);
    let src = q(&t.source);
    let dcols: Vec<String> = (0..k).map(|i| format!("d{i}")).collect();
    let dsel: Vec<String> =
        t.explanatory.iter().enumerate().map(|(i, e)| format!("CAST({} AS VARCHAR) AS d{i}", q(e))).collect();
    let dec = format!("DECIMAL(38,{SCALE})");
    let contribution = match (&t.response, &t.weight) {
        (Some(r), Some(w)) => format!("CAST(CAST({} AS DOUBLE) * CAST({} AS DOUBLE) AS {dec})", q(r), q(w)),
        (Some(r), None) => format!("CAST({} AS {dec})", q(r)),
        (None, Some(w)) => format!("CAST({} AS {dec})", q(w)),
        (None, None) => format!("CAST(1 AS {dec})"),
    };
    let wexpr = match &t.weight {
        Some(w) => format!("CAST({} AS {dec})", q(w)),
        None => format!("CAST(0 AS {dec})"),
    };
    let prefix = format!("__sdc_{}", t.name);
    let leaf_name = format!("{prefix}_leaf");
    let multi_name = format!("{prefix}_multi");
    let stage = progress.stage(&format!("{}: contributor pre-aggregation", t.name), 1);
    match &t.contributor {
        None => {
            let sql = format!(
                "SELECT {d}, COUNT(*) AS freq, COUNT(*) AS rec, SUM(v) AS v, SUM(wt) AS wt, {top_fn}(CAST(v AS DOUBLE)) AS tops \
                 FROM (SELECT {dsel}, {contribution} AS v, {wexpr} AS wt FROM {src}) GROUP BY {d}",
                d = dcols.join(", "),
                dsel = dsel.join(", ")
            );
            materialize(ctx, opts, &leaf_name, &sql).await?;
        }
        Some(c) => {
            let base = format!(
                "SELECT {d}, cid, v, rec, wt, COUNT(*) OVER (PARTITION BY cid) AS nleaf FROM \
                 (SELECT {d}, cid, SUM(v) AS v, COUNT(*) AS rec, SUM(wt) AS wt FROM \
                 (SELECT {dsel}, CAST({c} AS VARCHAR) AS cid, {contribution} AS v, {wexpr} AS wt FROM {src}) GROUP BY {d}, cid)",
                d = dcols.join(", "),
                dsel = dsel.join(", "),
                c = q(c)
            );
            let base_name = format!("{prefix}_base");
            materialize(ctx, opts, &base_name, &base).await?;
            let leaf = format!(
                "SELECT {d}, COUNT(*) AS freq, SUM(rec) AS rec, SUM(v) AS v, SUM(wt) AS wt, {top_fn}(CAST(v AS DOUBLE)) AS tops \
                 FROM {b} WHERE nleaf = 1 GROUP BY {d}",
                d = dcols.join(", "),
                b = q(&base_name)
            );
            materialize(ctx, opts, &leaf_name, &leaf).await?;
            let multi = format!(
                "SELECT {d}, cid, v, rec, wt FROM {b} WHERE nleaf > 1",
                d = dcols.join(", "),
                b = q(&base_name)
            );
            materialize(ctx, opts, &multi_name, &multi).await?;
            ctx.deregister_table(base_name.as_str())?;
        }
    }
    stage.finish();

    let levels: Vec<Levels> = dims.iter().enumerate().map(|(i, h)| levels_for(i, h)).collect();
    let all_cols: Vec<String> = levels.iter().flat_map(|l| l.cols.iter().cloned()).collect();
    let level_view = |table: &str, extra: &str| -> String {
        let exprs: Vec<String> = levels.iter().flat_map(|l| l.exprs.iter().cloned()).collect();
        let joins: Vec<String> = levels.iter().filter_map(|l| l.join.clone()).collect();
        format!("SELECT {extra}, {} FROM {} {}", exprs.join(", "), q(table), joins.join(" "))
    };
    let depths: Vec<usize> = dims.iter().map(|h| h.depth().max(1)).collect();
    let sets = grouping_sets(&depths);
    // Every set also holds a constant column (`sdc_all` = 0, or the contributor), because the
    // SQL parser rejects the empty grouping set `()` of the grand total.
    let set_sql = |s: &Vec<usize>, with_cid: bool| -> String {
        let mut cols: Vec<String> = vec![if with_cid { "cid".into() } else { "sdc_all".into() }];
        cols.extend(s.iter().enumerate().filter(|(_, &l)| l > 0).map(|(i, &l)| format!("l{i}_{l}")));
        format!("({})", cols.join(", "))
    };

    let packer = KeyPacker::new(&dims)?;
    let mut acc: HashMap<u128, Acc> = HashMap::new();
    let chunks: Vec<&[Vec<usize>]> = sets.chunks(opts.grouping_sets_per_query.max(1)).collect();
    let parts = if t.contributor.is_some() { 2 } else { 1 };
    let stage =
        progress.stage(&format!("{}: roll-up of {} grouping sets", t.name, sets.len()), (chunks.len() * parts) as u64);
    for chunk in &chunks {
        // Columns grouped by no set of this chunk are NULL (they must not appear bare).
        let used: std::collections::HashSet<String> = chunk
            .iter()
            .flat_map(|s| s.iter().enumerate().filter(|(_, &l)| l > 0).map(|(i, &l)| format!("l{i}_{l}")))
            .collect();
        let cols: Vec<String> = all_cols
            .iter()
            .map(|c| if used.contains(c) { c.clone() } else { format!("CAST(NULL AS VARCHAR) AS {c}") })
            .collect();
        let cols = cols.join(", ");
        let gs: Vec<String> = chunk.iter().map(|s| set_sql(s, false)).collect();
        let sql = format!(
            "SELECT {cols}, SUM(freq) AS freq, SUM(rec) AS rec, SUM(v) AS v, SUM(wt) AS wt, {top_fn}(tops) AS tops \
             FROM ({lv}) GROUP BY GROUPING SETS ({gs})",
            lv = level_view(&leaf_name, "freq, rec, v, wt, tops, 0 AS sdc_all"),
            gs = gs.join(", ")
        );
        absorb(ctx, &sql, &dims, &levels, &packer, 0, n, &mut acc).await?;
        stage.inc(1);
        if t.contributor.is_some() {
            let gs: Vec<String> = chunk.iter().map(|s| set_sql(s, true)).collect();
            let sql = format!(
                "SELECT {all}, COUNT(*) AS freq, SUM(rec) AS rec, SUM(v) AS v, SUM(wt) AS wt, {top_fn}(CAST(v AS DOUBLE)) AS tops FROM \
                 (SELECT {cols}, cid, SUM(v) AS v, SUM(rec) AS rec, SUM(wt) AS wt FROM ({lv}) GROUP BY GROUPING SETS ({gs})) \
                 GROUP BY {all}",
                all = all_cols.join(", "),
                lv = level_view(&multi_name, "cid, v, rec, wt"),
                gs = gs.join(", ")
            );
            absorb(ctx, &sql, &dims, &levels, &packer, 1, n, &mut acc).await?;
            stage.inc(1);
        }
    }
    stage.finish();
    ctx.deregister_table(leaf_name.as_str())?;
    ctx.deregister_table(multi_name.as_str())?;

    let mut entries: Vec<(u128, Acc)> = acc.into_iter().collect();
    entries.sort_unstable_by_key(|e| e.0);
    let mut cells = Cells {
        dims,
        coords: Vec::with_capacity(entries.len() * k),
        freq: Vec::with_capacity(entries.len()),
        records: Vec::with_capacity(entries.len()),
        value: Vec::with_capacity(entries.len()),
        weight: t.weight.as_ref().map(|_| Vec::with_capacity(entries.len())),
        top: Vec::with_capacity(entries.len() * n),
        top_n: n,
    };
    for (key, a) in entries {
        packer.unpack(key, &mut cells.coords);
        cells.freq.push(a.freq);
        cells.records.push(a.records);
        cells.value.push(a.value as f64 / SCALE_F);
        if let Some(w) = cells.weight.as_mut() {
            w.push(a.weight as f64 / SCALE_F);
        }
        // Unused slots stay 0 (fewer contributors than n).
        cells.top.extend_from_slice(&a.top[..n]);
    }
    Ok(cells)
}

/// Streams a roll-up query into the per-cell accumulators. `part` is the contributor
/// population (0: single-cell, 1: multi-cell); populations are disjoint, so their statistics
/// add. Within one population the same cell can come from several grouping sets when a
/// hierarchy is unbalanced (a shallow leaf is carried down to deeper levels); those rows
/// describe the same records, so only the first is kept.
#[allow(clippy::too_many_arguments)]
async fn absorb(
    ctx: &SessionContext,
    sql: &str,
    dims: &[Hierarchy],
    levels: &[Levels],
    packer: &KeyPacker,
    part: u8,
    n: usize,
    out: &mut HashMap<u128, Acc>,
) -> Result<()> {
    use futures::StreamExt;
    let ncols: usize = levels.iter().map(|l| l.cols.len()).sum();
    let df = ctx.sql(sql).await.map_err(|e| engine_error(e, sql))?;
    let mut stream = df.execute_stream().await.map_err(|e| engine_error(e, sql))?;
    let bit = 1u8 << part;
    while let Some(b) = stream.next().await {
        let b = b.map_err(|e| engine_error(e, sql))?;
        let cast: Vec<arrow::array::ArrayRef> = (0..ncols)
            .map(|c| arrow::compute::cast(b.column(c), &DataType::Utf8))
            .collect::<std::result::Result<_, _>>()?;
        let strs: Vec<_> = cast.iter().map(|a| a.as_string::<i32>()).collect();
        let freq = b.column(ncols).as_primitive::<Int64Type>();
        let rec = b.column(ncols + 1).as_primitive::<Int64Type>();
        let v = b.column(ncols + 2).as_primitive::<Decimal128Type>();
        let wt = b.column(ncols + 3).as_primitive::<Decimal128Type>();
        let top = b.column(ncols + 4).as_list::<i32>();
        for r in 0..b.num_rows() {
            let mut key = 0u128;
            let mut c0 = 0;
            for (d, (h, l)) in dims.iter().zip(levels).enumerate() {
                let code = (c0..c0 + l.cols.len()).find(|&c| strs[c].is_valid(r)).map(|c| strs[c].value(r));
                let node = match code {
                    None => 0,
                    Some(code) => h.index(code).ok_or_else(|| {
                        Error::Internal(format!(
                            "tabulated code {code:?} of `{}` is not in its hierarchy",
                            h.variable()
                        ))
                    })?,
                };
                key = packer.push(key, d, node);
                c0 += l.cols.len();
            }
            let tv = top.value(r);
            let tv = tv.as_primitive::<Float64Type>().values();
            let e = out.entry(key).or_insert_with(|| Acc {
                freq: 0,
                records: 0,
                value: 0,
                weight: 0,
                top: [0.0; topn::MAX_TOP],
                ntop: 0,
                parts: 0,
            });
            if e.parts & bit != 0 {
                continue;
            }
            e.parts |= bit;
            e.merge(freq.value(r) as u64, rec.value(r) as u64, v.value(r), wt.value(r), tv, n);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouping_sets_enumerate_all_level_combinations() {
        let s = grouping_sets(&[2, 1]);
        assert_eq!(s.len(), 6);
        assert!(s.contains(&vec![0, 0]) && s.contains(&vec![2, 1]));
    }

    #[test]
    fn packed_keys_sort_like_coordinates() {
        let spec = HierarchySpec::Levels(vec![1, 1]);
        let codes: Vec<String> = (0..40).map(|i| format!("{}{}", i / 10, i % 10)).collect();
        let h = Hierarchy::resolve("a", &spec, &codes).unwrap();
        let g = Hierarchy::resolve("b", &HierarchySpec::Flat, &["x".into(), "y".into()]).unwrap();
        let p = KeyPacker::new(&[h, g]).unwrap();
        let coords = [[3u32, 2], [3, 0], [40, 1], [0, 2], [12, 1]];
        let mut keys: Vec<u128> =
            coords.iter().map(|c| p.push(p.push(0, 0, c[0] as usize), 1, c[1] as usize)).collect();
        keys.sort_unstable();
        let mut out = Vec::new();
        for k in keys {
            p.unpack(k, &mut out);
        }
        assert_eq!(out, vec![0, 2, 3, 0, 3, 2, 12, 1, 40, 1]);
    }
}
