//! Guarantees of a nominal release, checked before anything is returned (thesis §5.5).
//!
//! Why separate from the algorithms: the check is an oracle independent of how the release
//! was built — it only compares the original and the released microdata. Checked: same shape
//! (row count kept), every released full combination occurs at least k times (which implies
//! that every table of every dimension is k-anonymous, since a cell count is a sum of
//! full-combination counts), and no released full combination is new (unless allowed, for the
//! cluster-mode baseline, in which case new rows are counted).

use std::collections::HashMap;

use super::{NominalData, NominalError};

/// What [`verify`] checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Rows in both data sets.
    pub rows: usize,
    /// Smallest count of a released full combination.
    pub min_class_size: usize,
    /// Released rows whose full combination does not occur in the original.
    pub new_combination_rows: usize,
}

/// Checks the guarantees of a release against its original: same row and attribute count,
/// every released full combination occurs at least `k` times (so every table of every
/// dimension is k-anonymous) and, unless `allow_new_combinations`, occurs in the original.
pub fn verify(
    original: &NominalData,
    released: &NominalData,
    k: usize,
    allow_new_combinations: bool,
) -> Result<VerifyReport, NominalError> {
    if original.n_rows() != released.n_rows() || original.n_attributes() != released.n_attributes() {
        return Err(NominalError::GuaranteeViolated {
            what: format!(
                "shape changed: {}x{} released vs {}x{} original",
                released.n_rows(),
                released.n_attributes(),
                original.n_rows(),
                original.n_attributes()
            ),
        });
    }
    let mut orig: HashMap<&[u32], usize> = HashMap::new();
    for i in 0..original.n_rows() {
        *orig.entry(original.row(i)).or_default() += 1;
    }
    let mut rel: HashMap<&[u32], (usize, usize)> = HashMap::new();
    for i in 0..released.n_rows() {
        let e = rel.entry(released.row(i)).or_insert((0, i));
        e.0 += 1;
    }
    let mut min_class = usize::MAX;
    let mut new_rows = 0;
    for (rec, &(cnt, first)) in &rel {
        min_class = min_class.min(cnt);
        if cnt < k {
            return Err(NominalError::GuaranteeViolated {
                what: format!("released record of row {first} occurs {cnt} < k = {k} times"),
            });
        }
        if !orig.contains_key(rec) {
            if !allow_new_combinations {
                return Err(NominalError::GuaranteeViolated {
                    what: format!("released record of row {first} is a new combination"),
                });
            }
            new_rows += cnt;
        }
    }
    Ok(VerifyReport {
        rows: released.n_rows(),
        min_class_size: if rel.is_empty() { 0 } else { min_class },
        new_combination_rows: new_rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_releases() {
        let o = NominalData::from_rows(&[vec![1], vec![1], vec![2], vec![2]]).unwrap();
        let ok = NominalData::from_rows(&[vec![1], vec![1], vec![1], vec![1]]).unwrap();
        assert_eq!(verify(&o, &ok, 2, false).unwrap().min_class_size, 4);
        let small = NominalData::from_rows(&[vec![1], vec![1], vec![1], vec![2]]).unwrap();
        assert!(verify(&o, &small, 2, false).is_err());
        let new = NominalData::from_rows(&[vec![3], vec![3], vec![1], vec![1]]).unwrap();
        assert!(verify(&o, &new, 2, false).is_err());
        assert_eq!(verify(&o, &new, 2, true).unwrap().new_combination_rows, 2);
        let short = NominalData::from_rows(&[vec![1], vec![1], vec![1]]).unwrap();
        assert!(verify(&o, &short, 1, false).is_err());
    }
}
