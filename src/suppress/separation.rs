//! Separation of capacity cuts at a fractional pattern, and the single-relation capacity rows:
//! what lets [`super::exact`] strengthen its master on tables of tens of thousands of cells.
//!
//! Why it scales. At a fractional pattern `x` the attacker of the LP relaxation moves cell `i`
//! within `[−LB_i·x_i, UB_i·x_i]` (Fischetti–Salazar 2000, §3), so cells with `x_i = 0` are
//! fixed and the attacker LP splits into independent blocks: the connected components of the
//! support of `x` through relations. Each target's LP is solved on its component only; a cheap
//! restriction is tried first (a "ball" of a few relation hops: if the target reaches its level
//! there, it does in the whole), and one attacker solution that reaches another target's level
//! certifies it too (tau-Argus's CSP "sleeps" such protection levels). A component's targets go
//! in runs that solve its LP once and then hot-start it target after target; runs go in waves of
//! a fixed size, in parallel within a wave; the result does not depend on the thread count, since
//! every run's and wave's composition and the order in which results are used are fixed.
//!
//! Validity of every cut: the multipliers `γ` may come from any LP (a component, a ball): for
//! *any* `γ` over any set of relations, `Σ_i min(rhs, d_i⁺ UB_i + d_i⁻ LB_i) x_i ≥ rhs` with
//! `d = ±e_t − Mᵀγ` holds for every protecting pattern ([`super::attacker`]). The
//! single-relation rows are the case `γ = ±e_r` for a relation `r` through the target: in `r`
//! the other cells must absorb the target's move, each within its own range (the "bridgeless"
//! inequalities of the F–S paper, exact for single-relation attackers).

use rayon::prelude::*;

use super::attacker::{tolerance, CompLp, Cut, Solves};
use super::problem::{Fix, Problem};
use super::SuppressError;

/// `x_i` above this is in the support.
const SUPPORT_EPS: f64 = 1e-9;

/// A cut is added when its left-hand side at `x` falls short of the rhs by this share.
const MIN_VIOLATION: f64 = 1e-5;

/// Components with more cells than this try a ball LP before the component LP.
const BALL_FIRST: usize = 300;

/// Ball radius (relation hops) and size.
const BALL: (usize, usize) = (3, 250);

/// Targets per hot-started run of component LPs ([`separate_run`]), and runs per parallel
/// wave (fixed: results do not depend on the thread count).
const RUN: usize = 8;
const WAVE_RUNS: usize = 4;

/// Which duals give a short target's cut in a hot-started run ([`separate_run`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CutDuals {
    /// A solve from scratch: the hot-started solve's duals are as optimal, but other ones (the
    /// attacker LP is degenerate) and gave weaker cuts where the master lives on them: on the
    /// README example's table the bound rose more slowly and HiTaS's subtable (masters of 10
    /// nodes) ended 58 % dearer.
    Cold,
    /// The hot-started solve's own: valid as any duals are (module doc), and one LP instead of
    /// two per short target. For masters that branch, whose patterns' audits add cuts from
    /// scratch anyway: the same proven optima on the suite, c3-persons' cutting planes 16.4 →
    /// 11.6 s, Adult's run 14.4 → 12.0 s (BENCHMARKS "Session 86").
    Hot,
}

/// Direction sign of direction index `d` (0 = down, 1 = up).
fn sign(d: usize) -> f64 {
    if d == 0 {
        -1.0
    } else {
        1.0
    }
}

/// Protection level of sensitive `k` in direction `d`.
fn need(p: &Problem, k: usize, d: usize) -> f64 {
    let s = &p.sens[k];
    if d == 0 {
        s.lpl
    } else {
        s.upl
    }
}

/// The single-relation capacity rows (module doc) of every sensitive cell, direction and
/// relation through it, capped at the protection level. Published cells are left out (their
/// `x` is 0); a row whose capacity cannot reach the level makes the master infeasible, as it
/// should (no pattern protects the cell).
pub(crate) fn relation_cuts(p: &Problem) -> Vec<Cut> {
    let mut out = Vec::new();
    for (k, s) in p.sens.iter().enumerate() {
        let t = s.cell;
        for d in 0..2 {
            let q = need(p, k, d);
            if q <= 0.0 {
                continue;
            }
            for &r in p.rel.of_cell(t as usize) {
                let Some(a_t) = p.rel.terms(r as usize).find(|&(m, _)| m == t).map(|(_, a)| a) else {
                    continue;
                };
                if a_t == 0.0 {
                    continue;
                }
                let g = sign(d) / a_t;
                let coefs: Vec<(u32, f64)> = p
                    .rel
                    .terms(r as usize)
                    .filter(|&(m, _)| m != t && p.fix[m as usize] != Fix::Published)
                    .map(|(m, a)| {
                        let (i, dj) = (m as usize, -g * a);
                        let raw = if dj > 0.0 { dj * p.up_gap[i] } else { -dj * p.lo_gap[i] };
                        (m, if raw.is_nan() { q } else { raw.min(q) })
                    })
                    .filter(|&(_, v)| v > 1e-12 * q.max(1.0))
                    .collect();
                out.push(Cut { coefs, rhs: q }.merged());
            }
        }
    }
    out
}

/// Connected components of the support of `x` through relations: per component its cells and
/// the relations touching them (both sorted); `comp_of[i]` is `usize::MAX` off the support.
struct Components {
    comp_of: Vec<usize>,
    comps: Vec<(Vec<u32>, Vec<u32>)>,
}

fn find(parent: &mut [u32], mut i: u32) -> u32 {
    while parent[i as usize] != i {
        let g = parent[parent[i as usize] as usize];
        parent[i as usize] = g;
        i = g;
    }
    i
}

fn components(p: &Problem, x: &[f64]) -> Components {
    let n = p.n();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    for r in 0..p.rel.len() {
        let mut first = None;
        for m in p.rel.members(r).filter(|&m| x[m as usize] > SUPPORT_EPS) {
            match first {
                None => first = Some(m),
                Some(f) => {
                    let (a, b) = (find(&mut parent, f), find(&mut parent, m));
                    if a != b {
                        parent[a.max(b) as usize] = a.min(b);
                    }
                }
            }
        }
    }
    let mut comp_of = vec![usize::MAX; n];
    let mut id_of_root = vec![usize::MAX; n];
    let mut comps: Vec<(Vec<u32>, Vec<u32>)> = Vec::new();
    for i in (0..n).filter(|&i| x[i] > SUPPORT_EPS) {
        let root = find(&mut parent, i as u32) as usize;
        if id_of_root[root] == usize::MAX {
            id_of_root[root] = comps.len();
            comps.push((Vec::new(), Vec::new()));
        }
        comp_of[i] = id_of_root[root];
        comps[id_of_root[root]].0.push(i as u32);
    }
    for r in 0..p.rel.len() {
        if let Some(m) = p.rel.members(r).find(|&m| x[m as usize] > SUPPORT_EPS) {
            comps[comp_of[m as usize]].1.push(r as u32);
        }
    }
    Components { comp_of, comps }
}

/// Support cells within `hops` relation hops of `t` (at most `max`), and the relations
/// touching them.
fn ball(p: &Problem, x: &[f64], t: u32, hops: usize, max: usize) -> (Vec<u32>, Vec<u32>) {
    let mut seen = crate::table::relations::FastMap::<u32, ()>::default();
    seen.insert(t, ());
    let mut cells = vec![t];
    let mut layer = 0..1;
    for _ in 0..hops {
        let end = cells.len();
        for k in layer.clone() {
            let c = cells[k] as usize;
            for &r in p.rel.of_cell(c) {
                for m in p.rel.members(r as usize) {
                    if cells.len() < max && x[m as usize] > SUPPORT_EPS && seen.insert(m, ()).is_none() {
                        cells.push(m);
                    }
                }
            }
        }
        layer = end..cells.len();
    }
    let rows = p.relations_touching(&cells);
    cells.sort_unstable();
    (cells, rows)
}

/// What one target's separation found.
enum Outcome {
    /// Protected at `x`; an attacker solution that shows it (it may show others too).
    Reached(Vec<(u32, f64)>),
    /// A capacity cut violated by `x`.
    Cut(Cut),
    /// Short of the level, but the cut found is not violated (numerical tolerance).
    Nothing,
}

/// Whether `cut` (capped) is violated by `x`.
fn violated(cut: &Cut, x: &[f64]) -> bool {
    let lhs: f64 = cut.coefs.iter().map(|&(j, v)| v * x[j as usize]).sum();
    lhs < cut.rhs * (1.0 - MIN_VIOLATION)
}

/// A target (sensitive cell, direction) and what its LPs found.
type Decided = ((usize, usize), Outcome);

/// One target's ball LP ([`BALL`]) on a component of more than [`BALL_FIRST`] cells:
/// `Some` when it decides the target (reached, or a violated cut), `None` when the component
/// LP must.
fn by_ball(p: &Problem, x: &[f64], k: usize, d: usize) -> Result<Option<Outcome>, SuppressError> {
    let t = p.sens[k].cell;
    let q = need(p, k, d);
    let w = |c: u32| x[c as usize];
    let (bc, br) = ball(p, x, t, BALL.0, BALL.1);
    let lp = CompLp::fractional_on(p, x, bc, br);
    let (att, cut) = lp.single(p, &w, t, sign(d), q, q)?;
    if att.value >= q - tolerance(q) {
        return Ok(Some(Outcome::Reached(att.witness)));
    }
    Ok(cut.map(|c| c.capped(q)).filter(|c| violated(c, x)).map(Outcome::Cut))
}

/// A run of targets on one component, in order: each target not shown yet (by `done`, or by
/// an attacker solution found earlier in the run) gets its ball LP if the component is large,
/// then the component LP, hot-started from the run's previous solve. Why runs: the component LP
/// is built once per run instead of once per target, and a hot start re-solves it after a
/// change of one column's cost and bound; with [`CutDuals::Cold`] a target it leaves short is
/// solved again from scratch, for its cut. Measured on c4-persons, singleton rule on, one
/// thread: 2.0–2.5 s a round when every target built and solved its LP from scratch, 0.4–1.8 s
/// in runs (the master LP: 0.05 s). When the component LP is built, one batch LP first
/// maximises the run's targets left together, each capped at its level; the levels it reaches
/// need no single LP (c3-persons: ~500 hot-started single LPs a round at ~10 ms each; its LP
/// phase 22.3 → 19.7 s). Its outcomes depend only on the run's composition, never on the
/// thread that runs it.
fn separate_run(
    p: &Problem,
    x: &[f64],
    comps: &Components,
    run: &[(usize, usize)],
    done: &[[bool; 2]],
    duals: CutDuals,
) -> Result<Vec<Decided>, SuppressError> {
    let (cells, rows) = &comps.comps[comps.comp_of[p.sens[run[0].0].cell as usize]];
    // Built at the first target its ball does not decide: on a component of 10^5 cells (tabu's
    // cutting planes on a 5-dimensional table) the balls decide most, and a build per run would
    // cost more than they do.
    let mut component: Option<(CompLp, Solves)> = None;
    let w = |c: u32| x[c as usize];
    let mut shown: Vec<(usize, usize)> = Vec::new();
    let mut out = Vec::with_capacity(run.len());
    for (at, &(k, d)) in run.iter().enumerate() {
        if done[k][d] || shown.contains(&(k, d)) {
            continue;
        }
        let ball = if cells.len() > BALL_FIRST { by_ball(p, x, k, d)? } else { None };
        let o = match ball {
            Some(o) => o,
            None => {
                let (t, q) = (p.sens[k].cell, need(p, k, d));
                if component.is_none() {
                    let lp = CompLp::fractional_on(p, x, cells.clone(), rows.clone());
                    let mut warm = lp.warm();
                    // One batch LP for the run's targets left, each capped at its level: every
                    // level its solution reaches needs no LP of its own. Only reachable targets
                    // are shown, so the cuts are those of the single LPs alone.
                    let batch = batch_targets(p, &run[at..], done, &shown);
                    let z = if batch.len() > 1 { Some(lp.batch_with(&mut warm, &batch, &[])?) } else { None };
                    component = Some((lp, warm));
                    if let Some(z) = z {
                        let by_batch = reached_by(p, &z);
                        let this_one = by_batch.contains(&(k, d));
                        shown.extend(by_batch);
                        if this_one {
                            out.push(((k, d), Outcome::Reached(z)));
                            continue;
                        }
                    }
                }
                let (lp, warm) = component.as_mut().expect("built above");
                let (att, hot_cut) = lp.single_with(warm, p, &w, t, sign(d), q, q)?;
                if att.value >= q - tolerance(q) {
                    Outcome::Reached(att.witness)
                } else {
                    let cut = match duals {
                        CutDuals::Hot => hot_cut,
                        CutDuals::Cold => lp.single(p, &w, t, sign(d), q, q)?.1,
                    };
                    match cut.map(|c| c.capped(q)) {
                        Some(c) if violated(&c, x) => Outcome::Cut(c),
                        _ => Outcome::Nothing,
                    }
                }
            }
        };
        if let Outcome::Reached(z) = &o {
            shown.extend(reached_by(p, z));
        }
        out.push(((k, d), o));
    }
    Ok(out)
}

/// The batch LP's targets `(cell, dir, level)` of `run`: those not shown yet, one direction per
/// cell (a cell's two directions in one objective would cancel).
fn batch_targets(
    p: &Problem,
    run: &[(usize, usize)],
    done: &[[bool; 2]],
    shown: &[(usize, usize)],
) -> Vec<(u32, f64, f64)> {
    let mut out: Vec<(u32, f64, f64)> = Vec::new();
    for &(k, d) in run {
        let t = p.sens[k].cell;
        if done[k][d] || shown.contains(&(k, d)) || out.iter().any(|o| o.0 == t) {
            continue;
        }
        out.push((t, sign(d), need(p, k, d)));
    }
    out
}

/// The (sensitive cell, direction) pairs whose level the attacker solution `z` reaches: it is
/// feasible for the whole LP, so it shows every level it reaches.
fn reached_by(p: &Problem, z: &[(u32, f64)]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for &(c, v) in z {
        if let Some(&k2) = p.sens_of.get(&c) {
            let k2 = k2 as usize;
            for d2 in 0..2 {
                let q2 = need(p, k2, d2);
                if sign(d2) * v >= q2 - tolerance(q2) {
                    out.push((k2, d2));
                }
            }
        }
    }
    out
}

/// Capacity cuts violated by the fractional pattern `x`, at most one per sensitive cell and
/// direction, in a deterministic order, from the `duals` chosen; `stop` is asked between waves
/// (a hard stop: the cuts found so far are returned).
pub(crate) fn separate(
    p: &Problem,
    x: &[f64],
    duals: CutDuals,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<Cut>, SuppressError> {
    let comps = components(p, x);
    // A target whose cell is off the support cannot move: every level is violated there, and
    // only the master's rows (sensitive cells are fixed at 1) could cause it; skip. The others
    // queue by component, in cell order within each.
    let mut queues: Vec<std::collections::VecDeque<(usize, usize)>> = vec![Default::default(); comps.comps.len()];
    let mut todo = 0;
    for (k, d) in (0..p.sens.len()).flat_map(|k| [(k, 0), (k, 1)]).filter(|&(k, d)| need(p, k, d) > 0.0) {
        let c = comps.comp_of[p.sens[k].cell as usize];
        if c != usize::MAX {
            queues[c].push_back((k, d));
            todo += 1;
        }
    }
    let mut order: Vec<usize> = (0..queues.len()).filter(|&c| !queues[c].is_empty()).collect();
    order.sort_by_key(|&c| queues[c][0]);
    let mut done = vec![[false; 2]; p.sens.len()];
    let mut outcomes = [0usize; 3];
    let mut cuts = Vec::new();
    let mut next = 0;
    while next < order.len() {
        if stop() {
            break;
        }
        // A wave: up to `WAVE_RUNS` runs of up to `RUN` targets not shown yet, component by
        // component (fixed: results do not depend on the thread count).
        let mut wave: Vec<Vec<(usize, usize)>> = Vec::with_capacity(WAVE_RUNS);
        while next < order.len() && wave.len() < WAVE_RUNS {
            let q = &mut queues[order[next]];
            let mut run = Vec::with_capacity(RUN);
            while run.len() < RUN {
                let Some((k, d)) = q.pop_front() else { break };
                if !done[k][d] {
                    run.push((k, d));
                }
            }
            if q.is_empty() {
                next += 1;
            }
            if !run.is_empty() {
                wave.push(run);
            }
        }
        let res: Vec<Vec<Decided>> =
            wave.par_iter().map(|run| separate_run(p, x, &comps, run, &done, duals)).collect::<Result<_, _>>()?;
        for ((k, d), o) in res.into_iter().flatten() {
            done[k][d] = true;
            match o {
                Outcome::Reached(z) => {
                    outcomes[0] += 1;
                    for (k2, d2) in reached_by(p, &z) {
                        done[k2][d2] = true;
                    }
                }
                Outcome::Cut(c) => {
                    outcomes[1] += 1;
                    cuts.push(c)
                }
                Outcome::Nothing => outcomes[2] += 1,
            }
        }
    }
    // Where a cutting-plane round's time goes: each target decided here took one or two
    // attacker LPs (ball, then component); the others were shown by those LPs' solutions.
    super::trace::trace(format_args!(
        "separation: {todo} targets, decided by LP: {} reached, {} cut, {} short without a violated cut",
        outcomes[0], outcomes[1], outcomes[2]
    ));
    cuts.sort_by(|a, b| cut_key(a).partial_cmp(&cut_key(b)).unwrap_or(std::cmp::Ordering::Equal));
    cuts.dedup();
    Ok(cuts)
}

/// Ordering key of a cut for deduplication (normalised coefficients).
fn cut_key(c: &Cut) -> Vec<(u32, f64)> {
    c.coefs.iter().map(|&(j, v)| (j, v / c.rhs)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::synth::{generate, SynthSpec};
    use crate::table::Table;

    /// A small synthetic frequency table (the tests' shapes differ in `dims` and `density`).
    fn table(dims: Vec<Vec<usize>>, density: f64, seed: u64) -> Table {
        generate(&SynthSpec { dims, density, mean_freq: 3.0, min_freq: 3, protection: 0.15, seed }).unwrap()
    }

    /// A random fractional pattern of `p`: sensitive cells at 1, about 30 % of the others at 0,
    /// the rest uniform in (0.3, 1).
    fn fractional(p: &Problem, seed: u64) -> Vec<f64> {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (0..p.n())
            .map(|i| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let r = (state >> 33) as f64 / (1u64 << 31) as f64;
                if p.sens_of.contains_key(&(i as u32)) {
                    1.0
                } else if r < 0.3 {
                    0.0
                } else {
                    r
                }
            })
            .collect()
    }

    /// The runs' shortcuts (a batch LP per run, a target shown by another's solution) never
    /// change the cuts: at random fractional patterns `separate` returns exactly the cuts of one
    /// attacker LP per target solved alone on its component (components under [`BALL_FIRST`]
    /// cells, so no ball LP).
    #[test]
    fn shown_targets_never_change_the_cuts() {
        let mut compared = 0;
        for seed in 0..8u64 {
            let t = table(vec![vec![3, 2], vec![4]], 0.9, seed);
            let p = Problem::from_table(&t, None);
            if p.sens.is_empty() {
                continue;
            }
            let x = fractional(&p, seed);
            let comps = components(&p, &x);
            assert!(comps.comps.iter().all(|c| c.0.len() <= BALL_FIRST), "seed {seed}: a ball would be tried");
            let w = |c: u32| x[c as usize];
            let mut alone = Vec::new();
            for k in 0..p.sens.len() {
                for d in 0..2 {
                    let (tc, q) = (p.sens[k].cell, need(&p, k, d));
                    let ci = comps.comp_of[tc as usize];
                    if q <= 0.0 || ci == usize::MAX {
                        continue;
                    }
                    let (cells, rows) = &comps.comps[ci];
                    let lp = CompLp::fractional_on(&p, &x, cells.clone(), rows.clone());
                    let (att, cut) = lp.single(&p, &w, tc, sign(d), q, q).unwrap();
                    if att.value >= q - tolerance(q) {
                        continue;
                    }
                    if let Some(c) = cut.map(|c| c.capped(q)).filter(|c| violated(c, &x)) {
                        alone.push(c);
                    }
                }
            }
            alone.sort_by(|a, b| cut_key(a).partial_cmp(&cut_key(b)).unwrap_or(std::cmp::Ordering::Equal));
            alone.dedup();
            let cuts = separate(&p, &x, CutDuals::Cold, &|| false).unwrap();
            assert_eq!(cuts, alone, "seed {seed}");
            compared += usize::from(!cuts.is_empty());
        }
        assert!(compared >= 3, "only {compared} patterns with cuts");
    }

    /// Every protecting pattern of `t` (its problem `p`), by the independent audit (attacker LPs
    /// only, exact intervals), over at most 12 free cells.
    fn protecting_patterns(t: &Table, p: &Problem) -> Vec<Vec<bool>> {
        use crate::suppress::{audit, AuditOptions};
        let free: Vec<usize> = (0..p.n()).filter(|&i| p.fix[i] == Fix::Free).collect();
        assert!(free.len() <= 12, "{} free cells: too many to enumerate", free.len());
        let o = AuditOptions { exact_intervals: true, lp_only: true };
        (0..1u32 << free.len())
            .map(|m| {
                let mut sup: Vec<bool> = (0..p.n()).map(|i| p.fix[i] == Fix::Suppressed).collect();
                for (b, &i) in free.iter().enumerate() {
                    sup[i] = m >> b & 1 == 1;
                }
                sup
            })
            .filter(|sup| audit(t, &crate::suppress::output_statuses(p, sup), false, &o).unwrap().is_clean())
            .collect()
    }

    /// Cuts from the hot-started solves' duals ([`CutDuals::Hot`]) are capacity cuts all the
    /// same: on tiny tables, at random fractional patterns, each is violated there and holds at
    /// every protecting pattern (enumerated), and they come where the cuts from scratch come
    /// (whether a target falls short does not depend on the duals).
    #[test]
    fn hot_duals_give_valid_cuts_where_cold_ones_do() {
        let mut with_cuts = 0;
        for (k, dims) in
            [vec![vec![3], vec![2]], vec![vec![2], vec![3]], vec![vec![2, 1], vec![2]]].into_iter().enumerate()
        {
            for seed in 0..6u64 {
                let t = table(dims.clone(), 1.0, 10 * k as u64 + seed);
                let p = Problem::from_table(&t, None);
                if p.sens.is_empty() || (0..p.n()).filter(|&i| p.fix[i] == Fix::Free).count() > 12 {
                    continue;
                }
                let protecting = protecting_patterns(&t, &p);
                let x = fractional(&p, seed);
                let hot = separate(&p, &x, CutDuals::Hot, &|| false).unwrap();
                let cold = separate(&p, &x, CutDuals::Cold, &|| false).unwrap();
                assert_eq!(hot.is_empty(), cold.is_empty(), "{dims:?} seed {seed}");
                for c in &hot {
                    assert!(violated(c, &x), "{dims:?} seed {seed}: {c:?}");
                    for sup in &protecting {
                        assert!(c.lhs(sup) >= c.rhs - tolerance(c.rhs), "{dims:?} seed {seed}: cuts off {sup:?}");
                    }
                }
                with_cuts += usize::from(!hot.is_empty() && !protecting.is_empty());
            }
        }
        assert!(with_cuts >= 4, "only {with_cuts} patterns with cuts");
    }

    /// Every single-relation row holds at every pattern the audit accepts, and the
    /// component-wise separation finds no cut at a protecting pattern but finds one at the
    /// bare primaries.
    #[test]
    fn relation_rows_hold_at_protected_patterns_and_separation_is_exact_at_integers() {
        for seed in 0..6 {
            let t = table(vec![vec![2, 2], vec![3]], 0.8, seed);
            let p = Problem::from_table(&t, None);
            if p.sens.is_empty() {
                continue;
            }
            let o = crate::suppress::ProtectOptions { singleton_rule: false, ..Default::default() };
            let sup = crate::suppress::fast::run(&p, &o, &crate::suppress::budget::Deadline::after(60.0)).unwrap();
            let x: Vec<f64> = sup.iter().map(|&s| f64::from(u8::from(s))).collect();
            for c in relation_cuts(&p) {
                assert!(c.lhs(&sup) >= c.rhs - tolerance(c.rhs), "seed {seed}: {c:?}");
            }
            assert!(separate(&p, &x, CutDuals::Cold, &|| false).unwrap().is_empty(), "seed {seed}");
            let bare: Vec<f64> = p.initial().iter().map(|&s| f64::from(u8::from(s))).collect();
            let cuts = separate(&p, &bare, CutDuals::Cold, &|| false).unwrap();
            assert!(!cuts.is_empty(), "seed {seed}");
            for c in &cuts {
                assert!(c.lhs(&sup) >= c.rhs - tolerance(c.rhs), "seed {seed}: a cut cuts off a protecting pattern");
            }
        }
    }
}
