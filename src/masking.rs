//! Microdata protection by microaggregation: read a data set in input order, run the pure solver
//! ([`crate::microagg`] for numeric variables, [`crate::microagg::nominal`] for categorical
//! ones), verify k-anonymity on exactly the values that will be written, and stage
//! `masked.parquet` — the input rows, in input order, with the aggregated variables replaced.
//!
//! Input order matters (users join the masked file back by position), so records are read with
//! a single-partition DataFusion session: files are scanned one after another in path order.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Float64Type, Schema};
use datafusion::prelude::{SessionConfig, SessionContext};
use serde::{Deserialize, Serialize};

use crate::cluster::ship::Executor;
use crate::error::{nearest, Error, Result};
use crate::job::{Job, MaskingKind, MicroaggregationJob};
use crate::microagg::nominal_stratum::{NominalStratumTask, StratumReport};
use crate::microagg::{self, MicroaggParams, NumericData};
use crate::progress::Progress;

/// Reads `source` (a registered table or view) of a fresh single-partition session in input
/// order, as one batch.
async fn read_in_order(job: &Job, source: Option<&str>) -> Result<(RecordBatch, String)> {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
    // The job's views may call sdcflow's functions, as in the engine's session.
    for f in crate::cluster::udf::scalar_functions() {
        ctx.register_udf(f.as_ref().clone());
    }
    crate::engine::register_microdata(&ctx, &job.microdata, job.csv_delimiter).await?;
    let last = crate::engine::run_preludes(&ctx, &job.sql).await?;
    let source = source.map(str::to_string).or(last).unwrap_or_else(|| "microdata".into());
    let df = ctx.table(source.as_str()).await.map_err(|e| Error::data(&source, e.to_string()))?;
    let schema = Arc::new(df.schema().as_arrow().clone());
    let batches = df.collect().await?;
    Ok((arrow::compute::concat_batches(&schema, &batches)?, source))
}

fn column<'a>(batch: &'a RecordBatch, source: &str, set: &str, name: &str) -> Result<&'a ArrayRef> {
    batch.column_by_name(name).ok_or_else(|| {
        let names: Vec<&str> = batch.schema_ref().fields().iter().map(|f| f.name().as_str()).collect();
        let hint = nearest(name, names.iter().copied()).map(|n| format!(" (did you mean {n:?}?)")).unwrap_or_default();
        Error::data(
            source,
            format!("microaggregation `{set}`: column {name:?} not found{hint}; columns: {}", names.join(", ")),
        )
    })
}

fn no_nulls(a: &ArrayRef, source: &str, set: &str, name: &str) -> Result<()> {
    if a.null_count() > 0 {
        let first = (0..a.len()).find(|&i| a.is_null(i)).unwrap_or(0);
        return Err(Error::data(
            source,
            format!(
                "microaggregation `{set}`: column {name:?} has {} NULL values (first at row {first}); impute or drop them in a SQL view",
                a.null_count()
            ),
        ));
    }
    Ok(())
}

/// Stratum id per record: the combination of the strata columns, numbered by first appearance.
fn strata_ids(batch: &RecordBatch, source: &str, m: &MicroaggregationJob) -> Result<Option<(Vec<u64>, Vec<String>)>> {
    let Some(cols) = &m.strata else { return Ok(None) };
    let mut strings = Vec::new();
    for c in cols {
        let a = column(batch, source, &m.name, c)?;
        no_nulls(a, source, &m.name, c)?;
        strings.push(arrow::compute::cast(a, &DataType::Utf8)?);
    }
    let mut ids: HashMap<Vec<String>, u64> = HashMap::new();
    let mut labels = Vec::new();
    let mut out = Vec::with_capacity(batch.num_rows());
    for r in 0..batch.num_rows() {
        let key: Vec<String> = strings.iter().map(|s| s.as_string::<i32>().value(r).to_string()).collect();
        let next = ids.len() as u64;
        let id = *ids.entry(key.clone()).or_insert_with(|| {
            labels.push(key.join("/"));
            next
        });
        out.push(id);
    }
    Ok(Some((out, labels)))
}

/// Replaces the named columns of `batch` by `new` arrays.
fn replace(batch: &RecordBatch, new: &HashMap<String, ArrayRef>) -> Result<RecordBatch> {
    let mut fields = Vec::new();
    let mut cols = Vec::new();
    for (f, c) in batch.schema_ref().fields().iter().zip(batch.columns()) {
        match new.get(f.name()) {
            Some(a) => {
                fields.push(Field::new(f.name(), a.data_type().clone(), f.is_nullable()));
                cols.push(a.clone());
            }
            None => {
                fields.push(f.as_ref().clone());
                cols.push(c.clone());
            }
        }
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

/// The report of one `[[microaggregation]]` in `report.json`, numeric or nominal (told apart by
/// `kind`). Each variant's fields are in alphabetical order, the order `report.json` has always
/// had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MicroaggregationReport {
    /// `kind = "numeric"`.
    Numeric(NumericReport),
    /// `kind = "nominal"`.
    Nominal(NominalReport),
}

impl MicroaggregationReport {
    /// Sets the fields every kind shares once the records are masked: the data set's name,
    /// records, variables and strata, and the seconds it took.
    fn set_common(&mut self, m: &MicroaggregationJob, rows: usize, strata: Option<usize>, seconds: f64) {
        let common = match self {
            Self::Numeric(r) => (&mut r.name, &mut r.rows, &mut r.variables, &mut r.strata, &mut r.seconds),
            Self::Nominal(r) => (&mut r.name, &mut r.rows, &mut r.variables, &mut r.strata, &mut r.seconds),
        };
        *common.0 = m.name.clone();
        *common.1 = rows;
        *common.2 = m.variables.clone();
        *common.3 = strata;
        *common.4 = seconds;
    }

    /// Records the file the publishing stage wrote the masked records to.
    pub fn set_file(&mut self, file: String) {
        match self {
            Self::Numeric(r) => r.file = Some(file),
            Self::Nominal(r) => r.file = Some(file),
        }
    }

    /// The data set's name.
    pub fn name(&self) -> &str {
        match self {
            Self::Numeric(r) => &r.name,
            Self::Nominal(r) => &r.name,
        }
    }

    /// Masked records.
    pub fn rows(&self) -> usize {
        match self {
            Self::Numeric(r) => r.rows,
            Self::Nominal(r) => r.rows,
        }
    }

    /// The anonymity parameter k.
    pub fn k(&self) -> usize {
        match self {
            Self::Numeric(r) => r.k,
            Self::Nominal(r) => r.k,
        }
    }
}

/// The report of a numeric microaggregation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumericReport {
    /// The masked file, relative to the output (set when published).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Gap between the SSE and the lower bound, percent (when a bound was computed).
    pub gap_percent: Option<f64>,
    /// `(group size, groups of that size)`, by size.
    pub group_size_histogram: Vec<(usize, usize)>,
    /// Groups.
    pub groups: usize,
    /// IL = 100 · SSE / SST (standardised units).
    #[serde(deserialize_with = "crate::microagg::nominal_stratum::f64_or_null")]
    pub information_loss_percent: f64,
    /// Minimum group size.
    pub k: usize,
    /// `"numeric"`.
    pub kind: String,
    /// Lower bound on the optimal SSE (two-step, univariate-optimal).
    pub lower_bound: Option<f64>,
    /// SSE of the MDAV partition the result started from (two-step: MDAV inside the
    /// macro-groups); the SSE itself for the other methods.
    #[serde(deserialize_with = "crate::microagg::nominal_stratum::f64_or_null")]
    pub mdav_sse: f64,
    /// The method's job-file name.
    pub method: String,
    /// The `[[microaggregation]]` name.
    pub name: String,
    /// Per variable, in its own units: SSE and its share of the variable's SST.
    pub per_variable: Vec<VariableLoss>,
    /// Lower bound restricted to the method's macro-groups.
    pub restricted_lower_bound: Option<f64>,
    /// Masked records.
    pub rows: usize,
    /// Wall time of the microaggregation.
    #[serde(deserialize_with = "crate::microagg::nominal_stratum::f64_or_null")]
    pub seconds: f64,
    /// Within-group sum of squares (standardised units).
    #[serde(deserialize_with = "crate::microagg::nominal_stratum::f64_or_null")]
    pub sse: f64,
    /// Total sum of squares (standardised units).
    #[serde(deserialize_with = "crate::microagg::nominal_stratum::f64_or_null")]
    pub sst: f64,
    /// Strata (`null` without `strata`).
    pub strata: Option<usize>,
    /// Strata solved per worker (only when they were shipped).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub strata_per_worker: BTreeMap<String, usize>,
    /// Step timings, seconds.
    pub timings_s: NumericTimings,
    /// The aggregated variables.
    pub variables: Vec<String>,
    /// The solver's warnings.
    pub warnings: Vec<String>,
}

/// Information loss of one variable of a numeric microaggregation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariableLoss {
    /// 100 · SSE / SST of this variable.
    #[serde(deserialize_with = "crate::microagg::nominal_stratum::f64_or_null")]
    pub information_loss_percent: f64,
    /// Σ (x − masked)², in the variable's units.
    #[serde(deserialize_with = "crate::microagg::nominal_stratum::f64_or_null")]
    pub sse: f64,
    /// The variable.
    pub variable: String,
}

/// Step timings of a numeric microaggregation, seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumericTimings {
    /// Lower bound.
    #[serde(deserialize_with = "crate::microagg::nominal_stratum::f64_or_null")]
    pub bound: f64,
    /// Improvement (column generation, genetic search).
    #[serde(deserialize_with = "crate::microagg::nominal_stratum::f64_or_null")]
    pub improve: f64,
    /// Partition.
    #[serde(deserialize_with = "crate::microagg::nominal_stratum::f64_or_null")]
    pub partition: f64,
    /// Standardisation.
    #[serde(deserialize_with = "crate::microagg::nominal_stratum::f64_or_null")]
    pub standardise: f64,
    /// Whole solve.
    #[serde(deserialize_with = "crate::microagg::nominal_stratum::f64_or_null")]
    pub total: f64,
    /// Result checks.
    #[serde(deserialize_with = "crate::microagg::nominal_stratum::f64_or_null")]
    pub verify: f64,
}

/// The report of a nominal microaggregation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NominalReport {
    /// The masked file, relative to the output (set when published).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Minimum class size.
    pub k: usize,
    /// `"nominal"`.
    pub kind: String,
    /// The method's job-file name.
    pub method: String,
    /// The `[[microaggregation]]` name.
    pub name: String,
    /// Per stratum, its quality report.
    pub reports: Vec<StratumReport>,
    /// Masked records.
    pub rows: usize,
    /// Wall time of the microaggregation.
    #[serde(deserialize_with = "crate::microagg::nominal_stratum::f64_or_null")]
    pub seconds: f64,
    /// Strata (`null` without `strata`).
    pub strata: Option<usize>,
    /// Strata solved per worker (only when they were shipped).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub strata_per_worker: BTreeMap<String, usize>,
    /// The anonymised variables.
    pub variables: Vec<String>,
}

/// Runs one `[[microaggregation]]`; returns the masked records (the input rows in input order,
/// checked k-anonymous) and the report, which the publishing stage completes with the file it
/// writes. The strata are solved as partitions by `executor` (see
/// [`crate::cluster::ship::solve_strata`]); reading the records in input order, the merge and
/// the k-anonymity check stay here.
pub async fn run_microaggregation(
    job: &Job,
    m: &MicroaggregationJob,
    progress: &Progress,
    executor: &Executor,
) -> Result<(RecordBatch, MicroaggregationReport)> {
    let stage = progress.stage(&format!("{}: reading microdata", m.name), 1);
    let (batch, source) = read_in_order(job, m.source.as_deref()).await?;
    stage.finish();
    let start = Instant::now();
    let nominal_kind = matches!(m.kind, MaskingKind::Nominal { .. });
    let stage = progress.stage(&format!("{}: microaggregation (k = {})", m.name, m.k), 1);
    let strata = strata_ids(&batch, &source, m)?;
    let (masked, mut report) = if nominal_kind {
        nominal_mask(&batch, &source, m, strata.as_ref().map(|s| &s.0), executor).await?
    } else {
        let (data, params) = numeric_input(&batch, &source, m, strata.as_ref().map(|s| s.0.clone()))?;
        let failed = |e: microagg::MicroaggError| Error::data(&source, format!("microaggregation `{}`: {e}", m.name));
        let (plan, tasks) = microagg::plan_strata(&data, &params).map_err(failed)?;
        let (outcomes, per_worker) = executor.solve_strata(&m.name, &tasks).await?;
        let r = microagg::finish_strata(&data, &params, plan, outcomes).map_err(failed)?;
        let (cols, mut report) = numeric_output(&r, m, &data);
        report.strata_per_worker = per_worker;
        (cols, MicroaggregationReport::Numeric(report))
    };
    stage.finish();
    let out = replace(&batch, &masked)?;
    verify_written(&out, m, strata.as_ref().map(|s| &s.0))?;
    report.set_common(m, batch.num_rows(), strata.as_ref().map(|s| s.1.len()), start.elapsed().as_secs_f64());
    Ok((out, report))
}

/// Independent check on the values about to be written: every combination of the aggregated
/// variables (within a stratum) occurs at least k times.
fn verify_written(out: &RecordBatch, m: &MicroaggregationJob, strata: Option<&Vec<u64>>) -> Result<()> {
    let strings: Vec<ArrayRef> = m
        .variables
        .iter()
        .map(|v| arrow::compute::cast(out.column_by_name(v).expect("replaced column"), &DataType::Utf8))
        .collect::<std::result::Result<_, _>>()?;
    let mut counts: HashMap<(u64, Vec<&str>), usize> = HashMap::new();
    for r in 0..out.num_rows() {
        let key: Vec<&str> = strings.iter().map(|s| s.as_string::<i32>().value(r)).collect();
        *counts.entry((strata.map_or(0, |s| s[r]), key)).or_default() += 1;
    }
    if let Some(((_, key), n)) = counts.iter().find(|(_, &n)| n < m.k) {
        return Err(Error::Internal(format!(
            "microaggregation `{}`: masked combination {key:?} occurs {n} < k = {} times; nothing was written",
            m.name, m.k
        )));
    }
    Ok(())
}

/// The solver's input for a numeric microaggregation.
fn numeric_input(
    batch: &RecordBatch,
    source: &str,
    m: &MicroaggregationJob,
    strata: Option<Vec<u64>>,
) -> Result<(NumericData, MicroaggParams)> {
    let n = batch.num_rows();
    let d = m.variables.len();
    let mut values = vec![0.0; n * d];
    for (j, v) in m.variables.iter().enumerate() {
        let a = column(batch, source, &m.name, v)?;
        if !a.data_type().is_numeric() {
            return Err(Error::data(
                source,
                format!("microaggregation `{}`: variable {v:?} must be numeric, found {}", m.name, a.data_type()),
            ));
        }
        no_nulls(a, source, &m.name, v)?;
        let f = arrow::compute::cast(a, &DataType::Float64)?;
        for (i, x) in f.as_primitive::<Float64Type>().values().iter().enumerate() {
            values[i * d + j] = *x;
        }
    }
    let MaskingKind::Numeric { method, standardisation, weight, gamma } = &m.kind else {
        return Err(Error::Internal(format!("microaggregation `{}` is not numeric", m.name)));
    };
    let weights = match weight {
        Some(w) => {
            let a = column(batch, source, &m.name, w)?;
            no_nulls(a, source, &m.name, w)?;
            let f = arrow::compute::cast(a, &DataType::Float64)?;
            Some(f.as_primitive::<Float64Type>().values().to_vec())
        }
        None => None,
    };
    let data = NumericData { rows: n, cols: d, values, weights, strata };
    let params = MicroaggParams {
        k: m.k,
        method: *method,
        standardisation: *standardisation,
        seed: m.seed,
        vmdav_gamma: *gamma,
        ..Default::default()
    };
    Ok((data, params))
}

/// The masked columns and the report of a numeric microaggregation of `n` records.
fn numeric_output(
    r: &microagg::MicroaggResult,
    m: &MicroaggregationJob,
    data: &NumericData,
) -> (HashMap<String, ArrayRef>, NumericReport) {
    let (n, d) = (data.rows, m.variables.len());
    // Per variable, in its own units: Σ (x − masked)² and its share of Σ (x − mean)², so a
    // reader sees which variable paid for the grouping.
    let per_variable: Vec<VariableLoss> = m
        .variables
        .iter()
        .enumerate()
        .map(|(j, v)| {
            let x = |i: usize| data.values[i * d + j];
            let mean = (0..n).map(x).sum::<f64>() / n.max(1) as f64;
            let sse: f64 = (0..n).map(|i| (x(i) - r.masked[i * d + j]).powi(2)).sum();
            let sst: f64 = (0..n).map(|i| (x(i) - mean).powi(2)).sum();
            let il = if sst > 0.0 { 100.0 * sse / sst } else { 0.0 };
            VariableLoss { information_loss_percent: il, sse, variable: v.clone() }
        })
        .collect();
    let mut cols = HashMap::new();
    for (j, v) in m.variables.iter().enumerate() {
        let col: Float64Array = (0..n).map(|i| Some(r.masked[i * d + j])).collect();
        cols.insert(v.clone(), Arc::new(col) as ArrayRef);
    }
    let report = NumericReport {
        file: None,
        gap_percent: r.gap_percent,
        group_size_histogram: r.group_sizes.clone(),
        groups: r.n_groups,
        information_loss_percent: r.information_loss,
        k: m.k,
        kind: "numeric".into(),
        lower_bound: r.lower_bound,
        mdav_sse: r.step1_sse.unwrap_or(r.sse),
        method: m.method_name().into(),
        name: String::new(),
        per_variable,
        restricted_lower_bound: r.restricted_bound,
        rows: 0,
        seconds: 0.0,
        sse: r.sse,
        sst: r.sst,
        strata: None,
        strata_per_worker: BTreeMap::new(),
        timings_s: NumericTimings {
            bound: r.timings.bound_s,
            improve: r.timings.improve_s,
            partition: r.timings.partition_s,
            standardise: r.timings.standardise_s,
            total: r.timings.total_s,
            verify: r.timings.verify_s,
        },
        variables: Vec::new(),
        warnings: r.warnings.clone(),
    };
    (cols, report)
}

async fn nominal_mask(
    batch: &RecordBatch,
    source: &str,
    m: &MicroaggregationJob,
    strata: Option<&Vec<u64>>,
    executor: &Executor,
) -> Result<(HashMap<String, ArrayRef>, MicroaggregationReport)> {
    let n = batch.num_rows();
    let mut dicts: Vec<Vec<String>> = Vec::new();
    let mut codes: Vec<Vec<u32>> = vec![Vec::with_capacity(m.variables.len()); n];
    for v in &m.variables {
        let a = column(batch, source, &m.name, v)?;
        no_nulls(a, source, &m.name, v)?;
        let s = arrow::compute::cast(a, &DataType::Utf8)?;
        let s = s.as_string::<i32>();
        let mut dict: HashMap<&str, u32> = HashMap::new();
        let mut values = Vec::new();
        for (r, row) in codes.iter_mut().enumerate() {
            let x = s.value(r);
            let next = dict.len() as u32;
            let c = *dict.entry(x).or_insert_with(|| {
                values.push(x.to_string());
                next
            });
            row.push(c);
        }
        dicts.push(values);
    }
    let MaskingKind::Nominal { method, control, up_to } = &m.kind else {
        return Err(Error::Internal(format!("microaggregation `{}` is not nominal", m.name)));
    };
    // Strata are protected independently (they are natural blocks for the clustering).
    let groups: Vec<Vec<usize>> = match strata {
        None => vec![(0..n).collect()],
        Some(ids) => {
            let mut g: Vec<Vec<usize>> = vec![Vec::new(); ids.iter().max().map_or(0, |x| *x as usize + 1)];
            for (r, &id) in ids.iter().enumerate() {
                g[id as usize].push(r);
            }
            g
        }
    };
    let tasks: Vec<NominalStratumTask> = groups
        .iter()
        .map(|rows| NominalStratumTask {
            cols: m.variables.len(),
            codes: rows.iter().flat_map(|&r| codes[r].iter().copied()).collect(),
            k: m.k,
            control: control.clone(),
            up_to: *up_to,
            seed: m.seed,
            method: *method,
        })
        .collect();
    let failed = |e: String| Error::data(source, format!("microaggregation `{}`: {e}", m.name));
    let (outcomes, per_worker) = executor.anonymise_nominal_strata(&m.name, &tasks).await?;
    let outcomes = outcomes.into_iter().map(|r| r.map_err(failed)).collect::<Result<Vec<_>>>()?;
    let mut released: Vec<Vec<u32>> = codes.clone();
    let mut reports = Vec::new();
    for (rows, o) in groups.iter().zip(outcomes) {
        if o.released.len() != rows.len() * m.variables.len() {
            return Err(Error::Internal(format!(
                "microaggregation `{}`: a stratum came back with the wrong shape",
                m.name
            )));
        }
        for (i, &r) in rows.iter().enumerate() {
            released[r] = o.released[i * m.variables.len()..(i + 1) * m.variables.len()].to_vec();
        }
        reports.push(o.report);
    }
    let mut cols = HashMap::new();
    for (j, v) in m.variables.iter().enumerate() {
        let strings = StringArray::from_iter_values(released.iter().map(|row| dicts[j][row[j] as usize].as_str()));
        let original = batch.column_by_name(v).expect("checked").data_type().clone();
        let arr: ArrayRef = Arc::new(strings);
        let arr = if original == DataType::Utf8 { arr } else { arrow::compute::cast(&arr, &original)? };
        cols.insert(v.clone(), arr);
    }
    let report = NominalReport {
        file: None,
        k: m.k,
        kind: "nominal".into(),
        method: m.method_name().into(),
        name: String::new(),
        reports,
        rows: 0,
        seconds: 0.0,
        strata: None,
        strata_per_worker: per_worker,
        variables: Vec::new(),
    };
    Ok((cols, MicroaggregationReport::Nominal(report)))
}
