//! Microaggregation: k-anonymous masking of numeric (and, in [`nominal`], categorical)
//! microdata by replacing each record with the centroid of a group of at least k records.
//!
//! Why: microaggregation is the standard perturbative method for numeric quasi-identifiers
//! (Domingo-Ferrer & Mateo-Sanz 2002). The objective is the within-group sum of squared
//! errors SSE on standardised variables; information loss is IL = 100·SSE/SST. Methods:
//!
//! | [`Method`] | what | cost |
//! |---|---|---|
//! | `mdav` | classical MDAV ([`mdav`]) on the whole stratum | O(n²d/k) |
//! | `vmdav` | V-MDAV with gain factor γ ([`vmdav`]) | O(n²d) |
//! | `univariate-optimal` | Hansen–Mukherjee shortest path, one variable ([`univariate`]) | O(n log n + nk) |
//! | `two-step` (default) | macro-groups → MDAV → optimisation groups solved by GA + column generation → local search ([`twostep`]) | ~O(n log n) |
//!
//! Lower bounds come from column generation ([`colgen`]): for a stratum of at most
//! `exact_bound_max_records` records the whole stratum is solved by column generation and, when
//! its exact pricing completes, the bound is a true lower bound on the optimal SSE (sum over
//! strata). Per-optimisation-group bounds of the two-step method only bound the problem
//! restricted to those groups and are reported separately (`restricted_bound`).
//!
//! Weights: optional positive record weights give weighted centroids (also in the masked
//! output) and a weighted SSE/SST for every method; group sizes (k) always count records.
//! Standardisation statistics are unweighted. Strata: records are aggregated only within their
//! stratum; every stratum needs ≥ k records.
//!
//! Invariants: pure and deterministic (same data, params and seed ⇒ identical result, whatever
//! the thread count); the result is verified ([`verify_k_anonymity`]) before it is returned.
//!
//! ```
//! use sdcflow::microagg::{microaggregate, Method, MicroaggParams, NumericData};
//! let data = NumericData::new(6, 1, vec![1.0, 2.0, 3.0, 10.0, 11.0, 12.0]);
//! let params = MicroaggParams { k: 3, method: Method::Mdav, ..MicroaggParams::default() };
//! let r = microaggregate(&data, &params).unwrap();
//! assert_eq!(r.masked, vec![2.0, 2.0, 2.0, 11.0, 11.0, 11.0]);
//! assert_eq!(r.group, vec![0, 0, 0, 1, 1, 1]);
//! // z-scores: SST = n = 6; SSE = 4 / var(x), population variance 125.5 / 6
//! assert!((r.sse - 4.0 / (125.5 / 6.0)).abs() < 1e-12);
//! ```

pub mod colgen;
pub mod genetic;
pub mod geometry;
pub mod improve;
pub mod mdav;
pub mod nominal;
pub mod nominal_stratum;
pub mod partition;
pub mod pricing;
pub mod standardise;
pub mod twostep;
pub mod univariate;
pub mod vmdav;

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use serde::{Deserialize, Serialize};

pub use colgen::ColGenParams;
pub use genetic::GaParams;
pub use geometry::PointSet;
pub use standardise::Standardisation;
pub use twostep::{solve_optimisation_group, GroupSolution, OptimisationGroup, TwoStepParams};

/// Numeric microdata: a row-major `rows × cols` matrix plus optional weights and strata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumericData {
    /// Number of records.
    pub rows: usize,
    /// Number of variables to aggregate.
    pub cols: usize,
    /// Row-major values (`rows * cols`), all finite.
    pub values: Vec<f64>,
    /// Optional positive weight per record.
    pub weights: Option<Vec<f64>>,
    /// Optional stratum id per record; records are only grouped within their stratum.
    pub strata: Option<Vec<u64>>,
}

impl NumericData {
    /// Unweighted, unstratified data.
    pub fn new(rows: usize, cols: usize, values: Vec<f64>) -> Self {
        Self { rows, cols, values, weights: None, strata: None }
    }
}

/// Microaggregation method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Classical MDAV (fixed group size k).
    Mdav,
    /// Variable-size MDAV with gain factor `vmdav_gamma`.
    Vmdav,
    /// Optimal univariate microaggregation (exactly one variable).
    UnivariateOptimal,
    /// Two-step: MDAV in macro-groups, GA + column generation in optimisation groups, local
    /// search. The default.
    #[default]
    TwoStep,
}

/// Parameters of [`microaggregate`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MicroaggParams {
    /// Minimum group size (default 3); 2 ≤ k ≤ records per stratum.
    pub k: usize,
    /// Method (default `two-step`).
    pub method: Method,
    /// Standardisation before distances (default z-score with population sd).
    pub standardisation: Standardisation,
    /// Seed of every random choice (default 1).
    pub seed: u64,
    /// V-MDAV gain factor γ (default 0.2).
    pub vmdav_gamma: f64,
    /// Settings of the two-step method.
    pub two_step: TwoStepParams,
    /// Strata of at most this many records get a whole-stratum column-generation lower bound
    /// (default 200; 0 disables). With `two-step`, a better partition found there is kept.
    /// Cost on one core (measured on Census subsets): ≤ 10 s for n = 200, k = 3; ~1 min for
    /// n = 200, k = 5, where the exact-pricing budget runs out and the bound is weak.
    pub exact_bound_max_records: usize,
    /// Column-generation settings for that bound.
    pub bound_column_generation: ColGenParams,
}

impl Default for MicroaggParams {
    fn default() -> Self {
        Self {
            k: 3,
            method: Method::TwoStep,
            standardisation: Standardisation::ZScore,
            seed: 1,
            vmdav_gamma: vmdav::DEFAULT_GAMMA,
            two_step: TwoStepParams::default(),
            exact_bound_max_records: 200,
            bound_column_generation: ColGenParams::default(),
        }
    }
}

/// Wall-clock seconds per step (summed over strata).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// Validation and standardisation.
    pub standardise_s: f64,
    /// Two-step: cutting into macro-groups.
    pub partition_s: f64,
    /// MDAV / V-MDAV / univariate, or two-step step 1.
    pub step1_s: f64,
    /// Two-step step 2 (GA + column generation on optimisation groups).
    pub step2_s: f64,
    /// Two-step local search.
    pub improve_s: f64,
    /// Whole-stratum column-generation bound.
    pub bound_s: f64,
    /// Masking and k-anonymity verification.
    pub verify_s: f64,
    /// Everything.
    pub total_s: f64,
}

/// Result of [`microaggregate`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MicroaggResult {
    /// Method used.
    pub method: Method,
    /// Minimum group size.
    pub k: usize,
    /// Group id per record (input order); ids are numbered by first occurrence.
    pub group: Vec<usize>,
    /// Masked matrix (input order, row-major, ORIGINAL units): each record replaced by the
    /// (weighted) mean of its group.
    pub masked: Vec<f64>,
    /// Number of groups.
    pub n_groups: usize,
    /// Within-group (weighted) sum of squares, standardised units.
    pub sse: f64,
    /// Total (weighted) sum of squares about the overall mean, standardised units.
    pub sst: f64,
    /// IL = 100·SSE/SST (0 when SST = 0).
    pub information_loss: f64,
    /// Two-step: SSE after step 1 (MDAV inside the macro-groups).
    pub step1_sse: Option<f64>,
    /// Certified lower bound on the optimal SSE of the whole (stratified) problem, when every
    /// stratum was small enough and its exact pricing completed.
    pub lower_bound: Option<f64>,
    /// 100·(SSE − bound)/SSE, the column-generation paper's gap (eq. 15).
    pub gap_percent: Option<f64>,
    /// Two-step: sum of per-optimisation-group bounds of the last round, when all had one. It
    /// bounds only the problem restricted to those groups (the final SSE may be below it).
    pub restricted_bound: Option<f64>,
    /// Two-step: optimisation groups of the last round and how many got a bound.
    pub optimisation_groups: (usize, usize),
    /// Histogram of group sizes: (size, number of groups), increasing size.
    pub group_sizes: Vec<(usize, usize)>,
    /// Step timings.
    pub timings: Timings,
    /// Non-fatal problems.
    pub warnings: Vec<String>,
}

/// Why microaggregation refused or failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MicroaggError {
    /// `values.len()` is not `rows * cols`.
    #[error("the data has {values} values, expected rows × cols = {rows} × {cols}")]
    Shape {
        /// Declared rows.
        rows: usize,
        /// Declared columns.
        cols: usize,
        /// Values given.
        values: usize,
    },
    /// No variable to aggregate.
    #[error("no variables to microaggregate (cols = 0)")]
    NoVariables,
    /// A NaN or infinite value.
    #[error("value {value} at row {row}, column {column} is not finite; impute or drop it first")]
    NonFinite {
        /// Record index (0-based).
        row: usize,
        /// Variable index (0-based).
        column: usize,
        /// The value.
        value: f64,
    },
    /// Weights of the wrong length.
    #[error("{weights} weights given for {rows} records")]
    WeightsLength {
        /// Records.
        rows: usize,
        /// Weights given.
        weights: usize,
    },
    /// A weight that is not finite and positive.
    #[error("weight {weight} of row {row} must be finite and > 0")]
    InvalidWeight {
        /// Record index.
        row: usize,
        /// The weight.
        weight: f64,
    },
    /// Strata of the wrong length.
    #[error("{strata} stratum ids given for {rows} records")]
    StrataLength {
        /// Records.
        rows: usize,
        /// Ids given.
        strata: usize,
    },
    /// k < 2 or k larger than the number of records.
    #[error("k = {k} is invalid: need 2 ≤ k ≤ {records} (the number of records)")]
    InvalidK {
        /// Requested k.
        k: usize,
        /// Records.
        records: usize,
    },
    /// A stratum with fewer than k records (cannot be k-anonymous on its own).
    #[error("stratum {stratum} has {records} records, fewer than k = {k}; merge it with another stratum")]
    StratumTooSmall {
        /// Stratum id.
        stratum: u64,
        /// Its records.
        records: usize,
        /// Requested k.
        k: usize,
    },
    /// `univariate-optimal` with more than one variable.
    #[error("method univariate-optimal needs exactly one variable, got {cols}; use mdav, vmdav or two-step")]
    NeedsOneVariable {
        /// Variables given.
        cols: usize,
    },
    /// A parameter out of range.
    #[error("parameter {name} = {value} is invalid: {reason}")]
    InvalidParameter {
        /// Parameter name.
        name: &'static str,
        /// Its value.
        value: String,
        /// What is allowed.
        reason: &'static str,
    },
    /// Verification failed: a masked record occurs fewer than k times in its stratum (a bug).
    #[error("internal error: masked row {row} (stratum {stratum}) occurs {occurrences} times, fewer than k = {k}")]
    NotKAnonymous {
        /// A culprit row.
        row: usize,
        /// Its stratum (0 without strata).
        stratum: u64,
        /// Occurrences of its masked vector in the stratum.
        occurrences: usize,
        /// Requested k.
        k: usize,
    },
}

fn validate(data: &NumericData, params: &MicroaggParams) -> Result<(), MicroaggError> {
    let (rows, cols) = (data.rows, data.cols);
    if cols == 0 {
        return Err(MicroaggError::NoVariables);
    }
    if data.values.len() != rows * cols {
        return Err(MicroaggError::Shape { rows, cols, values: data.values.len() });
    }
    if let Some(p) = data.values.iter().position(|v| !v.is_finite()) {
        return Err(MicroaggError::NonFinite { row: p / cols, column: p % cols, value: data.values[p] });
    }
    if let Some(w) = &data.weights {
        if w.len() != rows {
            return Err(MicroaggError::WeightsLength { rows, weights: w.len() });
        }
        if let Some(row) = w.iter().position(|x| !(x.is_finite() && *x > 0.0)) {
            return Err(MicroaggError::InvalidWeight { row, weight: w[row] });
        }
    }
    if let Some(s) = &data.strata {
        if s.len() != rows {
            return Err(MicroaggError::StrataLength { rows, strata: s.len() });
        }
    }
    if params.k < 2 || params.k > rows {
        return Err(MicroaggError::InvalidK { k: params.k, records: rows });
    }
    if params.method == Method::UnivariateOptimal && cols != 1 {
        return Err(MicroaggError::NeedsOneVariable { cols });
    }
    if params.method == Method::Vmdav && !(params.vmdav_gamma.is_finite() && params.vmdav_gamma >= 0.0) {
        return Err(MicroaggError::InvalidParameter {
            name: "vmdav_gamma",
            value: params.vmdav_gamma.to_string(),
            reason: "must be finite and >= 0",
        });
    }
    Ok(())
}

/// Microaggregates `data` with `params`: groups of ≥ k records within each stratum, each
/// record replaced by its group's (weighted) mean in original units.
pub fn microaggregate(data: &NumericData, params: &MicroaggParams) -> Result<MicroaggResult, MicroaggError> {
    let (plan, tasks) = plan_strata(data, params)?;
    let outcomes = tasks.iter().map(solve_stratum).collect();
    finish_strata(data, params, plan, outcomes)
}

/// One stratum to microaggregate: its standardised points, the unit shipped to cluster
/// executors (strata are independent once the data is standardised as a whole).
#[derive(Debug, Clone, PartialEq)]
pub struct StratumTask {
    /// Stratum id (seeds the two-step method's random stream).
    pub stratum: u64,
    /// Variables per record.
    pub cols: usize,
    /// Standardised coordinates of the stratum's records, row-major, in input order.
    pub points: Vec<f64>,
    /// Their weights.
    pub weights: Option<Vec<f64>>,
    /// Parameters.
    pub params: MicroaggParams,
}

/// What [`solve_stratum`] found for one stratum.
#[derive(Debug, Clone, PartialEq)]
pub struct StratumOutcome {
    /// Groups of local record indices (positions in the task's points).
    pub groups: Vec<Vec<usize>>,
    /// Two-step: SSE after step 1.
    pub step1_sse: Option<f64>,
    /// Two-step: sum of the optimisation-group bounds (`None` when one had none).
    pub restricted_bound: Option<f64>,
    /// Two-step: optimisation groups and how many got a bound.
    pub optimisation_groups: (usize, usize),
    /// Whole-stratum lower bound (`None`: stratum too large, or the bound failed).
    pub lower_bound: Option<f64>,
    /// Step timings of this stratum (`standardise_s`, `verify_s`, `total_s` unused).
    pub timings: Timings,
    /// Non-fatal problems.
    pub warnings: Vec<String>,
}

/// The whole-data part of a stratified run, kept by the caller between [`plan_strata`] and
/// [`finish_strata`].
#[derive(Debug, Clone)]
pub struct StrataPlan {
    members: Vec<Vec<usize>>,
    standardised: Vec<f64>,
    timings: Timings,
    start: Instant,
}

/// Validates and standardises `data` and cuts it into one [`StratumTask`] per stratum
/// (increasing stratum id).
pub fn plan_strata(
    data: &NumericData,
    params: &MicroaggParams,
) -> Result<(StrataPlan, Vec<StratumTask>), MicroaggError> {
    let total = Instant::now();
    let mut timings = Timings::default();
    let t = Instant::now();
    validate(data, params)?;
    let (rows, cols, k) = (data.rows, data.cols, params.k);
    let mut strata: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    match &data.strata {
        Some(s) => {
            for (i, &id) in s.iter().enumerate() {
                strata.entry(id).or_default().push(i);
            }
        }
        None => {
            strata.insert(0, (0..rows).collect());
        }
    }
    if let Some((&stratum, members)) = strata.iter().find(|(_, m)| m.len() < k) {
        return Err(MicroaggError::StratumTooSmall { stratum, records: members.len(), k });
    }
    let (z, _) = standardise::standardise(&data.values, rows, cols, params.standardisation);
    let all = PointSet::new(cols, &z, data.weights.as_deref());
    let tasks = strata
        .iter()
        .map(|(&stratum, members)| {
            let (points, weights) = all.gather(members);
            StratumTask { stratum, cols, points, weights, params: params.clone() }
        })
        .collect();
    timings.standardise_s = t.elapsed().as_secs_f64();
    let plan = StrataPlan { members: strata.into_values().collect(), standardised: z, timings, start: total };
    Ok((plan, tasks))
}

/// Groups one stratum with the chosen method (and its whole-stratum bound when small enough).
/// Pure: the same task gives the same groups on any executor.
pub fn solve_stratum(task: &StratumTask) -> StratumOutcome {
    let params = &task.params;
    let k = params.k;
    let pts = PointSet::new(task.cols, &task.points, task.weights.as_deref());
    let n = task.points.len() / task.cols;
    let mut o = StratumOutcome {
        groups: Vec::new(),
        step1_sse: None,
        restricted_bound: None,
        optimisation_groups: (0, 0),
        lower_bound: None,
        timings: Timings::default(),
        warnings: Vec::new(),
    };
    let t = Instant::now();
    let mut local = match params.method {
        Method::Mdav => mdav::mdav(&pts, k),
        Method::Vmdav => vmdav::vmdav(&pts, k, params.vmdav_gamma),
        Method::UnivariateOptimal => univariate::univariate_optimal(&pts, k),
        Method::TwoStep => {
            let seed = crate::rng::Rng::for_stream(params.seed, task.stratum).next_u64();
            let out = twostep::two_step(&pts, k, &params.two_step, seed);
            o.timings.partition_s = out.timings.partition_s;
            o.timings.step1_s = out.timings.step1_s;
            o.timings.step2_s = out.timings.step2_s;
            o.timings.improve_s = out.timings.improve_s;
            o.step1_sse = Some(out.step1_sse);
            o.restricted_bound = out.restricted_bound;
            o.optimisation_groups = (out.optimisation_groups, out.bounded_groups);
            o.warnings.extend(out.warnings);
            out.groups
        }
    };
    if params.method != Method::TwoStep {
        o.timings.step1_s = t.elapsed().as_secs_f64();
    }
    let t = Instant::now();
    if n <= params.exact_bound_max_records {
        match colgen::column_generation(&pts, k, &[local.clone()], &params.bound_column_generation) {
            Ok(out) => {
                o.lower_bound = out.lower_bound;
                if params.method == Method::TwoStep && out.sse < pts.partition_sse(&local) {
                    local = out.groups;
                }
            }
            Err(e) => o.warnings.push(format!("stratum {}: lower bound failed: {e}", task.stratum)),
        }
    }
    o.timings.bound_s = t.elapsed().as_secs_f64();
    o.groups = local;
    o
}

/// Merges the strata outcomes (in [`plan_strata`]'s task order), masks the data and verifies
/// k-anonymity. Fails closed on outcomes that do not partition a stratum into groups of ≥ k.
pub fn finish_strata(
    data: &NumericData,
    params: &MicroaggParams,
    plan: StrataPlan,
    outcomes: Vec<StratumOutcome>,
) -> Result<MicroaggResult, MicroaggError> {
    let (rows, cols, k) = (data.rows, data.cols, params.k);
    let mut timings = plan.timings;
    if outcomes.len() != plan.members.len() {
        return Err(MicroaggError::InvalidParameter {
            name: "strata outcomes",
            value: outcomes.len().to_string(),
            reason: "one outcome per stratum is required",
        });
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut warnings = Vec::new();
    let mut step1_sse = None;
    let mut restricted = Some(0.0);
    let mut opt_groups = (0, 0);
    let mut bound = Some(0.0);
    for (members, o) in plan.members.iter().zip(outcomes) {
        let mut seen = vec![false; members.len()];
        for g in &o.groups {
            for &i in g {
                if i >= members.len() || std::mem::replace(&mut seen[i], true) || g.len() < k {
                    return Err(MicroaggError::InvalidParameter {
                        name: "stratum outcome",
                        value: format!("group {g:?}"),
                        reason: "groups must partition the stratum into groups of at least k records",
                    });
                }
            }
        }
        if seen.iter().any(|s| !s) {
            return Err(MicroaggError::InvalidParameter {
                name: "stratum outcome",
                value: format!("{} records", members.len()),
                reason: "groups must cover every record of the stratum",
            });
        }
        timings.partition_s += o.timings.partition_s;
        timings.step1_s += o.timings.step1_s;
        timings.step2_s += o.timings.step2_s;
        timings.improve_s += o.timings.improve_s;
        timings.bound_s += o.timings.bound_s;
        if let Some(s) = o.step1_sse {
            *step1_sse.get_or_insert(0.0) += s;
        }
        if params.method == Method::TwoStep {
            restricted = restricted.zip(o.restricted_bound).map(|(a, b)| a + b);
        }
        opt_groups.0 += o.optimisation_groups.0;
        opt_groups.1 += o.optimisation_groups.1;
        warnings.extend(o.warnings);
        bound = bound.zip(o.lower_bound).map(|(a, b)| a + b);
        groups.extend(o.groups.into_iter().map(|g| g.into_iter().map(|i| members[i]).collect::<Vec<_>>()));
    }
    let all = PointSet::new(cols, &plan.standardised, data.weights.as_deref());

    let t = Instant::now();
    // group ids by first occurrence in input order
    let raw = geometry::labels_from_groups(&groups, rows);
    let mut id_of = vec![usize::MAX; groups.len()];
    let mut next = 0;
    let group: Vec<usize> = raw
        .iter()
        .map(|&g| {
            if id_of[g] == usize::MAX {
                id_of[g] = next;
                next += 1;
            }
            id_of[g]
        })
        .collect();
    let orig = PointSet::new(cols, &data.values, data.weights.as_deref());
    let mut masked = vec![0.0; rows * cols];
    for g in &groups {
        let c = orig.centroid(g);
        for &i in g {
            masked[i * cols..(i + 1) * cols].copy_from_slice(&c);
        }
    }
    let sse = all.partition_sse(&groups);
    let everyone: Vec<usize> = (0..rows).collect();
    let sst = all.group_sse(&everyone);
    let mut hist: BTreeMap<usize, usize> = BTreeMap::new();
    for g in &groups {
        *hist.entry(g.len()).or_default() += 1;
    }
    verify_k_anonymity(&masked, cols, data.strata.as_deref(), k)?;
    timings.verify_s = t.elapsed().as_secs_f64();
    let lower_bound = bound.map(|b: f64| b.min(sse));
    timings.total_s = plan.start.elapsed().as_secs_f64();
    Ok(MicroaggResult {
        method: params.method,
        k,
        group,
        masked,
        n_groups: groups.len(),
        sse,
        sst,
        information_loss: if sst > 0.0 { 100.0 * sse / sst } else { 0.0 },
        step1_sse,
        lower_bound,
        gap_percent: lower_bound.map(|b| if sse > 0.0 { 100.0 * (sse - b) / sse } else { 0.0 }),
        restricted_bound: if params.method == Method::TwoStep { restricted } else { None },
        optimisation_groups: opt_groups,
        group_sizes: hist.into_iter().collect(),
        timings,
        warnings,
    })
}

/// Checks k-anonymity of a masked matrix: every masked row occurs at least `k` times among
/// the rows of its stratum (bitwise equality of the values; −0 equals +0).
pub fn verify_k_anonymity(masked: &[f64], cols: usize, strata: Option<&[u64]>, k: usize) -> Result<(), MicroaggError> {
    let cols = cols.max(1);
    let rows = masked.len() / cols;
    // bit patterns once (−0 → +0), then slices of them as keys: no allocation per row
    let bits: Vec<u64> = masked.iter().map(|x| if *x == 0.0 { 0 } else { x.to_bits() }).collect();
    let key = |i: usize| (strata.map_or(0, |s| s[i]), &bits[i * cols..(i + 1) * cols]);
    let mut count: HashMap<(u64, &[u64]), usize> = HashMap::with_capacity(rows / k.max(1) + 1);
    for i in 0..rows {
        *count.entry(key(i)).or_default() += 1;
    }
    for i in 0..rows {
        let kk = key(i);
        let occurrences = count[&kk];
        if occurrences < k {
            return Err(MicroaggError::NotKAnonymous { row: i, stratum: kk.0, occurrences, k });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// Reads a CASC file from the shared data directory (None when absent).
    fn casc(name: &str) -> Option<NumericData> {
        let path = format!("/work/shared/data/casc_{name}.csv");
        let text = std::fs::read_to_string(&path).ok()?;
        let mut lines = text.lines();
        let cols = lines.next()?.split(',').count();
        let mut values = Vec::new();
        let mut rows = 0;
        for l in lines.filter(|l| !l.trim().is_empty()) {
            values.extend(l.split(',').map(|f| f.trim().parse::<f64>().expect("numeric CSV")));
            rows += 1;
        }
        Some(NumericData::new(rows, cols, values))
    }

    fn synthetic(rows: usize, cols: usize, seed: u64) -> NumericData {
        let mut rng = Rng::new(seed);
        let values = (0..rows * cols)
            .map(|i| rng.normal() * (1.0 + (i % cols) as f64) + if (i / cols).is_multiple_of(3) { 5.0 } else { 0.0 })
            .collect();
        NumericData::new(rows, cols, values)
    }

    /// Every record's masked row equals its group's mean, groups have ≥ k members within a
    /// stratum, and rows stay in input order.
    fn check_result(data: &NumericData, r: &MicroaggResult, k: usize) {
        let cols = data.cols;
        assert_eq!(r.group.len(), data.rows);
        assert_eq!(r.masked.len(), data.rows * cols);
        let mut members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, &g) in r.group.iter().enumerate() {
            members.entry(g).or_default().push(i);
        }
        assert_eq!(members.len(), r.n_groups);
        for m in members.values() {
            assert!(m.len() >= k, "group of {} < k = {k}", m.len());
            if let Some(s) = &data.strata {
                assert!(m.iter().all(|&i| s[i] == s[m[0]]), "group crosses strata");
            }
            for j in 0..cols {
                let (mut num, mut den) = (0.0, 0.0);
                for &i in m {
                    let w = data.weights.as_ref().map_or(1.0, |w| w[i]);
                    num += w * data.values[i * cols + j];
                    den += w;
                }
                for &i in m {
                    assert!((r.masked[i * cols + j] - num / den).abs() <= 1e-9 * (1.0 + (num / den).abs()));
                }
            }
        }
        verify_k_anonymity(&r.masked, cols, data.strata.as_deref(), k).unwrap();
        assert!((r.information_loss - 100.0 * r.sse / r.sst).abs() < 1e-9);
    }

    #[test]
    fn mdav_reproduces_the_census_reference() {
        let Some(data) = casc("census") else {
            eprintln!("skipped: /work/shared/data/casc_census.csv is absent");
            return;
        };
        assert_eq!((data.rows, data.cols), (1080, 13));
        let params = MicroaggParams { k: 3, method: Method::Mdav, ..MicroaggParams::default() };
        let r = microaggregate(&data, &params).unwrap();
        assert!((r.sse - 799.18).abs() < 0.005, "SSE {}", r.sse);
        assert!((r.sst - 14040.0).abs() < 1e-6);
        assert!((r.information_loss - 5.69).abs() < 0.005);
        check_result(&data, &r, 3);
    }

    #[test]
    fn every_method_keeps_k_anonymity_and_row_order_with_and_without_strata() {
        let mut data = synthetic(150, 3, 1);
        for strata in [false, true] {
            data.strata = strata.then(|| (0..150).map(|i| (i % 3) as u64).collect());
            for method in [Method::Mdav, Method::Vmdav, Method::TwoStep] {
                let params = MicroaggParams { k: 4, method, exact_bound_max_records: 0, ..MicroaggParams::default() };
                let r = microaggregate(&data, &params).unwrap();
                check_result(&data, &r, 4);
            }
        }
        let uni = NumericData { strata: Some((0..40).map(|i| (i % 2) as u64).collect()), ..synthetic(40, 1, 2) };
        let params = MicroaggParams { k: 3, method: Method::UnivariateOptimal, ..MicroaggParams::default() };
        check_result(&uni, &microaggregate(&uni, &params).unwrap(), 3);
    }

    #[test]
    fn weights_give_weighted_centroids() {
        let mut data = synthetic(60, 2, 3);
        data.weights = Some((0..60).map(|i| 1.0 + (i % 5) as f64).collect());
        for method in [Method::Mdav, Method::Vmdav, Method::TwoStep] {
            let params = MicroaggParams { k: 3, method, ..MicroaggParams::default() };
            let r = microaggregate(&data, &params).unwrap();
            check_result(&data, &r, 3);
            let lb = r.lower_bound.expect("60 records: whole-file bound");
            assert!(lb <= r.sse + 1e-9);
        }
    }

    #[test]
    fn lower_bound_is_below_every_method_and_two_step_never_worse_than_step1() {
        let data = synthetic(90, 3, 4);
        let mut sses = Vec::new();
        let mut bounds = Vec::new();
        for method in [Method::Mdav, Method::Vmdav, Method::TwoStep] {
            let params = MicroaggParams { k: 3, method, ..MicroaggParams::default() };
            let r = microaggregate(&data, &params).unwrap();
            sses.push(r.sse);
            bounds.push(r.lower_bound.expect("small file: bound"));
            if method == Method::TwoStep {
                assert!(r.sse <= r.step1_sse.unwrap() + 1e-9);
                assert!(r.gap_percent.unwrap() >= 0.0);
            }
        }
        for b in &bounds {
            for s in &sses {
                assert!(b <= &(s + 1e-7), "bound {b} above SSE {s}");
            }
        }
    }

    #[test]
    fn same_seed_same_result() {
        let data = synthetic(400, 4, 5);
        let params = MicroaggParams {
            k: 3,
            exact_bound_max_records: 0,
            two_step: TwoStepParams { macro_group_max: 150, rounds: 2, ..TwoStepParams::default() },
            ..MicroaggParams::default()
        };
        let a = microaggregate(&data, &params).unwrap();
        let b = microaggregate(&data, &params).unwrap();
        assert_eq!((a.group, a.masked, a.sse.to_bits()), (b.group, b.masked, b.sse.to_bits()));
    }

    #[test]
    fn errors_name_the_culprit() {
        let mut data = synthetic(10, 2, 6);
        data.values[7] = f64::NAN;
        let p = MicroaggParams::default();
        assert!(matches!(microaggregate(&data, &p), Err(MicroaggError::NonFinite { row: 3, column: 1, .. })));
        let data = synthetic(10, 2, 6);
        for k in [1, 11] {
            let p = MicroaggParams { k, ..MicroaggParams::default() };
            assert_eq!(microaggregate(&data, &p), Err(MicroaggError::InvalidK { k, records: 10 }));
        }
        let strat = NumericData { strata: Some(vec![1, 1, 1, 1, 1, 1, 1, 7, 7, 1]), ..data.clone() };
        assert_eq!(
            microaggregate(&strat, &MicroaggParams::default()),
            Err(MicroaggError::StratumTooSmall { stratum: 7, records: 2, k: 3 })
        );
        let p = MicroaggParams { method: Method::UnivariateOptimal, ..MicroaggParams::default() };
        assert_eq!(microaggregate(&data, &p), Err(MicroaggError::NeedsOneVariable { cols: 2 }));
    }

    #[test]
    fn constant_columns_are_zero_not_nan() {
        let mut data = synthetic(30, 2, 7);
        for i in 0..30 {
            data.values[i * 2 + 1] = 4.0;
        }
        let r = microaggregate(&data, &MicroaggParams::default()).unwrap();
        assert!(r.sse.is_finite() && (r.sst - 30.0).abs() < 1e-9);
        assert!((0..30).all(|i| r.masked[i * 2 + 1] == 4.0));
    }

    #[test]
    fn verification_catches_a_lonely_row() {
        let masked = [1.0, 1.0, 2.0];
        assert!(verify_k_anonymity(&masked, 1, None, 2).is_err());
        assert!(verify_k_anonymity(&masked[..2], 1, None, 2).is_ok());
        assert!(verify_k_anonymity(&masked[..2], 1, Some(&[0, 1]), 2).is_err());
    }

    #[test]
    fn error_type_stays_small() {
        assert!(std::mem::size_of::<MicroaggError>() <= 64);
    }
}
