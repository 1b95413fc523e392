//! Pricing for microaggregation column generation: find clusters with negative reduced cost.
//!
//! Why: the master problem of `papers/microaggregation-column-generation.txt` (§4–5) prices
//! clusters C of a fixed size η ∈ [k, 2k − 1] by the reduced cost w_C − Σ_{v∈C} λ_v, where w_C
//! is the (weighted) SSE of C and λ the duals of the partitioning rows. Two pricers, as in the
//! paper: the greedy `SolveHeuristicPricing` and an exact search replacing its complete
//! enumeration — a depth-first enumeration of all η-subsets with a valid pruning bound (cost
//! never decreases when a record is added; the duals still to come are bounded by the largest
//! remaining ones), so "no negative column exists" is a proof when the search completes.
//!
//! Invariants: only the exact search's `complete == true` certifies the absence of negative
//! columns (needed for a lower bound). Deterministic: candidates are ordered by (λ desc, index).

use super::geometry::PointSet;

/// A priced cluster: sorted local indices and its reduced cost.
#[derive(Debug, Clone, PartialEq)]
pub struct PricedCluster {
    /// Sorted member indices.
    pub members: Vec<usize>,
    /// Reduced cost w_C − Σ λ_v.
    pub reduced_cost: f64,
}

/// Result of the exact pricing search for one size.
#[derive(Debug, Clone, PartialEq)]
pub struct ExactPricing {
    /// Best clusters found with reduced cost below the threshold (most negative first).
    pub found: Vec<PricedCluster>,
    /// Minimum reduced cost over all clusters of this size (valid when `complete`).
    pub min_reduced_cost: f64,
    /// Whether the search finished (false: the node limit stopped it).
    pub complete: bool,
    /// Search nodes used.
    pub nodes: u64,
}

/// Pricing oracle over the points of one (small) problem.
pub struct Pricer<'a> {
    points: PointSet<'a>,
    d2: Vec<f64>,
}

impl<'a> Pricer<'a> {
    /// A pricer for `points` (precomputes pairwise squared distances: O(m²)).
    pub fn new(points: PointSet<'a>) -> Self {
        let m = points.len();
        let mut d2 = vec![0.0; m * m];
        for i in 0..m {
            for j in i + 1..m {
                let v = points.dist2(i, j);
                d2[i * m + j] = v;
                d2[j * m + i] = v;
            }
        }
        Self { points, d2 }
    }

    /// Weighted SSE of `members`.
    pub fn cost(&self, members: &[usize]) -> f64 {
        self.points.group_sse(members)
    }

    /// The paper's greedy `SolveHeuristicPricing` for size `eta`: every disjoint cluster it
    /// builds with reduced cost below `-tol`.
    pub fn heuristic(&self, lambda: &[f64], eta: usize, tol: f64) -> Vec<PricedCluster> {
        let m = self.points.len();
        let mut order: Vec<usize> = (0..m).collect();
        order.sort_by(|&a, &b| lambda[b].total_cmp(&lambda[a]).then(a.cmp(&b)));
        let mut unassigned = order;
        let mut out = Vec::new();
        let eta_f = eta as f64;
        let denom = (eta - 1).max(1) as f64;
        while unassigned.len() >= eta {
            let v = unassigned.remove(0);
            let mut cluster = vec![v];
            let mut pool: Vec<usize> = unassigned.clone();
            while cluster.len() < eta {
                let mut best = 0;
                let mut best_v = f64::INFINITY;
                for (p, &w) in pool.iter().enumerate() {
                    let s: f64 = cluster.iter().map(|&c| self.d2[w * m + c]).sum::<f64>() / eta_f - lambda[w] / denom;
                    if s < best_v {
                        best_v = s;
                        best = p;
                    }
                }
                cluster.push(pool.remove(best));
            }
            cluster.sort_unstable();
            let rc = self.cost(&cluster) - cluster.iter().map(|&i| lambda[i]).sum::<f64>();
            if rc < -tol {
                unassigned.retain(|i| cluster.binary_search(i).is_err());
                out.push(PricedCluster { members: cluster, reduced_cost: rc });
            }
        }
        out
    }

    /// Exact pricing for size `eta`: the best `keep` clusters with reduced cost < `-tol` and
    /// the minimum reduced cost over all clusters of size `eta`, unless the depth-first
    /// search needs more than `node_limit` nodes (then `complete == false`).
    ///
    /// Pruning uses SSE(C) = (1/W_C)·Σ_{i<j∈C} w_i w_j d_ij ≥ (1/W_max)·(pairs inside the
    /// partial cluster P + pairs between P and each added record), so a node is cut when
    /// that bound minus the duals of the best completion cannot beat the incumbent.
    pub fn exact(&self, lambda: &[f64], eta: usize, tol: f64, keep: usize, node_limit: u64) -> ExactPricing {
        let m = self.points.len();
        let mut order: Vec<usize> = (0..m).collect();
        order.sort_by(|&a, &b| lambda[b].total_cmp(&lambda[a]).then(a.cmp(&b)));
        // The best `r` duals from position p are pos[p + r] − pos[p] (λ decreasing).
        let mut pos = vec![0.0; m + 1];
        for (p, &i) in order.iter().enumerate() {
            pos[p + 1] = pos[p] + lambda[i].max(0.0);
        }
        let mut w_desc: Vec<f64> = (0..m).map(|i| self.points.weight(i)).collect();
        w_desc.sort_by(|a, b| b.total_cmp(a));
        let mut top_w = vec![0.0; m + 1];
        for (r, w) in w_desc.iter().enumerate() {
            top_w[r + 1] = top_w[r] + w;
        }
        let mut st = Search {
            pricer: self,
            order: &order,
            lambda,
            pos: &pos,
            top_w: &top_w,
            eta,
            keep: keep.max(1),
            tol,
            node_limit,
            nodes: 0,
            aborted: false,
            stack: Vec::with_capacity(eta),
            weight: vec![0.0; eta + 1],
            pairs: vec![0.0; eta + 1],
            lam: vec![0.0; eta + 1],
            acc: vec![0.0; m],
            scratch: Vec::with_capacity(m),
            found: Vec::new(),
            min_rc: f64::INFINITY,
        };
        if eta >= 1 && eta <= m {
            st.dfs(0);
        }
        let complete = !st.aborted;
        let nodes = st.nodes;
        let min_reduced_cost = st.min_rc;
        let mut found = st.found;
        found.sort_by(|a, b| a.reduced_cost.total_cmp(&b.reduced_cost).then(a.members.cmp(&b.members)));
        ExactPricing { found, min_reduced_cost, complete, nodes }
    }
}

/// Safety margin subtracted from pruning bounds (absorbs rounding in the running sums).
const BOUND_MARGIN: f64 = 1e-9;

struct Search<'p, 'a> {
    pricer: &'p Pricer<'a>,
    order: &'p [usize],
    lambda: &'p [f64],
    pos: &'p [f64],
    top_w: &'p [f64],
    eta: usize,
    keep: usize,
    tol: f64,
    node_limit: u64,
    nodes: u64,
    aborted: bool,
    stack: Vec<usize>,
    /// Per depth: total weight, Σ_{i<j} w_i w_j d_ij and Σ λ of the partial cluster.
    weight: Vec<f64>,
    pairs: Vec<f64>,
    lam: Vec<f64>,
    /// acc[q] = Σ_{p ∈ partial cluster} w_p d_qp.
    acc: Vec<f64>,
    scratch: Vec<f64>,
    found: Vec<PricedCluster>,
    min_rc: f64,
}

impl Search<'_, '_> {
    /// Nodes whose bound reaches this level cannot improve `min_rc` nor the kept clusters.
    fn prune_level(&self) -> f64 {
        let keep_level = if self.found.len() >= self.keep {
            self.found.iter().map(|c| c.reduced_cost).fold(f64::NEG_INFINITY, f64::max)
        } else {
            -self.tol
        };
        keep_level.max(self.min_rc)
    }

    fn record(&mut self, rc: f64) {
        self.min_rc = self.min_rc.min(rc);
        if rc < -self.tol {
            let mut members = self.stack.clone();
            members.sort_unstable();
            self.found.push(PricedCluster { members, reduced_cost: rc });
            if self.found.len() > self.keep {
                let worst = (0..self.found.len())
                    .max_by(|&a, &b| self.found[a].reduced_cost.total_cmp(&self.found[b].reduced_cost).then(a.cmp(&b)))
                    .expect("non-empty");
                self.found.swap_remove(worst);
            }
        }
    }

    fn dfs(&mut self, start: usize) {
        if self.aborted {
            return;
        }
        self.nodes += 1;
        if self.nodes > self.node_limit {
            self.aborted = true;
            return;
        }
        let t = self.stack.len();
        let m = self.order.len();
        let pts = &self.pricer.points;
        if t == self.eta {
            let rc = self.pairs[t] / self.weight[t] - self.lam[t];
            self.record(rc);
            return;
        }
        let r = self.eta - t;
        if m - start < r {
            return;
        }
        // Node bound: pairs inside P and P–F pairs, divided by the largest possible weight.
        if t > 0 {
            let w_max = self.weight[t] + self.top_w[r];
            self.scratch.clear();
            for &q in &self.order[start..] {
                self.scratch.push(pts.weight(q) * self.acc[q] / w_max - self.lambda[q]);
            }
            let mut g = std::mem::take(&mut self.scratch);
            if r < g.len() {
                g.select_nth_unstable_by(r - 1, |a, b| a.total_cmp(b));
            }
            let best_f: f64 = g[..r].iter().sum();
            self.scratch = g;
            let bound = self.pairs[t] / w_max - self.lam[t] + best_f - BOUND_MARGIN;
            if bound >= self.prune_level() {
                return;
            }
        }
        let sse_p = if t > 0 { self.pairs[t] / self.weight[t] } else { 0.0 };
        for p in start..=m - r {
            // SSE never decreases when records are added; later positions have smaller duals.
            let lb = sse_p - self.lam[t] - (self.pos[p + r] - self.pos[p]) - BOUND_MARGIN;
            if lb >= self.prune_level() {
                break;
            }
            let i = self.order[p];
            let w = pts.weight(i);
            self.weight[t + 1] = self.weight[t] + w;
            self.pairs[t + 1] = self.pairs[t] + w * self.acc[i];
            self.lam[t + 1] = self.lam[t] + self.lambda[i];
            let m_all = self.acc.len();
            for q in 0..m_all {
                self.acc[q] += w * self.pricer.d2[q * m_all + i];
            }
            self.stack.push(i);
            self.dfs(p + 1);
            self.stack.pop();
            for q in 0..m_all {
                self.acc[q] -= w * self.pricer.d2[q * m_all + i];
            }
            if self.aborted {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn brute_min(pr: &Pricer, lambda: &[f64], m: usize, eta: usize) -> f64 {
        let mut best = f64::INFINITY;
        for mask in 0u32..(1 << m) {
            if mask.count_ones() as usize != eta {
                continue;
            }
            let c: Vec<usize> = (0..m).filter(|&i| (mask >> i) & 1 == 1).collect();
            best = best.min(pr.cost(&c) - c.iter().map(|&i| lambda[i]).sum::<f64>());
        }
        best
    }

    #[test]
    fn exact_pricing_matches_brute_force() {
        let mut rng = Rng::new(5);
        for trial in 0..12 {
            let m = 9 + trial % 4;
            let coords: Vec<f64> = (0..m * 2).map(|_| rng.normal()).collect();
            let w: Vec<f64> = (0..m).map(|_| 0.5 + rng.next_f64()).collect();
            let weights = if trial % 2 == 0 { Some(&w[..]) } else { None };
            let p = PointSet::new(2, &coords, weights);
            let pr = Pricer::new(p);
            let lambda: Vec<f64> = (0..m).map(|_| rng.next_f64() * 1.5).collect();
            for eta in 2..5 {
                let ex = pr.exact(&lambda, eta, 1e-9, 3, u64::MAX);
                assert!(ex.complete);
                let bf = brute_min(&pr, &lambda, m, eta);
                assert!((ex.min_reduced_cost - bf).abs() < 1e-9, "{} vs {}", ex.min_reduced_cost, bf);
                if bf < -1e-9 {
                    assert!((ex.found[0].reduced_cost - bf).abs() < 1e-9);
                }
                for c in pr.heuristic(&lambda, eta, 1e-9) {
                    assert!(c.reduced_cost >= bf - 1e-9 && c.members.len() == eta);
                }
            }
        }
    }
}
