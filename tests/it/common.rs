//! Helpers shared by the integration tests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Float64Type, Schema, UInt64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;

/// The sdcflow binary built for this test run.
pub fn sdcflow() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sdcflow"))
}

/// A column for [`write_parquet`].
pub enum Col {
    Str(&'static str, Vec<String>),
    F64(&'static str, Vec<f64>),
}

/// Writes one Parquet file with the given columns.
pub fn write_parquet(path: &Path, cols: Vec<Col>) {
    let mut fields = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for c in cols {
        match c {
            Col::Str(n, v) => {
                fields.push(Field::new(n, DataType::Utf8, false));
                arrays.push(Arc::new(StringArray::from(v)));
            }
            Col::F64(n, v) => {
                fields.push(Field::new(n, DataType::Float64, false));
                arrays.push(Arc::new(Float64Array::from(v)));
            }
        }
    }
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap();
    let f = std::fs::File::create(path).unwrap();
    let mut w = ArrowWriter::try_new(f, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// Reads every batch of a Parquet file.
pub fn read_parquet(path: &Path) -> Vec<RecordBatch> {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ParquetRecordBatchReaderBuilder::try_new(f).unwrap().build().unwrap().map(|b| b.unwrap()).collect()
}

/// One output cell, keyed by its codes.
#[derive(Debug, Clone, PartialEq)]
pub struct OutCell {
    pub freq: u64,
    pub records: u64,
    pub value: f64,
    pub top1: f64,
    pub top2: f64,
    pub status: String,
    pub lpl: f64,
}

/// Reads `cells.parquet` into a map from codes to cell.
pub fn read_cells(path: &Path, dims: usize) -> BTreeMap<Vec<String>, OutCell> {
    let mut out = BTreeMap::new();
    for b in read_parquet(path) {
        let s = |n: &str| b.column_by_name(n).unwrap_or_else(|| panic!("column {n}")).clone();
        let codes: Vec<ArrayRef> = (0..dims).map(|d| b.column(d).clone()).collect();
        let freq = s("freq");
        let rec = s("records");
        let value = s("value");
        let top1 = s("top1");
        let top2 = s("top2");
        let status = s("status");
        let lpl = s("lpl");
        for r in 0..b.num_rows() {
            let key: Vec<String> = codes.iter().map(|c| c.as_string::<i32>().value(r).to_string()).collect();
            out.insert(
                key,
                OutCell {
                    freq: freq.as_primitive::<UInt64Type>().value(r),
                    records: rec.as_primitive::<UInt64Type>().value(r),
                    value: value.as_primitive::<Float64Type>().value(r),
                    top1: top1.as_primitive::<Float64Type>().value(r),
                    top2: top2.as_primitive::<Float64Type>().value(r),
                    status: status.as_string::<i32>().value(r).to_string(),
                    lpl: lpl.as_primitive::<Float64Type>().value(r),
                },
            );
        }
    }
    out
}

/// Reads a string column of all batches.
pub fn strings(batches: &[RecordBatch], name: &str) -> Vec<String> {
    let mut v = Vec::new();
    for b in batches {
        let c = arrow::compute::cast(b.column_by_name(name).unwrap(), &DataType::Utf8).unwrap();
        let c = c.as_string::<i32>();
        v.extend((0..c.len()).map(|i| c.value(i).to_string()));
    }
    v
}

/// Reads a numeric column of all batches as f64.
pub fn floats(batches: &[RecordBatch], name: &str) -> Vec<f64> {
    let mut v = Vec::new();
    for b in batches {
        let c = arrow::compute::cast(b.column_by_name(name).unwrap(), &DataType::Float64).unwrap();
        v.extend(c.as_primitive::<Float64Type>().values().iter().copied());
    }
    v
}

/// Writes a job file into `dir` and returns its path.
pub fn write_job(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("job.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs the binary, returning (exit code, stdout, stderr).
pub fn run(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let o = sdcflow().args(args).current_dir(cwd).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

/// The `[input]` and `dept` hierarchy sections shared by the `dept × sex` test jobs (data from
/// [`sdcflow::generate`], `prep.sql` deriving `dept` from `geo`).
pub fn dept_job_head(data: &std::path::Path) -> String {
    format!(
        "[input]\nmicrodata = \"{}\"\nsql = [\"prep.sql\"]\n[[hierarchy]]\nvariable = \"dept\"\nlevels = [2, 2]\n",
        data.display()
    )
}

/// A `[[table]]` of salaries by `explanatory` with enterprises as contributors; `secondary` is
/// the inline table after `secondary = ` (e.g. `{ method = "fast", seed = 3 }`).
pub fn salary_table(name: &str, explanatory: &[&str], safety: &str, secondary: &str) -> String {
    let vars: Vec<String> = explanatory.iter().map(|v| format!("{v:?}")).collect();
    format!(
        "[[table]]\nname = \"{name}\"\nexplanatory = [{}]\nresponse = \"salary\"\ncontributor = \"ent_id\"\nsafety = \"{safety}\"\nsecondary = {secondary}\n",
        vars.join(", ")
    )
}

/// Writes synthetic census-like microdata (regular shape) to `dir` as `sdcflow generate` does:
/// `rows` rows from `seed`, `rows_per_part` rows per Parquet part, enterprises of
/// `mean_enterprise_size` employees on average; returns the parts written.
pub fn generate_data(dir: &Path, rows: u64, seed: u64, rows_per_part: u64, mean_enterprise_size: f64) -> Vec<PathBuf> {
    let opts =
        sdcflow::generate::GenerateOptions { rows, seed, rows_per_part, mean_enterprise_size, ..Default::default() };
    sdcflow::generate::generate(dir, &opts).unwrap()
}

/// The generator's default mean enterprise size, for [`generate_data`].
pub fn default_enterprise_size() -> f64 {
    sdcflow::generate::GenerateOptions::default().mean_enterprise_size
}

/// A loopback port nothing listens on, for a child process to bind. Picked below the kernel's
/// ephemeral range: a port the kernel hands out (bind to port 0) can be taken by any outgoing
/// connection before the child binds it, and the cluster tests open many. Test processes
/// start their picks at different places (by process id).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ephemeral_start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32768);
    let (lo, hi) = (20_000u32, ephemeral_start.min(65_536));
    if hi <= lo + 1_000 {
        return std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    }
    let base = std::process::id().wrapping_mul(7_919);
    loop {
        let port = (lo + base.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed).wrapping_mul(13)) % (hi - lo)) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}
