//! The starting pattern of the heuristics: [`complete`] turns the primaries (or any pattern)
//! into a clean one by a construction, then the closure and repair of [`Work`].
//!
//! The construction ([`super::Construction`]): on tables up to `ASSIGN_MAX_CELLS` cells with a
//! geometry, the cube assignment ([`super::cubes`]: one hypercube per sensitive cell, sharing
//! cells, improved by local search) followed by the closure of sensitive cells without a cube;
//! larger tables use the parallel hypercube cover ([`Work::cover`]: cheapest hypercube per
//! sensitive cell, then sums of cubes ([`multi_cube`]), and above `LAST_RESORT_CELLS` cubes
//! that climb the hierarchies, ancestor cubes and box LPs ([`box_cover`])), whose cubes become
//! candidate certificates for the audit;
//! `Closure` starts from the closure alone.

use std::time::Instant;

use rayon::prelude::*;

use super::attacker::tolerance;
use super::audit::DeferSingles;
use super::budget::Deadline;
use super::geometry::Cube;
use super::problem::{requirement, Fix, Problem};
use super::trace::trace;
use super::work::Work;
use super::{Construction, SuppressError};

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
pub(crate) const ASSIGN_MAX_CELLS: usize = 200_000;
const ASSIGN_PASSES: usize = 8;

/// Cost of using cell `c` in a cube that protects a cell with movement requirement `req` on
/// pattern `sup`: `None` when it cannot carry the movement or must stay published, 0 when it is
/// already suppressed, else its cost (plus a tiny amount, so fewer new cells win ties).
pub(crate) fn cube_cell_cost(p: &Problem, sup: &[bool], req: f64, c: usize) -> Option<f64> {
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
            Construction::Closure | Construction::SplitClosure => false,
        }
}

/// The order in which [`Work::cover`] lays its cubes: the most detailed sensitive cells first
/// (largest sum of their hierarchy depths), and within a depth the smallest requirement first;
/// then by index, so the order is the input's alone.
///
/// Why: a cube costs only its cells not yet suppressed, and a marginal's cube can run down to
/// its children. Laid first, the detailed cells take partners among their siblings and nearest
/// marginals, and the marginals' cubes after them reuse those cells. Laid after the marginals
/// (largest requirement first, the order before, mixes the levels), a marginal's cube takes its
/// partners among the marginals (dear), and the detailed cubes then climb to those free cells.
/// Measured on c4-geo3 (session 97, BENCHMARKS): 73.51 % of the value suppressed against
/// 76.47 % largest requirement first and 77.65 % least detailed first; on c5-geo3 83.85 %
/// against 85.61 %.
fn cover_order(p: &Problem, geom: &super::geometry::Geometry) -> Vec<usize> {
    let depths = geom.depths();
    let detail = |k: usize| -> u32 { geom.levels(&depths, p.sens[k].cell).sum() };
    let mut order: Vec<(u32, usize)> = (0..p.sens.len()).map(|k| (detail(k), k)).collect();
    order.sort_by(|&(da, a), &(db, b)| {
        db.cmp(&da).then(requirement(&p.sens[a]).total_cmp(&requirement(&p.sens[b]))).then(a.cmp(&b))
    });
    order.into_iter().map(|(_, k)| k).collect()
}

impl Work<'_, '_> {
    /// Hypercube cover (step 1 on large tables with a geometry): every sensitive cell without a
    /// combinatorial certificate gets its cheapest hypercube ([`Geometry::cheapest_cube`]:
    /// existing, unfixed cells of capacity ≥ its requirement, already suppressed ones free)
    /// suppressed whole, so the audit can certify it without an LP. Sensitive cells go in
    /// [`cover_order`] (most detailed first) in batches: within a batch the cubes are chosen
    /// in parallel against the pattern at the start of the batch and applied in order, so the
    /// pattern does not depend on the number of threads. Cells without a cube get a second
    /// search with a larger budget (climbing too when last resorts are on:
    /// [`Geometry::climbing_cube`]), then the last resorts or the closure.
    ///
    /// [`Geometry::cheapest_cube`]: super::geometry::Geometry::cheapest_cube
    /// [`Geometry::climbing_cube`]: super::geometry::Geometry::climbing_cube
    ///
    /// Fails with the time limit's error once `deadline`'s grace period is over: nothing
    /// audited exists yet to fall back on (measured: a 1 M-cell census table with 62 % of
    /// its cells primary spent 450 s of a 300 s limit here before failing in the repair).
    pub fn cover(&mut self, deadline: &Deadline) -> Result<Vec<u32>, SuppressError> {
        let p = self.p;
        let Some(geom) = p.geometry() else {
            return Ok((0..p.sens.len() as u32).map(|k| p.sens[k as usize].cell).collect());
        };
        let stop = || if deadline.wall_reached() { Err(deadline.error("the hypercube cover")) } else { Ok(()) };
        let order = cover_order(p, geom);
        let mut left = Vec::new();
        for batch in order.chunks(COVER_BATCH) {
            stop()?;
            self.cover_batch(geom, batch, COVER_BUDGET, false, &mut left);
        }
        if !left.is_empty() {
            // The pattern is denser now (more cells cost nothing) and the budget larger. Where
            // the last resort would be the ancestor cube, the retry also climbs
            // (`Geometry::climbing_cube`): on c4-geo3 (session 96) it left 1,117 cells to the
            // last resorts instead of 51,329. Not in the first pass: climbing there reaches
            // the high marginals early and every later cube reuses them (with 8 root paths per
            // node: 83.3 % of the value suppressed instead of 78.5 %).
            let t0 = Instant::now();
            let first = std::mem::take(&mut left);
            for batch in first.chunks(COVER_BATCH) {
                stop()?;
                self.cover_batch(geom, batch, COVER_RETRY_BUDGET, self.last_resort_cubes, &mut left);
            }
            trace(format_args!(
                "hypercube cover retry {:.1}s: {} of {} sensitive cells still without a cube",
                t0.elapsed().as_secs_f64(),
                left.len(),
                first.len()
            ));
        }
        if !left.is_empty() {
            stop()?;
            let t0 = Instant::now();
            let first = std::mem::take(&mut left);
            let sup = &self.aud.sup;
            let covers: Vec<Option<Vec<Cube>>> =
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
                        p.geometry().map(|g| g.coord(p.sens[k].cell)),
                        requirement(&p.sens[k])
                    ))
                    .collect::<String>()
            ));
        }
        stop()?;
        Ok(left.into_iter().map(|k| p.sens[k].cell).collect())
    }

    /// One batch of [`Self::cover`]: cubes chosen in parallel against the pattern at the start
    /// of the batch, applied in order; the cubes become candidate certificates
    /// ([`Self::candidates`]); cells without a cube are pushed to `left`.
    fn cover_batch(
        &mut self,
        geom: &super::geometry::Geometry,
        batch: &[usize],
        budget: usize,
        climb: bool,
        left: &mut Vec<usize>,
    ) {
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
                let found = if climb {
                    geom.climbing_cube(s.cell, &accept, budget)
                } else {
                    geom.cheapest_cube(s.cell, &accept, budget)
                };
                match found {
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
    geom: &super::geometry::Geometry,
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
/// around it ([`super::geometry::Geometry::neighbourhood`]) where every suppressed or free cell
/// may move and every other cell is held at its value: one LP per direction, a restriction of
/// the attacker once the support of the optimum is suppressed. For cells without any cube
/// (sparse cells, marginals of few contributors); `None` when a direction falls short or an
/// LP fails (the cell is then left to the closure). The moves are proposals the auditor
/// verifies ([`super::audit::Auditor::offer_moves`]).
pub(crate) fn box_cover(
    p: &Problem,
    geom: &super::geometry::Geometry,
    sup: &[bool],
    k: usize,
) -> Option<DirectedMoves> {
    BOX_COORDS.iter().find_map(|&size| box_moves(p, geom, sup, k, size))
}

/// [`box_cover`] with a box of at most `max_coords` coordinates.
fn box_moves(
    p: &Problem,
    geom: &super::geometry::Geometry,
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
    let rows = p.relations_touching(&cells);
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
/// LP columns (bounds × component cells) per second of the stated time limit from which the
/// bounds an audit's batch rounds leave in the split closure's repair are closed with whole
/// moves instead of getting a single LP each ([`Work::split_closure`](super::work::Work::split_closure)):
/// 24 M at the 600-s default. A work budget from the job, so the same on every machine. Why
/// this rate: on c4-large's split closure (one 31,399-cell component) the first audit's single
/// LPs ran at ~150 k columns a second (136.5 M in 912 s, 2 cores), so those it keeps take at
/// most about a quarter of the limit. Measured (BENCHMARKS, "Session 67"): c4-ent's first
/// audit leaves 56 bounds over a 41 k-cell component (2.3 M columns: single LPs, as before),
/// c4-large's 4,491 over 31,399 cells (141 M: closed whole at 600 s; single LPs from a
/// ~3,500-s limit on).
const SPLIT_DEFER_COLUMNS_PER_SECOND: f64 = 40_000.0;

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
        if let Some(a) = super::cubes::assign(p, &sup, ASSIGN_PASSES, deadline) {
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
            // On a giant component the bounds the witnesses leave get cubes, not LPs.
            let giant = w.local_trials_component;
            if w.aud.largest_component() > giant {
                w.aud.defer_singles = Some(DeferSingles::without_lps(giant + 1));
            }
            w.repair(singleton_rule, deadline)?;
            w.aud.defer_singles = None;
            return Ok(w);
        }
    }
    let mut w = Work::new(p, sup);
    if construction == Construction::SplitClosure {
        w.split_closure((SPLIT_DEFER_COLUMNS_PER_SECOND * deadline.limit_s()) as usize);
    }
    if use_cover(p, construction) {
        let left = w.cover(deadline)?;
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
        // The candidates are freed now; their pages go back before the cleanup's searches.
        super::memory::release_freed();
        let certifying_s = t1.elapsed().as_secs_f64();
        trace(format_args!(
            "candidate certificates {certifying_s:.1}s: {certified} pairs certified from {offered} cells' cubes"
        ));
        // What must follow the searches — re-verifying the certificates, the lower bound,
        // the figures — takes about as long as certifying them did (3.6 M cells: 16 s, 39 s
        // and ~25 s against 109 s), so the searches stop that much before the limit.
        deadline.reserve(certifying_s);
    } else {
        w.close(by_requirement(&w));
    }
    trace(format_args!(
        "{} {:.1}s: {} suppressed, cost {:.3} %",
        if w.split_moves { "split closure" } else { "closure" },
        t0.elapsed().as_secs_f64(),
        w.sup().iter().filter(|&&x| x).count(),
        p.cost_percent(p.cost_of(w.sup()))
    ));
    w.repair(singleton_rule, deadline)?;
    // Later audits (the cleanup's) decide every bound, as after the other constructions.
    w.aud.defer_singles = None;
    Ok(w)
}

/// The suppressed cells of `w`, largest requirement first: the closure's order.
fn by_requirement(w: &Work) -> Vec<u32> {
    let mut order: Vec<u32> = (0..w.p.n() as u32).filter(|&i| w.sup()[i as usize]).collect();
    order.sort_by(|&a, &b| w.req[b as usize].total_cmp(&w.req[a as usize]).then(a.cmp(&b)));
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suppress::audit::Auditor;
    use crate::suppress::tests::{lp_audit, synthetic};
    use crate::suppress::{protect, Method, ProtectOptions};

    /// Forces every marginal of a 2-dimensional table published (`Protected`).
    fn publish_marginals(t: &mut crate::table::Table) {
        for i in 0..t.cells().len() {
            if t.cells()[i].coord.contains(&0) {
                t.set_status(i, crate::table::CellStatus::Protected);
            }
        }
    }

    /// The cover lays the most detailed sensitive cells first and, within a depth, the
    /// smallest requirement first: every sensitive cell once, in that order, on a table with
    /// several depths and unequal requirements within a depth.
    #[test]
    fn cover_order_lays_the_most_detailed_cells_first() {
        let t = synthetic(1);
        let p = Problem::from_table(&t, None);
        let geom = p.geometry().unwrap();
        let depths: Vec<Vec<u32>> = t.dims().iter().map(|d| d.depths()).collect();
        let detail =
            |k: usize| -> u32 { geom.coord(p.sens[k].cell).iter().zip(&depths).map(|(&x, d)| d[x as usize]).sum() };
        let order = cover_order(&p, geom);
        let mut seen = order.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..p.sens.len()).collect::<Vec<_>>(), "every sensitive cell once");
        let (mut depth_steps, mut rising) = (0, 0);
        for w in order.windows(2) {
            let (a, b) = (w[0], w[1]);
            assert!(detail(a) >= detail(b), "a less detailed cell before a more detailed one");
            if detail(a) > detail(b) {
                depth_steps += 1;
            } else {
                let (ra, rb) = (requirement(&p.sens[a]), requirement(&p.sens[b]));
                assert!(ra <= rb, "within a depth, requirement {ra} before {rb}");
                rising += usize::from(ra < rb);
            }
        }
        assert!(depth_steps >= 2 && rising > 0, "the table must exercise both keys: {depth_steps} {rising}");
    }

    /// The parallel hypercube cover gives the same pattern with 1 and 2 rayon threads (with
    /// and without its last resorts), and its pattern passes the audit with most pairs
    /// certified by witnesses.
    #[test]
    fn hypercube_cover_is_deterministic_across_thread_counts() {
        for seed in [1, 2] {
            let t = synthetic(seed);
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
                    let left = w.cover(&Deadline::after(f64::INFINITY)).unwrap();
                    // With the last resorts (climbing retry, ancestor cubes, box LPs) too.
                    let mut last = Work::new(&p, p.initial());
                    last.last_resort_cubes = true;
                    let last_left = last.cover(&Deadline::after(f64::INFINITY)).unwrap();
                    (w.sup().to_vec(), left, protect(&t, &o).unwrap(), (last.sup().to_vec(), last_left))
                })
            };
            let (s1, l1, p1, r1) = run(1);
            let (s2, l2, p2, r2) = run(2);
            assert_eq!(s1, s2, "seed {seed}: cover differs");
            assert_eq!(r1, r2, "seed {seed}: cover with last resorts differs");
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
        let geom = p.geometry().unwrap();
        let accept = |c: usize| (p.capacity(c) >= 3.0 && p.fix[c] == Fix::Free).then_some(p.cost[c]);
        assert!(geom.cheapest_cube(a as u32, &accept, 10_000).is_none(), "a single rectangle would do");
        let mut w = Work::new(&p, p.initial());
        assert!(w.cover(&Deadline::after(f64::INFINITY)).unwrap().is_empty());
        assert_eq!(w.candidates.len(), 1);
        assert_eq!(w.candidates[0].1.len(), 2, "{:?}", w.candidates);
        assert_eq!(w.aud.offer(std::mem::take(&mut w.candidates)), 2);
        let o = ProtectOptions {
            method: Method::Fast,
            cleanup: false,
            construction: Construction::Hypercube,
            ..Default::default()
        };
        let prot = protect(&t, &o).unwrap();
        assert_eq!((prot.audit.lps_solved, prot.audit.witnessed), (0, 2), "{:?}", prot.audit);
        // The report says how the bounds were proven, not only "0 LPs".
        let line = prot.audit.describe();
        assert!(line.contains("2 protection bounds proven (2 by combinatorial witnesses, 0 by attacker-LP"), "{line}");
        let lp = lp_audit(&t, &prot.statuses, true, true);
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
        let geom = p.geometry().unwrap();
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
        assert!(w.cover(&Deadline::after(f64::INFINITY)).unwrap().is_empty());
        assert_eq!(w.aud.offer(std::mem::take(&mut w.candidates)), 2);
        assert!(w.aud.check().unwrap().is_empty());
        assert_eq!(w.aud.lps, 0);
        let o = ProtectOptions {
            method: Method::Fast,
            cleanup: false,
            construction: Construction::Hypercube,
            ..Default::default()
        };
        let prot = protect(&t, &o).unwrap();
        let lp = lp_audit(&t, &prot.statuses, true, true);
        assert!(lp.is_clean() && lp.cells[0].cell == a);
    }

    /// Five rows, two columns; the other rows' cells of the second column and their row totals
    /// are published, as where a sparse table has no such cells. The cheapest rectangles turn
    /// to a sibling row first and then find no column to close them: the beam finds none,
    /// and without last resorts the cell is left to the closure. With them the retry climbs
    /// in the rows (the column total) and turns to the sibling column: a rectangle without
    /// the grand total, which the ancestor cube would have taken. The audit certifies it
    /// from the candidates, and the LP-only audit agrees.
    #[test]
    fn climbing_cube_avoids_the_grand_total_where_siblings_lead_nowhere() {
        use crate::suppress::tests::{grid, primary};
        use crate::table::CellStatus;
        let vals: Vec<Vec<f64>> = (0..5).map(|r| vec![10.0 + r as f64, 20.0 + r as f64]).collect();
        let mut t = grid(&vals, None);
        let a = primary(&mut t, &[1, 1], 3.0);
        for r in 2..=5 {
            for c in [2, 0] {
                let i = t.find(&[r, c]).unwrap();
                t.set_status(i, CellStatus::Protected);
            }
        }
        let p = Problem::from_table(&t, None);
        let geom = p.geometry().unwrap();
        let sup = p.initial();
        let accept = |c: usize| cube_cell_cost(&p, &sup, 3.0, c);
        assert!(geom.cheapest_cube(a as u32, &accept, 100_000).is_none(), "the beam should find nothing");
        let (_, cube) = geom.climbing_cube(a as u32, &accept, 100_000).unwrap();
        let mut cells: Vec<u32> = cube.iter().map(|&(c, _)| c).collect();
        cells.sort_unstable();
        let mut want: Vec<u32> = [[1, 1], [0, 1], [1, 2], [0, 2]].iter().map(|c| t.find(c).unwrap() as u32).collect();
        want.sort_unstable();
        assert_eq!(cells, want);

        let mut w = Work::new(&p, p.initial());
        assert_eq!(w.cover(&Deadline::after(f64::INFINITY)).unwrap(), vec![a as u32], "no last resort, no cube");
        let mut w = Work::new(&p, p.initial());
        w.last_resort_cubes = true;
        assert!(w.cover(&Deadline::after(f64::INFINITY)).unwrap().is_empty());
        let grand = t.find(&[0, 0]).unwrap();
        assert!(!w.sup()[grand], "the grand total was suppressed");
        let got: Vec<u32> = (0..p.n() as u32).filter(|&c| w.sup()[c as usize]).collect();
        assert_eq!(got, want);
        assert_eq!(w.aud.offer(std::mem::take(&mut w.candidates)), 2);
        assert!(w.aud.check().unwrap().is_empty());
        assert_eq!(w.aud.lps, 0);
        let statuses: Vec<CellStatus> = (0..p.n())
            .map(|i| if i != a && w.sup()[i] { CellStatus::Secondary } else { t.cells()[i].status })
            .collect();
        assert!(lp_audit(&t, &statuses, false, true).is_clean());
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
        let geom = p.geometry().unwrap();
        assert!(multi_cube(&p, geom, &p.initial(), 0, 10_000).is_none());
        let moves = box_cover(&p, geom, &p.initial(), 0).unwrap();
        assert_eq!(moves.len(), 2);
        for (_, z) in &moves {
            assert_eq!(z.len(), 6, "{z:?}");
        }
        let mut w = Work::new(&p, p.initial());
        assert!(!w.last_resort_cubes, "a small table keeps the closure by default");
        w.last_resort_cubes = true;
        assert!(w.cover(&Deadline::after(f64::INFINITY)).unwrap().is_empty());
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
        let o = ProtectOptions {
            method: Method::Fast,
            cleanup: false,
            construction: Construction::Hypercube,
            ..Default::default()
        };
        let prot = protect(&t, &o).unwrap();
        assert_eq!(prot.secondaries, 5);
        let lp = lp_audit(&t, &prot.statuses, true, true);
        assert!(lp.is_clean());
        assert!(lp.cells[0].cell == a && lp.cells[0].hi >= 33.0 - 1e-6 && lp.cells[0].lo <= 27.0 + 1e-6);
    }

    /// The split closure's repair closes with whole moves the sensitive cells whose bounds an
    /// audit's batch rounds leave when their single LPs would span too many columns (here any
    /// column at all), then decides the rest by single LPs: the pattern ends clean for the
    /// LP-only audit and contains the split closure. With no column budget too small, nothing
    /// is closed whole and the single LPs decide every bound, as before.
    #[test]
    fn the_split_closure_closes_what_its_batch_rounds_leave_with_whole_moves() {
        use crate::suppress::output_statuses;
        let mut closed = 0;
        for seed in 0..40 {
            let t = synthetic(seed);
            let p = Problem::from_table(&t, None);
            let far = Deadline::after(600.0);
            let split = |min_columns: usize| {
                let mut w = Work::new(&p, p.initial());
                w.split_closure(min_columns);
                w.close(by_requirement(&w));
                let raw = w.sup().to_vec();
                w.repair(false, &far).unwrap();
                assert!(raw.iter().zip(w.sup()).all(|(&a, &b)| !a || b), "seed {seed}: the repair only adds");
                let lp = lp_audit(&t, &output_statuses(&p, w.sup()), false, false);
                assert!(lp.is_clean(), "seed {seed}");
                w.whole_closures
            };
            closed += split(0);
            assert_eq!(split(usize::MAX), 0, "seed {seed}");
        }
        assert!(closed > 0, "closing with whole moves suppresses cells");
    }
}
