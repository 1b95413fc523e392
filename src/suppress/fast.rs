//! The fast method: construction, audit-driven repair, cleanup. Scales to millions of cells
//! because every step is local to relations or to components of suppressed cells. The steps
//! are those of the shared working state ([`super::work::Work`]); this file strings them
//! together.
//!
//! 1. **Closure** (hypercube / shortest-path in spirit, [`Work::close`]): every suppressed cell
//!    `i` with a movement requirement `req_i` (primaries: `max(LPL, UPL, SPL/2)`) needs, in
//!    every relation it belongs to, other suppressed cells whose capacity (how far the attacker
//!    may move them, `min(a − lb, ub − a)`) sums to `req_i`; otherwise the cheapest free
//!    partner is suppressed (cost weighted by the number of its relations still without a
//!    suppression, which would have to be closed in turn) and inherits `min(req_i, capacity)`.
//!    Primaries go largest first. A pattern closed this way has no suppressed cell alone in a
//!    relation.
//! 2. **Repair** ([`Work::repair`]): the audit ([`super::audit::Auditor`]) checks every
//!    sensitive cell; each shortfall comes with a capacity cut from the attacker LP's duals,
//!    which is satisfied greedily (cheapest cost per unit of missing capacity), then closed
//!    again. A cut that even suppressing every free cell cannot satisfy proves infeasibility:
//!    fail closed. Singleton rule violations get a third suppression in the relation. After the
//!    cube assignment on a suppressed component too large for its LPs (over
//!    `work::LOCAL_TRIALS_COMPONENT` cells), the bounds the witnesses leave get a hypercube each
//!    instead ([`DeferSingles::without_lps`](super::audit::DeferSingles::without_lps)).
//!
//! Step 1 is the closure alone on tables of at most [`CLOSURE_FIRST_MAX_CELLS`] cells and
//! [`CLOSURE_FIRST_CELLS_PER_SECOND`] per second of the time limit. Above, on
//! tables up to `ASSIGN_MAX_CELLS` cells with a geometry, it is the cube assignment
//! ([`super::cubes`]: one hypercube per sensitive cell, sharing cells, improved by local search)
//! followed by the closure of sensitive cells without a cube — and, up to
//! [`CLOSURE_FIRST_MAX_CELLS`], the split closure (partners share a cell's move,
//! [`Construction::SplitClosure`]) in what is left of the limit, the cheaper of the two kept
//! ([`cubes_then_closure`]); larger tables use the parallel hypercube cover ([`Work::cover`]);
//! see [`super::construct`].
//! 3. **Cleanup** ([`Work::cleanup`]): secondaries are un-suppressed, most costly first, when
//!    the audit stays clean (only targets whose witness used the cell are re-solved), each
//!    candidate once or up to `cleanup_trials` trials (a work budget: deterministic), the time
//!    limit being only a hard stop ([`super::budget`]). Before the audit, a trial is refused
//!    without LP when a sensitive cell becomes computable exactly or a capacity cut kept from
//!    an earlier refused trial is violated ([`Work::try_drop`]); most refusals on the
//!    benchmark tables are decided that way. On a suppressed component too large for LP-decided
//!    single trials, the cleanup first tries to drop whole level combinations of secondaries,
//!    highest marginals first ([`Work::drop_groups`]: the grand total and the one-way totals of
//!    c5-persons, which the single trials there cannot decide).
//!
//! [`Work::close`]: super::work::Work::close
//! [`Work::repair`]: super::work::Work::repair
//! [`Work::cover`]: super::work::Work::cover
//! [`Work::cleanup`]: super::work::Work::cleanup
//! [`Work::try_drop`]: super::work::Work::try_drop
//! [`Work::drop_groups`]: super::work::Work::drop_groups

use super::budget::Deadline;
use super::construct::complete;
use super::problem::Problem;
use super::trace::trace;
use super::work::Work;
use super::{Construction, ProtectOptions, SuppressError};

/// Tables up to this many cells, and [`CLOSURE_FIRST_CELLS_PER_SECOND`] per second of the time
/// limit, start the fast method from the closure of the primaries ([`method_construction`]);
/// larger ones from hypercubes, whose certificates spare the audit its LPs — and, up to this
/// many cells, the split closure after them ([`cubes_then_closure`]; measured on c4-large,
/// 46,853 cells, and c4-ent, 44,375; on c5-persons, 101,827, the closure's first audit did not
/// finish, and the split closure's left 66,439 of 86,052 bounds uncertified after 15 minutes).
pub(crate) const CLOSURE_FIRST_MAX_CELLS: usize = 50_000;

/// See [`CLOSURE_FIRST_MAX_CELLS`]. Why a share of the limit: the closure's first clean pattern
/// needs attacker LPs over its whole suppressed component, and the hypercubes' does not. On
/// c4-large (46,853 cells, release build, 2 cores) the closure's first audit took 263 s and its
/// first clean pattern came at ~490 s of the 600-s limit, ~96 cells per second: a third of that
/// leaves a slower machine its margin. At the 600-s default that is 18,000 cells, above which
/// `auto` does not pick `fast` anyway; from a 1,667-s limit on, c4-large's size.
pub(crate) const CLOSURE_FIRST_CELLS_PER_SECOND: f64 = 30.0;

/// The first pattern of the fast method on `p` under `opts`: `Auto` is the closure on tables
/// within [`CLOSURE_FIRST_MAX_CELLS`] (a work budget from the stated limit, never the clock).
/// Why: a hypercube moves the sensitive cell's whole level through each of its corners, so
/// where the neighbours are smaller than the level (dominance rules, enterprise tables) every
/// cube takes large marginals; the closure and the audit's capacity cuts spread the movement
/// over several small cells. Measured on the census-shaped suite and the README example's
/// `salary` table (BENCHMARKS "Session 61"): the closure's pattern is cheaper on every one of
/// them. The exact model's start keeps the cubes (its master MIPs improve on it).
fn method_construction(p: &Problem, opts: &ProtectOptions) -> Construction {
    let cells = (CLOSURE_FIRST_CELLS_PER_SECOND * opts.budget_limit_s()).min(CLOSURE_FIRST_MAX_CELLS as f64);
    match opts.construction {
        Construction::Auto if (p.n() as f64) <= cells => Construction::Closure,
        c => c,
    }
}

/// Simplex effort ([`crate::lp::Effort`]) a fast cleanup may spend per second of the stated
/// limit ([`Work::cleanup_effort`](super::work::Work::cleanup_effort)): its drop trials then end
/// at the same point on every machine, where the clock used to end them. Why this figure: the
/// cleanups measured spend 100–164 M a second (release build, 2 cores; c3-persons 101 M,
/// c3-enterprises 111 M, c5-persons 136 M, c4-large 144 M, c4-ent 164 M, whose LP columns a
/// second differ 78×: BENCHMARKS.md, "Session 69"), so at 50 M a cleanup takes at most about
/// half the limit. Million-cell tables, whose trials the witnesses alone decide (no LP), end on
/// [`LOCAL_TRIALS_PER_SECOND`] instead.
/// On c4-large, whose split closure is clean at ~240 s of the 600-s default, the run then ends
/// near 480 s instead of at the limit, and a machine a fifth slower publishes the same cells.
/// A job that states `cleanup_trials` gets those trials instead, the clock still the hard stop.
pub(crate) const CLEANUP_EFFORT_PER_SECOND: f64 = 50e6;

/// Drop trials a fast cleanup whose trials the witnesses alone decide may run per second of the
/// stated limit ([`local_trials`]). Why a plain count: such a trial solves no LP and searches
/// only the certificates the drop took away, so neither LP columns nor effort count its work,
/// and its time does not follow the table's size but its witness searches: ~1.7–4 ms a trial
/// on c4-geo3 (1,073,846 cells, 4 dimensions) and ~6–10 ms on c5-geo3 (3,576,201 cells,
/// 5 dimensions, whose hypercubes have twice the cells; BENCHMARKS.md, "Session 98"). The
/// figure is set for the slower: at 40 a second c5-geo3's cleanup takes 42 % of its
/// limit after ~24 % in its cover and closure, and c4-geo3's ~13 % (24,000 trials at the 600-s
/// default).
pub(crate) const LOCAL_TRIALS_PER_SECOND: f64 = 40.0;

/// The trial budget of a fast cleanup whose trials the witnesses alone decide, under a stated
/// limit of `limit_s` seconds ([`LOCAL_TRIALS_PER_SECOND`]).
pub(crate) fn local_trials(limit_s: f64) -> usize {
    (super::budget::span_s(limit_s) * LOCAL_TRIALS_PER_SECOND) as usize
}

/// The fast cleanup's effort budget under a stated limit of `limit_s` seconds
/// ([`CLEANUP_EFFORT_PER_SECOND`]).
pub(crate) fn cleanup_effort(limit_s: f64) -> u64 {
    (super::budget::span_s(limit_s) * CLEANUP_EFFORT_PER_SECOND) as u64
}

/// The effort budget of a cleanup under `opts` ([`cleanup_effort`] of the stated limit), or
/// none when the job states `cleanup_trials`: the count it chose is its budget, where the
/// default's every-candidate count says nothing about time.
pub(crate) fn effort_budget(opts: &ProtectOptions) -> Option<u64> {
    opts.cleanup_trials.is_none().then(|| cleanup_effort(opts.budget_limit_s()))
}

/// The fast method's steps (see the module doc) from the options' own construction: the
/// building block of HiTaS's subtables too large for the exact model and of joined linked
/// tables. A whole table protected by the fast method goes through [`run_certified`].
pub(crate) fn run(p: &Problem, opts: &ProtectOptions, deadline: &Deadline) -> Result<Vec<bool>, SuppressError> {
    Ok(cleaned(p, opts, opts.construction, usize::MAX, deadline)?.0)
}

/// [`run`] with the cleanup also ending after `columns` attacker-LP columns
/// ([`Work::cleanup_columns`](super::work::Work::cleanup_columns)): the start of a search that
/// improves on it anyway (the exact model's fast start). Returns the pattern and, as
/// [`run_certified`], its audit from the certificates.
pub(crate) fn run_with_columns(
    p: &Problem,
    opts: &ProtectOptions,
    columns: usize,
    deadline: &Deadline,
) -> Result<(Vec<bool>, Option<super::AuditReport>), SuppressError> {
    cleaned(p, opts, opts.construction, columns, deadline)
}

/// The fast method on a whole table, from its own construction ([`method_construction`]), plus
/// the final audit re-verified from the repair's certificates when possible
/// ([`Auditor::recheck_or_reaudit`](super::audit::Auditor::recheck_or_reaudit)).
///
/// Tables the limit leaves to the cubes but within [`CLOSURE_FIRST_MAX_CELLS`] try the closure
/// and the split closure after them ([`cubes_then_closure`]).
pub(crate) fn run_certified(
    p: &Problem,
    opts: &ProtectOptions,
    deadline: &Deadline,
) -> Result<(Vec<bool>, Option<super::AuditReport>), SuppressError> {
    match method_construction(p, opts) {
        Construction::Auto if p.n() <= CLOSURE_FIRST_MAX_CELLS && p.geom.is_some() => {
            cubes_then_closure(p, opts, deadline)
        }
        c => cleaned(p, opts, c, usize::MAX, deadline),
    }
}

/// The cubes' clean pattern first, then the split closure's ([`Construction::SplitClosure`])
/// within what is left of the limit (no grace period: a clean pattern is in hand); the cheaper
/// is cleaned up. Why: on c4-large the closure's pattern costs 8.03 % of the value against the
/// cubes' 29.01 %, but its first clean pattern came at ~490 s of a 600-s limit on a 2-core
/// machine, where the cubes' came at ~22 s (BENCHMARKS, "Sessions 61, 62"): a slower machine
/// must still publish. The split closure is cheaper again (c4-ent: 32.04 % against 66.02 %,
/// "Session 63"), and since its repair closes with whole moves what its audits would need
/// too many single LPs to decide, it is also on c4-large (7.68 % in ~270 s, "Session 67"):
/// the plain closure is no longer tried after the cubes. When the clock ends the split
/// closure, the cubes' pattern is published and the run reports `stopped_by_time_limit`;
/// otherwise the choice is the same on every machine.
fn cubes_then_closure(
    p: &Problem,
    opts: &ProtectOptions,
    deadline: &Deadline,
) -> Result<(Vec<bool>, Option<super::AuditReport>), SuppressError> {
    let t0 = std::time::Instant::now();
    let mut best = complete(p, p.initial(), opts.singleton_rule, Construction::Auto, deadline)?;
    match complete(p, p.initial(), opts.singleton_rule, Construction::SplitClosure, &deadline.without_grace()) {
        Ok(w) => {
            trace(format_args!(
                "SplitClosure {:.1}s: {:.3} % against {:.3} %",
                t0.elapsed().as_secs_f64(),
                p.cost_percent(p.cost_of(w.sup())),
                p.cost_percent(p.cost_of(best.sup()))
            ));
            if p.cost_of(w.sup()) <= p.cost_of(best.sup()) {
                best = w;
            }
        }
        Err(SuppressError::TimeLimit { .. }) => {
            deadline.record_hit();
            trace(format_args!("SplitClosure {:.1}s: stopped by the limit", t0.elapsed().as_secs_f64()));
        }
        Err(e) => return Err(e),
    }
    finish(best, opts, usize::MAX, deadline)
}

/// The pattern completed from `construction`, cleaned up within the options' trials and
/// `columns` LP columns.
fn cleaned(
    p: &Problem,
    opts: &ProtectOptions,
    construction: Construction,
    columns: usize,
    deadline: &Deadline,
) -> Result<(Vec<bool>, Option<super::AuditReport>), SuppressError> {
    finish(complete(p, p.initial(), opts.singleton_rule, construction, deadline)?, opts, columns, deadline)
}

/// Clean pattern `w` cleaned up within the options' trials and `columns` LP columns, with its
/// audit from the certificates.
fn finish(
    mut w: Work,
    opts: &ProtectOptions,
    columns: usize,
    deadline: &Deadline,
) -> Result<(Vec<bool>, Option<super::AuditReport>), SuppressError> {
    if opts.cleanup {
        clean_up(&mut w, opts, columns, deadline)?;
    }
    w.into_certified(opts.singleton_rule)
}

/// The fast method's cleanup of clean pattern `w` under `opts`, also ending after `columns`
/// attacker-LP columns: the trials the job states, or else the effort budget and, where the
/// witnesses alone decide the trials, the trial budget from the stated limit; the group drop
/// trials of a giant component. The tabu search's first cleanup is this one too. Why one
/// function: the tabu search set the effort budget alone, so on a table whose trials are
/// decided locally (a million-cell census table) its cleanup ended on the clock, and each
/// machine published its own pattern. Returns the cells dropped.
pub(crate) fn clean_up(
    w: &mut Work,
    opts: &ProtectOptions,
    columns: usize,
    deadline: &Deadline,
) -> Result<usize, SuppressError> {
    w.cleanup_columns = columns;
    if let Some(effort) = effort_budget(opts) {
        w.cleanup_effort = effort;
        w.local_trials = local_trials(opts.budget_limit_s());
    }
    w.group_trials = super::work::group_trials(opts.budget_limit_s());
    w.cleanup(opts.singleton_rule, opts.cleanup_budget(), deadline)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suppress::tests::{lp_audit, synthetic};
    use crate::suppress::{output_statuses, protect, Method};

    /// Every pattern the cover leaves behind is completed into an audited one, with and
    /// without cleanup, and the cleanup never makes it more costly.
    #[test]
    fn hypercube_construction_ends_clean() {
        let t = synthetic(5);
        let base = ProtectOptions { method: Method::Fast, construction: Construction::Hypercube, ..Default::default() };
        let raw = protect(&t, &ProtectOptions { cleanup: false, ..base.clone() }).unwrap();
        let clean = protect(&t, &ProtectOptions { time_limit_s: 4.0, ..base }).unwrap();
        let lp = lp_audit(&t, &clean.statuses, true, false);
        assert!(lp.is_clean());
        assert!(clean.secondary_cost <= raw.secondary_cost + 1e-9);
    }

    /// Every neighbour of the primary is smaller than its level, so each rectangle through it
    /// takes its row total, its column total and the grand total; the closure and the audit's
    /// cuts move it over two rectangles of small cells instead. The method's own construction
    /// on a small table is the closure, and it costs less than the cubes, both LP-audited.
    #[test]
    fn the_closure_spreads_a_large_level_over_small_cells() {
        use crate::suppress::tests::{grid, primary};
        let mut t = grid(&[vec![30.0, 6.0, 6.0], vec![6.0, 6.0, 6.0], vec![6.0, 6.0, 6.0]], None);
        primary(&mut t, &[1, 1], 10.0);
        let base = ProtectOptions { method: Method::Fast, singleton_rule: false, ..Default::default() };
        let closure = protect(&t, &base).unwrap();
        let cubes = protect(&t, &ProtectOptions { construction: Construction::Hypercube, ..base.clone() }).unwrap();
        for prot in [&closure, &cubes] {
            assert!(lp_audit(&t, &prot.statuses, false, false).is_clean());
        }
        let total = t.find(&[0, 0]).unwrap();
        assert!(cubes.statuses[total].is_suppressed(), "the cube takes the grand total");
        assert!(!closure.statuses[total].is_suppressed());
        assert!(
            closure.secondary_cost < cubes.secondary_cost / 2.0,
            "{} vs {}",
            closure.secondary_cost,
            cubes.secondary_cost
        );
        // Under a limit too short for the closure's audits the same table is left to the cubes.
        let p = crate::suppress::problem::Problem::from_table(&t, None);
        assert_eq!(method_construction(&p, &base), Construction::Closure);
        let short = ProtectOptions { time_limit_s: (p.n() as f64 - 1.0) / CLOSURE_FIRST_CELLS_PER_SECOND, ..base };
        assert_eq!(method_construction(&p, &short), Construction::Auto, "left to the cubes");
    }

    /// The whole-table cleanup ends on its effort budget from the *stated* limit, not on the
    /// clock: with a budget of about one LP and 600 s on the clock it stops early, is not
    /// reported as stopped by the limit, publishes the same cells on every run and costs at
    /// least the full cleanup's pattern. A trial count the job states replaces the budget.
    #[test]
    fn the_cleanup_ends_on_its_effort_budget() {
        let mut cut_short = 0;
        for seed in 0..2 {
            let t = synthetic(seed);
            let base = ProtectOptions {
                method: Method::Fast,
                construction: Construction::Closure,
                singleton_rule: false,
                ..Default::default()
            };
            let full = protect(&t, &base).unwrap();
            let short = ProtectOptions { stated_limit_s: Some(1e-4), ..base.clone() };
            assert_eq!(cleanup_effort(1e-4), 5_000);
            assert_eq!((local_trials(600.0), local_trials(1e-4)), (24_000, 0));
            let (a, b) = (protect(&t, &short).unwrap(), protect(&t, &short).unwrap());
            assert!(!a.stopped_by_time_limit, "seed {seed}");
            assert_eq!(a.statuses, b.statuses, "seed {seed}");
            assert!(lp_audit(&t, &a.statuses, false, false).is_clean(), "seed {seed}");
            assert!(a.secondary_cost >= full.secondary_cost - 1e-9, "seed {seed}");
            if a.secondary_cost > full.secondary_cost + 1e-9 {
                cut_short += 1;
            }
            let asked = ProtectOptions { cleanup_trials: Some(usize::MAX), ..short };
            assert_eq!(protect(&t, &asked).unwrap().statuses, full.statuses, "seed {seed}: the trials asked");
        }
        assert!(cut_short > 0, "the budget never ended a cleanup");
    }

    /// Options whose limit leaves a small table to the cubes, with 600 s on the clock.
    fn left_to_the_cubes() -> ProtectOptions {
        ProtectOptions {
            method: Method::Fast,
            singleton_rule: false,
            time_limit_s: 600.0,
            stated_limit_s: Some(0.5),
            ..Default::default()
        }
    }

    /// A limit too short for the closure alone: the cubes' pattern first, then the closures
    /// within what is left. In time, the cheapest of the three is published and no stop is
    /// reported; with nothing left after the cubes, the cubes' pattern is published and the
    /// stop is reported.
    #[test]
    fn the_closure_after_the_cubes_is_published_when_in_time() {
        use crate::suppress::tests::{grid, primary};
        let mut t = grid(&[vec![30.0, 6.0, 6.0], vec![6.0, 6.0, 6.0], vec![6.0, 6.0, 6.0]], None);
        primary(&mut t, &[1, 1], 10.0);
        let p = crate::suppress::problem::Problem::from_table(&t, None);
        let short = left_to_the_cubes();
        assert_eq!(method_construction(&p, &short), Construction::Auto);
        let far = Deadline::after(600.0);
        let both = run_certified(&p, &short, &far).unwrap();
        let closure = cleaned(&p, &short, Construction::Closure, usize::MAX, &far).unwrap();
        let cubes = cleaned(&p, &short, Construction::Hypercube, usize::MAX, &far).unwrap();
        assert!(p.cost_of(&closure.0) < p.cost_of(&cubes.0));
        assert_eq!(both.0, closure.0);
        assert!(lp_audit(&t, &output_statuses(&p, &both.0), false, false).is_clean());
        assert!(!far.was_hit());

        // The stop has passed (the stated limit's grace period lets the cubes finish).
        let late = Deadline::left_of(0.0, 300.0);
        let fallback = run_certified(&p, &short, &late).unwrap();
        assert!(late.was_hit(), "the stop is reported");
        let raw = ProtectOptions { cleanup: false, ..short.clone() };
        let cubes_late =
            cleaned(&p, &raw, Construction::Hypercube, usize::MAX, &Deadline::left_of(0.0, 300.0)).unwrap();
        assert_eq!(fallback.0, cubes_late.0);
        assert_ne!(fallback.0, closure.0);
        assert!(lp_audit(&t, &output_statuses(&p, &fallback.0), false, false).is_clean());
    }

    /// The split closure asks each partner for its share of a move. The primary (level 10)
    /// needs both 6s of its row; asked for all they can move (6 each), their columns take a 5
    /// and a 50 each, where their shares (5 each) are met by the 5s: the 2×3 block, which
    /// protects the primary. The split closure is tried after the cubes, and the block published.
    #[test]
    fn the_split_closure_asks_partners_for_their_share() {
        use crate::suppress::tests::{grid, primary};
        let mut t = grid(&[vec![30.0, 6.0, 6.0], vec![12.0, 5.0, 5.0], vec![40.0, 50.0, 50.0]], None);
        primary(&mut t, &[1, 1], 10.0);
        let p = crate::suppress::problem::Problem::from_table(&t, None);
        let far = Deadline::after(600.0);
        let split = complete(&p, p.initial(), false, Construction::SplitClosure, &far).unwrap();
        let whole = complete(&p, p.initial(), false, Construction::Closure, &far).unwrap();
        let block: Vec<usize> =
            [[1, 1], [1, 2], [1, 3], [2, 1], [2, 2], [2, 3]].iter().map(|c| t.find(c).unwrap()).collect();
        let cells = |sup: &[bool]| (0..p.n()).filter(|&i| sup[i]).collect::<Vec<_>>();
        assert_eq!(cells(split.sup()), block);
        assert!(cells(whole.sup()).contains(&t.find(&[3, 2]).unwrap()), "the whole move takes a 50");
        assert!(p.cost_of(whole.sup()) > p.cost_of(split.sup()));
        assert!(lp_audit(&t, &output_statuses(&p, split.sup()), false, false).is_clean());

        let published = run_certified(&p, &left_to_the_cubes(), &far).unwrap();
        assert_eq!(cells(&published.0), block);
        assert!(lp_audit(&t, &output_statuses(&p, &published.0), false, false).is_clean());
        assert!(!far.was_hit());
    }

    /// The exact model's start ([`run_with_columns`]): no columns leave the pattern before
    /// the cleanup, unbounded columns give [`run`]'s (the table's cleanup drops something).
    #[test]
    fn the_starts_column_budget_bounds_its_cleanup() {
        let t = synthetic(11);
        let p = crate::suppress::problem::Problem::from_table(&t, None);
        let opts = ProtectOptions { method: Method::Fast, singleton_rule: false, ..Default::default() };
        let far = Deadline::after(60.0);
        let raw = run(&p, &ProtectOptions { cleanup: false, ..opts.clone() }, &far).unwrap();
        let full = run(&p, &opts, &far).unwrap();
        assert_ne!(raw, full, "the cleanup must drop something on this table");
        assert_eq!(run_with_columns(&p, &opts, 0, &far).unwrap().0, raw);
        assert_eq!(run_with_columns(&p, &opts, usize::MAX, &far).unwrap().0, full);
    }

    /// The fast cleanup ([`clean_up`]) of a pattern whose trials the witnesses alone decide ends
    /// on the trial budget of the *stated* limit ([`local_trials`]), not on the clock (600 s
    /// here): under a stated limit whose budget is a third of the trials a cleanup under a long
    /// limit runs, it runs no more than the budget, drops no more, passes the LP-only audit and
    /// gives the same cells twice. Both limits are below one group drop trial, so only the
    /// single trials differ.
    #[test]
    fn a_locally_decided_cleanup_ends_on_the_stated_limits_trials() {
        use crate::suppress::audit::Auditor;
        let seed = 3;
        let t = synthetic(seed);
        let p = Problem::from_table(&t, None);
        let far = Deadline::after(600.0);
        let run = |opts: &ProtectOptions| {
            let mut w = complete(&p, p.initial(), false, Construction::Auto, &far).unwrap();
            w.local_trials_component = w.aud.largest_component() - 1;
            let trials = |w: &Work| w.accepted + w.refused_cheaply + w.refused_by_audit + w.refused_undecided;
            let n0 = trials(&w);
            let dropped = clean_up(&mut w, opts, usize::MAX, &far).unwrap();
            assert!(w.aud.keep_held, "trials decided by the witnesses");
            assert_eq!(w.local_trials, local_trials(opts.budget_limit_s()));
            (trials(&w) - n0, dropped, w.sup().to_vec())
        };
        let long = ProtectOptions {
            method: Method::Fast,
            singleton_rule: false,
            stated_limit_s: Some(super::super::work::GROUP_SECONDS_PER_TRIAL - 1.0),
            ..Default::default()
        };
        let full = run(&long);
        assert!(full.0 > 3 && full.0 < local_trials(long.budget_limit_s()), "{} trials", full.0);
        let limit = (full.0 / 3) as f64 / LOCAL_TRIALS_PER_SECOND;
        let short = ProtectOptions { stated_limit_s: Some(limit), ..long.clone() };
        let cut = run(&short);
        assert!(cut.0 <= local_trials(limit) && cut.0 < full.0, "{} trials, full {}", cut.0, full.0);
        assert!(cut.1 <= full.1, "{} dropped, {} in the full cleanup", cut.1, full.1);
        let mut lp = Auditor::new(&p, cut.2.clone());
        lp.lp_only = true;
        assert!(lp.check().unwrap().is_empty(), "unsafe pattern");
        assert_eq!(run(&short).2, cut.2);
        assert!(!far.was_hit());
    }

    /// On random 3-dimensional hierarchical tables the cube-assignment start, repair and
    /// cleanup give LP-audited patterns, with and without the singleton rule, and the
    /// cleanup never costs more than the pattern it started from.
    #[test]
    fn cube_assignment_patterns_pass_the_lp_audit() {
        for seed in 10..13 {
            let t = synthetic(seed);
            for rule in [false, true] {
                let base = ProtectOptions {
                    method: Method::Fast,
                    singleton_rule: rule,
                    construction: Construction::Hypercube,
                    ..Default::default()
                };
                let raw = protect(&t, &ProtectOptions { cleanup: false, ..base.clone() }).unwrap();
                let clean = protect(&t, &ProtectOptions { time_limit_s: 3.0, ..base }).unwrap();
                for prot in [&raw, &clean] {
                    let a = lp_audit(&t, &prot.statuses, rule, false);
                    assert!(a.is_clean(), "seed {seed} rule {rule}");
                }
                assert!(clean.secondary_cost <= raw.secondary_cost + 1e-9, "seed {seed} rule {rule}");
            }
        }
    }
}
