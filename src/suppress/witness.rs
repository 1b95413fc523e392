//! Combinatorial witnesses: attacker tables read off the table's geometry and verified
//! exactly, so most (sensitive cell, direction) pairs of an audit need no LP.
//!
//! Why: a cell is protected upwards by `UPL` as soon as *one* feasible attacker table has
//! `z_t ≥ UPL` (`z = y − a`); an LP is only one way to find such a point. In a hierarchical
//! table the natural ones are tensor products `h = v_1 ⊗ … ⊗ v_k` of one-dimensional vectors
//! `v_j ∈ {−1, 0, 1}^{nodes of dim j}` with `v_j(a_j) = 1` that balance every relation of
//! dimension `j` (`v(node) = Σ v(children)`): e.g. `+1` on the target's node and `−1` on a
//! sibling, extended down one child path below each non-leaf and optionally up the ancestor
//! chain. Every relation of the table is then balanced by `h` (its dimension's factor sums to
//! zero), so `δ·h` is an attacker move whenever all cells of `h`'s support exist and are
//! suppressed and `δ` respects the bounds — the classical hypercube of GHMITER/tau-Argus, with
//! hierarchies. A witness is a sum `Σ δ_k h_k` of such integer vectors found greedily.
//!
//! Soundness does not rest on the search: [`verify`] checks a witness against the problem
//! alone — every support cell suppressed, every relation touching the support balanced in
//! exact integer arithmetic for each `h_k`, every cell within its bounds for the summed move —
//! and returns the reach `dir·z_t` it proves. The search only needs the geometry to propose
//! candidates; a wrong proposal is refused, and the pair goes to the LP audit.

use crate::table::relations::FastMap;

use super::geometry::Geometry;
use super::problem::Problem;

/// A verified move `(cell, value)` pairs and the reach it proves, per direction.
pub(crate) type Certified = [Option<(Vec<(u32, f64)>, f64)>; 2];

/// A proposed attacker move `z = Σ δ_k · h_k`, `h_k` integer vectors over cells.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Witness {
    /// `(δ_k, h_k)` with `h_k` as `(cell, coefficient)` pairs.
    pub parts: Vec<(f64, Vec<(u32, i8)>)>,
}

impl Witness {
    /// The move `z` as sparse `(cell, value)` pairs (cell order).
    pub fn moves(&self) -> Vec<(u32, f64)> {
        let mut z: FastMap<u32, f64> = FastMap::default();
        for (d, h) in &self.parts {
            for &(c, s) in h {
                *z.entry(c).or_insert(0.0) += d * s as f64;
            }
        }
        let mut out: Vec<(u32, f64)> = z.into_iter().filter(|(_, v)| *v != 0.0).collect();
        out.sort_unstable_by_key(|(c, _)| *c);
        out
    }
}

/// Checks witness `w` for target `t` in direction `dir` (±1) against the problem and the
/// pattern `sup`; returns the proven reach `dir·z_t`, or `None` when any check fails:
/// a nonfinite or zero `δ`, a repeated, out-of-range or published cell, a relation touching a
/// part's support whose integer sum is not zero, a non-±1 relation coefficient, or a cell
/// moved outside its attacker bounds.
pub(crate) fn verify(p: &Problem, sup: &[bool], w: &Witness, t: u32, dir: f64) -> Option<f64> {
    if !w.parts.iter().all(|(_, h)| balanced(p, sup, h)) {
        return None;
    }
    reach_within_bounds(p, w, t, dir)
}

/// Whether integer vector `h` is an attacker direction on pattern `sup`: nonempty, every
/// cell in range, suppressed and listed once with a nonzero coefficient, and every relation
/// touching it balanced in exact integer arithmetic (±1 relation coefficients only).
pub(crate) fn balanced(p: &Problem, sup: &[bool], h: &[(u32, i8)]) -> bool {
    if h.is_empty() {
        return false;
    }
    let mut coef: FastMap<u32, i64> = FastMap::default();
    for &(c, s) in h {
        if c as usize >= p.n() || !sup[c as usize] || s == 0 || coef.insert(c, s as i64).is_some() {
            return false;
        }
    }
    let mut seen: FastMap<u32, ()> = FastMap::default();
    for &(c, _) in h {
        for &r in p.rel.of_cell(c as usize) {
            if seen.insert(r, ()).is_some() {
                continue;
            }
            let mut sum = 0i64;
            for (m, a) in p.rel.terms(r as usize) {
                let k = if a == 1.0 {
                    1
                } else if a == -1.0 {
                    -1
                } else {
                    return false;
                };
                sum += k * coef.get(&m).copied().unwrap_or(0);
            }
            if sum != 0 {
                return false;
            }
        }
    }
    true
}

/// The reach `dir·z_t` of `w` when every step is finite and nonzero and the summed move keeps
/// every cell within its attacker bounds; the parts must already be known [`balanced`].
pub(crate) fn reach_within_bounds(p: &Problem, w: &Witness, t: u32, dir: f64) -> Option<f64> {
    let mut z: FastMap<u32, f64> = FastMap::default();
    for (delta, h) in &w.parts {
        if !delta.is_finite() || *delta == 0.0 || h.is_empty() {
            return None;
        }
        for &(c, s) in h {
            *z.entry(c).or_insert(0.0) += delta * s as f64;
        }
    }
    for (&c, &v) in &z {
        let c = c as usize;
        // Written so that a NaN fails.
        if !(v <= p.up_gap[c] && -v <= p.lo_gap[c]) {
            return None;
        }
    }
    let reach = dir * z.get(&t).copied().unwrap_or(0.0);
    reach.is_finite().then_some(reach)
}

/// Combinatorial certificates of sensitive cell `s` for the directions in `dirs` (0 = down by
/// `LPL`, 1 = up by `UPL`) on pattern `sup`: each entry is the verified move and its reach,
/// or `None`. At most `cubes` hypercubes and `budget` look-ups are tried.
pub(crate) fn certify(
    p: &Problem,
    geom: &Geometry,
    sup: &[bool],
    s: &super::problem::Sensitive,
    dirs: &[usize],
    cubes: usize,
    budget: usize,
) -> Certified {
    propose(p, geom, sup, s, dirs, cubes, budget).map(|r| r.map(|(w, v)| (w.moves(), v)))
}

/// [`certify`] returning the verified witnesses themselves (their cubes can be handed on as
/// candidate certificates, see `Auditor::offer`).
pub(crate) fn propose(
    p: &Problem,
    geom: &Geometry,
    sup: &[bool],
    s: &super::problem::Sensitive,
    dirs: &[usize],
    cubes: usize,
    budget: usize,
) -> [Option<(Witness, f64)>; 2] {
    let mut out = [None, None];
    let need = |d: usize| if d == 0 { s.lpl } else { s.upl };
    if dirs.iter().all(|&d| need(d) <= 0.0) {
        return out;
    }
    // One cube usually suffices (the hypercube cover builds them with enough capacity);
    // search for more only when it does not.
    for max in [1, cubes] {
        let found = geom.hypercubes(sup, s.cell, max, budget);
        if found.is_empty() {
            return out;
        }
        for &d in dirs {
            let n = need(d);
            if n <= 0.0 || out[d].is_some() {
                continue;
            }
            let dir = if d == 0 { -1.0 } else { 1.0 };
            let Some(w) = combine(p, &found, dir, n) else { continue };
            match verify(p, sup, &w, s.cell, dir) {
                Some(v) if v >= n - super::attacker::tolerance(n) => out[d] = Some((w, v)),
                _ => {}
            }
        }
        if dirs.iter().all(|&d| need(d) <= 0.0 || out[d].is_some()) || max >= cubes {
            break;
        }
    }
    out
}

/// Greedy witness for `t` in direction `dir` from `cubes`: each cube gets the largest step
/// the bounds still allow (shrunk by 1e-9 so that rounding cannot cross a bound) until `need`
/// is reached. `None` when no cube can move at all. Verify the result with [`verify`].
pub(crate) fn combine(p: &Problem, cubes: &[Vec<(u32, i8)>], dir: f64, need: f64) -> Option<Witness> {
    let mut z: FastMap<u32, f64> = FastMap::default();
    let mut parts = Vec::new();
    let mut reach = 0.0;
    for cube in cubes {
        let rem = need - reach;
        if rem <= 0.0 {
            break;
        }
        let mut room = f64::INFINITY;
        for &(c, s) in cube {
            let zc = z.get(&c).copied().unwrap_or(0.0);
            let r = if dir * s as f64 > 0.0 { p.up_gap[c as usize] - zc } else { p.lo_gap[c as usize] + zc };
            room = room.min(r);
        }
        let delta = rem.min(room * (1.0 - 1e-9));
        if delta.is_nan() || delta <= 0.0 || !delta.is_finite() {
            continue;
        }
        for &(c, s) in cube {
            *z.entry(c).or_insert(0.0) += dir * delta * s as f64;
        }
        reach += delta;
        parts.push((dir * delta, cube.clone()));
    }
    (!parts.is_empty()).then_some(Witness { parts })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suppress::tests::{grid, primary};
    use crate::table::synth::hierarchy;
    use crate::table::{Cell, CellStatus};
    use crate::table::{Dimension, Table};

    fn sup_of(t: &Table, coords: &[[u32; 2]]) -> Vec<bool> {
        let mut s = vec![false; t.cells().len()];
        for c in coords {
            s[t.find(c).unwrap()] = true;
        }
        s
    }

    /// The 2x2 rectangle of the hand-solved audit test: a ∈ [0, 12] by hand, and the witness
    /// proves exactly the reach it was built for; tampered witnesses are refused.
    #[test]
    fn rectangle_witness_and_tampering() {
        let mut t = grid(&[vec![10.0, 5.0], vec![2.0, 20.0]], None);
        let a = primary(&mut t, &[1, 1], 3.0) as u32;
        let p = Problem::from_table(&t, None);
        let sup = sup_of(&t, &[[1, 1], [1, 2], [2, 1], [2, 2]]);
        let g = Geometry::new(&t);
        let cubes = g.hypercubes(&sup, a, 8, 10_000);
        assert_eq!(cubes.len(), 1, "{cubes:?}");
        assert_eq!(cubes[0].len(), 4);
        // Up: limited by cells b = 5 and c = 2 moving down: 2 < 3 = UPL.
        let up = combine(&p, &cubes, 1.0, 3.0).unwrap();
        let v = verify(&p, &sup, &up, a, 1.0).unwrap();
        assert!((v - 2.0).abs() < 1e-6, "{v}");
        // Down: limited by a = 10 and d = 20: reaches the LPL of 3.
        let down = combine(&p, &cubes, -1.0, 3.0).unwrap();
        assert!((verify(&p, &sup, &down, a, -1.0).unwrap() - 3.0).abs() < 1e-6);
        // Tampering: a flipped sign unbalances the relations.
        let mut bad = down.clone();
        bad.parts[0].1[1].1 *= -1;
        assert_eq!(verify(&p, &sup, &bad, a, -1.0), None);
        // A step past a bound (c = 2 cannot go below 0).
        let mut bad = up.clone();
        bad.parts[0].0 = 2.5;
        assert_eq!(verify(&p, &sup, &bad, a, 1.0), None);
        // A support cell that is published.
        let sup3 = sup_of(&t, &[[1, 1], [1, 2], [2, 1]]);
        assert_eq!(verify(&p, &sup3, &up, a, 1.0), None);
        // A dropped cell.
        let mut bad = up.clone();
        bad.parts[0].1.pop();
        assert_eq!(verify(&p, &sup, &bad, a, 1.0), None);
        // A repeated cell, a zero or NaN step.
        let mut bad = up.clone();
        let first = bad.parts[0].1[0];
        bad.parts[0].1.push(first);
        assert_eq!(verify(&p, &sup, &bad, a, 1.0), None);
        for d in [0.0, f64::NAN, f64::INFINITY] {
            let mut bad = up.clone();
            bad.parts[0].0 = d;
            assert_eq!(verify(&p, &sup, &bad, a, 1.0), None, "{d}");
        }
        // Without the fourth cell there is no hypercube.
        assert!(g.hypercubes(&sup3, a, 8, 10_000).is_empty());
    }

    /// Two rectangles through the primary add up when one alone lacks capacity.
    #[test]
    fn greedy_sum_of_two_cubes() {
        let mut t = grid(&[vec![10.0, 2.0, 2.0], vec![2.0, 20.0, 20.0], vec![2.0, 20.0, 20.0]], None);
        let a = primary(&mut t, &[1, 1], 3.0) as u32;
        let p = Problem::from_table(&t, None);
        let sup = sup_of(&t, &[[1, 1], [1, 2], [1, 3], [2, 1], [3, 1], [2, 2], [3, 3]]);
        let g = Geometry::new(&t);
        let cubes = g.hypercubes(&sup, a, 8, 10_000);
        assert_eq!(cubes.len(), 2, "{cubes:?}");
        let w = combine(&p, &cubes, 1.0, 3.0).unwrap();
        assert_eq!(w.parts.len(), 2);
        let v = verify(&p, &sup, &w, a, 1.0).unwrap();
        assert!((v - 3.0).abs() < 1e-6, "{v}");
    }

    /// A hierarchical 2-dim table: a subtotal's hypercube extends down a child path, and the
    /// witness balances every relation (checked by `verify`).
    #[test]
    fn hierarchical_cube_goes_down_the_tree() {
        let d0 = hierarchy("r", &[2, 2]);
        let d1 = Dimension::flat("c", &["x", "y"]);
        let leaves: Vec<u32> = (0..d0.codes.len() as u32).filter(|&n| !d0.parent.contains(&Some(n as usize))).collect();
        let mut cells = Vec::new();
        let mut vals: FastMap<(u32, u32), f64> = FastMap::default();
        for (i, &r) in leaves.iter().enumerate() {
            for c in 1..=2u32 {
                let v = 10.0 + (i as f64) * 3.0 + c as f64;
                let mut n = r as usize;
                loop {
                    *vals.entry((n as u32, c)).or_insert(0.0) += v;
                    *vals.entry((n as u32, 0)).or_insert(0.0) += v;
                    match d0.parent[n] {
                        Some(p) => n = p,
                        None => break,
                    }
                }
            }
        }
        for (&(r, c), &v) in &vals {
            cells.push(Cell::new(vec![r, c], v, 5));
        }
        let mut t = Table::new(vec![d0, d1], cells).unwrap();
        // Primary: subtotal node 1 ("1") in column x.
        let a = t.find(&[1, 1]).unwrap();
        t.set_status(a, CellStatus::Primary);
        t.set_protection(a, 1.0, 1.0, 0.0);
        let p = Problem::from_table(&t, None);
        let mut sup = vec![false; t.cells().len()];
        // Nodes 1, 2 (subtotals), 3 (child of 1), 5 (child of 2) in columns x and y.
        for r in [1, 2, 3, 5] {
            for c in [1, 2] {
                sup[t.find(&[r, c]).unwrap()] = true;
            }
        }
        let g = Geometry::new(&t);
        let cubes = g.hypercubes(&sup, a as u32, 8, 10_000);
        assert!(!cubes.is_empty());
        assert_eq!(cubes[0].len(), 8, "{:?}", cubes[0]);
        for dir in [1.0, -1.0] {
            let w = combine(&p, &cubes, dir, 1.0).unwrap();
            assert!(verify(&p, &sup, &w, a as u32, dir).unwrap() >= 1.0 - 1e-6);
        }
        // Without the child path below the subtotal the move is unbalanced: no cube.
        sup[t.find(&[3, 2]).unwrap()] = false;
        assert!(g.hypercubes(&sup, a as u32, 8, 10_000).is_empty());
    }
}
