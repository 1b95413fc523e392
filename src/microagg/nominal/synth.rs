//! Synthetic nominal microdata with a prescribed share of confidentiality problems (thesis
//! §6.2.1), for tests and benchmarks.
//!
//! Generator (as in the thesis): first ⌊(1−p)·n⌋ "safe" rows — a not-yet-used random record
//! copied n_r + 1 times with n_r uniform in [k−1, 0.15·n] — then ⌈p·n⌉ problem rows — a
//! not-yet-used random record copied 1..k−1 times. The thesis scenarios are 200 rows × 5
//! attributes with 2, 5, 6, 7, 7 values and p ∈ {0.02, 0.2, 1}. Rows are shuffled at the end.
//! Deterministic for a seed.

use std::collections::HashSet;

use super::{NominalData, NominalError};
use crate::rng::Rng;

/// Parameters of a synthetic data set.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticSpec {
    /// Number of rows.
    pub rows: usize,
    /// Number of values per attribute.
    pub cardinalities: Vec<u32>,
    /// Share p of rows that are confidentiality problems (records occurring < k times).
    pub problem_share: f64,
    /// The k that defines a problem.
    pub k: usize,
    /// Upper bound of n_r as a share of the rows (thesis: 0.15).
    pub max_copies_share: f64,
}

impl SyntheticSpec {
    /// The thesis scenario `200m5_<p>` (200 rows, values 2, 5, 6, 7, 7, k = 3).
    pub fn thesis(problem_share: f64) -> Self {
        Self { rows: 200, cardinalities: vec![2, 5, 6, 7, 7], problem_share, k: 3, max_copies_share: 0.15 }
    }
}

/// Generates the data set (see the module doc).
pub fn generate(spec: &SyntheticSpec, seed: u64) -> Result<NominalData, NominalError> {
    let mut rng = Rng::new(seed);
    let n = spec.rows;
    let k = spec.k.max(1);
    let space: f64 = spec.cardinalities.iter().map(|&c| c as f64).product();
    let mut used: HashSet<Vec<u32>> = HashSet::new();
    let fresh = |rng: &mut Rng, used: &mut HashSet<Vec<u32>>| -> Result<Vec<u32>, NominalError> {
        for _ in 0..10_000 {
            let r: Vec<u32> = spec.cardinalities.iter().map(|&c| rng.below(c as u64) as u32).collect();
            if used.insert(r.clone()) {
                return Ok(r);
            }
        }
        Err(NominalError::SyntheticSpaceExhausted { used: used.len(), space })
    };
    let safe_target = ((1.0 - spec.problem_share) * n as f64 + 1e-9).floor() as usize;
    let mut rows: Vec<Vec<u32>> = Vec::with_capacity(n);
    let hi = ((spec.max_copies_share * n as f64).floor() as usize).max(k - 1);
    while rows.len() < safe_target {
        let rec = fresh(&mut rng, &mut used)?;
        let nr = (k - 1) + rng.index(hi - (k - 1) + 1);
        let remaining = safe_target - rows.len();
        let mut copies = (nr + 1).min(remaining);
        if remaining - copies < k {
            copies = remaining;
        }
        rows.extend(std::iter::repeat_n(rec, copies));
    }
    while rows.len() < n {
        let rec = fresh(&mut rng, &mut used)?;
        let copies = (1 + rng.index(k.saturating_sub(1).max(1))).min(n - rows.len());
        rows.extend(std::iter::repeat_n(rec, copies));
    }
    rng.shuffle(&mut rows);
    NominalData::from_rows(&rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn problem_share_is_met() {
        for p in [0.02, 0.2, 1.0] {
            let d = generate(&SyntheticSpec::thesis(p), 1).unwrap();
            assert_eq!(d.n_rows(), 200);
            let mut cnt: HashMap<&[u32], usize> = HashMap::new();
            for i in 0..200 {
                *cnt.entry(d.row(i)).or_default() += 1;
            }
            let problems: usize = cnt.values().filter(|&&c| c < 3).sum();
            assert_eq!(problems, (p * 200.0f64).round() as usize, "p = {p}");
        }
        assert_eq!(generate(&SyntheticSpec::thesis(0.2), 7), generate(&SyntheticSpec::thesis(0.2), 7));
    }
}
