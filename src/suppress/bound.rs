//! A lower bound on the secondary cost of every protecting pattern, for every method, so a user
//! sees how far from optimal a pattern can be (`lower_bound`, `gap` in `report.json`).
//!
//! Why this bound: it is cheap (linear in the relations of the sensitive cells, fine on
//! million-cell tables, no LP) and valid whatever the method. `Optimal` reports the larger of it
//! and its own master bound.
//!
//! Validity. Take a sensitive cell `i` with protection need `q = max(lpl, upl) > 0` and a
//! relation `r` containing it. An attacker who moves `i` by `q` (in the direction that needs
//! `q`) must move the other suppressed cells of `r` by `q` in total, and cell `j` can move by at
//! most `cap_j = max(a_j − lb_j, ub_j − a_j)`. So every protecting pattern `x` satisfies
//! `Σ_{j∈r, j≠i} min(cap_j, q)·x_j ≥ q` (the `min` keeps it true: one term reaching `q` is
//! enough either way). Cells fixed suppressed count for free; the rest is a covering row over
//! free cells, written `Σ a_j x_j ≥ 1` with `0 < a_j ≤ 1`. The LP relaxation of these rows is a
//! relaxation of the cell suppression problem, so by weak duality any `y ≥ 0` with
//! `Σ_r a_rj·y_r ≤ cost_j` for every free cell `j` gives `Σ_r y_r ≤` the free cost of any
//! protecting pattern. [`free_cost_bound`] builds such a `y` by dual ascent (rows with the
//! fewest free cells first; each `y_r` as large as the cells' remaining cost allows).

use super::problem::{Fix, Problem};

/// Lower bound on the secondary cost (method-chosen plus forced secondaries) of any pattern
/// protecting `p`'s sensitive cells: the forced secondaries' cost plus [`free_cost_bound`].
pub(crate) fn secondary_cost_bound(p: &Problem) -> f64 {
    let forced: f64 = (0..p.n())
        .filter(|&i| p.fix[i] == Fix::Suppressed && !p.sens_of.contains_key(&(i as u32)))
        .map(|i| p.cost[i])
        .sum();
    forced + free_cost_bound(p)
}

/// Lower bound on the cost of the free cells any protecting pattern suppresses (module doc).
pub(crate) fn free_cost_bound(p: &Problem) -> f64 {
    // Covering rows: (free cell, coefficient in (0, 1]).
    let mut rows: Vec<Vec<(usize, f64)>> = Vec::new();
    for s in &p.sens {
        let q = s.lpl.max(s.upl);
        if q <= 0.0 {
            continue;
        }
        let i = s.cell as usize;
        for &r in p.rel.of_cell(i) {
            let mut need = q;
            let mut row = Vec::new();
            for j in p.rel.members(r as usize).map(|j| j as usize).filter(|&j| j != i) {
                let a = p.lo_gap[j].max(p.up_gap[j]).min(q);
                match p.fix[j] {
                    Fix::Suppressed => need -= a,
                    Fix::Free if a > 0.0 => row.push((j, a)),
                    _ => {}
                }
            }
            if need > 1e-9 * q && !row.is_empty() {
                rows.push(row.into_iter().map(|(j, a)| (j, a.min(need) / need)).collect());
            }
        }
    }
    rows.sort_by_key(|row| row.len());
    let mut left: Vec<f64> = p.cost.clone();
    let mut bound = 0.0;
    for row in &rows {
        let y = row.iter().map(|&(j, a)| left[j] / a).fold(f64::INFINITY, f64::min).max(0.0);
        if y <= 0.0 || !y.is_finite() {
            continue;
        }
        for &(j, a) in row {
            left[j] = (left[j] - a * y).max(0.0);
        }
        bound += y;
    }
    // Rounding in the subtractions may overstate the bound by a few ulps: never claim more
    // than it proves.
    bound * (1.0 - 1e-9)
}
