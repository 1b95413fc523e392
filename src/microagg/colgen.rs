//! Column generation for microaggregation: a primal heuristic that also proves a lower bound.
//!
//! Why: Gentile, Spagnolo-Arrizabalaga & Castro (`papers/microaggregation-column-
//! generation.txt`) write microaggregation as set partitioning over clusters of size k..2k − 1
//! with cost w_C = SSE(C) (eq. 8–9). Its LP relaxation, solved by column generation, bounds
//! the optimal SSE from below; rounding its fractional solutions (SimpleRounding,
//! RoundingMST) gives partitions far better than MDAV. Here the final master is also solved as
//! a MIP over all generated columns (exact over those columns), so the result is never worse
//! than any starting partition.
//!
//! Lower bound: for any duals λ, optimal SSE ≥ Σλ + ⌊m/k⌋·min(0, min_C (w_C − Σ_{v∈C} λ_v))
//! (a feasible partition has at most ⌊m/k⌋ clusters). It is reported only when the minimum
//! reduced cost was certified by the exact pricing search (complete enumeration with pruning),
//! so the bound is rigorous even if the LP stopped early; at convergence it equals the LP
//! value. Weights: w_C is the weighted SSE; the bound stays valid (splitting a group of ≥ 2k
//! records never increases weighted SSE).
//!
//! Invariants: deterministic (no time limit in the LP loop; the MIP time limit is a safety
//! net whose incumbent is still a valid partition); the result is a partition of all points.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::geometry::{dist2, is_k_partition, PointSet};
use super::mdav::mdav;
use super::pricing::Pricer;
use crate::lp::{self, Direction, LinearProgram, LpError, SolveOptions};

/// Settings of one column-generation run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ColGenParams {
    /// Maximum number of master LP solves (default 300).
    pub max_iterations: usize,
    /// Node limit of one exact pricing search per cluster size (default 3 000 000); when it
    /// is hit, no lower bound is certified.
    pub node_limit: u64,
    /// Total exact-pricing nodes for the whole run (default 30 000 000): once spent, pricing is
    /// heuristic only and no bound is certified. Keeps the cost per group bounded and
    /// deterministic (no wall-clock limit).
    pub node_budget: u64,
    /// Columns kept per exact pricing search (default 10).
    pub columns_per_size: usize,
    /// Time limit of the final MIP over the generated columns (default 30 s).
    pub mip_time_limit_s: f64,
    /// Reduced costs above `-tolerance` count as non-negative (default 1e-9).
    pub tolerance: f64,
}

impl Default for ColGenParams {
    fn default() -> Self {
        Self {
            max_iterations: 300,
            node_limit: 3_000_000,
            node_budget: 30_000_000,
            columns_per_size: 10,
            mip_time_limit_s: 30.0,
            tolerance: 1e-9,
        }
    }
}

/// What one column-generation run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ColGenOutcome {
    /// Best partition found (local indices), never worse than the best start.
    pub groups: Vec<Vec<usize>>,
    /// Its SSE.
    pub sse: f64,
    /// SSE of the best starting partition.
    pub start_sse: f64,
    /// Certified lower bound on the optimal SSE of these points, when exact pricing completed.
    pub lower_bound: Option<f64>,
    /// Value of the last master LP.
    pub lp_value: f64,
    /// Master LP solves.
    pub iterations: usize,
    /// Columns generated in total.
    pub columns: usize,
    /// Whether pricing proved that no negative reduced-cost column is left.
    pub converged: bool,
}

/// Why column generation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ColGenError {
    /// No starting partition was given (one is needed for a feasible master).
    #[error("column generation needs at least one starting partition")]
    NoStart,
    /// A starting partition does not cover the points exactly once with groups of ≥ k.
    #[error("starting partition {index} is not a k-partition of the {points} points")]
    BadStart {
        /// Position of the culprit in `starts`.
        index: usize,
        /// Number of points.
        points: usize,
    },
    /// HiGHS failed on the master problem.
    #[error("HiGHS failed on the {stage}: {source}")]
    Lp {
        /// "master LP" or "final MIP".
        stage: &'static str,
        /// The adapter's error.
        #[source]
        source: LpError,
    },
}

struct Columns {
    members: Vec<Vec<usize>>,
    cost: Vec<f64>,
    seen: HashSet<Vec<usize>>,
}

impl Columns {
    fn add(&mut self, points: &PointSet, mut g: Vec<usize>) -> bool {
        g.sort_unstable();
        if self.seen.contains(&g) {
            return false;
        }
        self.cost.push(points.group_sse(&g));
        self.seen.insert(g.clone());
        self.members.push(g);
        true
    }

    fn master(&self, m: usize, integer: bool) -> LinearProgram {
        let mut lp = LinearProgram::new(Direction::Minimise);
        let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::new(); m];
        for (j, (g, &c)) in self.members.iter().zip(&self.cost).enumerate() {
            if integer {
                lp.add_integer_column(c, 0.0, 1.0);
            } else {
                lp.add_column(c, 0.0, f64::INFINITY);
            }
            for &v in g {
                rows[v].push((j, 1.0));
            }
        }
        for r in rows {
            lp.add_row(1.0, 1.0, r);
        }
        lp
    }
}

/// Runs column generation on `points` with minimum group size `k`, starting from `starts`
/// (e.g. MDAV and V-MDAV partitions; every group of each becomes an initial column).
pub fn column_generation(
    points: &PointSet,
    k: usize,
    starts: &[Vec<Vec<usize>>],
    params: &ColGenParams,
) -> Result<ColGenOutcome, ColGenError> {
    let m = points.len();
    if starts.is_empty() {
        return Err(ColGenError::NoStart);
    }
    let mut cols = Columns { members: Vec::new(), cost: Vec::new(), seen: HashSet::new() };
    let mut best: Option<(f64, Vec<Vec<usize>>)> = None;
    for (index, s) in starts.iter().enumerate() {
        if !is_k_partition(s, m, k, usize::MAX) {
            return Err(ColGenError::BadStart { index, points: m });
        }
        let sse = points.partition_sse(s);
        if best.as_ref().is_none_or(|b| sse < b.0) {
            best = Some((sse, s.clone()));
        }
        for g in s {
            cols.add(points, g.clone());
        }
    }
    let (mut best_sse, mut best_groups) = best.expect("at least one start");
    let start_sse = best_sse;
    let consider = |groups: Vec<Vec<usize>>, best_sse: &mut f64, best_groups: &mut Vec<Vec<usize>>| {
        if is_k_partition(&groups, m, k, usize::MAX) {
            let sse = points.partition_sse(&groups);
            if sse < *best_sse - 1e-12 {
                *best_sse = sse;
                *best_groups = groups;
            }
        }
    };
    let pricer = Pricer::new(*points);
    let max_clusters = (m / k) as f64;
    let sizes: Vec<usize> = (k..=(2 * k - 1).min(m)).collect();
    let mut lower_bound: Option<f64> = None;
    let mut lp_value = f64::NAN;
    let mut converged = false;
    let mut budget = params.node_budget;
    let mut iterations = 0;
    while iterations < params.max_iterations {
        iterations += 1;
        crate::progress::solver_progress("column generation", || {
            let bound = lower_bound.map_or_else(|| "none yet".to_string(), |b| format!("{b:.4}"));
            format!(
                "iteration {iterations}, {} columns, best SSE {best_sse:.4}, LP {lp_value:.4}, lower bound {bound}",
                cols.members.len()
            )
        });
        let sol = lp::solve(&cols.master(m, false), &SolveOptions { always_presolve: true, ..Default::default() })
            .map_err(|source| ColGenError::Lp { stage: "master LP", source })?;
        lp_value = sol.objective;
        let x = &sol.columns;
        let lambda = &sol.row_duals;
        let integral = x.iter().all(|&v| !(1e-6..=1.0 - 1e-6).contains(&v));
        if integral {
            let groups = (0..x.len()).filter(|&j| x[j] > 0.5).map(|j| cols.members[j].clone()).collect();
            consider(groups, &mut best_sse, &mut best_groups);
        } else {
            consider(simple_rounding(points, k, &cols.members, x), &mut best_sse, &mut best_groups);
            for g in rounding_mst(points, k, &cols.members, x) {
                consider(g, &mut best_sse, &mut best_groups);
            }
        }
        let mut added = 0;
        for &eta in &sizes {
            for c in pricer.heuristic(lambda, eta, params.tolerance) {
                added += usize::from(cols.add(points, c.members));
            }
        }
        if added == 0 {
            let mut complete = true;
            let mut min_rc: f64 = 0.0;
            for &eta in &sizes {
                let limit = params.node_limit.min(budget);
                let ex = pricer.exact(lambda, eta, params.tolerance, params.columns_per_size, limit);
                budget = budget.saturating_sub(ex.nodes);
                complete &= ex.complete;
                min_rc = min_rc.min(ex.min_reduced_cost);
                for c in ex.found {
                    added += usize::from(cols.add(points, c.members));
                }
            }
            if complete {
                let bound = lambda.iter().sum::<f64>() + max_clusters * min_rc.min(0.0);
                lower_bound = Some(lower_bound.map_or(bound, |b: f64| b.max(bound)));
            }
            if added == 0 {
                converged = complete;
                break;
            }
        }
    }
    let mip = lp::solve(
        &cols.master(m, true),
        &SolveOptions { time_limit_s: Some(params.mip_time_limit_s), mip_rel_gap: Some(1e-7), ..Default::default() },
    );
    match mip {
        Ok(sol) => {
            let groups =
                (0..sol.columns.len()).filter(|&j| sol.columns[j] > 0.5).map(|j| cols.members[j].clone()).collect();
            consider(groups, &mut best_sse, &mut best_groups);
        }
        Err(LpError::TimeLimitNoSolution) => {}
        Err(source) => return Err(ColGenError::Lp { stage: "final MIP", source }),
    }
    // A bound can never exceed a feasible value; clamp rounding noise.
    let lower_bound = lower_bound.map(|b| b.min(best_sse));
    Ok(ColGenOutcome {
        groups: best_groups,
        sse: best_sse,
        start_sse,
        lower_bound,
        lp_value,
        iterations,
        columns: cols.members.len(),
        converged,
    })
}

/// Gives each leftover point to the group with the nearest centroid (`AddRemainingNodes`).
fn add_remaining(points: &PointSet, groups: &mut [Vec<usize>], left: &[usize]) {
    let centroids: Vec<Vec<f64>> = groups.iter().map(|g| points.centroid(g)).collect();
    for &i in left {
        let best = (0..groups.len())
            .min_by(|&a, &b| {
                dist2(points.row(i), &centroids[a]).total_cmp(&dist2(points.row(i), &centroids[b])).then(a.cmp(&b))
            })
            .expect("at least one group");
        groups[best].push(i);
    }
}

/// The paper's `SimpleRoundingHeuristic`: take clusters by decreasing x_C while at least 2k
/// points are unassigned; k..2k − 1 leftovers form a group, ≥ 2k leftovers (columns ran out)
/// are grouped by MDAV, fewer than k join the nearest centroid.
pub fn simple_rounding(points: &PointSet, k: usize, members: &[Vec<usize>], x: &[f64]) -> Vec<Vec<usize>> {
    let m = points.len();
    let mut order: Vec<usize> = (0..x.len()).filter(|&j| x[j] > 1e-9).collect();
    order.sort_by(|&a, &b| x[b].total_cmp(&x[a]).then(a.cmp(&b)));
    let mut used = vec![false; m];
    let mut left = m;
    let mut groups = Vec::new();
    for j in order {
        if left < 2 * k {
            break;
        }
        if members[j].iter().all(|&v| !used[v]) {
            for &v in &members[j] {
                used[v] = true;
            }
            left -= members[j].len();
            groups.push(members[j].clone());
        }
    }
    let rest: Vec<usize> = (0..m).filter(|&v| !used[v]).collect();
    finish(points, k, groups, rest)
}

fn finish(points: &PointSet, k: usize, mut groups: Vec<Vec<usize>>, rest: Vec<usize>) -> Vec<Vec<usize>> {
    if rest.len() >= 2 * k {
        let (c, w) = points.gather(&rest);
        let sub = PointSet::new(points.dim, &c, w.as_deref());
        for g in mdav(&sub, k) {
            groups.push(g.into_iter().map(|i| rest[i]).collect());
        }
    } else if rest.len() >= k || (groups.is_empty() && !rest.is_empty()) {
        groups.push(rest);
    } else if !rest.is_empty() {
        add_remaining(points, &mut groups, &rest);
    }
    groups
}

/// The paper's `RoundingMSTHeuristic`: z_ij = Σ_{C ∋ i,j} x_C, glue clusters along edges of
/// decreasing z_ij while the union has at most `max_cl` points, for max_cl = k + 1..2k − 1.
/// Clusters left below k are dissolved into the nearest groups (a small repair); one
/// candidate partition per max_cl.
pub fn rounding_mst(points: &PointSet, k: usize, members: &[Vec<usize>], x: &[f64]) -> Vec<Vec<Vec<usize>>> {
    let m = points.len();
    let mut z = vec![0.0; m * m];
    for (g, &v) in members.iter().zip(x) {
        if v > 1e-9 {
            for (a, &i) in g.iter().enumerate() {
                for &j in &g[a + 1..] {
                    z[i * m + j] += v;
                }
            }
        }
    }
    let mut edges: Vec<(usize, usize)> = Vec::new();
    for i in 0..m {
        for j in i + 1..m {
            if z[i * m + j] > 1e-9 {
                edges.push((i, j));
            }
        }
    }
    edges.sort_by(|a, b| z[b.0 * m + b.1].total_cmp(&z[a.0 * m + a.1]).then(a.cmp(b)));
    let mut out = Vec::new();
    for max_cl in (k + 1)..=(2 * k - 1).max(k + 1) {
        let mut parent: Vec<usize> = (0..m).collect();
        let mut size = vec![1usize; m];
        fn find(p: &mut [usize], mut i: usize) -> usize {
            while p[i] != i {
                p[i] = p[p[i]];
                i = p[i];
            }
            i
        }
        for &(i, j) in &edges {
            let (a, b) = (find(&mut parent, i), find(&mut parent, j));
            if a != b && size[a] + size[b] <= max_cl {
                let (a, b) = if a < b { (a, b) } else { (b, a) };
                parent[b] = a;
                size[a] += size[b];
            }
        }
        let mut by_root: Vec<Vec<usize>> = vec![Vec::new(); m];
        for i in 0..m {
            let r = find(&mut parent, i);
            by_root[r].push(i);
        }
        let (big, small): (Vec<Vec<usize>>, Vec<Vec<usize>>) =
            by_root.into_iter().filter(|g| !g.is_empty()).partition(|g| g.len() >= k);
        let rest: Vec<usize> = small.into_iter().flatten().collect();
        out.push(finish(points, k, big, rest));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::microagg::vmdav::vmdav;
    use crate::rng::Rng;

    #[test]
    fn duals_follow_the_reduced_cost_convention() {
        // reduced cost c − Σλ must vanish on basic columns
        let mut rng = Rng::new(2);
        let coords: Vec<f64> = (0..24).map(|_| rng.normal()).collect();
        let p = PointSet::new(2, &coords, None);
        let start = mdav(&p, 3);
        let mut cols = Columns { members: Vec::new(), cost: Vec::new(), seen: HashSet::new() };
        for g in start {
            cols.add(&p, g);
        }
        let pr = Pricer::new(p);
        for c in pr.heuristic(&[1.0; 12], 3, 0.0) {
            cols.add(&p, c.members);
        }
        let sol = lp::solve(&cols.master(12, false), &SolveOptions::default()).unwrap();
        for (j, g) in cols.members.iter().enumerate() {
            let rc = cols.cost[j] - g.iter().map(|&v| sol.row_duals[v]).sum::<f64>();
            assert!(rc > -1e-7, "negative reduced cost at an LP optimum: {rc}");
            if sol.columns[j] > 1e-7 {
                assert!(rc.abs() < 1e-7, "basic column with reduced cost {rc}");
            }
        }
    }

    #[test]
    fn bound_below_optimum_and_solution_optimal_on_small_sets() {
        let mut rng = Rng::new(9);
        for trial in 0..6 {
            let m = 10 + trial % 3;
            let coords: Vec<f64> = (0..m * 2).map(|_| rng.normal() * 2.0).collect();
            let w: Vec<f64> = (0..m).map(|_| 0.5 + rng.next_f64()).collect();
            let p = PointSet::new(2, &coords, if trial % 2 == 1 { Some(&w[..]) } else { None });
            let k = 2 + trial % 2;
            let starts = vec![mdav(&p, k), vmdav(&p, k, 0.2)];
            let out = column_generation(&p, k, &starts, &ColGenParams::default()).unwrap();
            let opt = crate::microagg::geometry::brute_force_sse(&p, k);
            let lb = out.lower_bound.expect("exact pricing completes on tiny sets");
            assert!(lb <= opt + 1e-7, "bound {lb} above optimum {opt}");
            assert!(out.sse >= opt - 1e-9 && out.sse <= out.start_sse + 1e-12);
            assert!(is_k_partition(&out.groups, m, k, 2 * k - 1));
            assert!((out.sse - opt).abs() < 1e-7, "trial {trial}: {} vs optimum {opt}", out.sse);
            assert!(out.converged);
        }
    }
}
