//! Column generation for step 1 (thesis §4.3–4.4) on small blocks.
//!
//! Master: min Σ_C w_C x_C s.t. Σ_{C∋i} x_C ≥ 1 for every row i, over clusters C of size
//! k..2k−1 with w_C the within-cluster pairwise Hamming weight. The restricted master LP is
//! solved with `crate::lp`; its duals u_i (≥ 0) price new clusters by reduced cost
//! w_C − Σ_{i∈C} u_i with the greedy pricing (thesis Algorithm 5) and, when it fails, the
//! enumeration pricing (Algorithm 6). Pricing is heuristic: the final LP value is a lower
//! bound only when no negative column exists.
//!
//! Integer solution (thesis Algorithm 7 with the auxiliary problem (4.4.7) solved
//! heuristically): repeatedly add, among unassigned rows, the cluster minimising
//! w_C − Σ_{i∈C} (γ u_i + λ), for each (γ, λ) in the options; leftovers join their best
//! cluster and clusters of ≥ 2k are split. Also the restricted master is solved as a
//! set-partitioning MIP. The best of these and the starting clustering is returned, so the
//! result is never worse than the greedy start.

use std::collections::HashSet;

use super::cluster::{cluster_weight, hamming, place_leftover, row, split_oversized};
use super::local::local_search;
use super::{NominalError, NominalOptions};
use crate::lp::{self, Direction, LinearProgram, SolveOptions};

/// Outcome of column generation on one block.
#[derive(Debug, Clone, PartialEq)]
pub struct ColgenOutcome {
    /// Best clustering found (local row indices).
    pub clusters: Vec<Vec<usize>>,
    /// Restricted-master LP value at termination.
    pub lp_value: f64,
    /// Number of generated columns.
    pub columns: usize,
    /// Whether the last pricing round found no negative column (heuristic pricing).
    pub converged: bool,
}

struct Dist {
    n: usize,
    d: Vec<u8>,
}

impl Dist {
    fn new(codes: &[u32], m: usize) -> Self {
        let n = codes.len() / m;
        let mut d = vec![0u8; n * n];
        for i in 0..n {
            for l in i + 1..n {
                let v = hamming(row(codes, m, i), row(codes, m, l)).min(255) as u8;
                d[i * n + l] = v;
                d[l * n + i] = v;
            }
        }
        Self { n, d }
    }
    #[inline]
    fn get(&self, i: usize, l: usize) -> f64 {
        self.d[i * self.n + l] as f64
    }
    fn weight(&self, c: &[usize]) -> f64 {
        let mut w = 0.0;
        for (a, &i) in c.iter().enumerate() {
            for &l in &c[a + 1..] {
                w += self.get(i, l);
            }
        }
        w
    }
}

/// Greedy growth from `start` over `pool` with vertex rewards `reward`: add the row with the
/// smallest (distance sum to C − reward) until k, keep extending to 2k−1 and return the prefix
/// with the smallest w_C − Σ reward (thesis Algorithm 5, lines 4–16).
fn grow(dist: &Dist, k: usize, start: usize, pool: &[usize], reward: &[f64]) -> (Vec<usize>, f64) {
    let mut c = vec![start];
    let mut in_c: HashSet<usize> = HashSet::from([start]);
    let mut acc: Vec<f64> = pool.iter().map(|&l| dist.get(start, l)).collect();
    let mut val = -reward[start];
    let mut best = (c.clone(), f64::INFINITY);
    while c.len() < 2 * k - 1 {
        let mut pick: Option<(f64, usize)> = None;
        for (p, &l) in pool.iter().enumerate() {
            if in_c.contains(&l) {
                continue;
            }
            let g = acc[p] - reward[l];
            if pick.is_none_or(|(bg, _)| g < bg - 1e-12) {
                pick = Some((g, p));
            }
        }
        let Some((g, p)) = pick else { break };
        let l = pool[p];
        c.push(l);
        in_c.insert(l);
        val += g;
        for (q, &x) in pool.iter().enumerate() {
            acc[q] += dist.get(l, x);
        }
        if c.len() >= k && val < best.1 - 1e-12 {
            best = (c.clone(), val);
        }
    }
    best
}

fn pricing_greedy(dist: &Dist, k: usize, u: &[f64], n_max: usize) -> Vec<Vec<usize>> {
    let mut free: Vec<usize> = (0..dist.n).collect();
    let mut out = Vec::new();
    while free.len() >= k && out.len() < n_max {
        let start = *free.iter().max_by(|&&a, &&b| u[a].total_cmp(&u[b]).then(b.cmp(&a))).expect("nonempty");
        let (c, rc) = grow(dist, k, start, &free, u);
        if c.len() < k || rc >= -1e-9 {
            break;
        }
        free.retain(|x| !c.contains(x));
        out.push(c);
    }
    out
}

fn pricing_enumeration(dist: &Dist, k: usize, u: &[f64], tries: usize) -> Option<Vec<usize>> {
    let n = dist.n;
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| u[b].total_cmp(&u[a]).then(a.cmp(&b)));
    for &i in order.iter().take(tries) {
        let mut near: Vec<usize> = (0..n).filter(|&l| l != i).collect();
        near.sort_by(|&a, &b| dist.get(i, a).total_cmp(&dist.get(i, b)).then(a.cmp(&b)));
        near.truncate(2 * k - 2);
        let r = near.len();
        for mask in 1u32..(1u32 << r) {
            let sz = mask.count_ones() as usize;
            if sz + 1 < k || sz + 1 > 2 * k - 1 {
                continue;
            }
            let mut c = vec![i];
            c.extend((0..r).filter(|&b| mask >> b & 1 == 1).map(|b| near[b]));
            let rc = dist.weight(&c) - c.iter().map(|&x| u[x]).sum::<f64>();
            if rc < -1e-9 {
                return Some(c);
            }
        }
    }
    None
}

/// Thesis Algorithm 7 with the auxiliary problem solved by greedy growth from every unassigned
/// start row.
fn dual_rounding(
    dist: &Dist,
    codes: &[u32],
    m: usize,
    k: usize,
    u: &[f64],
    gamma: f64,
    lambda: f64,
) -> Vec<Vec<usize>> {
    let reward: Vec<f64> = u.iter().map(|&x| gamma * x + lambda).collect();
    let mut free: Vec<usize> = (0..dist.n).collect();
    let mut clusters = Vec::new();
    while free.len() >= k {
        let mut best: Option<(Vec<usize>, f64)> = None;
        for &s in &free {
            let (c, v) = grow(dist, k, s, &free, &reward);
            if c.len() >= k && best.as_ref().is_none_or(|b| v < b.1 - 1e-12) {
                best = Some((c, v));
            }
        }
        let Some((c, _)) = best else { break };
        free.retain(|x| !c.contains(x));
        clusters.push(c);
    }
    for r in free {
        place_leftover(codes, m, k, &mut clusters, r);
    }
    split_oversized(codes, m, k, &mut clusters);
    clusters
}

fn master(columns: &[(Vec<usize>, f64)], n: usize, integer: bool) -> LinearProgram {
    let mut lp = LinearProgram::new(Direction::Minimise);
    let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
    for (c, w) in columns {
        let j = if integer { lp.add_integer_column(*w, 0.0, 1.0) } else { lp.add_column(*w, 0.0, f64::INFINITY) };
        for &i in c {
            rows[i].push((j, 1.0));
        }
    }
    for r in rows {
        if integer {
            lp.add_row(1.0, 1.0, r);
        } else {
            lp.add_row(1.0, f64::INFINITY, r);
        }
    }
    lp
}

/// Runs column generation from `initial` (a feasible clustering of the block) and returns the
/// best integer clustering among `initial`, the γ/λ roundings and the master MIP.
pub fn improve_by_column_generation(
    codes: &[u32],
    m: usize,
    k: usize,
    initial: &[Vec<usize>],
    opts: &NominalOptions,
) -> Result<ColgenOutcome, NominalError> {
    let dist = Dist::new(codes, m);
    let n = dist.n;
    let mut seen: HashSet<Vec<usize>> = HashSet::new();
    let mut columns: Vec<(Vec<usize>, f64)> = Vec::new();
    let mut add = |c: &[usize], columns: &mut Vec<(Vec<usize>, f64)>| {
        let mut c = c.to_vec();
        c.sort_unstable();
        if seen.insert(c.clone()) {
            let w = dist.weight(&c);
            columns.push((c, w));
        }
    };
    for c in initial {
        add(c, &mut columns);
    }
    let solver = |e| NominalError::Solver { step: "column generation", source: e };
    let mut u = vec![0.0; n];
    let mut lp_value = f64::INFINITY;
    let mut converged = false;
    for _ in 0..opts.colgen_max_iterations {
        let sol = lp::solve(&master(&columns, n, false), &SolveOptions { always_presolve: true, ..Default::default() })
            .map_err(solver)?;
        lp_value = sol.objective;
        u = sol.row_duals.iter().map(|&x| x.max(0.0)).collect();
        let mut new = pricing_greedy(&dist, k, &u, 10);
        if new.is_empty() {
            if let Some(c) = pricing_enumeration(&dist, k, &u, 20) {
                new.push(c);
            }
        }
        let before = columns.len();
        for c in &new {
            add(c, &mut columns);
        }
        if columns.len() == before {
            converged = true;
            break;
        }
    }
    let mut best: (Vec<Vec<usize>>, f64) = (initial.to_vec(), initial.iter().map(|c| dist.weight(c)).sum());
    let mut consider = |mut cl: Vec<Vec<usize>>| {
        local_search(codes, m, k, &mut cl, opts.local_search_passes);
        if cl.iter().all(|c| c.len() >= k && c.len() < 2 * k) {
            let w: f64 = cl.iter().map(|c| cluster_weight(codes, m, c) as f64).sum();
            if w < best.1 - 1e-9 {
                best = (cl, w);
            }
        }
    };
    for &(g, l) in &opts.gamma_lambda {
        consider(dual_rounding(&dist, codes, m, k, &u, g, l));
    }
    if opts.colgen_master_mip {
        let opt = SolveOptions { time_limit_s: Some(10.0), ..Default::default() };
        if let Ok(sol) = lp::solve(&master(&columns, n, true), &opt) {
            let cl: Vec<Vec<usize>> =
                columns.iter().zip(&sol.columns).filter(|(_, &x)| x > 0.5).map(|((c, _), _)| c.clone()).collect();
            if cl.iter().map(|c| c.len()).sum::<usize>() == n {
                consider(cl);
            }
        }
    }
    Ok(ColgenOutcome { clusters: best.0, lp_value, columns: columns.len(), converged })
}

#[cfg(test)]
mod tests {
    use super::super::cluster::brute_force_clustering;
    use super::*;

    #[test]
    fn brute_force_bounds_and_master_mip_optimum() {
        let mut rng = crate::rng::Rng::new(3);
        let with_mip = NominalOptions { colgen_master_mip: true, ..Default::default() };
        for trial in 0..6 {
            let k = 2 + trial % 2;
            let n = 8 + trial % 2;
            let codes: Vec<u32> = (0..n * 3).map(|_| rng.below(3) as u32).collect();
            let init = super::super::cluster::greedy_clusters(&codes, 3, k);
            let opt = brute_force_clustering(&codes, 3, k);
            let weight = |cl: &[Vec<usize>]| -> u64 { cl.iter().map(|c| cluster_weight(&codes, 3, c)).sum() };
            let heur = improve_by_column_generation(&codes, 3, k, &init, &NominalOptions::default()).unwrap();
            assert!(weight(&heur.clusters) >= opt);
            assert!(weight(&heur.clusters) <= weight(&init), "never worse than the start");
            let out = improve_by_column_generation(&codes, 3, k, &init, &with_mip).unwrap();
            assert_eq!(weight(&out.clusters), opt, "trial {trial}");
            if out.converged {
                assert!(out.lp_value <= opt as f64 + 1e-6);
            }
        }
    }

    /// The duals read from `crate::lp` have the sign the pricing assumes: every column used in
    /// the LP optimum has reduced cost w_C − Σ u_i ≈ 0 and none is negative at convergence.
    #[test]
    fn dual_sign_convention() {
        let codes: Vec<u32> = vec![0, 0, 0, 1, 1, 1, 0, 1, 1, 0, 2, 2, 2, 2, 0, 2];
        let dist = Dist::new(&codes, 2);
        let cols: Vec<(Vec<usize>, f64)> = [vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7], vec![0, 2], vec![1, 3]]
            .into_iter()
            .map(|c| {
                let w = dist.weight(&c);
                (c, w)
            })
            .collect();
        let sol = lp::solve(&master(&cols, 8, false), &SolveOptions::default()).unwrap();
        for (j, (c, w)) in cols.iter().enumerate() {
            let rc = w - c.iter().map(|&i| sol.row_duals[i]).sum::<f64>();
            assert!(rc >= -1e-7, "column {j} rc {rc}");
            if sol.columns[j] > 1e-7 {
                assert!(rc.abs() < 1e-7, "basic column {j} rc {rc}");
            }
        }
        assert!(sol.row_duals.iter().all(|&u| u >= -1e-9));
    }
}
