//! Optimal univariate microaggregation (Hansen & Mukherjee 2003).
//!
//! Why: for one variable the optimal k-partition consists of runs of consecutive sorted
//! values of size k..2k − 1, so a shortest path over the sorted values (a DP over "where the
//! last group starts") finds the optimum in O(n·k) after sorting — the exact method the
//! column-generation paper cites for univariate data.
//!
//! Invariants: `points.dim == 1`. Ties in the sort are broken by index, ties between equal-cost
//! paths by the smaller last group, so the output is deterministic. With weights the DP is
//! exact over partitions into consecutive runs (the Hansen–Mukherjee optimality argument is
//! for unit weights); group sizes always count records.

use super::geometry::PointSet;

/// Optimal k-partition of one-dimensional `points` (n ≥ k ≥ 1).
pub fn univariate_optimal(points: &PointSet, k: usize) -> Vec<Vec<usize>> {
    assert_eq!(points.dim, 1, "univariate_optimal needs one variable");
    assert!(k >= 1);
    let n = points.len();
    if n == 0 {
        return Vec::new();
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| points.coords[a].total_cmp(&points.coords[b]).then(a.cmp(&b)));
    // Prefix sums of w, w·x, w·x² over the sorted values, centred for accuracy.
    let mean = points.coords.iter().sum::<f64>() / n as f64;
    let (mut pw, mut p1, mut p2) = (vec![0.0; n + 1], vec![0.0; n + 1], vec![0.0; n + 1]);
    for (t, &i) in order.iter().enumerate() {
        let w = points.weight(i);
        let x = points.coords[i] - mean;
        pw[t + 1] = pw[t] + w;
        p1[t + 1] = p1[t] + w * x;
        p2[t + 1] = p2[t] + w * x * x;
    }
    let cost = |a: usize, b: usize| {
        let w = pw[b] - pw[a];
        let s = p1[b] - p1[a];
        (p2[b] - p2[a] - s * s / w).max(0.0)
    };
    let mut best = vec![f64::INFINITY; n + 1];
    let mut last = vec![0usize; n + 1];
    best[0] = 0.0;
    for j in k..=n {
        for s in k..=(2 * k - 1).min(j) {
            if best[j - s].is_finite() {
                let v = best[j - s] + cost(j - s, j);
                if v < best[j] {
                    best[j] = v;
                    last[j] = s;
                }
            }
        }
    }
    let mut groups = Vec::new();
    let mut j = n;
    while j > 0 {
        let s = last[j];
        groups.push(order[j - s..j].to_vec());
        j -= s;
    }
    groups.reverse();
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn matches_brute_force_on_small_inputs() {
        let mut rng = Rng::new(11);
        for trial in 0..30 {
            let n = 4 + trial % 7;
            let k = 2 + trial % 2;
            let coords: Vec<f64> = (0..n).map(|_| (rng.normal() * 3.0).round()).collect();
            let w: Vec<f64> = (0..n).map(|_| 1.0).collect();
            let p = PointSet::new(1, &coords, Some(&w));
            let g = univariate_optimal(&p, k);
            assert!(crate::microagg::geometry::is_k_partition(&g, n, k, 2 * k - 1));
            let bf = crate::microagg::geometry::brute_force_sse(&p, k);
            assert!((p.partition_sse(&g) - bf).abs() < 1e-9, "n={n} k={k}");
        }
    }
}
