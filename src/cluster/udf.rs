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

use super::wire::{self, Solved, Wire};
use crate::microagg::nominal_stratum::{anonymise_stratum, NominalStratumOutcome, NominalStratumTask};
use crate::microagg::{StratumOutcome, StratumTask};
use crate::publish::parts::{write_part, PartInputs, PartTask};
use crate::suppress::{
    solve_table_task, solve_task, SubtableOutcome, SubtableTask, SuppressError, TableOutcome, TableTask,
};

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

static TEST_SCAN_DELAY_MS: AtomicU64 = AtomicU64::new(0);
static TEST_TAMPER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Fault injection for tests: this process lies in every whole-table result — each secondary
/// of the first table published again, the audit figures left as they were — and in every
/// part it writes (one more published line than reported), so a test can prove that the
/// client refuses an executor's word and publishes nothing.
pub fn set_test_tamper_results(on: bool) {
    TEST_TAMPER.store(on, Ordering::Relaxed);
}

/// Fault injection for tests: every batch through [`TEST_SCAN_DELAY`] in this process first
/// sleeps `ms` milliseconds, so a test can kill an executor inside a scan and aggregation task
/// (tabulation), where no solver runs.
pub fn set_test_scan_delay_ms(ms: u64) {
    TEST_SCAN_DELAY_MS.store(ms, Ordering::Relaxed);
}

/// SQL name of the identity function a fault test puts into its view, so that the scan tasks
/// of an executor started with the hidden `--test-scan-delay-ms` take long enough to be
/// killed inside. Everywhere else it returns its argument at once.
pub const TEST_SCAN_DELAY: &str = "sdc_test_scan_delay";

/// `sdc_test_scan_delay(x)` = `x` (see [`TEST_SCAN_DELAY`]).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ScanDelayUdf {
    signature: Signature,
}

impl ScanDelayUdf {
    /// The function, ready to register.
    pub fn udf() -> Arc<ScalarUDF> {
        // Volatile: evaluated where the rows are scanned, never folded away.
        Arc::new(ScalarUDF::from(Self { signature: Signature::any(1, Volatility::Volatile) }))
    }
}

impl ScalarUDFImpl for ScanDelayUdf {
    fn name(&self) -> &str {
        TEST_SCAN_DELAY
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }
    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let delay = TEST_SCAN_DELAY_MS.load(Ordering::Relaxed);
        if delay > 0 {
            eprintln!("sdcflow {}: test delay in a scan", worker_identity());
            std::thread::sleep(std::time::Duration::from_millis(delay));
        }
        Ok(args.args.swap_remove(0))
    }
}

/// Every scalar function sdcflow registers: the solver-partition functions, [`ROLL_UP`] and
/// [`TEST_SCAN_DELAY`].
pub fn scalar_functions() -> Vec<Arc<ScalarUDF>> {
    let mut all = PartitionUdf::all();
    all.push(RollUpUdf::udf());
    all.push(super::part_agg::SlotsUdf::udf());
    all.push(ScanDelayUdf::udf());
    all
}

/// SQL name of the function that rolls up, assesses and writes one part of a primaries-only
/// table: `sdc_roll_up(task, inputs)` → the part's summary ([`crate::publish::parts`]).
pub const ROLL_UP: &str = "sdc_roll_up";

static TEST_ROLL_UP_DELAY_MS: AtomicU64 = AtomicU64::new(0);

/// Fault injection for tests: every part rolled up by this process first sleeps `ms`
/// milliseconds, so a test can kill an executor inside a roll-up task.
pub fn set_test_roll_up_delay_ms(ms: u64) {
    TEST_ROLL_UP_DELAY_MS.store(ms, Ordering::Relaxed);
}

static TEST_ROUTE_DELAY_MS: AtomicU64 = AtomicU64::new(0);

/// Fault injection for tests: every routed chunk this process writes first waits `ms`
/// milliseconds, so a test can kill an executor inside the routing query's final stage (a
/// stage that reads a shuffle).
pub fn set_test_route_delay_ms(ms: u64) {
    TEST_ROUTE_DELAY_MS.store(ms, Ordering::Relaxed);
}

/// The routing delay set by [`set_test_route_delay_ms`].
pub(crate) fn test_route_delay_ms() -> u64 {
    TEST_ROUTE_DELAY_MS.load(Ordering::Relaxed)
}

/// `sdc_roll_up(task Utf8, part UInt64, inputs LargeBinary)` → `Utf8`: one part per row (see
/// [`ROLL_UP`]); `task` is the table's [`PartTask`], the same in every row.
///
/// Rows are done one after the other: each part is itself rolled up on all threads (rayon),
/// and a part's memory is bounded by its window of shards. Writing errors come back in the
/// row, like solver errors; only a broken payload fails the task.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RollUpUdf {
    signature: Signature,
}

impl RollUpUdf {
    /// The function, ready to register.
    pub fn udf() -> Arc<ScalarUDF> {
        let signature =
            Signature::exact(vec![DataType::Utf8, DataType::UInt64, DataType::LargeBinary], Volatility::Volatile);
        Arc::new(ScalarUDF::from(Self { signature }))
    }

    /// Rolls up, assesses and writes one part: the result row.
    fn row(task: &PartTask, part: usize, inputs: &[u8]) -> std::result::Result<String, String> {
        let worker = worker_identity();
        let in_executor = WORKER.get().is_some();
        if in_executor {
            eprintln!("sdcflow {worker}: rolling up part {} of table `{}`", part, task.table);
        }
        let delay = TEST_ROLL_UP_DELAY_MS.load(Ordering::Relaxed);
        if delay > 0 {
            std::thread::sleep(std::time::Duration::from_millis(delay));
        }
        let t0 = std::time::Instant::now();
        let inputs = match &task.chunks {
            None => PartInputs::Payload(inputs),
            Some(folder) => {
                // The names of the part's chunk files, one a line.
                let names = std::str::from_utf8(inputs).map_err(|e| format!("chunk names of part {part}: {e}"))?;
                PartInputs::Chunks(Box::new(names.lines().map(move |f| super::part_agg::read_chunk(folder, f))))
            }
        };
        let outcome = write_part(task, part, inputs).map_err(|e| e.to_string());
        if let (true, Ok(s)) = (TEST_TAMPER.load(Ordering::Relaxed), &outcome) {
            // Publishes one more line than the part reports.
            let csv = std::path::Path::new(&task.root).join(&s.files[1].0);
            let mut f = std::fs::OpenOptions::new().append(true).open(&csv).map_err(|e| e.to_string())?;
            std::io::Write::write_all(&mut f, b"tampered\n").map_err(|e| e.to_string())?;
        }
        if in_executor {
            match &outcome {
                Ok(s) => eprintln!(
                    "sdcflow {worker}: part {} of table `{}` written: {} cells in {:.3} s",
                    part,
                    task.table,
                    s.cells,
                    t0.elapsed().as_secs_f64()
                ),
                Err(e) => eprintln!("sdcflow {worker}: part {} of table `{}` failed: {e}", part, task.table),
            }
        }
        wire::encode(&Solved { outcome, worker })
    }
}

impl ScalarUDFImpl for RollUpUdf {
    fn name(&self) -> &str {
        ROLL_UP
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let tasks = arrays[0].as_string::<i32>();
        let parts = arrays[1].as_primitive::<arrow::datatypes::UInt64Type>();
        let inputs = arrays[2].as_binary::<i64>();
        if tasks.null_count() > 0 || parts.null_count() > 0 || inputs.null_count() > 0 {
            return exec_err!("{ROLL_UP}: NULL payload");
        }
        let mut out = Vec::with_capacity(tasks.len());
        let mut decoded: Option<(&str, PartTask)> = None;
        for i in 0..tasks.len() {
            // The task is the same in every row: decode it once per batch.
            let text = tasks.value(i);
            if decoded.as_ref().is_none_or(|d| d.0 != text) {
                match wire::decode::<PartTask>(text) {
                    Ok(t) => decoded = Some((text, t)),
                    Err(e) => return exec_err!("{ROLL_UP} on {}: {e}", worker_identity()),
                }
            }
            let task = &decoded.as_ref().expect("decoded above").1;
            match Self::row(task, parts.value(i) as usize, inputs.value(i)) {
                Ok(s) => out.push(s),
                Err(e) => return exec_err!("{ROLL_UP} on {}: {e}", worker_identity()),
            }
        }
        Ok(ColumnarValue::Array(Arc::new(StringArray::from(out)) as ArrayRef))
    }
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

/// One kind of solver partition: how a payload row becomes a problem, is solved and goes back
/// as a result row. The contract: [`Self::solve`] is pure (it depends only on the task, so a
/// partition retried on another executor gives the same bytes) and reports solver errors in
/// its outcome; only decoding may fail, on a broken payload (a bug or a version mismatch),
/// which fails the task. Payloads and results travel as [`Wire`] values; [`row`] is the one
/// handler every kind goes through.
pub trait PartitionTask {
    /// SQL name of the function.
    const NAME: &'static str;
    /// The decoded problem.
    type Task: Wire;
    /// What solving it gives, solver errors included (travels as [`Solved`]).
    type Outcome;
    /// Solves the problem (pure).
    fn solve(task: &Self::Task) -> Self::Outcome;
    /// The executor's log line before solving.
    fn started(task: &Self::Task) -> String;
    /// The executor's log line after solving (`seconds` of wall time).
    fn finished(task: &Self::Task, outcome: &Self::Outcome, seconds: f64) -> String;
}

/// Solves one payload row of kind `P`: the result row (solver errors are encoded in it).
pub fn row<P: PartitionTask>(payload: &str) -> std::result::Result<String, String>
where
    Solved<P::Outcome>: Wire,
{
    let task: P::Task = wire::decode(payload)?;
    let worker = worker_identity();
    let in_executor = WORKER.get().is_some();
    if in_executor {
        eprintln!("sdcflow {worker}: {}", P::started(&task));
    }
    let delay = TEST_DELAY_MS.load(Ordering::Relaxed);
    if delay > 0 {
        std::thread::sleep(std::time::Duration::from_millis(delay));
    }
    let t0 = std::time::Instant::now();
    let outcome = P::solve(&task);
    if in_executor {
        eprintln!("sdcflow {worker}: {}", P::finished(&task, &outcome, t0.elapsed().as_secs_f64()));
    }
    wire::encode(&Solved { outcome, worker })
}

/// A modular subtable (`sdc_solve_subtable`).
pub struct SubtablePartition;

impl PartitionTask for SubtablePartition {
    const NAME: &'static str = SOLVE_SUBTABLE;
    type Task = SubtableTask;
    type Outcome = std::result::Result<SubtableOutcome, String>;
    fn solve(task: &Self::Task) -> Self::Outcome {
        solve_task(task).map_err(|e| e.to_string())
    }
    fn started(task: &Self::Task) -> String {
        format!("solving a subtable of {} cells", task.local.cells().len())
    }
    fn finished(_: &Self::Task, outcome: &Self::Outcome, _: f64) -> String {
        match outcome {
            Ok(o) => format!("subtable {:?} in {:.3} s", o.status, o.seconds),
            Err(e) => format!("subtable failed: {e}"),
        }
    }
}

/// A numeric microaggregation stratum (`sdc_microaggregate_stratum`).
pub struct StratumPartition;

impl PartitionTask for StratumPartition {
    const NAME: &'static str = MICROAGGREGATE_STRATUM;
    type Task = StratumTask;
    type Outcome = StratumOutcome;
    fn solve(task: &Self::Task) -> Self::Outcome {
        crate::microagg::solve_stratum(task)
    }
    fn started(task: &Self::Task) -> String {
        format!("microaggregating a stratum of {} records", task.points.len() / task.cols)
    }
    fn finished(task: &Self::Task, outcome: &Self::Outcome, _: f64) -> String {
        format!("stratum {} done: {} groups", task.stratum, outcome.groups.len())
    }
}

/// A nominal microaggregation stratum (`sdc_anonymise_nominal`).
pub struct NominalPartition;

impl PartitionTask for NominalPartition {
    const NAME: &'static str = ANONYMISE_NOMINAL;
    type Task = NominalStratumTask;
    type Outcome = std::result::Result<NominalStratumOutcome, String>;
    fn solve(task: &Self::Task) -> Self::Outcome {
        anonymise_stratum(task)
    }
    fn started(task: &Self::Task) -> String {
        format!("anonymising a nominal stratum of {} records", task.codes.len() / task.cols.max(1))
    }
    fn finished(_: &Self::Task, outcome: &Self::Outcome, _: f64) -> String {
        format!("nominal stratum {}", if outcome.is_ok() { "done" } else { "failed" })
    }
}

/// A whole-table protection with its final audit (`sdc_protect_table`).
pub struct TablePartition;

impl PartitionTask for TablePartition {
    const NAME: &'static str = PROTECT_TABLE;
    type Task = TableTask;
    type Outcome = std::result::Result<TableOutcome, SuppressError>;
    fn solve(task: &Self::Task) -> Self::Outcome {
        let mut outcome = solve_table_task(task);
        if let (true, Ok(o)) = (TEST_TAMPER.load(Ordering::Relaxed), &mut outcome) {
            for s in o.statuses.iter_mut().take(1).flatten() {
                if *s == crate::table::CellStatus::Secondary {
                    *s = crate::table::CellStatus::Safe;
                }
            }
        }
        outcome
    }
    fn started(task: &Self::Task) -> String {
        let cells: usize = task.tables.iter().map(|t| t.cells().len()).sum();
        format!(
            "protecting {} table(s) of {cells} cells ({:?}{})",
            task.tables.len(),
            task.opts.method,
            if task.merged.is_some() { ", completing the merged subtables" } else { "" }
        )
    }
    fn finished(_: &Self::Task, outcome: &Self::Outcome, seconds: f64) -> String {
        match outcome {
            Ok(o) => format!("table protected and audited in {seconds:.3} s ({} sensitive cells)", o.audit.sensitive),
            Err(e) => format!("table protection failed: {e}"),
        }
    }
}

/// A row handler: payload → result row ([`row`] of one [`PartitionTask`]).
type RowHandler = fn(&str) -> std::result::Result<String, String>;

impl PartitionKind {
    /// The function's SQL name and its row handler.
    fn handler(self) -> (&'static str, RowHandler) {
        match self {
            PartitionKind::Subtable => (SubtablePartition::NAME, row::<SubtablePartition>),
            PartitionKind::Stratum => (StratumPartition::NAME, row::<StratumPartition>),
            PartitionKind::Table => (TablePartition::NAME, row::<TablePartition>),
            PartitionKind::Nominal => (NominalPartition::NAME, row::<NominalPartition>),
        }
    }
}

impl ScalarUDFImpl for PartitionUdf {
    fn name(&self) -> &str {
        self.kind.handler().0
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
        let row = self.kind.handler().1;
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
