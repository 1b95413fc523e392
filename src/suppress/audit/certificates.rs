//! Certificates without an LP: combinatorial witnesses searched on the table's geometry
//! ([`super::super::witness`]), candidate cubes and moves offered by the methods (each verified
//! exactly before it is trusted), and the re-verification of a finished pattern from the
//! certificates it was built with ([`Auditor::recheck_or_reaudit`]).

use rayon::prelude::*;

use crate::table::relations::FastMap;

use super::super::attacker::tolerance;
use super::super::geometry::Cube;
use super::super::problem::Problem;
use super::super::singleton;
use super::super::trace::trace;
use super::super::witness;
use super::report::AuditReport;
use super::{is_sliding, need, Auditor, Cert, SuppressError, WITNESS_BUDGET, WITNESS_CUBES};

/// A candidate certificate for [`Auditor::offer`]: sensitive index and cubes through it.
pub(crate) type CubeCandidate = (u32, Vec<Cube>);

/// A candidate move for [`Auditor::offer_moves`]: sensitive index, direction, move.
pub(crate) type MoveCandidate = (u32, u8, Vec<(u32, f64)>);

/// Witnesses through a target tried by [`Auditor::reuse_witnesses`].
const REUSE_PER_TARGET: usize = 64;

/// A sensitive cell's verified moves, down and up, each with its reach.
type MovePair = [Option<(Vec<(u32, f64)>, f64)>; 2];

/// Candidates verified at once by [`Auditor::offer`].
const OFFER_CHUNK: usize = 1 << 16;

impl Auditor<'_, '_> {
    /// Final audit from the certificates this auditor holds: every witness is re-verified
    /// against the current pattern on its own — support cells suppressed, bounds held and every
    /// relation touching the support balanced (to 1e-7 relative, the LP feasibility tolerance;
    /// combinatorial witnesses balance exactly) — and every (sensitive cell, direction) must be
    /// reached by a re-verified witness, without any new search or LP. Why: a second
    /// from-scratch audit of a million-cell pattern repeats minutes of search and LPs whose
    /// results are already at hand.
    ///
    /// The bounds of witnesses that do not re-verify are audited again instead of giving up:
    /// those witnesses are forgotten, every bound they certified is reopened and
    /// certified afresh by [`Self::check`] on the current pattern (the witness search, then the
    /// attacker LPs, as in an audit from scratch), with no stop, column cap or deferral — it is
    /// the publication audit. `Ok(None)` when a bound has no certificate, a cell has a sliding
    /// requirement or the re-audit finds a shortfall: the caller then audits from scratch. Why
    /// the re-audit: a batch-LP witness of 17,489 cells on HiTaS's merge of the 4-dimensional
    /// c4-hier balanced its relations to HiGHS's tolerance but not to 1e-7, and the audit from
    /// scratch that followed took 112 s past the 600-s limit (BENCHMARKS.md, session 48).
    pub fn recheck_or_reaudit(&mut self, singleton_rule: bool) -> Result<Option<AuditReport>, SuppressError> {
        let Some(bad) = self.unverified() else { return Ok(None) };
        if bad.is_empty() {
            return Ok(self.report_if_protected(singleton_rule, 0));
        }
        let lps0 = self.lps;
        let mut forgotten: Vec<u32> = bad
            .iter()
            .filter_map(|&(k, d)| match self.certs[k][d] {
                Cert::Ok(w, _) => Some(w),
                _ => None,
            })
            .collect();
        forgotten.sort_unstable();
        forgotten.dedup();
        for &w in &forgotten {
            for (s, d) in std::mem::take(&mut self.users[w as usize]) {
                if matches!(self.certs[s as usize][d as usize], Cert::Ok(w2, _) if w2 == w) {
                    self.certs[s as usize][d as usize] = Cert::Unknown;
                }
            }
            // Not offered again by `reuse_witnesses`.
            for (c, _) in self.witnesses.moves(w) {
                if let Some(ws) = self.wit_of_cell.get_mut(&c) {
                    ws.retain(|&x| x != w);
                }
            }
        }
        for &(k, d) in &bad {
            self.certs[k][d] = Cert::Unknown;
        }
        let reopened = self.unknown();
        (self.stop, self.column_cap, self.defer_singles) = (None, None, None);
        let clean = self.check()?.is_empty();
        trace(format_args!(
            "certificate re-verification: {} witnesses did not re-verify, {reopened} bounds audited again ({} LPs): {}",
            forgotten.len(),
            self.lps - lps0,
            if clean { "clean" } else { "a shortfall" }
        ));
        Ok(if clean { self.report_if_protected(singleton_rule, self.lps - lps0) } else { None })
    }

    /// The (sensitive index, direction) pairs whose certificate does not re-verify or falls
    /// short ([`Self::recheck_or_reaudit`]); `None` when a pair has no certificate or a cell
    /// has a sliding requirement (left to an audit from scratch).
    pub(super) fn unverified(&self) -> Option<Vec<(usize, usize)>> {
        let p = self.p;
        // Per witness: 0 not yet checked, 1 re-verifies, 2 does not (its move map is not kept:
        // for the millions of certificates of a large table those maps took gigabytes).
        let mut ok_wit: Vec<u8> = vec![0; self.witnesses.len()];
        let mut bad = Vec::new();
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
                if ok_wit[w as usize] == 0 {
                    ok_wit[w as usize] = if self.witness_holds(w) { 1 } else { 2 };
                }
                if ok_wit[w as usize] != 1 || self.witness_reach(w, k, d) < n - tolerance(n) {
                    bad.push((k, d));
                }
            }
        }
        Some(bad)
    }

    /// Whether witness `w` is a move the pattern allows: relations balanced, every cell within
    /// its bounds, only suppressed cells moved; for a symmetric witness, its negation too.
    pub(super) fn witness_holds(&self, w: u32) -> bool {
        let z = self.witnesses.to_vec(w);
        feasible_move(self.p, &self.sup, &z).is_some()
            && (!self.symmetric[w as usize] || negation_within_bounds(self.p, &z))
    }

    /// How far witness `w` moves sensitive cell `k` in direction `d` (0 = down, 1 = up).
    pub(super) fn witness_reach(&self, w: u32, k: usize, d: usize) -> f64 {
        let dir = if d == 0 { -1.0 } else { 1.0 };
        // The map of `feasible_move` keeps a repeated cell's last entry.
        let cell = self.p.sens[k].cell;
        let zt = self.witnesses.moves(w).filter(|(c, _)| *c == cell).last().map_or(0.0, |x| x.1);
        if self.symmetric[w as usize] {
            (dir * zt).abs()
        } else {
            dir * zt
        }
    }

    /// The audit report of the certificates held, `None` unless every sensitive cell is
    /// protected; `lps` attacker LPs were solved for it.
    fn report_if_protected(&self, singleton_rule: bool, lps: usize) -> Option<AuditReport> {
        let cells = self.cell_audits();
        if cells.iter().any(|c| !c.protected()) {
            return None;
        }
        let singleton_violations = if singleton_rule { singleton::violations(self.p, &self.sup) } else { Vec::new() };
        Some(AuditReport {
            cells,
            under_protected: Vec::new(),
            singleton_violations,
            lps_solved: lps,
            witnessed: self.witnessed(),
            proven: self.proven(),
        })
    }

    /// Candidate certificates handed in by a construction: per sensitive cell (index into
    /// `Problem::sens`), hypercubes through it (`(cell, ±1)` lists). Every unknown non-sliding
    /// (cell, direction) gets the greedy sum of its candidates ([`witness::combine`]),
    /// which certifies the pair only when [`witness::verify`] accepts it exactly
    /// against the current pattern and it reaches the protection level; a tampered, stale or
    /// short candidate is ignored (the pair stays unknown for the search and the LPs). The
    /// audit stays independent of the construction: trust rests on the verification alone.
    /// Why: the construction knows a cube for every cell it covered; re-finding cubes of
    /// hundreds of cells in a dense million-cell pattern costs minutes and can miss within
    /// the search budget. Ignored by LP-only and exact-interval audits. Returns the pairs
    /// certified.
    pub fn offer(&mut self, mut cands: Vec<CubeCandidate>) -> usize {
        let p = self.p;
        if self.lp_only || self.exact {
            return 0;
        }
        let mut n = 0;
        // Chunk by chunk, each chunk's cubes freed once verified: verifying all candidates of a
        // 3.6 M-cell census table before recording any took 9 GB (measured).
        let total = cands.len();
        for lo in (0..total).step_by(OFFER_CHUNK) {
            let chunk = &mut cands[lo..(lo + OFFER_CHUNK).min(total)];
            let sup = &self.sup;
            let certs = &self.certs;
            let found: Vec<(usize, MovePair)> = chunk
                .par_iter()
                .filter(|(k, cubes)| (*k as usize) < p.sens.len() && !cubes.is_empty())
                .map(|(k, cubes)| {
                    let k = *k as usize;
                    let s = &p.sens[k];
                    let open = |d: usize| !is_sliding(s) && need(s, d) > 0.0 && matches!(certs[k][d], Cert::Unknown);
                    // Each cube's balance is checked once for both directions; `combine` only
                    // sums cubes from this checked list, so `reach_within_bounds` completes an
                    // exact `verify`.
                    let ok: Vec<Vec<(u32, i8)>> = if open(0) || open(1) {
                        cubes.iter().filter(|h| witness::balanced(p, sup, h)).cloned().collect()
                    } else {
                        Vec::new()
                    };
                    let moves = [0, 1].map(|d| {
                        let n = need(s, d);
                        if !open(d) || ok.is_empty() {
                            return None;
                        }
                        let dir = if d == 0 { -1.0 } else { 1.0 };
                        let w = witness::combine(p, &ok, dir, n)?;
                        let v = witness::reach_within_bounds(p, &w, s.cell, dir)?;
                        (v >= n - tolerance(n)).then(|| (w.moves(), v))
                    });
                    (k, moves)
                })
                .collect();
            for (_, cubes) in chunk.iter_mut() {
                *cubes = Vec::new();
            }
            for (k, moves) in found {
                n += self.record_pair(k, moves);
            }
        }
        n
    }

    /// Records sensitive `k`'s verified moves (down, up) as certificates of its unknown
    /// directions (a repeated candidate certifies nothing new). When the up move is exactly
    /// the down move negated — a cube's usual case: equal protection levels, every corner's
    /// capacity above them — both were verified, so one symmetric witness serves both
    /// directions: half the certificates' memory on a table with millions of them. Returns
    /// the pairs certified.
    fn record_pair(&mut self, k: usize, [down, up]: MovePair) -> usize {
        let mirrored = match (&down, &up) {
            (Some((z0, _)), Some((z1, _))) => {
                z0.len() == z1.len() && z0.iter().zip(z1).all(|(a, b)| a.0 == b.0 && a.1 == -b.1)
            }
            _ => false,
        };
        let mut shared: Option<u32> = None;
        let mut n = 0;
        for (d, found) in [down, up].into_iter().enumerate() {
            let Some((z, v)) = found else { continue };
            if !matches!(self.certs[k][d], Cert::Unknown) {
                continue; // a repeated candidate
            }
            let id = match shared {
                Some(id) => id,
                None => {
                    let id = self.record(z);
                    self.combinatorial[id as usize] = true;
                    if mirrored {
                        self.symmetric[id as usize] = true;
                        shared = Some(id);
                    }
                    id
                }
            };
            self.users[id as usize].push((k as u32, d as u8));
            self.certs[k][d] = Cert::Ok(id, v);
            n += 1;
        }
        n
    }

    /// Candidate attacker moves `(sensitive index, direction, move)` handed in by a
    /// construction (e.g. box LPs): a move certifies an unknown non-sliding pair only when it
    /// passes the same check as [`Self::recheck_or_reaudit`] — support suppressed, bounds held, every
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

    /// Certifies unknown non-sliding targets with witnesses already held: a witness is a
    /// feasible attacker move while every cell of its support stays suppressed (the module
    /// doc), so one found for another target, or for this one before a drop that did not touch
    /// it, certifies the target when it moves it far enough. Why: a cleanup trial that
    /// publishes a much-used secondary invalidates hundreds of certificates (measured on a
    /// 11 k-cell census table: ~770 per accepted drop, ~1,800 LPs), some of which another
    /// valid witness through the target already covers. Only the [`REUSE_PER_TARGET`] most
    /// recent witnesses through the target are tried. Returns the pairs certified.
    pub(super) fn reuse_witnesses(&mut self) -> usize {
        self.reuse_witnesses_of(0..self.p.sens.len())
    }

    /// [`Self::reuse_witnesses`] for the sensitive cells `targets` (indices, ascending) only.
    pub(super) fn reuse_witnesses_of(&mut self, targets: impl IntoIterator<Item = usize>) -> usize {
        let p = self.p;
        if self.lp_only || self.exact {
            return 0;
        }
        let mut n = 0;
        for k in targets {
            let s = &p.sens[k];
            if is_sliding(s) {
                continue;
            }
            for d in 0..2 {
                let want = need(s, d);
                if want <= 0.0 || !matches!(self.certs[k][d], Cert::Unknown) {
                    continue;
                }
                let Some(ws) = self.wit_of_cell.get(&s.cell) else { continue };
                let dir = if d == 0 { -1.0 } else { 1.0 };
                let found = ws.iter().rev().take(REUSE_PER_TARGET).find_map(|&w| {
                    let sym = self.symmetric[w as usize];
                    let mut reach = None;
                    for (c, v) in self.witnesses.moves(w) {
                        if !self.sup[c as usize] {
                            return None;
                        }
                        if c == s.cell {
                            reach = Some(if sym { (dir * v).abs() } else { dir * v });
                        }
                    }
                    reach.filter(|&v| v >= want - tolerance(want)).map(|v| (w, v))
                });
                if let Some((w, v)) = found {
                    self.users[w as usize].push((k as u32, d as u8));
                    self.certs[k][d] = Cert::Ok(w, v);
                    n += 1;
                }
            }
        }
        n
    }

    /// Combinatorial witnesses ([`super::witness`]) for unknown non-sliding targets: each
    /// proposal is verified exactly against the problem before it certifies anything.
    pub(super) fn solve_witnesses(&mut self) {
        self.solve_witnesses_of(0..self.p.sens.len());
    }

    /// [`Self::solve_witnesses`] for the sensitive cells `targets` (indices, ascending) only.
    pub(super) fn solve_witnesses_of(&mut self, targets: impl IntoIterator<Item = usize>) {
        let p = self.p;
        let Some(geom) = p.geometry() else { return };
        let todo: Vec<usize> = targets
            .into_iter()
            .filter(|&k| !is_sliding(&p.sens[k]))
            .filter(|&k| (0..2).any(|d| matches!(self.certs[k][d], Cert::Unknown)))
            .collect();
        if todo.is_empty() {
            return;
        }
        let t0 = std::time::Instant::now();
        let sup = &self.sup;
        let certs = &self.certs;
        let found: Vec<witness::Certified> = todo
            .par_iter()
            .map(|&k| {
                let want: Vec<usize> = (0..2).filter(|&d| matches!(certs[k][d], Cert::Unknown)).collect();
                witness::certify(p, geom, sup, &p.sens[k], &want, WITNESS_CUBES, WITNESS_BUDGET)
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
        // Traced for searches of many targets only: the count goes over every bound, where a
        // cleanup's thousands of drop trials search a few dozen lost ones each.
        if todo.len() >= TRACED_SEARCH_TARGETS && super::super::trace::enabled() {
            trace(format_args!(
                "witness search {:.1}s over {} targets: {} pairs by witness",
                t0.elapsed().as_secs_f64(),
                todo.len(),
                self.witnessed()
            ));
        }
    }
}

/// Witness searches over at least this many targets are traced ([`Auditor::solve_witnesses_of`]).
const TRACED_SEARCH_TARGETS: usize = 1_000;

/// Whether the negation of move `z` stays within the attacker's bounds (with the slack of
/// [`feasible_move`], which checks `z` itself and the relations, whose balance holds for `-z`
/// alike).
fn negation_within_bounds(p: &Problem, z: &[(u32, f64)]) -> bool {
    let slack = |g: f64| 1e-7 * g.abs().max(1.0);
    z.iter().all(|&(c, v)| {
        let c = c as usize;
        c < p.n() && v.is_finite() && -v <= p.up_gap[c] + slack(p.up_gap[c]) && v <= p.lo_gap[c] + slack(p.lo_gap[c])
    })
}

/// The move `z` as a map when it is a feasible attacker move for pattern `sup` (see
/// [`Auditor::recheck_or_reaudit`]), else `None`.
pub(super) fn feasible_move(p: &Problem, sup: &[bool], z: &[(u32, f64)]) -> Option<FastMap<u32, f64>> {
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
