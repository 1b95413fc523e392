//! The attacker-LP audit: is every sensitive cell protected by a suppression pattern?
//!
//! Why: a privacy bug is the worst bug, so every method's pattern ends here, and this code is
//! deliberately independent of how the pattern was found. For each sensitive cell and
//! direction, the attacker maximises / minimises `z_t = y_t − a_t` over its component
//! ([`super::attacker`]); the cell is protected when `max ≥ UPL`, `−min ≥ LPL` and
//! `max − min ≥ SPL` (each up to a 1e-6 relative tolerance).
//!
//! Speed without giving up exactness: every LP optimum is a *witness* — a feasible attacker
//! table — and a witness stays valid while all its nonzero cells stay suppressed. So
//! (1) one "batch" LP maximising the sum of several targets (each capped at its level) can
//! certify many targets at once; (2) adding suppressions never breaks a certificate; (3) after
//! removing a cell, only targets whose witness used it are re-solved, and first by another
//! witness already held through them ([`Auditor::reuse_witnesses`]); (4) on large problems
//! (> 100 k cells) and during cleanups, "local" LPs over a ball of ≤ 400 suppressed cells
//! within 3 relation hops of the target come first (batched per ball): they restrict the
//! attacker (cells outside the ball are held at their values), so their optima are still
//! witnesses, and sparse ones; a local shortfall is final only when its capacity cut is
//! violated by the current pattern (a proof), otherwise the component LP decides. Targets no witness
//! certifies get an individual LP; when it falls short its duals give a capacity cut, which
//! the repair loops and the exact method consume. Reported intervals are capped at the
//! requirement unless [`AuditOptions::exact_intervals`] asks for the exact ones.
//!
//! Files: this one holds the incremental state ([`Auditor`]: pattern, certificates per
//! (sensitive cell, direction), witnesses and their users) and the check loop;
//! [`report`] the public options, report types and entry points ([`audit`]);
//! [`certificates`] the certificates that need no LP (combinatorial witnesses, candidates
//! offered by the methods, the re-verification of a finished pattern); [`bounds`] the
//! attacker LPs (local balls, batch and single component LPs, capacity cuts); [`pinned`] the
//! targets the published cells determine, which a lazy check fails without an LP; [`sparse`]
//! the sparser witnesses that accepted cleanup trials keep.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::attacker::Cut;
use super::problem::Problem;
use super::SuppressError;

mod bounds;
mod certificates;
mod pinned;
mod report;
mod sparse;
mod store;

pub(crate) use bounds::{DeferSingles, SmallBatches};
pub(crate) use certificates::{CubeCandidate, MoveCandidate};
pub(crate) use report::audit_problem;
pub use report::{audit, proofs_line, AuditOptions, AuditReport, CellAudit, CertifiedBy};

/// Certificate state of one (sensitive cell, direction).
#[derive(Debug, Clone)]
enum Cert {
    Unknown,
    /// Witness id and value reached.
    Ok(u32, f64),
    /// Value reached and the capacity cut (boxed: a table holds two certificates per
    /// sensitive cell, millions on a census table, and few fail).
    Failed(f64, Option<Box<Cut>>),
}

/// A shortfall found by [`Auditor::check`].
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    /// Index into `Problem::sens`.
    pub sens: usize,
    /// Capacity cut violated by the current pattern (None only for exact-interval audits).
    pub cut: Option<Cut>,
}

/// The running count of a final audit, for its progress lines
/// ([`crate::progress::solver_progress`], at most one per interval): bounds (a sensitive cell's
/// lower or upper protection level) decided out of all. Counts only, never a value.
struct Checked {
    total: usize,
    done: AtomicUsize,
}

impl Checked {
    fn new(total: usize) -> Self {
        Self { total, done: AtomicUsize::new(0) }
    }

    /// `n` more bounds decided (called from the LP loops, on any thread).
    fn add(&self, n: usize) {
        let done = self.done.fetch_add(n, Ordering::Relaxed) + n;
        self.report(done);
    }

    /// `done` bounds decided in all (after a phase, from the certificates).
    fn set(&self, done: usize) {
        self.done.store(done, Ordering::Relaxed);
        self.report(done);
    }

    fn report(&self, done: usize) {
        let total = self.total;
        crate::progress::solver_progress("audit", || {
            format!("{} of {total} protection bounds of sensitive cells checked", done.min(total))
        });
    }
}

/// Reports `n` more decided bounds to an optional running count.
fn tick(checked: Option<&Checked>, n: usize) {
    if let Some(c) = checked {
        c.add(n);
    }
}

/// Incremental audit state over a changing pattern (see the module doc).
pub(crate) struct Auditor<'p, 'a> {
    p: &'p Problem<'a>,
    /// Current pattern.
    pub sup: Vec<bool>,
    certs: Vec<[Cert; 2]>,
    witnesses: store::Witnesses,
    /// Per witness id: found combinatorially (not by an LP).
    combinatorial: Vec<bool>,
    /// Per witness id: its negation was verified to be a feasible move too, so it certifies
    /// both directions ([`Self::offer`] records a cube's down and up moves once).
    symmetric: Vec<bool>,
    users: Vec<Vec<(u32, u8)>>,
    wit_of_cell: crate::table::relations::FastMap<u32, Vec<u32>>,
    mark: Vec<u32>,
    rmark: Vec<u32>,
    epoch: u32,
    /// LPs solved so far.
    pub lps: usize,
    /// Their columns (suppressed cells) summed: the size-weighted count that LP budgets use,
    /// as one LP's time grows with its size (a cleanup trial's LPs on c3-enterprises, one
    /// component of ~9,000 cells, took about 25 ms each, those on c3-persons a fifth of that).
    pub lp_columns: usize,
    /// Their simplex effort ([`crate::lp::Effort`]): the count whose budget ends a search at
    /// the same point on every machine, whatever the LPs' sizes.
    pub lp_effort: crate::lp::Effort,
    /// Exact intervals (uncapped single LPs, no batch).
    pub exact: bool,
    /// Some certificate may be `Failed` (set by [`Self::check`]).
    has_failed: bool,
    /// No combinatorial witnesses (LPs only).
    pub lp_only: bool,
    /// Try small local LPs (a ball around the target) before the component LPs; gives sparse
    /// witnesses, so later removals invalidate few certificates.
    pub local_first: bool,
    /// Unknown targets from which the local LPs first try one batch LP per ball (below it,
    /// one LP per target). Cleanups lower it: a dropped cell often invalidates one shared
    /// witness with dozens of users, which one batch LP per ball re-certifies.
    pub group_min: usize,
    /// Running count for progress lines: only a final audit ([`audit_problem`]) has one, not
    /// the repeated audits inside a method.
    checked: Option<Checked>,
    /// [`Self::localize`] keeps the certificates its local searches cannot replace (set above
    /// [`KEEP_HELD_CELLS`] cells).
    pub keep_held: bool,
    /// Ball radii and sizes of the local LPs ([`BALLS`]; tests leave them out to see what
    /// the other certificates do alone).
    pub(crate) balls: &'static [(usize, usize)],
    /// Open targets from which a ball radius whose batch LPs decide almost nothing is given
    /// up ([`bounds::FUTILE_BALL_MIN_TARGETS`]; tests lower it).
    pub(crate) futile_min_targets: usize,
    /// Hard stop of the LPs of [`Self::check`] (set by searches that improve a clean pattern):
    /// past it a check fails with [`LpError::Stopped`](crate::lp::LpError::Stopped), and
    /// the caller restores its last audited state ([`Self::restore`], [`Self::localize`]).
    pub stop: Option<std::time::Instant>,
    /// Deterministic counterpart of [`Self::stop`]: past this many LP columns
    /// ([`Self::lp_columns`]) a check fails the same way, at the same point on every machine
    /// (asked between chunks of LPs, where the count does not depend on threads or speed).
    pub column_cap: Option<usize>,
    /// Which components leave the targets their batch LPs do not reach to the caller instead
    /// of one single LP each ([`DeferSingles`]); `None`: none do.
    pub defer_singles: Option<DeferSingles>,
    /// Before deferring them, the bounds such a component's batch rounds leave are tried again
    /// in small batches within this budget ([`SmallBatches`]); `None` defers them at once.
    pub retry_deferred: Option<SmallBatches>,
    /// [`LOCALIZE_SKIP_COMPONENT`] (tests lower it).
    pub(crate) localize_skip_component: usize,
    /// [`bounds::COLD_ROUNDS_CELLS`] (tests widen it).
    pub(crate) cold_rounds: std::ops::Range<usize>,
    /// A component's batch rounds stop when fewer targets than this are left (tests raise it
    /// to leave every bound to the single LPs).
    pub(crate) batch_min_targets: usize,
    /// When set, a check's single LPs run in chunks of about this many bounds and stop after
    /// the first chunk with a shortfall, leaving the rest unknown for the next check: for
    /// callers that act on the first shortfalls (a repair round, a drop trial; why and what it
    /// saves: `exact::LAZY_SINGLES`). Such a check stops before any LP when targets the
    /// published cells determine fail ([`pinned`]).
    pub lazy_singles: Option<usize>,
    /// When set, a check stops at pinned targets ([`pinned`]) as a lazy check does, and leaves
    /// the other bounds unknown: for a caller that needs only to know whether some bound fails
    /// (a cleanup's drop trial, [`super::work::Work::try_drop`]).
    pub stops_at_pinned: bool,
    /// Single LPs of one component per hot-started run in a lazy check (the other checks run
    /// [`bounds::WARM_RUN`]): shorter runs spread a chunk over more threads, but other hot-start
    /// chains find other witnesses, so the repair that reads them may take another path.
    pub lazy_run: usize,
}

/// Ball radii (relation hops) and size limits of the local attacker LPs, tried in order.
const BALLS: [(usize, usize); 2] = [(3, 400), (6, 5000)];

/// Hypercubes collected per target, and cell look-ups allowed per target, when searching for
/// combinatorial witnesses.
const WITNESS_CUBES: usize = 8;
const WITNESS_BUDGET: usize = 20_000;

/// Problems with more cells than this use local LPs first in every audit.
const LOCAL_FIRST_CELLS: usize = 100_000;

/// Problems with more cells than this keep, in [`Auditor::localize`], the certificates the
/// local searches cannot replace (the size above which `fast` starts from the hypercube cover;
/// smaller tables keep the component LPs, and their patterns are unchanged).
const KEEP_HELD_CELLS: usize = super::construct::ASSIGN_MAX_CELLS;

/// Suppressed components of at least this many cells (below those whose drop trials are decided
/// locally) make [`Auditor::localize`] keep every certificate held. Why: the ball LPs of the
/// re-certification decide few of the bounds there, at the cost of more than an audit, and the
/// trials that follow lose the new witnesses as readily as the held ones: on HiTaS's repaired
/// merge of c4-hier (one ~21 k-cell component) the witness search left ~3,600 bounds, the
/// 3-hop balls decided none of them, the 6-hop balls 1,098 in 106 s, and the cleanup then
/// tried 4 cells in the 45 s left, where the repair's drop trials before it, audited over the
/// component, took ~1.3 s each (BENCHMARKS.md, session 49). The same size as HiTaS's deferral
/// ([`super::exact`]'s `DEFER_SINGLES_MIN_CELLS`): a table below it has no such component, so
/// the smaller suite tables keep their patterns.
const LOCALIZE_SKIP_COMPONENT: usize = 15_000;

/// The error of a check ended by [`Auditor::stop`] or [`Auditor::column_cap`].
fn stopped() -> SuppressError {
    SuppressError::Lp { context: "the audit".into(), source: crate::lp::LpError::Stopped }
}

/// Direction 0 = down (`LPL`), 1 = up (`UPL`).
fn need(s: &super::problem::Sensitive, dir: usize) -> f64 {
    if dir == 0 {
        s.lpl
    } else {
        s.upl
    }
}

impl<'p, 'a> Auditor<'p, 'a> {
    /// Auditor for `sup` (nothing checked yet).
    pub fn new(p: &'p Problem<'a>, sup: Vec<bool>) -> Self {
        let certs = p.sens.iter().map(|_| [Cert::Unknown, Cert::Unknown]).collect();
        Self {
            p,
            sup,
            certs,
            witnesses: Default::default(),
            combinatorial: Vec::new(),
            symmetric: Vec::new(),
            users: Vec::new(),
            wit_of_cell: Default::default(),
            mark: vec![0; p.n()],
            rmark: vec![0; p.rel.len()],
            epoch: 0,
            lps: 0,
            lp_columns: 0,
            lp_effort: Default::default(),
            exact: false,
            has_failed: false,
            lp_only: false,
            local_first: p.n() > LOCAL_FIRST_CELLS,
            keep_held: p.n() > KEEP_HELD_CELLS,
            balls: &BALLS,
            futile_min_targets: bounds::FUTILE_BALL_MIN_TARGETS,
            group_min: 65,
            checked: None,
            stop: None,
            column_cap: None,
            defer_singles: None,
            retry_deferred: None,
            localize_skip_component: LOCALIZE_SKIP_COMPONENT,
            cold_rounds: bounds::COLD_ROUNDS_CELLS,
            batch_min_targets: 2,
            lazy_singles: None,
            stops_at_pinned: false,
            lazy_run: bounds::WARM_RUN,
        }
    }

    /// Suppresses cell `i` (certificates stay valid; failed ones are re-examined).
    pub fn add(&mut self, i: usize) {
        if self.sup[i] {
            return;
        }
        self.sup[i] = true;
        self.clear_failed();
    }

    /// Turns failed certificates back into unknown ones (a suppression may have fixed them);
    /// a no-op unless the last [`Self::check`] left failures, so adding many cells between
    /// two audits costs O(1) each.
    pub(crate) fn clear_failed(&mut self) {
        if !self.has_failed {
            return;
        }
        self.has_failed = false;
        for c in &mut self.certs {
            for d in c.iter_mut() {
                if matches!(d, Cert::Failed(..)) {
                    *d = Cert::Unknown;
                }
            }
        }
    }

    /// Publishes cell `i`; returns the certificates it invalidated (for [`Self::restore`]).
    pub fn remove(&mut self, i: usize) -> Vec<(u32, u8, u32, f64)> {
        self.sup[i] = false;
        let mut lost = Vec::new();
        if let Some(ws) = self.wit_of_cell.get(&(i as u32)) {
            for &w in ws {
                for &(s, d) in &self.users[w as usize] {
                    if let Cert::Ok(w2, v) = self.certs[s as usize][d as usize] {
                        if w2 == w {
                            lost.push((s, d, w, v));
                            self.certs[s as usize][d as usize] = Cert::Unknown;
                        }
                    }
                }
            }
        }
        // A sliding target is re-solved in both directions: drop the other certificate too.
        let extra: Vec<(u32, u8, u32, f64)> = lost
            .iter()
            .filter(|(s, ..)| is_sliding(&self.p.sens[*s as usize]))
            .filter_map(|&(s, d, ..)| match self.certs[s as usize][1 - d as usize] {
                Cert::Ok(w, v) => Some((s, 1 - d, w, v)),
                _ => None,
            })
            .collect();
        for &(s, d, ..) in &extra {
            self.certs[s as usize][d as usize] = Cert::Unknown;
        }
        lost.extend(extra);
        lost
    }

    /// Undoes [`Self::remove`]: re-suppresses `i` and restores the certificates it lost.
    pub fn restore(&mut self, i: usize, lost: Vec<(u32, u8, u32, f64)>) {
        self.sup[i] = true;
        for (s, d, w, v) in lost {
            self.certs[s as usize][d as usize] = Cert::Ok(w, v);
        }
        self.clear_failed();
    }

    fn record(&mut self, w: Vec<(u32, f64)>) -> u32 {
        let id = self.witnesses.push(&w);
        for &(c, _) in &w {
            self.wit_of_cell.entry(c).or_default().push(id);
        }
        self.combinatorial.push(false);
        self.symmetric.push(false);
        self.users.push(Vec::new());
        id
    }

    /// Counts `lps` more LPs over `columns` columns in all.
    fn solved(&mut self, lps: usize, columns: usize) {
        self.lps += lps;
        self.lp_columns += columns;
    }

    /// Pairs currently certified, by any witness (combinatorial, or an attacker LP's solution).
    pub fn proven(&self) -> usize {
        self.certs.iter().flatten().filter(|c| matches!(c, Cert::Ok(..))).count()
    }

    /// Pairs currently certified by combinatorial witnesses.
    pub fn witnessed(&self) -> usize {
        self.certs.iter().flatten().filter(|c| matches!(c, Cert::Ok(w, _) if self.combinatorial[*w as usize])).count()
    }

    /// Re-certifies every target with local (sparse) witnesses and keeps local LPs first.
    /// Stopped by [`Self::stop`], it keeps the certificates it had (the pattern is unchanged).
    /// With [`Self::keep_held`] (above [`KEEP_HELD_CELLS`] cells), a target without a local
    /// certificate keeps the one it had instead of a component LP: still valid (same pattern),
    /// and those LPs ran over millions of cells — on a 3.6 M-cell census table 134 of them took 379 s and 7 GB and
    /// left no time for a single drop trial (BENCHMARKS "Session 30"). Without it, on a
    /// suppressed component of [`LOCALIZE_SKIP_COMPONENT`] cells or more, every certificate
    /// held is kept as it is, and the trials' audits stay without local LPs.
    pub fn localize(&mut self) -> Result<Vec<Failure>, SuppressError> {
        if !self.keep_held && self.largest_component() >= self.localize_skip_component {
            return Ok(self.failures());
        }
        self.local_first = true;
        let unknown = vec![[Cert::Unknown, Cert::Unknown]; self.certs.len()];
        let held = std::mem::replace(&mut self.certs, unknown);
        let had_failed = self.has_failed;
        let out = if self.keep_held { self.check_local_keeping(&held) } else { self.check() };
        if out.as_ref().is_err_and(|e| e.is_stop()) {
            self.certs = held;
            self.has_failed = had_failed;
        }
        out
    }

    /// [`Self::localize`] on large problems: the combinatorial and local searches of
    /// [`Self::check`], then the `held` certificate for every target still unknown, then the
    /// check of whatever is left (nothing, when `held` certified the pattern).
    fn check_local_keeping(&mut self, held: &[[Cert; 2]]) -> Result<Vec<Failure>, SuppressError> {
        self.certify_locally()?;
        for (now, before) in self.certs.iter_mut().zip(held) {
            for (c, h) in now.iter_mut().zip(before) {
                if matches!(c, Cert::Unknown) && matches!(h, Cert::Ok(..)) {
                    *c = h.clone();
                }
            }
        }
        self.check()
    }

    /// The searches of [`Self::check`] that stay local: reuse of held witnesses, combinatorial
    /// witnesses, then (with [`Self::local_first`]) the ball LPs.
    fn certify_locally(&mut self) -> Result<(), SuppressError> {
        self.sync_checked();
        if !self.exact && !self.lp_only {
            let phase = Phase::start(self);
            self.reuse_witnesses();
            self.solve_witnesses();
            self.sync_checked();
            phase.end(self, format_args!("witnesses"));
        }
        if self.local_first && !self.exact {
            for &(hops, max) in self.balls {
                if !self.certs.iter().flatten().any(|c| matches!(c, Cert::Unknown)) {
                    break;
                }
                let phase = Phase::start(self);
                self.solve_local(hops, max)?;
                self.sync_checked();
                phase.end(self, format_args!("{hops}-hop balls of <= {max} cells"));
            }
        }
        Ok(())
    }

    /// Bounds still without a certificate.
    pub(crate) fn unknown(&self) -> usize {
        self.certs.iter().flatten().filter(|c| matches!(c, Cert::Unknown)).count()
    }

    /// [`LpError::Stopped`](crate::lp::LpError::Stopped) once [`Self::stop`] has passed or
    /// [`Self::column_cap`] is reached: asked between chunks of LPs, so a check cannot run long
    /// past the stop.
    fn stop_check(&self) -> Result<(), SuppressError> {
        let late = self.stop.is_some_and(|at| std::time::Instant::now() >= at);
        if late || self.column_cap.is_some_and(|cap| self.lp_columns >= cap) {
            return Err(stopped());
        }
        Ok(())
    }

    /// Sets the running count (if any) to the bounds decided so far.
    fn sync_checked(&self) {
        if let Some(c) = &self.checked {
            c.set(self.certs.iter().flatten().filter(|c| !matches!(c, Cert::Unknown)).count());
        }
    }

    /// Certifies every unknown target; returns the shortfalls (empty = protected).
    pub fn check(&mut self) -> Result<Vec<Failure>, SuppressError> {
        self.certify_locally()?;
        let phase = Phase::start(self);
        self.solve_unknown()?;
        phase.end(self, format_args!("component LPs"));
        Ok(self.failures())
    }

    /// [`Self::check`] of a drop trial that first probes the `max` lost certificates a refusal
    /// usually comes from ([`Self::probe_lost`]); a shortfall there ends the check.
    pub fn check_probing(&mut self, lost: &[(u32, u8, u32, f64)], max: usize) -> Result<Vec<Failure>, SuppressError> {
        if self.probe_lost(lost, max)? {
            return Ok(self.failures());
        }
        self.check()
    }

    /// A drop trial's check with the witnesses alone (the held ones, reused ones and
    /// combinatorial ones; no LP), over the certificates the drop took away (`lost`, from
    /// [`Self::remove`]): whether they certify every lost target again (a target left
    /// undecided stays unknown; witnesses never prove a shortfall). The trial starts from a
    /// certified pattern, so the other targets keep their certificates and are not searched:
    /// a check over every bound took more than half of a trial's time on c4-geo3.
    ///
    /// For the drop trials of a pattern with a giant suppressed component ([`Self::keep_held`]),
    /// where the component LPs are out of reach: one trial's took the resident set of a
    /// 3.6 M-cell run from 7.7 to 13 GB. Why not the ball LPs either: no trial they were run for
    /// was accepted. On c4-geo3 the 52 accepted trials of the cleanup solved no LP, while the
    /// ball LPs of the 236 undecided ones spent its whole budget (23,526 LPs, 153 s); on
    /// c5-geo3 the same (24 accepted, none with an LP; 46,472 LPs, 361 s). By the witnesses
    /// alone the cleanup tries thousands of cells instead of hundreds (BENCHMARKS.md,
    /// "Session 98").
    pub fn recertified_by_witnesses(&mut self, lost: &[(u32, u8, u32, f64)]) -> bool {
        let mut targets: Vec<usize> = lost.iter().map(|&(k, ..)| k as usize).collect();
        targets.sort_unstable();
        targets.dedup();
        if !self.exact && !self.lp_only {
            self.reuse_witnesses_of(targets.iter().copied());
            self.solve_witnesses_of(targets.iter().copied());
        }
        lost.iter().all(|&(k, d, ..)| matches!(self.certs[k as usize][d as usize], Cert::Ok(..)))
    }

    /// The shortfalls of the certificates held (and whether there are any, for
    /// [`Self::clear_failed`]).
    pub(crate) fn failures(&mut self) -> Vec<Failure> {
        self.sync_checked();
        let mut out = Vec::new();
        for (k, c) in self.certs.iter().enumerate() {
            for d in c.iter() {
                if let Cert::Failed(_, cut) = d {
                    out.push(Failure { sens: k, cut: cut.as_deref().cloned() });
                }
            }
        }
        self.has_failed = !out.is_empty();
        out
    }
}

/// One search phase of a check, for the benchmark trace: what it decided, its LPs and their
/// columns, and its time. Only phases longer than [`Phase::TRACE_SECONDS`] are traced (a
/// cleanup runs thousands of short checks).
struct Phase {
    t0: std::time::Instant,
    unknown: usize,
    lps: usize,
    columns: usize,
}

impl Phase {
    const TRACE_SECONDS: f64 = 2.0;

    fn start(a: &Auditor) -> Self {
        let unknown = if super::trace::enabled() { a.unknown() } else { 0 };
        Self { t0: std::time::Instant::now(), unknown, lps: a.lps, columns: a.lp_columns }
    }

    /// `what` is formatted only when the line is printed (no allocation per check).
    fn end(self, a: &Auditor, what: std::fmt::Arguments) {
        let s = self.t0.elapsed().as_secs_f64();
        if super::trace::enabled() && s >= Self::TRACE_SECONDS {
            let left = a.unknown();
            super::trace::trace(format_args!(
                "audit {what}: {} of {} open bounds decided, {} LPs over {} columns, {s:.1}s",
                self.unknown.saturating_sub(left),
                self.unknown,
                a.lps - self.lps,
                a.lp_columns - self.columns
            ));
        }
    }
}

/// Sliding targets: the SPL can bind beyond the two one-sided levels.
fn is_sliding(s: &super::problem::Sensitive) -> bool {
    s.spl > 0.0 && s.spl > s.lpl + s.upl
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suppress::tests::{grid, primary};
    use crate::table::{CellStatus, Table};

    fn statuses(t: &Table, sup: &[[u32; 2]]) -> Vec<CellStatus> {
        let mut s = t.statuses();
        for c in sup {
            let i = t.find(c).unwrap();
            if s[i] != CellStatus::Primary {
                s[i] = CellStatus::Secondary;
            }
        }
        s
    }

    /// A lazy check ([`Auditor::lazy_singles`]) stops at its first shortfalls — pinned targets
    /// ([`pinned`]) or the first chunk of single LPs with one: its failures are some of the full
    /// check's, found with fewer LPs, and the bounds after them stay undecided. On a protecting
    /// pattern it decides every bound and finds none short, as the full check does.
    #[test]
    fn a_lazy_check_stops_at_its_first_shortfalls() {
        use crate::suppress::problem::{Fix, Problem};
        let far = crate::suppress::budget::Deadline::after(600.0);
        let keys = |f: &[Failure]| f.iter().map(|f| f.sens).collect::<std::collections::BTreeSet<_>>();
        // Per pattern: lazy checks with fewer LPs than the full check, and those that left some
        // of its failures undecided.
        let (mut fewer_lps, mut stopped_early) = ([0, 0], [0, 0]);
        let mut rng = crate::rng::Rng::new(3);
        for seed in 0..4 {
            let t = crate::suppress::tests::synthetic(seed);
            let p = Problem::from_table(&t, None);
            let primaries: Vec<bool> = (0..p.n()).map(|i| p.fix[i] == Fix::Suppressed).collect();
            // The primaries alone (their shortfalls are pinned targets), and with 85 % of the
            // other cells (shortfalls the single LPs find; with a third or a half of them the
            // pinned targets were still all the shortfalls).
            let wider: Vec<bool> = primaries.iter().map(|&s| s || rng.next_f64() < 0.85).collect();
            for (pattern, sup) in [&primaries, &wider].into_iter().enumerate() {
                let mut full = Auditor::new(&p, sup.clone());
                let all = full.check().unwrap();
                if all.is_empty() {
                    continue;
                }
                // A hot-started run per chunk, and runs of one LP each (spread over the threads).
                for (chunk, run) in [(1, bounds::WARM_RUN), (4, 1)] {
                    let mut lazy = Auditor::new(&p, sup.clone());
                    (lazy.lazy_singles, lazy.lazy_run) = (Some(chunk), run);
                    let first = lazy.check().unwrap();
                    assert!(!first.is_empty() && keys(&first).is_subset(&keys(&all)), "seed {seed}, run {run}");
                    assert!(lazy.lps <= full.lps, "seed {seed}, run {run}");
                    fewer_lps[pattern] += usize::from(lazy.lps < full.lps);
                    if keys(&first).len() < keys(&all).len() {
                        stopped_early[pattern] += 1;
                        assert!(lazy.lps < full.lps && lazy.unknown() > 0, "seed {seed}, run {run}");
                    }
                }
            }
            // The repair audits lazily too; its pattern protects.
            let w = crate::suppress::exact::repaired(&p, primaries, false, 0, None, &far).unwrap();
            let mut lazy = Auditor::new(&p, w.sup().to_vec());
            lazy.lazy_singles = Some(1);
            assert!(lazy.check().unwrap().is_empty(), "seed {seed}");
            assert_eq!(lazy.unknown(), 0, "seed {seed}");
        }
        assert!(fewer_lps.iter().all(|&n| n >= 4), "lazy checks with fewer LPs: {fewer_lps:?} of 8 per pattern");
        assert!(stopped_early[1] >= 2, "lazy checks that stopped early: {stopped_early:?} of 8 per pattern");
    }

    /// A lazy check over a component of more than `lp::PRESOLVE_MIN_COLUMNS` cells, whose runs
    /// of single LPs start from the batch rounds' basis (`bounds`), finds shortfalls the full
    /// check finds too, and the same ones with the same cuts on one thread and on two.
    #[test]
    fn a_lazy_check_on_a_large_component_is_exact_on_any_thread_count() {
        use crate::suppress::problem::Problem;
        // 24 × 24 interior cells, every cell suppressed: one component of 625 cells.
        let n = 24;
        let vals: Vec<Vec<f64>> =
            (0..n).map(|r| (0..n).map(|c| 1.0 + ((r * 31 + c * 17) % 50) as f64).collect()).collect();
        let mut t = grid(&vals, None);
        // Every 7th interior cell primary: half of them with a lower protection level above
        // the cell's value (no pattern protects it), half with one any attacker meets.
        for r in 1..=n {
            for c in 1..=n {
                if (r * n + c) % 7 == 0 {
                    let v = vals[r - 1][c - 1];
                    primary(&mut t, &[r as u32, c as u32], if (r + c) % 2 == 0 { 0.2 * v } else { 3.0 * v });
                }
            }
        }
        let p = Problem::from_table(&t, None);
        let sup = vec![true; p.n()];
        let mut full = Auditor::new(&p, sup.clone());
        let all: std::collections::BTreeSet<usize> = full.check().unwrap().iter().map(|f| f.sens).collect();
        assert!(full.largest_component() > crate::lp::PRESOLVE_MIN_COLUMNS);
        let lazy = |threads: usize| {
            rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| {
                let mut a = Auditor::new(&p, sup.clone());
                (a.lazy_singles, a.lazy_run) = (Some(8), 4);
                let fails = a.check().unwrap();
                assert!(!fails.is_empty() && fails.iter().all(|f| all.contains(&f.sens)), "{threads} threads");
                format!("{fails:?}")
            })
        };
        assert_eq!(lazy(1), lazy(2));
    }

    /// 2x2 interior a=10 (primary), b=5, c=2, d=20, all four suppressed. By hand: the attacker
    /// moves a by +δ, b −δ, c −δ, d +δ with all cells ≥ 0, so δ ∈ [−min(a, d), min(b, c)] =
    /// [−10, 2]: a ∈ [0, 12].
    #[test]
    fn hand_solved_rectangle() {
        let mut t = grid(&[vec![10.0, 5.0], vec![2.0, 20.0]], None);
        let a = primary(&mut t, &[1, 1], 3.0);
        let st = statuses(&t, &[[1, 2], [2, 1], [2, 2]]);
        let exact = AuditOptions { exact_intervals: true, ..Default::default() };
        let r = audit(&t, &st, false, &exact).unwrap();
        assert_eq!(r.cells.len(), 1);
        let c = &r.cells[0];
        assert_eq!(c.cell, a);
        assert!((c.lo - 0.0).abs() < 1e-7 && (c.hi - 12.0).abs() < 1e-7, "{c:?}");
        assert!(c.lower_ok && !c.upper_ok);
        assert_eq!(r.under_protected, vec![a]);
        // The default (witness) audit agrees on the verdict.
        let r2 = audit(&t, &st, false, &AuditOptions::default()).unwrap();
        assert_eq!(r2.under_protected, vec![a]);
        // With UPL = 2 the same pattern is safe.
        t.set_protection(a, 3.0, 2.0, 0.0);
        let r3 = audit(&t, &st, false, &AuditOptions::default()).unwrap();
        assert!(r3.is_clean());
        // Sliding: the span is 12 ≥ 11 but not ≥ 13.
        t.set_protection(a, 1.0, 1.0, 11.0);
        assert!(audit(&t, &st, false, &AuditOptions::default()).unwrap().is_clean());
        t.set_protection(a, 1.0, 1.0, 13.0);
        let r4 = audit(&t, &st, false, &AuditOptions::default()).unwrap();
        assert_eq!(r4.under_protected, vec![a]);
        assert!(!r4.cells[0].sliding_ok);
    }

    /// The same rectangle with census-size values (× 10^11): attacker LPs are solved in scaled
    /// units (HiGHS gave up with status `Unknown` on such values), the intervals come back in
    /// the table's units.
    #[test]
    fn huge_values_give_the_same_intervals() {
        let m = 1e11;
        let mut t = grid(&[vec![10.0 * m, 5.0 * m], vec![2.0 * m, 20.0 * m]], None);
        let a = primary(&mut t, &[1, 1], 3.0 * m);
        let st = statuses(&t, &[[1, 2], [2, 1], [2, 2]]);
        let lp_only = AuditOptions { exact_intervals: true, lp_only: true };
        let r = audit(&t, &st, false, &lp_only).unwrap();
        let c = &r.cells[0];
        assert!(c.lo.abs() < 1e-7 * m && (c.hi - 12.0 * m).abs() < 1e-7 * m, "{c:?}");
        assert_eq!(r.under_protected, vec![a]);
    }

    /// Only the primary and its row partner suppressed: the column relation pins it exactly.
    #[test]
    fn pinned_by_a_published_relation() {
        let mut t = grid(&[vec![10.0, 5.0], vec![2.0, 20.0]], None);
        let a = primary(&mut t, &[1, 1], 1.0);
        let st = statuses(&t, &[[1, 2]]);
        let exact = AuditOptions { exact_intervals: true, ..Default::default() };
        let r = audit(&t, &st, false, &exact).unwrap();
        let c = &r.cells[0];
        assert!((c.lo - 10.0).abs() < 1e-7 && (c.hi - 10.0).abs() < 1e-7, "{c:?}");
        assert_eq!(r.under_protected, vec![a]);
    }

    /// Bounds change the answer: an upper bound of 11 on `a` caps the interval.
    #[test]
    fn external_bounds_are_attacker_knowledge() {
        let mut t = grid(&[vec![10.0, 5.0], vec![6.0, 20.0]], None);
        let a = primary(&mut t, &[1, 1], 2.0);
        let st = statuses(&t, &[[1, 2], [2, 1], [2, 2]]);
        assert!(audit(&t, &st, false, &AuditOptions::default()).unwrap().is_clean());
        t.set_bounds(a, 0.0, 11.0).unwrap();
        let r = audit(&t, &st, false, &AuditOptions { exact_intervals: true, ..Default::default() }).unwrap();
        assert!((r.cells[0].hi - 11.0).abs() < 1e-7);
        assert_eq!(r.under_protected, vec![a]);
    }

    /// The witness audit (default) and the LP-only audit give the same per-cell verdict on
    /// random hierarchical tables and patterns: closed patterns from `fast` with random
    /// secondaries dropped, so both protected and under-protected cells occur.
    #[test]
    fn witness_and_lp_audits_agree_on_random_patterns() {
        use crate::suppress::{protect, Method, ProtectOptions};
        use crate::table::synth::{generate, SynthSpec};
        let (mut witnessed, mut under, mut clean) = (0, 0, 0);
        for seed in 0..8 {
            let spec = SynthSpec {
                dims: vec![vec![2, 3], vec![3], vec![2]],
                density: 0.8,
                mean_freq: 5.0,
                min_freq: 3,
                protection: 0.1,
                seed,
            };
            let t = generate(&spec).unwrap();
            let o = ProtectOptions { method: Method::Fast, cleanup: false, time_limit_s: 30.0, ..Default::default() };
            let prot = protect(&t, &o).unwrap();
            let mut rng = crate::rng::Rng::new(seed + 100);
            for round in 0..3 {
                let mut st = prot.statuses.clone();
                for s in st.iter_mut() {
                    if *s == CellStatus::Secondary && rng.next_f64() < 0.15 * round as f64 {
                        *s = CellStatus::Safe;
                    }
                }
                let w = audit(&t, &st, false, &AuditOptions::default()).unwrap();
                let l = audit(&t, &st, false, &AuditOptions { lp_only: true, ..Default::default() }).unwrap();
                assert_eq!(w.under_protected, l.under_protected, "seed {seed} round {round}");
                assert_eq!(l.witnessed, 0);
                witnessed += w.witnessed;
                under += w.under_protected.len();
                clean += usize::from(w.is_clean());
                for c in &w.cells {
                    assert_eq!(c.protected(), c.certified_by != CertifiedBy::Unproven);
                }
            }
        }
        assert!(witnessed > 0, "no pair was certified by a witness");
        assert!(under > 0 && clean > 0, "both verdicts must occur (under {under}, clean {clean})");
    }

    /// An under-protected pattern with a complete hypercube: the witness only reaches 2 of the
    /// UPL of 3, so both audits reject the cell.
    #[test]
    fn under_protected_rectangle_rejected_by_both_audits() {
        let mut t = grid(&[vec![10.0, 5.0], vec![2.0, 20.0]], None);
        let a = primary(&mut t, &[1, 1], 3.0);
        let st = statuses(&t, &[[1, 2], [2, 1], [2, 2]]);
        for o in [AuditOptions::default(), AuditOptions { lp_only: true, ..Default::default() }] {
            let r = audit(&t, &st, false, &o).unwrap();
            assert_eq!(r.under_protected, vec![a], "{o:?}");
            assert_eq!(r.cells[0].certified_by, CertifiedBy::Unproven);
        }
        // UPL 2: the witness alone proves both directions, no LP.
        t.set_protection(a, 2.0, 2.0, 0.0);
        let r = audit(&t, &st, false, &AuditOptions::default()).unwrap();
        assert!(r.is_clean());
        assert_eq!((r.lps_solved, r.witnessed, r.proven), (0, 2, 2));
        assert_eq!(r.cells[0].certified_by, CertifiedBy::Witness);
        let r = audit(&t, &st, false, &AuditOptions { lp_only: true, ..Default::default() }).unwrap();
        assert!(r.is_clean() && r.lps_solved > 0);
        // Both bounds proven, by attacker-LP solutions only.
        assert_eq!((r.witnessed, r.proven), (0, 2));
        assert_eq!(r.cells[0].certified_by, CertifiedBy::Lp);
    }

    /// The final audit from held certificates agrees with a fresh one, and refuses a pattern
    /// changed behind the auditor's back (a witness cell published).
    #[test]
    fn recheck_reuses_certificates_and_refuses_a_changed_pattern() {
        let mut t = grid(&[vec![10.0, 5.0], vec![2.0, 20.0]], None);
        primary(&mut t, &[1, 1], 2.0);
        let st = statuses(&t, &[[1, 2], [2, 1], [2, 2]]);
        let p = Problem::from_table(&t, Some(&st));
        let sup: Vec<bool> = st.iter().map(|s| s.is_suppressed()).collect();
        for lp_only in [false, true] {
            let mut aud = Auditor::new(&p, sup.clone());
            aud.lp_only = lp_only;
            assert!(aud.check().unwrap().is_empty());
            let r = aud.recheck_or_reaudit(true).unwrap().unwrap();
            let fresh = audit(&t, &st, true, &AuditOptions::default()).unwrap();
            assert_eq!((r.is_clean(), r.lps_solved), (true, 0));
            // No LP solved again, yet both bounds proven: by the held LP solutions (lp_only).
            assert_eq!((r.proven, r.witnessed), (2, if lp_only { 0 } else { 2 }), "lp_only {lp_only}");
            assert_eq!(r.under_protected, fresh.under_protected);
            aud.sup[t.find(&[2, 2]).unwrap()] = false;
            assert!(!aud.unverified().unwrap().is_empty(), "lp_only {lp_only}");
            // Audited again, the changed pattern falls short: no report.
            assert!(aud.recheck_or_reaudit(true).unwrap().is_none(), "lp_only {lp_only}");
        }
    }

    /// Candidate certificates are trusted only after exact verification: the right cube
    /// certifies both directions without a search or LP; tampered ones (a flipped sign, a
    /// published cell, a cube short of capacity, a foreign cell index) certify nothing and
    /// leave the verdict to the usual audit.
    #[test]
    fn candidate_certificates_are_verified_before_use() {
        let mut t = grid(&[vec![10.0, 5.0], vec![2.0, 20.0]], None);
        primary(&mut t, &[1, 1], 2.0);
        let st = statuses(&t, &[[1, 2], [2, 1], [2, 2]]);
        let p = Problem::from_table(&t, Some(&st));
        let sup: Vec<bool> = st.iter().map(|s| s.is_suppressed()).collect();
        let c = |r: u32, k: u32| t.find(&[r, k]).unwrap() as u32;
        let cube = vec![(c(1, 1), 1), (c(1, 2), -1), (c(2, 1), -1), (c(2, 2), 1)];
        let mut aud = Auditor::new(&p, sup.clone());
        assert_eq!(aud.offer(vec![(0, vec![cube.clone()])]), 2);
        assert!(aud.check().unwrap().is_empty());
        assert_eq!((aud.lps, aud.witnessed()), (0, 2));
        assert_eq!(aud.unverified(), Some(Vec::new()));
        let mut flipped = cube.clone();
        flipped[1].1 = 1;
        let mut published = sup.clone();
        published[c(2, 2) as usize] = false;
        let foreign = vec![(c(1, 1), 1), (c(1, 0), -1), (c(0, 1), -1), (c(0, 0), 1)];
        let a = c(1, 1);
        for (name, pattern, cand) in [
            ("flipped sign", &sup, flipped),
            ("published cell", &published, cube.clone()),
            ("not a cube of the table", &sup, foreign),
            ("dropped cell", &sup, cube[..3].to_vec()),
        ] {
            let mut aud = Auditor::new(&p, pattern.clone());
            assert_eq!(aud.offer(vec![(0, vec![cand])]), 0, "{name}");
            assert_eq!(aud.witnessed(), 0, "{name}");
        }
        // Capacity: with UPL 3 the cube reaches only 2 upwards (c = 2 cannot go below 0): the
        // down direction is certified, the up one is left to the audit, which rejects it.
        t.set_protection(a as usize, 3.0, 3.0, 0.0);
        let p = Problem::from_table(&t, Some(&st));
        let mut aud = Auditor::new(&p, sup.clone());
        assert_eq!(aud.offer(vec![(0, vec![cube]), (7, vec![vec![(a, 1)]])]), 1);
        let fails = aud.check().unwrap();
        assert_eq!(fails.len(), 1);
        assert!(!aud.cell_audits()[0].upper_ok);
    }

    /// The closed pattern of `fast`'s construction on `p` (a clean start for the tests).
    fn constructed(p: &Problem) -> Vec<bool> {
        let far = crate::suppress::budget::Deadline::after(600.0);
        let w = crate::suppress::construct::complete(p, p.initial(), false, crate::suppress::Construction::Auto, &far)
            .unwrap();
        w.sup().to_vec()
    }

    /// A witness that does not re-verify exactly (an LP witness whose relations balance only
    /// to the solver's tolerance; here one value nudged by 1e-4) is forgotten at the final
    /// audit and the bounds it certified are audited again — not the whole pattern: the report
    /// is clean, agrees with an audit from scratch, and costs fewer LPs than that audit.
    #[test]
    fn unverified_witnesses_are_audited_again() {
        for seed in 0..3 {
            let t = crate::suppress::tests::synthetic(seed);
            let p = Problem::from_table(&t, None);
            let sup = constructed(&p);
            let mut aud = Auditor::new(&p, sup.clone());
            aud.lp_only = true;
            assert!(aud.check().unwrap().is_empty());
            let Cert::Ok(victim, _) = aud.certs[0][0] else { panic!("seed {seed}: no certificate") };
            let mut tampered = store::Witnesses::default();
            for w in 0..aud.witnesses.len() as u32 {
                let mut z = aud.witnesses.to_vec(w);
                if w == victim {
                    z[0].1 *= 1.0 + 1e-4;
                }
                tampered.push(&z);
            }
            aud.witnesses = tampered;
            let bad = aud.unverified().unwrap();
            assert!(bad.contains(&(0, 0)), "seed {seed}");
            let rep = aud.recheck_or_reaudit(false).unwrap().expect("the pattern is protected");
            let fresh = audit_problem(&p, &sup, false, &AuditOptions { lp_only: true, ..Default::default() }).unwrap();
            assert!(rep.is_clean() && fresh.is_clean(), "seed {seed}");
            assert!(rep.lps_solved > 0 && rep.lps_solved < fresh.lps_solved, "seed {seed}: {} LPs", rep.lps_solved);
            assert!(!matches!(aud.certs[0][0], Cert::Ok(w, _) if w == victim), "seed {seed}: the witness is kept");
            assert_eq!(aud.unverified(), Some(Vec::new()), "seed {seed}");
        }
    }

    /// Some bounds protected, some not: the constructed pattern less every third secondary.
    fn thinned(p: &Problem) -> Vec<bool> {
        use crate::suppress::problem::Fix;
        let mut sup = constructed(p);
        let secondaries: Vec<usize> = (0..p.n()).filter(|&i| sup[i] && p.fix[i] == Fix::Free).collect();
        for &i in secondaries.iter().step_by(3) {
            sup[i] = false;
        }
        sup
    }

    /// The attacker LP of the suppressed component of `sup` holding the first sensitive cell
    /// with a lower protection need, and that component's bounds in target order.
    fn first_component(
        aud: &mut Auditor,
        p: &Problem,
        sup: &[bool],
    ) -> (crate::suppress::attacker::CompLp, Vec<(usize, usize)>) {
        let k0 = (0..p.sens.len()).find(|&k| need(&p.sens[k], 0) > 0.0).unwrap();
        let (cells, rows) = aud.component(p.sens[k0].cell);
        let todo: Vec<(usize, usize)> = (0..p.sens.len())
            .filter(|&k| cells.binary_search(&p.sens[k].cell).is_ok())
            .flat_map(|k| [(k, 0), (k, 1)])
            .filter(|&(k, d)| need(&p.sens[k], d) > 0.0)
            .collect();
        (crate::suppress::attacker::CompLp::new(p, sup, cells, rows).limited(None, &aud.lp_effort), todo)
    }

    /// Per (sensitive cell, direction) of pattern `sup`: whether the LP-only audit (one exact
    /// attacker LP per bound, no batches, no witnesses) finds it protected.
    fn protected_bounds(p: &Problem, sup: &[bool]) -> Vec<[bool; 2]> {
        let mut aud = Auditor::new(p, sup.to_vec());
        aud.lp_only = true;
        aud.check().unwrap();
        certified_bounds(&aud)
    }

    /// Per (sensitive cell, direction): whether `aud` holds a certificate for it.
    fn certified_bounds(aud: &Auditor) -> Vec<[bool; 2]> {
        aud.certs.iter().map(|c| [0, 1].map(|d| matches!(c[d], Cert::Ok(..)))).collect()
    }

    /// The bounds a deferring audit's batch rounds leave (HiTaS's merge on a large component)
    /// are tried again in small batches: every bound they certify is protected (the LP-only
    /// audit agrees), they keep all that the plain deferral certifies, the same on one thread
    /// and on two; an exhausted budget or a passed stop leaves the deferral as it was. Given
    /// every bound of a component of a clean pattern, they certify some, and only protected
    /// ones (the synthetic tables' batch rounds leave none that are protected: c4-hier's do,
    /// BENCHMARKS "Session 51").
    #[test]
    fn small_batches_certify_only_protected_bounds() {
        let later = std::time::Instant::now() + std::time::Duration::from_secs(3600);
        let mut retried = 0;
        for seed in 0..4 {
            let t = crate::suppress::tests::synthetic(seed);
            let p = Problem::from_table(&t, None);
            let sup = thinned(&p);
            let truth = protected_bounds(&p, &sup);
            let certified = |retry: Option<SmallBatches>, threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                pool.install(|| {
                    let mut aud = Auditor::new(&p, sup.clone());
                    aud.defer_singles = Some(DeferSingles::ALL);
                    aud.retry_deferred = retry;
                    aud.check().unwrap();
                    (certified_bounds(&aud), aud.retry_deferred.map(|b| b.stopped))
                })
            };
            let budget = SmallBatches { columns: usize::MAX, until: later, stopped: false };
            let (plain, _) = certified(None, 1);
            let (small, stopped) = certified(Some(budget), 1);
            assert_eq!((small.clone(), stopped), certified(Some(budget), 2), "seed {seed}");
            assert_eq!(stopped, Some(false), "seed {seed}");
            for (k, (s, q)) in small.iter().zip(&plain).enumerate() {
                for d in 0..2 {
                    assert!(!s[d] || truth[k][d], "seed {seed}: bound ({k}, {d}) certified but not protected");
                    assert!(!q[d] || s[d], "seed {seed}: bound ({k}, {d}) lost by the small batches");
                    retried += usize::from(s[d] && !q[d]);
                }
            }
            let spent = SmallBatches { columns: 0, ..budget };
            assert_eq!(certified(Some(spent), 1), (plain.clone(), Some(false)), "seed {seed}");
            let past = SmallBatches { until: std::time::Instant::now(), ..budget };
            let (late, stopped) = certified(Some(past), 1);
            assert_eq!(late, plain, "seed {seed}");
            if small != plain {
                assert_eq!(stopped, Some(true), "seed {seed}: the stop is reported");
            }
            // The small batches themselves, given every bound of a component of the clean
            // constructed pattern: they certify some, and only protected ones.
            let clean = constructed(&p);
            let truth = protected_bounds(&p, &clean);
            let mut aud = Auditor::new(&p, clean.clone());
            aud.retry_deferred = Some(budget);
            let (lp, todo) = first_component(&mut aud, &p, &clean);
            let left = aud.retry_in_small_batches(&lp, todo.clone()).unwrap();
            for &(k, d) in todo.iter().filter(|t| !left.contains(t)) {
                assert!(matches!(aud.certs[k][d], Cert::Ok(..)), "seed {seed}: ({k}, {d}) not recorded");
                assert!(truth[k][d], "seed {seed}: ({k}, {d}) certified but not protected");
                retried += 1;
            }
        }
        assert!(retried > 0, "the small batches certified nothing");
    }

    /// What the small batches leave gets a single LP each within their budget
    /// ([`Auditor::singles_within`]): every bound is then decided — certified exactly where the
    /// LP-only audit finds it protected, otherwise a shortfall with a capacity cut that the
    /// pattern violates (the repair then adds what the cut asks for, not a cube) — and the same
    /// on one thread and on two.
    #[test]
    fn single_lps_after_the_small_batches_decide_every_bound() {
        let later = std::time::Instant::now() + std::time::Duration::from_secs(3600);
        let mut short = 0;
        for seed in 0..4 {
            let t = crate::suppress::tests::synthetic(seed);
            let p = Problem::from_table(&t, None);
            let sup = thinned(&p);
            let truth = protected_bounds(&p, &sup);
            let decide = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                pool.install(|| {
                    let mut aud = Auditor::new(&p, sup.clone());
                    aud.defer_singles = Some(DeferSingles::ALL);
                    aud.retry_deferred = Some(SmallBatches { columns: usize::MAX, until: later, stopped: false });
                    aud.check().unwrap();
                    aud
                })
            };
            let aud = decide(1);
            assert_eq!(certified_bounds(&aud), certified_bounds(&decide(2)), "seed {seed}");
            for (k, s) in p.sens.iter().enumerate() {
                for d in (0..2).filter(|&d| !is_sliding(s) && need(s, d) > 0.0) {
                    match &aud.certs[k][d] {
                        Cert::Ok(..) => assert!(truth[k][d], "seed {seed}: ({k}, {d}) certified but not protected"),
                        Cert::Failed(_, Some(cut)) => {
                            assert!(!truth[k][d], "seed {seed}: ({k}, {d}) protected but failed");
                            assert!(cut.lhs(&sup) < cut.rhs, "seed {seed}: ({k}, {d})'s cut holds");
                            short += 1;
                        }
                        other => panic!("seed {seed}: ({k}, {d}) left {other:?}"),
                    }
                }
            }
        }
        assert!(short > 0, "no shortfall reached the single LPs");
    }

    /// The single LPs after the small batches start none past the hard stop: given a passed
    /// stop they return every bound untried (in target order, left to the cubes), spend no
    /// LP column, record nothing and report the stop; given time they decide every bound
    /// they pay for, and report no stop.
    #[test]
    fn single_lps_start_none_past_the_stop() {
        let later = std::time::Instant::now() + std::time::Duration::from_secs(3600);
        for seed in 0..2 {
            let t = crate::suppress::tests::synthetic(seed);
            let p = Problem::from_table(&t, None);
            let sup = thinned(&p);
            let mut aud = Auditor::new(&p, sup.clone());
            let (lp, mut todo) = first_component(&mut aud, &p, &sup);
            todo.reverse(); // out of target order: the untried come back sorted
            assert!(!todo.is_empty(), "seed {seed}");
            let (held, lps) = (format!("{:?}", aud.certs), aud.lps);
            let mut columns = usize::MAX;
            let (left, stopped) =
                aud.singles_within(&lp, todo.clone(), &mut columns, std::time::Instant::now()).unwrap();
            todo.sort_unstable();
            assert_eq!((&left, stopped, columns), (&todo, true, usize::MAX), "seed {seed}");
            assert_eq!((format!("{:?}", aud.certs), aud.lps), (held, lps), "seed {seed}: nothing recorded");
            let (left, stopped) = aud.singles_within(&lp, todo.clone(), &mut columns, later).unwrap();
            assert_eq!((left.len(), stopped), (0, false), "seed {seed}");
            assert_eq!(usize::MAX - columns, todo.len() * lp.cells.len(), "seed {seed}: columns paid");
            for &(k, d) in &todo {
                assert!(
                    matches!(aud.certs[k][d], Cert::Ok(..) | Cert::Failed(_, Some(_))),
                    "seed {seed}: ({k}, {d}) undecided"
                );
            }
        }
    }

    /// The audit's verdict on dropping each of the first 20 free cells of `sup`, one at a time.
    fn drop_verdicts(aud: &mut Auditor, sup: &[bool]) -> Vec<bool> {
        (0..aud.p.n())
            .filter(|&i| sup[i] && aud.p.fix[i] == crate::suppress::problem::Fix::Free)
            .take(20)
            .map(|i| {
                let lost = aud.remove(i);
                let clean = aud.check().unwrap().is_empty();
                aud.restore(i, lost);
                clean
            })
            .collect()
    }

    /// On a suppressed component of at least `localize_skip_component` cells, `localize` keeps
    /// every certificate held, solves no LP, and the drop trials that follow get the same
    /// verdicts as after a full re-certification.
    #[test]
    fn localize_keeps_every_certificate_on_large_components() {
        for seed in 0..3 {
            let t = crate::suppress::tests::synthetic(seed);
            let p = Problem::from_table(&t, None);
            let sup = constructed(&p);
            let mut runs = Vec::new();
            for skip in [false, true] {
                let mut aud = Auditor::new(&p, sup.clone());
                assert!(aud.check().unwrap().is_empty());
                if skip {
                    aud.localize_skip_component = 0;
                }
                let (lps, held) = (aud.lps, format!("{:?}", aud.certs));
                assert!(aud.localize().unwrap().is_empty(), "seed {seed} skip {skip}");
                if skip {
                    assert_eq!((aud.lps, format!("{:?}", aud.certs)), (lps, held), "seed {seed}");
                    assert!(!aud.local_first, "seed {seed}: the trials' audits stay without ball LPs");
                }
                let verdicts = drop_verdicts(&mut aud, &sup);
                runs.push(verdicts);
            }
            assert_eq!(runs[0], runs[1], "seed {seed}");
            assert!(runs[0].iter().any(|&v| v) && runs[0].iter().any(|&v| !v), "seed {seed}: both verdicts seen");
        }
    }

    /// `localize` keeping held certificates (large tables): every pair stays certified by a
    /// certificate that re-verifies exactly, with fewer LPs than the component-LP version, and
    /// drop trials afterwards get the same verdicts from both. LPs only (no reuse or
    /// combinatorial search) and the local LPs left out, so that the held certificates are
    /// what is kept.
    #[test]
    fn localize_keeping_held_certificates_stays_sound() {
        for seed in 0..3 {
            let t = crate::suppress::tests::synthetic(seed);
            let p = Problem::from_table(&t, None);
            let sup = constructed(&p);
            let mut runs = Vec::new();
            for keep in [false, true] {
                let mut aud = Auditor::new(&p, sup.clone());
                aud.lp_only = true; // global LP certificates, and no combinatorial search
                assert!(aud.check().unwrap().is_empty());
                aud.keep_held = keep;
                aud.balls = &[];
                let lps = aud.lps;
                assert!(aud.localize().unwrap().is_empty(), "seed {seed} keep {keep}");
                assert!(aud.certs.iter().flatten().all(|c| matches!(c, Cert::Ok(..))));
                assert_eq!(
                    aud.unverified(),
                    Some(Vec::new()),
                    "seed {seed} keep {keep}: a certificate does not re-verify"
                );
                let spent = aud.lps - lps;
                // Then every secondary's drop: same verdicts either way.
                let verdicts = drop_verdicts(&mut aud, &sup);
                runs.push((spent, verdicts));
            }
            assert!(runs[1].0 == 0 && runs[0].0 > 0, "seed {seed}: LPs of localize {runs:?}");
            assert_eq!(runs[0].1, runs[1].1, "seed {seed}: drop verdicts differ");
        }
    }

    /// A ball radius whose batch LPs decide (almost) nothing is given up for the larger balls
    /// and the component LPs: the same verdict for every pair, with fewer LPs. Balls of at
    /// most 2 cells certify nothing on these 4-dimensional tables (the
    /// attacker can move no cell of a relation whose other members are held), so the 1-hop
    /// radius is futile; LPs only, so that the radii are what decides.
    #[test]
    fn futile_ball_radii_are_given_up_with_the_same_verdicts() {
        for seed in 0..3 {
            let t = crate::suppress::tests::synthetic(seed);
            let p = Problem::from_table(&t, None);
            // Some secondaries published, so that both verdicts occur.
            let mut sup = constructed(&p);
            let free: Vec<usize> =
                (0..p.n()).filter(|&i| sup[i] && p.fix[i] == crate::suppress::problem::Fix::Free).collect();
            for &i in free.iter().step_by(5) {
                sup[i] = false;
            }
            let runs: Vec<(usize, Vec<CellAudit>)> = [usize::MAX, 1]
                .into_iter()
                .map(|min| {
                    let mut aud = Auditor::new(&p, sup.clone());
                    aud.lp_only = true;
                    aud.local_first = true;
                    aud.group_min = 1;
                    aud.balls = &[(1, 2), (6, 5000)];
                    aud.futile_min_targets = min;
                    aud.check().unwrap();
                    (aud.lps, aud.cell_audits())
                })
                .collect();
            let verdicts = |r: &[CellAudit]| r.iter().map(|c| (c.cell, c.lower_ok, c.upper_ok)).collect::<Vec<_>>();
            assert_eq!(verdicts(&runs[0].1), verdicts(&runs[1].1), "seed {seed}");
            assert!(runs[1].0 < runs[0].0, "seed {seed}: LPs {} with the skip, {} without", runs[1].0, runs[0].0);
            assert!(runs[0].1.iter().any(|c| !c.lower_ok || !c.upper_ok), "seed {seed}: nothing under-protected");
        }
    }

    /// A cube whose down and up moves mirror each other (equal protection levels) is recorded
    /// once, as a symmetric witness certifying both directions; it re-verifies and is reused
    /// after a remove/restore like any other. Unequal levels give two witnesses. A symmetric
    /// witness whose negation leaves the attacker's bounds (bounds tampered with behind the
    /// auditor's back) does not re-verify.
    #[test]
    fn mirrored_cube_moves_share_one_symmetric_witness() {
        let mut t = grid(&[vec![10.0, 5.0], vec![2.0, 20.0]], None);
        // Below every corner's capacity (at 2.0 the corner of value 2 would cap the up move
        // just short of it, and the two moves would differ).
        primary(&mut t, &[1, 1], 1.5);
        let st = statuses(&t, &[[1, 2], [2, 1], [2, 2]]);
        let c = |r: u32, k: u32| t.find(&[r, k]).unwrap() as u32;
        let cube = vec![(c(1, 1), 1), (c(1, 2), -1), (c(2, 1), -1), (c(2, 2), 1)];
        let p = Problem::from_table(&t, Some(&st));
        let sup: Vec<bool> = st.iter().map(|s| s.is_suppressed()).collect();
        let mut aud = Auditor::new(&p, sup.clone());
        assert_eq!(aud.offer(vec![(0, vec![cube.clone()])]), 2);
        assert_eq!((aud.witnesses.len(), aud.symmetric[0]), (1, true));
        assert!(matches!(aud.certs[0], [Cert::Ok(0, _), Cert::Ok(0, _)]));
        assert_eq!(aud.unverified(), Some(Vec::new()));
        // Both directions lost with the shared witness, both back with it.
        let lost = aud.remove(c(2, 2) as usize);
        assert_eq!(lost.len(), 2);
        aud.restore(c(2, 2) as usize, lost);
        assert!(aud.check().unwrap().is_empty());
        assert_eq!((aud.lps, aud.witnesses.len()), (0, 1));
        // Its negation outside the bounds: no longer a certificate of both directions.
        let mut bad = p.clone();
        bad.lo_gap[c(1, 2) as usize] = 1.0;
        let mut aud2 = Auditor::new(&bad, sup.clone());
        aud2.witnesses = aud.witnesses.clone();
        aud2.symmetric = aud.symmetric.clone();
        aud2.combinatorial = aud.combinatorial.clone();
        aud2.certs = aud.certs.clone();
        assert!(!aud2.unverified().unwrap().is_empty());
        // Unequal levels: two one-directional witnesses.
        let mut t2 = t.clone();
        t2.set_protection(c(1, 1) as usize, 1.5, 1.0, 0.0);
        let p2 = Problem::from_table(&t2, Some(&st));
        let mut aud = Auditor::new(&p2, sup);
        assert_eq!(aud.offer(vec![(0, vec![cube])]), 2);
        assert_eq!(aud.witnesses.len(), 2);
        assert!(!aud.symmetric.iter().any(|&s| s));
        assert_eq!(aud.unverified(), Some(Vec::new()));
    }

    /// Incremental auditor: dropping a cell only re-solves targets whose witness used it, and
    /// restoring brings back the clean state without new LPs.
    #[test]
    fn incremental_remove_and_restore() {
        let mut t = grid(&[vec![10.0, 5.0, 7.0], vec![6.0, 20.0, 9.0]], None);
        primary(&mut t, &[1, 1], 2.0);
        let st = statuses(&t, &[[1, 2], [2, 1], [2, 2], [1, 3], [2, 3]]);
        let p = Problem::from_table(&t, Some(&st));
        let sup: Vec<bool> = st.iter().map(|s| s.is_suppressed()).collect();
        let mut aud = Auditor::new(&p, sup);
        assert!(aud.check().unwrap().is_empty());
        let solved = aud.lps;
        let i = t.find(&[2, 2]).unwrap();
        let lost = aud.remove(i);
        let f = aud.check().unwrap();
        if lost.is_empty() {
            assert_eq!(aud.lps, solved);
        }
        assert!(f.is_empty(), "rows 1-2 x cols 1,3 still protect");
        // Remove the other column partner too: the primary is pinned; restore fixes it.
        let j = t.find(&[1, 3]).unwrap();
        let lost = aud.remove(j);
        assert!(!aud.check().unwrap().is_empty());
        aud.restore(j, lost);
        let before = aud.lps;
        assert!(aud.check().unwrap().is_empty());
        assert_eq!(aud.lps, before, "restored certificates need no LP");
    }

    /// Single LPs in long hot-started runs without the target's cap (on the components whose
    /// batch rounds are solved from scratch, here widened to every size) decide every bound as
    /// the short capped runs do: the same shortfalls, and witnesses for the others that the
    /// exact re-verification accepts. Without batch rounds, so that the single LPs decide all.
    #[test]
    fn long_uncapped_runs_decide_as_short_capped_ones() {
        use crate::suppress::problem::Fix;
        use crate::suppress::{protect, Method, ProtectOptions};
        let (mut shortfalls, mut certifications) = (0, 0);
        for seed in 1..=3 {
            let t = crate::suppress::tests::synthetic(seed);
            let o =
                ProtectOptions { method: Method::Fast, cleanup: false, singleton_rule: false, ..Default::default() };
            let full = protect(&t, &o).unwrap();
            let p = Problem::from_table(&t, None);
            // The first secondary whose publication leaves some bounds short and others held.
            let full: Vec<bool> = full.statuses.iter().map(|s| s.is_suppressed()).collect();
            let without = |i: usize| {
                let mut sup = full.clone();
                sup[i] = false;
                sup
            };
            let mixed = |i: &usize| {
                let short = Auditor::new(&p, without(*i)).check().unwrap().len();
                short > 0 && short < 2 * p.sens.len()
            };
            let Some(i) = (0..p.n()).filter(|&i| full[i] && p.fix[i] == Fix::Free).find(mixed) else { continue };
            let sup = without(i);
            let decide = |cold: std::ops::Range<usize>| {
                let mut a = Auditor::new(&p, sup.clone());
                (a.lp_only, a.batch_min_targets, a.cold_rounds) = (true, usize::MAX, cold);
                let mut short: Vec<usize> = a.check().unwrap().iter().map(|f| f.sens).collect();
                short.sort_unstable();
                // Each certified bound's witness, verified exactly: a move the pattern allows
                // that takes the target as far as its level.
                let mut certified = 0;
                for (k, certs) in a.certs.iter().enumerate() {
                    for (d, c) in certs.iter().enumerate() {
                        let (Cert::Ok(w, _), n) = (c, need(&p.sens[k], d)) else { continue };
                        let reached = a.witness_reach(*w, k, d) >= n - super::super::attacker::tolerance(n);
                        assert!(n <= 0.0 || (a.witness_holds(*w) && reached), "seed {seed}");
                        certified += 1;
                    }
                }
                (short, certified)
            };
            let (short, certified) = decide(bounds::COLD_ROUNDS_CELLS);
            assert_eq!(decide(0..usize::MAX), (short.clone(), certified), "seed {seed}");
            shortfalls += short.len();
            certifications += certified;
        }
        assert!(shortfalls > 0 && certifications > 0, "the single LPs must find both");
    }
}
