//! The `Modular` method: HiTaS-style decomposition of a hierarchical table into 1-level
//! subtables, protected top-down, merged, then audited and repaired globally.
//!
//! A subtable is one parent node per dimension with its direct children (a dimension with
//! no hierarchy contributes its total alone): a non-hierarchical table whose relations are a
//! subset of the global ones. Its level is the sum of the parents' depths. Levels are solved in
//! order; within a level, subtables are independent and solved in parallel by the pure
//! [`solve_subtable`] (the unit to ship to cluster executors), with the statuses decided by
//! earlier levels fixed: published cells are `Protected`, suppressed ones must stay suppressed
//! and, when they are marginals, are protected again inside the lower subtable (HiTaS), with
//! the largest protection level of the subtable that suppressed them. Merge rule: a shared
//! cell suppressed by any subtable is suppressed. A subtable that cannot be protected with its
//! inherited published cells is retried with them free (at 1000× cost) and reported as
//! `Relaxed`; one that still fails is `Failed` and left to the repair.
//! Trivial (single-child) levels: a marginal equal to its only part is as sensitive as the
//! part, so sensitivity is propagated along single-part relations before decomposing.
//! Finally the merged pattern gets the whole-table audit and repair of the fast method
//! (tau-Argus's modular method is known to leave cells under-protected against a whole-table
//! attacker; this one ends clean or fails).
//! Budgets: each subtable's solve is bounded by its method's work units, not by a share of the
//! time; the time limit is a hard stop: levels not started before it are `Skipped` (left to the
//! global completion) and the stop is reported.

use std::time::Instant;

use rayon::prelude::*;

use super::budget::Deadline;
use super::problem::{Fix, Problem};
use super::task::{solve_table_task, TableOutcome, TableTask};
use super::trace::trace;
use super::{exact, fast, Method, ProtectOptions, SuppressError};
use crate::table::relations::FastMap;
use crate::table::{Cell, CellStatus, Dimension, Table};

/// One 1-level subtable: its cells (global indices, local order) and a local table skeleton.
#[derive(Debug, Clone)]
pub struct SubTable {
    /// Parent node per dimension.
    pub nodes: Vec<u32>,
    /// Sum of the parents' depths (processing order).
    pub level: u32,
    /// Global cell index of each local cell.
    pub cells: Vec<u32>,
    /// The local table (statuses and protection levels to be set by the caller).
    pub table: Table,
}

/// Outcome of one subtable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SubtableStatus {
    /// Protected with inherited statuses fixed.
    Solved,
    /// Protected after freeing inherited published cells.
    Relaxed,
    /// Not protected locally (left to the global repair).
    Failed,
    /// Not solved: the time limit was reached before or during it (left to the global repair).
    Skipped,
}

/// Per-subtable figures in a [`super::Protection`].
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SubtableReport {
    /// Parent node per dimension.
    pub nodes: Vec<u32>,
    /// Level.
    pub level: u32,
    /// Cells.
    pub cells: usize,
    /// Cells newly suppressed by this subtable.
    pub added: usize,
    /// Outcome.
    pub status: SubtableStatus,
    /// Seconds.
    pub seconds: f64,
    /// Where it was solved (cluster executor identity; empty in-process). Not deterministic.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub worker: String,
}

/// Decomposes `table` into its 1-level subtables, ordered by (level, nodes).
pub fn subtables(table: &Table) -> Result<Vec<SubTable>, SuppressError> {
    let dims = table.dims();
    let children: Vec<Vec<Vec<usize>>> = dims.iter().map(|d| d.children()).collect();
    let depths: Vec<Vec<u32>> = dims.iter().map(|d| d.depths()).collect();
    let mut groups: FastMap<Vec<u32>, Vec<u32>> = FastMap::default();
    let mut opts: Vec<Vec<u32>> = vec![Vec::new(); dims.len()];
    for (i, c) in table.cells().iter().enumerate() {
        for (d, o) in opts.iter_mut().enumerate() {
            o.clear();
            let n = c.coord[d] as usize;
            if !children[d][n].is_empty() || dims[d].parent[n].is_none() {
                o.push(n as u32);
            }
            if let Some(p) = dims[d].parent[n] {
                o.push(p as u32);
            }
        }
        let mut key = vec![0u32; dims.len()];
        let count: usize = opts.iter().map(|o| o.len()).product();
        for mut k in 0..count {
            for d in 0..dims.len() {
                key[d] = opts[d][k % opts[d].len()];
                k /= opts[d].len();
            }
            groups.entry(key.clone()).or_default().push(i as u32);
        }
    }
    let mut keys: Vec<(u32, Vec<u32>)> =
        groups.keys().map(|k| (k.iter().enumerate().map(|(d, &n)| depths[d][n as usize]).sum(), k.clone())).collect();
    keys.sort();
    let mut out = Vec::with_capacity(keys.len());
    for (level, nodes) in keys {
        let mut cells = groups.remove(&nodes).expect("key from the map");
        cells.sort_unstable();
        // Local dimensions: node 0 = the parent, then its children.
        let mut local_of: Vec<FastMap<u32, u32>> = Vec::new();
        let mut ldims = Vec::new();
        for (d, dim) in dims.iter().enumerate() {
            let p = nodes[d] as usize;
            let mut codes = vec![dim.codes[p].clone()];
            let mut parent = vec![None];
            let mut m: FastMap<u32, u32> = FastMap::default();
            m.insert(p as u32, 0);
            for &ch in &children[d][p] {
                m.insert(ch as u32, codes.len() as u32);
                codes.push(dim.codes[ch].clone());
                parent.push(Some(0));
            }
            local_of.push(m);
            ldims.push(Dimension { name: dim.name.clone(), codes, parent });
        }
        let lcells: Vec<Cell> = cells
            .iter()
            .map(|&g| {
                let c = &table.cells()[g as usize];
                let mut lc = c.clone();
                lc.coord = c.coord.iter().enumerate().map(|(d, n)| local_of[d][n]).collect();
                lc
            })
            .collect();
        let mut local = Table::new(ldims, lcells)?;
        for (k, &g) in cells.iter().enumerate() {
            let _ = local.set_bounds(k, table.lower_bounds()[g as usize], table.upper_bounds()[g as usize]);
        }
        out.push(SubTable { nodes, level, cells, table: local });
    }
    Ok(out)
}

/// Protects one subtable whose statuses and protection levels are set (`Primary` = must be
/// protected, `Secondary` = must stay suppressed, `Protected` = must be published); returns
/// the local pattern. Pure: the unit of work shipped to executors.
pub(crate) fn solve_subtable(
    local: &Table,
    opts: &ProtectOptions,
    deadline: &Deadline,
) -> Result<(Vec<bool>, Option<f64>), SuppressError> {
    let p = Problem::from_table(local, None);
    match opts.modular_inner {
        Method::Optimal if p.n() <= opts.optimal_max_cells => {
            super::exact::run(&p, &subtable_options(opts), None, deadline)
        }
        _ => Ok((fast::run(&p, &large_subtable_options(opts), deadline)?, None)),
    }
}

/// `opts` for a subtable too large for the exact model (above `optimal_max_cells`), solved by
/// the fast method: its cleanup gets the trials asked for, else one per
/// [`LARGE_SUBTABLE_SECONDS_PER_TRIAL`] of the limit (100 at the 600-s default), not every
/// candidate. Why: on a 5-dimensional table (c5-persons, top subtable of 12,021 cells, 5,067
/// candidates at ~2 s a trial) the cleanup of every candidate ran until the time limit stopped
/// it, leaving the lower levels unsolved and a pattern that depended on the machine's speed.
fn large_subtable_options(opts: &ProtectOptions) -> ProtectOptions {
    let trials = opts
        .cleanup_trials
        .unwrap_or_else(|| (opts.budget_limit_s() / LARGE_SUBTABLE_SECONDS_PER_TRIAL).floor() as usize);
    ProtectOptions { cleanup_trials: Some(trials), ..opts.clone() }
}

/// Seconds of the time limit per drop trial of a large subtable's cleanup
/// ([`large_subtable_options`]): a trial there costs ~2 s, and HiTaS still has the lower levels
/// and the whole-table completion to run within the limit.
const LARGE_SUBTABLE_SECONDS_PER_TRIAL: f64 = 6.0;

/// Master MIP solves, branch-and-bound nodes per solve, cutting-plane rounds and the relative
/// gap at which an exact subtable stops. Why a budget of its own: HiTaS solves hundreds of
/// subtables and the global audit and cleanup follow, so proving each one optimal is not worth
/// its time — the first master solves, each repaired into a clean pattern, come close to the
/// optimum, and HiGHS finds its solutions at the root (a flat table is one subtable, the whole
/// table). Measured: flat 901-cell enterprise table, singleton rule off: 1.033 % of the value
/// after one solve, proven optimum 1.028 % after fifteen; the README example's 924-cell salary
/// table, singleton rule on: 9.03 % with 10 nodes per solve, 100 and 500 nodes give the same
/// pattern at 2–5× the time, the fast method 23.9 %. Work units, so deterministic.
const SUBTABLE_EXACT_BUDGET: (usize, usize, usize, f64) = (3, 10, 30, 0.005);

/// `opts` with the exact model's budgets of one subtable ([`SUBTABLE_EXACT_BUDGET`]). Fixed,
/// not capped by `opts`: those are the budgets of a whole-table exact search, which starts
/// from HiTaS's pattern on large tables and must not get a worse start for a smaller budget.
/// The same for the cleanup: `cleanup_trials` is the budget of the whole table's cleanup
/// (`secondary.cleanup_trials`), not of each subtable's.
fn subtable_options(opts: &ProtectOptions) -> ProtectOptions {
    let (master_solves, mip_nodes, optimal_lp_rounds, optimal_gap) = SUBTABLE_EXACT_BUDGET;
    ProtectOptions {
        master_solves,
        mip_nodes,
        optimal_lp_rounds,
        optimal_gap,
        // The subtables stop on `optimal_gap` alone, whatever gap the whole table's search has.
        secondary_gap: 0.0,
        cleanup_trials: None,
        cleanup_columns: None,
        ..opts.clone()
    }
}

/// The relative gap between HiTaS's merged pattern and the lower bound above which the modular
/// completion gets a cleanup without being asked: the target for the gap a user should
/// see (20 %). Below it the repaired merged pattern is published as it is.
pub const CLEANUP_GAP: f64 = 0.20;

/// Seconds of the time limit (`time_limit_s`) per drop trial of that cleanup: it runs at least
/// one trial per this many seconds ([`cleanup_gap_trials`]; 250 at the 600-s default). A work
/// budget derived from the job, never from the clock, so the pattern is the same on any
/// machine; the limit stays the hard stop. Measured on the census-shaped suite (BENCHMARKS.md,
/// sessions 35 and 43; release build, singleton rule off): only c3-enterprises (11,317 cells,
/// 61 % of them primary; gap 65 %) is above the threshold. Since the hot starts of session 43
/// its cleanup takes 88 s for 100 trials (39.39 % of the value), 187 s for 250 (39.12 %,
/// below tau-Argus OPT's time-limited 39.18 %) and 244 s for 300 (39.04 %); the default run
/// (250 trials) takes 212.9 s in all, 35 % of the limit that buys it, so a machine 2.8× slower
/// still publishes the same pattern (it was 6 s a trial: 100 trials, 189 s, 39.41 %). c3-persons (8 %),
/// c4-persons (3 %) and c3-ent-flat (19 %) are below the threshold and keep their time.
pub const CLEANUP_SECONDS_PER_TRIAL: f64 = 2.4;

/// Drop trials the cleanup the modular completion gets without being asked runs at least,
/// under time limit `time_limit_s` ([`CLEANUP_SECONDS_PER_TRIAL`]).
pub fn cleanup_gap_trials(time_limit_s: f64) -> usize {
    (time_limit_s / CLEANUP_SECONDS_PER_TRIAL).floor() as usize
}

/// The cleanup budget (`cleanup_columns`) of the completion of HiTaS's merged pattern `merged`
/// over `p`, decided on `lower_bound`, a lower bound on the secondary cost (the caller's:
/// [`super::bound_before_pattern`] and the subtables' bound on the whole table, [`Levels`]);
/// the options decide alone when they ask for a budget, the singleton rule's own cleanup, or
/// none at all.
///
/// The budget: every candidate, until the cleanup has run at least [`cleanup_gap_trials`]
/// trials *and* spent the singleton rule's attacker-LP columns
/// ([`exact::completion_cleanup_columns`]). Why both: a trial's cost differs by orders of
/// magnitude between tables. Measured (BENCHMARKS.md, "Session 75"): the trials alone stopped
/// EIA's cleanup after 250 of its 424 candidates (0.1 s; 0.586 % of the value where all of
/// them give 0.577 %) and c4-hier's after 250 of 6,537 (most refused without an LP; all of them
/// take ~45 s more and give 4.87 % instead of 4.91 %); the columns alone ended c3-enterprises'
/// after 126 trials (39.32 % instead of 39.12 %), where the 250 trials spend ~36 M columns.
pub(crate) fn default_cleanup(p: &Problem, merged: &[bool], opts: &ProtectOptions, lower_bound: f64) -> Option<usize> {
    if opts.cleanup_trials.is_some() || opts.cleanup_columns.is_some() || opts.singleton_rule || !opts.cleanup {
        return opts.cleanup_columns;
    }
    let cost = super::secondary_cost_of(p, &super::output_statuses(p, merged));
    let gap = super::relative_gap(cost, lower_bound);
    trace(format_args!("HiTaS's merged pattern: {:.1} % gap to the lower bound", 100.0 * gap));
    (gap > CLEANUP_GAP).then_some(exact::completion_cleanup_columns(opts.budget_limit_s()))
}

/// Sensitive cells plus marginals equal to a sensitive part (or parts equal to a sensitive
/// marginal) through single-part relations, with their protection levels.
fn propagate_trivial(p: &Problem) -> FastMap<u32, (f64, f64)> {
    let mut pl: FastMap<u32, (f64, f64)> = p.sens.iter().map(|s| (s.cell, (s.lpl, s.upl.max(s.spl)))).collect();
    loop {
        let mut changed = false;
        for r in 0..p.rel.len() {
            if p.rel.parts(r).len() != 1 {
                continue;
            }
            let (t, c) = (p.rel.total(r), p.rel.parts(r)[0]);
            for (a, b) in [(t, c), (c, t)] {
                if let Some(&v) = pl.get(&a) {
                    if !pl.contains_key(&b) && p.fix[b as usize] != Fix::Published {
                        pl.insert(b, v);
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            return pl;
        }
    }
}

/// One subtable ready to solve: the local table with statuses, protection levels and bounds
/// set from the levels above. Built by the driver ([`run`]), solved by [`solve_task`] wherever
/// the [`SubtableSolver`] sends it (in-process or on a cluster executor).
#[derive(Debug, Clone)]
pub struct SubtableTask {
    /// The local table (`Primary` = protect, `Secondary` = keep suppressed, `Protected` = keep
    /// published, `Safe` = free).
    pub local: Table,
    /// Local cells published by an earlier level that the retry may free (at 1000× cost).
    pub relaxable: Vec<usize>,
    /// The local pattern kept when the subtable cannot be protected (left to the repair).
    pub fallback: Vec<bool>,
    /// Solver options; `time_limit_s` is the time left to the whole table when its level began.
    pub opts: ProtectOptions,
    /// The whole table's hard stop, in milliseconds since the UNIX epoch: a subtable that
    /// waits in a queue (rayon's, or an executor's) gets the time left when it starts, not
    /// `time_limit_s` afresh — a level of 300 subtables once ran 50 min under a 1,400-s limit.
    /// Wall-clock time, so it holds across the machines of a cluster.
    pub stop_unix_ms: u64,
}

/// Milliseconds since the UNIX epoch `seconds` from now (the stop of a [`SubtableTask`]).
pub fn unix_ms_after(seconds: f64) -> u64 {
    (super::budget::unix_ms_now() + super::budget::span_s(seconds) * 1e3) as u64
}

/// The hard stop of `task` as seen from here: the time left until its `stop_unix_ms`, and
/// never more than its `time_limit_s`.
fn task_deadline(task: &SubtableTask) -> Deadline {
    let left_s = (task.stop_unix_ms as f64 - super::budget::unix_ms_now()) / 1e3;
    Deadline::left_of(left_s.min(task.opts.time_limit_s), task.opts.budget_limit_s())
}

/// What [`solve_task`] returns for one subtable.
#[derive(Debug, Clone, PartialEq)]
pub struct SubtableOutcome {
    /// Suppression pattern over the local cells.
    pub pattern: Vec<bool>,
    /// Solved, relaxed or failed.
    pub status: SubtableStatus,
    /// Seconds spent solving.
    pub seconds: f64,
    /// The exact model's lower bound on the local secondary cost (`Solved` by it only).
    pub lower_bound: Option<f64>,
    /// Where it ran (an executor identity on a cluster; empty in-process).
    pub worker: String,
}

/// Solves the independent subtables of one level; results in task order. The modular method
/// calls it once per level, so an implementation can ship a level's subtables to a cluster
/// (see `crate::cluster`) while the decomposition, merge and audit stay with the caller.
pub trait SubtableSolver: Sync {
    /// Solves `tasks`, returning one outcome per task in the same order.
    fn solve_level(&self, tasks: Vec<SubtableTask>) -> Result<Vec<SubtableOutcome>, SuppressError>;

    /// Runs one whole-table protection with its final audit ([`super::task`]): the other
    /// methods, the modular completion, linked groups. In process by default.
    fn protect_table(&self, task: TableTask) -> Result<TableOutcome, SuppressError> {
        solve_table_task(&task)
    }

    /// Whether [`Self::protect_table`]'s outcomes come from elsewhere (an executor, a
    /// serialised payload) and must be re-audited by the caller before anything is published
    /// ([`super::task::verify_outcome`]). `false` only for solvers that run the audit in this
    /// process.
    fn untrusted(&self) -> bool {
        true
    }
}

/// Solves subtables in this process, in parallel (rayon).
#[derive(Debug, Clone, Copy, Default)]
pub struct InProcess;

impl SubtableSolver for InProcess {
    fn solve_level(&self, tasks: Vec<SubtableTask>) -> Result<Vec<SubtableOutcome>, SuppressError> {
        tasks.par_iter().map(solve_task).collect()
    }

    fn untrusted(&self) -> bool {
        false // the final audit ran in this process, on these tables
    }
}

/// Solves one prepared subtable: with inherited statuses fixed, else with the relaxable cells
/// freed, else returns the fallback pattern as `Failed`. Pure (depends only on the task), so
/// it gives the same pattern on any executor.
pub fn solve_task(task: &SubtableTask) -> Result<SubtableOutcome, SuppressError> {
    let t0 = Instant::now();
    let done = |pattern, status| SubtableOutcome {
        pattern,
        status,
        seconds: t0.elapsed().as_secs_f64(),
        lower_bound: None,
        worker: String::new(),
    };
    let deadline = task_deadline(task);
    if deadline.reached() {
        return Ok(done(task.fallback.clone(), SubtableStatus::Skipped));
    }
    match solve_subtable(&task.local, &task.opts, &deadline) {
        // The bound is the local problem's; a relaxed retry changes costs, so only here.
        Ok((x, lower_bound)) => return Ok(SubtableOutcome { lower_bound, ..done(x, SubtableStatus::Solved) }),
        Err(SuppressError::Infeasible { .. } | SuppressError::Unprotected { .. }) => {}
        Err(SuppressError::TimeLimit { .. }) => return Ok(done(task.fallback.clone(), SubtableStatus::Skipped)),
        Err(e) => return Err(e),
    }
    let mut local = task.local.clone();
    for &k in &task.relaxable {
        local.set_status(k, CellStatus::Safe);
        local.set_cost(k, local.cells()[k].cost * 1000.0 + 1.0);
    }
    match solve_subtable(&local, &task.opts, &deadline) {
        Ok((x, _)) => Ok(done(x, SubtableStatus::Relaxed)),
        Err(SuppressError::Infeasible { .. } | SuppressError::Unprotected { .. }) => {
            Ok(done(task.fallback.clone(), SubtableStatus::Failed))
        }
        Err(SuppressError::TimeLimit { .. }) => Ok(done(task.fallback.clone(), SubtableStatus::Skipped)),
        Err(e) => Err(e),
    }
}

/// What [`run_levels`] returns.
pub(crate) struct Levels {
    /// The merged pattern; it still needs the global completion and audit ([`super::task`]:
    /// closure, repair, cleanup).
    pub merged: Vec<bool>,
    /// Per-subtable figures.
    pub reports: Vec<SubtableReport>,
    /// A lower bound on the whole table's secondary cost from its subtables: the exact
    /// model's bound when the only subtable is the whole table (a table without hierarchies).
    /// Its local problem may mark more cells primary (those equal to a sensitive cell through
    /// a single-part relation, which every pattern suppresses), so it bounds the table's
    /// optimum from below. A subtable of a hierarchical table bounds nothing global: its cells'
    /// protection may use cells outside it.
    pub whole_table_bound: Option<f64>,
}

/// Protects the subtables of `table` (whose flat problem is `p`) top-down, each level's with
/// `solver`. Levels not started before the hard stop are `Skipped` (recorded in `deadline`).
pub(crate) fn run_levels(
    table: &Table,
    p: &Problem,
    opts: &ProtectOptions,
    deadline: &Deadline,
    solver: &dyn SubtableSolver,
) -> Result<Levels, SuppressError> {
    let subs = subtables(table)?;
    let sens = propagate_trivial(p);
    let mut sup = p.initial();
    let mut decided = vec![false; p.n()];
    let mut inherit: Vec<f64> = vec![0.0; p.n()];
    let mut reports = Vec::with_capacity(subs.len());
    let mut whole_table_bound = None;
    let mut start = 0;
    while start < subs.len() {
        let level = subs[start].level;
        let end = start + subs[start..].iter().take_while(|s| s.level == level).count();
        // Each subtable stops on its own work budget; the time left is only its hard stop. A
        // subtable stopped by it returns after the global stop, which records it below.
        let mut tasks: Vec<SubtableTask> = subs[start..end]
            .iter()
            .map(|s| prepare(s, p, &sens, &sup, &decided, &inherit, opts, deadline.left_s()))
            .collect();
        if subs.len() > 1 {
            // Hundreds of subtables, then the whole table's repair: the greedy repair of the
            // master's patterns, as measured (sessions 39–57), not the search over supersets
            // that a flat table (one subtable, the whole table) gets.
            //
            // Nor the singleton rule: it is relation-local, a subtable's singleton rows guard
            // only the subtable's relations, and the merged pattern kept secondaries the whole
            // table did not need. The whole-table completion enforces it instead (its repair adds
            // a third cell wherever a singleton could recover a sensitive cell; the singleton
            // rule's cleanup follows). Measured (BENCHMARKS.md, session 72; `auto`, rule on):
            // Adult 2.44 → 2.22 % of the value (tau-Argus OPT, without the rule, 2.14 %),
            // c3-persons 3.53 → 3.42 %, CASC EIA 0.578 → 0.579 %, c2-persons 2.21 → 2.23 %. A
            // flat table keeps the rule in its exact model, which sees every relation and gives
            // the table's bound.
            for t in &mut tasks {
                t.opts.master_repair_solves = 0;
                t.opts.singleton_rule = false;
            }
        }
        let results = if deadline.reached() {
            let skip = |t: SubtableTask| SubtableOutcome {
                pattern: t.fallback,
                status: SubtableStatus::Skipped,
                seconds: 0.0,
                lower_bound: None,
                worker: String::new(),
            };
            tasks.into_iter().map(skip).collect()
        } else {
            let t0 = Instant::now();
            let r = solver.solve_level(tasks)?;
            if !deadline.reached() && r.iter().any(|o| o.status == SubtableStatus::Skipped) {
                deadline.record_hit(); // an executor's clock saw the stop first
            }
            trace(format_args!(
                "modular level {level}: {} subtables, {} cells, {:.1}s (largest {} cells, slowest {:.1}s)",
                end - start,
                subs[start..end].iter().map(|s| s.cells.len()).sum::<usize>(),
                t0.elapsed().as_secs_f64(),
                subs[start..end].iter().map(|s| s.cells.len()).max().unwrap_or(0),
                r.iter().map(|o| o.seconds).fold(0.0, f64::max)
            ));
            r
        };
        if results.len() != end - start {
            return Err(SuppressError::Distributed(format!(
                "level {level}: the subtable solver returned {} results for {} subtables",
                results.len(),
                end - start
            )));
        }
        for (s, out) in subs[start..end].iter().zip(results) {
            if subs.len() == 1 && s.cells.len() == p.n() && out.status == SubtableStatus::Solved {
                whole_table_bound = out.lower_bound;
            }
            let local = &out.pattern;
            if local.len() != s.cells.len() {
                return Err(SuppressError::Distributed(format!(
                    "subtable {:?}: the solver returned a pattern of {} cells for {}",
                    s.nodes,
                    local.len(),
                    s.cells.len()
                )));
            }
            let max_pl = s.cells.iter().filter_map(|g| sens.get(g)).map(|&(l, u)| l.max(u)).fold(0.0, f64::max);
            let mut added = 0;
            for (k, &g) in s.cells.iter().enumerate() {
                let g = g as usize;
                if local[k] && !sup[g] {
                    sup[g] = true;
                    added += 1;
                }
                if local[k] && !sens.contains_key(&(g as u32)) {
                    inherit[g] = inherit[g].max(max_pl.min(p.capacity(g)));
                }
            }
            reports.push(SubtableReport {
                nodes: s.nodes.clone(),
                level,
                cells: s.cells.len(),
                added,
                status: out.status,
                seconds: out.seconds,
                worker: out.worker,
            });
        }
        for s in &subs[start..end] {
            for &g in &s.cells {
                decided[g as usize] = true;
            }
        }
        start = end;
    }
    Ok(Levels { merged: sup, reports, whole_table_bound })
}

/// The task of subtable `s` given the decisions of the levels above.
#[allow(clippy::too_many_arguments)]
fn prepare(
    s: &SubTable,
    p: &Problem,
    sens: &FastMap<u32, (f64, f64)>,
    sup: &[bool],
    decided: &[bool],
    inherit: &[f64],
    opts: &ProtectOptions,
    time_limit_s: f64,
) -> SubtableTask {
    let mut local = s.table.clone();
    let mut relaxable = Vec::new();
    for (k, &g) in s.cells.iter().enumerate() {
        let g = g as usize;
        let (status, lpl, upl) = if let Some(&(l, u)) = sens.get(&(g as u32)) {
            (CellStatus::Primary, l, u)
        } else if p.fix[g] == Fix::Published {
            (CellStatus::Protected, 0.0, 0.0)
        } else if decided[g] && sup[g] && inherit[g] > 0.0 {
            (CellStatus::Primary, inherit[g], inherit[g])
        } else if sup[g] {
            (CellStatus::Secondary, 0.0, 0.0)
        } else if decided[g] {
            relaxable.push(k);
            (CellStatus::Protected, 0.0, 0.0)
        } else {
            (CellStatus::Safe, 0.0, 0.0)
        };
        local.set_status(k, status);
        local.set_protection(k, lpl, upl, 0.0);
    }
    let fallback = s.cells.iter().map(|&g| sup[g as usize]).collect();
    let stop_unix_ms = unix_ms_after(time_limit_s);
    SubtableTask { local, relaxable, fallback, opts: opts.with_time_left(time_limit_s), stop_unix_ms }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A synthetic table: frequency rule 3, protection level 10 %.
    fn synth(dims: Vec<Vec<usize>>, density: f64, mean_freq: f64, seed: u64) -> Table {
        let spec = crate::table::synth::SynthSpec { dims, density, mean_freq, min_freq: 3, protection: 0.1, seed };
        crate::table::synth::generate(&spec).unwrap()
    }

    /// Region: 2 groups x 2 codes, each with a single child (trivial level) x sex (2 codes).
    fn table() -> Table {
        synth(vec![vec![2, 2, 1], vec![2]], 1.0, 4.0, 5)
    }

    #[test]
    fn subtables_are_one_level_and_cover_every_cell() {
        let t = table();
        let subs = subtables(&t).unwrap();
        // Internal nodes: region has Total, 2 groups, 4 codes with a trivial child = 7;
        // sex has Total = 1: 7 subtables.
        assert_eq!(subs.len(), 7);
        let mut covered = vec![false; t.cells().len()];
        for s in &subs {
            for d in s.table.dims() {
                assert!(d.parent.iter().skip(1).all(|p| *p == Some(0)), "one level");
            }
            for &g in &s.cells {
                covered[g as usize] = true;
            }
            // Local relations are global relations: local additivity held in Table::new.
            assert!(!s.table.relations().is_empty());
        }
        assert!(covered.iter().all(|c| *c));
        assert!(subs.windows(2).all(|w| w[0].level <= w[1].level));
        // A subtable with its statuses set is solved by the pure function.
        let s = subs.last().unwrap();
        let (x, _) = solve_subtable(&s.table, &ProtectOptions::default(), &Deadline::after(60.0)).unwrap();
        for (k, c) in s.table.cells().iter().enumerate() {
            if c.status == CellStatus::Primary {
                assert!(x[k]);
            }
        }
    }

    /// Issue 11 item 3: on a table without hierarchy levels HiTaS has one subtable, the whole
    /// table, solved by the exact model: modular's cost equals the proven optimum.
    #[test]
    fn hitas_on_a_one_level_table_is_the_exact_optimum() {
        let mut checked = 0;
        for seed in 1..=6 {
            let t = synth(vec![vec![4], vec![2]], 0.9, 4.0, seed);
            assert_eq!(subtables(&t).unwrap().len(), 1);
            let opt = ProtectOptions { method: Method::Optimal, singleton_rule: false, ..Default::default() };
            let exact = match super::super::protect(&t, &opt) {
                Ok(p) => p,
                Err(SuppressError::Infeasible { .. }) => continue,
                Err(e) => panic!("seed {seed}: {e}"),
            };
            if exact.gap.is_none_or(|g| g > 1e-9) {
                continue;
            }
            let hitas = super::super::protect(
                &t,
                &ProtectOptions { method: Method::Modular, modular_inner: Method::Optimal, ..opt },
            )
            .unwrap();
            assert!(
                (hitas.secondary_cost - exact.secondary_cost).abs() <= 1e-6 * exact.secondary_cost.max(1.0),
                "seed {seed}: modular {} vs optimal {}",
                hitas.secondary_cost,
                exact.secondary_cost
            );
            checked += 1;
        }
        assert!(checked >= 3, "only {checked} tables with a proven optimum");
    }

    /// Issue 11 item 3: subtables are solved by the exact model (within the subtable budget,
    /// which these small subtables never exhaust). On the top subtable of
    /// 2-level tables, the pattern equals the optimum found by brute
    /// force over every pattern of the free cells, each checked by the independent audit.
    #[test]
    fn hitas_subtables_are_solved_exactly() {
        let mut checked = 0;
        for seed in 1..=16 {
            let t = synth(vec![vec![4, 2], vec![3]], 0.6, 1.2, seed);
            let o = ProtectOptions {
                method: Method::Modular,
                modular_inner: Method::Optimal,
                singleton_rule: false,
                ..Default::default()
            };
            let p = Problem::from_table(&t, None);
            let top = &subtables(&t).unwrap()[0];
            let sens = propagate_trivial(&p);
            let task = prepare(top, &p, &sens, &p.initial(), &vec![false; p.n()], &vec![0.0; p.n()], &o, 60.0);
            let local = &task.local;
            let Ok((exact, bound)) = solve_subtable(local, &o, &Deadline::after(60.0)) else { continue };
            let cost =
                |x: &[bool]| -> f64 { local.cells().iter().zip(x).filter(|(_, &s)| s).map(|(c, _)| c.cost).sum() };
            let free: Vec<usize> =
                (0..local.cells().len()).filter(|&k| local.cells()[k].status == CellStatus::Safe).collect();
            if exact.iter().zip(local.cells()).all(|(&x, c)| !x || c.status != CellStatus::Safe) || free.len() > 14 {
                continue; // no secondary needed, or too many patterns to enumerate
            }
            let mut best = f64::INFINITY;
            for mask in 0u32..(1 << free.len()) {
                let mut st = local.statuses();
                for (b, &k) in free.iter().enumerate() {
                    if mask >> b & 1 == 1 {
                        st[k] = CellStatus::Secondary;
                    }
                }
                let x: Vec<bool> = st.iter().map(|s| s.is_suppressed()).collect();
                if cost(&x) < best && super::super::audit(local, &st, false, &Default::default()).unwrap().is_clean() {
                    best = cost(&x);
                }
            }
            assert!((cost(&exact) - best).abs() <= 1e-6 * best.max(1.0), "seed {seed}: {} vs {best}", cost(&exact));
            // Its bound is on the secondary cost, proven optimal here: the optimum's secondaries.
            let fixed = cost(&local.cells().iter().map(|c| c.status.is_suppressed()).collect::<Vec<_>>());
            let bound = bound.unwrap_or_else(|| panic!("seed {seed}: the exact model gave no bound"));
            assert!(
                (bound - (best - fixed)).abs() <= 1e-6 * best.max(1.0),
                "seed {seed}: bound {bound}, optimum {}",
                best - fixed
            );
            checked += 1;
        }
        assert!(checked >= 3, "only {checked} top subtables needed secondaries");
    }

    /// A table without hierarchies is one subtable, the whole table: its exact model's bound
    /// is the table's, so `modular` reports what its subtable's search proves: never above the
    /// optimum, on some small tables the optimum itself (within the subtable budget), and at or
    /// above the bound the table's relations give alone. Hierarchical tables report none.
    #[test]
    fn a_flat_tables_modular_bound_is_its_exact_models() {
        let base = ProtectOptions { method: Method::Modular, singleton_rule: false, ..Default::default() };
        let (mut tighter, mut proven) = (0, 0);
        for seed in 20..28 {
            let dims = if seed % 2 == 0 { vec![vec![4], vec![5]] } else { vec![vec![3], vec![4], vec![2]] };
            let t = synth(dims, 0.9, 3.0, seed);
            let p = Problem::from_table(&t, None);
            let levels = run_levels(&t, &p, &base, &Deadline::after(600.0), &InProcess).unwrap();
            let Some(bound) = levels.whole_table_bound else {
                panic!("seed {seed}: no bound from the whole-table subtable")
            };
            let optimal =
                super::super::protect(&t, &ProtectOptions { method: Method::Optimal, ..base.clone() }).unwrap();
            assert_eq!(optimal.gap, Some(0.0), "seed {seed}: optimal proves these small tables");
            let tol = 1e-6 * optimal.secondary_cost.max(1.0);
            assert!(
                bound <= optimal.secondary_cost + tol,
                "seed {seed}: {bound} above the optimum {}",
                optimal.secondary_cost
            );
            proven += usize::from(bound >= optimal.secondary_cost - tol);
            let modular = super::super::protect(&t, &base).unwrap();
            let lb = modular.lower_bound.unwrap();
            assert!(lb >= bound - tol && lb <= modular.secondary_cost + tol, "seed {seed}: {lb}, {bound}");
            let relations_alone = super::super::best_bound(&p, None, Some(modular.secondary_cost));
            assert!(lb >= relations_alone - tol, "seed {seed}");
            tighter += usize::from(lb > relations_alone + tol);
        }
        assert!(tighter > 0, "the exact bound is never tighter than the relations' on these tables");
        assert!(proven > 0, "the subtable's search proves no optimum on these tables");
        let t = table();
        let p = Problem::from_table(&t, None);
        assert_eq!(run_levels(&t, &p, &base, &Deadline::after(600.0), &InProcess).unwrap().whole_table_bound, None);
    }

    /// Under the singleton rule, HiTaS's subtables of a hierarchical table are solved without it
    /// (their merged pattern is the one of the rule off) and the whole-table completion enforces
    /// it: the published pattern passes the LP audit with the rule, also where the merged
    /// pattern broke it. A flat table is one subtable, and its exact model keeps the rule.
    #[test]
    fn the_singleton_rule_is_the_completions_on_hierarchical_tables() {
        use super::super::singleton::violations;
        let off = ProtectOptions { method: Method::Modular, singleton_rule: false, ..Default::default() };
        let on = ProtectOptions { singleton_rule: true, ..off.clone() };
        let (mut repaired, mut flat_kept) = (0, 0);
        for seed in 30..38 {
            let hier = seed % 2 == 0;
            let dims = if hier { vec![vec![2, 3], vec![3, 2], vec![2]] } else { vec![vec![4], vec![5]] };
            let t = synth(dims, 0.8, 2.0, seed);
            let p = Problem::from_table(&t, None);
            let merged =
                |o: &ProtectOptions| run_levels(&t, &p, o, &Deadline::after(600.0), &InProcess).unwrap().merged;
            let (m_on, m_off) = (merged(&on), merged(&off));
            if hier {
                assert_eq!(m_on, m_off, "seed {seed}: a subtable was solved under the singleton rule");
                repaired += usize::from(!violations(&p, &m_on).is_empty());
            } else {
                assert!(violations(&p, &m_on).is_empty(), "seed {seed}: the flat table's model broke the rule");
                flat_kept += usize::from(!violations(&p, &m_off).is_empty());
            }
            let prot = super::super::protect(&t, &on).unwrap();
            let a = crate::suppress::tests::lp_audit(&t, &prot.statuses, true, false);
            assert!(a.is_clean(), "seed {seed}: {:?}", a.singleton_violations);
        }
        assert!(repaired > 0, "no merged pattern needed the completion's singleton repair");
        assert!(flat_kept > 0, "no flat table needed the singleton rows");
    }

    /// `cleanup_trials` asks the modular completion for a cleanup also without the singleton
    /// rule (`Some(0)`: none at all): the pattern stays clean, never costs more than the one without
    /// it, and on some of these tables costs less.
    #[test]
    fn asked_cleanup_trials_clean_up_the_modular_pattern() {
        let mut cheaper = 0;
        for seed in 10..14 {
            let t = synth(vec![vec![2, 3], vec![3, 2], vec![2]], 0.8, 4.0, seed);
            let base = ProtectOptions { method: Method::Modular, singleton_rule: false, ..Default::default() };
            let plain = super::super::protect(&t, &ProtectOptions { cleanup_trials: Some(0), ..base.clone() }).unwrap();
            let cleaned = super::super::protect(&t, &ProtectOptions { cleanup_trials: Some(200), ..base }).unwrap();
            assert!(crate::suppress::tests::lp_audit(&t, &cleaned.statuses, false, false).is_clean(), "seed {seed}");
            assert!(cleaned.secondary_cost <= plain.secondary_cost + 1e-9, "seed {seed}");
            cheaper += usize::from(cleaned.secondary_cost < plain.secondary_cost - 1e-9);
        }
        assert!(cheaper > 0, "the asked cleanup never dropped a secondary");
    }

    /// Without a budget asked for, the modular completion cleans up exactly when HiTaS's merged
    /// pattern's gap to the lower bound is above [`CLEANUP_GAP`]: the default's pattern is the
    /// one of `cleanup_columns = completion_cleanup_columns(time_limit_s)` then, of
    /// `cleanup_trials = 0` otherwise, and both cases occur on these tables. The bound decided
    /// on is the one reported.
    #[test]
    fn the_default_cleans_up_hitas_patterns_far_from_the_bound() {
        let base = ProtectOptions { method: Method::Modular, singleton_rule: false, ..Default::default() };
        let (mut cleaned, mut kept) = (0, 0);
        for (dims, seed) in [
            (vec![vec![2, 3], vec![3, 2], vec![2]], 10),
            (vec![vec![2, 3], vec![3, 2], vec![2]], 11),
            (vec![vec![3, 2], vec![4], vec![2]], 12),
            (vec![vec![2, 2], vec![2, 3]], 13),
            (vec![vec![3], vec![4]], 14),
            (vec![vec![2, 1, 3], vec![5]], 15),
        ] {
            let t = synth(dims, 0.8, 4.0, seed);
            let p = Problem::from_table(&t, None);
            let levels = run_levels(&t, &p, &base, &Deadline::after(600.0), &InProcess).unwrap();
            let merged = levels.merged;
            let first = super::super::bound_before_pattern(&p);
            let bound = levels.whole_table_bound.map_or(first, |b| b.max(first));
            let columns = default_cleanup(&p, &merged, &base, bound);
            let gap = super::super::relative_gap(
                super::super::secondary_cost_of(&p, &super::super::output_statuses(&p, &merged)),
                bound,
            );
            let budget = exact::completion_cleanup_columns(base.time_limit_s);
            assert_eq!(columns, (gap > CLEANUP_GAP).then_some(budget), "seed {seed}");
            let default = super::super::protect(&t, &base).unwrap();
            let asked = match columns {
                Some(c) => ProtectOptions { cleanup_columns: Some(c), ..base.clone() },
                None => ProtectOptions { cleanup_trials: Some(0), ..base.clone() },
            };
            let explicit = super::super::protect(&t, &asked).unwrap();
            assert_eq!(default.statuses, explicit.statuses, "seed {seed}: gap {gap}");
            assert_eq!(default.lower_bound, Some(bound), "seed {seed}");
            cleaned += usize::from(columns.is_some());
            kept += usize::from(columns.is_none());
        }
        assert!(cleaned > 0 && kept > 0, "{cleaned} tables cleaned up, {kept} kept");
        // Asked budgets, the singleton rule's own cleanup and `cleanup = false` decide alone.
        let t = table();
        let p = Problem::from_table(&t, None);
        let all = vec![true; p.n()];
        assert_eq!(default_cleanup(&p, &all, &ProtectOptions { cleanup_trials: Some(7), ..base.clone() }, 0.0), None);
        assert_eq!(
            default_cleanup(&p, &all, &ProtectOptions { cleanup_columns: Some(7), ..base.clone() }, 0.0),
            Some(7)
        );
        assert_eq!(default_cleanup(&p, &all, &ProtectOptions { singleton_rule: true, ..base.clone() }, 0.0), None);
        assert_eq!(default_cleanup(&p, &all, &ProtectOptions { cleanup: false, ..base.clone() }, 0.0), None);
        assert_eq!(
            default_cleanup(&p, &all, &base, 0.0),
            Some(24_000_000),
            "everything suppressed: far above (600-s limit)"
        );
        // The budget follows the stated limit, not the clock: also with less of it left.
        let longer = ProtectOptions { time_limit_s: 1800.0, ..base.clone() };
        assert_eq!(default_cleanup(&p, &all, &longer, 0.0), Some(72_000_000));
        assert_eq!(default_cleanup(&p, &all, &longer.with_time_left(12.5), 0.0), Some(72_000_000));
    }

    /// The gap cleanup's two budgets ([`default_cleanup`]): with no columns to spend it runs
    /// exactly its minimum of trials, with columns to spare every candidate — the patterns of
    /// `cleanup_trials` = that minimum and = every candidate — and on some table the minimum
    /// drops cells and every candidate drops more.
    #[test]
    fn the_gap_cleanup_runs_its_trials_and_then_spends_its_columns() {
        // 60.0 s of limit: 25 trials at least ([`cleanup_gap_trials`]).
        let base =
            ProtectOptions { method: Method::Modular, singleton_rule: false, time_limit_s: 60.0, ..Default::default() };
        let min = cleanup_gap_trials(base.time_limit_s);
        assert_eq!(min, 25);
        let statuses = |o: ProtectOptions, t: &Table| super::super::protect(t, &o).unwrap().statuses;
        let (mut fewer, mut more) = (0, 0);
        for (dims, seed) in [
            (vec![vec![2, 3], vec![3, 2], vec![2]], 10),
            (vec![vec![2, 3], vec![3, 2], vec![2]], 11),
            (vec![vec![3, 2], vec![4], vec![2]], 12),
        ] {
            let t = synth(dims, 0.8, 4.0, seed);
            let trials = |n: usize| statuses(ProtectOptions { cleanup_trials: Some(n), ..base.clone() }, &t);
            let columns = |c: usize| statuses(ProtectOptions { cleanup_columns: Some(c), ..base.clone() }, &t);
            let (none, all) = (columns(0), columns(usize::MAX));
            assert_eq!(none, trials(min), "seed {seed}");
            assert_eq!(all, trials(usize::MAX), "seed {seed}");
            fewer += usize::from(none != trials(0));
            more += usize::from(none != all);
        }
        assert!(fewer > 0 && more > 0, "the minimum dropped cells on {fewer} tables, every candidate more on {more}");
    }

    #[test]
    fn modular_with_trivial_levels_ends_clean() {
        let t = table();
        let o = ProtectOptions { method: Method::Modular, ..Default::default() };
        let p = super::super::protect(&t, &o).unwrap();
        assert_eq!(p.audit.under_protected, 0);
        assert_eq!(p.subtables.len(), 7);
    }

    /// The hard stop is the whole table's: a subtable that starts after it (queued behind
    /// the others of a busy level, in rayon or on an executor) returns its fallback as
    /// `Skipped` at once instead of solving with `time_limit_s` afresh, and the driver records
    /// that the limit ended the search even when its own clock has not reached the stop yet.
    #[test]
    fn subtables_that_start_past_the_stop_are_skipped() {
        let t = table();
        let p = Problem::from_table(&t, None);
        let sens = propagate_trivial(&p);
        let o = ProtectOptions { method: Method::Modular, singleton_rule: false, ..Default::default() };
        let top = &subtables(&t).unwrap()[0];
        let mut task = prepare(top, &p, &sens, &p.initial(), &vec![false; p.n()], &vec![0.0; p.n()], &o, 60.0);
        task.fallback = vec![true; task.fallback.len()];
        let solved = solve_task(&task).unwrap();
        assert_eq!(solved.status, SubtableStatus::Solved);
        assert_ne!(solved.pattern, task.fallback, "a real solve, not the fallback");
        task.stop_unix_ms = unix_ms_after(0.0) - 1;
        let late = solve_task(&task).unwrap();
        assert_eq!((late.status, &late.pattern), (SubtableStatus::Skipped, &task.fallback));

        /// A solver whose executors all saw the stop pass.
        struct LateExecutors;
        impl SubtableSolver for LateExecutors {
            fn solve_level(&self, tasks: Vec<SubtableTask>) -> Result<Vec<SubtableOutcome>, SuppressError> {
                let skip = |t: SubtableTask| SubtableOutcome {
                    pattern: t.fallback,
                    status: SubtableStatus::Skipped,
                    seconds: 0.0,
                    lower_bound: None,
                    worker: "late".into(),
                };
                Ok(tasks.into_iter().map(skip).collect())
            }
        }
        let deadline = Deadline::after(600.0);
        let Levels { merged, reports, .. } = run_levels(&t, &p, &o, &deadline, &LateExecutors).unwrap();
        assert!(reports.iter().all(|r| r.status == SubtableStatus::Skipped));
        assert_eq!(merged, p.initial());
        assert!(deadline.was_hit(), "stopped_by_time_limit is reported");
        let in_time = Deadline::after(600.0);
        run_levels(&t, &p, &o, &in_time, &InProcess).unwrap();
        assert!(!in_time.was_hit());
    }
}
