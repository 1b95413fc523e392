//! Two-step microaggregation at census scale: bounded partitioning, then exact-ish
//! optimisation of small optimisation groups, then local repair across their boundaries.
//!
//! Why: MDAV is O(n²) and mediocre; strong methods (the GA, column generation) only work on a
//! few dozen records. The two-step (hybrid) method of `papers/microaggregation-genetic-two-
//! step.txt` §4 combines them:
//!
//! * step 1 — cut the file into macro-groups of at most `macro_group_max` records
//!   ([`super::partition`]), run MDAV inside each (so never O(n²) over the whole file), then
//!   run MDAV on the centroids of the k-groups to gather about K/k k-groups (K =
//!   `optimisation_group_records`) into each optimisation group;
//! * step 2 — solve every optimisation group independently with [`solve_optimisation_group`]
//!   (GA seeded with the step-1 groups, then column generation with the GA result, the seed,
//!   MDAV and V-MDAV as starts; the best partition is kept, so never worse than the seed);
//! * then local search ([`super::improve`]) across neighbouring groups of a macro-group.
//!
//! Forming optimisation groups, step 2 and local search are repeated for `rounds` rounds with
//! different optimisation-group sizes, each round seeded with the current partition, so SSE
//! never increases. Optimisation groups are plain data ([`OptimisationGroup`]): they are the
//! unit to ship to cluster executors.
//!
//! Invariants: deterministic for a seed, independent of the thread count (rayon results are
//! collected in task order; each task has its own `Rng` stream); SSE ≤ the step-1 SSE, i.e. no
//! worse than MDAV inside the same macro-groups.

use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::colgen::{column_generation, ColGenParams};
use super::genetic::{genetic, GaParams};
use super::geometry::PointSet;
use super::improve::local_search;
use super::mdav::mdav;
use super::partition::macro_groups;
use super::vmdav::{vmdav, DEFAULT_GAMMA};
use crate::rng::Rng;

/// Settings of the two-step method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TwoStepParams {
    /// Largest macro-group (records) in which MDAV runs (default 5000).
    pub macro_group_max: usize,
    /// Target records K per optimisation group (default 24, as the GA paper's K = 12..27);
    /// ⌊K/k⌉ k-groups (at least 2) are gathered into each.
    pub optimisation_group_records: usize,
    /// Strata with more records than this skip the GA and column generation (step 2) and get
    /// only local search after step 1 (default 500 000): column generation costs about 0.1 s
    /// per optimisation group on one core, too slow for 10⁷ records on a small machine. Raise
    /// it when the optimisation groups are shipped to a cluster.
    pub step2_max_records: usize,
    /// Optimisation rounds (default 3); round r uses a different optimisation-group size.
    pub rounds: usize,
    /// GA settings, `None` to skip the GA.
    pub genetic: Option<GaParams>,
    /// Column-generation settings, `None` to skip column generation.
    pub column_generation: Option<ColGenParams>,
    /// Passes of local search after each round (default 30; 0 disables it).
    pub improve_passes: usize,
    /// Neighbouring groups examined per group by local search (default 6).
    pub neighbours: usize,
    /// V-MDAV gain factor used for the extra column-generation start (default 0.2).
    pub vmdav_gamma: f64,
}

impl Default for TwoStepParams {
    fn default() -> Self {
        Self {
            macro_group_max: 5000,
            optimisation_group_records: 24,
            step2_max_records: 500_000,
            rounds: 3,
            genetic: Some(GaParams::default()),
            column_generation: Some(ColGenParams::default()),
            improve_passes: 30,
            neighbours: 6,
            vmdav_gamma: DEFAULT_GAMMA,
        }
    }
}

/// One optimisation group as plain data: what a cluster executor needs to improve it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptimisationGroup {
    /// Coordinates per record (standardised units).
    pub dim: usize,
    /// Row-major coordinates of the group's records.
    pub coords: Vec<f64>,
    /// Optional record weights.
    pub weights: Option<Vec<f64>>,
    /// Minimum group size.
    pub k: usize,
    /// Seed partition (local indices), e.g. the step-1 MDAV groups.
    pub seed_groups: Vec<Vec<usize>>,
}

/// Which solver produced a [`GroupSolution`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GroupSolver {
    /// Nothing beat the seed.
    Seed,
    /// The genetic algorithm.
    Genetic,
    /// Column generation (rounding or the final MIP).
    ColumnGeneration,
}

/// Result of [`solve_optimisation_group`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupSolution {
    /// Best partition (local indices); SSE ≤ the seed's.
    pub groups: Vec<Vec<usize>>,
    /// Its SSE.
    pub sse: f64,
    /// SSE of the seed partition.
    pub seed_sse: f64,
    /// Certified lower bound on the optimal SSE of this group alone (column generation with
    /// exact pricing), if obtained.
    pub lower_bound: Option<f64>,
    /// Which solver produced `groups`.
    pub solver: GroupSolver,
    /// Column-generation failure, if any (the group then keeps the GA/seed result).
    pub warning: Option<String>,
}

/// Optimises one optimisation group: GA seeded with `seed_groups`, then column generation
/// started from the GA result, the seed, MDAV and V-MDAV; returns the best. Pure and
/// deterministic for (`group`, `params`, `seed`, `stream`).
pub fn solve_optimisation_group(
    group: &OptimisationGroup,
    params: &TwoStepParams,
    seed: u64,
    stream: u64,
) -> GroupSolution {
    let pts = PointSet::new(group.dim, &group.coords, group.weights.as_deref());
    let k = group.k;
    let seed_sse = pts.partition_sse(&group.seed_groups);
    let mut best = (seed_sse, group.seed_groups.clone(), GroupSolver::Seed);
    if let Some(ga) = &params.genetic {
        let mut rng = Rng::for_stream(seed, stream);
        let g = genetic(&pts, k, &group.seed_groups, ga, &mut rng);
        let sse = pts.partition_sse(&g);
        if sse < best.0 - 1e-12 {
            best = (sse, g, GroupSolver::Genetic);
        }
    }
    let mut lower_bound = None;
    let mut warning = None;
    if let Some(cg) = &params.column_generation {
        let mut starts = vec![best.1.clone()];
        if best.2 != GroupSolver::Seed {
            starts.push(group.seed_groups.clone());
        }
        if pts.len() >= 2 * k {
            starts.push(mdav(&pts, k));
            starts.push(vmdav(&pts, k, params.vmdav_gamma));
        }
        match column_generation(&pts, k, &starts, cg) {
            Ok(out) => {
                lower_bound = out.lower_bound;
                if out.sse < best.0 - 1e-12 {
                    best = (out.sse, out.groups, GroupSolver::ColumnGeneration);
                }
            }
            Err(e) => warning = Some(e.to_string()),
        }
    }
    GroupSolution { groups: best.1, sse: best.0, seed_sse, lower_bound, solver: best.2, warning }
}

/// Wall-clock seconds per step of [`two_step`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StepTimings {
    /// Cutting into macro-groups.
    pub partition_s: f64,
    /// MDAV inside macro-groups.
    pub step1_s: f64,
    /// Forming and solving optimisation groups (all rounds).
    pub step2_s: f64,
    /// Local search (all rounds).
    pub improve_s: f64,
}

/// What [`two_step`] produced.
#[derive(Debug, Clone, PartialEq)]
pub struct TwoStepOutcome {
    /// Final partition (indices into the points).
    pub groups: Vec<Vec<usize>>,
    /// SSE after step 1 (MDAV inside the macro-groups): the final SSE is never above it.
    pub step1_sse: f64,
    /// Number of macro-groups.
    pub macro_groups: usize,
    /// Optimisation groups solved in the last round.
    pub optimisation_groups: usize,
    /// Of those, how many got a certified lower bound.
    pub bounded_groups: usize,
    /// Sum of the last round's group bounds when every group got one: a lower bound for the
    /// problem RESTRICTED to partitions refining those optimisation groups — not for the file.
    pub restricted_bound: Option<f64>,
    /// Step timings.
    pub timings: StepTimings,
    /// Non-fatal problems (e.g. a column-generation failure in a group).
    pub warnings: Vec<String>,
}

/// Optimisation-group size (in k-groups) for round `round`: K plus a per-round offset in
/// records, so successive rounds cut the file differently.
fn round_size(records: usize, k: usize, round: usize) -> usize {
    const OFFSETS: [isize; 5] = [0, 9, -6, 6, -3];
    let target = (records as isize + OFFSETS[round % OFFSETS.len()]).max(1) as f64;
    ((target / k as f64).round() as usize).max(2)
}

/// Gathers the groups of one macro-group into optimisation groups (MDAV on group centroids).
fn form_optimisation_groups(
    points: &PointSet,
    groups: &[Vec<usize>],
    k: usize,
    per_group: usize,
) -> Vec<(Vec<usize>, OptimisationGroup)> {
    let dim = points.dim;
    let mut cent = Vec::with_capacity(groups.len() * dim);
    let mut wts = Vec::with_capacity(groups.len());
    for g in groups {
        cent.extend(points.centroid(g));
        wts.push(g.iter().map(|&i| points.weight(i)).sum::<f64>());
    }
    let cps = PointSet::new(dim, &cent, Some(&wts));
    mdav(&cps, per_group)
        .into_iter()
        .map(|cluster| {
            let mut records = Vec::new();
            let mut seed_groups = Vec::with_capacity(cluster.len());
            for gi in cluster {
                let start = records.len();
                records.extend_from_slice(&groups[gi]);
                seed_groups.push((start..records.len()).collect());
            }
            let (coords, weights) = points.gather(&records);
            (records, OptimisationGroup { dim, coords, weights, k, seed_groups })
        })
        .collect()
}

/// Runs the two-step method on `points` (n ≥ k ≥ 2) and returns the partition.
pub fn two_step(points: &PointSet, k: usize, params: &TwoStepParams, seed: u64) -> TwoStepOutcome {
    let n = points.len();
    let mut timings = StepTimings::default();
    let t = Instant::now();
    let macros = macro_groups(points, (0..n).collect(), k, params.macro_group_max);
    timings.partition_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let mut parts: Vec<Vec<Vec<usize>>> = macros
        .par_iter()
        .map(|members| {
            let (c, w) = points.gather(members);
            let local = PointSet::new(points.dim, &c, w.as_deref());
            mdav(&local, k).into_iter().map(|g| g.into_iter().map(|i| members[i]).collect()).collect()
        })
        .collect();
    let step1_sse: f64 = parts.iter().map(|p| points.partition_sse(p)).sum();
    timings.step1_s = t.elapsed().as_secs_f64();

    let mut warnings = Vec::new();
    let (mut optimisation_groups, mut bounded_groups, mut restricted_bound) = (0, 0, None);
    let improve = |parts: &mut Vec<Vec<Vec<usize>>>, timings: &mut StepTimings| {
        let t = Instant::now();
        if params.improve_passes > 0 {
            parts.par_iter_mut().for_each(|groups| {
                local_search(points, groups, k, params.improve_passes, params.neighbours);
            });
        }
        timings.improve_s += t.elapsed().as_secs_f64();
    };
    let solving = (params.genetic.is_some() || params.column_generation.is_some()) && n <= params.step2_max_records;
    if !solving && n > params.step2_max_records {
        warnings.push(format!(
            "{n} records > step2_max_records = {}: step 2 (GA, column generation) skipped, local search only",
            params.step2_max_records
        ));
    }
    for round in 0..params.rounds {
        if !solving {
            break;
        }
        let t = Instant::now();
        let per = round_size(params.optimisation_group_records, k, round);
        let tasks: Vec<(usize, Vec<usize>, OptimisationGroup)> = parts
            .par_iter()
            .enumerate()
            .map(|(mi, groups)| {
                form_optimisation_groups(points, groups, k, per)
                    .into_iter()
                    .map(|(r, g)| (mi, r, g))
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
            .into_iter()
            .flatten()
            .collect();
        let solved: Vec<GroupSolution> = tasks
            .par_iter()
            .enumerate()
            .map(|(ti, (_, _, g))| solve_optimisation_group(g, params, seed, ((round as u64) << 40) | ti as u64))
            .collect();
        let mut next: Vec<Vec<Vec<usize>>> = vec![Vec::new(); parts.len()];
        let mut bound_sum = 0.0;
        bounded_groups = 0;
        for ((mi, records, _), sol) in tasks.iter().zip(&solved) {
            for g in &sol.groups {
                next[*mi].push(g.iter().map(|&i| records[i]).collect());
            }
            if let Some(b) = sol.lower_bound {
                bounded_groups += 1;
                bound_sum += b;
            }
            if let Some(w) = &sol.warning {
                warnings.push(format!("optimisation group of {} records: {w}", records.len()));
            }
        }
        optimisation_groups = tasks.len();
        restricted_bound = (bounded_groups == tasks.len()).then_some(bound_sum);
        parts = next;
        timings.step2_s += t.elapsed().as_secs_f64();
        improve(&mut parts, &mut timings);
    }
    if !solving || params.rounds == 0 {
        improve(&mut parts, &mut timings);
    }
    TwoStepOutcome {
        groups: parts.into_iter().flatten().collect(),
        step1_sse,
        macro_groups: macros.len(),
        optimisation_groups,
        bounded_groups,
        restricted_bound,
        timings,
        warnings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::microagg::geometry::is_k_partition;

    fn cloud(n: usize, d: usize, seed: u64) -> Vec<f64> {
        let mut rng = Rng::new(seed);
        (0..n * d).map(|i| rng.normal() * (1.0 + (i % d) as f64)).collect()
    }

    #[test]
    fn never_worse_than_step1_and_deterministic() {
        let c = cloud(500, 3, 1);
        let p = PointSet::new(3, &c, None);
        let params = TwoStepParams { macro_group_max: 200, rounds: 2, ..TwoStepParams::default() };
        let a = two_step(&p, 3, &params, 7);
        assert!(a.macro_groups >= 3);
        let sse = p.partition_sse(&a.groups);
        assert!(sse <= a.step1_sse + 1e-9, "{sse} > {}", a.step1_sse);
        assert!(is_k_partition(&a.groups, 500, 3, 5));
        let b = two_step(&p, 3, &params, 7);
        assert_eq!(a.groups, b.groups);
        // same result on a single thread
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let c = pool.install(|| two_step(&p, 3, &params, 7));
        assert_eq!(a.groups, c.groups);
    }

    #[test]
    fn group_solver_never_worse_than_its_seed() {
        let c = cloud(30, 2, 5);
        let p = PointSet::new(2, &c, None);
        let seed_groups = mdav(&p, 3);
        let g = OptimisationGroup { dim: 2, coords: c.clone(), weights: None, k: 3, seed_groups };
        let s = solve_optimisation_group(&g, &TwoStepParams::default(), 1, 0);
        assert!(s.sse <= s.seed_sse + 1e-12);
        let lb = s.lower_bound.expect("30 points: exact pricing completes");
        assert!(lb <= s.sse + 1e-9);
    }
}
