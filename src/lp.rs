//! The one adapter between sdcflow's solvers and HiGHS.
//!
//! Models are plain data ([`LinearProgram`]), independent of any solver, so they can be built,
//! inspected and checked in tests without HiGHS (good_lp's design). [`solve`] is the only place
//! that talks to HiGHS and it enforces the rules that keep the bundled HiGHS 1.15 safe:
//!
//! * every instance runs with `threads = 1` — HiGHS is not safe with several instances on
//!   different threads unless they all use the same `threads` option; callers parallelise across
//!   models with rayon instead;
//! * only `try_` entry points are used, so a malformed model is an [`LpError`], never a panic
//!   (the raw HiGHS calls for what the `highs` crate lacks check every status, but for
//!   `Highs_setBasis` of a [`WarmLp`]'s start: a refused start leaves a solve from scratch);
//! * a thread reuses the instances it is done with (`instance`): options reset to HiGHS's
//!   defaults, clocks zeroed and the model replaced before each use, so a reused instance
//!   answers as a new one;
//! * every model status is sorted in one `match`: infeasible / unbounded are errors, a reached
//!   time limit is a [`LpStatus`], not an error.

use std::num::NonZeroU32;
use std::time::Instant;

use highs::{HighsModelStatus, HighsSolutionStatus, RowProblem, Sense};

/// Optimisation direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Minimise the objective.
    Minimise,
    /// Maximise the objective.
    Maximise,
}

/// One variable (column) of a [`LinearProgram`].
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Objective coefficient.
    pub cost: f64,
    /// Lower bound (may be `f64::NEG_INFINITY`).
    pub lower: f64,
    /// Upper bound (may be `f64::INFINITY`).
    pub upper: f64,
    /// Whether the variable must take an integer value (makes the model a MIP).
    pub integer: bool,
}

/// One constraint `lower <= Σ coef·x <= upper`.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    /// Lower bound of the row activity (may be `f64::NEG_INFINITY`).
    pub lower: f64,
    /// Upper bound of the row activity (may be `f64::INFINITY`).
    pub upper: f64,
    /// Sparse coefficients `(column index, coefficient)`.
    pub coefs: Vec<(usize, f64)>,
}

/// A linear (or mixed-integer) program as plain data.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearProgram {
    /// Optimisation direction.
    pub direction: Direction,
    /// Variables.
    pub columns: Vec<Column>,
    /// Constraints.
    pub rows: Vec<Constraint>,
}

impl LinearProgram {
    /// An empty program with the given direction.
    pub fn new(direction: Direction) -> Self {
        Self { direction, columns: Vec::new(), rows: Vec::new() }
    }

    /// Adds a continuous variable and returns its index.
    pub fn add_column(&mut self, cost: f64, lower: f64, upper: f64) -> usize {
        self.columns.push(Column { cost, lower, upper, integer: false });
        self.columns.len() - 1
    }

    /// Adds an integer variable and returns its index.
    pub fn add_integer_column(&mut self, cost: f64, lower: f64, upper: f64) -> usize {
        self.columns.push(Column { cost, lower, upper, integer: true });
        self.columns.len() - 1
    }

    /// Adds a constraint `lower <= Σ coef·x <= upper` and returns its index.
    pub fn add_row(&mut self, lower: f64, upper: f64, coefs: Vec<(usize, f64)>) -> usize {
        self.rows.push(Constraint { lower, upper, coefs });
        self.rows.len() - 1
    }

    /// Whether any variable is integer.
    pub fn is_mip(&self) -> bool {
        any_integer(&self.columns)
    }

    /// Objective value of a given assignment (no solver needed).
    pub fn objective_of(&self, x: &[f64]) -> f64 {
        objective(&self.columns, x)
    }

    /// Largest violation of any bound or constraint by `x` (0 when feasible); for tests and
    /// for checking solutions independently of the solver.
    pub fn max_violation(&self, x: &[f64]) -> f64 {
        let mut worst: f64 = 0.0;
        for (c, v) in self.columns.iter().zip(x) {
            worst = worst.max(c.lower - v).max(v - c.upper);
        }
        for r in &self.rows {
            let act: f64 = r.coefs.iter().map(|&(j, a)| a * x[j]).sum();
            worst = worst.max(r.lower - act).max(act - r.upper);
        }
        worst
    }
}

/// Options for one solve.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SolveOptions {
    /// Wall-clock limit in seconds (`None`: no limit).
    pub time_limit_s: Option<f64>,
    /// Relative MIP gap at which HiGHS may stop (`None`: HiGHS default, 1e-4).
    pub mip_rel_gap: Option<f64>,
    /// Branch-and-bound nodes after which a MIP stops with its incumbent (`None`: no limit). A
    /// deterministic budget, unlike the time limit; reported as [`LpStatus::TimeLimit`]. With a
    /// budget, HiGHS does not restart its search (see `build`).
    pub mip_max_nodes: Option<usize>,
    /// A feasible MIP solution to start from (one value per column; ignored for LPs): HiGHS
    /// keeps it as its first incumbent, so a node budget never ends worse than it.
    pub start: Option<Vec<f64>>,
    /// Presolve every LP, also those up to [`PRESOLVE_MIN_COLUMNS`] columns. For callers whose
    /// results depend on which optimal duals an LP returns, not only on its optimum: column
    /// generation (without presolve, a 10-point microaggregation ended above its optimum).
    pub always_presolve: bool,
    /// Branch on pseudocosts from the first node, without HiGHS's strong branching to make
    /// them reliable first (`mip_pscost_minreliable = 0`). For the exact suppression masters:
    /// strong branching took 26 k of a 10-node solve's 45 k simplex iterations on the
    /// README example's table (BENCHMARKS "Session 60").
    pub pseudocost_branching: bool,
    /// Without HiGHS's RINS and RENS, the sub-MIP heuristics that search around the LP
    /// optimum and the incumbent. For the exact suppression masters of a few nodes, whose
    /// patterns are audited and repaired anyway: on the README example's table they were half
    /// of each master's 8 s (BENCHMARKS "Session 82").
    pub skip_sub_mip_heuristics: bool,
    /// A MIP's cutoff (HiGHS's `objective_bound`): nodes whose bound reaches it are pruned, so
    /// a solve ends [`LpError::Infeasible`] only when no solution is below it; HiGHS may still
    /// return one above it that a heuristic found before the pruning. For searches that hold
    /// a better solution than any start they could give.
    pub cutoff: Option<f64>,
}

/// How a solve ended when it produced a usable answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LpStatus {
    /// Proven optimal (for a MIP: within the gap tolerance).
    Optimal,
    /// Stopped by the time limit (or a MIP by its node limit) with a feasible solution (for a
    /// MIP: the incumbent).
    TimeLimit,
}

/// Result of a successful solve.
#[derive(Debug, Clone, PartialEq)]
pub struct LpSolution {
    /// Whether the answer is proven optimal or the time limit was hit.
    pub status: LpStatus,
    /// Objective value.
    pub objective: f64,
    /// Primal values, one per column.
    pub columns: Vec<f64>,
    /// Row duals, one per row (LP only; empty for MIPs).
    pub row_duals: Vec<f64>,
    /// Column reduced costs, one per column (LP only; empty for MIPs).
    pub column_duals: Vec<f64>,
    /// Relative MIP gap reported by HiGHS (0 for LPs).
    pub mip_gap: f64,
    /// Proven bound on the optimum: HiGHS's MIP dual bound (the objective for LPs).
    pub dual_bound: f64,
    /// Simplex iterations of the run that gave this answer (see [`Effort`]).
    pub iterations: u64,
}

/// A running count of simplex effort, shared by the solves of one search (clones count into
/// the same total): each solve adds `(iterations + 1) × (rows + columns)` of its program.
///
/// Why: a search budget must end at the same point on every machine (issue 11, item 7), and
/// neither an LP count nor a column count follows an LP's time: a cleanup trial's attacker LP
/// over c4-large's ~35,000-cell component takes ~2 s, one over c3-persons' components
/// milliseconds. Simplex iterations, each touching a row and a column of the basis, weighted
/// by the program's size do; single-threaded HiGHS repeats them exactly for the same program.
/// The `+ 1` is the work of loading the program, which a hot start that needs no iteration
/// still pays.
#[derive(Debug, Clone, Default)]
pub struct Effort(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl Effort {
    /// Counts the solve of `lp` that gave `s`.
    pub fn add(&self, lp: &LinearProgram, s: &LpSolution) {
        let size = (lp.rows.len() + lp.columns.len()) as u64;
        self.0.fetch_add((s.iterations + 1).saturating_mul(size), std::sync::atomic::Ordering::Relaxed);
    }

    /// The effort counted so far.
    pub fn total(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Why a solve produced no usable answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LpError {
    /// The model has no feasible point.
    #[error("the linear program is infeasible")]
    Infeasible,
    /// The objective is unbounded (or the model is infeasible-or-unbounded).
    #[error("the linear program is unbounded")]
    Unbounded,
    /// Time limit reached before any feasible point was found.
    #[error("time limit reached before a feasible solution was found")]
    TimeLimitNoSolution,
    /// A solve given a hard stop ([`WarmLp::with_stop`], [`solve_until`]) reached it before it
    /// proved an optimum: no verdict, and none of the solve's values may be used.
    #[error("stopped at the run's time limit before the optimum was proven")]
    Stopped,
    /// HiGHS rejected the model or failed; `what` names the step and the status.
    #[error("HiGHS failed: {what}")]
    Solver {
        /// Step and status reported by HiGHS.
        what: String,
    },
}

/// Solves `lp` with HiGHS (one thread, quiet) and sorts every outcome.
///
/// When HiGHS gives up without a verdict (status `Unknown`, `SolveError`, …: numerical trouble,
/// seen on attacker LPs over cells worth 10^10 and more), the model is solved again with
/// presolve switched ([`PRESOLVE_MIN_COLUMNS`]), then with the interior-point solver; only if
/// all three fail is it an error.
pub fn solve(lp: &LinearProgram, opts: &SolveOptions) -> Result<LpSolution, LpError> {
    let mut last = None;
    for retry in [Retry::Default, Retry::OtherPresolve, Retry::InteriorPoint] {
        match solve_once(lp, opts, retry) {
            Err(LpError::Solver { what }) if what.starts_with("model status") || what.starts_with("run:") => {
                last = Some(what)
            }
            other => return other,
        }
    }
    Err(LpError::Solver {
        what: format!("{} (also with presolve switched and with the interior-point solver)", last.unwrap_or_default()),
    })
}

/// [`solve`] of an LP that must end by `stop` (none: no limit): HiGHS gets the time left as its
/// limit, and anything but a proven verdict reached in time is [`LpError::Stopped`]. Why: the
/// searches that improve a clean pattern (cleanup) solve attacker LPs past which the run's hard
/// stop must not slip; a 1 M-cell census pattern's component LP ran for minutes past it.
pub fn solve_until(lp: &LinearProgram, stop: Option<Instant>) -> Result<LpSolution, LpError> {
    let Some(at) = stop else { return solve(lp, &SolveOptions::default()) };
    let left = seconds_left(at).ok_or(LpError::Stopped)?;
    until(solve(lp, &SolveOptions { time_limit_s: Some(left), ..Default::default() }))
}

/// Seconds left before `at` (`None` when past).
fn seconds_left(at: Instant) -> Option<f64> {
    let left = at.saturating_duration_since(Instant::now()).as_secs_f64();
    (left > 0.0).then_some(left)
}

/// The outcome of a solve under a hard stop: a result the time limit cut short is
/// [`LpError::Stopped`].
fn until(r: Result<LpSolution, LpError>) -> Result<LpSolution, LpError> {
    match r {
        Ok(s) if s.status == LpStatus::TimeLimit => Err(LpError::Stopped),
        Err(LpError::TimeLimitNoSolution) => Err(LpError::Stopped),
        r => r,
    }
}

/// Columns up to which an LP (not a MIP) is solved without HiGHS's presolve. Why: on the
/// small attacker and master LPs of HiTaS's exact subtables presolve was most of each solve:
/// a flat 901-cell enterprise table is protected in 3.3 s instead of 9.8 s, the three levels of
/// an 11 k-cell one (subtables of ≤ 829 cells) take 41 s instead of 61 s. Not above: up to
/// 1,000 columns those levels took 26 s, but a flat 2,389-cell person table 15 s instead of
/// 9 s; and on large LPs presolve pays (the 11 k-cell table's cleanup, component LPs of ~9,000
/// columns: 50 trials in 281 s without it, 109 s with it). BENCHMARKS.md "Session 41".
pub(crate) const PRESOLVE_MIN_COLUMNS: usize = 500;

/// How [`solve`] retries a model HiGHS could not decide.
#[derive(Debug, Clone, Copy)]
enum Retry {
    Default,
    /// Presolve on where the default has it off, and off where the default has it on.
    OtherPresolve,
    InteriorPoint,
}

fn solve_once(lp: &LinearProgram, opts: &SolveOptions, retry: Retry) -> Result<LpSolution, LpError> {
    let model = build(lp, opts, retry)?;
    let solved = model.try_solve().map_err(|s| LpError::Solver { what: format!("run: {s:?}") })?;
    let out = read(&lp.columns, &solved);
    give_back(highs::Model::from(solved));
    out
}

thread_local! {
    /// HiGHS instances this thread is done with ([`give_back`]), for its next models
    /// ([`instance`]).
    static SPARE: std::cell::RefCell<Vec<highs::Model>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Instances kept per thread for reuse ([`SPARE`]): a cold solve can run while the thread
/// holds a hot-started model ([`WarmLp`]).
const SPARE_INSTANCES: usize = 2;

/// Columns up to which a model's instance is kept for reuse. Why: HiGHS keeps its vectors'
/// capacity when a new model is passed, so a spare that solved a 10^5-column attacker LP would
/// hold its memory for the thread's life; creating the instance matters only for small models,
/// where it is a large part of the solve.
const SPARE_MAX_COLUMNS: usize = 5_000;

/// A HiGHS instance for a new model: one this thread is done with ([`give_back`]), its options
/// reset to HiGHS's defaults and its clocks to zero, else a new one; quiet either way. Why:
/// creating an instance builds HiGHS's ~200 option records (strings), and destroying it frees
/// them; on CASC EIA (thousands of small master and attacker LPs) the two were ~11 % of the
/// run's samples. `Highs::passModel` clears the last model and every solver state
/// (`clearModel`, `clearSolver`), so a reused instance solves as a new one does.
fn instance() -> Result<highs::Model, LpError> {
    let err = |what: &str, status: i32| LpError::Solver { what: format!("{what}: status {status}") };
    let spare = SPARE.try_with(|s| s.borrow_mut().pop()).ok().flatten();
    let mut model = match spare {
        Some(mut m) => {
            // SAFETY: `m` owns this live instance, and it is used on this thread only.
            let status = unsafe { highs_sys::Highs_resetOptions(m.as_mut_ptr()) };
            if status != highs_sys::STATUS_OK {
                return Err(err("resetting the options", status));
            }
            // HiGHS compares `time_limit` with the time of all the instance's runs (see
            // `WarmLp::solve`).
            // SAFETY: as above; the call only resets the instance's timer.
            let status = unsafe { highs_sys::Highs_zeroAllClocks(m.as_mut_ptr()) };
            if status != highs_sys::STATUS_OK {
                return Err(err("zeroing HiGHS's clocks", status));
            }
            m
        }
        None => RowProblem::default()
            .try_optimise(Sense::Minimise)
            .map_err(|s| LpError::Solver { what: format!("creating a HiGHS instance: {s:?}") })?,
    };
    for name in ["output_flag", "log_to_console"] {
        set_option(&mut model, name, false)?;
    }
    Ok(model)
}

/// Keeps `model`'s instance for this thread's next model ([`instance`]) while fewer than
/// [`SPARE_INSTANCES`] are kept and its model was small ([`SPARE_MAX_COLUMNS`]); else it is
/// destroyed.
fn give_back(model: highs::Model) {
    if model.num_cols() > SPARE_MAX_COLUMNS {
        return;
    }
    let _ = SPARE.try_with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < SPARE_INSTANCES {
            s.push(model);
        }
    });
}

/// Passes `lp` to `model`'s instance, replacing its model: the arrays the `highs` crate passes
/// for a `RowProblem` (columns in order, each column's entries in row order), minimised, then
/// the direction set, as `RowProblem::try_optimise` does.
fn pass(model: &mut highs::Model, lp: &LinearProgram) -> Result<(), LpError> {
    let n = lp.columns.len();
    let too_large = || LpError::Solver { what: format!("passing the model: {n} columns are too many for HiGHS") };
    let int = |v: usize| highs_sys::HighsInt::try_from(v).map_err(|_| too_large());
    let mut start = vec![0usize; n + 1];
    for r in &lp.rows {
        for &(j, _) in &r.coefs {
            if j >= n {
                return Err(LpError::Solver { what: format!("passing the model: a row uses column {j} of {n}") });
            }
            start[j + 1] += 1;
        }
    }
    for j in 0..n {
        start[j + 1] += start[j];
    }
    let nnz = start[n];
    let mut next = start.clone();
    let (mut index, mut value) = (vec![0 as highs_sys::HighsInt; nnz], vec![0.0; nnz]);
    for (i, r) in lp.rows.iter().enumerate() {
        let i = int(i)?;
        for &(j, a) in &r.coefs {
            (index[next[j]], value[next[j]]) = (i, a);
            next[j] += 1;
        }
    }
    let start: Vec<highs_sys::HighsInt> = start.into_iter().map(int).collect::<Result<_, _>>()?;
    let cost: Vec<f64> = lp.columns.iter().map(|c| c.cost).collect();
    let lower: Vec<f64> = lp.columns.iter().map(|c| c.lower).collect();
    let upper: Vec<f64> = lp.columns.iter().map(|c| c.upper).collect();
    let row_lower: Vec<f64> = lp.rows.iter().map(|r| r.lower).collect();
    let row_upper: Vec<f64> = lp.rows.iter().map(|r| r.upper).collect();
    let (n, m, nnz) = (int(n)?, int(lp.rows.len())?, int(nnz)?);
    let (fmt, min) = (highs_sys::MATRIX_FORMAT_COLUMN_WISE, highs_sys::OBJECTIVE_SENSE_MINIMIZE);
    let ptr = model.as_mut_ptr();
    // A MIP's column types; null for an LP (`Highs_passLp` is `Highs_passMip` without them).
    let integrality: Option<Vec<highs_sys::HighsInt>> = lp.is_mip().then(|| {
        lp.columns
            .iter()
            .map(|c| if c.integer { highs_sys::VAR_TYPE_INTEGER } else { highs_sys::VAR_TYPE_CONTINUOUS })
            .collect()
    });
    let types = integrality.as_ref().map_or(std::ptr::null(), |v| v.as_ptr());
    // SAFETY: `ptr` is the live instance `model` owns, used on this thread only; every array
    // has the length HiGHS reads (`n` columns, `m` rows, `nnz` entries, `n + 1` starts).
    let status = unsafe {
        highs_sys::Highs_passMip(
            ptr,
            n,
            m,
            nnz,
            fmt,
            min,
            0.0,
            cost.as_ptr(),
            lower.as_ptr(),
            upper.as_ptr(),
            row_lower.as_ptr(),
            row_upper.as_ptr(),
            start.as_ptr(),
            index.as_ptr(),
            value.as_ptr(),
            types,
        )
    };
    // A warning (e.g. a tiny coefficient) is accepted, as the `highs` crate does.
    if status != highs_sys::STATUS_OK && status != highs_sys::STATUS_WARNING {
        return Err(LpError::Solver { what: format!("building the model: status {status}") });
    }
    let sense = match lp.direction {
        Direction::Minimise => highs_sys::OBJECTIVE_SENSE_MINIMIZE,
        Direction::Maximise => highs_sys::OBJECTIVE_SENSE_MAXIMIZE,
    };
    // SAFETY: as above.
    let status = unsafe { highs_sys::Highs_changeObjectiveSense(ptr, sense) };
    if status != highs_sys::STATUS_OK {
        return Err(LpError::Solver { what: format!("setting the direction: status {status}") });
    }
    Ok(())
}

/// Sets one HiGHS option, naming it in the error.
fn set_option<V: highs::HighsOptionValue>(model: &mut highs::Model, name: &str, value: V) -> Result<(), LpError> {
    model.try_set_option(name, value).map_err(|e| LpError::Solver { what: format!("setting {name}: {e:?}") })
}

/// The HiGHS model of `lp` with the options of `opts` and `retry` (one thread).
fn build(lp: &LinearProgram, opts: &SolveOptions, retry: Retry) -> Result<highs::Model, LpError> {
    let mip = lp.is_mip();
    let mut model = instance()?;
    pass(&mut model, lp)?;
    model.set_threads(NonZeroU32::new(1).expect("1 is nonzero"));
    if let Some(t) = opts.time_limit_s {
        set_option(&mut model, "time_limit", t.max(0.001))?;
    }
    if let (true, Some(g)) = (mip, opts.mip_rel_gap) {
        set_option(&mut model, "mip_rel_gap", g)?;
    }
    if let (true, Some(n)) = (mip, opts.mip_max_nodes) {
        let n = i32::try_from(n).unwrap_or(i32::MAX);
        set_option(&mut model, "mip_max_nodes", n)?;
        // Within a node budget, a restart (HiGHS presolving the model again once the root has
        // fixed many columns, then solving the new root) spends the budget's time repeating
        // the root's LP, cut separation and heuristics. Measured on the suppression masters
        // (BENCHMARKS.md, "Session 81"): the README example's table 67.6 → 56.4 s and 5 % less
        // suppressed value, c3-enterprises 188 → 174 s and 0.7 % less.
        set_option(&mut model, "mip_allow_restart", false)?;
    }
    if let (true, Some(b)) = (mip, opts.cutoff) {
        set_option(&mut model, "objective_bound", b)?;
    }
    if mip && opts.pseudocost_branching {
        set_option(&mut model, "mip_pscost_minreliable", 0)?;
    }
    if mip && opts.skip_sub_mip_heuristics {
        set_option(&mut model, "mip_heuristic_run_rins", false)?;
        set_option(&mut model, "mip_heuristic_run_rens", false)?;
    }
    if let (true, Some(x)) = (mip, &opts.start) {
        model
            .try_set_solution(Some(x), None, None, None)
            .map_err(|e| LpError::Solver { what: format!("setting the start solution: {e:?}") })?;
        // HiGHS runs its feasibility-jump heuristic, which looks for a first feasible
        // solution, before the root node even when it holds one: with the start given, it is
        // wasted. Measured on CASC EIA (36 exact subtables): 4 % of the run's samples, 1.38 →
        // 1.29 s, the same patterns on the suite (BENCHMARKS.md, "Session 76").
        set_option(&mut model, "mip_heuristic_run_feasibility_jump", false)?;
    }
    if mip && opts.cutoff.is_some() {
        // Likewise with a cutoff: the caller holds a solution at it, and a first feasible one is
        // worth nothing unless it is cheaper, which the jump heuristic does not aim at.
        // Measured on the exact search's cut-off masters (highspy, the same models, minima
        // of 3): EIA 0.58 → 0.46 s, Adult's first 1.92 → 1.42 s, the same optima
        // (BENCHMARKS.md, "Session 92").
        set_option(&mut model, "mip_heuristic_run_feasibility_jump", false)?;
    }
    // A small LP is solved without presolve first, a large one with it; the first retry
    // swaps the two.
    let small = !mip && !opts.always_presolve && lp.columns.len() <= PRESOLVE_MIN_COLUMNS;
    match retry {
        Retry::Default if small => set_option(&mut model, "presolve", "off")?,
        Retry::Default => {}
        Retry::OtherPresolve if small => {}
        Retry::OtherPresolve => set_option(&mut model, "presolve", "off")?,
        Retry::InteriorPoint if !mip => set_option(&mut model, "solver", "ipm")?,
        Retry::InteriorPoint => set_option(&mut model, "presolve", "off")?,
    }
    Ok(model)
}

/// Whether any of `columns` is integer (the program is a MIP).
fn any_integer(columns: &[Column]) -> bool {
    columns.iter().any(|c| c.integer)
}

/// The objective value of assignment `x` to `columns`.
fn objective(columns: &[Column], x: &[f64]) -> f64 {
    columns.iter().zip(x).map(|(c, v)| c.cost * v).sum()
}

/// The solution of `solved`, a model of a program with variables `columns` (their costs give the
/// objective, their integrality whether it was a MIP).
fn read(columns: &[Column], solved: &highs::SolvedModel) -> Result<LpSolution, LpError> {
    let mip = any_integer(columns);
    let has_primal = solved.primal_solution_status() == HighsSolutionStatus::Feasible;
    let status = match solved.status() {
        HighsModelStatus::Optimal => LpStatus::Optimal,
        HighsModelStatus::ModelEmpty => LpStatus::Optimal,
        HighsModelStatus::Infeasible => return Err(LpError::Infeasible),
        HighsModelStatus::Unbounded | HighsModelStatus::UnboundedOrInfeasible => return Err(LpError::Unbounded),
        HighsModelStatus::ReachedTimeLimit
        | HighsModelStatus::ReachedIterationLimit
        | HighsModelStatus::ReachedSolutionLimit
        | HighsModelStatus::ReachedInterrupt
        | HighsModelStatus::ObjectiveBound
        | HighsModelStatus::ObjectiveTarget => {
            if has_primal {
                LpStatus::TimeLimit
            } else {
                return Err(LpError::TimeLimitNoSolution);
            }
        }
        // LoadError, ModelError, PresolveError, SolveError, PostsolveError, Unknown,
        // ReachedMemoryLimit, NotSet, and statuses added by later HiGHS versions.
        other => return Err(LpError::Solver { what: format!("model status {other:?}") }),
    };
    let sol = solved.get_solution();
    let x = sol.columns().to_vec();
    let objective = objective(columns, &x);
    let (row_duals, column_duals) =
        if mip { (Vec::new(), Vec::new()) } else { (sol.dual_rows().to_vec(), sol.dual_columns().to_vec()) };
    let dual_bound =
        if mip { solved.double_info_value(c"mip_dual_bound").unwrap_or(f64::NEG_INFINITY) } else { objective };
    Ok(LpSolution {
        dual_bound,
        status,
        objective,
        columns: x,
        row_duals,
        column_duals,
        mip_gap: if mip { solved.mip_gap() } else { 0.0 },
        iterations: solved.int_info_value(c"simplex_iteration_count").map_or(0, |n| u64::try_from(n).unwrap_or(0)),
    })
}

/// A linear program solved many times with a few columns changed each time, each solve
/// hot-started by HiGHS from the previous optimal basis (no presolve, a few simplex iterations
/// instead of a solve from scratch). Why: the attacker LPs of one component share their rows
/// and differ only in the target's objective and cap; the audit of an 11 k-cell census pattern
/// solves ~1,300 of them over a component of ~5,000 suppressed cells.
///
/// Exactness does not depend on the start: every solve ends at an optimum of the changed
/// program (only which optimum, among equal ones, can depend on the solves before). A solve
/// that does not end optimal from the hot start (infeasible and unbounded included) is solved
/// again from scratch by [`solve`], whose verdict stands. LPs only;
/// one thread (the model is not `Send`: make one per rayon task).
pub struct WarmLp {
    lp: LinearProgram,
    model: Option<Hot>,
    stop: Option<Instant>,
    /// The basis the first solve starts from instead of from scratch ([`Self::starting_from`]).
    start: Option<Basis>,
}

/// A simplex basis of a program: HiGHS's status of each column and each row.
#[derive(Debug, Clone)]
pub struct Basis {
    columns: Vec<highs_sys::HighsInt>,
    rows: Vec<highs_sys::HighsInt>,
}

/// A HiGHS model after an optimal solve, and the columns whose cost or bounds it holds at
/// other values than the base program's (`column → (cost, lower, upper)`).
struct Hot {
    model: highs::Model,
    moved: std::collections::BTreeMap<usize, (f64, f64, f64)>,
}

impl WarmLp {
    /// A warm solver of `lp` (its costs and bounds are the base the changes apply to).
    pub fn new(lp: LinearProgram) -> Self {
        Self { lp, model: None, stop: None, start: None }
    }

    /// The first solve starts from `basis` (of a program with the same columns and rows, e.g.
    /// [`Self::basis`] of another solver of the same program), not from scratch: no presolve,
    /// HiGHS's simplex from that basis. A basis of other dimensions is ignored.
    pub fn starting_from(mut self, basis: Option<Basis>) -> Self {
        self.start = basis.filter(|b| b.columns.len() == self.lp.columns.len() && b.rows.len() == self.lp.rows.len());
        self
    }

    /// The basis of the last solve, if it ended optimal.
    pub fn basis(&self) -> Option<Basis> {
        let hot = self.model.as_ref()?;
        let mut b = Basis { columns: vec![0; self.lp.columns.len()], rows: vec![0; self.lp.rows.len()] };
        // SAFETY: the instance is live and holds this program, so the arrays have its lengths.
        let status =
            unsafe { highs_sys::Highs_getBasis(hot.model.as_ptr(), b.columns.as_mut_ptr(), b.rows.as_mut_ptr()) };
        (status == highs_sys::STATUS_OK).then_some(b)
    }

    /// Every solve must end by `stop` (see [`solve_until`]); past it a solve is
    /// [`LpError::Stopped`].
    pub fn with_stop(mut self, stop: Option<Instant>) -> Self {
        self.stop = stop;
        self
    }

    /// Solves the base program with `changes` — `(column, cost, lower, upper)` — applied.
    ///
    /// Only what differs from the model's last solve is set: a column changed then and now
    /// alike keeps its bounds untouched. Why: HiGHS re-places a nonbasic column on its bounds
    /// when they change, and a column capped above whose base upper bound is infinite comes
    /// back at its *lower* bound — so restoring then re-capping a column (as every solve did)
    /// left the hot start primal infeasible, and the primal simplex began with a phase 1 (a
    /// batch attacker LP over a 93 k-cell component: 30,588 infeasibilities, minutes).
    pub fn solve(&mut self, changes: &[(usize, f64, f64, f64)]) -> Result<LpSolution, LpError> {
        let n = self.lp.columns.len();
        if let Some(&(j, ..)) = changes.iter().find(|c| c.0 >= n) {
            return Err(LpError::Solver { what: format!("change of column {j} of a program of {n} columns") });
        }
        let left = match self.stop {
            Some(at) => Some(seconds_left(at).ok_or(LpError::Stopped)?),
            None => None,
        };
        // The changed program's columns only: its rows are the base's, cloned only for a solve
        // from scratch. Why: every hot-started solve cloned every row (a vector each); on Adult
        // malloc and free fell from 15.8 % to 13.8 % of the run's samples without it.
        let mut changed = self.lp.columns.clone();
        let mut want: std::collections::BTreeMap<usize, (f64, f64, f64)> = Default::default();
        for &(j, cost, lower, upper) in changes {
            let c = &mut changed[j];
            (c.cost, c.lower, c.upper) = (cost, lower, upper);
            want.insert(j, (cost, lower, upper));
        }
        let mut hot = match self.model.take() {
            Some(h) => h,
            // The first solve, from scratch, takes HiGHS's default strategy (dual simplex):
            // primal simplex from scratch first needs a phase 1, and on the attacker LP of a
            // 93 k-cell component (HiTaS's merge of a 5-dimensional census table) it ran over
            // 16 minutes where the dual took 13.9 s.
            None => {
                let model = build(&self.lp, &SolveOptions::default(), Retry::Default)?;
                Hot { model, moved: Default::default() }
            }
        };
        let base = |j: usize| {
            let c = &self.lp.columns[j];
            (c.cost, c.lower, c.upper)
        };
        let columns: std::collections::BTreeSet<usize> = hot.moved.keys().chain(want.keys()).copied().collect();
        for j in columns {
            let now = hot.moved.get(&j).copied().unwrap_or_else(|| base(j));
            let to = want.get(&j).copied().unwrap_or_else(|| base(j));
            // Columns were checked against the program's above.
            let col = highs_sys::HighsInt::try_from(j).expect("a column HiGHS holds");
            let ptr = hot.model.as_mut_ptr();
            // SAFETY: `ptr` is the live instance `hot.model` owns, used on this thread only.
            if now.0 != to.0 && unsafe { highs_sys::Highs_changeColCost(ptr, col, to.0) } != highs_sys::STATUS_OK {
                return Err(LpError::Solver { what: format!("changing the cost of column {j}") });
            }
            // SAFETY: as above.
            if (now.1, now.2) != (to.1, to.2)
                && unsafe { highs_sys::Highs_changeColBounds(ptr, col, to.1, to.2) } != highs_sys::STATUS_OK
            {
                return Err(LpError::Solver { what: format!("changing the bounds of column {j}") });
            }
        }
        hot.moved = want.into_iter().filter(|&(j, v)| v != base(j)).collect();
        if let Some(t) = left {
            set_option(&mut hot.model, "time_limit", t.max(0.001))?;
            // HiGHS (1.15) compares `time_limit` with the time spent in *all* runs of a model,
            // not in this one; its C API documents zeroing the clocks before each run as the
            // work-around. Without it a long hot-started sequence stopped well before the
            // limit: HiTaS's merge of c4-large failed its first audit at 1,430 s of an 1,800-s
            // limit, when its small batches' runs had spent more than the time left.
            // SAFETY: the pointer is the live HiGHS instance owned by `hot.model`, used on this
            // thread only, and the call only resets its timer.
            let status = unsafe { highs_sys::Highs_zeroAllClocks(hot.model.as_mut_ptr()) };
            if status != highs_sys::STATUS_OK {
                return Err(LpError::Solver { what: format!("zeroing HiGHS's clocks: status {status}") });
            }
        }
        if let Some(b) = self.start.take() {
            // SAFETY: the live instance of this thread; the arrays have the program's lengths
            // (`starting_from`). A basis HiGHS refuses leaves the solve as it was, from scratch.
            let _ = unsafe { highs_sys::Highs_setBasis(hot.model.as_mut_ptr(), b.columns.as_ptr(), b.rows.as_ptr()) };
        }
        let Hot { model, moved } = hot;
        let out = match model.try_solve() {
            Ok(solved) => {
                let out = read(&changed, &solved);
                if self.stop.is_some() && matches!(&out, Ok(s) if s.status == LpStatus::TimeLimit) {
                    return Err(LpError::Stopped);
                }
                if out.is_ok() {
                    let mut model = highs::Model::from(solved);
                    // Primal simplex for the hot starts: after a change of objective the last
                    // optimal basis is still primal feasible. Measured on the first audit of an
                    // 11 k-cell HiTaS pattern (1,300 LPs): 23.7 CPU s, against 42 s from scratch
                    // and more with HiGHS's default (dual) strategy from the same hot starts.
                    set_option(&mut model, "simplex_strategy", 4)?;
                    self.model = Some(Hot { model, moved });
                } else {
                    give_back(highs::Model::from(solved));
                }
                out
            }
            Err(s) => Err(LpError::Solver { what: format!("run: {s:?}") }),
        };
        match out {
            Ok(s) => Ok(s),
            // Anything else, verdicts included, is decided from scratch: HiGHS's primal simplex
            // has called a hot-started attacker LP infeasible (never true: z = 0 is feasible).
            Err(_) => {
                let changed =
                    LinearProgram { direction: self.lp.direction, columns: changed, rows: self.lp.rows.clone() };
                solve_until(&changed, self.stop)
            }
        }
    }
}

impl Drop for WarmLp {
    /// The hot model's instance goes to this thread's next model ([`give_back`]).
    fn drop(&mut self) {
        if let Some(hot) = self.model.take() {
            give_back(hot.model);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_lp_and_duals() {
        // max 3x + 2y s.t. x + y <= 4, x + 3y <= 7, x <= 3 (second row slack: dual 0)
        let mut lp = LinearProgram::new(Direction::Maximise);
        let x = lp.add_column(3.0, 0.0, 3.0);
        let y = lp.add_column(2.0, 0.0, f64::INFINITY);
        lp.add_row(f64::NEG_INFINITY, 4.0, vec![(x, 1.0), (y, 1.0)]);
        lp.add_row(f64::NEG_INFINITY, 7.0, vec![(x, 1.0), (y, 3.0)]);
        let s = solve(&lp, &SolveOptions::default()).unwrap();
        assert_eq!(s.status, LpStatus::Optimal);
        assert!((s.objective - 11.0).abs() < 1e-7);
        assert!((s.columns[x] - 3.0).abs() < 1e-7 && (s.columns[y] - 1.0).abs() < 1e-7);
        assert!((s.row_duals[0] - 2.0).abs() < 1e-7 && s.row_duals[1].abs() < 1e-7, "{:?}", s.row_duals);
        assert!(lp.max_violation(&s.columns) < 1e-9);
    }

    /// A solve given a stop that has passed has no verdict (the searches that set a stop keep
    /// their audited pattern); one given a stop far ahead solves as without it.
    #[test]
    fn a_passed_stop_gives_no_verdict() {
        let mut lp = LinearProgram::new(Direction::Maximise);
        let x = lp.add_column(3.0, 0.0, 3.0);
        let y = lp.add_column(2.0, 0.0, f64::INFINITY);
        lp.add_row(f64::NEG_INFINITY, 4.0, vec![(x, 1.0), (y, 1.0)]);
        let past = Some(Instant::now());
        assert_eq!(solve_until(&lp, past), Err(LpError::Stopped));
        assert_eq!(WarmLp::new(lp.clone()).with_stop(past).solve(&[]), Err(LpError::Stopped));
        let ahead = Some(Instant::now() + std::time::Duration::from_secs(3600));
        assert_eq!(solve_until(&lp, ahead).unwrap().objective, solve(&lp, &SolveOptions::default()).unwrap().objective);
        let warm = WarmLp::new(lp.clone()).with_stop(ahead).solve(&[(x, 1.0, 0.0, 1.0)]).unwrap();
        assert!((warm.objective - 8.0).abs() < 1e-7, "{warm:?}"); // x ≤ 1 costs 1: y = 4
    }

    /// A hot-started sequence whose solves together take longer than the time left is not
    /// stopped before its stop: HiGHS counts `time_limit` against all runs of a model, so
    /// without zeroing its clocks the solves in the second half failed as stopped (c4-large's
    /// first audit at 1,430 s of an 1,800-s limit). Solves of a 400-column chain, alternately
    /// maximised and minimised (each hundreds of pivots), for 2.7 s of a 3-s stop: each must
    /// give its optimum. Asserts termination and verdicts, not speed.
    #[test]
    fn a_long_warm_sequence_is_not_stopped_early() {
        let n = 400;
        let mut lp = LinearProgram::new(Direction::Maximise);
        let xs: Vec<usize> = (0..n).map(|_| lp.add_column(1.0, 0.0, n as f64)).collect();
        lp.add_row(f64::NEG_INFINITY, 1.0, vec![(xs[0], 1.0)]);
        for j in 0..n - 1 {
            lp.add_row(f64::NEG_INFINITY, 1.0, vec![(xs[j + 1], 1.0), (xs[j], -1.0)]);
        }
        let start = Instant::now();
        let mut warm = WarmLp::new(lp.clone()).with_stop(Some(start + std::time::Duration::from_secs(3)));
        let down: Vec<(usize, f64, f64, f64)> = xs.iter().map(|&j| (j, -1.0, 0.0, n as f64)).collect();
        let (mut solves, top) = (0, (n * (n + 1) / 2) as f64);
        while start.elapsed().as_secs_f64() < 2.7 {
            let (changes, want) = if solves % 2 == 0 { (&down[..], 0.0) } else { (&[][..], top) };
            let s = warm.solve(changes).unwrap_or_else(|e| panic!("solve {solves} at {:?}: {e:?}", start.elapsed()));
            assert!((s.objective - want).abs() < 1e-6, "solve {solves}: {}", s.objective);
            solves += 1;
        }
        assert!(solves > 2, "{solves} solves");
    }

    #[test]
    fn infeasible_and_unbounded_are_errors() {
        let mut lp = LinearProgram::new(Direction::Minimise);
        let x = lp.add_column(1.0, 0.0, 1.0);
        lp.add_row(2.0, f64::INFINITY, vec![(x, 1.0)]);
        assert_eq!(solve(&lp, &SolveOptions::default()), Err(LpError::Infeasible));
        let mut lp = LinearProgram::new(Direction::Maximise);
        lp.add_column(1.0, 0.0, f64::INFINITY);
        assert!(matches!(solve(&lp, &SolveOptions::default()), Err(LpError::Unbounded)));
    }

    #[test]
    fn knapsack_mip() {
        // max 5a + 4b + 3c s.t. 2a + 3b + c <= 5, binaries → a + c (8) or a + b (9): 9
        let mut lp = LinearProgram::new(Direction::Maximise);
        let v: Vec<usize> = [5.0, 4.0, 3.0].iter().map(|&c| lp.add_integer_column(c, 0.0, 1.0)).collect();
        lp.add_row(f64::NEG_INFINITY, 5.0, vec![(v[0], 2.0), (v[1], 3.0), (v[2], 1.0)]);
        let s = solve(&lp, &SolveOptions::default()).unwrap();
        assert!((s.objective - 9.0).abs() < 1e-7);
    }

    /// The exact suppression masters' options (pseudocost branching, no RINS or RENS, a start,
    /// a node budget large enough to prove) change how HiGHS searches, not what it proves: a
    /// 40-item knapsack ends at the default solve's optimum, and every option name is one HiGHS
    /// accepts (a misspelt one fails the solve).
    #[test]
    fn the_masters_search_options_keep_the_optimum() {
        let mut lp = LinearProgram::new(Direction::Maximise);
        let items: Vec<(f64, f64)> =
            (0..40).map(|i| (10.0 + ((i * 37) % 23) as f64, 5.0 + ((i * 11) % 17) as f64)).collect();
        let v: Vec<usize> = items.iter().map(|&(value, _)| lp.add_integer_column(value, 0.0, 1.0)).collect();
        lp.add_row(f64::NEG_INFINITY, 150.0, v.iter().zip(&items).map(|(&j, &(_, w))| (j, w)).collect());
        let default = solve(&lp, &SolveOptions::default()).unwrap();
        let master = SolveOptions {
            mip_max_nodes: Some(1_000_000),
            start: Some(vec![0.0; v.len()]),
            pseudocost_branching: true,
            skip_sub_mip_heuristics: true,
            ..Default::default()
        };
        let s = solve(&lp, &master).unwrap();
        assert_eq!(s.status, LpStatus::Optimal);
        assert!((s.objective - default.objective).abs() < 1e-6, "{} against {}", s.objective, default.objective);
    }

    /// A cutoff ([`SolveOptions::cutoff`]) above the optimum of a covering MIP: the solve ends
    /// at that optimum, and within a loose gap below the cutoff; below the optimum it ends
    /// infeasible or at a solution not below the optimum (one a heuristic found first).
    #[test]
    fn a_cutoff_finds_what_is_below_it_and_nothing_below_the_optimum() {
        let mut lp = LinearProgram::new(Direction::Minimise);
        let v: Vec<usize> = (0..30).map(|i| lp.add_integer_column(3.0 + ((i * 7) % 11) as f64, 0.0, 1.0)).collect();
        for r in 0..20 {
            let cover: Vec<(usize, f64)> = (0..4).map(|k| (v[(r * 3 + k * 7) % 30], 1.0)).collect();
            lp.add_row(2.0, f64::INFINITY, cover);
        }
        let opt = solve(&lp, &SolveOptions::default()).unwrap().objective;
        let above = SolveOptions { cutoff: Some(opt + 1.0), mip_rel_gap: Some(1e-6), ..Default::default() };
        let s = solve(&lp, &above).unwrap();
        assert!((s.objective - opt).abs() < 1e-6, "{} against {opt}", s.objective);
        let loose = SolveOptions { cutoff: Some(opt + 1.0), mip_rel_gap: Some(0.5), ..Default::default() };
        assert!(solve(&lp, &loose).unwrap().objective < opt + 1.0);
        // Below the optimum: nothing below the cutoff, so no proof of a cheaper solution —
        // infeasible, or a solution a heuristic found above the cutoff (HiGHS keeps those).
        let below = SolveOptions { cutoff: Some(opt - 0.5), mip_rel_gap: Some(1e-6), ..Default::default() };
        match solve(&lp, &below) {
            Err(LpError::Infeasible) => {}
            Ok(s) => assert!(s.objective >= opt - 1e-6, "{} below the optimum {opt}", s.objective),
            Err(e) => panic!("{e:?}"),
        }
    }

    /// Presolve on or off ([`PRESOLVE_MIN_COLUMNS`]) changes how an LP is solved, never its
    /// optimum: a chain of columns just below and just above the threshold, solved by
    /// [`solve`] and by the retry with presolve the other way, gives the same objective, and
    /// the hand-computed one.
    #[test]
    fn presolve_either_way_gives_the_same_optimum() {
        for n in [PRESOLVE_MIN_COLUMNS, PRESOLVE_MIN_COLUMNS + 1] {
            // max Σ x_j with x_0 ≤ 1 and x_{j+1} − x_j ≤ 1, 0 ≤ x_j ≤ n: x_j = j + 1.
            let mut lp = LinearProgram::new(Direction::Maximise);
            let xs: Vec<usize> = (0..n).map(|_| lp.add_column(1.0, 0.0, n as f64)).collect();
            lp.add_row(f64::NEG_INFINITY, 1.0, vec![(xs[0], 1.0)]);
            for j in 0..n - 1 {
                lp.add_row(f64::NEG_INFINITY, 1.0, vec![(xs[j + 1], 1.0), (xs[j], -1.0)]);
            }
            let want = (n * (n + 1) / 2) as f64;
            let first = solve(&lp, &SolveOptions::default()).unwrap();
            let other = solve_once(&lp, &SolveOptions::default(), Retry::OtherPresolve).unwrap();
            for s in [&first, &other] {
                assert_eq!(s.status, LpStatus::Optimal);
                assert!((s.objective - want).abs() < 1e-6 * want, "{n} columns: {} against {want}", s.objective);
            }
        }
    }

    /// A warm solver gives the cold optimum for every change, in any order, and the base
    /// program again afterwards.
    #[test]
    fn warm_solves_equal_cold_solves() {
        // max Σ c_j x_j over a chain x_j − x_{j+1} ∈ [−2, 3], 0 ≤ x_j ≤ 10.
        let n = 12;
        let mut lp = LinearProgram::new(Direction::Maximise);
        let xs: Vec<usize> = (0..n).map(|_| lp.add_column(0.0, 0.0, 10.0)).collect();
        for j in 0..n - 1 {
            lp.add_row(-2.0, 3.0, vec![(xs[j], 1.0), (xs[j + 1], -1.0)]);
        }
        let mut warm = WarmLp::new(lp.clone());
        for round in 0..3 {
            for t in 0..n {
                let (cost, upper) = if (t + round) % 2 == 0 { (1.0, 7.5) } else { (-1.0, 10.0) };
                let changes = [(t, cost, 0.0, upper), ((t + 5) % n, 0.5, 1.0, 9.0)];
                let mut cold = lp.clone();
                for &(j, c, lo, hi) in &changes {
                    (cold.columns[j].cost, cold.columns[j].lower, cold.columns[j].upper) = (c, lo, hi);
                }
                let a = solve(&cold, &SolveOptions::default()).unwrap();
                let b = warm.solve(&changes).unwrap();
                assert!((a.objective - b.objective).abs() < 1e-7, "{round} {t}: {} vs {}", a.objective, b.objective);
                assert!(cold.max_violation(&b.columns) < 1e-7);
            }
        }
        let base = warm.solve(&[]).unwrap();
        assert!(base.objective.abs() < 1e-9 && lp.max_violation(&base.columns) < 1e-7);
    }

    /// A warm solver started from another's basis ([`WarmLp::starting_from`]) begins where that
    /// one ended (no simplex iteration for the same program) and solves every later program
    /// exactly; a basis of other dimensions is ignored.
    #[test]
    fn a_run_started_from_another_runs_basis_solves_exactly() {
        // An attacker-like LP: max over a chain x_j − x_{j+1} − x_{j+2} = 0, x_j ∈ [−l_j, u_j].
        let n = 14;
        let mut lp = LinearProgram::new(Direction::Maximise);
        let xs: Vec<usize> = (0..n).map(|j| lp.add_column(0.0, -1.0 - (j % 4) as f64, 2.0 + (j % 3) as f64)).collect();
        for j in 0..n - 2 {
            lp.add_row(0.0, 0.0, vec![(xs[j], 1.0), (xs[j + 1], -1.0), (xs[j + 2], -1.0)]);
        }
        // A batch: several targets in the objective, capped.
        let batch: Vec<(usize, f64, f64, f64)> =
            (0..n).step_by(3).map(|t| (t, 1.0, lp.columns[t].lower, 1.5)).collect();
        let mut first = WarmLp::new(lp.clone());
        let a = first.solve(&batch).unwrap();
        let basis = first.basis().expect("an optimal solve has a basis");
        let mut same = WarmLp::new(lp.clone()).starting_from(Some(basis.clone()));
        let b = same.solve(&batch).unwrap();
        assert_eq!(b.iterations, 0, "started at the optimum it was given");
        assert!((a.objective - b.objective).abs() < 1e-9);
        let mut other = LinearProgram::new(Direction::Maximise);
        other.add_column(1.0, 0.0, 1.0);
        for start in [Some(basis), first_basis_of(&other)] {
            let mut w = WarmLp::new(lp.clone()).starting_from(start);
            for t in 0..n {
                let dir = if t % 2 == 0 { 1.0 } else { -1.0 };
                let changes = [(t, dir, lp.columns[t].lower, lp.columns[t].upper)];
                let mut cold = lp.clone();
                cold.columns[t].cost = dir;
                let c = solve(&cold, &SolveOptions::default()).unwrap();
                let h = w.solve(&changes).unwrap();
                assert!((c.objective - h.objective).abs() < 1e-7, "{t}: {} vs {}", c.objective, h.objective);
                assert!(cold.max_violation(&h.columns) < 1e-7);
            }
        }
    }

    /// The basis of `lp`'s first optimal warm solve.
    fn first_basis_of(lp: &LinearProgram) -> Option<Basis> {
        let mut w = WarmLp::new(lp.clone());
        w.solve(&[]).unwrap();
        w.basis()
    }

    /// A warm solver that applies only what changed between solves still solves each program
    /// exactly: changes kept alike from one solve to the next, changes of the cost alone,
    /// columns no longer changed (restored to the base, infinite upper bounds included) and
    /// changes of a column's bounds to other values, in a fixed pseudo-random sequence.
    #[test]
    fn warm_solves_apply_only_the_differences() {
        // An attacker-like LP: max/min over a chain x_j − x_{j+1} − x_{j+2} = 0 with bounds
        // [−l_j, +inf) for every third column and [−l_j, u_j] for the others.
        let n = 15;
        let mut lp = LinearProgram::new(Direction::Maximise);
        for j in 0..n {
            let upper = if j % 3 == 0 { f64::INFINITY } else { 4.0 + j as f64 };
            lp.add_column(0.0, -(2.0 + (j % 4) as f64), upper);
        }
        for j in 0..n - 2 {
            lp.add_row(0.0, 0.0, vec![(j, 1.0), (j + 1, -1.0), (j + 2, -1.0)]);
        }
        let mut warm = WarmLp::new(lp.clone());
        let mut state = 7u64;
        let mut next = |m: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        let mut changes: Vec<(usize, f64, f64, f64)> = Vec::new();
        for step in 0..60 {
            match next(4) {
                // The same changes again, or their costs alone changed.
                0 => {}
                1 => changes.iter_mut().for_each(|c| c.1 = -c.1),
                // A column dropped (restored to its base).
                2 if !changes.is_empty() => {
                    changes.remove(next(changes.len() as u64) as usize);
                }
                // A target capped: a column's cost and one bound moved.
                _ => {
                    let j = next(n as u64) as usize;
                    changes.retain(|c| c.0 != j);
                    let cap = 1.0 + next(5) as f64;
                    let c = &lp.columns[j];
                    let change = if next(2) == 0 {
                        (j, 1.0, c.lower, c.upper.min(cap))
                    } else {
                        (j, -1.0, c.lower.max(-cap), c.upper)
                    };
                    changes.push(change);
                }
            }
            let mut cold = lp.clone();
            for &(j, c, lo, hi) in &changes {
                (cold.columns[j].cost, cold.columns[j].lower, cold.columns[j].upper) = (c, lo, hi);
            }
            match (solve(&cold, &SolveOptions::default()), warm.solve(&changes)) {
                (Ok(a), Ok(b)) => {
                    assert!(
                        (a.objective - b.objective).abs() < 1e-7,
                        "step {step}: {} vs {}",
                        a.objective,
                        b.objective
                    );
                    assert!(cold.max_violation(&b.columns) < 1e-7, "step {step}");
                }
                (Err(LpError::Unbounded), Err(LpError::Unbounded)) => {}
                (a, b) => panic!("step {step}: cold {a:?}, warm {b:?}"),
            }
        }
    }

    /// A reused HiGHS instance ([`instance`]) solves as a new one: the same programs — LPs of
    /// both directions, a MIP from a start under a node budget, an infeasible LP, a warm
    /// sequence — give bit for bit the same answers solved one after the other on one thread
    /// (each instance reused, options set for the last model reset) as each on a thread of its
    /// own (a new instance each).
    #[test]
    fn a_reused_instance_solves_as_a_new_one() {
        let chain = |n: usize, dir: Direction, integer: bool| {
            let mut lp = LinearProgram::new(dir);
            let xs: Vec<usize> = (0..n)
                .map(|j| {
                    let c = 1.0 + (j % 3) as f64 * 0.7;
                    if integer {
                        lp.add_integer_column(c, 0.0, 10.0)
                    } else {
                        lp.add_column(c, 0.0, 10.0)
                    }
                })
                .collect();
            for j in 0..n - 1 {
                lp.add_row(1.5, 12.5, vec![(xs[j], 1.0), (xs[j + 1], 1.0 + (j % 2) as f64)]);
            }
            lp
        };
        let mip = chain(30, Direction::Minimise, true);
        let start = Some(vec![10.0; 30]);
        let mut infeasible = LinearProgram::new(Direction::Minimise);
        let x = infeasible.add_column(1.0, 0.0, 1.0);
        infeasible.add_row(2.0, f64::INFINITY, vec![(x, 1.0)]);
        let programs: Vec<(LinearProgram, SolveOptions)> = vec![
            (
                mip.clone(),
                SolveOptions { mip_max_nodes: Some(1), start, pseudocost_branching: true, ..Default::default() },
            ),
            (chain(40, Direction::Maximise, false), SolveOptions::default()),
            (infeasible, SolveOptions::default()),
            (mip, SolveOptions { time_limit_s: Some(60.0), ..Default::default() }),
            (chain(600, Direction::Minimise, false), SolveOptions::default()),
            (chain(25, Direction::Minimise, false), SolveOptions::default()),
        ];
        let answer = |r: Result<LpSolution, LpError>| match r {
            Ok(s) => Ok((s.status, s.objective.to_bits(), s.columns.iter().map(|v| v.to_bits()).collect::<Vec<_>>())),
            Err(e) => Err(e.to_string()),
        };
        let warm = |lp: &LinearProgram| {
            if lp.is_mip() {
                return Vec::new(); // LPs only
            }
            let mut w = WarmLp::new(lp.clone());
            (0..4).map(|t| answer(w.solve(&[(t, -1.0, 0.0, 8.0)]))).collect::<Vec<_>>()
        };
        let fresh: Vec<_> = programs
            .iter()
            .map(|(lp, o)| std::thread::scope(|s| s.spawn(|| (answer(solve(lp, o)), warm(lp))).join().unwrap()))
            .collect();
        let reused: Vec<_> = std::thread::scope(|s| {
            s.spawn(|| {
                let once: Vec<_> = programs.iter().map(|(lp, o)| (answer(solve(lp, o)), warm(lp))).collect();
                // The second time round every instance is a spare.
                assert!(SPARE.with(|s| !s.borrow().is_empty()));
                programs
                    .iter()
                    .zip(once)
                    .map(|((lp, o), a)| {
                        assert_eq!((answer(solve(lp, o)), warm(lp)), a);
                        a
                    })
                    .collect()
            })
            .join()
            .unwrap()
        });
        assert!(fresh[2].0.is_err());
        assert_eq!(fresh, reused);
    }

    /// HiGHS instances on many threads at once, all with `threads = 1` (the safe configuration).
    #[test]
    fn stress_parallel_instances() {
        use rayon::prelude::*;
        let results: Vec<f64> = (0..64)
            .into_par_iter()
            .map(|i| {
                let n = 20 + i % 7;
                let mut lp = LinearProgram::new(Direction::Minimise);
                let xs: Vec<usize> = (0..n).map(|j| lp.add_column(1.0 + (j % 3) as f64, 0.0, f64::INFINITY)).collect();
                for j in 0..n - 1 {
                    lp.add_row(1.0, f64::INFINITY, vec![(xs[j], 1.0), (xs[j + 1], 1.0)]);
                }
                solve(&lp, &SolveOptions::default()).unwrap().objective
            })
            .collect();
        assert!(results.iter().all(|v| *v > 0.0));
    }
}
