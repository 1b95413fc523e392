//! One stratum of a nominal microaggregation as a self-contained task, the twin of the numeric
//! [`StratumTask`](super::StratumTask): the job's driver builds the tasks, and they are solved
//! in this process or on a cluster executor (`sdc_anonymise_nominal`) with the same result
//! anywhere, since [`anonymise_stratum`] depends only on its task.

use serde_json::json;

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
    /// [`nominal::NominalReport`] as JSON (for `report.json`).
    pub report: serde_json::Value,
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
    Ok(NominalStratumOutcome { released: res.released.codes().to_vec(), report: nominal_report_json(&res.report) })
}

/// The nominal quality report as JSON: χ², max absolute and relative error per table dimension,
/// over the control tables and over all tables.
fn nominal_report_json(r: &nominal::NominalReport) -> serde_json::Value {
    let errors = |e: &nominal::metrics::TableErrors| json!({"tables": e.tables, "cells": e.cells, "chi2": e.chi2, "max_abs_error": e.max_abs, "max_rel_error": e.max_rel, "new_cells": e.new_cells});
    json!({
        "method": r.method,
        "exact_status": format!("{:?}", r.exact_status),
        "control_chi2": r.control_chi2,
        "clustering_weight": r.clustering_weight,
        "clusters": r.n_clusters,
        "blocks": r.n_blocks,
        "verify": {"rows": r.verify.rows, "min_class_size": r.verify.min_class_size, "new_combination_rows": r.verify.new_combination_rows},
        "per_dimension": r.per_dimension.iter().map(|d| json!({"dimension": d.dim, "control": errors(&d.control), "all": errors(&d.all)})).collect::<Vec<_>>(),
        "timings_ms": {"partition": r.timings.partition_ms, "aggregate": r.timings.aggregate_ms, "verify": r.timings.verify_ms, "report": r.timings.report_ms},
    })
}
