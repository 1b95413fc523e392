//! Standardisation of the variables before distances are computed.
//!
//! Why: microaggregation distances mix variables with different units, so the literature
//! (Domingo-Ferrer & Mateo-Sanz 2002; both papers in `papers/`) standardises each variable
//! to zero mean and unit population standard deviation first; SSE and IL are then reported in
//! standardised units (SST = n·d for z-scores). Centroids published in the masked file are
//! computed from the ORIGINAL values, so standardisation only shapes the grouping.
//!
//! Invariants: statistics are unweighted column statistics of the whole input (not per stratum,
//! so strata share one scale). A constant column (sd or range 0) becomes all zeros under
//! z-score and range scaling — it then adds nothing to distances, SSE or SST — instead of NaN.

use serde::{Deserialize, Serialize};

/// How variables are scaled before distances are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standardisation {
    /// `(x − mean) / sd` with the population standard deviation (divide by n): the
    /// literature's convention and the default. Constant columns become 0.
    #[default]
    ZScore,
    /// `(x − min) / (max − min)`. Constant columns become 0.
    Range,
    /// Original units.
    None,
}

/// Per-column location and scale used by a standardisation.
#[derive(Debug, Clone, PartialEq)]
pub struct Scaling {
    /// Subtracted from each column.
    pub shift: Vec<f64>,
    /// Each shifted column is divided by this (0 marks a constant column mapped to 0).
    pub scale: Vec<f64>,
}

/// Standardises a row-major `rows × cols` matrix of finite values; returns the scaled matrix
/// and the scaling used.
pub fn standardise(values: &[f64], rows: usize, cols: usize, how: Standardisation) -> (Vec<f64>, Scaling) {
    let mut shift = vec![0.0; cols];
    let mut scale = vec![1.0; cols];
    if rows > 0 {
        match how {
            Standardisation::None => {}
            Standardisation::ZScore => {
                for j in 0..cols {
                    let mean = (0..rows).map(|i| values[i * cols + j]).sum::<f64>() / rows as f64;
                    let var = (0..rows).map(|i| (values[i * cols + j] - mean).powi(2)).sum::<f64>() / rows as f64;
                    shift[j] = mean;
                    scale[j] = var.sqrt();
                }
            }
            Standardisation::Range => {
                for j in 0..cols {
                    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
                    for i in 0..rows {
                        lo = lo.min(values[i * cols + j]);
                        hi = hi.max(values[i * cols + j]);
                    }
                    shift[j] = lo;
                    scale[j] = hi - lo;
                }
            }
        }
    }
    let out = values
        .iter()
        .enumerate()
        .map(|(idx, &v)| {
            let j = idx % cols;
            if scale[j] > 0.0 {
                (v - shift[j]) / scale[j]
            } else {
                0.0
            }
        })
        .collect();
    (out, Scaling { shift, scale })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zscore_uses_population_sd_and_zeroes_constants() {
        // column 0: 1,2,3 → mean 2, pop sd sqrt(2/3); column 1 constant
        let v = [1.0, 5.0, 2.0, 5.0, 3.0, 5.0];
        let (z, s) = standardise(&v, 3, 2, Standardisation::ZScore);
        let sd = (2.0f64 / 3.0).sqrt();
        assert!((z[0] + 1.0 / sd).abs() < 1e-12 && (z[4] - 1.0 / sd).abs() < 1e-12);
        assert_eq!((z[1], z[3], z[5]), (0.0, 0.0, 0.0));
        assert_eq!(s.scale[1], 0.0);
        // SST of the non-constant column is n
        let sst: f64 = [z[0], z[2], z[4]].iter().map(|x| x * x).sum();
        assert!((sst - 3.0).abs() < 1e-12);
    }

    #[test]
    fn range_and_none() {
        let v = [1.0, 3.0, 2.0];
        let (r, _) = standardise(&v, 3, 1, Standardisation::Range);
        assert_eq!(r, vec![0.0, 1.0, 0.5]);
        let (n, _) = standardise(&v, 3, 1, Standardisation::None);
        assert_eq!(n, v.to_vec());
    }
}
