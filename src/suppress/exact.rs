//! The `Optimal` method: exact minimum-cost pattern by a MIP over binary suppression variables
//! with capacity cuts separated from attacker-LP duals (Benders; paper's appendix, Fischetti &
//! Salazar 2000), for tables of any size that a time limit allows.
//!
//! Phases. (1) The fast method's pattern: the incumbent, and a start for every master MIP.
//! (2) Cutting planes on the master's LP relaxation: violated capacity cuts are separated
//! component by component of the fractional support, in parallel ([`super::separation`]),
//! until none is violated or the bound tails off (before masters that branch, also when a
//! round stalls against the incumbent: `STALLED_SHARE_OF_GAP`); this LP bound is a valid
//! lower bound.
//! (3) Branch and cut by re-solves: the master MIP (HiGHS, from the incumbent) → audit its
//! pattern → add the violated capacity cut of every under-protected (cell, direction) → repeat
//! until the pattern is clean (then it is optimal: the master is a relaxation), the budgets run
//! out or the time limit stops it; the best clean pattern is returned with the largest proven
//! bound (LP bound or MIP dual bound), hence its gap.
//!
//! The master starts with valid inequalities: the single-relation capacity rows of every
//! sensitive cell (each relation through it must absorb its move, [`super::separation`]); a
//! sensitive cell with a positive level needs another suppression in each of its relations;
//! a secondary never stands alone in a relation (it would be known and could be dropped: valid
//! for some optimal pattern, so the bound stays valid) — under the singleton rule only where
//! dropping it cannot leave a sensitive cell alone with a singleton in another relation
//! ([`super::singleton::exposed`]); and the singleton rule as linear rows. Measured on Adult with
//! the rule (release build): without these rows on any cell the search took 383 s (2 threads)
//! to a 1.2 % gap; with them on the 4,955 of 6,333 cells not exposed, 50 s (1 thread) to a
//! proven optimum 0.8 % cheaper. Budgets are work units ([`super::budget`]): cutting-plane
//! rounds, `master_solves` MIP solves of at most `mip_nodes` branch-and-bound nodes each; the
//! time limit is only a hard stop. Cuts are added in a fixed order, so the pattern does not
//! depend on the thread count.

use crate::lp::{self, Direction, LinearProgram, LpStatus, SolveOptions};

use super::attacker::Cut;
use super::audit::{Auditor, DeferSingles, Failure, SmallBatches};
use super::budget::Deadline;
use super::construct::complete;
use super::problem::{requirement, Fix, Problem};
use super::separation::{self, CutDuals};
use super::trace::trace;
use super::work::Work;
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
    // Under the singleton rule only where dropping a lone secondary cannot break the rule.
    let exposed = if singleton_rule { super::singleton::exposed(p) } else { vec![false; p.n()] };
    for r in 0..p.rel.len() {
        let members: Vec<usize> = p.rel.members(r).map(|m| m as usize).collect();
        for &i in &members {
            let sensitive = p.sens_of.get(&(i as u32)).is_some_and(|&k| requirement(&p.sens[k as usize]) > 0.0);
            let free = p.fix[i] == Fix::Free && !exposed[i];
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
    for c in separation::relation_cuts(p) {
        add_cut(&mut lp, &c);
    }
    lp
}

/// Adds a capacity cut as a master row, scaled to right-hand side 1 (cell values of 10^10
/// and more would otherwise give HiGHS rows of very different magnitudes).
pub(crate) fn add_cut(lp: &mut LinearProgram, cut: &Cut) {
    if cut.rhs <= 0.0 {
        return;
    }
    let coefs = cut.coefs.iter().map(|&(c, v)| (c as usize, (v / cut.rhs).min(1.0))).collect();
    lp.add_row(1.0, f64::INFINITY, coefs);
}

/// Cutting-plane rounds without a relative improvement of the LP bound above
/// [`TAILING_OFF`] after which [`strengthen`] stops (tau-Argus's CSP "tailing off").
const TAILING_ROUNDS: usize = 5;
const TAILING_OFF: f64 = 1e-4;

/// A round of the master's cutting planes whose LP bound rose by less than this share of the
/// gap still open to the incumbent ends the loop before its separation
/// ([`Shortcuts::stall_against`]). Why: after such a round the separations find few cuts or
/// none, each at the cost of attacker LPs over every target, and the masters' audits add the
/// cuts their patterns need anyway. On c3-persons the third round rose by 0.4 % of the gap:
/// ended after its separation (2.7 s for 15 cuts) the search took 51.5 s, ended before it
/// 41.5 s, to the same proven cost (BENCHMARKS "Session 87"; session 86 had ended the loop
/// after that separation, which saved the fourth round's 3 s).
const STALLED_SHARE_OF_GAP: f64 = 0.01;

/// The gap [`STALLED_SHARE_OF_GAP`] is taken of, at most this share of the bound. Why: the gap
/// to the incumbent stands for how far the bound may still rise, and a poor incumbent
/// overstates it — `auto`'s fast start ([`FAST_START_MAX_CELLS`]) is 2–10 times the optimum, so the
/// second round's rise looked small and ended the loop, leaving the masters the cuts: EIA
/// 2.12 → 1.23 s (three rounds, two masters instead of three), Adult 10.41 → 8.70 s, medians of
/// 3, the same costs; c4-persons 1.86 → 2.0 s; HiTaS's incumbents (c3-persons, 7 % above the
/// bound) are within the cap (BENCHMARKS "Session 88"). Any share from 2 % to 20 % gave the
/// same times there. 20 % since session 91 (a round that raised the bound by less than 0.2 %
/// of it ends the loop when the incumbent is far): c2-persons' third round rose by 0.10 % and
/// its separation found no cut (1.53 → 1.33 s, medians of 5, the same file); the rounds that
/// found cuts rose by 0.37 % or more (c3-persons' second, EIA's), and no other suite table's
/// loop changed (BENCHMARKS "Session 91").
const STALL_GAP_CAP: f64 = 0.2;

/// A cutting-plane round that finds cuts for fewer than this share of the protection bounds
/// (two per sensitive cell) ends the loop once they are added, wherever the stall rule applies
/// ([`Shortcuts::stall_against`]). Why: so few cuts barely move the bound, and the next round's
/// LP, a solve from scratch, only finds the loop stalled — EIA's third round found 1 cut for
/// 312 bounds and c3-persons' second 23 for 7,086 (0.3 %), and each next round stalled after
/// an LP of 0.09 and 0.45 s. Measured (medians of alternating runs, two sets): EIA 1.36 → 1.25 s
/// and 1.41 → 1.36 s, the same file; c3-persons 29.4 → 28.2 s and 30.0 → 30.4 s (within the
/// machine's noise), another pattern of the same cost. Rounds of 0.7 % and more go on:
/// c4-persons' second (10 cuts for 1,118 bounds) is followed by a round that raises the bound
/// by 0.4 % (BENCHMARKS "Session 93").
const FEW_CUTS_SHARE: f64 = 0.005;

/// What the cutting planes before master MIPs that branch may leave to those masters, whose
/// patterns' audits add exact cuts of their own: which duals a cut comes from, and when a loop
/// stalls. Masters of a few nodes (HiTaS's subtables) live on the loop's cuts and get none of
/// these shortcuts ([`Shortcuts::NONE`]).
#[derive(Debug, Clone, Copy)]
struct Shortcuts {
    duals: CutDuals,
    /// The incumbent's cost (in the master's objective): a round that raises the bound by less
    /// than [`STALLED_SHARE_OF_GAP`] of the gap to it ends the loop. Not under the singleton
    /// rule: there Adult's later rounds find 1–4 cuts each, which its masters need (stopped
    /// at the fifth of its 15 rounds, the search ended unproven, 0.04 % dearer).
    stall_against: Option<f64>,
}

impl Shortcuts {
    const NONE: Shortcuts = Shortcuts { duals: CutDuals::Cold, stall_against: None };
}

/// Cutting-plane loop on the master's LP relaxation: adds violated fractional capacity cuts
/// until none is found, `rounds` is reached, the bound tails off or the hard stop passes.
/// Returns the last LP point.
pub(crate) fn strengthen(
    p: &Problem,
    lp: &mut LinearProgram,
    rounds: usize,
    deadline: &Deadline,
) -> Result<Vec<f64>, SuppressError> {
    Ok(strengthen_bound(p, lp, rounds, Shortcuts::NONE, deadline)?.x)
}

/// What a cutting-plane loop ends with ([`strengthen_bound`]), or has reached after some of its
/// rounds ([`lp_rounds`]).
struct LpPhase {
    /// The last LP point.
    x: Vec<f64>,
    /// The objective of the last LP relaxation solved to optimality (`−inf` when none was): a
    /// valid lower bound on the master's optimum.
    bound: f64,
    /// That LP's row duals, one per row of the master at the time (for [`ReducedCosts`]).
    duals: Option<Vec<f64>>,
    /// Each round's LP objective, for the stall and tailing-off rules.
    history: Vec<f64>,
    /// Whether the loop ended before its last round (no cut, a stall, tailing off, the hard
    /// stop): no later round may follow.
    ended: bool,
}

impl LpPhase {
    /// Before the first round.
    fn new(n: usize) -> Self {
        LpPhase { x: vec![0.0; n], bound: f64::NEG_INFINITY, duals: None, history: Vec::new(), ended: false }
    }
}

/// [`strengthen`] with `shortcuts`, also returning the bound and duals of its last LP.
fn strengthen_bound(
    p: &Problem,
    lp: &mut LinearProgram,
    rounds: usize,
    shortcuts: Shortcuts,
    deadline: &Deadline,
) -> Result<LpPhase, SuppressError> {
    lp_rounds(p, lp, 1..=rounds, shortcuts, LpPhase::new(p.n()), deadline)
}

/// The cutting-plane loop's `rounds`, continuing from `phase` (the rounds before them). The
/// first round reads nothing of the incumbent: the stall rule needs the rises of two rounds,
/// so [`search`] runs that round beside the fast start and continues with the rest.
fn lp_rounds(
    p: &Problem,
    lp: &mut LinearProgram,
    rounds: std::ops::RangeInclusive<usize>,
    shortcuts: Shortcuts,
    phase: LpPhase,
    deadline: &Deadline,
) -> Result<LpPhase, SuppressError> {
    let LpPhase { mut x, mut bound, mut duals, mut history, ended } = phase;
    if ended {
        return Ok(LpPhase { x, bound, duals, history, ended });
    }
    let mut relaxed = lp.clone();
    for c in &mut relaxed.columns {
        c.integer = false;
    }
    for round in rounds {
        if deadline.reached() {
            return Ok(LpPhase { x, bound, duals, history, ended: true });
        }
        // From scratch each round, not hot-started from the last basis with the cuts added:
        // the presolved solve's vertex separates better. Hot, the rounds' LPs took a quarter
        // of the time, but c3-persons' second round found 18 cuts instead of 23 and its search
        // needed a fifth master: 30.3 → 39.0 s (BENCHMARKS "Session 89").
        let o = SolveOptions { time_limit_s: Some(deadline.left_s()), ..Default::default() };
        let t0 = std::time::Instant::now();
        let s = lp::solve(&relaxed, &o)
            .map_err(|source| SuppressError::Lp { context: "master LP relaxation".into(), source })?;
        if s.status != LpStatus::Optimal {
            let _ = deadline.reached();
            return Ok(LpPhase { x, bound, duals, history, ended: true });
        }
        x = s.columns;
        bound = bound.max(s.objective);
        duals = Some(s.row_duals);
        history.push(s.objective);
        if let (Some(best), [.., before, now]) = (shortcuts.stall_against, history.as_slice()) {
            if now - before < STALLED_SHARE_OF_GAP * (best - now).min(STALL_GAP_CAP * now.abs()) {
                trace(format_args!(
                    "optimal: LP round {round}: bound {:.4} %, stalled: no separation",
                    p.cost_percent(s.objective)
                ));
                return Ok(LpPhase { x, bound, duals, history, ended: true });
            }
        }
        let t1 = std::time::Instant::now();
        let cuts = separation::separate(p, &x, shortcuts.duals, &|| deadline.reached())?;
        trace(format_args!(
            "optimal: LP round {round}: bound {:.4} %, {} cuts, {} rows (LP {:.2}s, separation {:.2}s)",
            p.cost_percent(s.objective),
            cuts.len(),
            relaxed.rows.len(),
            (t1 - t0).as_secs_f64(),
            t1.elapsed().as_secs_f64()
        ));
        if cuts.is_empty() {
            return Ok(LpPhase { x, bound, duals, history, ended: true });
        }
        for c in &cuts {
            add_cut(lp, c);
            add_cut(&mut relaxed, c);
        }
        let bounds = 2 * p.sens.len();
        if shortcuts.stall_against.is_some() && (cuts.len() as f64) < FEW_CUTS_SHARE * bounds as f64 {
            trace(format_args!(
                "optimal: LP round {round}: {} cuts for {bounds} protection bounds: loop ended",
                cuts.len()
            ));
            return Ok(LpPhase { x, bound, duals, history, ended: true });
        }
        if history.len() > TAILING_ROUNDS {
            let old = history[history.len() - 1 - TAILING_ROUNDS];
            if s.objective - old <= TAILING_OFF * s.objective.abs().max(1.0) {
                return Ok(LpPhase { x, bound, duals, history, ended: true });
            }
        }
    }
    Ok(LpPhase { x, bound, duals, history, ended: false })
}

/// Reduced-cost fixing of the master's columns against an incumbent, from the row duals `y` of
/// an LP relaxation of the master (any `y ≥ 0` over a subset of its rows gives a valid bound).
/// Every master row reads `a·x ≥ lower`, so for `0 ≤ x ≤ 1` and reduced costs `d = c − Aᵀy`,
/// `c·x ≥ L + d_j·(x_j − x̂_j)` for every column `j`, where `L = Σ y·lower + Σ min(0, d)` and
/// `x̂_j` is the column's bound that minimises `d_j x_j` (weak duality). A column whose other
/// bound costs `L + |d_j| ≥` the incumbent's cost is at that minimising bound in every cheaper
/// pattern, so the master may fix it there. Why: HiGHS's presolve and root LP take much of a
/// master's time (BENCHMARKS "Session 90") and HiGHS fixes by reduced cost only after its root
/// LP; once a repaired incumbent is close to the LP bound, 5–30 % of the columns leave before
/// its presolve (Adult 9.3 → 7.5 s, c2-persons 1.7 → 1.4 s, medians of 3, the same costs;
/// BENCHMARKS "Session 91"). Nothing is trusted from the solver: `L` and `d` are recomputed
/// here from the duals, clamped to `y ≥ 0`, so the fixings hold whatever HiGHS's accuracy.
struct ReducedCosts {
    /// `L`: the Lagrangian value of the clamped duals.
    value: f64,
    /// `d_j`, one per column.
    reduced: Vec<f64>,
}

impl ReducedCosts {
    /// The reduced costs of `lp`'s columns under the duals `y` of its first `y.len()` rows
    /// (later rows, cuts added after that LP, count with dual 0).
    fn of(lp: &LinearProgram, y: &[f64]) -> ReducedCosts {
        let mut reduced: Vec<f64> = lp.columns.iter().map(|c| c.cost).collect();
        let mut value = 0.0;
        for (row, &yr) in lp.rows.iter().zip(y) {
            let yr = yr.max(0.0);
            if yr == 0.0 || !row.lower.is_finite() || row.upper.is_finite() {
                continue;
            }
            value += yr * row.lower;
            for &(j, a) in &row.coefs {
                reduced[j] -= yr * a;
            }
        }
        for (c, &d) in lp.columns.iter().zip(&reduced) {
            value += (d * c.lower).min(d * c.upper);
        }
        ReducedCosts { value, reduced }
    }

    /// `lp` with every free column fixed that no pattern cheaper than `cutoff` can move off
    /// its minimising bound; `None` when none is. A relative margin of 10⁻⁹ keeps rounding
    /// in the sums from fixing a column a pattern just below the cutoff needs.
    fn fixed(&self, lp: &LinearProgram, cutoff: f64) -> Option<(LinearProgram, usize)> {
        let slack = cutoff - self.value - 1e-9 * cutoff.abs().max(1.0);
        if slack < 0.0 {
            return None;
        }
        let fix: Vec<usize> = (0..lp.columns.len())
            .filter(|&j| {
                let c = &lp.columns[j];
                c.lower < c.upper && self.reduced[j].abs() * (c.upper - c.lower) > slack
            })
            .collect();
        if fix.is_empty() {
            return None;
        }
        let mut out = lp.clone();
        for &j in &fix {
            let c = &mut out.columns[j];
            let at = if self.reduced[j] > 0.0 { c.lower } else { c.upper };
            (c.lower, c.upper) = (at, at);
        }
        Some((out, fix.len()))
    }
}

/// A clean pattern containing `sup`, a pattern that protects most sensitive cells already (a
/// master MIP's, HiTaS's merged subtables): the audit-driven repair adds cells only for what the
/// attacker still finds, closing just those. Closing all of `sup` first, as a construction from
/// primaries does, cascades through its secondaries (measured on a flat 924-cell table: 9.2 %
/// of the value → 23.8 %). The first `open_rounds` rounds add only what the cuts ask for; later
/// ones close what they add. Falls back to that closure when the repair alone gets stuck.
/// `defer`: the deferral of its audits ([`Deferral`]), if any.
pub(crate) fn repaired<'p, 'a>(
    p: &'p Problem<'a>,
    sup: Vec<bool>,
    singleton_rule: bool,
    open_rounds: usize,
    defer: Option<Deferral>,
    deadline: &Deadline,
) -> Result<Work<'p, 'a>, SuppressError> {
    repaired_from(p, Auditor::new(p, sup), singleton_rule, open_rounds, defer, None, deadline)
}

/// [`repaired`] of the pattern of `aud`, an auditor that may have checked it already (its
/// first audit then re-uses those certificates and LPs). With `abandon_at`, its open repair
/// stops, the pattern unprotected, once it costs that much ([`Work::abandon_at`]).
fn repaired_from<'p, 'a>(
    p: &'p Problem<'a>,
    aud: Auditor<'p, 'a>,
    singleton_rule: bool,
    open_rounds: usize,
    defer: Option<Deferral>,
    abandon_at: Option<f64>,
    deadline: &Deadline,
) -> Result<Work<'p, 'a>, SuppressError> {
    let sup = aud.sup.clone();
    if deadline.reached() {
        // No time for the first audit, which only chooses between the open repair and the
        // closure, and takes minutes on a 100 k-cell merge that the limit cut short (HiTaS on a
        // 5-dimensional table: 44,565 sensitive cells, the first level alone reached the stop):
        // the closure is the quicker way to a clean pattern.
        return complete(p, sup, singleton_rule, super::Construction::Closure, deadline);
    }
    let mut w = Work::with_auditor(p, aud);
    w.abandon_at = abandon_at;
    w.aud.defer_singles = defer.map(|d| DeferSingles { min_cells: d.min_cells, ..DeferSingles::ALL });
    // The repair's audits try what their batch rounds leave again in small batches, then by
    // single LPs, before deferring it to the cubes: one budget for the whole repair, so what the
    // first audit leaves of it pays for the later rounds' single LPs (exact cuts) instead of a
    // cube for every bound their batch rounds do not reach.
    w.aud.retry_deferred = defer.map(|d| SmallBatches { columns: d.columns, until: deadline.at(), stopped: false });
    if let Some(d) = defer {
        w.aud.lazy_run = d.lazy_run;
    }
    // Open rounds first unless most targets fail (a pattern far from protecting, e.g. HiTaS's
    // merge when the time limit skipped its levels: the closure is the better start there):
    // each round re-audits only the failed targets. Measured on c4-persons, singleton rule on
    // (one 2,389-cell subtable): master patterns with 62–130 of 559 sensitive cells failing
    // repaired at 1.21 % of the value, where the closure (then used above one in ten) gave 1.30 %.
    let (t0, cpu0) = (std::time::Instant::now(), super::trace::cpu_s());
    let failures = w.check_within_grace(deadline, "the audit of HiTaS's merged pattern")?.len();
    trace(format_args!(
        "first audit {:.1}s ({:.1} CPU s): {failures} failures, {} LPs",
        t0.elapsed().as_secs_f64(),
        super::trace::cpu_s() - cpu0,
        w.aud.lps
    ));
    // The small batches' budget ends with the repair (drop trials and cleanups defer as before);
    // a run the hard stop cut short is the limit's hit.
    let budget_stopped = |w: &mut Work| {
        if w.aud.retry_deferred.take().is_some_and(|b| b.stopped) {
            deadline.record_hit();
        }
    };
    if failures * CLOSURE_FIRST_SHARE > p.sens.len() {
        budget_stopped(&mut w);
        return complete(p, sup, singleton_rule, super::Construction::Closure, deadline);
    }
    // Its rounds stop auditing at the first shortfalls ([`LAZY_SINGLES`]).
    w.aud.lazy_singles = Some(LAZY_SINGLES);
    let out = w.repair_open(singleton_rule, open_rounds, deadline);
    w.aud.lazy_singles = None;
    budget_stopped(&mut w);
    match out {
        Ok(()) => Ok(w),
        Err(SuppressError::Unprotected { .. }) => {
            complete(p, sup, singleton_rule, super::Construction::Closure, deadline)
        }
        Err(e) => Err(e),
    }
}

/// Drops what the repair of pattern `before` ([`repaired`]) added to it and the repaired pattern
/// `w` does not need, most costly first, within [`REPAIR_DROP_TRIALS`] audited drop trials;
/// returns how many it dropped. Why: the repair adds the cheapest cells each attacker's cut
/// asks for, round after round, and closes them (each added cell gets partners in its
/// relations), so it keeps cells that later additions made unnecessary. A handful of trials,
/// not a cleanup of the whole pattern; a work budget, so deterministic. Where the first audit
/// deferred bounds (a suppressed component of [`DEFER_SINGLES_MIN_CELLS`] cells or more) the
/// trials also end at [`repair_drop_columns`] LP columns: there a trial's LPs span that
/// component.
fn drop_repair_additions(
    w: &mut Work,
    before: &[bool],
    singleton_rule: bool,
    deadline: &Deadline,
) -> Result<usize, SuppressError> {
    let p = w.p;
    // On a giant component (HiTaS's merge of a 5-dimensional table) an audited trial would be
    // component LPs over ~10^5 cells: decided locally instead, as in the cleanup.
    w.decide_trials_locally_on_giant_components();
    let mut added: Vec<usize> = (0..p.n()).filter(|&i| w.sup()[i] && !before[i] && p.fix[i] == Fix::Free).collect();
    added.sort_by(|&a, &b| p.cost[b].total_cmp(&p.cost[a]).then(a.cmp(&b)));
    let cap = (w.aud.largest_component() >= DEFER_SINGLES_MIN_CELLS)
        .then(|| w.aud.lp_columns + repair_drop_columns(deadline.limit_s()));
    // A refused trial is refused at its first shortfalls ([`LAZY_SINGLES`]).
    let lazy0 = w.aud.lazy_singles.replace(LAZY_SINGLES);
    let mut dropped = 0;
    let mut out = Ok(());
    for c in added.into_iter().take(REPAIR_DROP_TRIALS) {
        if deadline.reached() || cap.is_some_and(|cap| w.aud.lp_columns >= cap) {
            break;
        }
        match w.try_drop(c, singleton_rule) {
            Ok(d) => dropped += usize::from(d),
            Err(e) => {
                out = Err(e);
                break;
            }
        }
    }
    w.aud.lazy_singles = lazy0;
    out.map(|()| dropped)
}

/// HiTaS's last step on the merged subtable pattern `merged`: the merged patterns already protect
/// every subtable, so they are kept and only what the whole-table attacker still finds is
/// repaired ([`repaired`]), instead of laying hypercubes over them; then a cleanup within
/// the budget `cleanup`, if any. The repair closes only the cells it adds: closing the whole merged
/// pattern first cascades through the exact subtables' secondaries (measured on a flat 924-cell
/// table, one subtable: 9.2 % → 23.8 % of the value, then 13 s of cleanup to come back). The
/// modular method publishes this; the tabu search starts from it.
pub(crate) fn complete_merged<'p, 'a>(
    p: &'p Problem<'a>,
    merged: &[bool],
    singleton_rule: bool,
    cleanup: Option<Cleanup>,
    deadline: &Deadline,
) -> Result<Work<'p, 'a>, SuppressError> {
    let t0 = std::time::Instant::now();
    trace(format_args!(
        "merged pattern: {} cells suppressed, cost {:.4} %",
        merged.iter().filter(|&&s| s).count(),
        p.cost_percent(p.cost_of(merged))
    ));
    let defer = Some(Deferral {
        min_cells: DEFER_SINGLES_MIN_CELLS,
        columns: small_batch_columns(deadline.limit_s()),
        lazy_run: MERGE_LAZY_RUN,
    });
    let mut w = repaired(p, merged.to_vec(), singleton_rule, MERGED_REPAIR_OPEN_ROUNDS, defer, deadline)?;
    let repaired_cost = p.cost_of(&w.aud.sup);
    let repair_s = t0.elapsed().as_secs_f64();
    let dropped = drop_repair_additions(&mut w, merged, singleton_rule, deadline)?;
    trace(format_args!(
        "merged pattern repaired {:.1}s ({repair_s:.1}s before the drop trials), cost {:.4} %, {:.4} % after {dropped} \
         of its additions dropped",
        t0.elapsed().as_secs_f64(),
        p.cost_percent(repaired_cost),
        p.cost_percent(p.cost_of(&w.aud.sup))
    ));
    if let Some(c) = cleanup {
        (w.cleanup_columns, w.cleanup_effort, w.cleanup_min_trials) = (c.columns, c.effort, c.min_trials);
        w.cleanup(singleton_rule, c.trials, deadline)?;
    }
    Ok(w)
}

/// How [`repaired`]'s audits of a merge run: which bounds they defer, what they may spend
/// before they do, and how long their lazy checks' hot-started runs are.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deferral {
    /// Suppressed components of at least this many cells leave the bounds their batch rounds do
    /// not reach to the repair ([`super::audit::Auditor::defer_singles`]).
    pub min_cells: usize,
    /// LP columns for the small batches and single LPs those bounds get first, over the whole
    /// repair ([`SmallBatches`]).
    pub columns: usize,
    /// Single LPs per hot-started run in its lazy checks ([`super::audit::Auditor::lazy_run`]).
    pub lazy_run: usize,
}

/// Attacker-LP columns (`Auditor::lp_columns`) of the global cleanup after HiTaS's merged
/// pattern is repaired — under the singleton rule, or when the pattern is far from the lower
/// bound ([`super::modular::default_cleanup`]) — per second of the stated time limit
/// ([`completion_cleanup_columns`]): 24 M at the 600-s default. A size-weighted work count:
/// a trial's LPs are ~3× larger on c3-enterprises (one component of ~9,000 cells) than on
/// c3-persons. Measured (release build, 2-core machine): c3-persons solves ~195 k columns a
/// second, c3-enterprises ~118 k, so this cleanup takes ~20 % and ~34 % of the limit.
/// The former budget, 20,000 LPs (17.3 M columns on c3-persons, 51 M on c3-enterprises), took
/// c3-enterprises's whole run to 89 % of the 600-s limit: a slower machine would have been
/// stopped by the limit, and published another pattern.
pub const COMPLETION_CLEANUP_COLUMNS_PER_SECOND: f64 = 40_000.0;

/// The LP-column budget of the modular completion's cleanup under a stated limit of
/// `time_limit_s` ([`COMPLETION_CLEANUP_COLUMNS_PER_SECOND`]).
pub fn completion_cleanup_columns(time_limit_s: f64) -> usize {
    (time_limit_s * COMPLETION_CLEANUP_COLUMNS_PER_SECOND).floor() as usize
}

/// The cleanup budget of the modular completion: the drop trials asked for, if any (by the
/// job); else the LP columns the client set (`cleanup_columns`:
/// [`super::modular::default_cleanup`]); else none, except under the singleton rule: its rows
/// in every subtable leave many secondaries that the whole table does not need. Measured on
/// c3-persons (11,264 cells, singleton rule on, release build): the repaired merged pattern
/// suppresses 4.03 % of the value, 500 drop trials (about 20,000 LPs) bring it to 3.65 %, 900
/// to 3.59 %; on c3-enterprises (61 % of the cells primary, one large component) each trial
/// costs ~10× more, so the budget is in LP columns, not trials.
pub(crate) fn modular_cleanup(opts: &ProtectOptions) -> Option<Cleanup> {
    let limit = opts.budget_limit_s();
    let asked = opts.cleanup_trials.map(|trials| Cleanup { trials, ..Cleanup::UNLIMITED });
    let min_trials = super::modular::cleanup_gap_trials(limit);
    let gap = opts.cleanup_columns.map(|columns| Cleanup { columns, min_trials, ..Cleanup::UNLIMITED });
    let singleton =
        opts.singleton_rule.then(|| Cleanup { columns: completion_cleanup_columns(limit), ..Cleanup::UNLIMITED });
    asked.or(gap).or(singleton).filter(|_| opts.cleanup)
}

/// The budget of a global cleanup: drop trials, attacker-LP columns
/// ([`Work::cleanup_columns`]) and simplex effort ([`Work::cleanup_effort`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cleanup {
    pub trials: usize,
    pub columns: usize,
    pub effort: u64,
    /// Trials run before `columns` and `effort` may end it ([`Work::cleanup_min_trials`]).
    pub min_trials: usize,
}

impl Cleanup {
    /// Every candidate, no work limit: the clock alone ends it.
    pub const UNLIMITED: Cleanup = Cleanup { trials: usize::MAX, columns: usize::MAX, effort: u64::MAX, min_trials: 0 };
}

/// Attacker-LP columns per second of the stated limit for the audits of HiTaS's merge repair
/// to try again, in small batches, the bounds their batch rounds leave on a deferred component
/// ([`SmallBatches`]): 12 M at the 600-s default, for the whole repair (session 57: what the
/// first audit leaves pays for later rounds' single LPs; c4-hier then lays 28 cubes instead
/// of 60 and publishes 4.90 % of the value instead of 4.93 %). Measured on c4-hier (release
/// build, 2-core machine): 222 LPs over its 17,657-cell component, 3.9 M columns, took 109 s
/// and certified 2,840 of 3,180 bounds; a larger table stops at its budget (or at the hard
/// stop) and leaves the rest to the cubes. What the small batches leave gets a single LP each
/// (an exact cut for the repair) from the same budget, as far as it goes: on c4-hier 340 LPs,
/// 6.0 M columns, 58.8 s (`Auditor::singles_within`).
pub const SMALL_BATCH_COLUMNS_PER_SECOND: f64 = 20_000.0;

/// The LP-column budget of the small batches under a stated limit of `time_limit_s`
/// ([`SMALL_BATCH_COLUMNS_PER_SECOND`]).
pub fn small_batch_columns(time_limit_s: f64) -> usize {
    (time_limit_s * SMALL_BATCH_COLUMNS_PER_SECOND).floor() as usize
}

/// Suppressed components of at least this many cells in HiTaS's merged pattern: the bounds
/// their batch LPs leave undecided are retried in small batches, then by single LPs within a
/// column budget ([`small_batch_columns`]), and what is left is repaired with a hypercube each
/// ([`Work::repair_by_cubes`]) instead of one single attacker LP each over the component.
/// Why: on the 4-dimensional c4-hier (29,101 cells; the merge's largest component ~21 k cells)
/// 3,180 such LPs had not finished after 22 minutes, on the 5-dimensional c5-persons (93 k
/// cells) ~1,900 after 16 (BENCHMARKS.md, sessions 45 and 47), where the batch rounds take ~2
/// minutes; with the cubes c4-hier's completion is published at 13.6 % of the value (its search
/// stopped by the 600-s limit), where `modular` failed and `fast` publishes 25.0 % (session 48).
/// Below it single LPs are cheap and give the repair exact cuts (cheaper than cubes); a table
/// below 15,000 cells has no such component (c3-enterprises' are ~9,000 cells).
const DEFER_SINGLES_MIN_CELLS: usize = 15_000;

/// [`repaired`] starts from the closure when more than one sensitive cell in this many fails.
const CLOSURE_FIRST_SHARE: usize = 2;

/// Rounds of [`repaired`]'s repair that add only what the cuts ask for before it closes the
/// cells it adds ([`Work::repair_open`]). Measured on HiTaS's merged pattern of an 11 k-cell
/// census table: 3 open rounds and 0.4 s repair its 34 shortfalls at 3.20 % of the value,
/// where one closed round gave 3.63 %.
const REPAIR_OPEN_ROUNDS: usize = 10;

/// Open rounds of the repair of HiTaS's merged pattern ([`complete_merged`]). Why more than a
/// master pattern's [`REPAIR_OPEN_ROUNDS`]: the merge protects almost every target, and each
/// open round audits only the few that fail, while closing the added cells cascades through
/// the whole table. Measured on the 11,317-cell c3-enterprises table (a merge whose subtable
/// solves differed by their LP hot starts): 5 shortfalls took 19 open rounds to repair at
/// 40.26 % of the value; closed after 10 rounds, the same merge became 42.01 % (~950 cells
/// added), and 40.98 % even after 100 cleanup trials.
const MERGED_REPAIR_OPEN_ROUNDS: usize = 50;

/// Single attacker LPs per chunk in the audits of [`repaired`]'s rounds and of
/// [`drop_repair_additions`]'s trials, which stop at the first chunk with a shortfall
/// ([`super::audit::Auditor::lazy_singles`]): a round repairs what it is given, a trial is
/// refused by one shortfall, so the rest of such an audit is wasted. Measured on HiTaS's merge
/// of Adult (ci build): ~370 failing bounds shared 3–7 added cells a round, and the repair took
/// 27 rounds of ~400 single LPs each; lazily it takes 36 rounds, most stopping at 32 failing
/// bounds, and 1.6 s instead of 3.2 s, its drop trials 1.0 s instead of 1.6 s, and the published
/// pattern is the same (and the same on the other five suite tables, singleton rule on and off).
const LAZY_SINGLES: usize = 32;

/// Single LPs per hot-started run in the lazy checks of the repair of HiTaS's merge and of its
/// drop trials: a chunk of [`LAZY_SINGLES`] in two runs, one per core, where one run kept the
/// other core idle. Measured (release build, 2 cores): Adult 2.86 → 2.28 s (singleton rule on
/// 3.95 → 3.53 s), the same files on the other suite tables, c3-enterprises and c4-hier. Not in
/// the exact subtables' greedy repairs: there other hot-start chains gave c4-hier's subtables
/// other patterns, a merge that was harder to repair, and a run that reached the 600-s limit.
const MERGE_LAZY_RUN: usize = 16;

/// Drop trials after a repair ([`drop_repair_additions`]; the most costly added cells first).
const REPAIR_DROP_TRIALS: usize = 100;

/// Attacker-LP columns per second of the stated limit for the drop trials after the repair of
/// a merge whose first audit deferred bounds ([`drop_repair_additions`]): 3 M at the 600-s
/// default. Why: once the repair follows the single LPs' cuts instead of laying cubes
/// ([`SmallBatches`]), its additions are fewer and needed more often, and each trial re-solves
/// certificates over the whole ~17 k-cell component of c4-hier: 2–23 s a trial, so 100 trials
/// ran into the 600-s limit (52 done, 5.08 → 4.97 % of the value; BENCHMARKS, "Session 54").
pub const REPAIR_DROP_COLUMNS_PER_SECOND: f64 = 5_000.0;

/// The LP-column budget of those drop trials under a stated limit of `time_limit_s`
/// ([`REPAIR_DROP_COLUMNS_PER_SECOND`]).
pub fn repair_drop_columns(time_limit_s: f64) -> usize {
    (time_limit_s * REPAIR_DROP_COLUMNS_PER_SECOND).floor() as usize
}

/// Branch-and-bound nodes of the first master MIP solve (see `nodes` in [`run`]).
const FIRST_MIP_NODES: usize = 500;

/// Tables up to this size start from the fast pattern after its cleanup; larger ones from the
/// pattern before it.
const FAST_CLEANUP_CELLS: usize = 2000;

/// Attacker-LP columns the fast start's cleanup may use ([`Work::cleanup_columns`]): the
/// master MIPs replace its pattern, so it need not be a good one. Why: on a 5-dimensional
/// census table (c5-persons) a HiTaS subtable of 4,884 cells (under 2,000 nonempty) spent
/// 367 s cleaning up its fast start (738 trials, 37,419 LPs) to 11.56 % of its cost, and
/// the first master MIP's repaired pattern was 3.64 %; its neighbours, with no cleanup,
/// started at 21–47 % and ended at 1–4 %. Capped, a start of that level (696 candidates)
/// took 12 s. Lowered from 1 M to 100 k after the 4-dimensional c4-hier (session 47): 313 of
/// the ~500 core-seconds of HiTaS's level 1 went to starts capped at 1 M (one: 2.74 % after
/// 126 s, its first master MIP 1.46 % 3 s later); at 100 k its levels took 258 s instead of
/// 500 s for the same merge (4.93 % of the value against 4.94 %), and c3-persons' and
/// c3-enterprises' HiTaS merges are unchanged (BENCHMARKS.md, "Session 47").
pub(crate) const START_CLEANUP_COLUMNS: usize = 100_000;

/// Tables above this many cells start the exact search from HiTaS's pattern (the merged exact
/// subtable solves, repaired: [`complete_merged`]) instead of the fast one. Why: on them the
/// master LP alone takes minutes, so the start is often what the time limit returns, and the
/// fast pattern is far from optimal there. Measured on the 11,264-cell c3-persons table,
/// singleton rule on, limit 600 s: the fast start was 6.95 % of the value and still the
/// answer when the cutting-plane phase hit the limit; HiTaS's pattern is 4.03 % after 11 s.
/// Smaller tables are one HiTaS subtable or a few, solved by this model anyway.
pub(crate) const HITAS_START_CELLS: usize = FAST_CLEANUP_CELLS;

/// A search of at most [`FAST_START_MAX_SOLVES`] master solves (`auto`'s budget) on a table of
/// at most this many cells starts from the fast pattern, not from HiTaS's, and the caller
/// falls back on `modular`'s pattern when it ends unproven ([`starts_fast`]). Why: there the
/// search proves its optimum from either start, and HiTaS's levels and merge cost more than
/// the better incumbent saves. Measured (release build, BENCHMARKS "Session 88"), the same
/// files: c2-persons (4,107 cells) 1.85 → 1.29 s, c4-persons (2,389) 4.36 → 1.87 s; under the
/// singleton rule 4.52 → 2.72 s, 20.8 → 4.8 s and adult (6,333) 20.7 → 17.8 s; EIA and adult
/// without the rule alike. On c3-persons (11,264 cells) the fast start is twice the optimum
/// and the search took 39.0 s instead of 31.4 s, until the stall rule's gap was capped
/// ([`STALL_GAP_CAP`]): since then 30.0 s against 32.1 s (medians of 3 and 2), another optimal
/// pattern, so the limit is `auto`'s whole exact range (`protect::AUTO_EXACT_MAX_CELLS`).
pub(crate) const FAST_START_MAX_CELLS: usize = 12_000;

/// See [`FAST_START_MAX_CELLS`]: the budget that leaves the fallback its time. An explicit
/// `optimal` (500 master solves) runs to its limit when it cannot prove, so it keeps HiTaS's
/// start and with it the promise never to end above `modular`.
pub(crate) const FAST_START_MAX_SOLVES: usize = 10;

/// Whether the exact search on a table of `cells` cells with `master_solves` master solves
/// starts from the fast pattern ([`FAST_START_MAX_CELLS`]).
pub(crate) fn starts_fast(cells: usize, master_solves: usize) -> bool {
    cells > HITAS_START_CELLS && cells <= FAST_START_MAX_CELLS && master_solves <= FAST_START_MAX_SOLVES
}

/// A search from the fast start whose gap on the secondary cost is above this ended unproven
/// (its tight masters stop within [`TIGHT_MIP_GAP`] of the whole pattern's cost, which on the
/// secondary cost alone is at most a few times more): the caller then tries `modular`. At or
/// below it the search's bound is the one reported, without the dual ascent and Lagrangian.
/// `auto`'s search stops at this gap (`protect::AUTO_EXACT_GAP`).
pub(crate) const PROVEN_SECONDARY_GAP: f64 = 1e-3;

/// The cost of the sensitive cells, suppressed in every pattern: a pattern's cost less this is
/// its secondary cost, the one the reported gap is on.
fn sensitive_cost(p: &Problem) -> f64 {
    (0..p.n()).filter(|&i| p.sens_of.contains_key(&(i as u32))).map(|i| p.cost[i]).sum()
}

/// Runs the method; returns the pattern and a lower bound on the secondary cost.
///
/// `start`: HiTaS's merged subtable pattern ([`HITAS_START_CELLS`]), completed into the first
/// incumbent when it is cheaper than the fast method's pattern. Any table size is accepted: the
/// LP phase works component by component ([`separation`]), and the time limit ends the search
/// with the best audited pattern (the start at worst) and the gap to the bound proven so far.
pub(crate) fn run(
    p: &Problem,
    opts: &ProtectOptions,
    start: Option<&[bool]>,
    deadline: &Deadline,
) -> Result<(Vec<bool>, Option<f64>), SuppressError> {
    let (best, lb, _) = search(p, opts, start, false, deadline)?;
    Ok((best, lb))
}

/// [`run`], plus the final audit of its pattern from the certificates of the search that found
/// it (the fast start's, HiTaS's completion's, a master MIP's audit or its repair's),
/// re-verified; `None` when they do not re-verify (then the caller audits from scratch). Why:
/// an audit from scratch of a 29 k-cell pattern took minutes past the limit (`tabu` on
/// c4-hier, BENCHMARKS "Session 53"), and on large tables the best pattern is often HiTaS's.
pub(crate) fn run_certified(
    p: &Problem,
    opts: &ProtectOptions,
    start: Option<&[bool]>,
    deadline: &Deadline,
) -> Result<Searched, SuppressError> {
    search(p, opts, start, true, deadline)
}

/// What [`search`] returns: the best pattern, the lower bound on its secondary cost, and its
/// audit from certificates (`certify` only).
type Searched = (Vec<bool>, Option<f64>, Option<super::AuditReport>);

/// The search's first incumbent: the fast method's pattern without its cleanup (which tries
/// every secondary with audits: minutes on tables of 10^4 cells), or HiTaS's merged `start`
/// completed, the cheaper of the two; the master MIPs improve on it.
fn start_pattern(
    p: &Problem,
    opts: &ProtectOptions,
    start: Option<&[bool]>,
    certify: bool,
    deadline: &Deadline,
    t0: std::time::Instant,
) -> Result<(Vec<bool>, Option<super::AuditReport>), SuppressError> {
    let fast_opts = ProtectOptions { cleanup: p.n() <= FAST_CLEANUP_CELLS, ..opts.clone() };
    let (mut best, mut best_audit) = fast::run_with_columns(p, &fast_opts, START_CLEANUP_COLUMNS, deadline)?;
    let best_cost = p.cost_of(&best);
    trace(format_args!(
        "optimal: fast start {:.1}s, cost {:.4} %",
        t0.elapsed().as_secs_f64(),
        p.cost_percent(best_cost)
    ));
    if let Some(merged) = start {
        // HiTaS is usually the cheaper start on census-shaped tables, not always (a random
        // synthetic table in the tests): keep the cheaper of the two.
        // The fast start is clean already: a completion the hard stop cuts short keeps it.
        // Completed as `modular` completes it, so the search never ends above its pattern.
        match complete_merged(p, merged, opts.singleton_rule, modular_cleanup(opts), deadline) {
            Ok(w) => {
                let c = p.cost_of(w.sup());
                trace(format_args!(
                    "optimal: HiTaS start {:.1}s, cost {:.4} %",
                    t0.elapsed().as_secs_f64(),
                    p.cost_percent(c)
                ));
                if c < best_cost {
                    (best, best_audit) = certified(w, certify, opts.singleton_rule)?;
                }
            }
            Err(SuppressError::TimeLimit { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok((best, best_audit))
}

/// The search of [`run`]; with `certify`, also the certified audit of its best pattern
/// ([`run_certified`]). Without it (HiTaS's subtables, linked groups) no certificate is
/// re-verified.
fn search(
    p: &Problem,
    opts: &ProtectOptions,
    start: Option<&[bool]>,
    certify: bool,
    deadline: &Deadline,
) -> Result<Searched, SuppressError> {
    let t0 = std::time::Instant::now();
    let mut lp = master(p, opts.singleton_rule, true);
    // A search whose masters branch (`auto`'s whole-table search, `optimal`), unlike HiTaS's
    // subtables with their masters of a few nodes.
    let branching = opts.mip_nodes >= FIRST_MIP_NODES;
    let duals = if branching { CutDuals::Hot } else { CutDuals::Cold };
    // The start patterns beside the first cutting-plane round, which reads nothing of them
    // ([`lp_rounds`]): the round's LP is one HiGHS solve on one core, the fast start mostly
    // audits on the other. The same rounds, cuts and patterns as one after the other. Why: on
    // EIA the search is one thread most of the time, and the two took ~0.1 s each
    // (BENCHMARKS "Session 93").
    let (started, first_round) = rayon::join(
        || start_pattern(p, opts, start, certify, deadline, t0),
        || {
            let first = 1..=opts.optimal_lp_rounds.min(1);
            let shortcuts = Shortcuts { duals, stall_against: None };
            lp_rounds(p, &mut lp, first, shortcuts, LpPhase::new(p.n()), deadline)
        },
    );
    let (mut best, mut best_audit) = started?;
    let mut best_cost = p.cost_of(&best);
    let fixed_cost = sensitive_cost(p);
    let infeasible = |why: &str| SuppressError::Infeasible {
        cell: p.sens.first().map_or(0, |s| s.cell as usize),
        coord: Vec::new(),
        why: why.into(),
    };
    let shortcuts = Shortcuts { duals, stall_against: (branching && !opts.singleton_rule).then_some(best_cost) };
    let phase =
        first_round.and_then(|phase| lp_rounds(p, &mut lp, 2..=opts.optimal_lp_rounds, shortcuts, phase, deadline));
    // Reduced costs only where masters branch: HiTaS's subtables' masters of a few nodes are small.
    let (mut lower, reduced) = match phase {
        Ok(phase) => (phase.bound, phase.duals.filter(|_| branching).map(|y| ReducedCosts::of(&lp, &y))),
        Err(SuppressError::Lp { source: lp::LpError::Infeasible, .. }) => {
            return Err(infeasible("the master LP relaxation has no feasible pattern"))
        }
        Err(SuppressError::Lp { source: source @ lp::LpError::Solver { .. }, context }) => {
            // HiGHS gave up on the master (seen on a P(10) enterprise subtable, values to 10^10):
            // the incumbent is the fast method's audited pattern, so end with it, unbounded,
            // rather than fail a run whose table can be protected.
            trace(format_args!("optimal: {context}: {source}; keeping the fast pattern"));
            return Ok((best, None, best_audit));
        }
        Err(e) => return Err(e),
    };
    trace(format_args!(
        "optimal: LP phase {:.1}s, bound {:.4} %, {} rows",
        t0.elapsed().as_secs_f64(),
        p.cost_percent(lower),
        lp.rows.len()
    ));
    // The dearest pattern that ends the search at `lower`: within `optimal_gap` on the whole
    // cost, or `secondary_gap` on the secondary cost (the gap reported; `c − lower ≤ g·(c − fixed)`
    // solved for `c`).
    let stop_cost = |lower: f64| {
        let g = opts.secondary_gap;
        ((lower - g * fixed_cost) / (1.0 - g)).max(lower * (1.0 + opts.optimal_gap))
    };
    let close = |best_cost: f64, lower: f64| best_cost <= stop_cost(lower) + 1e-9 * best_cost.max(1.0);
    // Node budget of the next master solve: small while its patterns still violate capacity
    // cuts (they are cut off anyway, so proving them optimal is wasted work), doubled up to
    // `mip_nodes` each time a clean pattern leaves the optimum unproven.
    let mut nodes = FIRST_MIP_NODES.min(opts.mip_nodes.max(1));
    // Whether the next master stops within [`LOOSE_MIP_GAP`] of its bound: one after a pattern
    // that failed at [`LOOSE_AFTER_FAILURES`] or more bounds, and the first master of a search
    // that branches. Why the first: its pattern comes from the LP phase's cuts alone, so the
    // proof of its optimum is wasted when the audit rejects it, and redone by the tight master
    // that follows when the audit finds it clean. Measured (BENCHMARKS "Session 87", medians of
    // 3, the same files): c2-persons 2.09 → 1.83 s, EIA 2.26 → 2.12 s; c3-persons the same
    // time, Adult another optimal pattern ~0.2 s slower; under the singleton rule the same files.
    let mut loose_next = branching;
    for round in 1..=opts.master_solves {
        if close(best_cost, lower) || deadline.reached() {
            break;
        }
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
        // A loose master looks for patterns cheaper than the incumbent only (its cutoff), so
        // it gets no start: HiGHS would take the incumbent and stop at once, within the gap.
        let loose = loose_next;
        // So does a master whose columns are fixed by reduced cost against the incumbent: the
        // incumbent itself is usually outside what is left.
        let pruned = reduced.as_ref().and_then(|r| r.fixed(&lp, best_cost));
        let cut_off = loose || pruned.is_some();
        let o = SolveOptions {
            time_limit_s: Some(deadline.left_s()),
            mip_rel_gap: Some(if loose {
                LOOSE_MIP_GAP
            } else if branching {
                // No tighter than the search's own gap on the secondary cost: HiGHS's gap is
                // relative to the master's whole cost `c ≥ lower`, so `c − bound ≤ g·c` with
                // `g = secondary_gap·(1 − fixed/lower)` keeps `c − bound ≤ secondary_gap·(c − fixed)`.
                let share = if lower.is_finite() && lower > fixed_cost { 1.0 - fixed_cost / lower } else { 0.0 };
                TIGHT_MIP_GAP.max(opts.secondary_gap * share)
            } else {
                1e-6
            }),
            mip_max_nodes: Some(nodes),
            start: (!cut_off).then(|| best.iter().map(|&b| f64::from(u8::from(b))).collect()),
            always_presolve: false,
            pseudocost_branching: true,
            skip_sub_mip_heuristics: nodes <= LEAN_MASTER_MAX_NODES,
            cutoff: cut_off.then(|| best_cost - 1e-9 * best_cost.abs().max(1.0)),
        };
        let fixed = pruned.as_ref().map_or(0, |(_, n)| *n);
        let s = match lp::solve(pruned.as_ref().map_or(&lp, |(m, _)| m), &o) {
            Ok(s) => s,
            Err(lp::LpError::Infeasible) if cut_off => {
                // No pattern of the master below the incumbent's cost: the master is a
                // relaxation (and its fixings exclude only dearer patterns), so the incumbent
                // is optimal.
                lower = lower.max(best_cost);
                break;
            }
            Err(lp::LpError::TimeLimitNoSolution) if loose && !deadline.reached() => {
                // The node budget ended before a cheaper pattern: the next master, with the
                // incumbent as its start, searches in full.
                loose_next = false;
                continue;
            }
            Err(lp::LpError::TimeLimitNoSolution) if fixed > 0 && !deadline.reached() && nodes < opts.mip_nodes => {
                // A tight master, fixed, found nothing cheaper within its nodes: as one started
                // from the incumbent that returns it, the next gets more nodes.
                nodes = (nodes * 4).min(opts.mip_nodes);
                continue;
            }
            Err(lp::LpError::Infeasible) => return Err(infeasible("the master problem has no feasible pattern")),
            Err(lp::LpError::TimeLimitNoSolution) => {
                // The node budget or the hard stop, before an incumbent: keep the fallback.
                let _ = deadline.reached();
                break;
            }
            Err(source @ lp::LpError::Solver { .. }) => {
                // As in the LP phase: keep the best audited pattern and the bound proven so far.
                trace(format_args!("optimal: master MIP: {source}; keeping the best pattern"));
                break;
            }
            Err(source) => return Err(SuppressError::Lp { context: "master MIP".into(), source }),
        };
        if s.dual_bound.is_finite() {
            // Never above the incumbent: a master with a cutoff or fixings bounds only the
            // patterns cheaper than it (the rest cost at least as much).
            lower = lower.max(s.dual_bound.min(s.objective).min(best_cost));
        }
        let x: Vec<bool> = s.columns.iter().map(|v| *v > 0.5).collect();
        let mut aud = Auditor::new(p, x.clone());
        let fails = aud.check()?;
        trace(format_args!(
            "optimal: MIP {round} {:.1}s: {:?} {:.4} % (bound {:.4} %), {} failures, {fixed} of {} columns fixed by reduced cost",
            t0.elapsed().as_secs_f64(),
            s.status,
            p.cost_percent(s.objective),
            p.cost_percent(lower),
            fails.len(),
            p.n()
        ));
        let far_from_clean = fails.len() >= LOOSE_AFTER_FAILURES;
        loose_next = far_from_clean;
        if !fails.is_empty() {
            // The master learns the cuts of this pattern's failures before its repair, which
            // may solve the master over the pattern's supersets ([`repair_master_pattern`]).
            for cut in &failure_cuts(fails) {
                add_cut(&mut lp, cut);
            }
            // Repair the master's pattern into a clean one: an incumbent close to the bound long
            // before the master's pattern is clean.
            // Small tables search the master over the pattern's supersets; larger ones only
            // for a pattern far from clean, and only below the cost that ends the search
            // ([`Supersets::below`]).
            let supersets = if p.n() <= MASTER_REPAIR_MAX_CELLS {
                Supersets { solves: opts.master_repair_solves, below: None }
            } else if far_from_clean && branching && lower.is_finite() {
                Supersets { solves: opts.master_repair_solves, below: Some(stop_cost(lower)) }
            } else {
                Supersets { solves: 0, below: None }
            };
            // A pattern far from clean (before a loose master that branches) is repaired for
            // an incumbent to cut that master off at, which that master usually beats: its
            // repair goes without the drop trials. Measured: c3-persons' first two repairs
            // (42 and 88 failures) spent ~5 s in them; patterns close to clean keep them, as
            // their repairs may end the search (EIA under the singleton rule: 1.5 % dearer
            // without any drop trials). BENCHMARKS "Session 87".
            let greedy = Greedy { drop_trials: !(far_from_clean && branching), useless_from: best_cost };
            if let Some(r) = repair_master_pattern(p, &mut lp, aud, supersets, opts.singleton_rule, greedy, deadline)? {
                let c = p.cost_of(r.sup());
                if c < best_cost - 1e-9 {
                    (best, best_audit) = r.certified(certify, opts.singleton_rule)?;
                    best_cost = c;
                    trace(format_args!("optimal: repaired pattern {:.4} %", p.cost_percent(c)));
                }
            }
            continue;
        }
        let c = p.cost_of(&x);
        if c < best_cost - 1e-9 {
            (best, best_audit) = Repaired::Master(x, Box::new(aud)).certified(certify, opts.singleton_rule)?;
            best_cost = c;
        }
        if loose {
            // Clean, but only within the loose gap: the next master, tight, proves or improves it.
            continue;
        }
        if s.status == LpStatus::Optimal {
            // Proven within the master's gap: a search that branches keeps HiGHS's dual bound,
            // taken above; HiTaS's subtables (gap 1e-6) take the optimum as their bound.
            if !branching {
                lower = lower.max(s.objective.min(best_cost));
            }
            break;
        }
        if nodes >= opts.mip_nodes || deadline.reached() {
            break; // stopped by the node budget with nothing new to cut off
        }
        nodes = (nodes * 4).min(opts.mip_nodes);
    }
    let lb = lower.is_finite().then(|| (lower - fixed_cost).max(0.0));
    Ok((best, lb, best_audit))
}

/// A master pattern failing at this many bounds or more is far from what the optimum needs:
/// its successor stops at [`LOOSE_MIP_GAP`] instead of proving its own optimum, which the next
/// audit would mostly reject again. Why: on Adult (singleton rule off) the masters after the
/// first failed at 96, 38 and 18 bounds, each after ~160 nodes (2.5 of its 3 s) proving an
/// optimum 0.4 % above the root's bound; stopped there, they take ~1 s (BENCHMARKS "Session 85").
const LOOSE_AFTER_FAILURES: usize = 10;

/// The relative MIP gap of those masters.
const LOOSE_MIP_GAP: f64 = 0.01;

/// The relative MIP gap of the other masters of a search that branches (HiGHS's default; the
/// search's lower bound is the master's dual bound, so the reported gap stays at most this).
/// Why not 1e-6: the last 0.01 % is proof, not pattern — c3-persons' last master found its
/// optimum at 2.1 s and spent 5.2 s more proving it; at 1e-4 the suite's searches end on the
/// same files, c3-persons 34.1 → 31.4 s and Adult 10.95 → 10.24 s (medians of 3, BENCHMARKS
/// "Session 88"). HiTaS's subtables (masters of a few nodes) keep 1e-6.
const TIGHT_MIP_GAP: f64 = 1e-4;

/// Master MIPs of at most this many nodes run without HiGHS's RINS and RENS
/// ([`SolveOptions::skip_sub_mip_heuristics`]). Why: within a budget of a few nodes the root is
/// the whole solve, and on the README example's table those sub-MIPs were half of it, polishing
/// patterns the audit rejects anyway; without them its HiTaS subtable (10 nodes per master)
/// took 27.9 s instead of 56.6 s for a 3.4 % cheaper pattern. Longer searches keep them:
/// `optimal` (500 nodes and up) on the same table ended its 600 s 3.8 % dearer without them
/// (BENCHMARKS "Session 82").
const LEAN_MASTER_MAX_NODES: usize = 50;

/// Master MIP solves of [`repair_master_pattern`]'s search over supersets (the default of
/// `ProtectOptions::master_repair_solves`).
pub(crate) const MASTER_REPAIR_SOLVES: usize = 10;

/// Branch-and-bound nodes of each of those solves.
const MASTER_REPAIR_NODES: usize = 200;

/// Tables above this many cells get the greedy repair alone. Why: measured on the 924-cell
/// `salary` table (BENCHMARKS "Session 59"), where the search over supersets adds ~70 s to a
/// 100-s run; on larger tables each of its solves and greedy repairs costs more, and a test's
/// table of over 2,000 cells (`optimal` with a budget of 2 master solves) ran past 9 minutes
/// in the unoptimised CI build, where it takes 2.5 minutes without the search.
const MASTER_REPAIR_MAX_CELLS: usize = 1_000;

/// The capacity cuts of an audit's failures, in a fixed order: the master's rows, hence its
/// patterns, do not depend on the order in which the audit found them.
fn failure_cuts(fails: Vec<Failure>) -> Vec<Cut> {
    let mut cuts: Vec<Cut> = fails.into_iter().filter_map(|f| f.cut).collect();
    cuts.sort_by(|a, b| a.coefs.partial_cmp(&b.coefs).unwrap_or(std::cmp::Ordering::Equal));
    cuts
}

/// A clean pattern: a master solve the audit found clean, or a greedy repair.
enum Repaired<'p, 'a> {
    Master(Vec<bool>, Box<Auditor<'p, 'a>>),
    Greedy(Box<Work<'p, 'a>>),
}

impl Repaired<'_, '_> {
    fn sup(&self) -> &[bool] {
        match self {
            Repaired::Master(y, _) => y,
            Repaired::Greedy(w) => w.sup(),
        }
    }

    /// The pattern and, with `certify`, its audit from its certificates ([`certified`]).
    fn certified(
        self,
        certify: bool,
        singleton_rule: bool,
    ) -> Result<(Vec<bool>, Option<super::AuditReport>), SuppressError> {
        match self {
            Repaired::Greedy(w) => certified(*w, certify, singleton_rule),
            Repaired::Master(y, _) if !certify => Ok((y, None)),
            Repaired::Master(y, mut aud) => {
                aud.stop = None;
                Ok((y, aud.recheck_or_reaudit(singleton_rule)?))
            }
        }
    }
}

/// How [`greedy_repair`] repairs a master pattern.
#[derive(Debug, Clone, Copy)]
struct Greedy {
    /// Whether the cells it added are then tried for dropping ([`drop_repair_additions`]).
    drop_trials: bool,
    /// The cost from which its pattern is of no use to the caller (the search's incumbent;
    /// infinite when any clean pattern serves, e.g. as a start). Without drop trials the
    /// repair gives up there. Why: a master pattern far from clean is repaired for an incumbent
    /// below the search's, and once the repair passes the incumbent's cost the rest of it is
    /// wasted (c3-persons' second master, 86 failures: 0.85 s instead of 1.34 s, the same files;
    /// BENCHMARKS "Session 94").
    useless_from: f64,
}

impl Greedy {
    /// A repair whose every clean pattern is of use.
    fn keeping(drop_trials: bool) -> Self {
        Self { drop_trials, useless_from: f64::INFINITY }
    }
}

/// The greedy repair of the pattern of `aud` ([`repaired`], then, with drop trials,
/// [`drop_repair_additions`]) if it ends clean below [`Greedy::useless_from`]; `aud` may have
/// checked the pattern already.
fn greedy_repair<'p, 'a>(
    p: &'p Problem<'a>,
    aud: Auditor<'p, 'a>,
    singleton_rule: bool,
    greedy: Greedy,
    deadline: &Deadline,
) -> Result<Option<Work<'p, 'a>>, SuppressError> {
    let x = aud.sup.clone();
    // Without drop trials the repair only adds cells, so past the cost that makes it useless it
    // never comes back below: it stops there.
    let abandon_at = (!greedy.drop_trials && greedy.useless_from.is_finite()).then_some(greedy.useless_from);
    let Ok(mut w) = repaired_from(p, aud, singleton_rule, REPAIR_OPEN_ROUNDS, None, abandon_at, deadline) else {
        return Ok(None);
    };
    // Judged here too: `repaired_from`'s fallback on the closure repairs in full.
    w.abandon_at = abandon_at;
    if w.abandoned() {
        return Ok(None);
    }
    if greedy.drop_trials {
        drop_repair_additions(&mut w, &x, singleton_rule, deadline)?;
    }
    Ok(w.aud.check()?.is_empty().then_some(w))
}

/// How far [`repair_master_pattern`] searches the master over a pattern's supersets.
#[derive(Debug, Clone, Copy)]
struct Supersets {
    /// Master solves (0: the greedy repair alone).
    solves: usize,
    /// The cost that ends the exact search, if the search over supersets is held below it.
    below: Option<f64>,
}

/// The cheapest clean repair found of master pattern `x`, whose failures' cuts `lp` already
/// has: the greedy repair of `x` ([`greedy_repair`]), and the master MIP over the supersets of
/// `x` (its cells fixed suppressed) within `solves` solves of [`MASTER_REPAIR_NODES`] nodes.
/// A solve the audit finds clean is a candidate; else its pattern is repaired greedily, and its
/// failures become cuts of the repair and of `lp` (valid for every pattern). Why: the greedy
/// repair adds the cheapest cells each cut asks for and then closes them, and costs the more
/// the more cells fail. On the README example's flat 924-cell `salary` table (enterprise
/// contributors, `NK(1,85)`) it took a master pattern at 8.59 % of the table's cost with 7
/// failures to 9.44 % (bound 8.30 %); the master over its supersets needs 8.62 % and leaves 5
/// failures, then 3–4, each solve a little dearer, so the greedy repairs of its patterns are
/// what end the search. Fixing `x` leaves a small MIP: the rows `x` satisfies drop out in
/// presolve.
///
/// With `supersets.below`, the cost at which the search ends (a pattern far from clean on a
/// table too large for the whole search over supersets), that search runs only when it could
/// end the search — `x` costs at most that, the greedy repair more — with that cost as its
/// cutoff. Why: on Adult (6,333 cells) the greedy repair of the first master's pattern (439
/// failures) came to 1.9583 % of the value and four more masters followed; over the supersets
/// it came to 1.9547 % (a heuristic's pattern above the cutoff, which HiGHS keeps), and the
/// second master's pattern (38 failures) to 1.9539 %, within 0.1 % of the bound: two masters
/// instead of five, 6.10 → 4.18 s (medians of 4), 0.017 % dearer (BENCHMARKS "Session 93").
/// Without the cutoff, on every pattern, c3-persons' searches over supersets (2–3 s each) found
/// nothing the next master did not, 26 → 39 s; with it, EIA's pattern close to clean (2
/// failures) spent 0.2 s to find nothing below the stop, so those keep the greedy repair alone.
fn repair_master_pattern<'p, 'a>(
    p: &'p Problem<'a>,
    lp: &mut LinearProgram,
    aud: Auditor<'p, 'a>,
    supersets: Supersets,
    singleton_rule: bool,
    greedy: Greedy,
    deadline: &Deadline,
) -> Result<Option<Repaired<'p, 'a>>, SuppressError> {
    let Supersets { solves, below: stop_at } = supersets;
    // A greedy repair is of use at any cost where it starts the search over supersets.
    let greedy = if stop_at.is_none() && solves > 0 { Greedy::keeping(greedy.drop_trials) } else { greedy };
    let x = aud.sup.clone();
    let mut best = greedy_repair(p, aud, singleton_rule, greedy, deadline)?.map(|w| Repaired::Greedy(Box::new(w)));
    if solves == 0 {
        return Ok(best);
    }
    if let Some(t) = stop_at {
        // Nothing to search without room below the stop: `optimal`'s stop (no gap) is the
        // bound, which a proven master's pattern reaches already.
        let room = t - p.cost_of(&x) > 1e-9 * t.abs().max(1.0);
        if !room || best.as_ref().is_some_and(|b| p.cost_of(b.sup()) <= t) {
            return Ok(best);
        }
    }
    let keep = |best: &mut Option<Repaired<'p, 'a>>, r: Repaired<'p, 'a>| {
        if best.as_ref().is_none_or(|b| p.cost_of(r.sup()) < p.cost_of(b.sup()) - 1e-9) {
            *best = Some(r);
        }
    };
    let mut r = lp.clone();
    for (c, _) in r.columns.iter_mut().zip(&x).filter(|(_, &s)| s) {
        c.lower = c.upper.min(1.0);
    }
    for _ in 0..solves {
        if deadline.reached() {
            break;
        }
        let o = SolveOptions {
            time_limit_s: Some(deadline.left_s()),
            mip_rel_gap: Some(1e-6),
            mip_max_nodes: Some(MASTER_REPAIR_NODES),
            // Below a stop the greedy repair is above, it is no start.
            start: if stop_at.is_some() {
                None
            } else {
                best.as_ref().map(|b| b.sup().iter().map(|&s| f64::from(u8::from(s))).collect())
            },
            always_presolve: false,
            pseudocost_branching: true,
            // Kept: skipping RINS and RENS here too gave the README example's table the same
            // pattern, skipping them here alone a 5.4 % dearer one (BENCHMARKS "Session 82").
            skip_sub_mip_heuristics: false,
            cutoff: stop_at,
        };
        let Ok(s) = lp::solve(&r, &o) else { break };
        let y: Vec<bool> = s.columns.iter().map(|v| *v > 0.5).collect();
        if best.as_ref().is_some_and(|b| p.cost_of(&y) >= p.cost_of(b.sup()) - 1e-9) {
            break; // the master over the supersets cannot beat the best repair any more
        }
        let mut aud = Auditor::new(p, y.clone());
        let fails = aud.check()?;
        trace(format_args!(
            "optimal: master repair {:?} {:.4} %, {} failures",
            s.status,
            p.cost_percent(p.cost_of(&y)),
            fails.len()
        ));
        if fails.is_empty() {
            keep(&mut best, Repaired::Master(y, Box::new(aud)));
            break;
        }
        for cut in &failure_cuts(fails) {
            add_cut(&mut r, cut);
            add_cut(lp, cut);
        }
        if let Some(w) = greedy_repair(p, aud, singleton_rule, greedy, deadline)? {
            keep(&mut best, Repaired::Greedy(Box::new(w)));
        }
    }
    Ok(best)
}

/// `w`'s pattern and, with `certify`, its audit from its certificates ([`Work::into_certified`],
/// past the hard stop like any publication audit).
fn certified(
    w: Work,
    certify: bool,
    singleton_rule: bool,
) -> Result<(Vec<bool>, Option<super::AuditReport>), SuppressError> {
    if !certify {
        return Ok((w.sup().to_vec(), None));
    }
    w.into_certified(singleton_rule)
}

#[cfg(test)]
mod tests {
    use crate::suppress::{audit, protect, AuditOptions, Method, ProtectOptions, SuppressError};
    use crate::table::synth::{generate, SynthSpec};
    use crate::table::{CellStatus, Table};

    fn spec(dims: Vec<Vec<usize>>, density: f64, seed: u64) -> SynthSpec {
        SynthSpec { dims, density, mean_freq: 4.0, min_freq: 3, protection: 0.15, seed }
    }

    /// A cutting-plane round that raises the bound by less than [`super::STALLED_SHARE_OF_GAP`]
    /// of the gap to the incumbent, that gap at most [`super::STALL_GAP_CAP`] of the bound,
    /// ends the loop before its separation: against an incumbent far above the bound (the cap
    /// decides) the loop ends with the master of the rounds before the stalled one and the
    /// bound of the stalled one. A round whose cuts are fewer than [`super::FEW_CUTS_SHARE`] of
    /// the protection bounds ends it with that round's cuts and bound. Both read off loops of
    /// fixed rounds without the rules.
    #[test]
    fn a_stalled_round_or_one_of_few_cuts_ends_the_cutting_planes() {
        use super::super::budget::Deadline;
        use super::super::problem::Problem;
        use super::{
            master, strengthen_bound, CutDuals, Shortcuts, FEW_CUTS_SHARE, STALLED_SHARE_OF_GAP, STALL_GAP_CAP,
        };
        let deadline = Deadline::after(600.0);
        let far = Shortcuts { duals: CutDuals::Cold, stall_against: Some(1e30) };
        let (mut longer, mut past_two, mut stalled, mut few_cuts) = (0, 0, 0, 0);
        // Small tables stall; only tables of over 100 sensitive cells can have a round of few cuts.
        let small = (0..16).map(|seed| (vec![vec![4, 3], vec![3, 2], vec![2]], seed));
        let larger = (0..4).map(|seed| (vec![vec![6, 4], vec![4, 3], vec![2]], seed));
        for (dims, seed) in small.chain(larger) {
            let t = generate(&spec(dims, 0.6, seed)).unwrap();
            let p = Problem::from_table(&t, None);
            let few = |cuts: usize| (cuts as f64) < FEW_CUTS_SHARE * (2 * p.sens.len()) as f64;
            let cutting_planes = |rounds: usize, shortcuts: Shortcuts| {
                let mut lp = master(&p, false, true);
                let bound = strengthen_bound(&p, &mut lp, rounds, shortcuts, &deadline).unwrap().bound;
                (lp.rows.len(), bound)
            };
            let rows = master(&p, false, true).rows.len();
            let (one, two) = (cutting_planes(1, Shortcuts::NONE), cutting_planes(2, Shortcuts::NONE));
            // The first round whose rise is below the capped share, that finds no cut, or
            // whose cuts are few.
            let mut expected = (one.0 > rows && few(one.0 - rows)).then_some((one, 1));
            let mut before = one;
            for r in 2..=20 {
                if expected.is_some() {
                    break;
                }
                let now = cutting_planes(r, Shortcuts::NONE);
                if now.1 - before.1 < STALLED_SHARE_OF_GAP * STALL_GAP_CAP * now.1.abs() {
                    expected = Some(((before.0, now.1), r));
                    stalled += 1;
                } else if now.0 == before.0 {
                    expected = Some((now, r));
                } else if few(now.0 - before.0) {
                    expected = Some((now, r));
                    few_cuts += 1;
                }
                before = now;
            }
            let (want, r) = expected.expect("the loop stalls or runs out of cuts within 20 rounds");
            assert_eq!(cutting_planes(100, far), want, "seed {seed}, {} sensitive cells", p.sens.len());
            longer += usize::from(two.0 > one.0);
            past_two += usize::from(r > 2);
        }
        assert!(longer >= 2, "only {longer} tables with cuts in the second round");
        assert!(past_two >= 1, "no table whose loop went past its second round");
        assert!(stalled >= 1 && few_cuts >= 1, "stalled {stalled}, ended on few cuts {few_cuts}: a rule untested");
    }

    /// Reduced-cost fixing keeps every master pattern cheaper than its cutoff: with the cutoff
    /// just above the master's optimum, the fixed master has the same optimum; and the duals'
    /// Lagrangian value is the LP's objective (HiGHS's sign convention read right), never above.
    #[test]
    fn reduced_cost_fixing_keeps_the_masters_optimum() {
        use super::super::budget::Deadline;
        use super::super::problem::Problem;
        use super::{master, strengthen_bound, ReducedCosts, Shortcuts};
        use crate::lp::{self, SolveOptions};
        let deadline = Deadline::after(600.0);
        let exact = SolveOptions { mip_rel_gap: Some(1e-9), ..Default::default() };
        let mut fixed_total = 0;
        for seed in 0..8 {
            let t = generate(&spec(vec![vec![3, 2], vec![2, 2], vec![2]], 0.7, seed)).unwrap();
            let p = Problem::from_table(&t, None);
            let mut lp = master(&p, false, true);
            let phase = strengthen_bound(&p, &mut lp, 3, Shortcuts::NONE, &deadline).unwrap();
            let bound = phase.bound;
            let r = ReducedCosts::of(&lp, &phase.duals.expect("an LP solved to optimality"));
            let tol = 1e-7 * bound.abs().max(1.0);
            assert!(
                r.value <= bound + tol && r.value >= bound - 1e-4 * bound.abs().max(1.0),
                "seed {seed}: {} vs {bound}",
                r.value
            );
            let optimum = lp::solve(&lp, &exact).unwrap().objective;
            for cutoff in [optimum * (1.0 + 1e-6) + 1e-6, optimum + 0.05 * (optimum - r.value).abs()] {
                let Some((fixed, n)) = r.fixed(&lp, cutoff) else { continue };
                fixed_total += n;
                let again = lp::solve(&fixed, &exact).unwrap().objective;
                assert!(
                    (again - optimum).abs() <= 1e-6 * optimum.abs().max(1.0),
                    "seed {seed}: {again} vs {optimum}, {n} fixed"
                );
            }
        }
        assert!(fixed_total > 0, "no column fixed on any table");
    }

    /// A search given a gap on the secondary cost (`secondary_gap`, `auto`'s exact range) ends
    /// with a pattern within that gap of its bound on every table, the bound never above the
    /// optimum; a wide gap lets some search stop above the optimum, so the gap decides where it
    /// stops (with the rule ignored, every search proves its optimum: checked by mutation).
    #[test]
    fn a_search_stops_within_its_secondary_gap() {
        use super::super::budget::Deadline;
        use super::super::problem::Problem;
        use super::super::relative_gap;
        let deadline = Deadline::after(600.0);
        let opts = |g: f64| ProtectOptions {
            method: Method::Optimal,
            singleton_rule: false,
            // Enough master solves that the gap, not the budget, ends the searches.
            master_solves: 100,
            mip_nodes: 500,
            secondary_gap: g,
            ..Default::default()
        };
        let mut stopped_above = 0;
        for seed in 0..6 {
            let t = generate(&spec(vec![vec![3, 2], vec![3, 2], vec![2]], 0.7, seed)).unwrap();
            let p = Problem::from_table(&t, None);
            let fixed = super::sensitive_cost(&p);
            let (proven, proven_lb) = super::run(&p, &opts(0.0), None, &deadline).unwrap();
            let optimum = p.cost_of(&proven) - fixed;
            assert!(proven_lb.is_some_and(|b| b <= optimum * (1.0 + 1e-9)), "seed {seed}");
            for g in [1e-3, 0.2] {
                let (sup, lb) = super::run(&p, &opts(g), None, &deadline).unwrap();
                let (cost, lb) = (p.cost_of(&sup) - fixed, lb.expect("a bound"));
                assert!(relative_gap(cost, lb) <= g + 1e-12, "seed {seed}, gap {g}: cost {cost}, bound {lb}");
                assert!(lb <= optimum * (1.0 + 1e-9), "seed {seed}: bound {lb} above the optimum {optimum}");
                if g == 0.2 && cost > optimum * (1.0 + 1e-9) {
                    stopped_above += 1;
                }
            }
        }
        assert!(stopped_above > 0, "no search stopped above the optimum within a 20 % gap");
    }

    /// The singleton rule's cleanup budget (LP columns) follows the limit the job stated, also
    /// in a task sent on with what is left of it; an asked budget or `cleanup = false` decide.
    #[test]
    fn the_singleton_cleanup_budget_follows_the_stated_limit() {
        let o = ProtectOptions { method: Method::Modular, singleton_rule: true, ..Default::default() };
        let budget = |o: &ProtectOptions| super::modular_cleanup(o).map(|c| (c.trials, c.columns));
        assert_eq!(budget(&o), Some((usize::MAX, 24_000_000)), "600-s default");
        assert_eq!(budget(&o.with_time_left(3.5)), budget(&o));
        assert_eq!(budget(&ProtectOptions { time_limit_s: 1200.0, ..o.clone() }), Some((usize::MAX, 48_000_000)));
        assert_eq!(budget(&ProtectOptions { cleanup_trials: Some(5), ..o.clone() }), Some((5, usize::MAX)));
        assert_eq!(budget(&ProtectOptions { cleanup: false, ..o.clone() }), None);
        assert_eq!(budget(&ProtectOptions { singleton_rule: false, ..o }), None);
    }

    /// A merge that misses a little: synthetic table `seed` and its fast pattern less its
    /// `missing` costliest secondaries (`None` when it has none).
    fn near_merge(seed: u64, missing: usize) -> Option<(Table, Vec<bool>)> {
        let t = generate(&spec(vec![vec![4, 3], vec![3, 2], vec![2]], 0.6, seed)).unwrap();
        let o = ProtectOptions { method: Method::Fast, singleton_rule: false, ..Default::default() };
        let fast = protect(&t, &o).unwrap();
        let mut merged: Vec<bool> = fast.statuses.iter().map(|s| s.is_suppressed()).collect();
        let mut secondaries: Vec<usize> =
            (0..merged.len()).filter(|&i| fast.statuses[i] == CellStatus::Secondary).collect();
        secondaries.sort_by(|&a, &b| t.cells()[b].cost.total_cmp(&t.cells()[a].cost).then(b.cmp(&a)));
        if secondaries.is_empty() {
            return None;
        }
        for &i in secondaries.iter().take(missing) {
            merged[i] = false;
        }
        Some((t, merged))
    }

    /// Past the hard stop, HiTaS's merged pattern is completed by the closure at once (the
    /// first audit, which only chooses the route, took minutes on a 100 k-cell merge that the
    /// limit had cut short): the closure's clean pattern, the limit recorded. With time left,
    /// a merge that almost protects the table gets the open repair instead, which keeps more
    /// of it (a different pattern on some of these tables).
    #[test]
    fn merges_completed_past_the_stop_go_straight_to_the_closure() {
        use super::super::budget::Deadline;
        use super::super::problem::Problem;
        let mut differ = 0;
        for seed in 30..36 {
            let Some((t, merged)) = near_merge(seed, 1) else { continue };
            let p = Problem::from_table(&t, None);
            let late = Deadline::after(0.0);
            let w = super::complete_merged(&p, &merged, false, None, &late).unwrap();
            let closure =
                super::complete(&p, merged.clone(), false, crate::suppress::Construction::Closure, &late).unwrap();
            assert_eq!(w.aud.sup, closure.aud.sup, "seed {seed}");
            assert!(late.was_hit(), "seed {seed}");
            let st = super::super::output_statuses(&p, &w.aud.sup);
            assert!(clean(&t, &st, false), "seed {seed}");
            let in_time = super::complete_merged(&p, &merged, false, None, &Deadline::after(600.0)).unwrap();
            differ += usize::from(in_time.aud.sup != w.aud.sup);
        }
        assert!(differ > 0, "the route past the stop is another route");
    }

    /// The small batches' budget (LP columns for the bounds a deferring audit's batch rounds
    /// leave) lasts the whole repair, not only its first audit: what the first audit leaves
    /// unpaid gets its small batches and single LPs (and cuts) in a later round, as far as the
    /// budget goes, instead of a hypercube at once. On merges that miss a little, with a budget
    /// the first audit does not use up, the repair lays fewer cubes than with the budget ended
    /// after the first audit, ends clean, re-verifies its certificates, and is the same on one
    /// thread and on two.
    #[test]
    fn the_small_batch_budget_lasts_the_whole_repair() {
        use super::super::audit::{DeferSingles, SmallBatches};
        use super::super::budget::Deadline;
        use super::super::problem::Problem;
        use super::super::work::Work;
        let later = std::time::Instant::now() + std::time::Duration::from_secs(3600);
        let (mut carried, mut ended) = (0, 0);
        for seed in 30..46 {
            for missing in [1, 2] {
                let Some((t, merged)) = near_merge(seed, missing) else { continue };
                let p = Problem::from_table(&t, None);
                let columns = 6 * p.n();
                let far = Deadline::after(600.0);
                let repair = |threads: usize| {
                    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                    let defer = Some(super::Deferral { min_cells: 0, columns, lazy_run: super::MERGE_LAZY_RUN });
                    pool.install(|| super::repaired(&p, merged.clone(), false, usize::MAX, defer, &far).unwrap())
                };
                // The budget ended after the first audit; a merge that audit finds far from
                // protecting goes to the closure in both, so it tells nothing here.
                let mut first = Work::new(&p, merged.clone());
                first.aud.defer_singles = Some(DeferSingles::ALL);
                first.aud.retry_deferred = Some(SmallBatches { columns, until: later, stopped: false });
                if first.aud.check().unwrap().len() * super::CLOSURE_FIRST_SHARE > p.sens.len() {
                    continue;
                }
                first.aud.retry_deferred = None;
                first.repair_open(false, usize::MAX, &far).unwrap();
                ended += first.cube_repairs;
                let w = repair(1);
                let two = repair(2);
                assert_eq!((w.sup(), w.cube_repairs), (two.sup(), two.cube_repairs), "seed {seed}, {missing}");
                assert!(w.aud.retry_deferred.is_none(), "the budget ends with the repair");
                carried += w.cube_repairs;
                let (sup, rep) = w.into_certified(false).unwrap();
                assert!(rep.is_some_and(|r| r.is_clean()), "seed {seed}, {missing}: certificates not re-verified");
                let st = super::super::output_statuses(&p, &sup);
                assert!(clean(&t, &st, false), "seed {seed}, {missing}");
            }
        }
        assert!(carried < ended, "{carried} cubes with the budget carried, {ended} without");
    }

    /// What the repair adds and the pattern does not need is dropped: a closed repair (no open
    /// round) of merges that miss a little, then [`super::drop_repair_additions`]. Only added
    /// cells go, the merge stays, the pattern stays clean, and on these tables something goes.
    #[test]
    fn repair_additions_the_pattern_does_not_need_are_dropped() {
        use super::super::budget::Deadline;
        use super::super::problem::Problem;
        let far = Deadline::after(600.0);
        let mut dropped = 0;
        for seed in 30..36 {
            let Some((t, merged)) = near_merge(seed, 2) else { continue };
            let p = Problem::from_table(&t, None);
            let mut w = super::repaired(&p, merged.clone(), false, 0, None, &far).unwrap();
            let before = w.sup().to_vec();
            let n = super::drop_repair_additions(&mut w, &merged, false, &far).unwrap();
            let gone: Vec<usize> = (0..p.n()).filter(|&i| before[i] && !w.sup()[i]).collect();
            assert_eq!(gone.len(), n, "seed {seed}");
            assert!(gone.iter().all(|&i| !merged[i]), "seed {seed}: only the repair's additions go");
            assert!((0..p.n()).all(|i| !w.sup()[i] || before[i]), "seed {seed}: nothing is added");
            let st = super::super::output_statuses(&p, w.sup());
            assert!(clean(&t, &st, false), "seed {seed}");
            dropped += n;
        }
        assert!(dropped > 0, "the closed repair adds cells these patterns do not need");
    }

    /// The repair of a pattern its auditor has checked already (a master MIP's) continues from
    /// that audit instead of auditing the pattern again: the same repaired pattern as from a
    /// fresh auditor, and the same LPs in all — the audit's counted once, before the repair.
    #[test]
    fn a_checked_pattern_is_repaired_without_a_second_audit() {
        use super::super::audit::Auditor;
        use super::super::budget::Deadline;
        use super::super::problem::Problem;
        use crate::lp::{self, SolveOptions};
        let far = Deadline::after(600.0);
        let mut compared = 0;
        for seed in 0..8 {
            let t = generate(&spec(vec![vec![5], vec![4], vec![2]], 0.9, seed)).unwrap();
            let p = Problem::from_table(&t, None);
            let lp = super::master(&p, false, true);
            let o = SolveOptions { mip_max_nodes: Some(200), ..Default::default() };
            let x: Vec<bool> = lp::solve(&lp, &o).unwrap().columns.iter().map(|v| *v > 0.5).collect();
            let mut checked = Auditor::new(&p, x.clone());
            if checked.check().unwrap().is_empty() {
                continue;
            }
            assert!(checked.lps > 0, "seed {seed}: the rejection took no LP");
            // An offset marks the count: the repair's total shows whether it went on from it.
            const MARK: usize = 1_000_000;
            checked.lps += MARK;
            let fresh = super::repaired(&p, x.clone(), false, super::REPAIR_OPEN_ROUNDS, None, &far).unwrap();
            let reused = super::repaired_from(&p, checked, false, super::REPAIR_OPEN_ROUNDS, None, None, &far).unwrap();
            assert_eq!(reused.sup(), fresh.sup(), "seed {seed}");
            assert_eq!(reused.aud.lps, fresh.aud.lps + MARK, "seed {seed}: LPs of the repair of the checked pattern");
            compared += 1;
        }
        assert!(compared >= 3, "only {compared} rejected master patterns");
    }

    /// Flat 3-dimensional table `seed` (with a 2-category variable) and the master MIP's
    /// pattern over the static rows alone, when the audit rejects it (`None` when clean).
    fn rejected_master_pattern(seed: u64) -> Option<(Table, Vec<bool>)> {
        use super::super::audit::Auditor;
        use super::super::problem::Problem;
        use crate::lp::{self, SolveOptions};
        let t = generate(&spec(vec![vec![5], vec![4], vec![2]], 0.9, seed)).unwrap();
        let (x, clean) = {
            let p = Problem::from_table(&t, None);
            let o = SolveOptions { mip_max_nodes: Some(200), ..Default::default() };
            let lp = super::master(&p, false, true);
            let x: Vec<bool> = lp::solve(&lp, &o).unwrap().columns.iter().map(|v| *v > 0.5).collect();
            let clean = Auditor::new(&p, x.clone()).check().unwrap().is_empty();
            (x, clean)
        };
        (!clean).then_some((t, x))
    }

    /// A master pattern the audit rejects ([`rejected_master_pattern`]), repaired by the master
    /// over its supersets ([`super::repair_master_pattern`]): the repair keeps every cell of the
    /// pattern, passes an independent audit, never costs more than the greedy repair alone, and
    /// on some of these tables costs less — also below a stop at the full search's cost, which
    /// the greedy repair is above; below the pattern's own cost the greedy repair is all.
    #[test]
    fn the_master_repair_of_a_rejected_pattern_beats_the_greedy_one() {
        use super::super::audit::Auditor;
        use super::super::budget::Deadline;
        use super::super::problem::Problem;
        let far = Deadline::after(600.0);
        let all = super::Supersets { solves: 10, below: None };
        let below = |t: f64| super::Supersets { solves: 10, below: Some(t) };
        let (mut repaired, mut cheaper, mut stopped_cheaper) = (0, 0, 0);
        for seed in 0..12 {
            let Some((t, x)) = rejected_master_pattern(seed) else { continue };
            let p = Problem::from_table(&t, None);
            let mut lp = super::master(&p, false, true);
            for f in &Auditor::new(&p, x.clone()).check().unwrap() {
                super::add_cut(&mut lp, f.cut.as_ref().unwrap());
            }
            let greedy =
                super::greedy_repair(&p, Auditor::new(&p, x.clone()), false, super::Greedy::keeping(true), &far)
                    .unwrap()
                    .map(|w| p.cost_of(w.sup()));
            let r = super::repair_master_pattern(
                &p,
                &mut lp,
                Auditor::new(&p, x.clone()),
                all,
                false,
                super::Greedy::keeping(true),
                &far,
            )
            .unwrap()
            .expect("a repair");
            let sup = r.sup().to_vec();
            assert!((0..p.n()).all(|i| !x[i] || sup[i]), "seed {seed}: the pattern is kept");
            assert!(clean(&t, &super::super::output_statuses(&p, &sup), false), "seed {seed}");
            let c = p.cost_of(&sup);
            if let Some(g) = greedy {
                assert!(c <= g + 1e-9 * g.max(1.0), "seed {seed}: {c} above the greedy repair's {g}");
                cheaper += usize::from(c < g - 1e-9 * g.max(1.0));
            }
            repaired += 1;
            // With a stop (the cost that ends the search): above the pattern's own cost and
            // below the greedy repair's, the search over supersets runs with it as its cutoff;
            // below the pattern's cost no superset can reach it, and the greedy repair is all.
            let Some(g) = greedy else { continue };
            let x_cost = p.cost_of(&x);
            let with_stop = |t: f64| {
                let mut lp = super::master(&p, false, true);
                for f in &Auditor::new(&p, x.clone()).check().unwrap() {
                    super::add_cut(&mut lp, f.cut.as_ref().unwrap());
                }
                let r = super::repair_master_pattern(
                    &p,
                    &mut lp,
                    Auditor::new(&p, x.clone()),
                    below(t),
                    false,
                    super::Greedy::keeping(true),
                    &far,
                )
                .unwrap()
                .expect("a repair");
                r.sup().to_vec()
            };
            let below = with_stop(x_cost - 1.0);
            assert!(
                (p.cost_of(&below) - g).abs() <= 1e-9 * g.max(1.0),
                "seed {seed}: below the pattern, the greedy repair"
            );
            if c < g - 1e-9 * g.max(1.0) {
                let sup = with_stop(c);
                assert!((0..p.n()).all(|i| !x[i] || sup[i]), "seed {seed}: the pattern is kept");
                assert!(clean(&t, &super::super::output_statuses(&p, &sup), false), "seed {seed}");
                let s = p.cost_of(&sup);
                assert!(s <= g + 1e-9 * g.max(1.0), "seed {seed}: {s} above the greedy repair's {g}");
                stopped_cheaper += usize::from(s < g - 1e-9 * g.max(1.0));
            }
        }
        assert!(repaired >= 4, "only {repaired} rejected master patterns");
        assert!(cheaper > 0, "the master's repair never beat the greedy one");
        assert!(stopped_cheaper > 0, "below a stop, the master's repair never beat the greedy one");
    }

    /// The greedy repair of a rejected master pattern without its drop trials (what a pattern
    /// far from clean gets before a loose master): clean, every cell of the pattern kept, and
    /// every cell the repair added kept too, so never cheaper than the repair with the trials,
    /// which on some of these tables drops some.
    #[test]
    fn a_repair_without_drop_trials_keeps_what_it_added() {
        use super::super::audit::Auditor;
        use super::super::budget::Deadline;
        use super::super::problem::Problem;
        let far = Deadline::after(600.0);
        let (mut repaired, mut dearer) = (0, 0);
        for seed in 0..12 {
            let Some((t, x)) = rejected_master_pattern(seed) else { continue };
            let p = Problem::from_table(&t, None);
            let repair = |drop_trials: bool| {
                super::greedy_repair(&p, Auditor::new(&p, x.clone()), false, super::Greedy::keeping(drop_trials), &far)
                    .unwrap()
                    .map(|w| w.sup().to_vec())
            };
            let (Some(lean), Some(full)) = (repair(false), repair(true)) else { continue };
            let added = super::repaired(&p, x.clone(), false, super::REPAIR_OPEN_ROUNDS, None, &far).unwrap();
            assert_eq!(lean, added.sup(), "seed {seed}: the repair as it ended, nothing dropped");
            assert!((0..p.n()).all(|i| !x[i] || lean[i]), "seed {seed}: the pattern is kept");
            assert!(clean(&t, &super::super::output_statuses(&p, &lean), false), "seed {seed}");
            let (c_lean, c_full) = (p.cost_of(&lean), p.cost_of(&full));
            assert!(c_lean >= c_full - 1e-9 * c_full.max(1.0), "seed {seed}: {c_lean} below {c_full}");
            dearer += usize::from(c_lean > c_full + 1e-9 * c_full.max(1.0));
            repaired += 1;
        }
        assert!(repaired >= 4, "only {repaired} rejected master patterns");
        assert!(dearer > 0, "the drop trials never dropped a cell");
    }

    /// A repair without drop trials gives up once its pattern costs what is of no use to the
    /// caller ([`super::Greedy::useless_from`]): from its own cost down, no pattern; just above
    /// it, the same pattern; given up at its first addition, a part of the whole repair found
    /// with fewer LPs. With drop trials (which may bring the cost back down) it never gives up.
    #[test]
    fn a_repair_without_drop_trials_gives_up_at_the_useless_cost() {
        use super::super::audit::Auditor;
        use super::super::budget::Deadline;
        use super::super::problem::Problem;
        let far = Deadline::after(600.0);
        let (mut repaired, mut shorter) = (0, 0);
        for seed in 0..12 {
            let Some((t, x)) = rejected_master_pattern(seed) else { continue };
            let p = Problem::from_table(&t, None);
            let repair = |greedy: super::Greedy| {
                super::greedy_repair(&p, Auditor::new(&p, x.clone()), false, greedy, &far)
                    .unwrap()
                    .map(|w| (w.sup().to_vec(), w.aud.lps))
            };
            let Some((whole, lps)) = repair(super::Greedy::keeping(false)) else { continue };
            let c = p.cost_of(&whole);
            let lean = |useless_from| super::Greedy { drop_trials: false, useless_from };
            assert!(repair(lean(c)).is_none(), "seed {seed}: at its own cost");
            assert_eq!(repair(lean(c + 1e-6 * c.max(1.0))).map(|r| r.0), Some(whole.clone()), "seed {seed}");
            let with_trials = super::Greedy { drop_trials: true, useless_from: 0.0 };
            assert_eq!(repair(with_trials), repair(super::Greedy::keeping(true)), "seed {seed}: with drop trials");
            let first = p.cost_of(&x) + 1e-9 * c.max(1.0);
            let part = super::repaired_from(
                &p,
                Auditor::new(&p, x.clone()),
                false,
                super::REPAIR_OPEN_ROUNDS,
                None,
                Some(first),
                &far,
            )
            .unwrap();
            assert!((0..p.n()).all(|i| !part.sup()[i] || whole[i]), "seed {seed}: a part of the whole repair");
            assert!(part.aud.lps <= lps, "seed {seed}");
            shorter += usize::from(part.aud.lps < lps);
            repaired += 1;
        }
        assert!(repaired >= 4, "only {repaired} rejected master patterns");
        assert!(shorter > 0, "giving up never saved an LP");
    }

    /// The exact search's certified audit is the audit of the pattern [`super::run`] returns,
    /// whichever search found it: the same pattern and bound, a report from its certificates,
    /// and an independent audit agrees.
    #[test]
    fn the_certified_audit_is_of_the_best_pattern() {
        use super::super::budget::Deadline;
        use super::super::problem::Problem;
        for seed in 0..4 {
            let t = generate(&spec(vec![vec![4, 3], vec![3, 2], vec![2]], 0.6, seed)).unwrap();
            let p = Problem::from_table(&t, None);
            let o =
                ProtectOptions { method: Method::Optimal, singleton_rule: false, mip_nodes: 200, ..Default::default() };
            let far = Deadline::after(600.0);
            let (plain, lb) = super::run(&p, &o, None, &far).unwrap();
            let (sup, lb_certified, rep) = super::run_certified(&p, &o, None, &far).unwrap();
            assert_eq!(sup, plain, "seed {seed}");
            assert_eq!(lb_certified, lb, "seed {seed}");
            assert!(rep.expect("the certificates re-verify").is_clean(), "seed {seed}");
            let st = super::super::output_statuses(&p, &sup);
            assert!(clean(&t, &st, false), "seed {seed}");
        }
    }

    /// Independent audit: attacker LPs only, exact intervals.
    fn clean(t: &Table, st: &[CellStatus], singleton: bool) -> bool {
        let o = AuditOptions { exact_intervals: true, lp_only: true };
        audit(t, st, singleton, &o).unwrap().is_clean()
    }

    /// Minimum secondary cost by brute force: every pattern over the free cells, cheapest
    /// first, until one passes the independent audit (`None`: no pattern protects the table).
    fn brute_force(t: &Table, singleton: bool) -> Option<f64> {
        let free: Vec<usize> = (0..t.cells().len()).filter(|&i| t.cells()[i].status == CellStatus::Safe).collect();
        assert!(free.len() <= 14, "{} free cells: too many to enumerate", free.len());
        let cost =
            |m: u32| -> f64 { (0..free.len()).filter(|b| m >> b & 1 == 1).map(|b| t.cells()[free[b]].cost).sum() };
        let mut masks: Vec<u32> = (0..1u32 << free.len()).collect();
        masks.sort_by(|&a, &b| cost(a).total_cmp(&cost(b)).then(a.cmp(&b)));
        masks.into_iter().find_map(|m| {
            let mut st: Vec<CellStatus> = t.cells().iter().map(|c| c.status).collect();
            for (b, &i) in free.iter().enumerate() {
                if m >> b & 1 == 1 {
                    st[i] = CellStatus::Secondary;
                }
            }
            clean(t, &st, singleton).then(|| cost(m))
        })
    }

    /// `optimal`'s pattern of `t` against the brute-forced optimum: clean and as cheap
    /// (asserted, `what` naming the case); the protection when both exist, `None` when both
    /// find the table infeasible.
    fn optimal_is_brute_forced(t: &Table, singleton: bool, what: &str) -> Option<crate::suppress::Protection> {
        let o = ProtectOptions { method: Method::Optimal, singleton_rule: singleton, ..Default::default() };
        match (protect(t, &o), brute_force(t, singleton)) {
            (Ok(got), Some(want)) => {
                assert!(clean(t, &got.statuses, singleton), "{what}");
                assert!(
                    (got.secondary_cost - want).abs() <= 1e-6 * want.max(1.0),
                    "{what}: optimal {} vs brute force {want}",
                    got.secondary_cost
                );
                Some(got)
            }
            (Err(SuppressError::Infeasible { .. }), None) => None,
            (got, want) => panic!("{what}: {got:?} vs brute force {want:?}"),
        }
    }

    /// The exact model reproduces brute-forced optima on tiny tables with a single-child
    /// hierarchy level (`[2, 1]`: each group has one child, equal to it), a trivial top level
    /// (`[1, 3]`) and a 2-category variable (`[2]`), with and without the singleton rule.
    #[test]
    fn reproduces_brute_forced_optima_with_single_child_levels_and_two_categories() {
        let mut checked = 0;
        for (k, dims) in
            [vec![vec![2, 1], vec![2]], vec![vec![1, 3], vec![2]], vec![vec![2], vec![2, 1]], vec![vec![3], vec![2]]]
                .into_iter()
                .enumerate()
        {
            for seed in 0..6 {
                let t = generate(&spec(dims.clone(), 1.0, 100 * k as u64 + seed)).unwrap();
                let free = t.cells().iter().filter(|c| c.status == CellStatus::Safe).count();
                if t.cells().iter().all(|c| c.status != CellStatus::Primary) || free > 14 {
                    continue;
                }
                for singleton in [false, true] {
                    let what = format!("{dims:?} seed {seed} singleton {singleton}");
                    if let Some(p) = optimal_is_brute_forced(&t, singleton, &what) {
                        assert_eq!(p.gap, Some(0.0), "{what}: proven");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked >= 12, "only {checked} cases checked");
    }

    /// Under the singleton rule the master still asks a partner for every secondary whose
    /// publication cannot break the rule elsewhere ([`super::super::singleton::exposed`]): on
    /// tiny tables with singleton primaries, where cells of both kinds occur, the exact model
    /// reproduces the brute-forced optima (a row cutting off every optimum would end above
    /// them), and the rows are really there.
    #[test]
    fn singleton_rule_optima_keep_partner_rows_for_unexposed_cells() {
        use super::super::problem::{Fix, Problem};
        let mut checked = 0;
        for (k, dims) in
            [vec![vec![3], vec![3]], vec![vec![2, 1], vec![3]], vec![vec![4], vec![2]], vec![vec![2], vec![2], vec![2]]]
                .into_iter()
                .enumerate()
        {
            for seed in 0..10 {
                let spec = SynthSpec { mean_freq: 2.5, ..spec(dims.clone(), 0.9, 1_000 * k as u64 + seed) };
                let t = generate(&spec).unwrap();
                let free = t.cells().iter().filter(|c| c.status == CellStatus::Safe).count();
                if t.cells().iter().all(|c| c.status != CellStatus::Primary) || free > 14 {
                    continue;
                }
                let p = Problem::from_table(&t, None);
                let exposed = super::super::singleton::exposed(&p);
                let free_cells: Vec<usize> = (0..p.n()).filter(|&i| p.fix[i] == Fix::Free).collect();
                if !free_cells.iter().any(|&i| exposed[i]) || free_cells.iter().all(|&i| exposed[i]) {
                    continue;
                }
                // A partner row is the only row with −1 on a free cell (the synthetic singletons are
                // primaries): on the unexposed free cells, none on the exposed ones.
                let lp = super::master(&p, true, true);
                let partnered: Vec<usize> = lp
                    .rows
                    .iter()
                    .flat_map(|r| r.coefs.iter().filter(|&&(j, a)| a < 0.0 && p.fix[j] == Fix::Free).map(|&(j, _)| j))
                    .collect();
                assert!(free_cells.iter().all(|&i| partnered.contains(&i) != exposed[i]), "{dims:?} seed {seed}");
                if optimal_is_brute_forced(&t, true, &format!("{dims:?} seed {seed}")).is_some() {
                    checked += 1;
                }
            }
        }
        assert!(checked >= 6, "only {checked} tables with exposed and unexposed free cells");
    }

    /// The exact method's lower bound never exceeds the cost of a pattern any method finds.
    #[test]
    fn lower_bound_never_exceeds_any_method_cost() {
        for seed in 0..4 {
            let t = generate(&spec(vec![vec![2, 2], vec![3], vec![2]], 0.7, seed)).unwrap();
            let o = ProtectOptions { method: Method::Optimal, seed, tabu_iterations: 20, ..Default::default() };
            let opt = protect(&t, &o).unwrap();
            let lb = opt.lower_bound.unwrap();
            for m in [Method::Optimal, Method::Fast, Method::Tabu, Method::Modular] {
                let p = protect(&t, &ProtectOptions { method: m, ..o.clone() }).unwrap();
                assert!(
                    lb <= p.secondary_cost + 1e-9 * p.secondary_cost.max(1.0),
                    "seed {seed} {m:?}: {lb} > {}",
                    p.secondary_cost
                );
            }
        }
    }

    /// Tables above the former 2,000-cell refusal are accepted: a small budget ends the
    /// search with an audited pattern and a reported gap.
    #[test]
    fn large_table_is_accepted_and_ends_audited_with_a_gap() {
        let t = generate(&spec(vec![vec![3, 4], vec![2, 5], vec![3, 3]], 0.6, 5)).unwrap();
        assert!(t.cells().len() > 2000, "{} cells", t.cells().len());
        let o = ProtectOptions {
            method: Method::Optimal,
            singleton_rule: false,
            time_limit_s: 600.0,
            optimal_lp_rounds: 3,
            master_solves: 2,
            mip_nodes: 20,
            ..Default::default()
        };
        let p = protect(&t, &o).unwrap();
        assert!(audit(&t, &p.statuses, false, &AuditOptions::default()).unwrap().is_clean());
        let (lb, gap) = (p.lower_bound.unwrap(), p.gap.unwrap());
        assert!(lb > 0.0 && lb <= p.secondary_cost * (1.0 + 1e-9), "{lb} vs {}", p.secondary_cost);
        assert!((0.0..1.0).contains(&gap), "{gap}");
    }

    /// Same input and seed, same pattern, with 1 and 2 threads.
    #[test]
    fn pattern_does_not_depend_on_the_thread_count() {
        let t = generate(&spec(vec![vec![2, 2], vec![3], vec![2]], 0.8, 9)).unwrap();
        let o = ProtectOptions { method: Method::Optimal, mip_nodes: 200, ..Default::default() };
        let run = |n: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap()
                .install(|| protect(&t, &o).unwrap().statuses)
        };
        assert_eq!(run(1), run(2));
    }
}
