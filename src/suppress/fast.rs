//! The fast method: closure heuristic, audit-driven repair, cleanup. Scales to millions of
//! cells because every step is local to relations or to components of suppressed cells.
//!
//! 1. **Closure** (hypercube / shortest-path in spirit): every suppressed cell `i` with a
//!    movement requirement `req_i` (primaries: `max(LPL, UPL, SPL/2)`) needs, in every relation
//!    it belongs to, other suppressed cells whose capacity (how far the attacker may move them,
//!    `min(a − lb, ub − a)`) sums to `req_i`; otherwise the cheapest free partner is suppressed
//!    (cost weighted by the number of its relations still without a suppression, which would
//!    have to be closed in turn) and inherits `min(req_i, capacity)`. Primaries go largest
//!    first. A pattern closed this way has no suppressed cell alone in a relation.
//! 2. **Repair**: the audit ([`super::audit::Auditor`]) checks every sensitive cell; each
//!    shortfall comes with a capacity cut from the attacker LP's duals, which is satisfied
//!    greedily (cheapest cost per unit of missing capacity), then closed again. A cut that even
//!    suppressing every free cell cannot satisfy proves infeasibility: fail closed. Singleton
//!    rule violations get a third suppression in the relation.
//!
//! On tables up to `ASSIGN_MAX_CELLS` cells with a geometry, step 1 is the cube assignment
//! ([`super::cubes`]: one hypercube per sensitive cell, sharing cells, improved by local search)
//! followed by the closure of sensitive cells without a cube; larger tables use the parallel
//! hypercube cover ([`Work::cover`]).
//! 3. **Cleanup**: secondaries are un-suppressed, most costly first, when the audit stays clean
//!    (only targets whose witness used the cell are re-solved), each candidate once or up to
//!    `cleanup_trials` trials (a work budget: deterministic), the time limit being only a
//!    hard stop ([`super::budget`]). Before
//!    the audit, a trial is refused without LP when a sensitive cell becomes computable
//!    exactly or a capacity cut kept from an earlier refused trial is violated
//!    ([`Work::try_drop`]); most refusals on the benchmark tables are decided that way.

use std::collections::VecDeque;
use std::time::Instant;

use super::attacker::{tolerance, Cut};
use super::audit::Auditor;
use super::budget::Deadline;
use super::problem::{Fix, Problem};
use super::{singleton, Construction, ProtectOptions, SuppressError};
use crate::table::relations::FastMap;
use rayon::prelude::*;

/// Prints phase timings of the fast method to stderr when the environment variable
/// `SDCFLOW_SUPPRESS_TRACE` is set (benchmarks only; the figures are not part of any output).
pub(crate) fn trace(what: std::fmt::Arguments) {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *ON.get_or_init(|| std::env::var_os("SDCFLOW_SUPPRESS_TRACE").is_some()) {
        eprintln!("[suppress] {what}");
    }
}

/// Outcome of the cover for one sensitive cell.
enum Pick {
    /// Already certified by the pattern: the cubes of its witnesses.
    Certified(Vec<Vec<(u32, i8)>>),
    /// Suppress this cube (the cubes of a one-direction certificate come along).
    Cube(Vec<(u32, i8)>, Vec<Vec<(u32, i8)>>),
    /// No hypercube within the look-up budget.
    Missing,
}

/// Sensitive cells per batch of [`Work::cover`], and look-ups per hypercube search (first
/// pass, and the retry for the cells the first pass left without a cube).
const COVER_BATCH: usize = 2048;
const COVER_BUDGET: usize = 20_000;
const COVER_RETRY_BUDGET: usize = 300_000;

/// Tables up to this many cells start from the cube assignment ([`super::cubes`]) instead of
/// the one-batch-at-a-time cover, with at most this many improvement passes.
const ASSIGN_MAX_CELLS: usize = 200_000;
const ASSIGN_PASSES: usize = 8;

/// Cost of using cell `c` in a cube that protects a cell with movement requirement `req` on
/// pattern `sup`: `None` when it cannot carry the movement or must stay published, 0 when it is
/// already suppressed, else its cost (plus a tiny amount, so fewer new cells win ties).
fn cube_cell_cost(p: &Problem, sup: &[bool], req: f64, c: usize) -> Option<f64> {
    if p.capacity(c) < req - tolerance(req) {
        None
    } else if sup[c] {
        Some(0.0)
    } else if p.fix[c] != Fix::Free {
        None
    } else {
        Some(p.cost[c] + 1e-9)
    }
}

/// Whether [`complete`] starts with the hypercube cover.
fn use_cover(p: &Problem, c: Construction) -> bool {
    p.geom.is_some()
        && match c {
            Construction::Auto => true,
            Construction::Hypercube => true,
            Construction::Closure => false,
        }
}

/// Movement requirement of a sensitive cell.
pub(crate) fn requirement(s: &super::problem::Sensitive) -> f64 {
    s.lpl.max(s.upl).max(s.spl / 2.0)
}

/// Working state: the auditor (which owns the pattern), requirements and per-relation counts.
pub(crate) struct Work<'p, 'a> {
    pub p: &'p Problem<'a>,
    pub aud: Auditor<'p, 'a>,
    pub req: Vec<f64>,
    nsup: Vec<u32>,
    /// Capacity cuts from failed drop trials (valid for every protecting pattern), and per
    /// cell the cuts it appears in: a drop that violates one is refused without an audit.
    pool: Vec<Cut>,
    pool_of: FastMap<u32, Vec<u32>>,
    /// Drop trials refused by [`Self::refuted`] (pinned cell, pooled cut) and by the audit.
    pub refused_cheaply: usize,
    pub refused_by_audit: usize,
    /// Certificates lost and LPs solved by accepted / audit-refused drop trials (trace only).
    trial_stats: [(usize, usize); 2],
    /// Per cell, the number of assigned cubes using it ([`super::cubes`]), when the pattern
    /// came from the cube assignment.
    cube_use: Option<Vec<u32>>,
    /// Candidate certificates from [`Self::cover`] (sensitive index, cubes through it), handed
    /// to the auditor by [`complete`], which verifies each one exactly before trusting it.
    pub candidates: Vec<super::audit::CubeCandidate>,
    /// Candidate attacker moves from box LPs ([`box_cover`]): (sensitive index, direction,
    /// move), verified by the auditor like an LP witness before it is trusted.
    pub move_candidates: Vec<super::audit::MoveCandidate>,
    /// Whether [`Self::cover`] may fall back on ancestor cubes and box LPs for cells without
    /// a (multi-)cube. On by default above [`LAST_RESORT_CELLS`] cells, where the closure and
    /// the LP repair it leads to do not scale; below, the closure and LP repair give cheaper
    /// patterns (an ancestor cube suppresses marginals up to the grand total).
    pub last_resort_cubes: bool,
}

/// Lost certificates from which a cleanup trial re-certifies with one batch LP per ball
/// ([`Auditor::group_min`]).
const CLEANUP_GROUP_MIN: usize = 4;

/// Cuts longer than this are not pooled (checking them would cost more than it saves).
const POOL_CUT_MAX: usize = 4096;

/// Relations examined at most by the pinned-cell propagation of one drop trial.
const PIN_STEPS: usize = 20_000;

/// Problems with more cells than this use the cover's last-resort cubes by default.
pub(crate) const LAST_RESORT_CELLS: usize = 100_000;

impl<'p, 'a> Work<'p, 'a> {
    /// State for pattern `sup` (requirements from the sensitive cells).
    pub fn new(p: &'p Problem<'a>, sup: Vec<bool>) -> Self {
        let mut req = vec![0.0; p.n()];
        for s in &p.sens {
            req[s.cell as usize] = requirement(s);
        }
        let nsup = (0..p.rel.len()).map(|r| p.rel.members(r).filter(|&m| sup[m as usize]).count() as u32).collect();
        Self {
            p,
            aud: Auditor::new(p, sup),
            req,
            nsup,
            pool: Vec::new(),
            pool_of: FastMap::default(),
            refused_cheaply: 0,
            refused_by_audit: 0,
            trial_stats: [(0, 0); 2],
            cube_use: None,
            candidates: Vec::new(),
            move_candidates: Vec::new(),
            last_resort_cubes: p.n() > LAST_RESORT_CELLS,
        }
    }

    /// Current pattern.
    pub fn sup(&self) -> &[bool] {
        &self.aud.sup
    }

    /// Suppresses `j` with movement requirement at least `req`.
    pub fn suppress(&mut self, j: usize, req: f64) {
        if !self.aud.sup[j] {
            self.aud.add(j);
            for &r in self.p.rel.of_cell(j) {
                self.nsup[r as usize] += 1;
            }
        }
        self.req[j] = self.req[j].max(req);
    }

    /// Publishes `j` (counts only; the caller handles the auditor).
    fn unsuppress_counts(&mut self, j: usize) {
        for &r in self.p.rel.of_cell(j) {
            self.nsup[r as usize] -= 1;
        }
    }

    /// Relations of `j` other than `r` without any suppressed cell.
    fn open_relations(&self, j: usize, r: usize) -> usize {
        self.p.rel.of_cell(j).iter().filter(|&&q| q as usize != r && self.nsup[q as usize] == 0).count()
    }

    /// Closure (step 1) starting from `queue`.
    pub fn close(&mut self, queue: impl IntoIterator<Item = u32>) {
        let p = self.p;
        let mut q: VecDeque<u32> = queue.into_iter().collect();
        while let Some(i) = q.pop_front() {
            let i = i as usize;
            let ri = self.req[i];
            if ri <= 0.0 {
                continue;
            }
            for &r in p.rel.of_cell(i) {
                let r = r as usize;
                loop {
                    let mut cap = 0.0;
                    let mut cnt = 0;
                    for m in p.rel.members(r) {
                        let m = m as usize;
                        if m != i && self.aud.sup[m] {
                            cap += p.capacity(m);
                            cnt += 1;
                        }
                    }
                    if cnt > 0 && cap >= ri - tolerance(ri) {
                        // Partners must be able to move as far as `i` needs.
                        for m in p.rel.members(r) {
                            let m = m as usize;
                            let want = ri.min(p.capacity(m));
                            if m != i && self.aud.sup[m] && self.req[m] < want - tolerance(want) {
                                self.req[m] = want;
                                q.push_back(m as u32);
                            }
                        }
                        break;
                    }
                    let need = ri - cap;
                    let mut best: Option<(f64, usize)> = None;
                    for m in p.rel.members(r) {
                        let m = m as usize;
                        if m == i || self.aud.sup[m] || p.fix[m] != Fix::Free {
                            continue;
                        }
                        let c = p.capacity(m);
                        let short = if c >= need - tolerance(need) { 1.0 } else { 4.0 };
                        let score = (p.cost[m] + 1e-9) * short * (1.0 + 0.5 * self.open_relations(m, r) as f64);
                        if best.is_none_or(|(b, bj)| score < b || (score == b && m < bj)) {
                            best = Some((score, m));
                        }
                    }
                    let Some((_, j)) = best else { break };
                    self.suppress(j, ri.min(p.capacity(j)));
                    q.push_back(j as u32);
                }
            }
        }
    }

    /// Hypercube cover (step 1 on large tables with a geometry): every sensitive cell without a
    /// combinatorial certificate gets its cheapest hypercube ([`Geometry::cheapest_cube`]:
    /// existing, unfixed cells of capacity ≥ its requirement, already suppressed ones free)
    /// suppressed whole, so the audit can certify it without an LP. Sensitive cells go largest
    /// requirement first in batches: within a batch the cubes are chosen in parallel against
    /// the pattern at the start of the batch and applied in order, so the pattern does not
    /// depend on the number of threads. Cells without a cube are left to the closure.
    ///
    /// [`Geometry::cheapest_cube`]: super::witness::Geometry::cheapest_cube
    pub fn cover(&mut self) -> Vec<u32> {
        let p = self.p;
        let Some(geom) = p.geom.as_deref() else {
            return (0..p.sens.len() as u32).map(|k| p.sens[k as usize].cell).collect();
        };
        let mut order: Vec<usize> = (0..p.sens.len()).collect();
        order.sort_by(|&a, &b| requirement(&p.sens[b]).total_cmp(&requirement(&p.sens[a])).then(a.cmp(&b)));
        let mut left = Vec::new();
        for batch in order.chunks(COVER_BATCH) {
            self.cover_batch(geom, batch, COVER_BUDGET, &mut left);
        }
        if !left.is_empty() {
            // The pattern is denser now (more cells cost nothing) and the budget larger.
            let t0 = Instant::now();
            let first = std::mem::take(&mut left);
            for batch in first.chunks(COVER_BATCH) {
                self.cover_batch(geom, batch, COVER_RETRY_BUDGET, &mut left);
            }
            trace(format_args!(
                "hypercube cover retry {:.1}s: {} of {} sensitive cells still without a cube",
                t0.elapsed().as_secs_f64(),
                left.len(),
                first.len()
            ));
        }
        if !left.is_empty() {
            let t0 = Instant::now();
            let first = std::mem::take(&mut left);
            let sup = &self.aud.sup;
            let covers: Vec<Option<Vec<super::audit::Cube>>> =
                first.par_iter().map(|&k| multi_cube(p, geom, sup, k, COVER_RETRY_BUDGET)).collect();
            for (&k, cover) in first.iter().zip(covers) {
                let Some(cubes) = cover else {
                    left.push(k);
                    continue;
                };
                let req = requirement(&p.sens[k]);
                for cube in &cubes {
                    for &(c, _) in cube {
                        self.suppress(c as usize, req.min(p.capacity(c as usize)));
                    }
                }
                self.candidates.push((k as u32, cubes));
            }
            if self.last_resort_cubes && !left.is_empty() {
                // The cube up from the largest leaf below the cell: expensive (marginals up to
                // the grand total) but almost always available.
                let rest = std::mem::take(&mut left);
                let sup = &self.aud.sup;
                let cubes: Vec<Option<Vec<(u32, i8)>>> = rest
                    .par_iter()
                    .map(|&k| {
                        let req = requirement(&p.sens[k]);
                        let accept = |c: usize| cube_cell_cost(p, sup, req, c);
                        geom.ancestor_cube(p.sens[k].cell, &accept, COVER_RETRY_BUDGET).map(|(_, cube)| cube)
                    })
                    .collect();
                for (&k, cube) in rest.iter().zip(cubes) {
                    let Some(cube) = cube else {
                        left.push(k);
                        continue;
                    };
                    let req = requirement(&p.sens[k]);
                    for &(c, _) in &cube {
                        self.suppress(c as usize, req.min(p.capacity(c as usize)));
                    }
                    self.candidates.push((k as u32, vec![cube]));
                }
            }
            if self.last_resort_cubes && !left.is_empty() {
                let boxed = std::mem::take(&mut left);
                let sup = &self.aud.sup;
                let moves: Vec<Option<DirectedMoves>> = boxed.par_iter().map(|&k| box_cover(p, geom, sup, k)).collect();
                for (&k, mv) in boxed.iter().zip(moves) {
                    let Some(mv) = mv else {
                        left.push(k);
                        continue;
                    };
                    let req = requirement(&p.sens[k]);
                    for (d, z) in mv {
                        for &(c, _) in &z {
                            self.suppress(c as usize, req.min(p.capacity(c as usize)));
                        }
                        self.move_candidates.push((k as u32, d, z));
                    }
                }
            }
            trace(format_args!(
                "multi-cube, ancestor-cube and box-LP cover {:.1}s: {} of {} sensitive cells still without a cover{}",
                t0.elapsed().as_secs_f64(),
                left.len(),
                first.len(),
                left.iter()
                    .take(5)
                    .map(|&k| format!(
                        " {:?} req {}",
                        p.geom.as_ref().map(|g| g.coord(p.sens[k].cell)),
                        requirement(&p.sens[k])
                    ))
                    .collect::<String>()
            ));
        }
        left.into_iter().map(|k| p.sens[k].cell).collect()
    }

    /// One batch of [`Self::cover`]: cubes chosen in parallel against the pattern at the start
    /// of the batch, applied in order; the cubes become candidate certificates
    /// ([`Self::candidates`]); cells without a cube are pushed to `left`.
    fn cover_batch(&mut self, geom: &super::witness::Geometry, batch: &[usize], budget: usize, left: &mut Vec<usize>) {
        let p = self.p;
        let sup = &self.aud.sup;
        let picks: Vec<Pick> = batch
            .par_iter()
            .map(|&k| {
                let s = &p.sens[k];
                let got = super::witness::propose(p, geom, sup, s, &[0, 1], 4, budget);
                let mut cubes: Vec<Vec<(u32, i8)>> = Vec::new();
                for (w, _) in got.iter().flatten() {
                    for (_, h) in &w.parts {
                        if !cubes.contains(h) {
                            cubes.push(h.clone());
                        }
                    }
                }
                let needs = [s.lpl, s.upl];
                if (0..2).all(|d| needs[d] <= 0.0 || got[d].is_some()) {
                    return Pick::Certified(cubes);
                }
                let req = requirement(s);
                let accept = |c: usize| cube_cell_cost(p, sup, req, c);
                match geom.cheapest_cube(s.cell, &accept, budget) {
                    Some((_, cube)) => Pick::Cube(cube, cubes),
                    None => Pick::Missing,
                }
            })
            .collect();
        for (&k, pick) in batch.iter().zip(picks) {
            let req = requirement(&p.sens[k]);
            match pick {
                Pick::Certified(cubes) => self.candidates.push((k as u32, cubes)),
                Pick::Missing => left.push(k),
                Pick::Cube(cube, mut cubes) => {
                    for &(c, _) in &cube {
                        self.suppress(c as usize, req.min(p.capacity(c as usize)));
                    }
                    cubes.insert(0, cube);
                    self.candidates.push((k as u32, cubes));
                }
            }
        }
    }

    /// Repair loop (step 2): audit, satisfy cuts, close, until clean. Each round adds cells, so
    /// it ends; the hard stop's grace period fails it (no clean pattern yet: nothing to publish).
    pub fn repair(&mut self, singleton_rule: bool, deadline: &Deadline) -> Result<(), SuppressError> {
        let p = self.p;
        loop {
            if deadline.wall_reached() {
                return Err(deadline.error("the audit-driven repair"));
            }
            let t0 = Instant::now();
            let lps0 = self.aud.lps;
            let fails = self.aud.check()?;
            crate::progress::solver_progress("repair", || {
                format!(
                    "{} sensitive cells under-protected, cost {:.3} % of the table's cost",
                    fails.len(),
                    p.cost_percent(p.cost_of(&self.aud.sup))
                )
            });
            trace(format_args!(
                "repair audit {:.1}s: {} failures, {} LPs, {} pairs by witness",
                t0.elapsed().as_secs_f64(),
                fails.len(),
                self.aud.lps - lps0,
                self.aud.witnessed()
            ));
            let mut added: Vec<u32> = Vec::new();
            for f in &fails {
                let s = p.sens[f.sens];
                let Some(cut) = &f.cut else {
                    return Err(SuppressError::Input("audit failure without a cut".into()));
                };
                let lhs = cut.lhs(&self.aud.sup);
                let avail: f64 = cut
                    .coefs
                    .iter()
                    .filter(|(c, _)| !self.aud.sup[*c as usize] && p.fix[*c as usize] == Fix::Free)
                    .map(|(_, v)| v)
                    .sum();
                if lhs + avail < cut.rhs - tolerance(cut.rhs) {
                    return Err(SuppressError::Infeasible {
                        cell: s.cell as usize,
                        coord: Vec::new(),
                        // A share, not the level: levels derive from the cell's value, and
                        // messages and logs never carry values (issue 13 item 10).
                        why: format!(
                            "suppressing every cell allowed to be suppressed gives the attacker only {:.0} % \
                             of the range its protection level requires",
                            100.0 * (lhs + avail).max(0.0) / cut.rhs
                        ),
                    });
                }
                let mut deficit = cut.rhs - cut.lhs(&self.aud.sup);
                while deficit > tolerance(cut.rhs) {
                    let mut best: Option<(f64, u32, f64)> = None;
                    for &(c, v) in &cut.coefs {
                        if self.aud.sup[c as usize] || p.fix[c as usize] != Fix::Free {
                            continue;
                        }
                        let ratio = (p.cost[c as usize] + 1e-9) / v.min(deficit);
                        if best.is_none_or(|(b, bc, _)| ratio < b || (ratio == b && c < bc)) {
                            best = Some((ratio, c, v));
                        }
                    }
                    let Some((_, c, v)) = best else { break };
                    self.suppress(c as usize, requirement(&s).min(p.capacity(c as usize)));
                    added.push(c);
                    deficit -= v;
                }
            }
            if singleton_rule {
                for (r, t) in singleton::violations(p, &self.aud.sup) {
                    if singleton::relation_violation(p, &self.aud.sup, r).is_none() {
                        continue; // fixed by an earlier addition this round
                    }
                    let pick = p
                        .rel
                        .members(r)
                        .filter(|&m| !self.aud.sup[m as usize] && p.fix[m as usize] == Fix::Free)
                        .min_by(|&a, &b| p.cost[a as usize].total_cmp(&p.cost[b as usize]).then(a.cmp(&b)));
                    let Some(j) = pick else {
                        return Err(SuppressError::Infeasible {
                            cell: t,
                            coord: Vec::new(),
                            why: "singleton rule: no third cell can be suppressed in a relation \
                                  where a single respondent could recover it"
                                .into(),
                        });
                    };
                    let req = p.sens_of.get(&(t as u32)).map_or(0.0, |&k| requirement(&p.sens[k as usize]));
                    self.suppress(j as usize, req.min(p.capacity(j as usize)));
                    added.push(j);
                }
            }
            if added.is_empty() {
                if fails.is_empty() {
                    return Ok(());
                }
                return Err(SuppressError::Unprotected {
                    method: super::Method::Fast,
                    count: fails.len(),
                    first: p.sens[fails[0].sens].cell as usize,
                });
            }
            self.close(added);
        }
    }

    /// Cleanup (step 3): drops method-chosen secondaries, most costly first (per cube using
    /// them, after the cube assignment), while clean; at most `trials` drop trials (the
    /// deterministic budget), the hard stop `deadline` ending it earlier (recorded there).
    pub fn cleanup(
        &mut self,
        singleton_rule: bool,
        trials: usize,
        deadline: &Deadline,
    ) -> Result<usize, SuppressError> {
        let p = self.p;
        let mut cands: Vec<usize> = (0..p.n()).filter(|&i| self.aud.sup[i] && p.fix[i] == Fix::Free).collect();
        // Most costly first; after the cube assignment, cost per cube using the cell: a cell in
        // many cubes is rarely droppable and, when it is, every one of those cubes' targets
        // needs a new certificate (measured: more trials and a cheaper pattern per second).
        let key = |i: usize| p.cost[i] / (1.0 + self.cube_use.as_ref().map_or(0, |u| u[i]) as f64);
        cands.sort_by(|&a, &b| key(b).total_cmp(&key(a)).then(a.cmp(&b)));
        let mut dropped = 0;
        let t0 = Instant::now();
        self.aud.group_min = CLEANUP_GROUP_MIN;
        self.aud.localize()?;
        let lps0 = self.aud.lps;
        let mut tried = 0;
        for &s in cands.iter().take(trials) {
            if deadline.reached() {
                break;
            }
            crate::progress::solver_progress("cleanup", || {
                format!(
                    "{tried} of {} candidates tried, {dropped} dropped, cost {:.3} % of the table's cost",
                    cands.len().min(trials),
                    p.cost_percent(p.cost_of(&self.aud.sup))
                )
            });
            tried += 1;
            if self.try_drop(s, singleton_rule)? {
                dropped += 1;
            }
        }
        trace(format_args!(
            "cleanup {:.1}s: {tried} of {} candidates tried, {dropped} dropped, {} refused without an audit, \
             {} by the audit, {} LPs (lost certificates / LPs: accepted {:?}, refused {:?}), cost {:.0}",
            t0.elapsed().as_secs_f64(),
            cands.len(),
            self.refused_cheaply,
            self.refused_by_audit,
            self.aud.lps - lps0,
            self.trial_stats[0],
            self.trial_stats[1],
            p.cost_of(&self.aud.sup)
        ));
        Ok(dropped)
    }

    /// Un-suppresses `s` if the pattern stays clean; returns whether it did. Cheap necessary
    /// conditions ([`Self::refuted`]) are tried before the audit; they can only refuse a drop,
    /// so a kept drop is always one the audit certified.
    pub fn try_drop(&mut self, s: usize, singleton_rule: bool) -> Result<bool, SuppressError> {
        let lost = self.aud.remove(s);
        let ok = if (singleton_rule && !singleton::violations_near(self.p, &self.aud.sup, s).is_empty())
            || self.refuted(s)
        {
            self.refused_cheaply += 1;
            false
        } else {
            let lps0 = self.aud.lps;
            let fails = self.aud.check()?;
            let st = &mut self.trial_stats[usize::from(!fails.is_empty())];
            st.0 += lost.len();
            st.1 += self.aud.lps - lps0;
            for f in &fails {
                if let Some(cut) = &f.cut {
                    self.pool_cut(cut);
                }
            }
            self.refused_by_audit += usize::from(!fails.is_empty());
            fails.is_empty()
        };
        if ok {
            self.unsuppress_counts(s);
        } else {
            self.aud.restore(s, lost);
        }
        Ok(ok)
    }

    /// Keeps a capacity cut of a failed trial for [`Self::refuted`].
    fn pool_cut(&mut self, cut: &Cut) {
        if cut.coefs.len() > POOL_CUT_MAX {
            return;
        }
        let id = self.pool.len() as u32;
        for &(c, _) in &cut.coefs {
            self.pool_of.entry(c).or_default().push(id);
        }
        self.pool.push(cut.clone());
    }

    /// Whether the pattern without `s` (already removed from `aud.sup`) is certainly unsafe:
    /// a pooled capacity cut through `s` is violated (cuts are valid for every protecting
    /// pattern), or a sensitive cell becomes computable exactly — publishing `s` leaves a
    /// relation with a single suppressed cell, which is then known, and so on through the
    /// relations of each newly known cell. Sound for refusing only (`false` = undecided).
    fn refuted(&self, s: usize) -> bool {
        let p = self.p;
        let sup = &self.aud.sup;
        if let Some(ids) = self.pool_of.get(&(s as u32)) {
            if ids.iter().any(|&id| {
                let cut = &self.pool[id as usize];
                cut.lhs(sup) < cut.rhs - tolerance(cut.rhs)
            }) {
                return true;
            }
        }
        let mut known: FastMap<u32, ()> = FastMap::default();
        let mut todo: Vec<u32> = p.rel.of_cell(s).to_vec();
        let mut steps = 0;
        while let Some(r) = todo.pop() {
            steps += 1;
            if steps > PIN_STEPS {
                return false;
            }
            let mut unknown = p.rel.members(r as usize).filter(|&m| sup[m as usize] && !known.contains_key(&m));
            let (Some(m), None) = (unknown.next(), unknown.next()) else { continue };
            if let Some(&k) = p.sens_of.get(&m) {
                let t = &p.sens[k as usize];
                if t.lpl > 0.0 || t.upl > 0.0 || t.spl > 0.0 {
                    return true;
                }
            }
            known.insert(m, ());
            todo.extend(p.rel.of_cell(m as usize).iter().filter(|&&q| q != r));
        }
        false
    }
}

/// Cubes kept per sensitive cell by [`multi_cube`], and capacity thresholds tried for each
/// (fractions of the movement still missing).
const MULTI_CUBES: usize = 8;
const MULTI_FRACTIONS: [f64; 4] = [1.0, 0.5, 0.25, 0.125];

/// A sum of hypercubes through sensitive cell `k` whose greedy combination moves it by its
/// requirement both ways, for cells without a single cube of enough capacity (small cells in
/// every direction of a marginal): cubes are added cheapest first, each using only cells
/// whose capacity left over by the earlier cubes is at least a fraction of the movement
/// still missing (so the next cube avoids the bottlenecks of the earlier ones). `None` when
/// [`MULTI_CUBES`] cubes do not suffice. The cubes are only a proposal: the caller suppresses
/// them and the auditor verifies their combination exactly ([`super::audit::Auditor::offer`]).
pub(crate) fn multi_cube(
    p: &Problem,
    geom: &super::witness::Geometry,
    sup: &[bool],
    k: usize,
    budget: usize,
) -> Option<Vec<Vec<(u32, i8)>>> {
    let s = &p.sens[k];
    let req = requirement(s);
    let mut used: crate::table::relations::FastMap<u32, f64> = Default::default();
    let mut cubes: Vec<Vec<(u32, i8)>> = Vec::new();
    let mut reach = 0.0;
    while cubes.len() < MULTI_CUBES && reach < req - tolerance(req) {
        let rem = req - reach;
        let mut got = None;
        for frac in MULTI_FRACTIONS {
            let theta = rem * frac;
            let accept = |c: usize| {
                let u = used.get(&(c as u32)).copied();
                if p.capacity(c) - u.unwrap_or(0.0) < theta - tolerance(theta) {
                    None
                } else if sup[c] || u.is_some() {
                    Some(0.0)
                } else if p.fix[c] != Fix::Free {
                    None
                } else {
                    Some(p.cost[c] + 1e-9)
                }
            };
            if let Some((_, cube)) = geom.cheapest_cube(s.cell, &accept, budget) {
                got = Some(cube);
                break;
            }
        }
        let cube = got?;
        let room = cube
            .iter()
            .map(|&(c, _)| p.capacity(c as usize) - used.get(&c).copied().unwrap_or(0.0))
            .fold(f64::INFINITY, f64::min);
        let delta = rem.min(room);
        if delta.is_nan() || delta <= 0.0 {
            return None;
        }
        for &(c, _) in &cube {
            *used.entry(c).or_insert(0.0) += delta;
        }
        reach += delta;
        cubes.push(cube);
    }
    (reach >= req - tolerance(req)).then_some(cubes)
}

/// Attacker moves per direction (0 = down, 1 = up) of one sensitive cell.
type DirectedMoves = Vec<(u8, Vec<(u32, f64)>)>;

/// Coordinates in the boxes of [`box_cover`]'s LPs, tried in order.
const BOX_COORDS: [usize; 2] = [20_000, 120_000];

/// Attacker moves of sensitive cell `k` reaching its protection levels both ways inside a box
/// around it ([`super::witness::Geometry::neighbourhood`]) where every suppressed or free cell
/// may move and every other cell is held at its value: one LP per direction, a restriction of
/// the attacker once the support of the optimum is suppressed. For cells without any cube
/// (sparse cells, marginals of few contributors); `None` when a direction falls short or an
/// LP fails (the cell is then left to the closure). The moves are proposals the auditor
/// verifies ([`super::audit::Auditor::offer_moves`]).
pub(crate) fn box_cover(p: &Problem, geom: &super::witness::Geometry, sup: &[bool], k: usize) -> Option<DirectedMoves> {
    BOX_COORDS.iter().find_map(|&size| box_moves(p, geom, sup, k, size))
}

/// [`box_cover`] with a box of at most `max_coords` coordinates.
fn box_moves(
    p: &Problem,
    geom: &super::witness::Geometry,
    sup: &[bool],
    k: usize,
    max_coords: usize,
) -> Option<DirectedMoves> {
    let s = &p.sens[k];
    let cells: Vec<u32> = geom
        .neighbourhood(s.cell, max_coords)
        .into_iter()
        .filter(|&c| sup[c as usize] || p.fix[c as usize] == Fix::Free)
        .collect();
    let mut open = sup.to_vec();
    for &c in &cells {
        open[c as usize] = true;
    }
    let mut rows: Vec<u32> = cells.iter().flat_map(|&c| p.rel.of_cell(c as usize).iter().copied()).collect();
    rows.sort_unstable();
    rows.dedup();
    let lp = super::attacker::CompLp::new(p, &open, cells, rows);
    let mut out = Vec::new();
    for (d, n) in [(0u8, s.lpl), (1, s.upl)] {
        if n <= 0.0 {
            continue;
        }
        let dir = if d == 0 { -1.0 } else { 1.0 };
        let (att, _) = lp.single(p, &|_| 1.0, s.cell, dir, n, n).ok()?;
        if att.value < n - tolerance(n) {
            return None;
        }
        out.push((d, att.witness));
    }
    Some(out)
}

/// Closure of `sup` then repair: a clean pattern containing `sup`, or an error.
pub(crate) fn complete<'p, 'a>(
    p: &'p Problem<'a>,
    sup: Vec<bool>,
    singleton_rule: bool,
    construction: Construction,
    deadline: &Deadline,
) -> Result<Work<'p, 'a>, SuppressError> {
    let t0 = Instant::now();
    if use_cover(p, construction) && p.n() <= ASSIGN_MAX_CELLS {
        if let Some(a) = super::cubes::assign(p, &sup, ASSIGN_PASSES) {
            let mut w = Work::new(p, sup);
            let mut used = vec![0u32; p.n()];
            for (k, cube) in a.cubes.iter().enumerate() {
                let req = requirement(&p.sens[k]);
                for &(c, _) in cube.iter().flatten() {
                    w.suppress(c as usize, req.min(p.capacity(c as usize)));
                    used[c as usize] += 1;
                }
            }
            w.cube_use = Some(used);
            trace(format_args!(
                "cube assignment {:.1}s: {} suppressed, cost {:.0}, {} improvement passes replaced {} cubes, \
                 {} sensitive cells without a cube",
                t0.elapsed().as_secs_f64(),
                w.sup().iter().filter(|&&x| x).count(),
                p.cost_of(w.sup()),
                a.passes,
                a.replaced,
                a.left.len()
            ));
            w.close(a.left);
            trace(format_args!(
                "closure {:.1}s: {} suppressed",
                t0.elapsed().as_secs_f64(),
                w.sup().iter().filter(|&&x| x).count()
            ));
            w.repair(singleton_rule, deadline)?;
            return Ok(w);
        }
    }
    let mut w = Work::new(p, sup);
    if use_cover(p, construction) {
        let left = w.cover();
        trace(format_args!(
            "hypercube cover {:.1}s: {} suppressed, {} sensitive cells without a cube",
            t0.elapsed().as_secs_f64(),
            w.sup().iter().filter(|&&x| x).count(),
            left.len()
        ));
        w.close(left);
        let t1 = Instant::now();
        let offered = w.candidates.len();
        let certified =
            w.aud.offer(std::mem::take(&mut w.candidates)) + w.aud.offer_moves(std::mem::take(&mut w.move_candidates));
        trace(format_args!(
            "candidate certificates {:.1}s: {certified} pairs certified from {offered} cells' cubes",
            t1.elapsed().as_secs_f64()
        ));
    } else {
        let mut order: Vec<u32> = (0..p.n() as u32).filter(|&i| w.sup()[i as usize]).collect();
        order.sort_by(|&a, &b| w.req[b as usize].total_cmp(&w.req[a as usize]).then(a.cmp(&b)));
        w.close(order);
    }
    trace(format_args!(
        "closure {:.1}s: {} suppressed",
        t0.elapsed().as_secs_f64(),
        w.sup().iter().filter(|&&x| x).count()
    ));
    w.repair(singleton_rule, deadline)?;
    Ok(w)
}

/// The fast method (see the module doc).
pub(crate) fn run(p: &Problem, opts: &ProtectOptions, deadline: &Deadline) -> Result<Vec<bool>, SuppressError> {
    Ok(run_certified(p, opts, deadline)?.0)
}

/// [`run`], plus the final audit re-verified from the repair's certificates when possible
/// ([`Auditor::recheck`]).
pub(crate) fn run_certified(
    p: &Problem,
    opts: &ProtectOptions,
    deadline: &Deadline,
) -> Result<(Vec<bool>, Option<super::AuditReport>), SuppressError> {
    let mut w = complete(p, p.initial(), opts.singleton_rule, opts.construction, deadline)?;
    if opts.cleanup {
        w.cleanup(opts.singleton_rule, opts.cleanup_budget(), deadline)?;
    }
    // Belt and braces: every kept drop was audited, but audit the end state before trusting it.
    if !w.aud.check()?.is_empty() {
        return Ok((w.aud.sup, None));
    }
    let t0 = Instant::now();
    let rep = w.aud.recheck(opts.singleton_rule);
    trace(format_args!("certificate re-verification {:.1}s: {}", t0.elapsed().as_secs_f64(), rep.is_some()));
    Ok((w.aud.sup, rep))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Forces every marginal of a 2-dimensional table published (`Protected`).
    fn publish_marginals(t: &mut crate::table::Table) {
        for i in 0..t.cells().len() {
            if t.cells()[i].coord.contains(&0) {
                t.set_status(i, crate::table::CellStatus::Protected);
            }
        }
    }
    use crate::suppress::{protect, Method};
    use crate::table::synth::{generate, SynthSpec};

    fn table(seed: u64) -> crate::table::Table {
        let spec = SynthSpec {
            dims: vec![vec![2, 3], vec![3], vec![2, 2], vec![2]],
            density: 0.7,
            mean_freq: 6.0,
            min_freq: 3,
            protection: 0.1,
            seed,
        };
        generate(&spec).unwrap()
    }

    /// The parallel hypercube cover gives the same pattern with 1 and 2 rayon threads, and
    /// its pattern passes the audit with most pairs certified by witnesses.
    #[test]
    fn hypercube_cover_is_deterministic_across_thread_counts() {
        for seed in [1, 2] {
            let t = table(seed);
            let o = ProtectOptions {
                method: Method::Fast,
                construction: Construction::Hypercube,
                cleanup: false,
                time_limit_s: 30.0,
                ..Default::default()
            };
            let run = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                pool.install(|| {
                    let p = Problem::from_table(&t, None);
                    let mut w = Work::new(&p, p.initial());
                    let left = w.cover();
                    (w.sup().to_vec(), left, protect(&t, &o).unwrap())
                })
            };
            let (s1, l1, p1) = run(1);
            let (s2, l2, p2) = run(2);
            assert_eq!(s1, s2, "seed {seed}: cover differs");
            assert_eq!(l1, l2);
            assert_eq!(p1.statuses, p2.statuses, "seed {seed}: protected pattern differs");
            assert!(p1.audit.under_protected == 0 && p1.audit.witnessed > 0, "{:?}", p1.audit);
            assert!(s1.iter().filter(|&&x| x).count() > p1.primaries, "the cover suppressed nothing");
        }
    }

    /// No single rectangle through the primary has room for its protection level (each has a
    /// cell of value 2 < 3 and the marginals are published), but two rectangles with
    /// different bottlenecks do: the multi-cube cover finds them, and the audit certifies
    /// both directions from those candidate cubes without a search or an LP; an independent
    /// LP-only audit agrees.
    #[test]
    fn multi_cube_cover_certifies_a_cell_without_a_single_cube() {
        use crate::suppress::tests::{grid, primary};
        let vals = [vec![30.0, 2.0, 20.0], vec![2.0, 20.0, 20.0], vec![20.0, 20.0, 2.0]];
        let mut t = grid(&vals, None);
        publish_marginals(&mut t);
        let a = primary(&mut t, &[1, 1], 3.0);
        let p = Problem::from_table(&t, None);
        let geom = p.geom.clone().unwrap();
        let accept = |c: usize| (p.capacity(c) >= 3.0 && p.fix[c] == Fix::Free).then_some(p.cost[c]);
        assert!(geom.cheapest_cube(a as u32, &accept, 10_000).is_none(), "a single rectangle would do");
        let mut w = Work::new(&p, p.initial());
        assert!(w.cover().is_empty());
        assert_eq!(w.candidates.len(), 1);
        assert_eq!(w.candidates[0].1.len(), 2, "{:?}", w.candidates);
        assert_eq!(w.aud.offer(std::mem::take(&mut w.candidates)), 2);
        let o = ProtectOptions { method: Method::Fast, cleanup: false, ..Default::default() };
        let prot = protect(&t, &o).unwrap();
        assert_eq!((prot.audit.lps_solved, prot.audit.witnessed), (0, 2), "{:?}", prot.audit);
        let lp = crate::suppress::audit(
            &t,
            &prot.statuses,
            true,
            &crate::suppress::AuditOptions { lp_only: true, exact_intervals: true },
        )
        .unwrap();
        assert!(lp.is_clean());
        assert!(lp.cells[0].hi >= vals[0][0] + 3.0 - 1e-6 && lp.cells[0].lo <= vals[0][0] - 3.0 + 1e-6);
    }

    /// The ancestor cube of a cell (all its marginals up to the grand total, all `+1`) is a
    /// balanced cube whose cells are at least as large as the cell: with every neighbour too
    /// small for a rectangle (value 1 < level 3) it still certifies both directions exactly;
    /// `fast` protects the table (audit clean, no LP) and the LP-only audit agrees.
    #[test]
    fn ancestor_cube_covers_a_cell_with_only_small_neighbours() {
        use crate::suppress::tests::{grid, primary};
        let vals = [vec![30.0, 1.0, 1.0], vec![1.0, 1.0, 1.0], vec![1.0, 1.0, 1.0]];
        let mut t = grid(&vals, None);
        let a = primary(&mut t, &[1, 1], 3.0);
        let p = Problem::from_table(&t, None);
        let geom = p.geom.clone().unwrap();
        let accept = |c: usize| (p.capacity(c) >= 3.0).then_some(p.cost[c]);
        let (_, cube) = geom.ancestor_cube(a as u32, &accept, 1000).unwrap();
        let mut cells: Vec<u32> = cube.iter().map(|&(c, _)| c).collect();
        cells.sort_unstable();
        let mut want: Vec<u32> = [[1, 1], [1, 0], [0, 1], [0, 0]].iter().map(|c| t.find(c).unwrap() as u32).collect();
        want.sort_unstable();
        assert_eq!(cells, want);
        let mut sup = p.initial();
        for &c in &cells {
            sup[c as usize] = true;
        }
        for dir in [1.0, -1.0] {
            let w = super::super::witness::combine(&p, std::slice::from_ref(&cube), dir, 3.0).unwrap();
            assert!(super::super::witness::verify(&p, &sup, &w, a as u32, dir).unwrap() >= 3.0 - 1e-6);
        }
        // A published marginal on the way: refused.
        let refuse = |c: usize| (c as u32 != want[0]).then_some(0.0);
        assert!(geom.ancestor_cube(a as u32, &refuse, 1000).is_none());
        // The cover with its last resorts on: certified from the candidates, no LP.
        let mut w = Work::new(&p, p.initial());
        w.last_resort_cubes = true;
        assert!(w.cover().is_empty());
        assert_eq!(w.aud.offer(std::mem::take(&mut w.candidates)), 2);
        assert!(w.aud.check().unwrap().is_empty());
        assert_eq!(w.aud.lps, 0);
        let o = ProtectOptions { method: Method::Fast, cleanup: false, ..Default::default() };
        let prot = protect(&t, &o).unwrap();
        let lp = crate::suppress::audit(
            &t,
            &prot.statuses,
            true,
            &crate::suppress::AuditOptions { lp_only: true, exact_intervals: true },
        )
        .unwrap();
        assert!(lp.is_clean() && lp.cells[0].cell == a);
    }

    /// A 3x3 table whose existing interior cells form a hexagon (rows and columns share at
    /// most one cell), marginals published: no hypercube exists through the primary, but the
    /// box LP finds the six-cell cycle; the audit certifies it from the candidate moves (no
    /// LP of its own) and an independent LP-only audit agrees. Tampered moves are refused.
    #[test]
    fn box_lp_cover_certifies_a_cell_without_any_cube() {
        use crate::suppress::tests::primary;
        use crate::table::{Cell, Dimension, Table};
        let interior = [(1u32, 1u32, 30.0), (1, 2, 20.0), (2, 2, 25.0), (2, 3, 20.0), (3, 3, 22.0), (3, 1, 20.0)];
        let mut sums: crate::table::relations::FastMap<(u32, u32), f64> = Default::default();
        for &(r, c, v) in &interior {
            for key in [(r, c), (r, 0), (0, c), (0, 0)] {
                *sums.entry(key).or_insert(0.0) += v;
            }
        }
        let mut keys: Vec<_> = sums.keys().copied().collect();
        keys.sort_unstable();
        let cells = keys.iter().map(|&(r, c)| Cell::new(vec![r, c], sums[&(r, c)], 5)).collect();
        let rows = Dimension::flat("row", &["a", "b", "c"]);
        let cols = Dimension::flat("col", &["x", "y", "z"]);
        let mut t = Table::new(vec![rows, cols], cells).unwrap();
        publish_marginals(&mut t);
        let a = primary(&mut t, &[1, 1], 3.0);
        let p = Problem::from_table(&t, None);
        let geom = p.geom.clone().unwrap();
        assert!(multi_cube(&p, &geom, &p.initial(), 0, 10_000).is_none());
        let moves = box_cover(&p, &geom, &p.initial(), 0).unwrap();
        assert_eq!(moves.len(), 2);
        for (_, z) in &moves {
            assert_eq!(z.len(), 6, "{z:?}");
        }
        let mut w = Work::new(&p, p.initial());
        assert!(!w.last_resort_cubes, "a small table keeps the closure by default");
        w.last_resort_cubes = true;
        assert!(w.cover().is_empty());
        // Tampered: a move off one relation, or with a cell the pattern publishes.
        let mut off = w.move_candidates[0].2.clone();
        off[1].1 *= 2.0;
        let mut sup = w.sup().to_vec();
        let mut aud = Auditor::new(&p, sup.clone());
        assert_eq!(aud.offer_moves(vec![(0, w.move_candidates[0].1, off)]), 0);
        sup[t.find(&[2, 3]).unwrap()] = false;
        let mut aud = Auditor::new(&p, sup);
        assert_eq!(aud.offer_moves(w.move_candidates.clone()), 0);
        assert_eq!(w.aud.offer_moves(std::mem::take(&mut w.move_candidates)), 2);
        assert!(w.aud.check().unwrap().is_empty());
        assert_eq!(w.aud.lps, 0);
        let o = ProtectOptions { method: Method::Fast, cleanup: false, ..Default::default() };
        let prot = protect(&t, &o).unwrap();
        assert_eq!(prot.secondaries, 5);
        let lp = crate::suppress::audit(
            &t,
            &prot.statuses,
            true,
            &crate::suppress::AuditOptions { lp_only: true, exact_intervals: true },
        )
        .unwrap();
        assert!(lp.is_clean());
        assert!(lp.cells[0].cell == a && lp.cells[0].hi >= 33.0 - 1e-6 && lp.cells[0].lo <= 27.0 + 1e-6);
    }

    /// Every pattern the cover leaves behind is completed into an audited one, with and
    /// without cleanup, and the cleanup never makes it more costly.
    #[test]
    fn hypercube_construction_ends_clean() {
        let t = table(5);
        let base = ProtectOptions { method: Method::Fast, construction: Construction::Hypercube, ..Default::default() };
        let raw = protect(&t, &ProtectOptions { cleanup: false, ..base.clone() }).unwrap();
        let clean = protect(&t, &ProtectOptions { time_limit_s: 4.0, ..base }).unwrap();
        let lp = crate::suppress::audit(
            &t,
            &clean.statuses,
            true,
            &crate::suppress::AuditOptions { lp_only: true, ..Default::default() },
        )
        .unwrap();
        assert!(lp.is_clean());
        assert!(clean.secondary_cost <= raw.secondary_cost + 1e-9);
    }
    /// The cheap refusals of a drop trial are sound: whenever [`Work::refuted`] refuses to
    /// publish a secondary, the LP-only audit finds the pattern without it under-protected.
    /// Also checks that the cleanup's final pattern passes the LP-only audit.
    #[test]
    fn refused_drops_are_really_unsafe() {
        let (mut refused, mut kept) = (0, 0);
        for seed in 0..3 {
            let t = table(seed);
            let p = Problem::from_table(&t, None);
            let far = Deadline::after(600.0);
            let mut w = complete(&p, p.initial(), false, Construction::Auto, &far).unwrap();
            w.aud.localize().unwrap();
            let secondaries: Vec<usize> = (0..p.n()).filter(|&i| w.sup()[i] && p.fix[i] == Fix::Free).collect();
            for &s in &secondaries {
                let lost = w.aud.remove(s);
                let cheap = w.refuted(s);
                let sup = w.sup().to_vec();
                w.aud.restore(s, lost);
                if !cheap || refused >= 15 * (seed as usize + 1) {
                    continue;
                }
                refused += 1;
                let mut lp = Auditor::new(&p, sup);
                lp.lp_only = true;
                assert!(!lp.check().unwrap().is_empty(), "seed {seed}: refusing to publish {s} was wrong");
            }
            // Cleanup with the pool and the pinned-cell check, then an independent LP audit.
            w.cleanup(false, 200, &far).unwrap();
            let mut lp = Auditor::new(&p, w.sup().to_vec());
            lp.lp_only = true;
            assert!(lp.check().unwrap().is_empty(), "seed {seed}: cleanup left an unsafe pattern");
            kept += w.refused_cheaply;
        }
        assert!(refused > 0 && kept > 0, "no cheap refusal exercised ({refused}, {kept})");
    }

    /// On random 3-dimensional hierarchical tables the cube-assignment start, repair and
    /// cleanup give LP-audited patterns, with and without the singleton rule, and the
    /// cleanup never costs more than the pattern it started from.
    #[test]
    fn cube_assignment_patterns_pass_the_lp_audit() {
        for seed in 10..13 {
            let t = table(seed);
            for rule in [false, true] {
                let base = ProtectOptions { method: Method::Fast, singleton_rule: rule, ..Default::default() };
                let raw = protect(&t, &ProtectOptions { cleanup: false, ..base.clone() }).unwrap();
                let clean = protect(&t, &ProtectOptions { time_limit_s: 3.0, ..base }).unwrap();
                for prot in [&raw, &clean] {
                    let a = crate::suppress::audit(
                        &t,
                        &prot.statuses,
                        rule,
                        &crate::suppress::AuditOptions { lp_only: true, ..Default::default() },
                    )
                    .unwrap();
                    assert!(a.is_clean(), "seed {seed} rule {rule}");
                }
                assert!(clean.secondary_cost <= raw.secondary_cost + 1e-9, "seed {seed} rule {rule}");
            }
        }
    }
}
