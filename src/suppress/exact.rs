//! The `Optimal` method: exact minimum-cost pattern by a MIP over binary suppression variables
//! with capacity cuts separated from attacker-LP duals (Benders; paper's appendix, Fischetti &
//! Salazar 2000), for small tables.
//!
//! Loop: solve the master MIP → audit its pattern → add the violated capacity cut of every
//! under-protected (cell, direction) → repeat until the pattern is clean (then it is optimal:
//! the master is a relaxation) or the time limit stops it. The master starts with valid
//! inequalities: a sensitive cell with a positive level needs another suppression in each of its
//! relations; without the singleton rule, a secondary never stands alone in a relation (it
//! would be known and could be dropped); and the singleton rule as linear rows. A feasible
//! fallback from the fast method is kept, so a stop by time returns the best clean pattern and
//! the gap to the last master lower bound. Budgets are work units ([`super::budget`]):
//! cutting-plane rounds, `master_solves` MIP solves of at most `mip_nodes` branch-and-bound
//! nodes each; the time limit is only a hard stop.

use crate::lp::{self, Direction, LinearProgram, LpStatus, SolveOptions};

use rayon::prelude::*;

use super::attacker::{CompLp, Cut};
use super::audit::Auditor;
use super::budget::Deadline;
use super::problem::{Fix, Problem};
use super::{fast, ProtectOptions, SuppressError};

/// The master problem's static rows (valid inequalities).
pub(crate) fn master(p: &Problem, singleton_rule: bool, integer: bool) -> LinearProgram {
    let mut lp = LinearProgram::new(Direction::Minimise);
    for i in 0..p.n() {
        let (lo, hi) = match p.fix[i] {
            Fix::Free => (0.0, 1.0),
            Fix::Suppressed => (1.0, 1.0),
            Fix::Published => (0.0, 0.0),
        };
        if integer {
            lp.add_integer_column(p.cost[i], lo, hi);
        } else {
            lp.add_column(p.cost[i], lo, hi);
        }
    }
    let any_singleton = p.freq.contains(&1);
    for r in 0..p.rel.len() {
        let members: Vec<usize> = p.rel.members(r).map(|m| m as usize).collect();
        for &i in &members {
            let sensitive = p.sens_of.get(&(i as u32)).is_some_and(|&k| fast::requirement(&p.sens[k as usize]) > 0.0);
            let free = p.fix[i] == Fix::Free && !(singleton_rule && any_singleton);
            if sensitive || free {
                let mut coefs: Vec<(usize, f64)> = members.iter().filter(|&&j| j != i).map(|&j| (j, 1.0)).collect();
                coefs.push((i, -1.0));
                lp.add_row(0.0, f64::INFINITY, coefs);
            }
        }
        if singleton_rule {
            let total = p.rel.total(r) as usize;
            for &t in members.iter().filter(|&&t| p.sens_of.contains_key(&(t as u32))) {
                let exempt = |s: usize| s == total || (t == total && p.freq[t] <= 1);
                for &s in members.iter().filter(|&&s| s != t && p.freq[s] == 1 && !exempt(s)) {
                    let mut coefs: Vec<(usize, f64)> =
                        members.iter().filter(|&&j| j != s && j != t).map(|&j| (j, 1.0)).collect();
                    coefs.push((s, -1.0));
                    lp.add_row(0.0, f64::INFINITY, coefs);
                }
            }
        }
    }
    lp
}

/// Adds a capacity cut as a master row.
pub(crate) fn add_cut(lp: &mut LinearProgram, cut: &Cut) {
    let coefs = cut.coefs.iter().map(|&(c, v)| (c as usize, v)).collect();
    lp.add_row(cut.rhs, f64::INFINITY, coefs);
}

/// Capacity cuts violated by a fractional pattern `x` (one per sensitive cell and direction).
pub(crate) fn separate(p: &Problem, x: &[f64]) -> Result<Vec<Cut>, SuppressError> {
    let lp = CompLp::fractional(p, x);
    let jobs: Vec<(usize, usize)> = (0..p.sens.len())
        .flat_map(|k| [(k, 0), (k, 1)])
        .filter(|&(k, d)| {
            let s = &p.sens[k];
            (if d == 0 { s.lpl } else { s.upl }) > 0.0
        })
        .collect();
    let w = |c: u32| x[c as usize];
    let cuts: Vec<Option<Cut>> = jobs
        .par_iter()
        .map(|&(k, d)| {
            let s = &p.sens[k];
            let need = if d == 0 { s.lpl } else { s.upl };
            let dir = if d == 0 { -1.0 } else { 1.0 };
            let (_, cut) = lp.single(p, &w, s.cell, dir, need, need)?;
            Ok(cut.map(|c| c.capped(need)))
        })
        .collect::<Result<_, SuppressError>>()?;
    Ok(cuts
        .into_iter()
        .flatten()
        .filter(|c| c.coefs.iter().map(|&(j, v)| v * x[j as usize]).sum::<f64>() < c.rhs * (1.0 - 1e-6))
        .collect())
}

/// Cutting-plane loop on the master's LP relaxation: adds violated fractional capacity cuts
/// until none is found, `rounds` is reached or the hard stop passes. Returns the last LP point.
pub(crate) fn strengthen(
    p: &Problem,
    lp: &mut LinearProgram,
    rounds: usize,
    deadline: &Deadline,
) -> Result<Vec<f64>, SuppressError> {
    let mut relaxed = lp.clone();
    for c in &mut relaxed.columns {
        c.integer = false;
    }
    let mut x = vec![0.0; p.n()];
    for _ in 0..rounds {
        if deadline.reached() {
            break;
        }
        let s = lp::solve(&relaxed, &SolveOptions::default())
            .map_err(|source| SuppressError::Lp { context: "master LP relaxation".into(), source })?;
        x = s.columns;
        let cuts = separate(p, &x)?;
        if cuts.is_empty() {
            break;
        }
        for c in &cuts {
            add_cut(lp, c);
            add_cut(&mut relaxed, c);
        }
    }
    Ok(x)
}

/// Runs the method; returns the pattern and a lower bound on the secondary cost.
pub(crate) fn run(
    p: &Problem,
    opts: &ProtectOptions,
    deadline: &Deadline,
) -> Result<(Vec<bool>, Option<f64>), SuppressError> {
    if p.n() > opts.optimal_max_cells {
        return Err(SuppressError::Input(format!(
            "Optimal is limited to {} cells; this table has {} (use Modular, Tabu or Fast)",
            opts.optimal_max_cells,
            p.n()
        )));
    }
    let mut best = fast::run(p, opts, deadline)?;
    let mut best_cost = p.cost_of(&best);
    let fixed_cost: f64 = (0..p.n()).filter(|&i| p.sens_of.contains_key(&(i as u32))).map(|i| p.cost[i]).sum();
    let mut lp = master(p, opts.singleton_rule, true);
    match strengthen(p, &mut lp, 50, deadline) {
        Ok(_) => {}
        Err(SuppressError::Lp { source: lp::LpError::Infeasible, .. }) => {
            return Err(SuppressError::Infeasible {
                cell: p.sens.first().map_or(0, |s| s.cell as usize),
                coord: Vec::new(),
                why: "the master LP relaxation has no feasible pattern".into(),
            })
        }
        Err(e) => return Err(e),
    }
    let mut lower = f64::NEG_INFINITY;
    for round in 1..=opts.master_solves {
        if deadline.reached() {
            break;
        }
        if round > 1 {
            crate::progress::solver_progress("optimal: branch and cut", || {
                let bound = if lower.is_finite() {
                    format!("{:.3} %", p.cost_percent((lower - fixed_cost).max(0.0)))
                } else {
                    "none yet".into()
                };
                format!(
                    "master MIP {round} of {}, best {:.3} %, lower bound {bound} of the table's cost",
                    opts.master_solves,
                    p.cost_percent(best_cost - fixed_cost)
                )
            });
        }
        let o = SolveOptions {
            time_limit_s: Some(deadline.left_s()),
            mip_rel_gap: Some(1e-6),
            mip_max_nodes: Some(opts.mip_nodes),
        };
        let s = match lp::solve(&lp, &o) {
            Ok(s) => s,
            Err(lp::LpError::Infeasible) => {
                return Err(SuppressError::Infeasible {
                    cell: p.sens.first().map_or(0, |s| s.cell as usize),
                    coord: Vec::new(),
                    why: "the master problem has no feasible pattern".into(),
                })
            }
            Err(lp::LpError::TimeLimitNoSolution) => {
                // The node budget or the hard stop, before an incumbent: keep the fallback.
                let _ = deadline.reached();
                break;
            }
            Err(source) => return Err(SuppressError::Lp { context: "master MIP".into(), source }),
        };
        let bound = s.objective - s.mip_gap * s.objective.abs();
        lower = lower.max(bound);
        let x: Vec<bool> = s.columns.iter().map(|v| *v > 0.5).collect();
        let mut aud = Auditor::new(p, x.clone());
        let fails = aud.check()?;
        if fails.is_empty() {
            let c = p.cost_of(&x);
            if c < best_cost - 1e-9 {
                best = x;
                best_cost = c;
            }
            if s.status == LpStatus::Optimal {
                lower = lower.max(s.objective);
                break;
            }
        }
        if s.status != LpStatus::Optimal {
            // Stopped by the node budget (deterministic) or by the hard stop (recorded).
            let _ = deadline.reached();
            break;
        }
        for f in &fails {
            if let Some(cut) = &f.cut {
                add_cut(&mut lp, cut);
            }
        }
        if best_cost <= lower + 1e-9 * best_cost.max(1.0) {
            break;
        }
    }
    let lb = lower.is_finite().then(|| (lower - fixed_cost).max(0.0));
    Ok((best, lb))
}
