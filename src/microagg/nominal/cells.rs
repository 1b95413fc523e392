//! Frequency-table cells of nominal records: distinct records and, per table (a set of
//! attributes), the cell each distinct record falls in.
//!
//! Why a module: step 2 (χ² objective over control-table cells) and the report (errors over
//! all tables) both count records per cell; doing it on *distinct* records with multiplicities
//! keeps the work proportional to the number of distinct records, not rows.
//!
//! Invariants: cell ids are dense and global over the listed tables (table t owns a contiguous
//! id range); ids are assigned in record order, so they are deterministic. Projections are
//! interned attribute by attribute (`(prefix id, code)` → id), so no key ever overflows.

use std::collections::HashMap;

use rayon::prelude::*;

/// Distinct records of a row-major code matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distinct {
    /// Distinct records, row-major, in lexicographic order.
    pub codes: Vec<u32>,
    /// Multiplicity of each distinct record.
    pub mult: Vec<u64>,
    /// For every input row, its distinct-record id.
    pub id_of_row: Vec<u32>,
}

impl Distinct {
    /// Number of distinct records.
    pub fn len(&self) -> usize {
        self.mult.len()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.mult.is_empty()
    }
}

/// Groups identical rows of `codes` (`m` codes per row).
pub fn distinct(codes: &[u32], m: usize) -> Distinct {
    let n = codes.len() / m;
    let r = |i: usize| &codes[i * m..(i + 1) * m];
    let mut idx: Vec<usize> = (0..n).collect();
    idx.par_sort_unstable_by(|&a, &b| r(a).cmp(r(b)).then(a.cmp(&b)));
    let mut out = Distinct { codes: Vec::new(), mult: Vec::new(), id_of_row: vec![0; n] };
    for (p, &i) in idx.iter().enumerate() {
        if p == 0 || r(idx[p - 1]) != r(i) {
            out.codes.extend_from_slice(r(i));
            out.mult.push(0);
        }
        let id = out.mult.len() - 1;
        out.mult[id] += 1;
        out.id_of_row[i] = id as u32;
    }
    out
}

/// Cell membership of records in a list of tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellIndex {
    /// Number of tables.
    pub n_tables: usize,
    /// `cell_of[r * n_tables + t]`: global cell id of record r in table t.
    pub cell_of: Vec<u32>,
    /// Total number of cells.
    pub n_cells: usize,
    /// First cell id of each table (plus the total at the end).
    pub table_start: Vec<u32>,
}

impl CellIndex {
    /// Indexes the records `codes` (`m` per row) in `tables` (lists of attribute indices).
    pub fn build(codes: &[u32], m: usize, tables: &[Vec<usize>]) -> Self {
        let n = codes.len() / m;
        let per_table: Vec<(Vec<u32>, usize)> = tables
            .par_iter()
            .map(|attrs| {
                let mut prev = vec![0u32; n];
                let mut count = 0;
                for &j in attrs {
                    let mut map: HashMap<u64, u32> = HashMap::new();
                    for (r, p) in prev.iter_mut().enumerate() {
                        let key = ((*p as u64) << 32) | codes[r * m + j] as u64;
                        let next = map.len() as u32;
                        *p = *map.entry(key).or_insert(next);
                    }
                    count = map.len();
                }
                (prev, count)
            })
            .collect();
        let nt = tables.len();
        let mut cell_of = vec![0u32; n * nt];
        let mut table_start = Vec::with_capacity(nt + 1);
        let mut off = 0u32;
        for (t, (ids, count)) in per_table.iter().enumerate() {
            table_start.push(off);
            for r in 0..n {
                cell_of[r * nt + t] = off + ids[r];
            }
            off += *count as u32;
        }
        table_start.push(off);
        Self { n_tables: nt, cell_of, n_cells: off as usize, table_start }
    }

    /// Cell of record `r` in table `t`.
    #[inline]
    pub fn cell(&self, r: usize, t: usize) -> u32 {
        self.cell_of[r * self.n_tables + t]
    }

    /// Counts per cell for record weights `w` (one per record).
    pub fn counts(&self, w: &[u64]) -> Vec<u64> {
        let mut c = vec![0u64; self.n_cells];
        for (r, &x) in w.iter().enumerate() {
            if x > 0 {
                for t in 0..self.n_tables {
                    c[self.cell(r, t) as usize] += x;
                }
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_and_cells() {
        let codes = vec![1, 2, 1, 3, 1, 2, 7, 2];
        let d = distinct(&codes, 2);
        assert_eq!(d.codes, vec![1, 2, 1, 3, 7, 2]);
        assert_eq!(d.mult, vec![2, 1, 1]);
        assert_eq!(d.id_of_row, vec![0, 1, 0, 2]);
        let ci = CellIndex::build(&d.codes, 2, &[vec![0], vec![1], vec![0, 1]]);
        assert_eq!(ci.n_cells, 2 + 2 + 3);
        let c = ci.counts(&d.mult);
        // table {0}: value 1 → 3, value 7 → 1
        assert_eq!(c[ci.cell(0, 0) as usize], 3);
        assert_eq!(c[ci.cell(2, 0) as usize], 1);
        // table {1}: value 2 → 3
        assert_eq!(c[ci.cell(0, 1) as usize], 3);
        assert_eq!(c.iter().sum::<u64>(), 12);
    }
}
