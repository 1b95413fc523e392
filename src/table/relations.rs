//! Sparse additivity relations of a table and the compact coordinate index.
//!
//! Why: every suppression method and the attacker-LP audit walk the relations
//! `y(marginal) - Σ y(parts) = 0`, one per (dimension, marginal cell whose node has children),
//! over the cells that exist. Built for millions of cells: coordinates are packed into a `u128`
//! (mixed radix, `ceil(log2(codes))` bits per dimension) and looked up in a hash map; relations
//! and the cell → relation incidence are stored as CSR index lists. A marginal whose node has
//! children but none of whose child cells exist still gets a relation with no parts (it is known
//! to be 0 — the attacker knows that). Invariant: relation `r` lists its marginal once and each
//! part once; a cell appears as a part of at most one relation per dimension.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::{Cell, Dimension, TableError};

/// A fast multiplicative hasher for packed coordinates (keys are already well spread).
#[derive(Default, Clone, Copy)]
pub struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01B3);
        }
    }
    fn write_u128(&mut self, i: u128) {
        self.0 = (self.0 ^ (i as u64)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ ((i >> 64) as u64).wrapping_mul(0xD605_BBB5_8C8A_BE5D);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0 ^ i).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Hash map with [`MixHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<MixHasher>>;

/// Packed-coordinate → cell index map.
#[derive(Debug, Clone)]
pub struct CoordIndex {
    shifts: Vec<u32>,
    map: FastMap<u128, u32>,
}

impl CoordIndex {
    /// Builds the index; errors on bad or duplicate coordinates.
    pub fn build(dims: &[Dimension], cells: &[Cell]) -> Result<Self, TableError> {
        let mut shifts = Vec::with_capacity(dims.len());
        let mut bits = 0u32;
        for d in dims {
            shifts.push(bits);
            bits += usize::BITS - (d.codes.len().max(2) - 1).leading_zeros();
        }
        if bits > 128 {
            return Err(TableError::TooManyCodes { bits });
        }
        let mut idx = Self { shifts, map: FastMap::default() };
        idx.map.reserve(cells.len());
        for (i, c) in cells.iter().enumerate() {
            let ok =
                c.coord.len() == dims.len() && c.coord.iter().zip(dims).all(|(&n, d)| (n as usize) < d.codes.len());
            if !ok {
                return Err(TableError::BadCoord { cell: i, coord: c.coord.clone(), dims: dims.len() });
            }
            if let Some(first) = idx.map.insert(idx.key(&c.coord), i as u32) {
                return Err(TableError::DuplicateCell { first: first as usize, second: i, coord: c.coord.clone() });
            }
        }
        Ok(idx)
    }

    /// Packed key of a (valid) coordinate.
    pub fn key(&self, coord: &[u32]) -> u128 {
        coord.iter().zip(&self.shifts).fold(0u128, |k, (&n, &s)| k | ((n as u128) << s))
    }

    /// Key with dimension `d` replaced by node `node`.
    pub fn replace(&self, key: u128, d: usize, old: u32, node: u32) -> u128 {
        (key ^ ((old as u128) << self.shifts[d])) | ((node as u128) << self.shifts[d])
    }

    /// Cell at a packed key.
    pub fn get(&self, key: u128) -> Option<usize> {
        self.map.get(&key).map(|&i| i as usize)
    }

    /// Cell at `coord` (None when out of range or missing).
    pub fn find(&self, coord: &[u32]) -> Option<usize> {
        if coord.len() != self.shifts.len() {
            return None;
        }
        self.get(self.key(coord))
    }
}

/// The additivity relations `y(total) = Σ y(parts)` in CSR form, plus cell incidence.
#[derive(Debug, Clone, Default)]
pub struct Relations {
    dim: Vec<u16>,
    total: Vec<u32>,
    start: Vec<u32>,
    parts: Vec<u32>,
    cell_start: Vec<u32>,
    cell_rels: Vec<u32>,
}

impl Relations {
    /// Computes the relations of a table (see the module doc).
    pub fn build(dims: &[Dimension], cells: &[Cell], index: &CoordIndex) -> Result<Self, TableError> {
        let nd = dims.len();
        let parents: Vec<&Vec<Option<usize>>> = dims.iter().map(|d| &d.parent).collect();
        let internal: Vec<Vec<bool>> = dims
            .iter()
            .map(|d| {
                let mut v = vec![false; d.codes.len()];
                for p in d.parent.iter().flatten() {
                    v[*p] = true;
                }
                v
            })
            .collect();
        // Relation ids: one per (marginal cell, dimension where its node is internal).
        let mut rel_of = vec![u32::MAX; cells.len() * nd];
        let mut rels = Relations::default();
        for (i, c) in cells.iter().enumerate() {
            for d in 0..nd {
                if internal[d][c.coord[d] as usize] {
                    rel_of[i * nd + d] = rels.total.len() as u32;
                    rels.total.push(i as u32);
                    rels.dim.push(d as u16);
                }
            }
        }
        let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(cells.len() * nd);
        for (i, c) in cells.iter().enumerate() {
            let key = index.key(&c.coord);
            for d in 0..nd {
                let n = c.coord[d];
                if let Some(p) = parents[d][n as usize] {
                    let pk = index.replace(key, d, n, p as u32);
                    let Some(j) = index.get(pk) else {
                        let mut missing = c.coord.clone();
                        missing[d] = p as u32;
                        return Err(TableError::MissingMarginal {
                            coord: c.coord.clone(),
                            dim: dims[d].name.clone(),
                            missing,
                        });
                    };
                    pairs.push((rel_of[j * nd + d], i as u32));
                }
            }
        }
        drop(rel_of);
        let nr = rels.total.len();
        let mut count = vec![0u32; nr + 1];
        for &(r, _) in &pairs {
            count[r as usize + 1] += 1;
        }
        for r in 0..nr {
            count[r + 1] += count[r];
        }
        rels.start = count.clone();
        let mut fill = count;
        rels.parts = vec![0; pairs.len()];
        for &(r, i) in &pairs {
            rels.parts[fill[r as usize] as usize] = i;
            fill[r as usize] += 1;
        }
        for r in 0..nr {
            let (a, b) = (rels.start[r] as usize, rels.start[r + 1] as usize);
            rels.parts[a..b].sort_unstable();
        }
        rels.build_incidence(cells.len());
        Ok(rels)
    }

    /// Relations from explicit `(total, parts)` lists over `n_cells` cells (used to join linked
    /// tables); `dim` is informational.
    pub fn from_lists(n_cells: usize, lists: &[(u16, u32, Vec<u32>)]) -> Self {
        let mut rels = Relations::default();
        rels.start.push(0);
        for (d, t, p) in lists {
            rels.dim.push(*d);
            rels.total.push(*t);
            rels.parts.extend_from_slice(p);
            rels.start.push(rels.parts.len() as u32);
        }
        if lists.is_empty() {
            rels.start = vec![0];
        }
        rels.build_incidence(n_cells);
        rels
    }

    fn build_incidence(&mut self, n_cells: usize) {
        if self.start.is_empty() {
            self.start.push(0);
        }
        let mut count = vec![0u32; n_cells + 1];
        for r in 0..self.len() {
            for c in self.members(r) {
                count[c as usize + 1] += 1;
            }
        }
        for i in 0..n_cells {
            count[i + 1] += count[i];
        }
        let mut fill = count.clone();
        let mut cell_rels = vec![0; count[n_cells] as usize];
        for r in 0..self.len() {
            for c in self.members(r) {
                cell_rels[fill[c as usize] as usize] = r as u32;
                fill[c as usize] += 1;
            }
        }
        self.cell_rels = cell_rels;
        self.cell_start = count;
    }

    /// Number of relations.
    pub fn len(&self) -> usize {
        self.total.len()
    }

    /// Whether there are no relations.
    pub fn is_empty(&self) -> bool {
        self.total.is_empty()
    }

    /// Marginal cell of relation `r`.
    pub fn total(&self, r: usize) -> u32 {
        self.total[r]
    }

    /// Dimension of relation `r`.
    pub fn dim(&self, r: usize) -> usize {
        self.dim[r] as usize
    }

    /// Parts of relation `r`.
    pub fn parts(&self, r: usize) -> &[u32] {
        &self.parts[self.start[r] as usize..self.start[r + 1] as usize]
    }

    /// Total then parts of relation `r`.
    pub fn members(&self, r: usize) -> impl Iterator<Item = u32> + '_ {
        std::iter::once(self.total[r]).chain(self.parts(r).iter().copied())
    }

    /// Members of `r` with their coefficient (+1 total, −1 parts).
    pub fn terms(&self, r: usize) -> impl Iterator<Item = (u32, f64)> + '_ {
        std::iter::once((self.total[r], 1.0)).chain(self.parts(r).iter().map(|&p| (p, -1.0)))
    }

    /// Number of members of `r`.
    pub fn size(&self, r: usize) -> usize {
        1 + self.parts(r).len()
    }

    /// Relations containing cell `c`.
    pub fn of_cell(&self, c: usize) -> &[u32] {
        &self.cell_rels[self.cell_start[c] as usize..self.cell_start[c + 1] as usize]
    }

    /// Checks that every marginal equals the sum of its parts (relative tolerance 1e-6).
    pub fn check_additive(&self, dims: &[Dimension], cells: &[Cell]) -> Result<(), TableError> {
        for r in 0..self.len() {
            let t = &cells[self.total[r] as usize];
            let (mut sum, mut abs) = (0.0, t.value.abs());
            for &p in self.parts(r) {
                sum += cells[p as usize].value;
                abs += cells[p as usize].value.abs();
            }
            if (t.value - sum).abs() > 1e-6 * abs.max(1.0) {
                return Err(TableError::NotAdditive {
                    coord: t.coord.clone(),
                    dim: dims[self.dim(r)].name.clone(),
                    value: t.value,
                    sum,
                });
            }
        }
        Ok(())
    }
}
