//! `sdc_solve_subtable(payload)` and `sdc_microaggregate_stratum(payload)`: the scalar functions
//! that solve solver partitions wherever the plan runs — in the client process (local mode), in
//! the in-process executor (standalone) or on cluster executors.
//!
//! Each input row is one problem ([`super::wire`]): a modular subtable, a whole-table
//! protection (method or modular completion, with its final audit), a numeric or a nominal
//! microaggregation stratum; the output row is its solution plus the identity of the process that solved it. Rows of a batch are solved in parallel (rayon;
//! HiGHS itself runs single-threaded). Solver errors are returned in the row, not raised, so a
//! deterministic failure is reported once instead of being retried by Ballista as a task
//! failure; only a broken payload (a bug or a version mismatch) fails the task.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use arrow::array::{Array, ArrayRef, AsArray, StringArray};
use arrow::datatypes::DataType;
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use rayon::prelude::*;

use super::wire;
use crate::suppress::{solve_table_task, solve_task};

/// SQL name of the subtable solver function.
pub const SOLVE_SUBTABLE: &str = "sdc_solve_subtable";
/// SQL name of the stratum microaggregation function.
pub const MICROAGGREGATE_STRATUM: &str = "sdc_microaggregate_stratum";
/// SQL name of the nominal microaggregation function (one stratum per row).
pub const ANONYMISE_NOMINAL: &str = "sdc_anonymise_nominal";
/// SQL name of the whole-table protection function (method or modular completion + audit).
pub const PROTECT_TABLE: &str = "sdc_protect_table";

static WORKER: OnceLock<String> = OnceLock::new();
static TEST_DELAY_MS: AtomicU64 = AtomicU64::new(0);

/// Names this process in partition results (called once by `sdcflow executor`).
pub fn set_worker_identity(identity: String) {
    let _ = WORKER.set(identity);
}

/// The identity recorded with every partition solved here: the executor's when this process is
/// a cluster executor, else `in-process (pid N)`.
pub fn worker_identity() -> String {
    WORKER.get().cloned().unwrap_or_else(|| format!("in-process (pid {})", std::process::id()))
}

/// Fault injection for tests: every subtable solved by this process first sleeps `ms`
/// milliseconds, so a test can kill an executor while it is surely inside a task.
pub fn set_test_solve_delay_ms(ms: u64) {
    TEST_DELAY_MS.store(ms, Ordering::Relaxed);
}

/// What a partition function solves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PartitionKind {
    /// A modular subtable (`sdc_solve_subtable`).
    Subtable,
    /// A microaggregation stratum (`sdc_microaggregate_stratum`).
    Stratum,
    /// A whole-table protection with its final audit (`sdc_protect_table`).
    Table,
    /// A nominal microaggregation stratum (`sdc_anonymise_nominal`).
    Nominal,
}

/// A solver-partition scalar function (`Utf8` payload → `Utf8` result).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PartitionUdf {
    kind: PartitionKind,
    signature: Signature,
}

impl PartitionUdf {
    /// The function for `kind`, ready to register.
    pub fn udf(kind: PartitionKind) -> Arc<ScalarUDF> {
        // Volatile: never constant-folded or deduplicated by the optimiser.
        let signature = Signature::exact(vec![DataType::Utf8], Volatility::Volatile);
        Arc::new(ScalarUDF::from(Self { kind, signature }))
    }

    /// Every partition function, for registration.
    pub fn all() -> Vec<Arc<ScalarUDF>> {
        [PartitionKind::Subtable, PartitionKind::Stratum, PartitionKind::Table, PartitionKind::Nominal]
            .map(Self::udf)
            .to_vec()
    }
}

/// Microaggregates one stratum payload.
fn stratum_row(payload: &str) -> std::result::Result<String, String> {
    let task = wire::decode_stratum(payload)?;
    let worker = worker_identity();
    let in_executor = WORKER.get().is_some();
    if in_executor {
        eprintln!("sdcflow {worker}: microaggregating a stratum of {} records", task.points.len() / task.cols);
    }
    let delay = TEST_DELAY_MS.load(Ordering::Relaxed);
    if delay > 0 {
        std::thread::sleep(std::time::Duration::from_millis(delay));
    }
    let o = crate::microagg::solve_stratum(&task);
    if in_executor {
        eprintln!("sdcflow {worker}: stratum {} done: {} groups", task.stratum, o.groups.len());
    }
    Ok(wire::encode_stratum_outcome(&o, &worker))
}

/// Solves one subtable payload; the result row (never fails: solver errors are encoded).
fn solve_row(payload: &str) -> std::result::Result<String, String> {
    let task = wire::decode_task(payload)?;
    let worker = worker_identity();
    let in_executor = WORKER.get().is_some();
    if in_executor {
        eprintln!("sdcflow {worker}: solving a subtable of {} cells", task.local.cells().len());
    }
    let delay = TEST_DELAY_MS.load(Ordering::Relaxed);
    if delay > 0 {
        std::thread::sleep(std::time::Duration::from_millis(delay));
    }
    let r = solve_task(&task).map_err(|e| e.to_string());
    if in_executor {
        match &r {
            Ok(o) => eprintln!("sdcflow {worker}: subtable {:?} in {:.3} s", o.status, o.seconds),
            Err(e) => eprintln!("sdcflow {worker}: subtable failed: {e}"),
        }
    }
    Ok(wire::encode_outcome(&r, &worker))
}

/// Anonymises one nominal stratum payload.
fn nominal_row(payload: &str) -> std::result::Result<String, String> {
    let task = wire::decode_nominal(payload)?;
    let worker = worker_identity();
    let in_executor = WORKER.get().is_some();
    if in_executor {
        eprintln!("sdcflow {worker}: anonymising a nominal stratum of {} records", task.codes.len() / task.cols.max(1));
    }
    let delay = TEST_DELAY_MS.load(Ordering::Relaxed);
    if delay > 0 {
        std::thread::sleep(std::time::Duration::from_millis(delay));
    }
    let r = crate::microagg::nominal_stratum::anonymise_stratum(&task);
    if in_executor {
        eprintln!("sdcflow {worker}: nominal stratum {}", if r.is_ok() { "done" } else { "failed" });
    }
    Ok(wire::encode_nominal_outcome(&r, &worker))
}

/// Protects one whole-table payload; the result row (solver errors are encoded).
fn table_row(payload: &str) -> std::result::Result<String, String> {
    let task = wire::decode_table_task(payload)?;
    let worker = worker_identity();
    let in_executor = WORKER.get().is_some();
    let cells: usize = task.tables.iter().map(|t| t.cells().len()).sum();
    if in_executor {
        eprintln!(
            "sdcflow {worker}: protecting {} table(s) of {cells} cells ({:?}{})",
            task.tables.len(),
            task.opts.method,
            if task.merged.is_some() { ", completing the merged subtables" } else { "" }
        );
    }
    let delay = TEST_DELAY_MS.load(Ordering::Relaxed);
    if delay > 0 {
        std::thread::sleep(std::time::Duration::from_millis(delay));
    }
    let t0 = std::time::Instant::now();
    let r = solve_table_task(&task);
    if in_executor {
        match &r {
            Ok(o) => eprintln!(
                "sdcflow {worker}: table protected and audited in {:.3} s ({} sensitive cells)",
                t0.elapsed().as_secs_f64(),
                o.audit.sensitive
            ),
            Err(e) => eprintln!("sdcflow {worker}: table protection failed: {e}"),
        }
    }
    Ok(wire::encode_table_outcome(&r, &worker))
}

impl ScalarUDFImpl for PartitionUdf {
    fn name(&self) -> &str {
        match self.kind {
            PartitionKind::Subtable => SOLVE_SUBTABLE,
            PartitionKind::Stratum => MICROAGGREGATE_STRATUM,
            PartitionKind::Table => PROTECT_TABLE,
            PartitionKind::Nominal => ANONYMISE_NOMINAL,
        }
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let input = arrays[0].as_string::<i32>();
        if input.null_count() > 0 {
            return exec_err!("{}: NULL payload", self.name());
        }
        let row = match self.kind {
            PartitionKind::Subtable => solve_row,
            PartitionKind::Stratum => stratum_row,
            PartitionKind::Table => table_row,
            PartitionKind::Nominal => nominal_row,
        };
        let rows: Vec<std::result::Result<String, String>> =
            (0..input.len()).into_par_iter().map(|i| row(input.value(i))).collect();
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            match r {
                Ok(s) => out.push(s),
                Err(e) => return exec_err!("{} on {}: {e}", self.name(), worker_identity()),
            }
        }
        Ok(ColumnarValue::Array(Arc::new(StringArray::from(out)) as ArrayRef))
    }
}
