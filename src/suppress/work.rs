//! The pattern under construction that the heuristics share ([`Work`]): the auditor that owns
//! the pattern, each cell's movement requirement and per-relation counts of suppressed cells,
//! with the three local steps every heuristic is built from:
//!
//! - **closure** ([`Work::close`]): every suppressed cell with a requirement gets, in each of
//!   its relations, suppressed partners whose capacity covers it (cheapest free partner first);
//! - **repair** ([`Work::repair`]): audit, satisfy each shortfall's capacity cut greedily,
//!   close again, until clean or provably infeasible (fail closed);
//! - **cleanup** ([`Work::cleanup`], [`Work::try_drop`]): un-suppress secondaries while the
//!   audit stays clean, refusing cheaply first (pinned cells, pooled cuts).
//!
//! The starting pattern (cube assignment, hypercube cover or closure) is built by
//! [`super::construct`]. Used by the fast method ([`super::fast`]), tabu search, the optimal
//! method's repair, linked tables and the merge of modular subtables.

use std::collections::VecDeque;
use std::time::Instant;

use rayon::prelude::*;

use super::attacker::{tolerance, Cut};
use super::audit::{Auditor, DeferSingles, Failure};
use super::budget::Deadline;
use super::construct::cube_cell_cost;
use super::problem::{requirement, Fix, Problem};
use super::trace::trace;
use super::{singleton, SuppressError};
use crate::table::relations::FastMap;

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
    /// Drop trials refused without an audit ([`Self::refuted`]: pinned cell, pooled cut; too
    /// many certificates lost, [`TRIAL_LOST_MAX`]) and by the audit.
    pub refused_cheaply: usize,
    /// Of those, the ones refused for losing more than [`TRIAL_LOST_MAX`] certificates (trace).
    refused_many_lost: usize,
    pub refused_by_audit: usize,
    /// Drop trials the audit accepted.
    pub accepted: usize,
    /// Drop trials on large tables that the witnesses could not decide
    /// ([`Auditor::recertified_by_witnesses`]): refused.
    pub refused_undecided: usize,
    /// Certificates lost and LPs solved by accepted / audit-refused drop trials (trace only).
    trial_stats: [(usize, usize); 2],
    /// Accepted drop trials replace the LP witnesses they found by sparser ones
    /// ([`Auditor::sparsify_since`]; default on). Why: on an 11 k-cell census enterprise table
    /// the 50 trials of the default cleanup took 95 s instead of 145 s (same pattern).
    pub sparse_witnesses: bool,
    /// Witnesses made sparser so far.
    pub sparsified: usize,
    /// Per cell, the number of assigned cubes using it ([`super::cubes`]), when the pattern
    /// came from the cube assignment.
    pub cube_use: Option<Vec<u32>>,
    /// Candidate certificates from [`Self::cover`](super::construct) (sensitive index, cubes through it), handed
    /// to the auditor by [`complete`](super::construct::complete), which verifies each one exactly before trusting it.
    pub candidates: Vec<super::audit::CubeCandidate>,
    /// Candidate attacker moves from box LPs ([`box_cover`](super::construct::box_cover)): (sensitive index, direction,
    /// move), verified by the auditor like an LP witness before it is trusted.
    pub move_candidates: Vec<super::audit::MoveCandidate>,
    /// Whether [`Self::cover`] may fall back on ancestor cubes and box LPs for cells without
    /// a (multi-)cube. On by default above [`LAST_RESORT_CELLS`] cells, where the closure and
    /// the LP repair it leads to do not scale; below, the closure and LP repair give cheaper
    /// patterns (an ancestor cube suppresses marginals up to the grand total).
    pub last_resort_cubes: bool,
    /// Attacker-LP columns ([`Auditor::lp_columns`]) the next [`Self::cleanup`] may solve: a
    /// deterministic work budget next to its drop trials (LP work, not trials, is what a
    /// cleanup's time follows; default: no limit).
    pub cleanup_columns: usize,
    /// Simplex effort ([`Auditor::lp_effort`]) the next [`Self::cleanup`] may spend: a
    /// deterministic work budget that, unlike [`Self::cleanup_columns`], follows the LPs' time
    /// on components of every size, so one budget per second of the limit serves small and
    /// large tables alike (default: no limit; the fast method's, [`super::fast`]).
    pub cleanup_effort: u64,
    /// Drop trials the next [`Self::cleanup`] runs before [`Self::cleanup_columns`] and
    /// [`Self::cleanup_effort`] may end it (default 0; the hard stop ends it regardless).
    pub cleanup_min_trials: usize,
    /// Drop trials a cleanup may run when the witnesses alone decide them
    /// ([`Auditor::keep_held`]; default: no limit; the fast method's, [`super::fast`]). Why
    /// trials there: those trials solve no LP, so neither [`Self::cleanup_columns`] nor
    /// [`Self::cleanup_effort`] counts their work.
    pub local_trials: usize,
    /// Suppressed cells in one component above which [`Self::cleanup`] decides its trials by
    /// the witnesses alone ([`LOCAL_TRIALS_COMPONENT`]).
    pub local_trials_component: usize,
    /// Group drop trials a cleanup on such a component starts with ([`Work::drop_groups`]; 0
    /// unless the method sets them, [`group_trials`]).
    pub group_trials: usize,
    /// Sensitive cells repaired with a hypercube for bounds the audit deferred
    /// ([`Self::repair_by_cubes`]).
    pub cube_repairs: usize,
    /// Cells suppressed by closing with whole moves the sensitive cells whose bounds the split
    /// closure's audits deferred ([`Self::close_deferred`]).
    pub whole_closures: usize,
    /// The cleanup refuses the trials that lose more than [`TRIAL_LOST_MAX`] certificates also
    /// without [`Auditor::keep_held`]: set by [`Self::cleanup`] on a suppressed component of
    /// [`Auditor::localize_skip_component`] cells or more. Why: its trials are audited over the
    /// component, and the first audit's batch witnesses there are held by thousands of bounds
    /// each. On HiTaS's repaired merge of c4-hier the cleanup's first audited trial lost
    /// 19,586 certificates and its component LPs ran until the limit, 31–184 s later; with
    /// the refusal the 250 trials take 21 s (BENCHMARKS, "Session 51").
    refuse_many_lost: bool,
    /// [`TRIAL_LOST_MAX`] (tests lower it).
    trial_lost_max: usize,
    /// The closure ([`Self::close`]) asks the suppressed partners of a cell in a relation for
    /// their share of its move, in proportion to their capacities, instead of the whole move
    /// (up to each one's capacity) from each ([`super::Construction::SplitClosure`]).
    pub split_moves: bool,
    /// The repair ([`Self::repair_open`]) stops once the pattern costs this much, unprotected:
    /// for a caller that has no use for a dearer pattern and checks the cost after (the exact
    /// search's repair of a master pattern, `exact::Greedy`). Default: none.
    pub abandon_at: Option<f64>,
}

/// Lost certificates from which a cleanup trial re-certifies with one batch LP per ball
/// ([`Auditor::group_min`]).
const CLEANUP_GROUP_MIN: usize = 4;

/// On tables where the auditor keeps the certificates it cannot make local
/// ([`Auditor::keep_held`], above the cube assignment's size), a drop trial that takes away more
/// certificates than this is refused without an audit: re-certifying costs a search per lost
/// pair, and the cleanup tries the most costly cells first, often the ones many certificates
/// use (measured on a 3.6 M-cell census table when the trials still solved a ball LP per lost
/// pair: the first trial had solved 63,445 LPs in 386 s when the limit ended it, the whole
/// cleanup one unfinished trial). Refusing a drop is always safe.
const TRIAL_LOST_MAX: usize = 2_000;

/// A cleanup whose pattern has a suppressed component of more cells than this decides its
/// drop trials by the witnesses alone, as above [`Auditor::keep_held`]'s table size: an
/// audit that the witnesses leave undecided ends in LPs over the whole component. Measured
/// on a 5-dimensional census table (101,827 cells, one 95 k-cell component): the first trial
/// solved 8 such LPs in 456 s and the 600-s limit ended the cleanup there; decided locally,
/// all 50,734 trials took 58 s and gave the same pattern. The suite's largest components under
/// LP-decided trials are ~9,000 cells (an 11 k-cell enterprise table).
const LOCAL_TRIALS_COMPONENT: usize = 50_000;

/// Lost certificates a drop trial decides first ([`Auditor::probe_lost`]), while the audit
/// has refused at least one trial for every `PROBE_RATIO` it accepted (measured on an 11 k-cell
/// enterprise table where it refused 16 of 34: 29 % less cleanup time, 31 % fewer LPs).
const PROBE_TARGETS: usize = 6;
const PROBE_RATIO: usize = 4;

/// LP columns ([`Auditor::lp_columns`]) one group drop trial may use before it is refused
/// ([`Auditor::column_cap`]): 8 LPs over a 100 k-cell component (a certified group took 4).
const GROUP_TRIAL_COLUMNS: usize = 800_000;

/// Suppressed cells in the largest component above which a cleanup makes no group drop
/// trials: each trial solves LPs over the whole component (~7 s an LP over c5-persons'
/// 95 k cells; the 1 M-cell tables' components are ten times larger).
const GROUP_COMPONENT_MAX: usize = 200_000;

/// Seconds of the stated time limit per group drop trial ([`Work::drop_groups`]) of a
/// `fast` cleanup on a large component: 2 trials at the 600-s default, 6 at 1,800 s. Measured
/// on c5-persons (2-core machine): ~125 s of construction, repair and re-certification before
/// the trials, then 27–132 s a trial (two LPs over the 95 k-cell component per direction; the
/// same LPs took up to 3× longer from one identical run to the next). Two trials keep the run
/// well within the limit, so a slower machine still publishes the same pattern: on one whose
/// LPs over that component took ~140–170 s each, the trials took 193 s and 151 s with the two
/// directions side by side and the run ended at 370 s (BENCHMARKS, "Session 101").
pub const GROUP_SECONDS_PER_TRIAL: f64 = 300.0;

/// Group drop trials under time limit `time_limit_s` ([`GROUP_SECONDS_PER_TRIAL`]).
pub fn group_trials(time_limit_s: f64) -> usize {
    (time_limit_s / GROUP_SECONDS_PER_TRIAL).floor() as usize
}

/// Cell look-ups of a repair cube search ([`Work::repair_by_cubes`]).
const CUBE_REPAIR_BUDGET: usize = 20_000;

/// One-dimensional extensions kept per dimension by a repair cube search: wider than the
/// construction's, as only the few deferred cells are searched.
const CUBE_REPAIR_BEAM: usize = 6;

/// Cuts longer than this are not pooled (checking them would cost more than it saves).
const POOL_CUT_MAX: usize = 4096;

/// Relations examined at most by the pinned-cell propagation of one drop trial.
const PIN_STEPS: usize = 20_000;

/// Problems with more cells than this use the cover's last-resort cubes by default.
const LAST_RESORT_CELLS: usize = 100_000;

impl<'p, 'a> Work<'p, 'a> {
    /// State for pattern `sup` (requirements from the sensitive cells).
    pub fn new(p: &'p Problem<'a>, sup: Vec<bool>) -> Self {
        Self::with_auditor(p, Auditor::new(p, sup))
    }

    /// State for the pattern of `aud`, keeping what it has proven: a pattern audited already
    /// (a master MIP's, before its repair) is not audited again from scratch. Why: on the
    /// 11 k-cell c3-persons table that second audit took 2.2 s of each master round's ~11 s.
    pub fn with_auditor(p: &'p Problem<'a>, aud: Auditor<'p, 'a>) -> Self {
        let mut req = vec![0.0; p.n()];
        for s in &p.sens {
            req[s.cell as usize] = requirement(s);
        }
        let sup = &aud.sup;
        let nsup = (0..p.rel.len()).map(|r| p.rel.members(r).filter(|&m| sup[m as usize]).count() as u32).collect();
        Self {
            p,
            aud,
            req,
            nsup,
            pool: Vec::new(),
            pool_of: FastMap::default(),
            refused_cheaply: 0,
            refused_many_lost: 0,
            refused_undecided: 0,
            refused_by_audit: 0,
            accepted: 0,
            trial_stats: [(0, 0); 2],
            sparse_witnesses: true,
            sparsified: 0,
            cube_use: None,
            candidates: Vec::new(),
            move_candidates: Vec::new(),
            last_resort_cubes: p.n() > LAST_RESORT_CELLS,
            cleanup_columns: usize::MAX,
            cleanup_effort: u64::MAX,
            cleanup_min_trials: 0,
            local_trials: usize::MAX,
            local_trials_component: LOCAL_TRIALS_COMPONENT,
            group_trials: 0,
            cube_repairs: 0,
            whole_closures: 0,
            refuse_many_lost: false,
            trial_lost_max: TRIAL_LOST_MAX,
            split_moves: false,
            abandon_at: None,
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

    /// Publishes `j` without an audit; the bounds whose certificates moved it are left for the
    /// next [`Auditor::check`].
    pub fn publish(&mut self, j: usize) {
        if self.aud.sup[j] {
            self.aud.remove(j);
            self.unsuppress_counts(j);
        }
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
    ///
    /// With [`Self::split_moves`], a partner `m` of cell `i` in relation `r` must carry
    /// `req_i · cap_m / Σ cap` (the partners' capacities summed, at least `req_i`): the
    /// attacker moving `i` by `req_i` may spread the balancing move over them so, and each
    /// then needs balancing only for its share in its own relations. Why: asking each partner
    /// for the whole move makes every cell of the closure move as far as the primary, as the
    /// corners of a hypercube do, and closes ever more cells in turn. Measured on the
    /// enterprise table c4-ent (44,375 cells, 65 % primary): the closure suppressed 31.97 % of
    /// the value, clean after the repair 32.04 %, where the whole-move closure's clean pattern
    /// is 66.02 % (BENCHMARKS, "Session 63"). What it costs is the audit: more bounds fall
    /// short and are repaired from their single LPs.
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
                        self.require_partners(i, r, cap, &mut q);
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
                    let Some((_, j)) = best else {
                        if self.split_moves && cnt > 0 {
                            // Short even with every free cell: each partner moves all it can.
                            self.require_partners(i, r, cap, &mut q);
                        }
                        break;
                    };
                    if self.split_moves {
                        // Its share is set once the relation's partners are known (above).
                        self.suppress(j, 0.0);
                    } else {
                        self.suppress(j, ri.min(p.capacity(j)));
                        q.push_back(j as u32);
                    }
                }
            }
        }
    }

    /// Raises the requirement of every suppressed partner of `i` in relation `r` (their
    /// capacities summing to `cap`) to what `i`'s move asks of it ([`Self::close`]) and queues
    /// the raised ones.
    fn require_partners(&mut self, i: usize, r: usize, cap: f64, q: &mut VecDeque<u32>) {
        let p = self.p;
        let ri = self.req[i];
        for m in p.rel.members(r) {
            let m = m as usize;
            if m == i || !self.aud.sup[m] {
                continue;
            }
            let want = if self.split_moves { ri * p.capacity(m) / cap.max(ri) } else { ri.min(p.capacity(m)) };
            if self.req[m] < want - tolerance(want) {
                self.req[m] = want;
                q.push_back(m as u32);
            }
        }
    }

    /// [`Auditor::check`] that ends at the grace period's end ([`Deadline::wall`]) with the
    /// time-limit error of `phase`. Why: one audit of a 100 k-cell closure (HiTaS's merge on
    /// c5-persons, past the limit) ran for minutes past it. A stop set by the caller (a
    /// cleanup's) stays in force and its error passes through.
    pub fn check_within_grace(&mut self, deadline: &Deadline, phase: &str) -> Result<Vec<Failure>, SuppressError> {
        let outer = self.aud.stop;
        self.aud.stop = Some(outer.map_or(deadline.wall(), |s| s.min(deadline.wall())));
        let out = self.aud.check();
        self.aud.stop = outer;
        match out {
            // The wall ended it when no earlier stop was set, or when it has passed.
            Err(e) if e.is_stop() && (outer.is_none_or(|s| s >= deadline.wall()) || deadline.wall_reached()) => {
                Err(deadline.error(phase))
            }
            r => r,
        }
    }

    /// Whether the pattern costs [`Self::abandon_at`] or more: a repair stops there.
    pub fn abandoned(&self) -> bool {
        self.abandon_at.is_some_and(|c| self.p.cost_of(&self.aud.sup) >= c)
    }

    /// Repair loop (step 2): audit, satisfy cuts, close, until clean. Each round adds cells, so
    /// it ends; the hard stop's grace period fails it (no clean pattern yet: nothing to publish).
    pub fn repair(&mut self, singleton_rule: bool, deadline: &Deadline) -> Result<(), SuppressError> {
        self.repair_open(singleton_rule, 0, deadline)
    }

    /// [`Self::repair`] whose first `open_rounds` rounds add only the cells the cuts ask for,
    /// without closing them. Why: on a pattern that protects almost everything (HiTaS's merged
    /// subtables) the closure of the added cells cascades (measured on an 11 k-cell census
    /// table: 34 shortfalls, 3.20 % → 3.63 % of the value in one closed round), while each
    /// open round audits only the targets that failed (adding cells breaks no certificate).
    /// With [`Self::abandon_at`] it also ends, unprotected, once the pattern costs that much.
    pub fn repair_open(
        &mut self,
        singleton_rule: bool,
        open_rounds: usize,
        deadline: &Deadline,
    ) -> Result<(), SuppressError> {
        let p = self.p;
        // Rounds whose audit decided every bound: a lazy audit ([`Auditor::lazy_singles`])
        // that stopped at its first shortfalls is a part of a round, so the closing starts
        // after as many whole audits as without it.
        let mut whole_rounds = 0;
        loop {
            if deadline.wall_reached() {
                return Err(deadline.error("the audit-driven repair"));
            }
            if self.abandoned() {
                return Ok(());
            }
            let t0 = Instant::now();
            let lps0 = self.aud.lps;
            let fails = self.check_within_grace(deadline, "the audit-driven repair")?;
            let whole = self.aud.unknown() == 0;
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
            // Bounds the audit deferred (no cut) get a hypercube each, or after the split
            // closure its whole moves; without a deferral a failure always has its cut.
            let deferring = self.aud.defer_singles.is_some();
            let deferred: Vec<usize> = fails.iter().filter(|f| deferring && f.cut.is_none()).map(|f| f.sens).collect();
            let cubed = if self.split_moves { self.close_deferred(&deferred) } else { self.repair_by_cubes(&deferred) };
            for f in &fails {
                let s = p.sens[f.sens];
                let Some(cut) = &f.cut else {
                    if deferring {
                        continue;
                    }
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
            // A cell without a cube switched the deferral off: the next audit gives its cut.
            let undeferred = deferring && self.aud.defer_singles.is_none();
            if added.is_empty() && cubed == 0 && !undeferred {
                if fails.is_empty() {
                    return Ok(());
                }
                return Err(SuppressError::Unprotected {
                    method: super::Method::Fast,
                    count: fails.len(),
                    first: p.sens[fails[0].sens].cell as usize,
                });
            }
            if whole_rounds >= open_rounds {
                self.close(added);
            }
            whole_rounds += usize::from(whole);
        }
    }

    /// Sets the work up for the split closure ([`Self::split_moves`]): its repair's audits
    /// leave the bounds their batch rounds do not certify, when their single LPs would span
    /// at least `min_columns` LP columns, to [`Self::close_deferred`].
    pub fn split_closure(&mut self, min_columns: usize) {
        self.split_moves = true;
        self.aud.defer_singles = Some(DeferSingles { min_columns, ..DeferSingles::ALL });
    }

    /// Closes the sensitive cells `deferred` (their bounds left undecided by the batch LPs of
    /// an audit in the split closure's repair, [`Self::split_closure`]) with whole moves, as
    /// the plain closure does: each suppressed partner is asked for as much of the cell's move
    /// as it can carry, and so on through their relations. Then the split moves and the
    /// deferral end: later audits decide what is still short by single LPs and the repair
    /// follows their cuts. Returns the cells closed. Why: the split closure leaves many bounds
    /// short, and proving each shortfall takes a single LP over the whole component. On
    /// c4-large (one 31,399-cell component) its first audit's batch rounds leave 4,491 bounds,
    /// ~80 % of them short, and their single LPs ran over 10 minutes; closed whole at once,
    /// the pattern goes from 5.32 % to 7.22 % of the table's cost and the repair ends clean at
    /// 7.68 % in ~260 s, below the plain closure's 8.03 % (BENCHMARKS, "Session 67").
    fn close_deferred(&mut self, deferred: &[usize]) -> usize {
        if deferred.is_empty() {
            return 0;
        }
        let p = self.p;
        // Decided again by the next audit, now by single LPs.
        self.aud.clear_failed();
        self.aud.defer_singles = None;
        self.split_moves = false;
        let mut cells: Vec<u32> = deferred.iter().map(|&k| p.sens[k].cell).collect();
        cells.sort_unstable();
        cells.dedup();
        let before = self.aud.sup.iter().filter(|&&x| x).count();
        self.close(cells.iter().copied());
        let after = self.aud.sup.iter().filter(|&&x| x).count();
        self.whole_closures += after - before;
        trace(format_args!(
            "whole-move closure of {} deferred sensitive cells: {before} -> {after} suppressed, cost {:.3} %",
            cells.len(),
            p.cost_percent(p.cost_of(&self.aud.sup))
        ));
        cells.len()
    }

    /// Repairs the sensitive cells `deferred` (their bounds left undecided by the audit's
    /// batch LPs, [`Auditor::defer_singles`]) with the cheapest hypercube each, cells already
    /// suppressed free, and offers each cube as the pair's certificate; returns the cubes
    /// applied. A cell without a cube turns the deferral off, so the next audit solves its
    /// single LPs (and gives the repair their cuts).
    ///
    /// The cubes are laid one at a time, the costliest first (each cell's cheapest cube against
    /// the starting pattern, searched in parallel, sets the order), and each is searched again
    /// against the pattern at its turn, so the marginals an expensive cube must take are free
    /// for the cheaper cubes after it. Why: on HiTaS's merge of c4-hier (1,890 deferred cells)
    /// cubes searched in parallel batches of 32 against the pattern at the batch start took the
    /// repaired pattern from 4.93 % to 25.81 % of the value, in cell order one at a time to
    /// 22.60 %, costliest first to 18.04 % (BENCHMARKS, "Session 50"); the searches take
    /// 0.1–0.3 s in all.
    fn repair_by_cubes(&mut self, deferred: &[usize]) -> usize {
        let p = self.p;
        if deferred.is_empty() {
            return 0;
        }
        // The deferred bounds are decided again by the next audit: by a cube's certificate
        // (offered below), or by their single LPs once the deferral is off.
        self.aud.clear_failed();
        let Some(geom) = p.geometry() else {
            self.aud.defer_singles = None;
            return 0;
        };
        let mut ks: Vec<usize> = deferred.to_vec();
        ks.sort_unstable();
        ks.dedup();
        let cheapest = |k: usize, sup: &[bool]| {
            let req = requirement(&p.sens[k]);
            let accept = |c: usize| cube_cell_cost(p, sup, req, c);
            geom.cheapest_cube_beam(p.sens[k].cell, &accept, CUBE_REPAIR_BUDGET, CUBE_REPAIR_BEAM)
        };
        let first: Vec<f64> = {
            let sup = &self.aud.sup;
            ks.par_iter().map(|&k| cheapest(k, sup).map_or(f64::INFINITY, |(c, _)| c)).collect()
        };
        let mut order: Vec<usize> = (0..ks.len()).collect();
        order.sort_by(|&a, &b| first[b].total_cmp(&first[a]).then(a.cmp(&b)));
        let mut n = 0;
        let mut offers = Vec::new();
        for k in order.into_iter().map(|i| ks[i]) {
            let Some((_, cube)) = cheapest(k, &self.aud.sup) else {
                self.aud.defer_singles = None;
                continue;
            };
            let req = requirement(&p.sens[k]);
            for &(c, _) in &cube {
                self.suppress(c as usize, req.min(p.capacity(c as usize)));
            }
            offers.push((k as u32, vec![cube]));
            n += 1;
        }
        self.cube_repairs += n;
        let certified = self.aud.offer(offers);
        if certified == 0 {
            self.aud.defer_singles = None;
        }
        trace(format_args!("cube repair: {n} of {} deferred sensitive cells, {certified} pairs certified", ks.len()));
        n
    }

    /// Drop trials decided by the witnesses alone when the pattern has a suppressed
    /// component above [`Self::local_trials_component`] cells. Once set it stays: later trials
    /// of this work (the cleanup after the repair's drops, tabu's cleanups) start from the
    /// same component.
    pub fn decide_trials_locally_on_giant_components(&mut self) {
        if !self.aud.keep_held {
            let largest = self.aud.largest_component();
            if largest > self.local_trials_component {
                self.aud.keep_held = true;
                trace(format_args!("a suppressed component of {largest} cells: drop trials decided locally"));
            }
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
        // Past the hard stop, not even the re-certification with local witnesses that the trials
        // start from (an audit of every sensitive cell: minutes on 10^5 cells, measured on a
        // 5-dimensional census table where it ran after a 120 s limit had passed).
        if deadline.reached() || trials == 0 {
            return Ok(0);
        }
        let t0 = Instant::now();
        self.decide_trials_locally_on_giant_components();
        self.refuse_many_lost = self.aud.keep_held || self.aud.largest_component() >= self.aud.localize_skip_component;
        self.aud.group_min = CLEANUP_GROUP_MIN;
        // The trials' LPs end at the hard stop too: one component LP of a 1 M-cell census
        // pattern (91 % of its cells suppressed) ran for minutes past it. A stopped audit
        // leaves the last audited pattern with its certificates.
        self.aud.stop = Some(deadline.at());
        let (lps0, cols0, effort0) = (self.aud.lps, self.aud.lp_columns, self.aud.lp_effort.total());
        // The counters span the work's life (a repair's drop trials, tabu's earlier cleanups):
        // the trace gives this cleanup's share.
        let refused0 = (self.refused_cheaply, self.refused_many_lost, self.refused_by_audit, self.refused_undecided);
        let stats0 = self.trial_stats;
        let (mut tried, mut dropped) = (0, 0);
        let out = self.cleanup_trials(&cands, singleton_rule, trials, deadline, (&mut tried, &mut dropped));
        self.aud.stop = None;
        match out {
            Err(e) if e.is_stop() => deadline.record_hit(),
            r => r?,
        }
        trace(format_args!(
            "cleanup {:.1}s: {tried} of {} candidates tried, {dropped} dropped, {} refused without an audit \
             ({} of them for losing over {TRIAL_LOST_MAX} certificates), {} by the audit, {} undecided locally, {} LPs over {} columns, effort {} after {} (lost certificates / LPs: accepted {:?}, refused {:?}), \
             cost {:.0}",
            t0.elapsed().as_secs_f64(),
            cands.len(),
            self.refused_cheaply - refused0.0,
            self.refused_many_lost - refused0.1,
            self.refused_by_audit - refused0.2,
            self.refused_undecided - refused0.3,
            self.aud.lps - lps0,
            self.aud.lp_columns - cols0,
            self.aud.lp_effort.total() - effort0,
            effort0,
            (self.trial_stats[0].0 - stats0[0].0, self.trial_stats[0].1 - stats0[0].1),
            (self.trial_stats[1].0 - stats0[1].0, self.trial_stats[1].1 - stats0[1].1),
            p.cost_of(&self.aud.sup)
        ));
        Ok(dropped)
    }

    /// [`Self::cleanup`]'s local re-certification and drop trials, counting the trials `tried`
    /// and `dropped` (also when an error ends them).
    fn cleanup_trials(
        &mut self,
        cands: &[usize],
        singleton_rule: bool,
        trials: usize,
        deadline: &Deadline,
        (tried, dropped): (&mut usize, &mut usize),
    ) -> Result<(), SuppressError> {
        let p = self.p;
        let (t0, lps0, cols0, effort0) =
            (Instant::now(), self.aud.lps, self.aud.lp_columns, self.aud.lp_effort.total());
        self.aud.localize()?;
        trace(format_args!(
            "cleanup: local re-certification {:.1}s, {} LPs",
            t0.elapsed().as_secs_f64(),
            self.aud.lps - lps0
        ));
        let mut left = trials;
        if self.aud.keep_held {
            let groups = self.group_trials.min(left);
            let (t1, before) = (Instant::now(), *dropped);
            let tried_groups = self.drop_groups(groups, singleton_rule, deadline, dropped)?;
            left -= tried_groups;
            if *dropped > before {
                // The certificates of a dropped group are component-wide batch witnesses,
                // each held by ~1,000 targets: every single trial would lose them all, which
                // the witness searches rarely replace (with the ball LPs of then, ~20 s a
                // trial on c5-persons, where the 50,734 single trials before any group drop
                // took 45 s in all and dropped 0.003 % of the cost). So a group drop ends the
                // cleanup.
                left = 0;
            }
            trace(format_args!(
                "cleanup: {tried_groups} group trials in {:.1}s dropped {} cells, cost {:.3} %",
                t1.elapsed().as_secs_f64(),
                *dropped - before,
                p.cost_percent(p.cost_of(&self.aud.sup))
            ));
            left = left.min(self.local_trials);
        }
        for &s in cands {
            if *tried >= left {
                break;
            }
            if !self.aud.sup[s] {
                continue; // dropped with its group
            }
            let spent = (self.aud.lp_columns - cols0, self.aud.lp_effort.total() - effort0);
            let worked = spent.0 >= self.cleanup_columns || spent.1 >= self.cleanup_effort;
            if deadline.reached() || (worked && *tried >= self.cleanup_min_trials) {
                break;
            }
            if *tried % 50 == 0 {
                let cost = p.cost_percent(p.cost_of(&self.aud.sup));
                trace(format_args!(
                    "cleanup: {tried} trials at {:.1}s, {} LPs over {} columns, effort {}, cost {cost:.3} %",
                    t0.elapsed().as_secs_f64(),
                    self.aud.lps - lps0,
                    self.aud.lp_columns - cols0,
                    self.aud.lp_effort.total() - effort0
                ));
            }
            crate::progress::solver_progress("cleanup", || {
                format!(
                    "{tried} of {} candidates tried, {dropped} dropped, cost {:.3} % of the table's cost",
                    cands.len().min(trials),
                    p.cost_percent(p.cost_of(&self.aud.sup))
                )
            });
            *tried += 1;
            if self.try_drop(s, singleton_rule)? {
                *dropped += 1;
            }
        }
        Ok(())
    }

    /// The finished pattern with its final audit from the certificates held
    /// ([`Auditor::recheck_or_reaudit`]: every witness re-verified exactly against the pattern,
    /// the bounds of those that do not audited again), or `None` when the pattern is not clean
    /// or a certificate is missing: the caller then audits from scratch. Why: an audit from scratch repeats the LPs whose
    /// witnesses are at hand — ~30 s of the ~140 s HiTaS run on an 11 k-cell census table.
    /// It completes past the hard stop, as the audit from scratch does: nothing is published
    /// unaudited, and a search the stop ended leaves its stop set (`tabu`, `optimal`).
    pub fn into_certified(
        mut self,
        singleton_rule: bool,
    ) -> Result<(Vec<bool>, Option<super::AuditReport>), SuppressError> {
        self.aud.stop = None;
        // Belt and braces: every kept drop was audited, but audit the end state before trusting it.
        if !self.aud.check()?.is_empty() {
            return Ok((self.aud.sup, None));
        }
        let t0 = Instant::now();
        let rep = self.aud.recheck_or_reaudit(singleton_rule)?;
        trace(format_args!("certificate re-verification {:.1}s: {}", t0.elapsed().as_secs_f64(), rep.is_some()));
        Ok((self.aud.sup, rep))
    }

    /// Un-suppresses `s` if the pattern stays clean; returns whether it did. Cheap necessary
    /// conditions ([`Self::refuted`]) are tried before the audit; they can only refuse a drop,
    /// so a kept drop is always one the audit certified.
    pub fn try_drop(&mut self, s: usize, singleton_rule: bool) -> Result<bool, SuppressError> {
        let id0 = self.aud.witness_count();
        let lost = self.aud.remove(s);
        let many_lost = (self.aud.keep_held || self.refuse_many_lost) && lost.len() > self.trial_lost_max;
        let ok = if (singleton_rule && !singleton::violations_near(self.p, &self.aud.sup, s).is_empty())
            || many_lost
            || self.refuted(s)
        {
            self.refused_cheaply += 1;
            self.refused_many_lost += usize::from(many_lost);
            false
        } else {
            let lps0 = self.aud.lps;
            // Large tables: the witnesses decide, an undecided trial is refused. Smaller
            // ones probe the lost targets a refusal usually comes from, while the audit often
            // refuses (on a table whose trials it mostly accepts, the probes' component LPs
            // were 16 % more cleanup time, measured on c3-persons with the singleton rule).
            // A trial needs only to know whether some bound fails: its check stops at pinned
            // targets without an LP (the drop pins them through cells that were pinned
            // already, which `refuted`'s local propagation does not know).
            let stops0 = std::mem::replace(&mut self.aud.stops_at_pinned, true);
            let verdict = if self.aud.keep_held {
                // Witnesses prove no shortfall: re-certified is clean, else undecided.
                Ok(self.aud.recertified_by_witnesses(&lost).then(Vec::new))
            } else if PROBE_RATIO * self.refused_by_audit >= self.accepted {
                self.aud.check_probing(&lost, PROBE_TARGETS).map(Some)
            } else {
                self.aud.check().map(Some)
            };
            self.aud.stops_at_pinned = stops0;
            let fails = match verdict {
                Ok(Some(f)) => f,
                Ok(None) => {
                    self.refused_undecided += 1;
                    // The witnesses the refused trial found for the lost targets it did
                    // re-certify are kept: later trials re-use them. Forgetting them kept the
                    // peak resident set of c4-geo3 7 % lower and cost 368 of its 5,189 drops
                    // (BENCHMARKS.md, "Session 99").
                    self.aud.restore(s, lost);
                    return Ok(false);
                }
                Err(e) => {
                    // Stopped (or failed) mid-audit: the pattern with `s` is the audited one.
                    // Certificates found meanwhile hold for it too (a superset pattern).
                    self.aud.restore(s, lost);
                    return Err(e);
                }
            };
            let st = &mut self.trial_stats[usize::from(!fails.is_empty())];
            st.0 += lost.len();
            st.1 += self.aud.lps - lps0;
            self.pool_cuts(&fails);
            self.refused_by_audit += usize::from(!fails.is_empty());
            self.accepted += usize::from(fails.is_empty());
            fails.is_empty()
        };
        if ok {
            self.unsuppress_counts(s);
            // Large tables keep their witnesses as found: their trials are decided by the
            // witnesses alone (`recertified_by_witnesses`), which are short already.
            if self.sparse_witnesses && !self.aud.keep_held {
                // Stopped here, the trial stands: its certificates are the LP witnesses found.
                match self.aud.sparsify_since(id0) {
                    Ok(n) => self.sparsified += n,
                    Err(e) if e.is_stop() => {}
                    Err(e) => return Err(e),
                }
            }
        } else {
            self.aud.restore(s, lost);
        }
        Ok(ok)
    }

    /// Group drop trials on a large component ([`Auditor::keep_held`]): the method-chosen
    /// secondaries are grouped by level combination (the depth of each coordinate in its
    /// hierarchy) and each group, highest marginals first, is un-suppressed at once when the
    /// audit certifies the pattern without it ([`Self::try_drop_group`]). At most `trials`
    /// group trials. Returns the trials run; `dropped` counts the cells dropped (also when the
    /// hard stop ends the trials).
    ///
    /// Why: there the single drop trials refuse every cell whose drop loses more than
    /// [`TRIAL_LOST_MAX`] certificates, and those are the costliest: the high marginals a cube
    /// assignment suppresses on a sparse 5-dimensional table (c5-persons: the grand total and
    /// every one-way total, each level combination 1/72 of the cost). A level combination shares
    /// its role in every cube, so it is droppable as a whole or not at all more often than not,
    /// and one audit decides it.
    pub fn drop_groups(
        &mut self,
        trials: usize,
        singleton_rule: bool,
        deadline: &Deadline,
        dropped: &mut usize,
    ) -> Result<usize, SuppressError> {
        let p = self.p;
        let Some(geom) = p.geometry() else { return Ok(0) };
        if self.aud.largest_component() > GROUP_COMPONENT_MAX {
            return Ok(0);
        }
        let depths = geom.depths();
        let mut groups: std::collections::BTreeMap<(u32, Vec<u32>), Vec<usize>> = Default::default();
        for i in (0..p.n()).filter(|&i| self.aud.sup[i] && p.fix[i] == Fix::Free) {
            let levels: Vec<u32> = geom.levels(&depths, i as u32).collect();
            let height = levels.iter().sum();
            groups.entry((height, levels)).or_default().push(i);
        }
        let mut tried = 0;
        for ((_, levels), group) in groups {
            if tried >= trials || deadline.reached() {
                break;
            }
            let t0 = Instant::now();
            tried += 1;
            let ok = self.try_drop_group(&group, singleton_rule)?;
            trace(format_args!(
                "group trial {tried}: levels {levels:?}, {} cells, {}, {:.1}s, cost {:.3} %",
                group.len(),
                if ok { "dropped" } else { "refused" },
                t0.elapsed().as_secs_f64(),
                p.cost_percent(p.cost_of(&self.aud.sup))
            ));
            *dropped += if ok { group.len() } else { 0 };
        }
        Ok(tried)
    }

    /// Un-suppresses the cells of `group` together if the audit certifies the pattern without
    /// them within [`GROUP_TRIAL_COLUMNS`] LP columns; returns whether it did. Refused (no LP)
    /// when a cheap necessary condition of [`Self::try_drop`] already fails for one of them.
    fn try_drop_group(&mut self, group: &[usize], singleton_rule: bool) -> Result<bool, SuppressError> {
        let mut lost = Vec::with_capacity(group.len());
        for &c in group {
            lost.push(self.aud.remove(c));
        }
        let refused = group.iter().any(|&c| {
            (singleton_rule && !singleton::violations_near(self.p, &self.aud.sup, c).is_empty()) || self.refuted(c)
        });
        // Straight to the component LPs, within a work budget: the drops take away shared
        // witnesses of thousands of targets that the balls do not replace (measured on
        // c5-persons: 0–4 of ~4,000 bounds for 40–65 s a trial), and a group the component
        // LPs would refuse one by one is refused by the budget instead.
        let balls = std::mem::take(&mut self.aud.balls);
        self.aud.column_cap = Some(self.aud.lp_columns + GROUP_TRIAL_COLUMNS);
        let verdict = if refused {
            Ok(None)
        } else {
            match self.aud.check() {
                Err(e) if e.is_stop() && self.aud.stop.is_none_or(|at| Instant::now() < at) => Ok(None),
                r => r.map(Some),
            }
        };
        self.aud.balls = balls;
        self.aud.column_cap = None;
        let ok = matches!(&verdict, Ok(Some(f)) if f.is_empty());
        if ok {
            for &c in group {
                self.unsuppress_counts(c);
            }
        } else {
            for (&c, l) in group.iter().zip(lost).rev() {
                self.aud.restore(c, l);
            }
        }
        if let Ok(Some(fails)) = &verdict {
            self.pool_cuts(fails);
        }
        verdict.map(|_| ok)
    }

    /// Keeps the capacity cuts of a failed trial's shortfalls ([`Self::pool_cut`]).
    fn pool_cuts(&mut self, fails: &[Failure]) {
        for f in fails {
            if let Some(cut) = &f.cut {
                self.pool_cut(cut);
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suppress::construct::complete;
    use crate::suppress::tests::synthetic;
    use crate::suppress::Construction;

    /// Whether the independent LP-only audit (no witnesses) finds pattern `sup` protected.
    fn lp_clean(p: &Problem, sup: Vec<bool>) -> bool {
        let mut lp = Auditor::new(p, sup);
        lp.lp_only = true;
        lp.check().unwrap().is_empty()
    }

    /// Runs `f` on synthetic table `seed`'s completed pattern, re-certified locally as a
    /// cleanup starts, with its secondaries and a distant deadline.
    fn on_localized(seed: u64, f: impl FnOnce(&Problem, Work, Vec<usize>, &Deadline)) {
        let t = synthetic(seed);
        let p = Problem::from_table(&t, None);
        let far = Deadline::after(600.0);
        let mut w = complete(&p, p.initial(), false, Construction::Auto, &far).unwrap();
        w.aud.localize().unwrap();
        let secondaries: Vec<usize> = (0..p.n()).filter(|&i| w.sup()[i] && p.fix[i] == Fix::Free).collect();
        f(&p, w, secondaries, &far);
    }

    /// The cheap refusals of a drop trial are sound: whenever [`Work::refuted`] refuses to
    /// publish a secondary, the LP-only audit finds the pattern without it under-protected.
    /// Also checks that the cleanup's final pattern passes the LP-only audit.
    #[test]
    fn refused_drops_are_really_unsafe() {
        let (mut refused, mut kept) = (0, 0);
        for seed in 0..3 {
            on_localized(seed, |p, mut w, secondaries, far| {
                for &s in &secondaries {
                    let lost = w.aud.remove(s);
                    let cheap = w.refuted(s);
                    let sup = w.sup().to_vec();
                    w.aud.restore(s, lost);
                    if !cheap || refused >= 15 * (seed as usize + 1) {
                        continue;
                    }
                    refused += 1;
                    assert!(!lp_clean(p, sup), "seed {seed}: refusing to publish {s} was wrong");
                }
                // Cleanup with the pool and the pinned-cell check, then an independent LP audit.
                w.cleanup(false, 200, far).unwrap();
                assert!(lp_clean(p, w.sup().to_vec()), "seed {seed}: cleanup left an unsafe pattern");
                kept += w.refused_cheaply;
            });
        }
        assert!(refused > 0 && kept > 0, "no cheap refusal exercised ({refused}, {kept})");
    }

    /// A drop trial refuses a drop that pins a target through a cell pinned before it, without
    /// an attacker LP ([`Auditor::stops_at_pinned`]): `refuted`'s propagation from the dropped
    /// cell does not know the cells pinned before. In a 3 × 3 table with totals, (1,3) is alone
    /// in its column and (3,2) in its row; (1,1), (1,2), (2,2), (2,1) form a cycle that
    /// protects the primary (1,1). Dropping (1,2) leaves (1,1) with the pinned (1,3) in row 1.
    #[test]
    fn a_drop_trial_refuses_a_pinned_target_without_an_lp() {
        let vals = vec![vec![6.0, 8.0, 5.0], vec![7.0, 9.0, 4.0], vec![3.0, 2.0, 1.0]];
        let mut t = crate::suppress::tests::grid(&vals, None);
        crate::suppress::tests::primary(&mut t, &[1, 1], 2.0);
        let p = Problem::from_table(&t, None);
        let cell = |r: u32, c: u32| t.find(&[r, c]).unwrap();
        let mut sup = vec![false; p.n()];
        for (r, c) in [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 2)] {
            sup[cell(r, c)] = true;
        }
        assert!(lp_clean(&p, sup.clone()), "the pattern before the drop protects (1,1)");
        let s = cell(1, 2);
        let mut w = Work::new(&p, sup.clone());
        assert!(!w.try_drop(s, false).unwrap());
        assert!(w.sup()[s], "the refused drop is undone");
        assert_eq!((w.refused_cheaply, w.refused_by_audit), (0, 1), "refused by the trial's check");
        assert_eq!(w.aud.lps, 0, "the trial's check solved an attacker LP");
        assert!(!w.aud.stops_at_pinned, "the switch is reset after the trial");
        // The same check without the switch proves the shortfall with attacker LPs.
        sup[s] = false;
        let mut full = Auditor::new(&p, sup);
        assert!(!full.check().unwrap().is_empty());
        assert!(full.lps > 0);
    }

    /// Sparser witnesses ([`Work::sparse_witnesses`]) change what a cleanup costs, never what
    /// it decides: the same pattern as without them, certified by witnesses that re-verify
    /// ([`Work::into_certified`]), and clean for the LP-only audit. Some must be replaced.
    #[test]
    fn sparser_witnesses_keep_the_cleanup_pattern() {
        let mut replaced = 0;
        for seed in 0..3 {
            let mut patterns = Vec::new();
            for sparse in [false, true] {
                on_localized(seed, |p, mut w, _, far| {
                    w.sparse_witnesses = sparse;
                    w.cleanup(false, 200, far).unwrap();
                    replaced += w.sparsified;
                    let (sup, rep) = w.into_certified(false).unwrap();
                    assert!(rep.is_some_and(|r| r.is_clean()), "seed {seed}: the certificates do not re-verify");
                    assert!(lp_clean(p, sup.clone()), "seed {seed}: unsafe pattern");
                    patterns.push(sup);
                });
            }
            assert_eq!(patterns[0], patterns[1], "seed {seed}: sparser witnesses changed the pattern");
        }
        assert!(replaced > 0, "no witness made sparser");
    }

    /// The cleanup's LP-column budget ([`Work::cleanup_columns`]) is a work limit: a cleanup
    /// given half the columns a full one solves goes through the same trials until it has spent
    /// them, so it spends at least that half and at most the full count, and drops no more.
    #[test]
    fn the_column_budget_ends_the_cleanup() {
        for seed in 0..2 {
            let mut full = (0, 0);
            on_localized(seed, |_, mut w, _, far| {
                let (c0, l0) = (w.aud.lp_columns, w.aud.lps);
                let dropped = w.cleanup(false, 200, far).unwrap();
                let (cols, lps) = (w.aud.lp_columns - c0, w.aud.lps - l0);
                assert!(cols >= lps && lps > 0, "seed {seed}: {lps} LPs over {cols} columns");
                full = (cols, dropped);
            });
            on_localized(seed, |_, mut w, _, far| {
                let c0 = w.aud.lp_columns;
                w.cleanup_columns = full.0 / 2;
                let dropped = w.cleanup(false, 200, far).unwrap();
                let cols = w.aud.lp_columns - c0;
                assert!((full.0 / 2..=full.0).contains(&cols), "seed {seed}: {cols} columns of {}", full.0);
                assert!(dropped <= full.1, "seed {seed}: {dropped} dropped, {} in the full cleanup", full.1);
            });
        }
    }

    /// The cleanup's effort budget ([`Work::cleanup_effort`]) ends it as the column budget
    /// does: given half the effort a full cleanup spends, it goes through the same trials until
    /// it has spent that half, and drops no more. Its LPs are counted ([`crate::lp::Effort`]):
    /// every LP adds at least its size.
    #[test]
    fn the_effort_budget_ends_the_cleanup() {
        for seed in 0..2 {
            let mut full = (0, 0);
            on_localized(seed, |_, mut w, _, far| {
                let (e0, l0) = (w.aud.lp_effort.total(), w.aud.lps);
                let dropped = w.cleanup(false, 200, far).unwrap();
                let (effort, lps) = (w.aud.lp_effort.total() - e0, (w.aud.lps - l0) as u64);
                assert!(effort >= 2 * lps && lps > 0, "seed {seed}: {lps} LPs, effort {effort}");
                full = (effort, dropped);
            });
            on_localized(seed, |_, mut w, _, far| {
                let e0 = w.aud.lp_effort.total();
                w.cleanup_effort = full.0 / 2;
                let dropped = w.cleanup(false, 200, far).unwrap();
                let effort = w.aud.lp_effort.total() - e0;
                assert!((full.0 / 2..full.0).contains(&effort), "seed {seed}: effort {effort} of {}", full.0);
                assert!(dropped <= full.1, "seed {seed}: {dropped} dropped, {} in the full cleanup", full.1);
            });
        }
    }

    /// Drop trials run so far (each ends as exactly one of these counts).
    fn trials_run(w: &Work) -> usize {
        w.accepted + w.refused_cheaply + w.refused_by_audit + w.refused_undecided
    }

    /// The local trial budget ([`Work::local_trials`]) ends a cleanup whose trials the witnesses
    /// alone decide ([`Auditor::keep_held`]): given half the trials a full one runs, it runs
    /// exactly that many, drops no more and passes the LP audit. It does
    /// nothing to a cleanup whose trials are audited over the component: a budget of 0 leaves
    /// its cells as they were.
    #[test]
    fn the_local_trial_budget_ends_only_a_locally_decided_cleanup() {
        let mut cut_short = 0;
        for seed in 0..3 {
            let t = synthetic(seed);
            let p = Problem::from_table(&t, None);
            let far = Deadline::after(600.0);
            let run = |local: bool, budget: usize| {
                let mut w = complete(&p, p.initial(), false, Construction::Auto, &far).unwrap();
                let largest = w.aud.largest_component();
                w.local_trials_component = if local { largest - 1 } else { largest };
                w.local_trials = budget;
                let n0 = trials_run(&w);
                let dropped = w.cleanup(false, 200, &far).unwrap();
                assert_eq!(w.aud.keep_held, local, "seed {seed}");
                (trials_run(&w) - n0, dropped, w.sup().to_vec())
            };
            let full = run(true, usize::MAX);
            assert!(full.0 > 1, "seed {seed}: {} trials", full.0);
            let half = run(true, full.0 / 2);
            assert_eq!(half.0, full.0 / 2, "seed {seed}: trials");
            assert!(half.1 <= full.1, "seed {seed}: {} dropped, {} in the full cleanup", half.1, full.1);
            assert!(lp_clean(&p, half.2.clone()), "seed {seed}: unsafe pattern");
            cut_short += usize::from(half.1 < full.1);
            assert_eq!(run(false, 0).2, run(false, usize::MAX).2, "seed {seed}: audited trials");
        }
        assert!(cut_short > 0, "the budget never ended a cleanup before a drop");
    }

    /// A drop trial's probe ([`Auditor::probe_lost`]) is exact: a shortfall it reports is one
    /// the independent LP-only audit finds too, and when it reports none, the check that
    /// follows gives the LP-only audit's verdict. Some refusals must come from the probe.
    #[test]
    fn probed_drop_trials_keep_the_audit_verdicts() {
        let (mut by_probe, mut trials) = (0, 0);
        for seed in 0..3 {
            on_localized(seed, |p, mut w, secondaries, _| {
                for s in secondaries {
                    let lost = w.aud.remove(s);
                    if lost.is_empty() {
                        w.aud.restore(s, lost);
                        continue;
                    }
                    if trials >= 25 * (seed as usize + 1) {
                        w.aud.restore(s, lost);
                        break;
                    }
                    trials += 1;
                    let truth = lp_clean(p, w.sup().to_vec());
                    let probed = w.aud.probe_lost(&lost, PROBE_TARGETS).unwrap();
                    if probed {
                        by_probe += 1;
                        assert!(!truth, "seed {seed}: the probe refused to publish {s}, which is safe");
                        assert!(!w.aud.failures().is_empty());
                    } else {
                        assert_eq!(w.aud.check().unwrap().is_empty(), truth, "seed {seed}: verdict on {s}");
                    }
                    w.aud.restore(s, lost);
                }
            });
        }
        eprintln!("{by_probe} of {trials} trials refused by the probe");
        assert!(by_probe > 0, "no refusal by a probe in {trials} trials");
    }

    /// On large tables ([`Auditor::keep_held`]) a drop trial is decided by the witnesses
    /// alone: with none available (LPs only) every trial that loses a certificate is refused as
    /// undecided without a single LP, although the ball LPs are on ([`Auditor::local_first`]),
    /// and leaves pattern and certificates as they were; a trial that loses none is kept, and
    /// the pattern still passes the LP audit.
    #[test]
    fn large_table_trials_the_witnesses_cannot_decide_are_refused() {
        let (mut undecided, mut kept) = (0, 0);
        for seed in 0..3 {
            let t = synthetic(seed);
            let p = Problem::from_table(&t, None);
            let far = Deadline::after(600.0);
            let mut w = complete(&p, p.initial(), false, Construction::Auto, &far).unwrap();
            assert!(w.aud.check().unwrap().is_empty());
            (w.aud.keep_held, w.aud.lp_only, w.aud.local_first) = (true, true, true);
            let lps = w.aud.lps;
            let secondaries: Vec<usize> = (0..p.n()).filter(|&i| w.sup()[i] && p.fix[i] == Fix::Free).collect();
            for s in secondaries {
                let before = w.sup().to_vec();
                let loses = {
                    let lost = w.aud.remove(s);
                    let n = lost.len();
                    w.aud.restore(s, lost);
                    n
                };
                let dropped = w.try_drop(s, false).unwrap();
                if loses > 0 {
                    assert!(!dropped && w.sup() == before, "seed {seed}: a trial losing {loses} certificates was kept");
                } else {
                    kept += usize::from(dropped);
                }
            }
            assert_eq!(w.aud.lps, lps, "seed {seed}: a large-table trial solved LPs");
            undecided += w.refused_undecided;
            assert!(w.aud.check().unwrap().is_empty() && w.aud.lps == lps, "seed {seed}: certificates lost");
            assert!(lp_clean(&p, w.sup().to_vec()), "seed {seed}: unsafe pattern");
        }
        assert!(undecided > 0, "no undecided trial exercised (kept {kept})");
    }

    /// A drop trial decided by the witnesses over the certificates it lost
    /// ([`Auditor::recertified_by_witnesses`]) keeps only drops that the independent LP audit finds
    /// safe, solves no LP, and keeps some.
    #[test]
    fn trials_decided_by_the_witnesses_keep_only_safe_drops() {
        let mut kept = 0;
        for seed in 0..3 {
            let t = synthetic(seed);
            let p = Problem::from_table(&t, None);
            let far = Deadline::after(600.0);
            let mut w = complete(&p, p.initial(), false, Construction::Auto, &far).unwrap();
            assert!(w.aud.check().unwrap().is_empty());
            w.aud.keep_held = true;
            let lps = w.aud.lps;
            let secondaries: Vec<usize> = (0..p.n()).filter(|&i| w.sup()[i] && p.fix[i] == Fix::Free).collect();
            for s in secondaries {
                if w.try_drop(s, false).unwrap() {
                    kept += 1;
                    assert!(lp_clean(&p, w.sup().to_vec()), "seed {seed}: unsafe drop of cell {s}");
                }
            }
            assert_eq!(w.aud.lps, lps, "seed {seed}: a trial solved LPs");
        }
        assert!(kept > 0, "no drop kept");
    }

    /// A cleanup over a suppressed component of more than [`Work::local_trials_component`]
    /// cells decides its trials like a large table's: with no local search available (LPs
    /// only, no ball LPs), it solves no LP at all, where the same cleanup over a component within the
    /// threshold solves some; both patterns pass the LP audit. The component size is the
    /// largest of the per-cell components the LPs are built over.
    #[test]
    fn cleanups_over_a_giant_component_decide_their_trials_locally() {
        for seed in 0..3 {
            let mut largest = 0;
            for local in [false, true] {
                let t = synthetic(seed);
                let p = Problem::from_table(&t, None);
                let far = Deadline::after(600.0);
                let mut w = complete(&p, p.initial(), false, Construction::Auto, &far).unwrap();
                largest = w.aud.largest_component();
                let suppressed: Vec<usize> = (0..p.n()).filter(|&i| w.sup()[i]).collect();
                let each = suppressed.iter().map(|&i| w.aud.component(i as u32).0.len()).max();
                assert_eq!(Some(largest), each, "seed {seed}");
                w.local_trials_component = if local { largest - 1 } else { largest };
                (w.aud.lp_only, w.aud.balls) = (true, &[]);
                let lps = w.aud.lps;
                w.cleanup(false, 200, &far).unwrap();
                assert_eq!(w.aud.keep_held, local, "seed {seed}");
                let solved = w.aud.lps - lps;
                assert_eq!(solved == 0, local, "seed {seed}: {solved} LPs with local trials {local}");
                assert!(lp_clean(&p, w.sup().to_vec()), "seed {seed}: unsafe pattern");
            }
            assert!(largest > 1, "seed {seed}: no component to speak of");
        }
    }

    /// A cleanup over a suppressed component of at least [`Auditor::localize_skip_component`]
    /// cells refuses without an audit the trials that lose more than `trial_lost_max`
    /// certificates (here: any); over a smaller component the same trials are audited. Both
    /// patterns pass the LP audit.
    #[test]
    fn cleanups_over_a_large_component_refuse_trials_that_lose_many_certificates() {
        for seed in 0..3 {
            for large in [false, true] {
                let t = synthetic(seed);
                let p = Problem::from_table(&t, None);
                let far = Deadline::after(600.0);
                let mut w = complete(&p, p.initial(), false, Construction::Auto, &far).unwrap();
                let largest = w.aud.largest_component();
                w.aud.localize_skip_component = if large { largest } else { largest + 1 };
                w.trial_lost_max = 0;
                let audited = w.accepted + w.refused_by_audit;
                w.cleanup(false, 200, &far).unwrap();
                let many = w.refused_many_lost;
                assert_eq!(many > 0, large, "seed {seed}: {many} trials refused for their lost certificates");
                if !large {
                    assert!(w.accepted + w.refused_by_audit > audited, "seed {seed}: no trial audited");
                }
                assert!(lp_clean(&p, w.sup().to_vec()), "seed {seed}: unsafe pattern");
            }
        }
    }

    /// `time_limit_s` is a hard wall inside the cleanup's LPs too: an audit stopped by it (here
    /// a stop already passed) fails with the stop, and leaves the last audited pattern with the
    /// certificates it had — the local re-certification and a drop trial change neither what
    /// is suppressed nor what is certified, so auditing the pattern afterwards needs no LP.
    #[test]
    fn a_stopped_audit_keeps_the_audited_pattern_and_its_certificates() {
        let t = synthetic(1);
        let p = Problem::from_table(&t, None);
        let far = Deadline::after(600.0);
        let mut w = complete(&p, p.initial(), false, Construction::Auto, &far).unwrap();
        assert!(w.aud.check().unwrap().is_empty());
        let before = w.sup().to_vec();
        // LPs only, so that every certificate lost needs an LP (no combinatorial witness).
        w.aud.lp_only = true;
        w.aud.stop = Some(Instant::now());
        let e = w.aud.localize().unwrap_err();
        assert!(e.is_stop(), "{e}");
        // A secondary whose drop the cheap checks do not refuse and which loses certificates.
        let secondaries: Vec<usize> = (0..p.n()).filter(|&i| w.sup()[i] && p.fix[i] == Fix::Free).collect();
        let s = secondaries
            .into_iter()
            .find(|&i| {
                let lost = w.aud.remove(i);
                let audited = !lost.is_empty() && !w.refuted(i);
                w.aud.restore(i, lost);
                audited
            })
            .expect("a secondary whose drop needs an audit");
        let e = w.try_drop(s, false).unwrap_err();
        assert!(e.is_stop(), "{e}");
        assert_eq!(w.sup(), &before[..], "a stopped trial keeps the audited pattern");
        w.aud.stop = None;
        let lps = w.aud.lps;
        assert!(w.aud.check().unwrap().is_empty());
        assert_eq!(w.aud.lps, lps, "the certificates held before the stop were kept");
        // And a cleanup whose stop has passed by the time it starts changes nothing.
        assert_eq!(w.cleanup(false, 200, &Deadline::after(0.0)).unwrap(), 0);
        assert_eq!(w.sup(), &before[..]);
    }

    /// Group drop trials ([`Work::drop_groups`], as on a giant component): every level
    /// combination of the completed pattern's secondaries is tried once; the pattern stays
    /// LP-clean and never costs more, and some trial drops a group on these tables (the test
    /// can fail).
    #[test]
    fn group_drops_keep_the_pattern_audited() {
        let mut dropped_any = 0;
        for seed in 0..4 {
            let t = synthetic(seed);
            let p = Problem::from_table(&t, None);
            let far = Deadline::after(600.0);
            let mut w = complete(&p, p.initial(), false, Construction::Auto, &far).unwrap();
            let before = w.sup().to_vec();
            w.aud.keep_held = true;
            let mut dropped = 0;
            let tried = w.drop_groups(usize::MAX, false, &far, &mut dropped).unwrap();
            assert!(tried > 0, "seed {seed}");
            assert!(lp_clean(&p, w.sup().to_vec()), "seed {seed}: unsafe pattern");
            assert!(p.cost_of(w.sup()) <= p.cost_of(&before) + 1e-9, "seed {seed}");
            assert_eq!(dropped, before.iter().zip(w.sup()).filter(|(a, b)| **a && !**b).count(), "seed {seed}");
            dropped_any += dropped;
        }
        assert!(dropped_any > 0, "no group dropped on any table");
    }

    /// [`Auditor::column_cap`] stops a check like the hard stop, before any LP past it: with
    /// the cap at the columns already solved, a check that needs LPs fails with the stop and
    /// solves none; without it, the same check passes.
    #[test]
    fn a_column_cap_stops_the_audit_before_its_lps() {
        let t = synthetic(1);
        let p = Problem::from_table(&t, None);
        let far = Deadline::after(600.0);
        let w = complete(&p, p.initial(), false, Construction::Auto, &far).unwrap();
        let mut a = Auditor::new(&p, w.sup().to_vec());
        a.lp_only = true;
        a.column_cap = Some(0);
        let e = a.check().unwrap_err();
        assert!(e.is_stop(), "{e}");
        assert_eq!(a.lps, 0);
        a.column_cap = None;
        assert!(a.check().unwrap().is_empty());
        assert!(a.lps > 0);
    }

    /// A cleanup on a giant component (here every component, `local_trials_component = 0`)
    /// runs its group trials first, and one that drops a group ends the cleanup: no single
    /// trial follows (their counters stay put), and the pattern passes the LP audit.
    #[test]
    fn a_dropped_group_ends_the_cleanup() {
        let mut ended = 0;
        for seed in 0..4 {
            let t = synthetic(seed);
            let p = Problem::from_table(&t, None);
            let far = Deadline::after(600.0);
            let mut w = complete(&p, p.initial(), false, Construction::Auto, &far).unwrap();
            let before = p.cost_of(w.sup());
            (w.local_trials_component, w.group_trials) = (0, usize::MAX);
            let singles = |w: &Work| w.refused_cheaply + w.refused_by_audit + w.refused_undecided + w.accepted;
            let (s0, a0) = (singles(&w), w.accepted);
            let dropped = w.cleanup(false, usize::MAX, &far).unwrap();
            assert!(lp_clean(&p, w.sup().to_vec()), "seed {seed}: unsafe pattern");
            assert!(p.cost_of(w.sup()) <= before + 1e-9, "seed {seed}");
            if singles(&w) > s0 {
                // Single trials ran: then no group was dropped, every drop is a single one.
                assert_eq!(dropped, w.accepted - a0, "seed {seed}: single trials after a dropped group");
            } else if dropped > 0 {
                ended += 1;
            }
        }
        assert!(ended > 0, "no cleanup dropped a group");
    }

    /// Bounds the audit's batch LPs leave undecided are repaired with a hypercube each,
    /// certified by it, instead of one single LP each: the repair ends clean (the LP-only audit
    /// agrees) and its certificates hold.
    #[test]
    fn deferred_bounds_are_repaired_by_cubes() {
        let mut cubed = 0;
        for seed in 0..4 {
            let t = synthetic(seed);
            let p = Problem::from_table(&t, None);
            let far = Deadline::after(600.0);
            let mut w = Work::new(&p, p.initial());
            w.aud.defer_singles = Some(DeferSingles::ALL);
            w.repair_open(false, usize::MAX, &far).unwrap();
            cubed += w.cube_repairs;
            assert!(lp_clean(&p, w.sup().to_vec()), "seed {seed}: unsafe pattern");
            let (sup, rep) = w.into_certified(false).unwrap();
            assert!(rep.is_some_and(|r| r.is_clean()), "seed {seed}: certificates not re-verified");
            assert!(lp_clean(&p, sup), "seed {seed}");
        }
        assert!(cubed > 0, "no bound was deferred to the cube repair");
    }

    /// A deferral without LPs ([`DeferSingles::without_lps`], the cube assignment's repair on
    /// a giant component): the audit solves no component LP on a component at or above its
    /// size and fails the bounds the witnesses leave without a cut, below its size it is the
    /// plain audit; the repair then lays cubes for them and ends clean (the LP-only audit
    /// agrees), with its certificates re-verified.
    #[test]
    fn bounds_deferred_without_lps_are_repaired_by_cubes() {
        let (mut deferred, mut cubed) = (0, 0);
        for seed in 0..4 {
            let t = synthetic(seed);
            let p = Problem::from_table(&t, None);
            let far = Deadline::after(600.0);
            let closed = |defer: Option<DeferSingles>| {
                let mut w = Work::new(&p, p.initial());
                let primaries: Vec<u32> = (0..p.n()).filter(|&i| w.sup()[i]).map(|i| i as u32).collect();
                w.close(primaries);
                (w.aud.balls, w.aud.defer_singles) = (&[], defer);
                w
            };
            let mut w = closed(Some(DeferSingles::without_lps(0)));
            let fails = w.aud.check().unwrap();
            assert_eq!(w.aud.lps, 0, "seed {seed}: an LP on a deferred component");
            assert!(fails.iter().all(|f| f.cut.is_none()), "seed {seed}: a deferred bound with a cut");
            deferred += fails.len();
            // Components below the deferral's size: the plain audit's verdicts, cuts included.
            let mut below = closed(Some(DeferSingles::without_lps(p.n() + 1)));
            let mut plain = closed(None);
            let key = |f: &Failure| (f.sens, f.cut.is_some());
            let (b, q) = (below.aud.check().unwrap(), plain.aud.check().unwrap());
            assert_eq!(b.iter().map(key).collect::<Vec<_>>(), q.iter().map(key).collect::<Vec<_>>(), "seed {seed}");
            assert_eq!(below.aud.lps, plain.aud.lps, "seed {seed}");
            w.repair(false, &far).unwrap();
            cubed += w.cube_repairs;
            w.aud.defer_singles = None;
            assert!(lp_clean(&p, w.sup().to_vec()), "seed {seed}: unsafe pattern");
            let (sup, rep) = w.into_certified(false).unwrap();
            assert!(rep.is_some_and(|r| r.is_clean()), "seed {seed}: certificates not re-verified");
            assert!(lp_clean(&p, sup), "seed {seed}");
        }
        assert!(deferred > 0 && cubed > 0, "nothing deferred ({deferred}) or repaired by cubes ({cubed})");
    }

    /// An audit under a column cap (a group drop trial's, [`Work::try_drop_group`]) runs the
    /// two directions side by side, each within half the cap: its verdicts and LP count are
    /// the same on one thread and on two.
    #[test]
    fn a_capped_audit_is_the_same_on_any_thread_count() {
        for seed in 0..3 {
            let t = synthetic(seed);
            let run = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                pool.install(|| {
                    let p = Problem::from_table(&t, None);
                    let far = Deadline::after(600.0);
                    let w = complete(&p, p.initial(), false, Construction::Auto, &far).unwrap();
                    let mut a = Auditor::new(&p, w.sup().to_vec());
                    a.lp_only = true;
                    a.column_cap = Some(4 * p.n());
                    let verdict = a.check().map(|f| f.iter().map(|f| f.sens).collect::<Vec<_>>()).ok();
                    (verdict, a.lps, a.lp_columns)
                })
            };
            let one = run(1);
            assert!(one.1 > 0, "seed {seed}: no LP under the cap");
            assert_eq!(one, run(2), "seed {seed}");
        }
    }

    /// The cube repair's order comes from cube searches run in parallel: the repaired pattern
    /// is the same on one thread and on two.
    #[test]
    fn cube_repair_is_the_same_on_any_thread_count() {
        let mut cubed = 0;
        for seed in 0..4 {
            let t = synthetic(seed);
            let run = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                pool.install(|| {
                    let p = Problem::from_table(&t, None);
                    let mut w = Work::new(&p, p.initial());
                    w.aud.defer_singles = Some(DeferSingles::ALL);
                    w.repair_open(false, usize::MAX, &Deadline::after(600.0)).unwrap();
                    (w.sup().to_vec(), w.cube_repairs)
                })
            };
            let one = run(1);
            cubed += one.1;
            assert_eq!(one, run(2), "seed {seed}");
        }
        assert!(cubed > 0, "no bound was deferred to the cube repair");
    }
}
