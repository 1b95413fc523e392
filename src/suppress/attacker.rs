//! The attacker LPs of one connected component of suppressed cells, and capacity cuts from
//! their duals.
//!
//! Why: a pattern protects sensitive cell `t` when the attacker's LP `max/min z_t` subject to
//! the relations (published cells fixed, `z = y − a`) and the bounds reaches the protection
//! levels. Only suppressed cells are variables; a relation without a suppressed cell drops out,
//! and the LP splits into independent blocks, the connected components of suppressed cells
//! through relations — so each target's LP is restricted to its component.
//! Duals give Benders/capacity cuts (paper's appendix): for *any* row multipliers `γ`,
//! `d = ±e_t − Mᵀγ` bounds the attacker: `max ±z_t ≤ Σ_i (d_i⁺ UB_i + d_i⁻ LB_i) x_i`, so
//! `Σ_i min(rhs, d_i⁺ UB_i + d_i⁻ LB_i) x_i ≥ rhs` is valid for every protecting pattern `x`
//! (the `min` is the usual coefficient tightening for binaries). Validity does not depend on
//! HiGHS's dual sign convention; we try both signs and keep the tighter cut.

use std::time::Instant;

use crate::lp::{self, Direction, LinearProgram};
use crate::table::relations::FastMap;

use super::problem::Problem;
use super::SuppressError;

/// `Σ coefs·x ≥ rhs` over cells' suppression variables.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cut {
    pub coefs: Vec<(u32, f64)>,
    pub rhs: f64,
}

impl Cut {
    /// Same cut with right-hand side `rhs` and coefficients capped at it (valid for binaries).
    pub fn capped(mut self, rhs: f64) -> Self {
        for (_, v) in &mut self.coefs {
            *v = v.min(rhs);
        }
        self.rhs = rhs;
        self
    }

    /// Sums the coefficients of repeated cells.
    pub fn merged(mut self) -> Self {
        self.coefs.sort_unstable_by_key(|(c, _)| *c);
        let mut out: Vec<(u32, f64)> = Vec::with_capacity(self.coefs.len());
        for (c, v) in self.coefs {
            match out.last_mut() {
                Some((lc, lv)) if *lc == c => *lv += v,
                _ => out.push((c, v)),
            }
        }
        self.coefs = out;
        self
    }

    /// Left-hand side at a pattern.
    pub fn lhs(&self, sup: &[bool]) -> f64 {
        self.coefs.iter().filter(|(c, _)| sup[*c as usize]).map(|(_, v)| v).sum()
    }
}

/// One component's attacker LP skeleton (objective empty).
#[derive(Debug, Clone)]
pub(crate) struct CompLp {
    /// Suppressed cells (column order).
    pub cells: Vec<u32>,
    /// Relations (row order).
    pub rows: Vec<u32>,
    col_of: FastMap<u32, usize>,
    lp: LinearProgram,
    /// Hard stop of every solve ([`lp::solve_until`]); `None`: none.
    stop: Option<Instant>,
    /// Where the solves' effort is counted ([`Self::limited`]).
    effort: lp::Effort,
}

/// Solves an attacker LP in units where its largest finite bound is about 10^4.
///
/// Why: relations have ±1 coefficients and right-hand side 0, so the LP is invariant under a
/// common scaling of all variables; cell values of 10^10 and more (a census salary total) made
/// HiGHS give up with status `Unknown`. The solution is scaled back; row duals do not change
/// (they depend on the objective and the basis only).
fn solve_scaled(lp: &LinearProgram, stop: Option<Instant>) -> Result<lp::LpSolution, lp::LpError> {
    let scale = scale_of(lp);
    if scale == 1.0 {
        return lp::solve_until(lp, stop);
    }
    let mut s = lp::solve_until(&scaled(lp, scale), stop)?;
    unscale(&mut s, scale);
    Ok(s)
}

/// The unit of [`solve_scaled`]: 1, or a power of ten putting the largest finite bound near 10^4.
fn scale_of(lp: &LinearProgram) -> f64 {
    let largest =
        lp.columns.iter().flat_map(|c| [c.lower.abs(), c.upper.abs()]).filter(|v| v.is_finite()).fold(0.0f64, f64::max);
    if largest <= 1e6 {
        1.0
    } else {
        10f64.powi((largest.log10() - 4.0).floor() as i32)
    }
}

fn scaled(lp: &LinearProgram, scale: f64) -> LinearProgram {
    let mut scaled = lp.clone();
    for c in &mut scaled.columns {
        c.lower /= scale;
        c.upper /= scale;
    }
    scaled
}

fn unscale(s: &mut lp::LpSolution, scale: f64) {
    if scale != 1.0 {
        for v in &mut s.columns {
            *v *= scale;
        }
        s.objective *= scale;
        s.column_duals.clear();
    }
}

/// How a [`CompLp`]'s attacker LPs are solved: each from scratch, or each hot-started from the
/// previous one's basis ([`lp::WarmLp`], in scaled units). Make one `Warm` per thread and
/// sequence of LPs: the witnesses found then depend on that sequence, never on timing.
pub(crate) enum Solves {
    Cold,
    Warm(lp::WarmLp, f64),
}

impl Solves {
    /// The basis of the last solve, when warm and optimal (scaling keeps bases).
    pub fn basis(&self) -> Option<lp::Basis> {
        match self {
            Solves::Cold => None,
            Solves::Warm(w, _) => w.basis(),
        }
    }
}

/// Outcome of one attacker LP for a target and direction.
#[derive(Debug, Clone)]
pub(crate) struct Attack {
    /// `±z_t` reached (capped at the cap).
    pub value: f64,
    /// Nonzero `z` of the optimal solution: a witness attacker table.
    pub witness: Vec<(u32, f64)>,
}

impl CompLp {
    /// Builds the LP over component `cells` whose touching relations are `rows`. With a subset
    /// of a component ("ball"), suppressed cells outside `cells` are fixed at `z = 0`: a
    /// restriction of the attacker, so any optimum is still a valid witness.
    pub fn new(p: &Problem, sup: &[bool], cells: Vec<u32>, rows: Vec<u32>) -> Self {
        let col_of: FastMap<u32, usize> = cells.iter().enumerate().map(|(k, &c)| (c, k)).collect();
        let mut lp = LinearProgram::new(Direction::Maximise);
        for &c in &cells {
            let c = c as usize;
            lp.add_column(0.0, -p.lo_gap[c], p.up_gap[c]);
        }
        for &r in &rows {
            let coefs: Vec<(usize, f64)> = p
                .rel
                .terms(r as usize)
                .filter(|(m, _)| sup[*m as usize])
                .filter_map(|(m, a)| col_of.get(&m).map(|&k| (k, a)))
                .collect();
            lp.add_row(0.0, 0.0, coefs);
        }
        Self { cells, rows, col_of, lp, stop: None, effort: lp::Effort::default() }
    }

    /// The attacker LP for a *fractional* pattern `x` (bounds `−LB·x ≤ z ≤ UB·x`, the
    /// separation LP of the master's LP relaxation) restricted to `cells` (the others fixed at
    /// `z = 0`) and the relations `rows`: on a connected component of the support of `x` it is
    /// the whole separation LP of its targets; on a smaller set ("ball") a restriction of it.
    pub fn fractional_on(p: &Problem, x: &[f64], cells: Vec<u32>, rows: Vec<u32>) -> Self {
        let col_of: FastMap<u32, usize> = cells.iter().enumerate().map(|(k, &c)| (c, k)).collect();
        let mut lp = LinearProgram::new(Direction::Maximise);
        for &c in &cells {
            let (i, xi) = (c as usize, x[c as usize]);
            if xi <= 1e-12 {
                lp.add_column(0.0, 0.0, 0.0);
            } else {
                lp.add_column(0.0, -p.lo_gap[i] * xi, p.up_gap[i] * xi);
            }
        }
        for &r in &rows {
            let coefs = p.rel.terms(r as usize).filter_map(|(m, a)| col_of.get(&m).map(|&k| (k, a))).collect();
            lp.add_row(0.0, 0.0, coefs);
        }
        Self { cells, rows, col_of, lp, stop: None, effort: lp::Effort::default() }
    }

    /// The auditor's two limits, set together so that no audit LP escapes either: every solve
    /// of this LP must end by `stop` (`None`: no limit; past it a solve fails with
    /// [`lp::LpError::Stopped`], see [`SuppressError::is_stop`]) and adds its effort to
    /// `effort` (the count of the work budgets, [`lp::Effort`]).
    pub fn limited(mut self, stop: Option<Instant>, effort: &lp::Effort) -> Self {
        self.stop = stop;
        self.effort = effort.clone();
        self
    }

    /// A warm solver for a sequence of this LP's attacker problems ([`Solves::Warm`]).
    pub fn warm(&self) -> Solves {
        self.warm_from(None)
    }

    /// [`Self::warm`] whose first solve starts from `basis` (of this LP, [`Solves::basis`]).
    pub fn warm_from(&self, basis: Option<lp::Basis>) -> Solves {
        let scale = scale_of(&self.lp);
        Solves::Warm(lp::WarmLp::new(scaled(&self.lp, scale)).with_stop(self.stop).starting_from(basis), scale)
    }

    /// Solves the LP with the objective `Σ dir·z_t` and caps `dir·z_t ≤ cap` of `targets`, and
    /// the caps alone (no objective) of `settled`.
    fn solve_targets(
        &self,
        how: &mut Solves,
        targets: &[(u32, f64, f64)],
        settled: &[(u32, f64, f64)],
    ) -> Result<lp::LpSolution, lp::LpError> {
        let changes = |scale: f64| -> Vec<(usize, f64, f64, f64)> {
            let capped = |&(t, dir, cap): &(u32, f64, f64), cost: f64| {
                let k = self.col_of[&t];
                let c = &self.lp.columns[k];
                let (lo, hi) = if dir > 0.0 { (c.lower, c.upper.min(cap)) } else { (c.lower.max(-cap), c.upper) };
                (k, cost, lo / scale, hi / scale)
            };
            let live = targets.iter().map(|t| capped(t, t.1));
            live.chain(settled.iter().map(|t| capped(t, 0.0))).collect()
        };
        let s = match how {
            Solves::Cold => {
                let mut lp = self.lp.clone();
                for (k, cost, lo, hi) in changes(1.0) {
                    (lp.columns[k].cost, lp.columns[k].lower, lp.columns[k].upper) = (cost, lo, hi);
                }
                solve_scaled(&lp, self.stop)?
            }
            Solves::Warm(w, scale) => {
                let mut s = w.solve(&changes(*scale))?;
                unscale(&mut s, *scale);
                s
            }
        };
        self.effort.add(&self.lp, &s);
        Ok(s)
    }

    fn witness(&self, x: &[f64]) -> Vec<(u32, f64)> {
        self.cells.iter().zip(x).filter(|(_, v)| v.abs() > 1e-9).map(|(&c, &v)| (c, v)).collect()
    }

    /// Maximises `Σ dir·z_t` over `targets = (cell, dir, cap)` with `dir·z_t ≤ cap` — a
    /// restriction of the attacker's region, so its optimum is a valid witness for all.
    pub fn batch(&self, targets: &[(u32, f64, f64)]) -> Result<Vec<(u32, f64)>, SuppressError> {
        self.batch_with(&mut Solves::Cold, targets, &[])
    }

    /// [`Self::batch`] solved as `how` says, with the caps of `settled` kept (targets an
    /// earlier batch reached, now out of the objective): a hot start stays primal feasible
    /// only while no bound moves. The caps only restrict the attacker, so the optimum is still
    /// a valid witness, but one that may reach fewer targets (see the audit's
    /// `SETTLED_CAPS_MIN_CELLS`).
    pub fn batch_with(
        &self,
        how: &mut Solves,
        targets: &[(u32, f64, f64)],
        settled: &[(u32, f64, f64)],
    ) -> Result<Vec<(u32, f64)>, SuppressError> {
        let s = self.solve_targets(how, targets, settled).map_err(|source| SuppressError::Lp {
            context: format!("attacker LP (batch) on a component of {} cells", self.cells.len()),
            source,
        })?;
        Ok(self.witness(&s.columns))
    }

    /// Maximises `dir·z_t` with `dir·z_t ≤ cap` (`cap = +inf` for the exact value; an
    /// unbounded LP then reports `+inf` and no witness). When the value falls short of `need`
    /// also returns the uncapped capacity cut (apply [`Cut::capped`] before use).
    pub fn single(
        &self,
        p: &Problem,
        x: &dyn Fn(u32) -> f64,
        t: u32,
        dir: f64,
        cap: f64,
        need: f64,
    ) -> Result<(Attack, Option<Cut>), SuppressError> {
        self.single_with(&mut Solves::Cold, p, x, t, dir, cap, need)
    }

    /// [`Self::single`] solved as `how` says.
    #[allow(clippy::too_many_arguments)]
    pub fn single_with(
        &self,
        how: &mut Solves,
        p: &Problem,
        x: &dyn Fn(u32) -> f64,
        t: u32,
        dir: f64,
        cap: f64,
        need: f64,
    ) -> Result<(Attack, Option<Cut>), SuppressError> {
        let k = self.col_of[&t];
        let s = match self.solve_targets(how, &[(t, dir, cap)], &[]) {
            Err(lp::LpError::Unbounded) if cap.is_infinite() => {
                let a = Attack { value: f64::INFINITY, witness: Vec::new() };
                return Ok((a, None));
            }
            other => other.map_err(|source| SuppressError::Lp {
                context: format!("attacker LP for cell {t} on {} cells", self.cells.len()),
                source,
            })?,
        };
        let value = dir * s.columns[k];
        let attack = Attack { value, witness: self.witness(&s.columns) };
        let cut = (value < need - tolerance(need)).then(|| self.cut(p, x, t, dir, need, &s.row_duals));
        Ok((attack, cut))
    }

    /// Capacity cut `Σ min(need, d⁺UB + d⁻LB) x ≥ need` from row multipliers (sign chosen to
    /// give the smaller bound at the current pattern `x`).
    fn cut(&self, p: &Problem, x: &dyn Fn(u32) -> f64, t: u32, dir: f64, need: f64, duals: &[f64]) -> Cut {
        let mut best: Option<(f64, Vec<(u32, f64)>)> = None;
        for sign in [1.0, -1.0] {
            let mut d: FastMap<u32, f64> = FastMap::default();
            *d.entry(t).or_insert(0.0) += dir;
            for (row, &r) in self.rows.iter().enumerate() {
                let g = sign * duals.get(row).copied().unwrap_or(0.0);
                if g == 0.0 {
                    continue;
                }
                for (m, a) in p.rel.terms(r as usize) {
                    *d.entry(m).or_insert(0.0) -= g * a;
                }
            }
            let coefs = capacity_coefficients(p, d, need);
            let bound: f64 = coefs.iter().map(|&(c, v)| if x(c) > 0.0 { v * x(c) } else { 0.0 }).sum();
            if best.as_ref().is_none_or(|(b, _)| bound < *b) {
                best = Some((bound, coefs));
            }
        }
        let (_, coefs) = best.expect("two signs tried");
        Cut { coefs, rhs: need }
    }
}

/// The coefficients `d⁺UB + d⁻LB` of a capacity cut at level `need` from `d = ±e_t − Mᵀγ`
/// (cell → entry; [`CompLp`]'s module doc), in cell order, the negligible ones left out.
pub(crate) fn capacity_coefficients(p: &Problem, d: FastMap<u32, f64>, need: f64) -> Vec<(u32, f64)> {
    let mut coefs: Vec<(u32, f64)> = d
        .into_iter()
        .filter(|(_, v)| v.abs() > 1e-9)
        .map(|(c, v)| {
            let i = c as usize;
            let raw = if v > 0.0 { v * p.up_gap[i] } else { -v * p.lo_gap[i] };
            (c, if raw.is_nan() { f64::INFINITY } else { raw })
        })
        .filter(|(_, v)| *v > 1e-12 * need.max(1.0))
        .collect();
    coefs.sort_unstable_by_key(|(c, _)| *c);
    coefs
}

/// The smallest move inside witness `z` that still reaches every target `(cell, dir, level)`:
/// each cell keeps the sign it had in `z` (or stays at 0), suppressed cells outside `z` stay
/// at 0, and the weighted sum of `|z_c|` is minimised — secondaries the method may still
/// publish weigh 1, cells always suppressed 10⁻³. `None` when the LP finds nothing (the
/// caller keeps `z`).
///
/// Why: a witness stays valid while every cell of its support stays suppressed, so a long
/// one (component LPs gave moves through ~9,000 of 11,317 cells on a census enterprise table)
/// is lost by nearly every cleanup trial and re-solved each time; a minimal one is a short
/// cycle through the target, mostly over cells no trial can publish.
pub(crate) fn sparsest(
    p: &Problem,
    sup: &[bool],
    z: &[(u32, f64)],
    targets: &[(u32, f64, f64)],
    stop: Option<Instant>,
    effort: &lp::Effort,
) -> Result<Option<Vec<(u32, f64)>>, SuppressError> {
    let moved: Vec<(u32, f64)> = z.iter().copied().filter(|&(c, v)| v != 0.0 && sup[c as usize]).collect();
    let cells: Vec<u32> = moved.iter().map(|&(c, _)| c).collect();
    let rows = p.relations_touching(&cells);
    let mut comp = CompLp::new(p, sup, cells, rows);
    comp.lp.direction = Direction::Minimise;
    for (col, &(c, v)) in comp.lp.columns.iter_mut().zip(&moved) {
        let w = if p.fix[c as usize] == super::problem::Fix::Free { 1.0 } else { 1e-3 };
        // The sign `z` gave the cell: minimising `w·|z_c|` is then linear.
        if v > 0.0 {
            (col.cost, col.lower) = (w, 0.0);
        } else {
            (col.cost, col.upper) = (-w, 0.0);
        }
    }
    for &(t, dir, level) in targets {
        let Some(&k) = comp.col_of.get(&t) else { return Ok(None) };
        let c = &mut comp.lp.columns[k];
        if dir > 0.0 {
            c.lower = c.lower.max(level);
        } else {
            c.upper = c.upper.min(-level);
        }
        if c.lower > c.upper {
            return Ok(None);
        }
    }
    match solve_scaled(&comp.lp, stop) {
        Ok(s) => {
            effort.add(&comp.lp, &s);
            Ok(Some(comp.cells.iter().zip(&s.columns).filter(|(_, v)| v.abs() > 1e-9).map(|(&c, &v)| (c, v)).collect()))
        }
        Err(lp::LpError::Stopped) => {
            Err(SuppressError::Lp { context: "a sparser witness".into(), source: lp::LpError::Stopped })
        }
        Err(_) => Ok(None),
    }
}

/// Absolute tolerance for reaching a protection level `need`.
pub(crate) fn tolerance(need: f64) -> f64 {
    1e-6 * need.abs().max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suppress::tests::{grid, primary};
    use crate::table::CellStatus;

    /// Settled targets keep their caps and leave the objective: a 3×3 suppressed block of a
    /// 4×4 table, target (1,1) up to 3; with (1,2) and (1,3) settled at a downward cap of 1
    /// each, row 1 lets the target rise by 2 only. Solved warm in the order without, with,
    /// without (the hot start sets and releases the caps), and cold, alike.
    #[test]
    fn settled_targets_keep_their_caps() {
        let mut t = grid(&vec![vec![10.0; 4]; 4], None);
        let a = primary(&mut t, &[1, 1], 3.0) as u32;
        let mut st = t.statuses();
        for r in 1..=3 {
            for c in 1..=3 {
                let i = t.find(&[r, c]).unwrap();
                if st[i] != CellStatus::Primary {
                    st[i] = CellStatus::Secondary;
                }
            }
        }
        let p = Problem::from_table(&t, Some(&st));
        let sup: Vec<bool> = st.iter().map(|s| s.is_suppressed()).collect();
        let cells: Vec<u32> = (0..p.n() as u32).filter(|&c| sup[c as usize]).collect();
        let rows = p.relations_touching(&cells);
        let lp = CompLp::new(&p, &sup, cells, rows);
        let (b, c) = (t.find(&[1, 2]).unwrap() as u32, t.find(&[1, 3]).unwrap() as u32);
        let settled = [(b, -1.0, 1.0), (c, -1.0, 1.0)];
        let target = [(a, 1.0, 3.0)];
        let at = |w: &[(u32, f64)], cell: u32| w.iter().find(|e| e.0 == cell).map_or(0.0, |e| e.1);
        let mut how = lp.warm();
        for (round, kept) in [&[][..], &settled[..], &[][..]].into_iter().enumerate() {
            let w = lp.batch_with(&mut how, &target, kept).unwrap();
            let cold = lp.batch_with(&mut Solves::Cold, &target, kept).unwrap();
            let want = if kept.is_empty() { 3.0 } else { 2.0 };
            for w in [&w, &cold] {
                assert!((at(w, a) - want).abs() < 1e-6, "round {round}: {w:?}");
                if !kept.is_empty() {
                    assert!(at(w, b) >= -1.0 - 1e-6 && at(w, c) >= -1.0 - 1e-6, "round {round}: {w:?}");
                }
            }
        }
    }

    /// A 4×4 table, a primary at (1,1), two disjoint rectangles suppressed: rows 1–2 × cols
    /// 1–2 and rows 3–4 × cols 3–4. A witness moving both rectangles reaches the primary; the
    /// sparsest move inside it is the first rectangle alone, at exactly the level asked.
    #[test]
    fn sparsest_keeps_the_cycle_through_the_target() {
        let mut t = grid(&vec![vec![10.0; 4]; 4], None);
        let a = primary(&mut t, &[1, 1], 3.0);
        let mut st = t.statuses();
        let rect = |r: u32, c: u32| [[r, c], [r, c + 1], [r + 1, c], [r + 1, c + 1]];
        for rc in rect(1, 1).into_iter().chain(rect(3, 3)) {
            let i = t.find(&rc).unwrap();
            if st[i] != CellStatus::Primary {
                st[i] = CellStatus::Secondary;
            }
        }
        let p = Problem::from_table(&t, Some(&st));
        let sup: Vec<bool> = st.iter().map(|s| s.is_suppressed()).collect();
        let sign = |[r, c]: [u32; 2]| if (r + c) % 2 == 0 { 1.0 } else { -1.0 };
        let z: Vec<(u32, f64)> = rect(1, 1)
            .into_iter()
            .map(|rc| (t.find(&rc).unwrap() as u32, 5.0 * sign(rc)))
            .chain(rect(3, 3).into_iter().map(|rc| (t.find(&rc).unwrap() as u32, 7.0 * sign(rc))))
            .collect();
        let got = sparsest(&p, &sup, &z, &[(a as u32, 1.0, 3.0)], None, &Default::default()).unwrap().unwrap();
        let mut want: Vec<(u32, f64)> =
            rect(1, 1).into_iter().map(|rc| (t.find(&rc).unwrap() as u32, 3.0 * sign(rc))).collect();
        want.sort_by_key(|w| w.0);
        let mut got = got;
        got.sort_by_key(|w| w.0);
        assert_eq!(got.len(), 4, "{got:?}");
        for (g, w) in got.iter().zip(&want) {
            assert!(g.0 == w.0 && (g.1 - w.1).abs() < 1e-6, "{got:?} != {want:?}");
        }
        // Asked to move the primary down, a move conformal to `z` (which moves it up) cannot.
        assert_eq!(sparsest(&p, &sup, &z, &[(a as u32, -1.0, 3.0)], None, &Default::default()).unwrap(), None);
    }
}
