//! MDAV — Maximum Distance to Average Vector, the classical fixed-size heuristic.
//!
//! Why: MDAV (Domingo-Ferrer & Torra 2005; Algorithm 1 of `papers/microaggregation-genetic-
//! two-step.txt`) is the reference method every microaggregation result is compared with, the
//! seed of the two-step method and of column generation. This is the standard algorithm:
//! while at least 3k records remain, take the centroid c of the remaining records, the record
//! r farthest from c and the group of r and its k − 1 nearest records, then the record s
//! farthest from r and the group of s and its k − 1 nearest; if 2k..3k − 1 records remain,
//! form one group of k around the record farthest from their centroid and a last group with
//! the rest; fewer than 2k remaining records form the last group. So every group has k
//! records except the last one, which has k..2k − 1.
//!
//! Invariants: deterministic; ties are broken by the lower point index (r itself is always
//! in its own group). With weights, only the centroids are weighted; group sizes count
//! records. Cost O(n²·d/k): use it inside macro-groups for large files.

use super::geometry::{dist2, PointSet};

/// Index (into `points`) of the member of `remaining` farthest from `target`; ties → first.
pub(crate) fn farthest_from(points: &PointSet, remaining: &[usize], target: &[f64]) -> usize {
    let mut best = remaining[0];
    let mut best_d = f64::NEG_INFINITY;
    for &i in remaining {
        let d = dist2(points.row(i), target);
        if d > best_d {
            best_d = d;
            best = i;
        }
    }
    best
}

/// Removes from `remaining` the point `r` and its `size − 1` nearest other points and returns
/// them (r first, then by increasing distance, ties by index). `remaining` keeps its order.
pub(crate) fn take_nearest(points: &PointSet, remaining: &mut Vec<usize>, r: usize, size: usize) -> Vec<usize> {
    let target = points.row(r);
    let mut keyed: Vec<(f64, usize)> =
        remaining.iter().filter(|&&i| i != r).map(|&i| (dist2(points.row(i), target), i)).collect();
    let take = (size - 1).min(keyed.len());
    let cmp = |a: &(f64, usize), b: &(f64, usize)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
    if take < keyed.len() && take > 0 {
        keyed.select_nth_unstable_by(take - 1, cmp);
    }
    let mut chosen: Vec<(f64, usize)> = keyed[..take].to_vec();
    chosen.sort_by(cmp);
    let mut group = Vec::with_capacity(size);
    group.push(r);
    group.extend(chosen.iter().map(|p| p.1));
    let mut taken = group.clone();
    taken.sort_unstable();
    remaining.retain(|i| taken.binary_search(i).is_err());
    group
}

/// MDAV k-partition of `points` (all groups of size k, the last one k..2k − 1).
///
/// `k` must be ≥ 1; with fewer than 2k points the result is one group of everything.
pub fn mdav(points: &PointSet, k: usize) -> Vec<Vec<usize>> {
    assert!(k >= 1, "mdav needs k >= 1");
    let n = points.len();
    if n == 0 {
        return Vec::new();
    }
    let mut remaining: Vec<usize> = (0..n).collect();
    let mut groups = Vec::with_capacity(n / k + 1);
    while remaining.len() >= 3 * k {
        let c = points.centroid(&remaining);
        let r = farthest_from(points, &remaining, &c);
        groups.push(take_nearest(points, &mut remaining, r, k));
        let s = farthest_from(points, &remaining, points.row(r));
        groups.push(take_nearest(points, &mut remaining, s, k));
    }
    if remaining.len() >= 2 * k {
        let c = points.centroid(&remaining);
        let r = farthest_from(points, &remaining, &c);
        groups.push(take_nearest(points, &mut remaining, r, k));
    }
    if !remaining.is_empty() {
        groups.push(remaining);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::microagg::geometry::is_k_partition;

    #[test]
    fn two_obvious_clusters() {
        let coords = [0.0, 0.1, 0.2, 10.0, 10.1, 10.2, 10.3];
        let p = PointSet::new(1, &coords, None);
        let g = mdav(&p, 3);
        assert!(is_k_partition(&g, 7, 3, 5));
        let mut sorted: Vec<Vec<usize>> = g
            .into_iter()
            .map(|mut v| {
                v.sort();
                v
            })
            .collect();
        sorted.sort();
        assert_eq!(sorted, vec![vec![0, 1, 2], vec![3, 4, 5, 6]]);
    }

    #[test]
    fn sizes_follow_the_standard_tail_rule() {
        let coords: Vec<f64> = (0..23).map(|i| ((i * 37) % 23) as f64).collect();
        let p = PointSet::new(1, &coords, None);
        let g = mdav(&p, 3);
        assert!(is_k_partition(&g, 23, 3, 5));
        assert_eq!(g.iter().filter(|x| x.len() != 3).count(), 1);
        assert_eq!(g.last().map(|x| x.len()), Some(5));
    }
}
