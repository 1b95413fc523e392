//! One stratum of a nominal microaggregation as a self-contained task, the twin of the numeric
//! [`StratumTask`](super::StratumTask): the job's driver builds the tasks, and they are solved
//! in this process or on a cluster executor (`sdc_anonymise_nominal`) with the same result
//! anywhere, since [`anonymise_stratum`] depends only on its task.

use serde::{Deserialize, Serialize};

use super::nominal::{self, ControlTables, NominalData, NominalParams, RepresentativeMethod};

/// How a nominal microaggregation chooses the released categories of a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NominalMethod {
    /// Two-step: clustering, then representatives that keep the control tables (the default).
    #[default]
    TwoStep,
    /// Baseline: per attribute the most frequent value in the cluster.
    ClusterMode,
    /// Baseline: a seeded random member of the cluster.
    RandomMember,
}

/// One stratum of a nominal microaggregation: a self-contained problem that runs in this
/// process or on a cluster executor (`sdc_anonymise_nominal`), with the same result anywhere.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NominalStratumTask {
    /// Attributes per record.
    pub cols: usize,
    /// Category codes, row-major (`cols` per record).
    pub codes: Vec<u32>,
    /// Anonymity parameter.
    pub k: usize,
    /// Control tables: `None` = all tables up to `up_to` attributes, else explicit attribute sets.
    pub control: Option<Vec<Vec<usize>>>,
    /// Dimension of the default control tables.
    pub up_to: usize,
    /// Seed.
    pub seed: u64,
    /// How the representatives are chosen.
    pub method: NominalMethod,
}

/// What [`anonymise_stratum`] returns: released codes (row-major) and the quality report.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NominalStratumOutcome {
    /// Released category codes, same shape as the task's.
    pub released: Vec<u32>,
    /// The stratum's quality report (for `report.json`).
    pub report: StratumReport,
}

/// Anonymises one nominal stratum (pure: depends only on the task).
pub fn anonymise_stratum(task: &NominalStratumTask) -> std::result::Result<NominalStratumOutcome, String> {
    if task.cols == 0 || !task.codes.len().is_multiple_of(task.cols) {
        return Err(format!("{} codes do not make rows of {} attributes", task.codes.len(), task.cols));
    }
    let rows: Vec<Vec<u32>> = task.codes.chunks(task.cols).map(<[u32]>::to_vec).collect();
    let data = NominalData::from_rows(&rows).map_err(|e| e.to_string())?;
    let mut options = nominal::NominalOptions::default();
    options.representatives = match task.method {
        NominalMethod::ClusterMode => RepresentativeMethod::ClusterMode,
        NominalMethod::RandomMember => RepresentativeMethod::RandomMember,
        NominalMethod::TwoStep => options.representatives,
    };
    let control = match &task.control {
        Some(sets) => ControlTables::Explicit(sets.clone()),
        None => ControlTables::UpToDimension(task.up_to),
    };
    let params = NominalParams { k: task.k, control, seed: task.seed, options };
    let res = nominal::anonymise(&data, &params).map_err(|e| e.to_string())?;
    Ok(NominalStratumOutcome { released: res.released.codes().to_vec(), report: (&res.report).into() })
}

/// The quality report of one nominal stratum in `report.json`: χ², max absolute and relative
/// error per table dimension, over the control tables and over all tables. Fields in
/// alphabetical order (the order `report.json` has always had).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StratumReport {
    /// Independent blocks the clustering was split into.
    pub blocks: usize,
    /// Weight of the clustering (see [`nominal::NominalReport::clustering_weight`]).
    pub clustering_weight: u64,
    /// Clusters of at least k records.
    pub clusters: usize,
    /// χ² over the control tables.
    #[serde(deserialize_with = "f64_or_null")]
    pub control_chi2: f64,
    /// Status of the exact step, as its `Debug` name (`Optimal`, …).
    pub exact_status: String,
    /// The pipeline that ran (e.g. `greedy+1opt+exact-windows`).
    pub method: String,
    /// Per table dimension.
    pub per_dimension: Vec<DimensionReport>,
    /// Step timings (milliseconds).
    pub timings_ms: StratumTimings,
    /// The independent k-anonymity check of the released rows.
    pub verify: StratumVerify,
}

/// Errors of the tables of one dimension, over the control tables and over all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DimensionReport {
    /// Over all tables of this dimension.
    pub all: TableErrorsReport,
    /// Over the control tables of this dimension.
    pub control: TableErrorsReport,
    /// Table dimension (number of variables crossed).
    pub dimension: usize,
}

/// [`nominal::metrics::TableErrors`] as written in `report.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableErrorsReport {
    /// Nonempty cells.
    pub cells: usize,
    /// χ² of released against original counts.
    #[serde(deserialize_with = "f64_or_null")]
    pub chi2: f64,
    /// Largest absolute error of a count.
    #[serde(deserialize_with = "f64_or_null")]
    pub max_abs_error: f64,
    /// Largest relative error of a count.
    #[serde(deserialize_with = "f64_or_null")]
    pub max_rel_error: f64,
    /// Cells that exist only in the released data.
    pub new_cells: usize,
    /// Tables.
    pub tables: usize,
}

/// Step timings of a stratum, milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StratumTimings {
    /// Aggregation (representatives).
    #[serde(deserialize_with = "f64_or_null")]
    pub aggregate: f64,
    /// Clustering.
    #[serde(deserialize_with = "f64_or_null")]
    pub partition: f64,
    /// Quality report.
    #[serde(deserialize_with = "f64_or_null")]
    pub report: f64,
    /// k-anonymity check.
    #[serde(deserialize_with = "f64_or_null")]
    pub verify: f64,
}

/// The k-anonymity check of a stratum's released rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StratumVerify {
    /// Smallest class of identical released rows.
    pub min_class_size: usize,
    /// Released rows whose combination does not occur in the original data.
    pub new_combination_rows: usize,
    /// Rows checked.
    pub rows: usize,
}

impl From<&nominal::metrics::TableErrors> for TableErrorsReport {
    fn from(e: &nominal::metrics::TableErrors) -> Self {
        Self {
            cells: e.cells,
            chi2: e.chi2,
            max_abs_error: e.max_abs,
            max_rel_error: e.max_rel,
            new_cells: e.new_cells,
            tables: e.tables,
        }
    }
}

impl From<&nominal::NominalReport> for StratumReport {
    fn from(r: &nominal::NominalReport) -> Self {
        Self {
            blocks: r.n_blocks,
            clustering_weight: r.clustering_weight,
            clusters: r.n_clusters,
            control_chi2: r.control_chi2,
            exact_status: format!("{:?}", r.exact_status),
            method: r.method.clone(),
            per_dimension: r
                .per_dimension
                .iter()
                .map(|d| DimensionReport { all: (&d.all).into(), control: (&d.control).into(), dimension: d.dim })
                .collect(),
            timings_ms: StratumTimings {
                aggregate: r.timings.aggregate_ms,
                partition: r.timings.partition_ms,
                report: r.timings.report_ms,
                verify: r.timings.verify_ms,
            },
            verify: StratumVerify {
                min_class_size: r.verify.min_class_size,
                new_combination_rows: r.verify.new_combination_rows,
                rows: r.verify.rows,
            },
        }
    }
}

/// Reads a number that `report.json` may hold as `null`: serde_json writes a non-finite `f64`
/// (an SSE of degenerate data, say) as `null`, which reads back as NaN.
pub fn f64_or_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}
