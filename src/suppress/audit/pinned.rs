//! Suppressed cells whose values the published cells determine through a chain of relations:
//! the attacker's LP moves them by nothing in either direction, so a sensitive one fails both
//! bounds without an LP, and the chain gives its capacity cut.
//!
//! A suppressed cell is *pinned* when its own range is empty (both gaps 0) or when one of its
//! relations has no other suppressed cell that is not pinned already: `Σ a_m z_m = 0` over the
//! relation's suppressed cells then fixes its `z` at 0. Unit propagation over a component's
//! relations finds them all, in time linear in the incidences. Row multipliers along the chain
//! (`γ_r = d_c / a_c` for the relation `r` that pinned `c`, the last pinned first) cancel
//! `d = ±e_t − Mᵀγ` on every suppressed cell of the chain, so the capacity cut
//! `Σ min(need, d⁺UB + d⁻LB) x ≥ need` ([`super::super::attacker`]) is valid for every
//! protecting pattern and has only published cells (and empty ranges), all 0 now: violated.
//!
//! Used by the lazy checks (`Auditor::lazy_singles`: the repair of HiTaS's merge, its drop
//! trials, the subtables' greedy repairs) and the cleanups' drop trials
//! (`Auditor::stops_at_pinned`), which stop at them. Why: in the repair of HiTaS's merged
//! Adult pattern 1,360 of the 1,688 single attacker LPs that fell short ended at exactly 0 —
//! open repair rounds add cells that their other relations still pin — and each LP costs
//! HiGHS's per-solve set-up (~0.3–0.5 ms on its ~1,800-column component) even when it needs no
//! simplex iteration. (A drop trial first runs its own, local and budgeted pinned-cell test,
//! `Work::refuted`, which needs no cut but starts from the dropped cell only; this one spans
//! the component, so it also sees the cells pinned before the drop, and gives the chain's cut.)

use std::collections::BinaryHeap;

use crate::table::relations::FastMap;

use super::super::attacker::{capacity_coefficients, Cut};
use super::super::problem::Problem;

/// A pinned cell without a relation that pinned it: its own range is empty.
const EMPTY_RANGE: u32 = u32::MAX;

/// The pinned cells of one component of a pattern.
pub(super) struct Pinned {
    /// Pinned cell → (when it was pinned, the relation that pinned it or [`EMPTY_RANGE`]).
    by: FastMap<u32, (u32, u32)>,
}

/// The state of [`Pinned::of`]'s unit propagation.
struct Propagation<'p, 'a> {
    p: &'p Problem<'a>,
    free: FastMap<u32, u32>,
    by: FastMap<u32, (u32, u32)>,
    /// Relations left with one suppressed cell not pinned.
    queue: std::collections::VecDeque<u32>,
}

impl Propagation<'_, '_> {
    /// Records `c` as pinned by relation `r`.
    fn force(&mut self, c: u32, r: u32) {
        self.by.insert(c, (self.by.len() as u32, r));
        for &r2 in self.p.rel.of_cell(c as usize) {
            if let Some(f) = self.free.get_mut(&r2) {
                *f -= 1;
                if *f == 1 {
                    self.queue.push_back(r2);
                }
            }
        }
    }
}

impl Pinned {
    /// The pinned cells of the component `cells` of pattern `sup` whose relations touching it
    /// are `rows` (as `Auditor::component` gives them).
    pub fn of(p: &Problem, sup: &[bool], cells: &[u32], rows: &[u32]) -> Self {
        let mut f = Propagation {
            p,
            // Suppressed cells of each relation not pinned yet.
            free: rows
                .iter()
                .map(|&r| (r, p.rel.members(r as usize).filter(|&m| sup[m as usize]).count() as u32))
                .collect(),
            by: FastMap::default(),
            queue: std::collections::VecDeque::new(),
        };
        for &c in cells {
            if p.lo_gap[c as usize] == 0.0 && p.up_gap[c as usize] == 0.0 {
                f.force(c, EMPTY_RANGE);
            }
        }
        let alone: Vec<u32> = rows.iter().copied().filter(|r| f.free.get(r) == Some(&1)).collect();
        f.queue.extend(alone);
        while let Some(r) = f.queue.pop_front() {
            if let Some(c) = p.rel.members(r as usize).find(|&m| sup[m as usize] && !f.by.contains_key(&m)) {
                f.force(c, r);
            }
        }
        Self { by: f.by }
    }

    pub fn contains(&self, c: u32) -> bool {
        self.by.contains_key(&c)
    }

    pub fn is_empty(&self) -> bool {
        self.by.is_empty()
    }

    /// The capacity cut at level `need` (uncapped, as the attacker LP's) of pinned target `t`
    /// attacked in direction `dir` (±1), of pattern `sup`.
    pub fn cut(&self, p: &Problem, sup: &[bool], t: u32, dir: f64, need: f64) -> Cut {
        let mut d: FastMap<u32, f64> = FastMap::default();
        d.insert(t, dir);
        // The last pinned first: the relation that pinned `c` has only cells pinned before it.
        let mut heap: BinaryHeap<(u32, u32)> = BinaryHeap::new();
        let mut queued: FastMap<u32, ()> = FastMap::default();
        if let Some(&(when, _)) = self.by.get(&t) {
            heap.push((when, t));
            queued.insert(t, ());
        }
        while let Some((_, c)) = heap.pop() {
            let (_, r) = self.by[&c];
            let dc = d.get(&c).copied().unwrap_or(0.0);
            if r == EMPTY_RANGE || dc == 0.0 {
                continue;
            }
            let a = p.rel.terms(r as usize).find(|&(m, _)| m == c).map_or(1.0, |(_, a)| a);
            let g = dc / a;
            for (m, am) in p.rel.terms(r as usize) {
                *d.entry(m).or_insert(0.0) -= g * am;
                if m != c && sup[m as usize] && queued.insert(m, ()).is_none() {
                    if let Some(&(when, _)) = self.by.get(&m) {
                        heap.push((when, m));
                    }
                }
            }
            d.insert(c, 0.0);
        }
        Cut { coefs: capacity_coefficients(p, d, need), rhs: need }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suppress::attacker::{tolerance, CompLp};
    use crate::suppress::audit::Auditor;
    use crate::suppress::problem::Fix;

    /// The attacker's reach `max dir·z_t` over pattern `sup` (exact, no cap).
    fn reach(p: &Problem, sup: &[bool], t: u32, dir: f64) -> f64 {
        let (cells, rows) = Auditor::new(p, sup.to_vec()).component(t);
        let lp = CompLp::new(p, sup, cells, rows);
        let x = |c: u32| if sup[c as usize] { 1.0 } else { 0.0 };
        lp.single(p, &x, t, dir, f64::INFINITY, 0.0).unwrap().0.value
    }

    /// On random patterns of the synthetic tables, a pinned sensitive cell's attacker LP
    /// moves it by nothing in either direction, the cut of its chain is violated by the
    /// pattern, and the cut holds for the patterns that add some of its cells: where the
    /// attacker reaches `r`, the cut's capped left-hand side is at least `min(r, need)` (the
    /// cut's validity).
    #[test]
    fn pinned_cells_do_not_move_and_their_cuts_hold_for_other_patterns() {
        let mut pinned_targets = 0;
        let mut rng = crate::rng::Rng::new(7);
        for seed in 0..4 {
            let t = crate::suppress::tests::synthetic(seed);
            let p = Problem::from_table(&t, None);
            let pattern = |rng: &mut crate::rng::Rng, share: f64| -> Vec<bool> {
                (0..p.n()).map(|i| p.fix[i] == Fix::Suppressed || rng.next_f64() < share).collect()
            };
            for _ in 0..4 {
                let sup = pattern(&mut rng, 0.15);
                let mut a = Auditor::new(&p, sup.clone());
                // The first 8 pinned targets of each pattern (each costs attacker LPs here).
                let mut checked = 0;
                for s in &p.sens {
                    if checked == 8 {
                        break;
                    }
                    let (cells, rows) = a.component(s.cell);
                    let f = Pinned::of(&p, &sup, &cells, &rows);
                    if !f.contains(s.cell) {
                        continue;
                    }
                    pinned_targets += 1;
                    checked += 1;
                    for (dir, need) in [(-1.0, s.lpl), (1.0, s.upl)] {
                        assert!(reach(&p, &sup, s.cell, dir).abs() <= 1e-6, "seed {seed}, cell {}", s.cell);
                        if need <= tolerance(need) {
                            continue;
                        }
                        let cut = f.cut(&p, &sup, s.cell, dir, need).capped(need);
                        assert!(cut.lhs(&sup) < need - tolerance(need), "seed {seed}: the cut is not violated");
                        // Patterns near this one, where the cut's bound is tight: each of the
                        // cut's cells added with probability 1/3, and a few other cells.
                        for _ in 0..6 {
                            let mut other = sup.clone();
                            for &(c, _) in &cut.coefs {
                                other[c as usize] |= rng.next_f64() < 1.0 / 3.0;
                            }
                            for _ in 0..3 {
                                other[rng.index(p.n())] = true;
                            }
                            let r = reach(&p, &other, s.cell, dir).min(need);
                            assert!(cut.lhs(&other) >= r - tolerance(need), "seed {seed}: an invalid cut");
                        }
                    }
                }
            }
        }
        assert!(pinned_targets >= 20, "only {pinned_targets} pinned targets");
    }

    /// A hand-made chain: in a 3 × 3 table with totals, cells (1,1), (1,2) and (2,1)
    /// suppressed: (1,2) is alone in its column and (2,1) in its row, so both are pinned, and
    /// then (1,1) by its row and its column. The cuts of (1,1) ask for published cells only.
    #[test]
    fn a_chain_of_pinned_cells_is_found_in_order() {
        let vals = vec![vec![5.0, 7.0, 9.0], vec![4.0, 6.0, 8.0], vec![3.0, 2.0, 1.0]];
        let mut t = crate::suppress::tests::grid(&vals, None);
        let target = crate::suppress::tests::primary(&mut t, &[1, 1], 2.0) as u32;
        let p = Problem::from_table(&t, None);
        let cell = |r: u32, c: u32| t.find(&[r, c]).unwrap() as u32;
        let mut sup = vec![false; p.n()];
        for (r, c) in [(1, 1), (1, 2), (2, 1)] {
            sup[cell(r, c) as usize] = true;
        }
        let (cells, rows) = Auditor::new(&p, sup.clone()).component(target);
        let f = Pinned::of(&p, &sup, &cells, &rows);
        assert!(cells.iter().all(|&c| f.contains(c)));
        assert!(f.by[&cell(2, 1)].0 < f.by[&target].0 && f.by[&cell(1, 2)].0 < f.by[&target].0);
        for dir in [-1.0, 1.0] {
            let cut = f.cut(&p, &sup, target, dir, 2.0);
            assert!(!cut.coefs.is_empty() && cut.coefs.iter().all(|&(c, _)| !sup[c as usize]), "{cut:?}");
            assert_eq!(cut.lhs(&sup), 0.0);
        }
        // With (2,2) suppressed too the four cells form a cycle: nothing is pinned.
        sup[cell(2, 2) as usize] = true;
        let (cells, rows) = Auditor::new(&p, sup.clone()).component(target);
        assert!(Pinned::of(&p, &sup, &cells, &rows).is_empty());
    }

    /// A lazy check (`Auditor::lazy_singles`) fails the hand-made chain's pinned target without
    /// an LP, with cuts the pattern violates; the full check's attacker LPs fail the same bounds.
    #[test]
    fn a_lazy_check_fails_a_pinned_target_without_an_lp() {
        let vals = vec![vec![5.0, 7.0, 9.0], vec![4.0, 6.0, 8.0], vec![3.0, 2.0, 1.0]];
        let mut t = crate::suppress::tests::grid(&vals, None);
        crate::suppress::tests::primary(&mut t, &[1, 1], 2.0);
        let p = Problem::from_table(&t, None);
        let mut sup = vec![false; p.n()];
        for (r, c) in [(1, 1), (1, 2), (2, 1)] {
            sup[t.find(&[r, c]).unwrap()] = true;
        }
        let mut full = Auditor::new(&p, sup.clone());
        let all = full.check().unwrap();
        assert_eq!(all.len(), 2, "both bounds fail");
        assert!(full.lps > 0);
        let mut lazy = Auditor::new(&p, sup.clone());
        lazy.lazy_singles = Some(32);
        let first = lazy.check().unwrap();
        assert_eq!(lazy.lps, 0);
        assert_eq!(first.len(), 2);
        for f in &first {
            let cut = f.cut.as_ref().expect("a pinned bound's cut");
            assert!(cut.lhs(&sup) < cut.rhs);
        }
    }
}
