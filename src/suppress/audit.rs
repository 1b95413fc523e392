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
//! removing a cell, only targets whose witness used it are re-solved; (4) on large problems
//! (> 100 k cells) and during cleanups, "local" LPs over a ball of ≤ 400 suppressed cells
//! within 3 relation hops of the target come first (batched per ball): they restrict the
//! attacker (cells outside the ball are held at their values), so their optima are still
//! witnesses, and sparse ones; a local shortfall is final only when its capacity cut is
//! violated by the current pattern (a proof), otherwise the component LP decides. Targets no witness
//! certifies get an individual LP; when it falls short its duals give a capacity cut, which
//! the repair loops and the exact method consume. Reported intervals are capped at the
//! requirement unless [`AuditOptions::exact_intervals`] asks for the exact ones.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use crate::table::relations::FastMap;
use crate::table::{CellStatus, Table};

use super::attacker::{tolerance, CompLp, Cut};
use super::geometry::Cube;
use super::problem::Problem;
use super::singleton;
use super::trace::trace;
use super::SuppressError;

/// Options of [`audit`].
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct AuditOptions {
    /// Solve two uncapped LPs per sensitive cell and report exact feasibility intervals
    /// (slower); otherwise intervals are only proven up to the required levels.
    pub exact_intervals: bool,
    /// Certify every pair with an attacker LP, never with a combinatorial witness (the
    /// reference path the witness audit is tested against; slower on large tables).
    #[serde(default)]
    pub lp_only: bool,
}

/// What proved a sensitive cell's protection (both directions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CertifiedBy {
    /// Both directions by exactly verified combinatorial witnesses ([`super::witness`]): the
    /// interval holds the proven reach, the true one may be wider.
    Witness,
    /// Both directions by attacker LPs.
    Lp,
    /// One direction each.
    Mixed,
    /// Some requirement was not proven (the cell is under-protected).
    Unproven,
}

/// Audit result of one sensitive cell.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CellAudit {
    /// Cell index.
    pub cell: usize,
    /// Attacker's lowest feasible value (proven; exact with `exact_intervals`).
    pub lo: f64,
    /// Attacker's highest feasible value (proven; exact with `exact_intervals`).
    pub hi: f64,
    /// `lo ≤ a − LPL`.
    pub lower_ok: bool,
    /// `hi ≥ a + UPL`.
    pub upper_ok: bool,
    /// `hi − lo ≥ SPL`.
    pub sliding_ok: bool,
    /// How `lo` and `hi` were proven.
    pub certified_by: CertifiedBy,
}

impl CellAudit {
    /// Whether all three requirements hold.
    pub fn protected(&self) -> bool {
        self.lower_ok && self.upper_ok && self.sliding_ok
    }
}

/// Full audit result.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AuditReport {
    /// One entry per sensitive (primary) cell, in cell order.
    pub cells: Vec<CellAudit>,
    /// Under-protected sensitive cells (cell indices).
    pub under_protected: Vec<usize>,
    /// Singleton-rule violations `(relation, sensitive cell)` (see `singleton.rs`).
    pub singleton_violations: Vec<(usize, usize)>,
    /// Number of LPs solved.
    pub lps_solved: usize,
    /// (Sensitive cell, direction) pairs certified by combinatorial witnesses, without an LP.
    #[serde(default)]
    pub witnessed: usize,
}

impl AuditReport {
    /// No under-protected cell and no singleton violation.
    pub fn is_clean(&self) -> bool {
        self.under_protected.is_empty() && self.singleton_violations.is_empty()
    }
}

/// Audits `statuses` on `table`: sensitive = `Primary`, suppressed = `Primary | Secondary`.
/// `singleton_rule` also reports singleton-rule violations.
pub fn audit(
    table: &Table,
    statuses: &[CellStatus],
    singleton_rule: bool,
    opts: &AuditOptions,
) -> Result<AuditReport, SuppressError> {
    let p = Problem::from_table(table, Some(statuses));
    let sup: Vec<bool> = statuses.iter().map(|s| s.is_suppressed()).collect();
    audit_problem(&p, &sup, singleton_rule, opts)
}

/// [`audit`] on a flat problem.
pub(crate) fn audit_problem(
    p: &Problem,
    sup: &[bool],
    singleton_rule: bool,
    opts: &AuditOptions,
) -> Result<AuditReport, SuppressError> {
    let mut a = Auditor::new(p, sup.to_vec());
    a.checked = Some(Checked::new(2 * p.sens.len()));
    a.exact = opts.exact_intervals;
    a.lp_only = opts.lp_only;
    a.check()?;
    let cells = a.cell_audits();
    let under_protected = cells.iter().filter(|c| !c.protected()).map(|c| c.cell).collect();
    let singleton_violations = if singleton_rule { singleton::violations(p, sup) } else { Vec::new() };
    let witnessed = a.witnessed();
    Ok(AuditReport { cells, under_protected, singleton_violations, lps_solved: a.lps, witnessed })
}

/// A candidate certificate for [`Auditor::offer`]: sensitive index and cubes through it.
pub(crate) type CubeCandidate = (u32, Vec<Cube>);

/// A candidate move for [`Auditor::offer_moves`]: sensitive index, direction, move.
pub(crate) type MoveCandidate = (u32, u8, Vec<(u32, f64)>);

/// A verified candidate: sensitive index, direction, move, reach.
type Verified = (usize, usize, Vec<(u32, f64)>, f64);

/// Certificate state of one (sensitive cell, direction).
#[derive(Debug, Clone)]
enum Cert {
    Unknown,
    /// Witness id and value reached.
    Ok(u32, f64),
    /// Value reached and the capacity cut.
    Failed(f64, Option<Cut>),
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
    witnesses: Vec<Vec<(u32, f64)>>,
    /// Per witness id: found combinatorially (not by an LP).
    combinatorial: Vec<bool>,
    users: Vec<Vec<(u32, u8)>>,
    wit_of_cell: crate::table::relations::FastMap<u32, Vec<u32>>,
    mark: Vec<u32>,
    rmark: Vec<u32>,
    epoch: u32,
    /// LPs solved so far.
    pub lps: usize,
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
}

/// Ball radii (relation hops) and size limits of the local attacker LPs, tried in order.
const BALLS: [(usize, usize); 2] = [(3, 400), (6, 5000)];

/// Hypercubes collected per target, and cell look-ups allowed per target, when searching for
/// combinatorial witnesses.
const WITNESS_CUBES: usize = 8;
const WITNESS_BUDGET: usize = 20_000;

/// Problems with more cells than this use local LPs first in every audit.
const LOCAL_FIRST_CELLS: usize = 100_000;

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
            witnesses: Vec::new(),
            combinatorial: Vec::new(),
            users: Vec::new(),
            wit_of_cell: Default::default(),
            mark: vec![0; p.n()],
            rmark: vec![0; p.rel.len()],
            epoch: 0,
            lps: 0,
            exact: false,
            has_failed: false,
            lp_only: false,
            local_first: p.n() > LOCAL_FIRST_CELLS,
            group_min: 65,
            checked: None,
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
    fn clear_failed(&mut self) {
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
        let id = self.witnesses.len() as u32;
        for &(c, _) in &w {
            self.wit_of_cell.entry(c).or_default().push(id);
        }
        self.witnesses.push(w);
        self.combinatorial.push(false);
        self.users.push(Vec::new());
        id
    }

    /// Final audit from the certificates this auditor holds, without any new search or LP:
    /// every witness is re-verified against the current pattern on its own — support cells
    /// suppressed, bounds held and every relation touching the support balanced (to 1e-7
    /// relative, the LP feasibility tolerance; combinatorial witnesses balance exactly) — and
    /// every (sensitive cell, direction) must be reached by a re-verified witness. `None` when
    /// anything is missing or does not re-verify (or a cell has a sliding requirement): the
    /// caller then audits from scratch. Why: a second from-scratch audit of a million-cell
    /// pattern repeats minutes of search and LPs whose results are already at hand.
    pub fn recheck(&self, singleton_rule: bool) -> Option<AuditReport> {
        let p = self.p;
        let mut ok_wit: FastMap<u32, Option<FastMap<u32, f64>>> = FastMap::default();
        for (k, s) in p.sens.iter().enumerate() {
            if is_sliding(s) {
                return None;
            }
            for d in 0..2 {
                let n = need(s, d);
                let Cert::Ok(w, _) = self.certs[k][d] else { return None };
                if n <= 0.0 {
                    continue;
                }
                let z = ok_wit.entry(w).or_insert_with(|| feasible_move(p, &self.sup, &self.witnesses[w as usize]));
                let dir = if d == 0 { -1.0 } else { 1.0 };
                let reach = z.as_ref()?.get(&s.cell).map_or(0.0, |v| dir * v);
                if reach < n - tolerance(n) {
                    return None;
                }
            }
        }
        let cells = self.cell_audits();
        if cells.iter().any(|c| !c.protected()) {
            return None;
        }
        let singleton_violations = if singleton_rule { singleton::violations(p, &self.sup) } else { Vec::new() };
        Some(AuditReport {
            cells,
            under_protected: Vec::new(),
            singleton_violations,
            lps_solved: 0,
            witnessed: self.witnessed(),
        })
    }

    /// Pairs currently certified by combinatorial witnesses.
    pub fn witnessed(&self) -> usize {
        self.certs.iter().flatten().filter(|c| matches!(c, Cert::Ok(w, _) if self.combinatorial[*w as usize])).count()
    }

    /// Candidate certificates handed in by a construction: per sensitive cell (index into
    /// `Problem::sens`), hypercubes through it (`(cell, ±1)` lists). Every unknown non-sliding
    /// (cell, direction) gets the greedy sum of its candidates ([`super::witness::combine`]),
    /// which certifies the pair only when [`super::witness::verify`] accepts it exactly
    /// against the current pattern and it reaches the protection level; a tampered, stale or
    /// short candidate is ignored (the pair stays unknown for the search and the LPs). The
    /// audit stays independent of the construction: trust rests on the verification alone.
    /// Why: the construction knows a cube for every cell it covered; re-finding cubes of
    /// hundreds of cells in a dense million-cell pattern costs minutes and can miss within
    /// the search budget. Ignored by LP-only and exact-interval audits. Returns the pairs
    /// certified.
    pub fn offer(&mut self, cands: Vec<CubeCandidate>) -> usize {
        let p = self.p;
        if self.lp_only || self.exact {
            return 0;
        }
        let sup = &self.sup;
        let certs = &self.certs;
        let found: Vec<Verified> = cands
            .par_iter()
            .filter(|(k, cubes)| (*k as usize) < p.sens.len() && !cubes.is_empty())
            .flat_map_iter(|(k, cubes)| {
                let k = *k as usize;
                let s = &p.sens[k];
                let open = move |d: usize| !is_sliding(s) && need(s, d) > 0.0 && matches!(certs[k][d], Cert::Unknown);
                // Each cube's balance is checked once for both directions; `combine` only
                // sums cubes from this checked list, so `reach_within_bounds` completes an
                // exact `verify`.
                let ok: Vec<Vec<(u32, i8)>> = if open(0) || open(1) {
                    cubes.iter().filter(|h| super::witness::balanced(p, sup, h)).cloned().collect()
                } else {
                    Vec::new()
                };
                (0..2).filter_map(move |d| {
                    let n = need(s, d);
                    if !open(d) || ok.is_empty() {
                        return None;
                    }
                    let dir = if d == 0 { -1.0 } else { 1.0 };
                    let w = super::witness::combine(p, &ok, dir, n)?;
                    let v = super::witness::reach_within_bounds(p, &w, s.cell, dir)?;
                    (v >= n - tolerance(n)).then(|| (k, d, w.moves(), v))
                })
            })
            .collect();
        let mut n = 0;
        for (k, d, z, v) in found {
            if !matches!(self.certs[k][d], Cert::Unknown) {
                continue; // a repeated candidate
            }
            let id = self.record(z);
            self.combinatorial[id as usize] = true;
            self.users[id as usize].push((k as u32, d as u8));
            self.certs[k][d] = Cert::Ok(id, v);
            n += 1;
        }
        n
    }

    /// Candidate attacker moves `(sensitive index, direction, move)` handed in by a
    /// construction (e.g. box LPs): a move certifies an unknown non-sliding pair only when it
    /// passes the same check as [`Self::recheck`] — support suppressed, bounds held, every
    /// relation touching the support balanced to the LP feasibility tolerance — and reaches
    /// the protection level; anything else is ignored. Ignored by LP-only and exact-interval
    /// audits. Returns the pairs certified.
    pub fn offer_moves(&mut self, cands: Vec<MoveCandidate>) -> usize {
        let p = self.p;
        if self.lp_only || self.exact {
            return 0;
        }
        let mut n_ok = 0;
        for (k, d, z) in cands {
            let (k, d) = (k as usize, d as usize);
            if k >= p.sens.len() || d > 1 || !matches!(self.certs[k][d], Cert::Unknown) {
                continue;
            }
            let s = &p.sens[k];
            let n = need(s, d);
            if is_sliding(s) || n <= 0.0 {
                continue;
            }
            let Some(zm) = feasible_move(p, &self.sup, &z) else { continue };
            let dir = if d == 0 { -1.0 } else { 1.0 };
            let v = dir * zm.get(&s.cell).copied().unwrap_or(0.0);
            if v.is_nan() || v < n - tolerance(n) {
                continue;
            }
            let id = self.record(z);
            self.users[id as usize].push((k as u32, d as u8));
            self.certs[k][d] = Cert::Ok(id, v);
            n_ok += 1;
        }
        n_ok
    }

    /// Combinatorial witnesses ([`super::witness`]) for unknown non-sliding targets: each
    /// proposal is verified exactly against the problem before it certifies anything.
    fn solve_witnesses(&mut self) {
        let p = self.p;
        let Some(geom) = p.geom.as_deref() else { return };
        let todo: Vec<usize> = (0..p.sens.len())
            .filter(|&k| !is_sliding(&p.sens[k]))
            .filter(|&k| (0..2).any(|d| matches!(self.certs[k][d], Cert::Unknown)))
            .collect();
        if todo.is_empty() {
            return;
        }
        let t0 = std::time::Instant::now();
        let sup = &self.sup;
        let certs = &self.certs;
        let found: Vec<super::witness::Certified> = todo
            .par_iter()
            .map(|&k| {
                let want: Vec<usize> = (0..2).filter(|&d| matches!(certs[k][d], Cert::Unknown)).collect();
                super::witness::certify(p, geom, sup, &p.sens[k], &want, WITNESS_CUBES, WITNESS_BUDGET)
            })
            .collect();
        for (&k, res) in todo.iter().zip(found) {
            for (d, r) in res.into_iter().enumerate() {
                if let Some((z, v)) = r {
                    let id = self.record(z);
                    self.combinatorial[id as usize] = true;
                    self.users[id as usize].push((k as u32, d as u8));
                    self.certs[k][d] = Cert::Ok(id, v);
                }
            }
        }
        trace(format_args!(
            "witness search {:.1}s over {} targets: {} pairs by witness",
            t0.elapsed().as_secs_f64(),
            todo.len(),
            self.witnessed()
        ));
    }

    /// Component (cells, relations) of suppressed cell `t`.
    fn component(&mut self, t: u32) -> (Vec<u32>, Vec<u32>) {
        self.epoch += 1;
        let e = self.epoch;
        let (mut cells, mut rows) = (vec![t], Vec::new());
        self.mark[t as usize] = e;
        let mut k = 0;
        while k < cells.len() {
            let c = cells[k] as usize;
            k += 1;
            for &r in self.p.rel.of_cell(c) {
                if self.rmark[r as usize] == e {
                    continue;
                }
                self.rmark[r as usize] = e;
                rows.push(r);
                for m in self.p.rel.members(r as usize) {
                    if self.sup[m as usize] && self.mark[m as usize] != e {
                        self.mark[m as usize] = e;
                        cells.push(m);
                    }
                }
            }
        }
        cells.sort_unstable();
        rows.sort_unstable();
        (cells, rows)
    }

    /// Cells within `hops` relation hops of `t` (at most `max`) and every relation
    /// touching them.
    fn ball(&mut self, t: u32, hops: usize, max: usize) -> (Vec<u32>, Vec<u32>) {
        self.epoch += 1;
        let e = self.epoch;
        let mut cells = vec![t];
        self.mark[t as usize] = e;
        let mut layer = 0..1;
        for _ in 0..hops {
            let end = cells.len();
            for k in layer.clone() {
                let c = cells[k] as usize;
                for &r in self.p.rel.of_cell(c) {
                    for m in self.p.rel.members(r as usize) {
                        if cells.len() < max && self.sup[m as usize] && self.mark[m as usize] != e {
                            self.mark[m as usize] = e;
                            cells.push(m);
                        }
                    }
                }
            }
            layer = end..cells.len();
        }
        let mut rows: Vec<u32> = cells.iter().flat_map(|&c| self.p.rel.of_cell(c as usize).iter().copied()).collect();
        rows.sort_unstable();
        rows.dedup();
        cells.sort_unstable();
        (cells, rows)
    }

    /// Re-certifies every target with local (sparse) witnesses and keeps local LPs first.
    pub fn localize(&mut self) -> Result<Vec<Failure>, SuppressError> {
        self.local_first = true;
        for c in &mut self.certs {
            *c = [Cert::Unknown, Cert::Unknown];
        }
        self.check()
    }

    /// Local LPs for unknown non-sliding targets: certifies those they can, and records a
    /// failure when the local LP's capacity cut is violated by the current pattern (a proof of
    /// under-protection, since the cut is valid for every protecting pattern).
    fn solve_local(&mut self, hops: usize, max: usize) -> Result<(), SuppressError> {
        let p = self.p;
        let todo: Vec<(usize, usize)> = (0..p.sens.len())
            .filter(|&k| !is_sliding(&p.sens[k]))
            .flat_map(|k| [(k, 0), (k, 1)])
            .filter(|&(k, d)| matches!(self.certs[k][d], Cert::Unknown))
            .filter(|&(k, d)| need(&p.sens[k], d) > 0.0)
            .collect();
        if todo.len() >= self.group_min {
            self.solve_local_groups(&todo, hops, max)?;
        }
        let todo: Vec<(usize, usize)> =
            todo.into_iter().filter(|&(k, d)| matches!(self.certs[k][d], Cert::Unknown)).collect();
        for chunk in todo.chunks(2048) {
            self.solve_local_chunk(chunk, hops, max)?;
        }
        Ok(())
    }

    /// Local batch LPs: the unknown targets (one direction) inside one ball share one LP that
    /// maximises their capped sum; certifies those it reaches (many targets per LP on large
    /// tables). The rest are left unknown for single local LPs.
    fn solve_local_groups(&mut self, todo: &[(usize, usize)], hops: usize, max: usize) -> Result<(), SuppressError> {
        let p = self.p;
        let mut at: crate::table::relations::FastMap<(u32, usize), usize> = Default::default();
        for (x, &(k, d)) in todo.iter().enumerate() {
            at.insert((p.sens[k].cell, d), x);
        }
        let mut taken = vec![false; todo.len()];
        let mut groups: Vec<(Vec<u32>, Vec<u32>, Vec<usize>)> = Vec::new();
        for x in 0..todo.len() {
            if taken[x] {
                continue;
            }
            let (k, d) = todo[x];
            let (cells, rows) = self.ball(p.sens[k].cell, hops, max);
            let members: Vec<usize> =
                cells.iter().filter_map(|&c| at.get(&(c, d)).copied()).filter(|&y| !taken[y]).collect();
            for &y in &members {
                taken[y] = true;
            }
            groups.push((cells, rows, members));
        }
        for chunk in groups.chunks(256) {
            let sup = &self.sup;
            let res: Vec<Vec<(u32, f64)>> = chunk
                .par_iter()
                .map(|(cells, rows, members)| {
                    let lp = CompLp::new(p, sup, cells.clone(), rows.clone());
                    let targets: Vec<(u32, f64, f64)> = members
                        .iter()
                        .map(|&y| {
                            let (k, d) = todo[y];
                            let s = &p.sens[k];
                            (s.cell, if d == 0 { -1.0 } else { 1.0 }, need(s, d))
                        })
                        .collect();
                    lp.batch(&targets)
                })
                .collect::<Result<_, SuppressError>>()?;
            self.lps += res.len();
            for ((_, _, members), w) in chunk.iter().zip(res) {
                let z: crate::table::relations::FastMap<u32, f64> = w.iter().copied().collect();
                let done: Vec<(usize, usize, f64)> = members
                    .iter()
                    .map(|&y| todo[y])
                    .filter(|&(k, d)| {
                        let s = &p.sens[k];
                        let dir = if d == 0 { -1.0 } else { 1.0 };
                        let n = need(s, d);
                        dir * z.get(&s.cell).copied().unwrap_or(0.0) >= n - tolerance(n)
                    })
                    .map(|(k, d)| (k, d, need(&p.sens[k], d)))
                    .collect();
                if done.is_empty() {
                    continue;
                }
                let id = self.record(w);
                for (k, d, v) in done {
                    self.users[id as usize].push((k as u32, d as u8));
                    self.certs[k][d] = Cert::Ok(id, v);
                }
            }
        }
        Ok(())
    }

    fn solve_local_chunk(&mut self, todo: &[(usize, usize)], hops: usize, max: usize) -> Result<(), SuppressError> {
        let p = self.p;
        let balls: Vec<(Vec<u32>, Vec<u32>)> =
            todo.iter().map(|&(k, _)| self.ball(p.sens[k].cell, hops, max)).collect();
        let sup = &self.sup;
        let checked = self.checked.as_ref();
        let res: Vec<(crate::suppress::attacker::Attack, Option<Cut>)> = todo
            .par_iter()
            .zip(balls)
            .map(|(&(k, d), (cells, rows))| {
                let s = &p.sens[k];
                let lp = CompLp::new(p, sup, cells, rows);
                let dir = if d == 0 { -1.0 } else { 1.0 };
                let n = need(s, d);
                let x = |c: u32| if sup[c as usize] { 1.0 } else { 0.0 };
                let r = lp.single(p, &x, s.cell, dir, n, n);
                tick(checked, 1);
                r
            })
            .collect::<Result<_, SuppressError>>()?;
        self.lps += res.len();
        for (&(k, d), (att, cut)) in todo.iter().zip(res) {
            let n = need(&p.sens[k], d);
            if att.value >= n - tolerance(n) {
                let id = self.record(att.witness);
                self.users[id as usize].push((k as u32, d as u8));
                self.certs[k][d] = Cert::Ok(id, att.value);
            } else if let Some(cut) = cut.map(|c| c.capped(n)) {
                if cut.lhs(&self.sup) < n - tolerance(n) {
                    self.certs[k][d] = Cert::Failed(att.value, Some(cut));
                }
            }
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
        self.sync_checked();
        if !self.exact && !self.lp_only {
            self.solve_witnesses();
            self.sync_checked();
        }
        if self.local_first && !self.exact {
            for (hops, max) in BALLS {
                if !self.certs.iter().flatten().any(|c| matches!(c, Cert::Unknown)) {
                    break;
                }
                self.solve_local(hops, max)?;
                self.sync_checked();
            }
        }
        self.solve_unknown()?;
        self.sync_checked();
        let mut out = Vec::new();
        for (k, c) in self.certs.iter().enumerate() {
            for d in c.iter() {
                if let Cert::Failed(_, cut) = d {
                    out.push(Failure { sens: k, cut: cut.clone() });
                }
            }
        }
        self.has_failed = !out.is_empty();
        Ok(out)
    }

    fn solve_unknown(&mut self) -> Result<(), SuppressError> {
        let p = self.p;
        // (sens, dir) pairs to solve; sliding targets always solve both directions together.
        let mut todo: Vec<(usize, usize)> = Vec::new();
        for (k, s) in p.sens.iter().enumerate() {
            let unk = [0, 1].map(|d| matches!(self.certs[k][d], Cert::Unknown));
            if is_sliding(s) && (unk[0] || unk[1]) {
                todo.push((k, 0));
                todo.push((k, 1));
            } else {
                for (d, &u) in unk.iter().enumerate() {
                    if u {
                        if need(s, d) <= 0.0 && !self.exact {
                            let w = self.record(Vec::new());
                            self.combinatorial[w as usize] = true;
                            self.users[w as usize].push((k as u32, d as u8));
                            self.certs[k][d] = Cert::Ok(w, 0.0);
                        } else {
                            todo.push((k, d));
                        }
                    }
                }
            }
        }
        if todo.is_empty() {
            return Ok(());
        }
        // Components of the targets.
        let mut comp_of: crate::table::relations::FastMap<u32, usize> = Default::default();
        let mut comps: Vec<(Vec<u32>, Vec<u32>)> = Vec::new();
        for &(k, _) in &todo {
            let t = p.sens[k].cell;
            if comp_of.contains_key(&t) {
                continue;
            }
            let (cells, rows) = self.component(t);
            for &c in &cells {
                if p.sens_of.contains_key(&c) {
                    comp_of.insert(c, comps.len());
                }
            }
            comps.push((cells, rows));
        }
        let sup_owned = self.sup.clone();
        let sup = &sup_owned;
        let lps: Vec<CompLp> = comps.into_par_iter().map(|(c, r)| CompLp::new(p, sup, c, r)).collect();
        // Phase A: batch LPs per (component, direction), several rounds.
        let mut groups: Vec<Vec<Vec<(usize, usize)>>> = vec![vec![Vec::new(), Vec::new()]; lps.len()];
        let mut singles: Vec<(usize, usize, usize)> = Vec::new();
        for &(k, d) in &todo {
            let ci = comp_of[&p.sens[k].cell];
            if self.exact || is_sliding(&p.sens[k]) {
                singles.push((ci, k, d));
            } else {
                groups[ci][d].push((k, d));
            }
        }
        // The bounds decided so far (the trivial ones above), then a running count in the LPs.
        self.sync_checked();
        let checked = self.checked.as_ref();
        let batch: Vec<BatchOut> = groups
            .par_iter()
            .enumerate()
            .map(|(ci, g)| run_batches(p, &lps[ci], g, checked))
            .collect::<Result<_, _>>()?;
        for (ci, out) in batch.into_iter().enumerate() {
            self.lps += out.lps;
            for (w, users) in out.witnesses {
                let id = self.record(w);
                for (k, d, v) in users {
                    self.users[id as usize].push((k as u32, d as u8));
                    self.certs[k][d] = Cert::Ok(id, v);
                }
            }
            singles.extend(out.left.into_iter().map(|(k, d)| (ci, k, d)));
        }
        singles.sort_unstable();
        // Phase B: one LP per remaining (target, direction).
        let exact = self.exact;
        let checked = self.checked.as_ref();
        let res: Vec<_> = singles
            .par_iter()
            .map(|&(ci, k, d)| {
                let s = &p.sens[k];
                let dir = if d == 0 { -1.0 } else { 1.0 };
                let n = need(s, d);
                let cap = if exact { f64::INFINITY } else { n.max(s.spl) };
                let cut_at = if is_sliding(s) { n.max(s.spl) } else { n };
                let x = |c: u32| if sup[c as usize] { 1.0 } else { 0.0 };
                let r = lps[ci].single(p, &x, s.cell, dir, cap, cut_at);
                tick(checked, 1);
                r
            })
            .collect::<Result<_, _>>()?;
        self.lps += res.len();
        let mut raw_of: crate::table::relations::FastMap<(usize, usize), Cut> = Default::default();
        for (&(_, k, d), (att, raw)) in singles.iter().zip(res) {
            let s = p.sens[k];
            let n = need(&s, d);
            if let Some(raw) = &raw {
                raw_of.insert((k, d), raw.clone());
            }
            self.certs[k][d] = if att.value >= n - tolerance(n) {
                let id = self.record(att.witness);
                self.users[id as usize].push((k as u32, d as u8));
                Cert::Ok(id, att.value)
            } else {
                Cert::Failed(att.value, raw.map(|r| r.capped(n)))
            };
        }
        // Sliding requirement: both directions were solved in this round.
        for (k, s) in p.sens.iter().enumerate() {
            if !is_sliding(s) || !raw_of.contains_key(&(k, 0)) && !raw_of.contains_key(&(k, 1)) {
                continue;
            }
            let v = [0, 1].map(|d| match &self.certs[k][d] {
                Cert::Ok(_, v) | Cert::Failed(v, _) => *v,
                Cert::Unknown => 0.0,
            });
            if v[0] + v[1] < s.spl - tolerance(s.spl) {
                let mut coefs: Vec<(u32, f64)> = Vec::new();
                for d in 0..2 {
                    if let Some(c) = raw_of.get(&(k, d)) {
                        coefs.extend(&c.coefs);
                    }
                }
                let cut = Cut { coefs, rhs: s.spl }.merged().capped(s.spl);
                self.certs[k][1] = Cert::Failed(v[1], Some(cut));
            }
        }
        Ok(())
    }

    /// Per-sensitive-cell results (after [`Self::check`]).
    pub fn cell_audits(&self) -> Vec<CellAudit> {
        self.p
            .sens
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let v = [0, 1].map(|d| match &self.certs[k][d] {
                    Cert::Ok(_, v) | Cert::Failed(v, _) => *v,
                    Cert::Unknown => 0.0,
                });
                let ok = [0, 1].map(|d| matches!(self.certs[k][d], Cert::Ok(..)));
                let comb = [0, 1].map(|d| matches!(self.certs[k][d], Cert::Ok(w, _) if self.combinatorial[w as usize]));
                let a = self.p.value[s.cell as usize];
                let mut c = CellAudit {
                    cell: s.cell as usize,
                    lo: a - v[0],
                    hi: a + v[1],
                    lower_ok: ok[0],
                    upper_ok: ok[1] || v[1] >= s.upl - tolerance(s.upl),
                    sliding_ok: v[0] + v[1] >= s.spl - tolerance(s.spl),
                    certified_by: CertifiedBy::Unproven,
                };
                c.certified_by = if !c.protected() {
                    CertifiedBy::Unproven
                } else if comb[0] && comb[1] {
                    CertifiedBy::Witness
                } else if comb[0] || comb[1] {
                    CertifiedBy::Mixed
                } else {
                    CertifiedBy::Lp
                };
                c
            })
            .collect()
    }
}

/// The move `z` as a map when it is a feasible attacker move for pattern `sup` (see
/// [`Auditor::recheck`]), else `None`.
fn feasible_move(p: &Problem, sup: &[bool], z: &[(u32, f64)]) -> Option<FastMap<u32, f64>> {
    let zm: FastMap<u32, f64> = z.iter().copied().collect();
    for &(c, v) in z {
        let c = c as usize;
        if c >= p.n() || !sup[c] || !v.is_finite() {
            return None;
        }
        let slack = |g: f64| 1e-7 * g.abs().max(1.0);
        if v > p.up_gap[c] + slack(p.up_gap[c]) || -v > p.lo_gap[c] + slack(p.lo_gap[c]) {
            return None;
        }
    }
    let mut seen: FastMap<u32, ()> = FastMap::default();
    for &(c, _) in z {
        for &r in p.rel.of_cell(c as usize) {
            if seen.insert(r, ()).is_some() {
                continue;
            }
            let (mut sum, mut scale) = (0.0f64, 0.0f64);
            for (m, a) in p.rel.terms(r as usize) {
                let v = a * zm.get(&m).copied().unwrap_or(0.0);
                sum += v;
                scale += v.abs();
            }
            if sum.abs() > 1e-7 * scale.max(1.0) {
                return None;
            }
        }
    }
    Some(zm)
}

/// Sliding targets: the SPL can bind beyond the two one-sided levels.
fn is_sliding(s: &super::problem::Sensitive) -> bool {
    s.spl > 0.0 && s.spl > s.lpl + s.upl
}

/// A witness and its users `(sensitive index, direction, value)`.
type SharedWitness = (Vec<(u32, f64)>, Vec<(usize, usize, f64)>);

struct BatchOut {
    witnesses: Vec<SharedWitness>,
    left: Vec<(usize, usize)>,
    lps: usize,
}

fn run_batches(
    p: &Problem,
    lp: &CompLp,
    groups: &[Vec<(usize, usize)>],
    checked: Option<&Checked>,
) -> Result<BatchOut, SuppressError> {
    let mut out = BatchOut { witnesses: Vec::new(), left: Vec::new(), lps: 0 };
    for g in groups {
        let mut g = g.clone();
        for _round in 0..4 {
            if g.len() < 2 {
                break;
            }
            let targets: Vec<(u32, f64, f64)> = g
                .iter()
                .map(|&(k, d)| {
                    let s = &p.sens[k];
                    (s.cell, if d == 0 { -1.0 } else { 1.0 }, need(s, d))
                })
                .collect();
            let w = lp.batch(&targets)?;
            out.lps += 1;
            let z: crate::table::relations::FastMap<u32, f64> = w.iter().copied().collect();
            let (done, rest): (Vec<_>, Vec<_>) = g.iter().partition(|&&(k, d)| {
                let s = &p.sens[k];
                let dir = if d == 0 { -1.0 } else { 1.0 };
                let n = need(s, d);
                dir * z.get(&s.cell).copied().unwrap_or(0.0) >= n - tolerance(n)
            });
            if done.is_empty() {
                break;
            }
            tick(checked, done.len());
            let users = done.iter().map(|&(k, d)| (k, d, need(&p.sens[k], d))).collect();
            out.witnesses.push((w, users));
            g = rest;
        }
        out.left.extend(g);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suppress::tests::{grid, primary};

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
        assert_eq!((r.lps_solved, r.witnessed), (0, 2));
        assert_eq!(r.cells[0].certified_by, CertifiedBy::Witness);
        let r = audit(&t, &st, false, &AuditOptions { lp_only: true, ..Default::default() }).unwrap();
        assert!(r.is_clean() && r.lps_solved > 0);
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
            let r = aud.recheck(true).unwrap();
            let fresh = audit(&t, &st, true, &AuditOptions::default()).unwrap();
            assert_eq!((r.is_clean(), r.lps_solved), (true, 0));
            assert_eq!(r.under_protected, fresh.under_protected);
            aud.sup[t.find(&[2, 2]).unwrap()] = false;
            assert!(aud.recheck(true).is_none(), "lp_only {lp_only}");
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
        assert!(aud.recheck(true).is_some());
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
}
