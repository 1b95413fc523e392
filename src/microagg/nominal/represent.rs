//! Step 2 of the thesis (chapter 5): choose one existing record per cluster as the value of
//! all its members, minimising Σ_t (n_t − n̄_t)² / n̄_t over the control-table cells.
//!
//! Why existing records: no implausible combination is ever created, structural zeros stay
//! zero, and every table of every dimension computed from the release is k-anonymous and
//! consistent (thesis §5.1). Because representatives are existing records, a released cell
//! count n_t > 0 implies n̄_t > 0, so the χ² denominator is never zero for our methods; the
//! report handles the mode baseline's new cells separately ([`super::metrics`]).
//!
//! Methods: greedy (Algorithm 8) with the thesis' preprocessing (clusters whose candidates
//! agree on all attributes of a table contribute to that table up front), 1-opt sweeps
//! (re-choose one cluster's representative given all others, until no improvement), the
//! clique heuristic (Algorithm 9 on the multipartite graph of §5.3) and the exact MILP
//! ([`super::exact`]). The global cell counts are the coordinator state: clusters are visited
//! in a fixed order (block order), so the result is deterministic.
//!
//! Baselines: cluster mode (per attribute the most frequent value; can create new
//! combinations) and a seeded random member.

use std::collections::HashMap;

use super::cells::{distinct, CellIndex, Distinct};
use super::{exact, ExactStatus, NominalData, NominalError, NominalParams, RepresentativeMethod};
use crate::rng::Rng;

/// An instance of the representative-choice problem.
#[derive(Debug, Clone)]
pub struct RepProblem {
    /// Size of each cluster.
    pub sizes: Vec<f64>,
    /// Candidate distinct-record ids per cluster (deduplicated, ascending).
    pub cands: Vec<Vec<u32>>,
    /// Cells of the distinct records in the control tables.
    pub cells: CellIndex,
    /// Original count n̄_t of every cell (≥ 1).
    pub nbar: Vec<f64>,
    /// Per cluster, the control tables on which its candidates differ (the others are fixed).
    pub free_tables: Vec<Vec<u32>>,
    /// Fixed contributions per cell (from tables on which a cluster's candidates agree).
    pub base: Vec<f64>,
}

impl RepProblem {
    /// Builds the problem for `clusters` of rows of `data` (distinct records `dist`).
    pub fn new(dist: &Distinct, m: usize, clusters: &[Vec<usize>], tables: &[Vec<usize>]) -> Self {
        let cells = CellIndex::build(&dist.codes, m, tables);
        let nbar: Vec<f64> = cells.counts(&dist.mult).iter().map(|&c| c as f64).collect();
        let mut base = vec![0.0; cells.n_cells];
        let mut cands = Vec::with_capacity(clusters.len());
        let mut free_tables = Vec::with_capacity(clusters.len());
        let mut sizes = Vec::with_capacity(clusters.len());
        for cl in clusters {
            let mut c: Vec<u32> = cl.iter().map(|&r| dist.id_of_row[r]).collect();
            c.sort_unstable();
            c.dedup();
            let s = cl.len() as f64;
            let mut free = Vec::new();
            for t in 0..cells.n_tables {
                let first = cells.cell(c[0] as usize, t);
                if c.iter().all(|&r| cells.cell(r as usize, t) == first) {
                    base[first as usize] += s;
                } else {
                    free.push(t as u32);
                }
            }
            sizes.push(s);
            cands.push(c);
            free_tables.push(free);
        }
        Self { sizes, cands, cells, nbar, free_tables, base }
    }

    /// Cell counts of a choice (candidate position per cluster).
    pub fn counts(&self, choice: &[usize]) -> Vec<f64> {
        let mut n = self.base.clone();
        for (c, &p) in choice.iter().enumerate() {
            self.apply(&mut n, c, p, 1.0);
        }
        n
    }

    pub(crate) fn apply(&self, n: &mut [f64], c: usize, p: usize, sign: f64) {
        let r = self.cands[c][p] as usize;
        for &t in &self.free_tables[c] {
            n[self.cells.cell(r, t as usize) as usize] += sign * self.sizes[c];
        }
    }

    fn delta(&self, n: &[f64], c: usize, p: usize) -> f64 {
        let r = self.cands[c][p] as usize;
        let s = self.sizes[c];
        let mut d = 0.0;
        for &t in &self.free_tables[c] {
            let cell = self.cells.cell(r, t as usize) as usize;
            d += (2.0 * (n[cell] - self.nbar[cell]) * s + s * s) / self.nbar[cell];
        }
        d
    }

    /// χ² over the control cells for a choice.
    pub fn objective(&self, choice: &[usize]) -> f64 {
        let n = self.counts(choice);
        n.iter().zip(&self.nbar).map(|(a, b)| (a - b) * (a - b) / b).sum()
    }

    /// Number of candidates in clusters that still have a choice to make.
    pub fn undecided_candidates(&self) -> usize {
        self.cands.iter().filter(|c| c.len() > 1).map(|c| c.len()).sum()
    }
}

/// Thesis Algorithm 8: visit clusters in order, pick the candidate adding the least χ².
pub fn greedy(p: &RepProblem) -> Vec<usize> {
    let mut n = p.base.clone();
    let mut choice = vec![0; p.cands.len()];
    for (c, ch) in choice.iter_mut().enumerate() {
        let mut best = (f64::INFINITY, 0);
        for q in 0..p.cands[c].len() {
            let d = p.delta(&n, c, q);
            if d < best.0 - 1e-12 {
                best = (d, q);
            }
        }
        *ch = best.1;
        p.apply(&mut n, c, best.1, 1.0);
    }
    choice
}

/// 1-opt sweeps: re-choose each cluster's representative given all others while that lowers
/// the objective strictly; returns the number of changes.
pub fn one_opt(p: &RepProblem, choice: &mut [usize], max_sweeps: usize) -> usize {
    let mut n = p.counts(choice);
    let mut changes = 0;
    for _ in 0..max_sweeps {
        let mut changed = false;
        for (c, ch) in choice.iter_mut().enumerate() {
            if p.cands[c].len() < 2 {
                continue;
            }
            p.apply(&mut n, c, *ch, -1.0);
            let mut best = (p.delta(&n, c, *ch), *ch);
            for q in 0..p.cands[c].len() {
                let d = p.delta(&n, c, q);
                if d < best.0 - 1e-9 {
                    best = (d, q);
                }
            }
            if best.1 != *ch {
                changed = true;
                changes += 1;
                *ch = best.1;
            }
            p.apply(&mut n, c, *ch, 1.0);
        }
        if !changed {
            break;
        }
    }
    changes
}

/// Thesis Algorithm 9 on the complete multipartite graph of §5.3: repeatedly delete, in every
/// cluster with several candidates, the vertex with the largest lower bound on the weight of a
/// maximal clique through it. Weights follow from expanding the objective around the fixed
/// contributions: vertex `w_i = Σ_t (f_ti² + 2 (b_t − n̄_t) f_ti)/n̄_t`, edge
/// `w̃_il = 2 Σ_t f_ti f_tl / n̄_t` (only shared free cells count).
pub fn clique(p: &RepProblem) -> Vec<usize> {
    let undecided: Vec<usize> = (0..p.cands.len()).filter(|&c| p.cands[c].len() > 1).collect();
    let kk = undecided.len();
    let mut choice = vec![0; p.cands.len()];
    if kk < 2 {
        if kk == 1 {
            let c = undecided[0];
            let n = p.base.clone();
            choice[c] =
                (0..p.cands[c].len()).min_by(|&a, &b| p.delta(&n, c, a).total_cmp(&p.delta(&n, c, b))).unwrap_or(0);
        }
        return choice;
    }
    // Vertices.
    let mut vc: Vec<(usize, usize)> = Vec::new(); // (cluster, candidate position)
    for &c in &undecided {
        for q in 0..p.cands[c].len() {
            vc.push((c, q));
        }
    }
    let nv = vc.len();
    let cell_map = |v: usize| -> HashMap<u32, f64> {
        let (c, q) = vc[v];
        let r = p.cands[c][q] as usize;
        p.free_tables[c].iter().map(|&t| (p.cells.cell(r, t as usize), p.sizes[c])).collect()
    };
    let maps: Vec<HashMap<u32, f64>> = (0..nv).map(cell_map).collect();
    let vw: Vec<f64> = (0..nv)
        .map(|v| {
            maps[v]
                .iter()
                .map(|(&cell, &f)| {
                    let cell = cell as usize;
                    (f * f + 2.0 * (p.base[cell] - p.nbar[cell]) * f) / p.nbar[cell]
                })
                .sum()
        })
        .collect();
    let mut w = vec![0f32; nv * nv];
    for a in 0..nv {
        for b in a + 1..nv {
            if vc[a].0 == vc[b].0 {
                continue;
            }
            let (small, large) = if maps[a].len() <= maps[b].len() { (a, b) } else { (b, a) };
            let mut s = 0.0;
            for (cell, f) in &maps[small] {
                if let Some(g) = maps[large].get(cell) {
                    s += 2.0 * f * g / p.nbar[*cell as usize];
                }
            }
            let e = s + vw[b] / (kk as f64 - 1.0);
            let e2 = s + vw[a] / (kk as f64 - 1.0);
            w[a * nv + b] = e as f32; // weight seen from a: includes b's vertex share
            w[b * nv + a] = e2 as f32;
        }
    }
    let mut alive = vec![true; nv];
    let mut by_cluster: HashMap<usize, Vec<usize>> = HashMap::new();
    for (v, &(c, _)) in vc.iter().enumerate() {
        by_cluster.entry(c).or_default().push(v);
    }
    loop {
        let mut any = false;
        for &c in &undecided {
            let live: Vec<usize> = by_cluster[&c].iter().copied().filter(|&v| alive[v]).collect();
            if live.len() < 2 {
                continue;
            }
            any = true;
            let lb = |v: usize| -> f64 {
                let mut total = vw[v];
                for &c2 in &undecided {
                    if c2 == c {
                        continue;
                    }
                    let mn = by_cluster[&c2]
                        .iter()
                        .filter(|&&u| alive[u])
                        .map(|&u| w[v * nv + u] as f64)
                        .fold(f64::INFINITY, f64::min);
                    total += mn;
                }
                total
            };
            let worst =
                live.iter().copied().max_by(|&a, &b| lb(a).total_cmp(&lb(b)).then(b.cmp(&a))).expect("nonempty");
            alive[worst] = false;
        }
        if !any {
            break;
        }
    }
    for (v, &(c, q)) in vc.iter().enumerate() {
        if alive[v] {
            choice[c] = q;
        }
    }
    choice
}

/// Outcome of step 2 for [`super::aggregate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// Representative row per cluster (`None` for the mode baseline).
    pub rows: Vec<Option<usize>>,
    /// Mode records per cluster (only for the mode baseline; empty otherwise).
    pub mode_records: Vec<Vec<u32>>,
    /// Method label.
    pub method: String,
    /// Exact MILP status.
    pub exact_status: ExactStatus,
}

/// Runs the configured representative method.
pub fn choose(
    data: &NominalData,
    clusters: &[Vec<usize>],
    tables: &[Vec<usize>],
    params: &NominalParams,
) -> Result<Chosen, NominalError> {
    let m = data.n_attributes();
    let opts = &params.options;
    match opts.representatives {
        RepresentativeMethod::ClusterMode => {
            let mode_records = clusters
                .iter()
                .map(|cl| {
                    (0..m)
                        .map(|j| {
                            let mut cnt: HashMap<u32, usize> = HashMap::new();
                            for &r in cl {
                                *cnt.entry(data.row(r)[j]).or_default() += 1;
                            }
                            let mut v: Vec<(usize, u32)> = cnt.into_iter().map(|(a, b)| (b, a)).collect();
                            v.sort_unstable_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
                            v[0].1
                        })
                        .collect()
                })
                .collect();
            return Ok(Chosen {
                rows: vec![None; clusters.len()],
                mode_records,
                method: "cluster-mode".into(),
                exact_status: ExactStatus::NotRun,
            });
        }
        RepresentativeMethod::RandomMember => {
            let mut rng = Rng::new(params.seed);
            let rows = clusters.iter().map(|cl| Some(cl[rng.index(cl.len())])).collect();
            return Ok(Chosen {
                rows,
                mode_records: Vec::new(),
                method: "random-member".into(),
                exact_status: ExactStatus::NotRun,
            });
        }
        _ => {}
    }
    let dist = distinct(data.codes(), m);
    let p = RepProblem::new(&dist, m, clusters, tables);
    let (choice, method, status) = solve(&p, params)?;
    // Map candidate → first row of the cluster with that record.
    let rows = clusters
        .iter()
        .enumerate()
        .map(|(c, cl)| {
            let id = p.cands[c][choice[c]];
            cl.iter().copied().find(|&r| dist.id_of_row[r] == id)
        })
        .collect();
    Ok(Chosen { rows, mode_records: Vec::new(), method, exact_status: status })
}

/// Solves a [`RepProblem`] with the configured method; returns (choice, label, exact status).
pub fn solve(p: &RepProblem, params: &NominalParams) -> Result<(Vec<usize>, String, ExactStatus), NominalError> {
    let opts = &params.options;
    let undecided = p.undecided_candidates();
    let mut g = greedy(p);
    one_opt(p, &mut g, opts.one_opt_sweeps);
    let gv = p.objective(&g);
    match opts.representatives {
        RepresentativeMethod::Clique if undecided <= opts.clique_max_candidates => {
            let mut c = clique(p);
            one_opt(p, &mut c, opts.one_opt_sweeps);
            Ok((c, "clique+1opt".into(), ExactStatus::NotRun))
        }
        RepresentativeMethod::Exact | RepresentativeMethod::Auto => {
            if undecided > opts.exact_max_candidates {
                if opts.exact_window_candidates == 0 || undecided > opts.exact_windows_max_candidates {
                    return Ok((g, "greedy+1opt".into(), ExactStatus::TooLarge));
                }
                let st = exact::improve_by_windows(p, &mut g, opts.exact_window_candidates, opts.exact_time_limit_s)?;
                one_opt(p, &mut g, opts.one_opt_sweeps);
                return Ok((g, "greedy+1opt+exact-windows".into(), st));
            }
            let (e, st) = exact::solve_exact(p, &g, opts.exact_time_limit_s)?;
            if p.objective(&e) <= gv + 1e-9 {
                Ok((e, "exact".into(), st))
            } else {
                Ok((g, "greedy+1opt".into(), st))
            }
        }
        _ => Ok((g, "greedy+1opt".into(), ExactStatus::NotRun)),
    }
}

/// Optimal choice by enumeration (tests only).
#[cfg(test)]
pub(crate) fn brute_force(p: &RepProblem) -> (Vec<usize>, f64) {
    let nc = p.cands.len();
    let mut choice = vec![0; nc];
    let mut best = (choice.clone(), p.objective(&choice));
    loop {
        let mut c = 0;
        while c < nc {
            choice[c] += 1;
            if choice[c] < p.cands[c].len() {
                break;
            }
            choice[c] = 0;
            c += 1;
        }
        if c == nc {
            return best;
        }
        let v = p.objective(&choice);
        if v < best.1 - 1e-9 {
            best = (choice.clone(), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Thesis Example 5.1.2: three clusters (f/m × empl/unempl/inact); the best choice keeps
    /// the sex table exact (f 6, m 3).
    #[test]
    fn thesis_example_keeps_sex_margin() {
        let rows: Vec<Vec<u32>> = vec![
            vec![0, 0],
            vec![0, 0],
            vec![1, 0],
            vec![0, 1],
            vec![0, 1],
            vec![1, 1],
            vec![0, 2],
            vec![0, 2],
            vec![1, 2],
        ];
        let d = NominalData::from_rows(&rows).unwrap();
        let dist = distinct(d.codes(), 2);
        let clusters = vec![vec![0, 1, 2], vec![3, 4, 5], vec![6, 7, 8]];
        let p = RepProblem::new(&dist, 2, &clusters, &[vec![0], vec![1]]);
        let (bc, bv) = brute_force(&p);
        assert!(bv.abs() < 1e-9, "{bv}");
        let mut g = greedy(&p);
        one_opt(&p, &mut g, 10);
        assert!(p.objective(&g).abs() < 1e-9);
        let c = clique(&p);
        assert!(p.objective(&c) >= bv - 1e-9);
        assert_eq!(p.objective(&bc), bv);
    }

    #[test]
    fn heuristics_never_beat_brute_force_and_one_opt_helps() {
        let mut rng = Rng::new(9);
        for _ in 0..20 {
            let n = 12;
            let rows: Vec<Vec<u32>> = (0..n).map(|_| (0..3).map(|_| rng.below(3) as u32).collect()).collect();
            let d = NominalData::from_rows(&rows).unwrap();
            let dist = distinct(d.codes(), 3);
            let clusters: Vec<Vec<usize>> = vec![vec![0, 1, 2], vec![3, 4, 5], vec![6, 7, 8], vec![9, 10, 11]];
            let tables = super::super::control_table_list(&super::super::ControlTables::UpToDimension(2), 3).unwrap();
            let p = RepProblem::new(&dist, 3, &clusters, &tables);
            let (_, bv) = brute_force(&p);
            let mut g = greedy(&p);
            let gv0 = p.objective(&g);
            one_opt(&p, &mut g, 10);
            let gv = p.objective(&g);
            assert!(gv <= gv0 + 1e-9 && gv >= bv - 1e-9);
            let c = clique(&p);
            assert!(p.objective(&c) >= bv - 1e-9);
        }
    }
}
