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
//!    fail closed. Singleton rule violations get a third suppression in the relation.
//!
//! On tables up to `ASSIGN_MAX_CELLS` cells with a geometry, step 1 is the cube assignment
//! ([`super::cubes`]: one hypercube per sensitive cell, sharing cells, improved by local search)
//! followed by the closure of sensitive cells without a cube; larger tables use the parallel
//! hypercube cover ([`Work::cover`]); see [`super::construct`].
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
use super::{ProtectOptions, SuppressError};

/// The fast method (see the module doc).
pub(crate) fn run(p: &Problem, opts: &ProtectOptions, deadline: &Deadline) -> Result<Vec<bool>, SuppressError> {
    Ok(run_certified(p, opts, deadline)?.0)
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
    cleaned(p, opts, columns, deadline)
}

/// [`run`], plus the final audit re-verified from the repair's certificates when possible
/// ([`Auditor::recheck_or_reaudit`](super::audit::Auditor::recheck_or_reaudit)).
pub(crate) fn run_certified(
    p: &Problem,
    opts: &ProtectOptions,
    deadline: &Deadline,
) -> Result<(Vec<bool>, Option<super::AuditReport>), SuppressError> {
    cleaned(p, opts, usize::MAX, deadline)
}

/// The completed pattern, cleaned up within the options' trials and `columns` LP columns.
fn cleaned(
    p: &Problem,
    opts: &ProtectOptions,
    columns: usize,
    deadline: &Deadline,
) -> Result<(Vec<bool>, Option<super::AuditReport>), SuppressError> {
    let mut w = complete(p, p.initial(), opts.singleton_rule, opts.construction, deadline)?;
    if opts.cleanup {
        w.cleanup_columns = columns;
        w.group_trials = super::work::group_trials(opts.budget_limit_s());
        w.cleanup(opts.singleton_rule, opts.cleanup_budget(), deadline)?;
    }
    w.into_certified(opts.singleton_rule)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suppress::tests::{lp_audit, synthetic};
    use crate::suppress::{protect, Construction, Method};

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

    /// On random 3-dimensional hierarchical tables the cube-assignment start, repair and
    /// cleanup give LP-audited patterns, with and without the singleton rule, and the
    /// cleanup never costs more than the pattern it started from.
    #[test]
    fn cube_assignment_patterns_pass_the_lp_audit() {
        for seed in 10..13 {
            let t = synthetic(seed);
            for rule in [false, true] {
                let base = ProtectOptions { method: Method::Fast, singleton_rule: rule, ..Default::default() };
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
