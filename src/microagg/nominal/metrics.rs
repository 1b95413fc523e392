//! Quality report of a nominal release (thesis §6.1): per table dimension, the sum of χ²
//! errors, the maximum absolute error and the maximum relative error, over the control tables
//! and over all reported tables of that dimension.
//!
//! Which tables: all 2^m − 1 tables when that is at most `report_max_tables`, otherwise all
//! tables of dimension ≤ 3 plus the full table (dimension m).
//!
//! Zero original cells: for the two-step method and the random-member baseline a released
//! count n_t > 0 implies n̄_t > 0 (representatives are existing records). Only the cluster-mode
//! baseline can fill a cell with n̄_t = 0; such a cell contributes n_t² to χ² and n_t to the
//! relative error (denominator max(n̄_t, 1)) and is counted in `new_cells`.

use super::cells::{distinct, CellIndex};
use super::NominalData;

/// Error measures over a set of table cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableErrors {
    /// Number of tables.
    pub tables: usize,
    /// Number of cells with n̄_t > 0 or n_t > 0.
    pub cells: usize,
    /// Σ (n_t − n̄_t)² / max(n̄_t, 1).
    pub chi2: f64,
    /// max |n_t − n̄_t|.
    pub max_abs: f64,
    /// max |n_t − n̄_t| / max(n̄_t, 1).
    pub max_rel: f64,
    /// Cells with n̄_t = 0 < n_t (only the mode baseline creates them).
    pub new_cells: usize,
}

impl TableErrors {
    fn add(&mut self, nbar: u64, n: u64) {
        let den = nbar.max(1) as f64;
        let e = n as f64 - nbar as f64;
        self.cells += 1;
        self.chi2 += e * e / den;
        self.max_abs = self.max_abs.max(e.abs());
        self.max_rel = self.max_rel.max(e.abs() / den);
        if nbar == 0 && n > 0 {
            self.new_cells += 1;
        }
    }
}

/// Errors of one table dimension.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DimensionStats {
    /// Table dimension (number of attributes).
    pub dim: usize,
    /// Over the control tables of this dimension (zero tables if none).
    pub control: TableErrors,
    /// Over all reported tables of this dimension.
    pub all: TableErrors,
}

/// All subsets of size `d` of `0..m`, in lexicographic order.
pub fn subsets(m: usize, d: usize) -> Vec<Vec<usize>> {
    fn rec(m: usize, d: usize, from: usize, cur: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if cur.len() == d {
            out.push(cur.clone());
            return;
        }
        for j in from..m {
            if m - j < d - cur.len() {
                break;
            }
            cur.push(j);
            rec(m, d, j + 1, cur, out);
            cur.pop();
        }
    }
    let mut out = Vec::new();
    if d <= m {
        rec(m, d, 0, &mut Vec::new(), &mut out);
    }
    out
}

/// Tables covered by the report (see the module doc).
pub fn report_tables(m: usize, max_tables: usize) -> Vec<Vec<usize>> {
    let total = if m >= 63 { usize::MAX } else { (1usize << m) - 1 };
    if total <= max_tables {
        (1..=m).flat_map(|d| subsets(m, d)).collect()
    } else {
        let mut t: Vec<Vec<usize>> = (1..=3.min(m)).flat_map(|d| subsets(m, d)).collect();
        if m > 3 {
            t.push((0..m).collect());
        }
        t
    }
}

/// Per-dimension errors of `released` against `original` (same shape).
pub fn per_dimension(
    original: &NominalData,
    released: &NominalData,
    control: &[Vec<usize>],
    max_tables: usize,
) -> Vec<DimensionStats> {
    let m = original.n_attributes();
    let n = original.n_rows();
    let mut both = original.codes().to_vec();
    both.extend_from_slice(released.codes());
    let dist = distinct(&both, m);
    let mut w_orig = vec![0u64; dist.len()];
    let mut w_rel = vec![0u64; dist.len()];
    for (i, &id) in dist.id_of_row.iter().enumerate() {
        if i < n {
            w_orig[id as usize] += 1;
        } else {
            w_rel[id as usize] += 1;
        }
    }
    let tables = report_tables(m, max_tables);
    let mut all_tables = tables.clone();
    for c in control {
        if !all_tables.contains(c) {
            all_tables.push(c.clone());
        }
    }
    let ci = CellIndex::build(&dist.codes, m, &all_tables);
    let co = ci.counts(&w_orig);
    let cr = ci.counts(&w_rel);
    let mut dims: Vec<DimensionStats> = (1..=m).map(|d| DimensionStats { dim: d, ..Default::default() }).collect();
    for (t, attrs) in all_tables.iter().enumerate() {
        let d = attrs.len();
        let in_report = t < tables.len();
        let is_control = control.contains(attrs);
        let (a, b) = (ci.table_start[t] as usize, ci.table_start[t + 1] as usize);
        let st = &mut dims[d - 1];
        if in_report {
            st.all.tables += 1;
        }
        if is_control {
            st.control.tables += 1;
        }
        for cell in a..b {
            if in_report {
                st.all.add(co[cell], cr[cell]);
            }
            if is_control {
                st.control.add(co[cell], cr[cell]);
            }
        }
    }
    dims.retain(|s| s.all.tables > 0 || s.control.tables > 0);
    dims
}

/// Sum of χ² over the control tables of a per-dimension report.
pub fn control_chi2(dims: &[DimensionStats]) -> f64 {
    dims.iter().map(|d| d.control.chi2).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsets_and_report_tables() {
        assert_eq!(subsets(4, 2).len(), 6);
        assert_eq!(report_tables(5, 255).len(), 31);
        assert_eq!(report_tables(10, 255).len(), 10 + 45 + 120 + 1);
    }

    #[test]
    fn thesis_example_errors() {
        // Thesis Example 5.1.1: (f,GER),(f,OTH),(m,GER),(m,OTH) → (f,GER)x2,(m,OTH)x2.
        let o = NominalData::from_rows(&[vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]).unwrap();
        let r = NominalData::from_rows(&[vec![0, 0], vec![0, 0], vec![1, 1], vec![1, 1]]).unwrap();
        let dims = per_dimension(&o, &r, &[vec![0], vec![1]], 255);
        assert_eq!(dims[0].all.chi2, 0.0);
        assert_eq!(dims[1].all.chi2, 4.0);
        assert_eq!(dims[1].all.max_abs, 1.0);
        assert_eq!(dims[1].all.max_rel, 1.0);
        assert_eq!(dims[0].control.tables, 2);
        assert_eq!(dims[1].control.tables, 0);
    }
}
