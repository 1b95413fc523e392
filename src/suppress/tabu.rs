//! The `Tabu` method: the paper's tabu search (Algorithms 1–3) on the suppression variables.
//!
//! Construction (Algorithm 2): the master LP relaxation, strengthened with fractional capacity
//! cuts ([`super::exact::strengthen`]), is rounded at random (`x_i = 1` with probability
//! `x̄_i`) with variables fixed in random order, the LP being re-solved with the fixings
//! after each block (blocks of ⌈n/8⌉ instead of one variable at a time: same idea, 8 LPs
//! instead of n). The rounded pattern is completed to a clean one by the fast method's closure
//! and repair. Warm start: the modular method's pattern (HiTaS: exact 1-level subtables,
//! merged, repaired and cleaned up) — so tabu never ends above it — or, for linked tables,
//! the fast method's pattern after its cleanup; the construction replaces it when cheaper
//! (tables above `optimal_max_cells` cells skip the construction).
//! Moves (Algorithm 3): flip one variable. Improving moves are drops of secondaries; we scan a
//! candidate list (secondaries by decreasing cost) and take the first that keeps the pattern
//! clean (depth first — the paper found breadth and depth first similar). If none, the best
//! non-tabu add among cells sharing a relation with a suppression is taken (random among the
//! three cheapest). Tabu tenure is random per move in `[1, ⌈√n⌉ + 5]` (the paper's `[1, n]`
//! freezes most of a short run); aspiration lifts the tabu for a move better than the best;
//! when every candidate is tabu a random flip is made (escape). Feasibility is maintained
//! throughout, so the incumbent is always clean. Feasibility checks are incremental: a drop
//! re-solves only targets whose witness used the dropped cell ([`super::audit`]).
//! Deterministic for a seed; the iteration count is the stopping rule, the time limit a hard
//! stop ([`super::budget`]).

use crate::lp::{self, SolveOptions};
use crate::rng::Rng;

use super::budget::Deadline;
use super::construct::complete;
use super::exact::{complete_merged, master, strengthen};
use super::problem::{Fix, Problem};
use super::work::Work;
use super::{ProtectOptions, SuppressError};

/// Randomised LP-rounding construction (see the module doc).
fn construct(
    p: &Problem,
    opts: &ProtectOptions,
    rng: &mut Rng,
    deadline: &Deadline,
) -> Result<Vec<bool>, SuppressError> {
    let mut lp = master(p, opts.singleton_rule, false);
    let mut x = strengthen(p, &mut lp, 20, deadline)?;
    let mut order: Vec<usize> = (0..p.n()).filter(|&i| p.fix[i] == Fix::Free).collect();
    rng.shuffle(&mut order);
    let block = order.len().div_ceil(8).max(1);
    let mut sup = p.initial();
    for chunk in order.chunks(block) {
        for &i in chunk {
            let v = x[i].clamp(0.0, 1.0);
            let up = rng.next_f64() < v;
            sup[i] = up;
            let b = if up { 1.0 } else { 0.0 };
            lp.columns[i].lower = b;
            lp.columns[i].upper = b;
        }
        if deadline.reached() {
            break;
        }
        match lp::solve(&lp, &SolveOptions::default()) {
            Ok(s) => x = s.columns,
            Err(_) => {
                // The fixings cut off the relaxation: round the rest at 1/2.
                for &i in order.iter().filter(|&&i| lp.columns[i].upper > lp.columns[i].lower) {
                    sup[i] = x[i] > 0.5;
                }
                break;
            }
        }
    }
    Ok(sup)
}

/// Runs the method; returns its best pattern.
///
/// `seed`: the merged pattern of the exact subtable solves ([`super::modular::run_levels`]);
/// the search starts from its completion — the pattern the modular method publishes — so it
/// can only end at or below it. Without one (linked tables, direct calls) from the fast
/// method's pattern.
pub(crate) fn run(
    p: &Problem,
    opts: &ProtectOptions,
    seed: Option<&[bool]>,
    deadline: &Deadline,
) -> Result<Vec<bool>, SuppressError> {
    Ok(search(p, opts, seed, deadline)?.sup().to_vec())
}

/// [`run`], plus its final audit from the search's certificates when they re-verify
/// ([`Work::into_certified`]). Why: an audit from scratch of the best pattern ran ~5 minutes
/// past a 600-s limit on a 29,101-cell census table (c4-hier; BENCHMARKS, "Session 53").
pub(crate) fn run_certified(
    p: &Problem,
    opts: &ProtectOptions,
    seed: Option<&[bool]>,
    deadline: &Deadline,
) -> Result<(Vec<bool>, Option<super::AuditReport>), SuppressError> {
    search(p, opts, seed, deadline)?.into_certified(opts.singleton_rule)
}

/// The search of [`run`]; its state ends at the best pattern found.
fn search<'p, 'a>(
    p: &'p Problem<'a>,
    opts: &ProtectOptions,
    seed: Option<&[bool]>,
    deadline: &Deadline,
) -> Result<Work<'p, 'a>, SuppressError> {
    let mut rng = Rng::new(opts.seed);
    let rule = opts.singleton_rule;
    // The first cleanup is the fast method's, on its work budgets ([`super::fast::clean_up`])
    // unless the job states its trials: it tried every candidate until the clock, so the moves
    // got no time and each machine published its own pattern (c3-enterprises at 300 s: 280
    // trials, then the limit; with the budget 96 trials and all 200 moves in 158 s, BENCHMARKS
    // "Session 70").
    let mut w = match seed {
        Some(m) => complete_merged(p, m, rule, None, deadline)?,
        None => complete(p, p.initial(), rule, opts.construction, deadline)?,
    };
    super::fast::clean_up(&mut w, opts, usize::MAX, deadline)?;
    if p.n() <= opts.optimal_max_cells && !deadline.reached() {
        let x0 = construct(p, opts, &mut rng, deadline)?;
        let c = complete(p, x0, rule, opts.construction, deadline)?;
        if p.cost_of(c.sup()) < p.cost_of(w.sup()) {
            w = c;
        }
    }
    // The search's attacker LPs end at the hard stop too ([`Work::cleanup`]): a stopped trial
    // keeps the last audited pattern.
    w.aud.stop = Some(deadline.at());
    match w.aud.localize() {
        Err(e) if e.is_stop() => {
            deadline.record_hit();
            return Ok(w);
        }
        r => r.map(|_| ())?,
    }
    let n_free = p.fix.iter().filter(|f| **f == Fix::Free).count().max(1);
    let tmax = (n_free as f64).sqrt().ceil() as u64 + 5;
    let mut tabu_until = vec![0usize; p.n()];
    let mut best = w.sup().to_vec();
    let mut best_cost = p.cost_of(&best);
    let mut cost = best_cost;
    for it in 1..=opts.tabu_iterations {
        if deadline.reached() {
            break;
        }
        crate::progress::solver_progress("tabu search", || {
            format!(
                "iteration {it} of {}, cost {:.3} %, best {:.3} % of the table's cost",
                opts.tabu_iterations,
                p.cost_percent(cost),
                p.cost_percent(best_cost)
            )
        });
        let tenure = 1 + rng.below(tmax) as usize;
        let mut drops: Vec<usize> = (0..p.n()).filter(|&i| w.sup()[i] && p.fix[i] == Fix::Free).collect();
        drops.sort_by(|&a, &b| p.cost[b].total_cmp(&p.cost[a]).then(a.cmp(&b)));
        let (mut moved, mut stopped) = (false, false);
        for &s in drops.iter().take(25) {
            let aspiration = cost - p.cost[s] < best_cost - 1e-9;
            if tabu_until[s] > it && !aspiration {
                continue;
            }
            let dropped = match w.try_drop(s, rule) {
                Err(e) if e.is_stop() => {
                    deadline.record_hit();
                    stopped = true;
                    break;
                }
                r => r?,
            };
            if dropped {
                tabu_until[s] = it + tenure;
                cost -= p.cost[s];
                moved = true;
                break;
            }
        }
        if stopped {
            break;
        }
        if !moved {
            let j = pick_add(p, &w, &tabu_until, it, &mut rng);
            let added = match j {
                Some(j) => add(&mut w, j, rule, deadline),
                None => {
                    // Escape: every candidate is tabu — random flip of a free cell.
                    let free: Vec<usize> = (0..p.n()).filter(|&i| p.fix[i] == Fix::Free).collect();
                    if free.is_empty() {
                        break;
                    }
                    let j = free[rng.index(free.len())];
                    tabu_until[j] = it + tenure;
                    if w.sup()[j] {
                        w.try_drop(j, rule).map(|_| ())
                    } else {
                        add(&mut w, j, rule, deadline)
                    }
                }
            };
            match added {
                // The hard stop during a repair or a drop's audit: the best pattern so far is clean.
                Err(SuppressError::TimeLimit { .. }) => break,
                Err(e) if e.is_stop() => {
                    deadline.record_hit();
                    break;
                }
                r => r?,
            }
            if let Some(j) = j {
                tabu_until[j] = it + tenure;
            }
            cost = p.cost_of(w.sup());
        }
        if cost < best_cost - 1e-9 {
            best_cost = cost;
            best = w.sup().to_vec();
        }
    }
    back_to(&mut w, &best);
    Ok(w)
}

/// Moves the search's state back to `best`, an earlier state: the cells suppressed since are
/// published (reopening only the bounds whose certificates moved them), the cells published
/// since are suppressed again (a suppression invalidates no certificate).
fn back_to(w: &mut Work, best: &[bool]) {
    for (j, &b) in best.iter().enumerate() {
        if b && !w.sup()[j] {
            w.suppress(j, 0.0);
        }
    }
    for (j, &b) in best.iter().enumerate() {
        if !b && w.sup()[j] {
            w.publish(j);
        }
    }
}

/// Adds cell `j` and restores the singleton rule if the addition broke it.
fn add(w: &mut Work, j: usize, rule: bool, deadline: &Deadline) -> Result<(), SuppressError> {
    let req = 0.0;
    w.suppress(j, req);
    w.repair(rule, deadline)
}

/// Cheapest non-tabu free cells sharing a relation with a suppressed cell; random among the
/// three cheapest.
fn pick_add(p: &Problem, w: &Work, tabu_until: &[usize], it: usize, rng: &mut Rng) -> Option<usize> {
    let mut seen = std::collections::BTreeSet::new();
    for i in (0..p.n()).filter(|&i| w.sup()[i]) {
        for &r in p.rel.of_cell(i) {
            for m in p.rel.members(r as usize) {
                let m = m as usize;
                if !w.sup()[m] && p.fix[m] == Fix::Free && tabu_until[m] <= it {
                    seen.insert(m);
                }
            }
        }
    }
    let mut c: Vec<usize> = seen.into_iter().collect();
    c.sort_by(|&a, &b| p.cost[a].total_cmp(&p.cost[b]).then(a.cmp(&b)));
    c.truncate(3);
    (!c.is_empty()).then(|| c[rng.index(c.len())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suppress::{audit, AuditOptions, Construction, Method};
    use crate::table::synth::{generate, SynthSpec};
    use crate::table::Table;

    fn table(seed: u64) -> Table {
        let spec = SynthSpec {
            dims: vec![vec![3, 2], vec![4], vec![2]],
            density: 0.9,
            mean_freq: 4.0,
            min_freq: 3,
            protection: 0.15,
            seed,
        };
        generate(&spec).unwrap()
    }

    /// Independent audit: attacker LPs only, exact intervals.
    fn clean(p: &Problem, sup: &[bool], singleton: bool) -> bool {
        let o = AuditOptions { exact_intervals: true, lp_only: true };
        audit::audit_problem(p, sup, singleton, &o).unwrap().is_clean()
    }

    /// The search's certified audit is the audit of the pattern it returns: the same pattern
    /// as [`run`], a report from its certificates, and an independent audit agrees.
    #[test]
    fn the_certified_audit_is_of_the_best_pattern() {
        for seed in 0..4 {
            let t = table(seed);
            let p = Problem::from_table(&t, None);
            let o = ProtectOptions { method: Method::Tabu, tabu_iterations: 30, seed, ..Default::default() };
            let far = Deadline::after(600.0);
            let plain = run(&p, &o, None, &far).unwrap();
            let (sup, rep) = run_certified(&p, &o, None, &far).unwrap();
            assert_eq!(sup, plain, "seed {seed}");
            assert!(rep.expect("the certificates re-verify").is_clean(), "seed {seed}");
            assert!(clean(&p, &sup, o.singleton_rule), "seed {seed}");
        }
    }

    /// The first cleanup ends on the fast method's effort budget from the *stated* limit
    /// ([`super::super::fast::cleanup_effort`]): with a budget of about one LP and 600 s on the
    /// clock (no moves, no construction) it stops early without the clock, gives the same
    /// cells twice, passes the LP audit and costs at least the full cleanup's pattern. A trial
    /// count the job states replaces the budget; at the default limit the budget is far above
    /// what these tables' cleanups spend.
    #[test]
    fn the_first_cleanup_ends_on_the_effort_budget() {
        let mut cut_short = 0;
        for seed in 0..4 {
            let t = table(seed);
            let p = Problem::from_table(&t, None);
            let far = Deadline::after(600.0);
            let base = ProtectOptions {
                method: Method::Tabu,
                tabu_iterations: 0,
                optimal_max_cells: 0,
                seed,
                ..Default::default()
            };
            let short = ProtectOptions { stated_limit_s: Some(1e-4), ..base.clone() };
            let asked = ProtectOptions { cleanup_trials: Some(usize::MAX), ..short.clone() };
            let (a, b) = (run(&p, &short, None, &far).unwrap(), run(&p, &short, None, &far).unwrap());
            let full = run(&p, &asked, None, &far).unwrap();
            assert_eq!(a, b, "seed {seed}");
            assert!(!far.was_hit(), "seed {seed}");
            assert!(clean(&p, &a, base.singleton_rule), "seed {seed}");
            assert!(p.cost_of(&a) >= p.cost_of(&full) - 1e-9, "seed {seed}");
            cut_short += usize::from(p.cost_of(&a) > p.cost_of(&full) + 1e-9);
            assert_eq!(run(&p, &base, None, &far).unwrap(), full, "seed {seed}: the default limit");
        }
        assert!(cut_short > 0, "the budget never ended a cleanup");
    }

    /// The search's first cleanup is the fast method's ([`super::super::fast::clean_up`]): with
    /// no moves and no construction, the search publishes the fast method's cells from the
    /// same start, under the default limit and under a stated limit that ends the cleanup early.
    #[test]
    fn the_first_cleanup_is_the_fast_methods() {
        for seed in 0..4 {
            let t = table(seed);
            let p = Problem::from_table(&t, None);
            let far = Deadline::after(600.0);
            for stated in [None, Some(1e-4)] {
                let o = ProtectOptions {
                    method: Method::Tabu,
                    tabu_iterations: 0,
                    optimal_max_cells: 0,
                    construction: Construction::Hypercube,
                    stated_limit_s: stated,
                    seed,
                    ..Default::default()
                };
                let fast = super::super::fast::run(&p, &ProtectOptions { method: Method::Fast, ..o.clone() }, &far);
                assert_eq!(run(&p, &o, None, &far).unwrap(), fast.unwrap(), "seed {seed}, limit {stated:?}");
            }
        }
    }

    /// A search that moved past its best pattern goes back to it with the certificates still
    /// valid there: some secondaries published and free cells suppressed, then [`back_to`].
    #[test]
    fn back_to_the_best_pattern_keeps_its_certificates() {
        let mut moved = 0;
        for seed in 0..4 {
            let t = table(seed);
            let p = Problem::from_table(&t, None);
            let far = Deadline::after(600.0);
            let mut w = complete(&p, p.initial(), false, Construction::Auto, &far).unwrap();
            assert!(w.aud.check().unwrap().is_empty(), "seed {seed}");
            let best = w.sup().to_vec();
            let secondaries: Vec<usize> = (0..p.n()).filter(|&i| best[i] && p.fix[i] == Fix::Free).collect();
            let free: Vec<usize> = (0..p.n()).filter(|&i| !best[i] && p.fix[i] == Fix::Free).collect();
            for &i in secondaries.iter().take(2) {
                w.publish(i);
            }
            for &i in free.iter().take(3) {
                w.suppress(i, 0.0);
            }
            moved += usize::from(w.sup() != best.as_slice());
            back_to(&mut w, &best);
            assert_eq!(w.sup(), best.as_slice(), "seed {seed}");
            let (sup, rep) = w.into_certified(false).unwrap();
            assert!(rep.expect("the certificates re-verify").is_clean(), "seed {seed}");
            assert!(clean(&p, &sup, false), "seed {seed}");
        }
        assert!(moved > 0, "the searches moved away from their best patterns");
    }
}
