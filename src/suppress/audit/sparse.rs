//! Sparser witnesses for the certificates a cleanup trial found ([`Auditor::sparsify_since`]).

use rayon::prelude::*;

use super::super::attacker::{sparsest, tolerance};
use super::super::problem::Problem;
use super::super::SuppressError;
use super::certificates::feasible_move;
use super::{need, Auditor, Cert};
use crate::table::relations::FastMap;

/// A witness's moves `(cell, value)`, and the `(sensitive index, direction)` pairs it certifies.
type Move = Vec<(u32, f64)>;
type Users = Vec<(u32, u8)>;

/// Witnesses with at most this many cells are kept as found (already a short cycle).
const SPARSE_MIN: usize = 16;

/// User `(k, d)`'s cell, its direction (−1 down, +1 up) and how far the move `at` (a cell's
/// value in it) takes the cell that way.
fn reach(p: &Problem, (k, d): (u32, u8), at: impl Fn(u32) -> f64) -> (u32, f64, f64) {
    let cell = p.sens[k as usize].cell;
    let dir = if d == 0 { -1.0 } else { 1.0 };
    (cell, dir, dir * at(cell))
}

impl Auditor<'_, '_> {
    /// Witnesses recorded so far (ids below this exist).
    pub(crate) fn witness_count(&self) -> u32 {
        self.witnesses.len() as u32
    }

    /// Replaces each LP witness recorded from id `from` on, and still in use, by the smallest
    /// move inside it that reaches all its users ([`sparsest`]), verified exactly before it
    /// certifies anything; returns the witnesses replaced. Why: see [`sparsest`] — a cleanup
    /// trial loses every certificate whose witness uses the cell it publishes.
    pub(crate) fn sparsify_since(&mut self, from: u32) -> Result<usize, SuppressError> {
        let p = self.p;
        let mut jobs: Vec<(Move, Users)> = Vec::new();
        for w in from..self.witness_count() {
            let wi = w as usize;
            if self.combinatorial[wi] || self.symmetric[wi] {
                continue;
            }
            let users: Users = self.users[wi]
                .iter()
                .copied()
                .filter(|&(k, d)| matches!(self.certs[k as usize][d as usize], Cert::Ok(w2, _) if w2 == w))
                .collect();
            let z = self.witnesses.to_vec(w);
            if users.is_empty() || z.len() <= SPARSE_MIN {
                continue;
            }
            jobs.push((z, users));
        }
        let (sup, stop, effort) = (&self.sup, self.stop, self.lp_effort.clone());
        let found: Vec<Option<Move>> = jobs
            .par_iter()
            .map(|(z, users)| {
                // One look-up per user: a witness may move thousands of cells.
                let mut moved: FastMap<u32, f64> = FastMap::default();
                for &(c, v) in z {
                    moved.entry(c).or_insert(v);
                }
                let at = |cell: u32| moved.get(&cell).copied().unwrap_or(0.0);
                let targets: Vec<(u32, f64, f64)> = users
                    .iter()
                    .map(|&u| {
                        let (cell, dir, had) = reach(p, u, at);
                        (cell, dir, need(&p.sens[u.0 as usize], u.1 as usize).min(had))
                    })
                    .collect();
                sparsest(p, sup, z, &targets, stop, &effort)
            })
            .collect::<Result<_, _>>()?;
        self.solved(jobs.len(), jobs.iter().map(|(z, _)| z.len()).sum());
        let mut replaced = 0;
        for ((z, users), new) in jobs.into_iter().zip(found) {
            let Some(new) = new.filter(|n| n.len() < z.len()) else { continue };
            let Some(zm) = feasible_move(p, &self.sup, &new) else { continue };
            let reached: Vec<f64> =
                users.iter().map(|&u| reach(p, u, |c| zm.get(&c).copied().unwrap_or(0.0)).2).collect();
            let reaches = users.iter().zip(&reached).all(|(&(k, d), &v)| {
                let n = need(&p.sens[k as usize], d as usize);
                v >= n - tolerance(n)
            });
            if !reaches {
                continue;
            }
            let id = self.record(new);
            for (&(k, d), v) in users.iter().zip(reached) {
                self.users[id as usize].push((k, d));
                self.certs[k as usize][d as usize] = Cert::Ok(id, v);
            }
            replaced += 1;
        }
        Ok(replaced)
    }
}
