//! Points, centroids and the SSE objective shared by every numeric microaggregation method.
//!
//! Why: all methods (MDAV, V-MDAV, the genetic algorithm, column generation, local search)
//! measure the same thing — the within-group sum of squared Euclidean distances to the
//! (weighted) group centroid, SSE (Domingo-Ferrer & Mateo-Sanz 2002; eq. (2) of the
//! column-generation paper). Keeping it in one place keeps the figures comparable.
//!
//! Invariants: a [`PointSet`] is a dense row-major matrix of finite values; weights, when
//! present, are finite and positive (checked by the caller in `microagg::validate`). A
//! *partition* is a list of groups of point indices covering every point exactly once.

/// A dense row-major set of points with optional positive weights.
#[derive(Debug, Clone, Copy)]
pub struct PointSet<'a> {
    /// Number of coordinates per point.
    pub dim: usize,
    /// Row-major coordinates, `len() * dim` values.
    pub coords: &'a [f64],
    /// Optional weight per point (`None`: every weight is 1).
    pub weights: Option<&'a [f64]>,
}

impl<'a> PointSet<'a> {
    /// A point set over `coords` (row-major, `dim` columns), unweighted when `weights` is `None`.
    pub fn new(dim: usize, coords: &'a [f64], weights: Option<&'a [f64]>) -> Self {
        debug_assert!(dim > 0 && coords.len().is_multiple_of(dim));
        Self { dim, coords, weights }
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.coords.len() / self.dim
    }

    /// Whether the set has no points.
    pub fn is_empty(&self) -> bool {
        self.coords.is_empty()
    }

    /// Coordinates of point `i`.
    #[inline]
    pub fn row(&self, i: usize) -> &'a [f64] {
        &self.coords[i * self.dim..(i + 1) * self.dim]
    }

    /// Weight of point `i` (1 when unweighted).
    #[inline]
    pub fn weight(&self, i: usize) -> f64 {
        self.weights.map_or(1.0, |w| w[i])
    }

    /// Squared Euclidean distance between points `a` and `b`.
    #[inline]
    pub fn dist2(&self, a: usize, b: usize) -> f64 {
        dist2(self.row(a), self.row(b))
    }

    /// Weighted centroid of the points in `members` (must be non-empty).
    pub fn centroid(&self, members: &[usize]) -> Vec<f64> {
        let mut c = vec![0.0; self.dim];
        let mut total = 0.0;
        for &i in members {
            let w = self.weight(i);
            total += w;
            for (cj, xj) in c.iter_mut().zip(self.row(i)) {
                *cj += w * xj;
            }
        }
        for cj in &mut c {
            *cj /= total;
        }
        c
    }

    /// Weighted SSE of one group: Σ w_i ||x_i − c||² with c the weighted centroid.
    pub fn group_sse(&self, members: &[usize]) -> f64 {
        if members.len() < 2 {
            return 0.0;
        }
        let c = self.centroid(members);
        members.iter().map(|&i| self.weight(i) * dist2(self.row(i), &c)).sum()
    }

    /// SSE of a partition: the sum of [`PointSet::group_sse`] over its groups.
    pub fn partition_sse(&self, groups: &[Vec<usize>]) -> f64 {
        groups.iter().map(|g| self.group_sse(g)).sum()
    }

    /// Copies the points `members` (in that order) into a new dense matrix and weight vector.
    pub fn gather(&self, members: &[usize]) -> (Vec<f64>, Option<Vec<f64>>) {
        let mut coords = Vec::with_capacity(members.len() * self.dim);
        for &i in members {
            coords.extend_from_slice(self.row(i));
        }
        let weights = self.weights.map(|w| members.iter().map(|&i| w[i]).collect());
        (coords, weights)
    }
}

/// Squared Euclidean distance between two equally long vectors.
#[inline]
pub fn dist2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Group label per point (`0..groups.len()`) from a partition over `n` points.
pub fn labels_from_groups(groups: &[Vec<usize>], n: usize) -> Vec<usize> {
    let mut labels = vec![usize::MAX; n];
    for (g, members) in groups.iter().enumerate() {
        for &i in members {
            labels[i] = g;
        }
    }
    labels
}

/// Partition from labels: groups listed by increasing label, empty labels dropped, members
/// in increasing index order.
pub fn groups_from_labels(labels: &[usize]) -> Vec<Vec<usize>> {
    let n_labels = labels.iter().copied().max().map_or(0, |m| m + 1);
    let mut groups = vec![Vec::new(); n_labels];
    for (i, &l) in labels.iter().enumerate() {
        groups[l].push(i);
    }
    groups.retain(|g| !g.is_empty());
    groups
}

/// Whether `groups` is a partition of `0..n` with every group size in `k..=max_size`.
pub fn is_k_partition(groups: &[Vec<usize>], n: usize, k: usize, max_size: usize) -> bool {
    let mut seen = vec![false; n];
    for g in groups {
        if g.len() < k || g.len() > max_size {
            return false;
        }
        for &i in g {
            if i >= n || seen[i] {
                return false;
            }
            seen[i] = true;
        }
    }
    seen.iter().all(|&s| s)
}

/// Running weighted sums of a group, so SSE changes of moving single points are O(dim).
///
/// Uses SSE(G ∪ {x}) = SSE(G) + W·w/(W + w)·||x − c_G||² (and its inverse for removal), the
/// update behind the local search in [`crate::microagg::improve`].
#[derive(Debug, Clone, PartialEq)]
pub struct GroupStats {
    /// Σ w_i x_i.
    pub sum: Vec<f64>,
    /// Σ w_i.
    pub weight: f64,
    /// Number of members.
    pub count: usize,
    /// Current SSE of the group.
    pub sse: f64,
}

impl GroupStats {
    /// Statistics of the group `members` of `points`.
    pub fn of(points: &PointSet, members: &[usize]) -> Self {
        let mut s = Self { sum: vec![0.0; points.dim], weight: 0.0, count: 0, sse: 0.0 };
        for &i in members {
            s.add(points, i);
        }
        s.sse = points.group_sse(members);
        s
    }

    /// Current centroid.
    pub fn centroid(&self) -> Vec<f64> {
        self.sum.iter().map(|v| v / self.weight).collect()
    }

    /// SSE increase if point `i` were added.
    pub fn add_cost(&self, points: &PointSet, i: usize) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let w = points.weight(i);
        let d: f64 = points
            .row(i)
            .iter()
            .zip(&self.sum)
            .map(|(x, s)| {
                let c = s / self.weight;
                (x - c) * (x - c)
            })
            .sum();
        self.weight * w / (self.weight + w) * d
    }

    /// SSE decrease if member `i` were removed.
    pub fn remove_gain(&self, points: &PointSet, i: usize) -> f64 {
        if self.count <= 1 {
            return self.sse;
        }
        let w = points.weight(i);
        let rest = self.weight - w;
        let d: f64 = points
            .row(i)
            .iter()
            .zip(&self.sum)
            .map(|(x, s)| {
                let c = (s - w * x) / rest;
                (x - c) * (x - c)
            })
            .sum();
        rest * w / (rest + w) * d
    }

    /// Adds point `i` (updating the SSE).
    pub fn add(&mut self, points: &PointSet, i: usize) {
        self.sse += self.add_cost(points, i);
        let w = points.weight(i);
        for (s, x) in self.sum.iter_mut().zip(points.row(i)) {
            *s += w * x;
        }
        self.weight += w;
        self.count += 1;
    }

    /// Removes member `i` (updating the SSE).
    pub fn remove(&mut self, points: &PointSet, i: usize) {
        self.sse = (self.sse - self.remove_gain(points, i)).max(0.0);
        let w = points.weight(i);
        for (s, x) in self.sum.iter_mut().zip(points.row(i)) {
            *s -= w * x;
        }
        self.weight -= w;
        self.count -= 1;
    }
}

/// Minimum SSE over all partitions of the points into groups of size ≥ k, by exhaustive search
/// (a test oracle for the exact and bounding methods). Groups are limited to 2k − 1 records:
/// splitting a larger group into two of size ≥ k never increases the SSE.
#[cfg(test)]
pub(crate) fn brute_force_sse(p: &PointSet, k: usize) -> f64 {
    fn rec(p: &PointSet, k: usize, left: Vec<usize>, acc: f64, best: &mut f64) {
        if left.is_empty() {
            *best = best.min(acc);
            return;
        }
        let (first, rest) = (left[0], &left[1..]);
        for mask in 0u32..(1 << rest.len()) {
            let size = mask.count_ones() as usize + 1;
            let others = rest.len() + 1 - size;
            if size < k || size > 2 * k - 1 || (others > 0 && others < k) {
                continue;
            }
            let mut g = vec![first];
            let mut o = Vec::new();
            for (b, &i) in rest.iter().enumerate() {
                if (mask >> b) & 1 == 1 {
                    g.push(i);
                } else {
                    o.push(i);
                }
            }
            let c = p.group_sse(&g);
            if acc + c < *best {
                rec(p, k, o, acc + c, best);
            }
        }
    }
    let mut best = f64::INFINITY;
    rec(p, k, (0..p.len()).collect(), 0.0, &mut best);
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_and_running_stats_agree() {
        let coords = [0.0, 0.0, 2.0, 0.0, 0.0, 2.0, 5.0, 5.0];
        let w = [1.0, 2.0, 1.0, 3.0];
        let p = PointSet::new(2, &coords, Some(&w));
        let c = p.centroid(&[0, 1, 2]);
        assert!((c[0] - 1.0).abs() < 1e-12 && (c[1] - 0.5).abs() < 1e-12);
        // Σ w ||x − c||²: 1·(1 + .25) + 2·(1 + .25) + 1·(1 + 2.25) = 7
        assert!((p.group_sse(&[0, 1, 2]) - 7.0).abs() < 1e-12);
        let mut s = GroupStats::of(&p, &[0, 1]);
        s.add(&p, 2);
        assert!((s.sse - 7.0).abs() < 1e-12);
        s.add(&p, 3);
        assert!((s.sse - p.group_sse(&[0, 1, 2, 3])).abs() < 1e-9);
        s.remove(&p, 1);
        assert!((s.sse - p.group_sse(&[0, 2, 3])).abs() < 1e-9);
    }

    #[test]
    fn labels_round_trip() {
        let groups = vec![vec![0, 2], vec![1, 3, 4]];
        let l = labels_from_groups(&groups, 5);
        assert_eq!(l, vec![0, 1, 0, 1, 1]);
        assert_eq!(groups_from_labels(&l), groups);
        assert!(is_k_partition(&groups, 5, 2, 3));
        assert!(!is_k_partition(&groups, 5, 3, 5));
    }
}
