//! The table-output contract: `cells.parquet` and `published.csv` of one table, written as
//! the cells arrive.
//!
//! The two files go to separate folders so that publishing a folder can never leak:
//! `confidential/<table>/cells.parquet` holds every cell's value, contributions and status
//! (for audits and re-runs), `publish/<table>/published.csv` only what may be released.
//!
//! Tables published with primaries only can have hundreds of millions of cells (a 7-variable
//! table of 2 M records has 363 M), more than fit in memory. They are written in parts
//! ([`super::parts`], each part a pair of files like these); within a part the roll-up hands
//! cells over in key order, a chunk at a time, and [`TableWriter`] appends each chunk to both
//! files and tallies the report figures, so memory is bounded by one chunk. Protected tables (secondary
//! suppression needs the whole table) go through the same writer in one chunk. Files are
//! written inside the run's staging area; nothing is visible until the run commits.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::error::{Error, Result};
use crate::hierarchy::Hierarchy;
use crate::rules::AssessedTable;

/// Report figures accumulated over the chunks of a table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    /// Nonempty cells.
    pub cells: usize,
    /// Cells per status letter.
    pub status_counts: BTreeMap<&'static str, usize>,
    /// Σ |value| over all cells.
    pub total_abs: f64,
    /// Σ |value| over suppressed cells.
    pub suppressed_abs: f64,
    /// Per explanatory variable, per hierarchy level (0 = its total): cells, suppressed cells
    /// and their values — where in the hierarchies the pattern falls.
    pub by_level: Vec<Vec<LevelTally>>,
    /// Status of the cells of the heat map (see [`HeatMap`]).
    pub heat_map: Option<HeatMap>,
}

/// Cells and suppressions at one level of one variable (all other variables at any level).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LevelTally {
    /// Hierarchy level: 0 is the variable's total.
    pub level: usize,
    /// Nonempty cells at this level.
    pub cells: usize,
    /// Suppressed cells at this level.
    pub suppressed: usize,
    /// Σ |value| of the cells.
    pub value: f64,
    /// Σ |value| of the suppressed cells.
    pub suppressed_value: f64,
}

/// The picture of a pattern: the two variables with the most finest-level codes, crossed at
/// their finest level, every other variable at its total; at most [`HeatMap::MAX_CODES`] codes
/// per axis (the first ones), so the page stays small.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HeatMap {
    /// Variable along the columns.
    pub x: String,
    /// Variable along the rows.
    pub y: String,
    /// Column codes.
    pub x_codes: Vec<String>,
    /// Row codes.
    pub y_codes: Vec<String>,
    /// Status letter per (row, column), row-major; empty for an empty cell.
    pub status: Vec<String>,
}

impl HeatMap {
    /// Codes per axis at most.
    pub const MAX_CODES: usize = 60;
}

/// Where a heat map's cells are found: axis variables, their leaf node → position, and the
/// variables that must be at their total.
#[derive(Debug, Clone)]
struct HeatLayout {
    x: usize,
    y: usize,
    x_pos: HashMap<u32, usize>,
    y_pos: HashMap<u32, usize>,
}

impl HeatLayout {
    /// The two variables with the most leaves (in job order on ties); `None` below 2 variables.
    fn new(dims: &[Hierarchy]) -> Option<(Self, HeatMap)> {
        if dims.len() < 2 {
            return None;
        }
        let leaves: Vec<Vec<usize>> = dims.iter().map(|h| h.leaves().take(HeatMap::MAX_CODES).collect()).collect();
        let mut order: Vec<usize> = (0..dims.len()).collect();
        order.sort_by_key(|&d| std::cmp::Reverse(dims[d].leaves().count()));
        let (x, y) = (order[0], order[1]);
        let pos = |d: usize| leaves[d].iter().enumerate().map(|(i, &n)| (n as u32, i)).collect::<HashMap<_, _>>();
        let codes = |d: usize| leaves[d].iter().map(|&n| dims[d].code(n).to_string()).collect::<Vec<_>>();
        let map = HeatMap {
            x: dims[x].variable().to_string(),
            y: dims[y].variable().to_string(),
            x_codes: codes(x),
            y_codes: codes(y),
            status: vec![String::new(); leaves[x].len() * leaves[y].len()],
        };
        Some((Self { x, y, x_pos: pos(x), y_pos: pos(y) }, map))
    }
}

impl Tally {
    /// Share of the total value withheld (0 for an all-zero table).
    pub fn suppressed_share(&self) -> f64 {
        if self.total_abs > 0.0 {
            self.suppressed_abs / self.total_abs
        } else {
            0.0
        }
    }

    /// Cells with the status letter `s`.
    pub fn count(&self, s: &str) -> usize {
        self.status_counts.get(s).copied().unwrap_or(0)
    }
}

/// The columns of `cells.parquet` after the explanatory variables' codes: the names shared
/// by the writer ([`cells_schema`]) and `sdcflow audit` (which reads them back).
pub mod column {
    /// Contributors (holdings) in the cell.
    pub const FREQ: &str = "freq";
    /// Cell total.
    pub const VALUE: &str = "value";
    /// Largest contribution.
    pub const TOP1: &str = "top1";
    /// Second largest contribution.
    pub const TOP2: &str = "top2";
    /// tau-Argus status letter.
    pub const STATUS: &str = "status";
    /// Lower protection level.
    pub const LPL: &str = "lpl";
    /// Upper protection level.
    pub const UPL: &str = "upl";
    /// Records in the cell.
    pub const RECORDS: &str = "records";
    /// Σ weight (weighted tables only).
    pub const WEIGHT: &str = "weight";
}

/// The columns after the codes, in contract order, with their types (the weight column of a
/// weighted table comes last).
pub const CELL_COLUMNS: [(&str, DataType); 8] = [
    (column::FREQ, DataType::UInt64),
    (column::VALUE, DataType::Float64),
    (column::TOP1, DataType::Float64),
    (column::TOP2, DataType::Float64),
    (column::STATUS, DataType::Utf8),
    (column::LPL, DataType::Float64),
    (column::UPL, DataType::Float64),
    (column::RECORDS, DataType::UInt64),
];

/// Schema of `cells.parquet` (contract column order).
pub fn cells_schema(dims: &[Hierarchy], weighted: bool) -> SchemaRef {
    let mut fields: Vec<Field> = dims.iter().map(|h| Field::new(h.variable(), DataType::Utf8, false)).collect();
    fields.extend(CELL_COLUMNS.iter().map(|(name, ty)| Field::new(*name, ty.clone(), false)));
    if weighted {
        fields.push(Field::new(column::WEIGHT, DataType::Float64, false));
    }
    Arc::new(Schema::new(fields))
}

/// Arrow batch of assessed cells in the table-output contract column order.
pub fn cells_batch(a: &AssessedTable) -> Result<RecordBatch> {
    let c = &a.cells;
    let k = c.dims.len();
    let mut cols: Vec<ArrayRef> = Vec::new();
    for (d, h) in c.dims.iter().enumerate() {
        cols.push(Arc::new(StringArray::from_iter_values((0..c.len()).map(|i| h.code(c.coords[i * k + d] as usize)))));
    }
    let f64col = |v: Vec<f64>| -> ArrayRef { Arc::new(Float64Array::from(v)) };
    cols.push(Arc::new(UInt64Array::from(c.freq.clone())));
    cols.push(f64col(c.value.clone()));
    cols.push(f64col((0..c.len()).map(|i| c.tops(i)[0]).collect()));
    cols.push(f64col((0..c.len()).map(|i| c.tops(i)[1]).collect()));
    cols.push(Arc::new(StringArray::from_iter_values(a.status.iter().map(|s| s.letter()))));
    cols.push(f64col(a.lpl.clone()));
    cols.push(f64col(a.upl.clone()));
    cols.push(Arc::new(UInt64Array::from(c.records.clone())));
    if let Some(w) = &c.weight {
        cols.push(f64col(w.clone()));
    }
    Ok(RecordBatch::try_new(cells_schema(&c.dims, c.weight.is_some()), cols)?)
}

/// Quotes a CSV field when needed (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Folder below the output for files that must never be released (cell values, contributions).
pub const CONFIDENTIAL: &str = "confidential";

/// Folder below the output for the files meant for release.
pub const PUBLISH: &str = "publish";

/// The files of table `table`, relative to the output location: `[cells, published]`.
pub fn table_files(table: &str) -> [String; 2] {
    [format!("{CONFIDENTIAL}/{table}/cells.parquet"), format!("{PUBLISH}/{table}/published.csv")]
}

/// The masked microdata of data set `name`, relative to the output location.
pub fn masked_file(name: &str) -> String {
    format!("{PUBLISH}/{name}/masked.parquet")
}

/// Writes the masked microdata of data set `name` below the output (staging) directory `root`
/// ([`masked_file`]); returns the file relative to the output.
pub fn write_masked(root: &Path, name: &str, batch: &RecordBatch) -> Result<String> {
    let rel = masked_file(name);
    let path = root.join(&rel);
    let dir = path.parent().expect("below a folder");
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    write_parquet(&path, batch)?;
    Ok(rel)
}

fn write_parquet(path: &Path, batch: &RecordBatch) -> Result<()> {
    let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::SNAPPY)
        .set_created_by(format!("sdcflow {}", env!("CARGO_PKG_VERSION")))
        .build();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props))?;
    w.write(batch)?;
    w.close()?;
    Ok(())
}

/// Writes `cells.parquet` and `published.csv` of one table chunk by chunk.
pub struct TableWriter {
    csv_path: PathBuf,
    parquet: ArrowWriter<File>,
    csv: BufWriter<File>,
    /// CSV-quoted code of every node, per variable (quoted once, written millions of times).
    csv_codes: Vec<Vec<String>>,
    /// Hierarchy level of every node, per variable.
    depths: Vec<Vec<usize>>,
    heat: Option<HeatLayout>,
    tally: Tally,
}

impl TableWriter {
    /// Creates both files of table `table` below the output (staging) directory `root`, for a
    /// table over `dims` (see [`table_files`]).
    pub fn create(
        root: &Path,
        table: &str,
        explanatory: &[String],
        dims: &[Hierarchy],
        weighted: bool,
    ) -> Result<Self> {
        let [pq, cp] = table_files(table).map(|f| root.join(f));
        Self::create_at(pq, cp, explanatory, dims, weighted)
    }

    /// Creates the cells file `pq` and the published file `cp` (one part of a table, see
    /// [`super::parts`]).
    pub fn create_at(
        pq: PathBuf,
        cp: PathBuf,
        explanatory: &[String],
        dims: &[Hierarchy],
        weighted: bool,
    ) -> Result<Self> {
        for f in [&pq, &cp] {
            let d = f.parent().expect("table files are below a folder");
            std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
        }
        let file = File::create(&pq).map_err(|e| Error::io(&pq, e))?;
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("sdcflow {}", env!("CARGO_PKG_VERSION")))
            .build();
        let parquet = ArrowWriter::try_new(file, cells_schema(dims, weighted), Some(props))?;
        let file = File::create(&cp).map_err(|e| Error::io(&cp, e))?;
        let mut csv = BufWriter::with_capacity(1 << 20, file);
        let header: Vec<String> =
            explanatory.iter().map(|e| csv_field(e)).chain(std::iter::once("value".to_string())).collect();
        writeln!(csv, "{}", header.join(",")).map_err(|e| Error::io(&cp, e))?;
        let csv_codes = dims.iter().map(|h| h.nodes().iter().map(|n| csv_field(&n.code)).collect()).collect();
        let depths: Vec<Vec<usize>> = dims.iter().map(|h| h.nodes().iter().map(|n| n.depth).collect()).collect();
        let by_level = dims
            .iter()
            .map(|h| (0..=h.depth()).map(|level| LevelTally { level, ..Default::default() }).collect())
            .collect();
        let (heat, heat_map) = match HeatLayout::new(dims) {
            Some((l, m)) => (Some(l), Some(m)),
            None => (None, None),
        };
        let tally = Tally { by_level, heat_map, ..Default::default() };
        Ok(Self { csv_path: cp, parquet, csv, csv_codes, depths, heat, tally })
    }

    /// Appends a chunk of assessed cells (in key order) to both files.
    pub fn write(&mut self, a: &AssessedTable) -> Result<()> {
        self.parquet.write(&cells_batch(a)?)?;
        let cp = &self.csv_path;
        let io = |e| Error::io(cp, e);
        let c = &a.cells;
        let k = c.dims.len();
        for i in 0..c.len() {
            for (d, codes) in self.csv_codes.iter().enumerate() {
                self.csv.write_all(codes[c.coords[i * k + d] as usize].as_bytes()).map_err(io)?;
                self.csv.write_all(b",").map_err(io)?;
            }
            let suppressed = a.status[i].is_suppressed();
            if !suppressed {
                self.csv.write_all(crate::tabulate::format_exact(c.exact[i]).as_bytes()).map_err(io)?;
            }
            self.csv.write_all(b"\n").map_err(io)?;
            let t = &mut self.tally;
            *t.status_counts.entry(a.status[i].letter()).or_default() += 1;
            let v = c.value[i].abs();
            t.total_abs += v;
            if suppressed {
                t.suppressed_abs += v;
            }
            let coords = &c.coords[i * k..(i + 1) * k];
            for (d, &node) in coords.iter().enumerate() {
                let l = &mut t.by_level[d][self.depths[d][node as usize]];
                l.cells += 1;
                l.value += v;
                if suppressed {
                    l.suppressed += 1;
                    l.suppressed_value += v;
                }
            }
            if let (Some(h), Some(m)) = (&self.heat, t.heat_map.as_mut()) {
                let others_total = coords.iter().enumerate().all(|(d, &n)| d == h.x || d == h.y || n == 0);
                if let (true, Some(&xi), Some(&yi)) =
                    (others_total, h.x_pos.get(&coords[h.x]), h.y_pos.get(&coords[h.y]))
                {
                    m.status[yi * m.x_codes.len() + xi] = a.status[i].letter().to_string();
                }
            }
        }
        self.tally.cells += c.len();
        Ok(())
    }

    /// Closes both files; returns the report figures.
    pub fn finish(mut self) -> Result<Tally> {
        self.csv.flush().map_err(|e| Error::io(&self.csv_path, e))?;
        self.parquet.close()?;
        Ok(self.tally)
    }
}
