//! Exact representative choice (thesis problem (5.2.1)–(5.2.3)) as a MILP via `crate::lp`.
//!
//! Variables: binary z_i per candidate of every cluster with a choice, Σ_{i∈C} z_i = 1, and
//! q_t ≥ 0 per control cell that some candidate can change, with objective Σ q_t / n̄_t. The
//! deviation e_t = n_t − n̄_t is an integer affine function of z, so e_t² is linearised
//! *exactly* by the chords through consecutive integers a, a+1:
//! `q_t ≥ (2a+1) e_t − a(a+1)` (their maximum equals e² at every integer e). Chords are added
//! lazily: start with a few around 0, the range ends and the greedy solution, re-solve while
//! some q_t < e_t²; on exit the MILP optimum is the true optimum (every relaxation is a lower
//! bound and the final point is evaluated exactly).
//!
//! Invariant: the returned choice is never worse than `start` (we fall back to it).

use std::collections::{BTreeSet, HashMap};

use super::represent::RepProblem;
use super::{ExactStatus, NominalError};
use crate::lp::{self, Direction, LinearProgram, LpStatus, SolveOptions};

struct CellTerm {
    cell: usize,
    coefs: Vec<(usize, f64)>,
    lo: i64,
    hi: i64,
    q: usize,
    cuts: BTreeSet<i64>,
}

/// Solves the representative problem exactly (up to the time limit); `start` is a feasible
/// choice used for the initial chords and as fallback.
pub fn solve_exact(
    p: &RepProblem,
    start: &[usize],
    time_limit_s: Option<f64>,
) -> Result<(Vec<usize>, ExactStatus), NominalError> {
    let active: Vec<usize> = (0..p.cands.len()).filter(|&c| p.cands[c].len() > 1).collect();
    solve_exact_subset(p, start, &active, time_limit_s)
}

/// Large-neighbourhood search for instances too big for one MILP: consecutive windows of
/// undecided clusters (in cluster order, i.e. of similar records) with at most
/// `window_candidates` candidates are re-optimised exactly while all other representatives
/// stay fixed (the coordinator's global counts). Never worsens `choice`; returns the worst
/// status met (time limit if any window hit it).
pub fn improve_by_windows(
    p: &RepProblem,
    choice: &mut [usize],
    window_candidates: usize,
    time_limit_s: Option<f64>,
) -> Result<ExactStatus, NominalError> {
    let mut status = ExactStatus::Optimal;
    let mut window: Vec<usize> = Vec::new();
    let mut size = 0;
    let undecided: Vec<usize> = (0..p.cands.len()).filter(|&c| p.cands[c].len() > 1).collect();
    let mut current = p.objective(choice);
    for (i, &c) in undecided.iter().enumerate() {
        window.push(c);
        size += p.cands[c].len();
        if size >= window_candidates || i + 1 == undecided.len() {
            let (e, st) = solve_exact_subset(p, choice, &window, time_limit_s)?;
            if st == ExactStatus::TimeLimit {
                status = st;
            }
            let v = p.objective(&e);
            if v < current - 1e-9 {
                choice.copy_from_slice(&e);
                current = v;
            }
            window.clear();
            size = 0;
        }
    }
    Ok(status)
}

/// Exact re-optimisation of the clusters `active` with every other cluster fixed at `start`.
pub fn solve_exact_subset(
    p: &RepProblem,
    start: &[usize],
    active: &[usize],
    time_limit_s: Option<f64>,
) -> Result<(Vec<usize>, ExactStatus), NominalError> {
    let solver = |e| NominalError::Solver { step: "exact representatives", source: e };
    let undecided: Vec<usize> = active.iter().copied().filter(|&c| p.cands[c].len() > 1).collect();
    if undecided.is_empty() {
        return Ok((start.to_vec(), ExactStatus::Optimal));
    }
    // Fixed part of every cell: the counts of `start` without the active clusters.
    let mut fixed = p.counts(start);
    for &c in &undecided {
        p.apply(&mut fixed, c, start[c], -1.0);
    }
    // Variables z and per-cell affine terms.
    let mut zvar: Vec<(usize, usize)> = Vec::new();
    let mut terms: HashMap<usize, Vec<(usize, f64)>> = HashMap::new();
    for &c in &undecided {
        for q in 0..p.cands[c].len() {
            let v = zvar.len();
            zvar.push((c, q));
            let r = p.cands[c][q] as usize;
            for &t in &p.free_tables[c] {
                terms.entry(p.cells.cell(r, t as usize) as usize).or_default().push((v, p.sizes[c]));
            }
        }
    }
    let start_counts = p.counts(start);
    let mut cells: Vec<CellTerm> = Vec::new();
    let mut keys: Vec<usize> = terms.keys().copied().collect();
    keys.sort_unstable();
    for cell in keys {
        let coefs = terms.remove(&cell).expect("key");
        // Max addition: per cluster the largest coefficient reaching this cell.
        let mut per_cluster: HashMap<usize, f64> = HashMap::new();
        for &(v, a) in &coefs {
            let e = per_cluster.entry(zvar[v].0).or_insert(0.0);
            *e = e.max(a);
        }
        let add: f64 = per_cluster.values().sum();
        let e0 = (fixed[cell] - p.nbar[cell]).round() as i64;
        let (lo, hi) = (e0, e0 + add.round() as i64);
        let es = (start_counts[cell] - p.nbar[cell]).round() as i64;
        let cuts: BTreeSet<i64> =
            [lo, hi - 1, -2, -1, 0, 1, es - 1, es].into_iter().filter(|&a| a >= lo && a < hi).collect();
        cells.push(CellTerm { cell, coefs, lo, hi, q: 0, cuts });
    }
    let mut best = (start.to_vec(), p.objective(start));
    for _round in 0..200 {
        let mut lp = LinearProgram::new(Direction::Minimise);
        for _ in &zvar {
            lp.add_integer_column(0.0, 0.0, 1.0);
        }
        for &c in &undecided {
            let coefs: Vec<(usize, f64)> =
                zvar.iter().enumerate().filter(|(_, &(cc, _))| cc == c).map(|(v, _)| (v, 1.0)).collect();
            lp.add_row(1.0, 1.0, coefs);
        }
        for ct in cells.iter_mut() {
            let nb = p.nbar[ct.cell];
            let lbq = if ct.lo > 0 {
                ct.lo * ct.lo
            } else if ct.hi < 0 {
                ct.hi * ct.hi
            } else {
                0
            };
            ct.q = lp.add_column(1.0 / nb, lbq as f64, f64::INFINITY);
            let base_e = fixed[ct.cell] - nb;
            for &a in &ct.cuts {
                // q − (2a+1)·Σ coef z ≥ (2a+1)·base_e − a(a+1)
                let s = (2 * a + 1) as f64;
                let mut coefs = vec![(ct.q, 1.0)];
                coefs.extend(ct.coefs.iter().map(|&(v, f)| (v, -s * f)));
                lp.add_row(s * base_e - (a * (a + 1)) as f64, f64::INFINITY, coefs);
            }
        }
        let opt = SolveOptions { time_limit_s, mip_rel_gap: Some(1e-9), ..Default::default() };
        let sol = lp::solve(&lp, &opt).map_err(solver)?;
        let mut choice = start.to_vec();
        for (v, &(c, q)) in zvar.iter().enumerate() {
            if sol.columns[v] > 0.5 {
                choice[c] = q;
            }
        }
        let val = p.objective(&choice);
        if val < best.1 - 1e-9 {
            best = (choice.clone(), val);
        }
        if sol.status == LpStatus::TimeLimit {
            return Ok((best.0, ExactStatus::TimeLimit));
        }
        let counts = p.counts(&choice);
        let mut violated = false;
        for ct in cells.iter_mut() {
            let e = (counts[ct.cell] - p.nbar[ct.cell]).round() as i64;
            let q = sol.columns[ct.q];
            if q < (e * e) as f64 - 1e-6 {
                violated = true;
                for a in [e - 1, e] {
                    if a >= ct.lo && a < ct.hi {
                        ct.cuts.insert(a);
                    }
                }
            }
        }
        if !violated {
            // Relaxation optimum is attained exactly: optimal.
            if val <= best.1 + 1e-9 {
                best = (choice, val);
            }
            return Ok((best.0, ExactStatus::Optimal));
        }
    }
    Ok((best.0, ExactStatus::TimeLimit))
}

#[cfg(test)]
mod tests {
    use super::super::cells::distinct;
    use super::super::represent::{brute_force, greedy};
    use super::super::{control_table_list, ControlTables, NominalData};
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn milp_equals_brute_force() {
        let mut rng = Rng::new(21);
        for trial in 0..12 {
            let m = 3 + trial % 2;
            let rows: Vec<Vec<u32>> = (0..15).map(|_| (0..m).map(|_| rng.below(3) as u32).collect()).collect();
            let d = NominalData::from_rows(&rows).unwrap();
            let dist = distinct(d.codes(), m);
            let clusters: Vec<Vec<usize>> =
                vec![vec![0, 1, 2, 3], vec![4, 5, 6], vec![7, 8, 9], vec![10, 11, 12, 13, 14]];
            let dim = 1 + trial % 3;
            let tables = control_table_list(&ControlTables::UpToDimension(dim), m).unwrap();
            let p = RepProblem::new(&dist, m, &clusters, &tables);
            let (_, bv) = brute_force(&p);
            let g = greedy(&p);
            let (e, st) = solve_exact(&p, &g, None).unwrap();
            assert_eq!(st, ExactStatus::Optimal);
            assert!((p.objective(&e) - bv).abs() < 1e-6, "trial {trial}: {} vs {bv}", p.objective(&e));
        }
    }

    #[test]
    fn windows_never_worse_and_bounded_by_brute_force() {
        let mut rng = Rng::new(5);
        for _ in 0..6 {
            let rows: Vec<Vec<u32>> = (0..18).map(|_| (0..3).map(|_| rng.below(3) as u32).collect()).collect();
            let d = NominalData::from_rows(&rows).unwrap();
            let dist = distinct(d.codes(), 3);
            let clusters: Vec<Vec<usize>> = (0..6).map(|c| (3 * c..3 * c + 3).collect()).collect();
            let tables = control_table_list(&ControlTables::UpToDimension(2), 3).unwrap();
            let p = RepProblem::new(&dist, 3, &clusters, &tables);
            let (_, bv) = brute_force(&p);
            let mut g = greedy(&p);
            let gv = p.objective(&g);
            let st = improve_by_windows(&p, &mut g, 4, None).unwrap();
            assert_eq!(st, ExactStatus::Optimal);
            let wv = p.objective(&g);
            assert!(wv <= gv + 1e-9 && wv >= bv - 1e-9);
            // One window covering everything is the exact optimum.
            let mut g2 = greedy(&p);
            improve_by_windows(&p, &mut g2, 1000, None).unwrap();
            assert!((p.objective(&g2) - bv).abs() < 1e-6);
        }
    }
}
