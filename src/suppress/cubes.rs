//! Cube assignment: one hypercube per sensitive cell, chosen so that the cubes share cells,
//! improved by local search over the assignment. The first pattern of `Fast` on tables small
//! enough for it (see [`super::fast`]).
//!
//! Why: the parallel hypercube cover ([`super::work::Work::cover`]) picks every cube against the
//! pattern at the start of its batch (2 048 sensitive cells), so on a table with a few thousand
//! primaries no cube sees the others and the union of cubes is far from cheap; the cleanup
//! then spends its budget undoing it with one audit per trial. Here the pattern is the union
//! of the assigned cubes, and a cell already used by another cube costs nothing, so:
//! 1. **Greedy pass**: sensitive cells, largest requirement first, in small batches (cubes of a
//!    batch are searched in parallel against the state at the batch start, then applied in
//!    order, each re-costed against the state at its turn — the result does not depend on the
//!    number of threads);
//! 2. **Improvement passes**: each sensitive cell's cube is taken out of the union, the cheapest
//!    cube is searched again with every cell of the other cubes free, and it replaces the old
//!    one when it adds strictly less cost (so the union's cost never increases); passes repeat
//!    until one changes nothing or the pass budget is spent.
//!
//! Every cell of a cube has capacity ≥ the target's requirement, so one cube alone is an
//! attacker move reaching both protection levels; the audit still certifies the pattern on its
//! own (it finds its own witnesses and verifies them exactly, or solves LPs). Sensitive cells
//! without a cube are returned for the closure. The cube search itself is
//! [`Geometry::cheapest_cube`](super::geometry::Geometry::cheapest_cube).

use rayon::prelude::*;

use super::attacker::tolerance;
use super::budget::Deadline;
use super::geometry::Cube;
use super::problem::{requirement, Fix, Problem};

/// Sensitive cells per parallel batch (small, so that later cubes see earlier ones).
const BATCH: usize = 32;

/// Cell look-ups per cube search, and one-dimensional extensions kept per dimension.
const BUDGET: usize = 20_000;
const BEAM: usize = 6;

/// Result of [`assign`].
#[derive(Debug, Clone)]
pub(crate) struct Assignment {
    /// Sensitive cells (cell indices) without a cube, for the closure.
    pub left: Vec<u32>,
    /// Cube per sensitive cell (index into `Problem::sens`): `(cell, ±1)` with the target
    /// first (`+1`), as [`Geometry::cheapest_cube`](super::geometry::Geometry::cheapest_cube)
    /// returns it.
    pub cubes: Vec<Option<Cube>>,
    /// Improvement passes run (after the greedy pass) and cubes replaced in them.
    pub passes: usize,
    /// Cubes replaced by the improvement passes.
    pub replaced: usize,
}

/// Working state: how many assigned cubes use each cell.
struct State<'p, 'a> {
    p: &'p Problem<'a>,
    base: &'p [bool],
    count: Vec<u32>,
    cubes: Vec<Option<Cube>>,
}

impl State<'_, '_> {
    /// Cost of adding cell `c` to the union for a target with requirement `req`, when the
    /// cubes in `own` (the target's current cube) are not counted; `None` = not usable.
    fn price(&self, c: usize, req: f64, own: &[(u32, i8)]) -> Option<f64> {
        let p = self.p;
        if p.capacity(c) < req - tolerance(req) {
            return None;
        }
        let others = self.count[c] - u32::from(own.iter().any(|&(o, _)| o as usize == c));
        if self.base[c] || others > 0 {
            Some(0.0)
        } else if p.fix[c] != Fix::Free {
            None
        } else {
            Some(p.cost[c] + 1e-9)
        }
    }

    /// Added cost of `cube` for sensitive `k` (its own current cube not counted).
    fn cube_price(&self, k: usize, cube: &[(u32, i8)]) -> Option<f64> {
        let req = requirement(&self.p.sens[k]);
        let own = self.cubes[k].as_deref().unwrap_or(&[]);
        cube.iter().map(|&(c, _)| self.price(c as usize, req, own)).sum()
    }

    /// Cheapest cube for sensitive `k` against the current state (own cube not counted).
    fn search(&self, k: usize) -> Option<(f64, Cube)> {
        let p = self.p;
        let geom = p.geometry()?;
        let s = &p.sens[k];
        let req = requirement(s);
        let own = self.cubes[k].as_deref().unwrap_or(&[]);
        let accept = |c: usize| self.price(c, req, own);
        geom.cheapest_cube_beam(s.cell, &accept, BUDGET, BEAM)
    }

    fn set(&mut self, k: usize, cube: Option<Cube>) {
        if let Some(old) = self.cubes[k].take() {
            for (c, _) in old {
                self.count[c as usize] -= 1;
            }
        }
        if let Some(new) = &cube {
            for &(c, _) in new {
                self.count[c as usize] += 1;
            }
        }
        self.cubes[k] = cube;
    }

    /// One pass over `order` in batches; returns the number of cubes replaced or added.
    fn pass(&mut self, order: &[usize]) -> usize {
        let mut changed = 0;
        for batch in order.chunks(BATCH) {
            let props: Vec<Option<(f64, Cube)>> = {
                let st = &*self;
                batch.par_iter().map(|&k| st.search(k)).collect()
            };
            for (&k, prop) in batch.iter().zip(props) {
                let Some((_, cube)) = prop else { continue };
                // Re-cost both against the state now (earlier cubes of the batch may share).
                let Some(new) = self.cube_price(k, &cube) else { continue };
                let old = self.cubes[k].as_ref().and_then(|c| self.cube_price(k, c));
                let better = match old {
                    None => true,
                    Some(o) => new < o - 1e-9 * o.abs().max(1.0),
                };
                if better {
                    self.set(k, Some(cube));
                    changed += 1;
                }
            }
        }
        changed
    }
}

/// Assigns cubes to the sensitive cells of `p` on top of pattern `base` (see the module doc):
/// a greedy pass, then at most `passes` improvement passes (an iteration budget, so the result
/// depends only on the input), unless the hard stop `deadline` ends them first (recorded
/// there: a 5-dimensional 100 k-cell census table spent 150 s of a 120 s limit in these
/// passes before failing). `None` when the problem has no table geometry.
pub(crate) fn assign(p: &Problem, base: &[bool], passes: usize, deadline: &Deadline) -> Option<Assignment> {
    p.geom.as_ref()?;
    let mut order: Vec<usize> = (0..p.sens.len()).filter(|&k| requirement(&p.sens[k]) > 0.0).collect();
    order.sort_by(|&a, &b| requirement(&p.sens[b]).total_cmp(&requirement(&p.sens[a])).then(a.cmp(&b)));
    let mut st = State { p, base, count: vec![0; p.n()], cubes: vec![None; p.sens.len()] };
    st.pass(&order);
    let mut done = 0;
    let mut replaced = 0;
    while done < passes && !deadline.reached() {
        let c = st.pass(&order);
        done += 1;
        replaced += c;
        if c == 0 {
            break;
        }
    }
    let mut left = Vec::new();
    for &k in &order {
        match &st.cubes[k] {
            Some(_) => {}
            None => left.push(p.sens[k].cell),
        }
    }
    Some(Assignment { left, cubes: st.cubes, passes: done, replaced })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suppress::witness::{combine, verify};
    use crate::table::synth::{generate, SynthSpec};

    fn table(seed: u64, dims: Vec<Vec<usize>>) -> crate::table::Table {
        let spec = SynthSpec { dims, density: 0.8, mean_freq: 5.0, min_freq: 3, protection: 0.1, seed };
        generate(&spec).unwrap()
    }

    fn cases() -> Vec<crate::table::Table> {
        (0..6)
            .map(|seed| {
                let dims = match seed % 3 {
                    0 => vec![vec![2, 3], vec![3], vec![2, 2]],
                    1 => vec![vec![3, 2], vec![4]],
                    _ => vec![vec![2, 2], vec![2, 3], vec![3]],
                };
                table(seed, dims)
            })
            .collect()
    }

    /// Every assigned cube, on its own, is an exactly verified attacker move reaching the
    /// target's requirement both ways on the union pattern; the improvement passes never make
    /// the union more costly than the greedy pass alone.
    #[test]
    fn cubes_are_verified_witnesses_and_passes_only_improve() {
        let mut cubes_checked = 0;
        for t in cases() {
            let p = Problem::from_table(&t, None);
            let base = p.initial();
            let union = |a: &Assignment| {
                let mut sup = base.clone();
                for (c, _) in a.cubes.iter().flatten().flatten() {
                    sup[*c as usize] = true;
                }
                sup
            };
            let greedy = assign(&p, &base, 0, &Deadline::after(f64::INFINITY)).unwrap();
            let a = assign(&p, &base, 8, &Deadline::after(f64::INFINITY)).unwrap();
            let sup = union(&a);
            assert!(p.cost_of(&sup) <= p.cost_of(&union(&greedy)) + 1e-9);
            for (k, cube) in a.cubes.iter().enumerate() {
                let Some(cube) = cube else {
                    assert!(a.left.contains(&p.sens[k].cell));
                    continue;
                };
                let s = &p.sens[k];
                assert_eq!(cube[0], (s.cell, 1));
                let mine = vec![cube.clone()];
                for (dir, need) in [(-1.0, s.lpl), (1.0, s.upl)] {
                    if need <= 0.0 {
                        continue;
                    }
                    let w = combine(&p, &mine, dir, need).unwrap();
                    let v = verify(&p, &sup, &w, s.cell, dir).unwrap();
                    assert!(v >= need - tolerance(need), "sensitive {k}: reach {v} < {need}");
                }
                cubes_checked += 1;
            }
        }
        assert!(cubes_checked > 20, "only {cubes_checked} cubes checked");
    }

    /// The assignment does not depend on the number of threads.
    #[test]
    fn assignment_is_deterministic_across_thread_counts() {
        for t in cases() {
            let run = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                pool.install(|| {
                    let p = Problem::from_table(&t, None);
                    let a = assign(&p, &p.initial(), 8, &Deadline::after(f64::INFINITY)).unwrap();
                    (a.cubes, a.left, a.replaced)
                })
            };
            assert_eq!(run(1), run(2));
        }
    }
}
