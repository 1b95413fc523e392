//! Local improvement across neighbouring groups: single-record moves and pairwise swaps.
//!
//! Why: the two-step method optimises each optimisation group in isolation, so records near a
//! group boundary may sit better in a group of a neighbouring optimisation group. A classic
//! descent repairs that: move a record to a nearby group, or swap two records between nearby
//! groups, whenever the SSE drops and every group keeps a size in k..2k − 1 (a move needs the
//! source above k and the target below 2k − 1). SSE changes are exact O(d) updates
//! ([`GroupStats`]), so the search is cheap enough for census-scale files.
//!
//! Invariants: SSE never increases; sizes never leave k..2k − 1 (groups already outside that
//! range are only ever shrunk towards it, never grown beyond 2k − 1); deterministic
//! (first-improvement in a fixed order; only pairs touched in the previous pass are revisited).

use super::geometry::{dist2, GroupStats, PointSet};

/// Counters of one local search.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImproveStats {
    /// Records moved to another group.
    pub moves: usize,
    /// Pairs of records swapped.
    pub swaps: usize,
    /// Passes over all group pairs.
    pub passes: usize,
}

/// Neighbour lists are recomputed every this many passes (centroids move little).
const REFRESH_NEIGHBOURS: usize = 5;

/// The `neighbours` nearest other groups of each group, by centroid distance (ties by index).
fn nearest_groups(gs: &[GroupStats], neighbours: usize) -> Vec<Vec<usize>> {
    let centroids: Vec<Vec<f64>> = gs.iter().map(|s| s.centroid()).collect();
    let n = gs.len();
    let cmp = |p: &(f64, usize), q: &(f64, usize)| p.0.total_cmp(&q.0).then(p.1.cmp(&q.1));
    (0..n)
        .map(|a| {
            let mut near: Vec<(f64, usize)> =
                (0..n).filter(|&b| b != a).map(|b| (dist2(&centroids[a], &centroids[b]), b)).collect();
            let take = neighbours.min(near.len());
            if take == 0 {
                return Vec::new();
            }
            if take < near.len() {
                near.select_nth_unstable_by(take - 1, cmp);
            }
            near.truncate(take);
            near.sort_by(cmp);
            near.into_iter().map(|p| p.1).collect()
        })
        .collect()
}

/// SSE change of group `s` when member `x` is replaced by outsider `y`.
fn replace_delta(points: &PointSet, s: &GroupStats, x: usize, y: usize) -> f64 {
    let (wx, wy) = (points.weight(x), points.weight(y));
    let rest = s.weight - wx;
    let gain = s.remove_gain(points, x);
    if rest <= 0.0 {
        return -gain;
    }
    let (rx, ry) = (points.row(x), points.row(y));
    let mut d = 0.0;
    for j in 0..points.dim {
        let c = (s.sum[j] - wx * rx[j]) / rest;
        d += (ry[j] - c) * (ry[j] - c);
    }
    rest * wy / (rest + wy) * d - gain
}

/// Improves `groups` in place by moves and swaps between each group and its `neighbours`
/// nearest groups (by centroid), for at most `max_passes` passes.
pub fn local_search(
    points: &PointSet,
    groups: &mut [Vec<usize>],
    k: usize,
    max_passes: usize,
    neighbours: usize,
) -> ImproveStats {
    let n_groups = groups.len();
    let mut stats = ImproveStats::default();
    if n_groups < 2 || neighbours == 0 {
        return stats;
    }
    let max_size = 2 * k - 1;
    let eps = 1e-12;
    let mut gs: Vec<GroupStats> = groups.iter().map(|g| GroupStats::of(points, g)).collect();
    let mut dirty = vec![true; n_groups];
    let mut near: Vec<Vec<usize>> = Vec::new();
    for pass in 0..max_passes {
        stats.passes += 1;
        if pass % REFRESH_NEIGHBOURS == 0 {
            near = nearest_groups(&gs, neighbours);
        }
        let mut changed = vec![false; n_groups];
        let mut any = false;
        for a in 0..n_groups {
            for &b in &near[a] {
                if !(dirty[a] || dirty[b]) {
                    continue;
                }
                // moves a → b
                let mut p = 0;
                while p < groups[a].len() {
                    let x = groups[a][p];
                    if groups[a].len() > k && groups[b].len() < max_size {
                        let delta = gs[b].add_cost(points, x) - gs[a].remove_gain(points, x);
                        if delta < -eps {
                            groups[a].swap_remove(p);
                            groups[b].push(x);
                            gs[a].remove(points, x);
                            gs[b].add(points, x);
                            stats.moves += 1;
                            changed[a] = true;
                            changed[b] = true;
                            any = true;
                            continue;
                        }
                    }
                    p += 1;
                }
                // swaps a ↔ b
                for p in 0..groups[a].len() {
                    for q in 0..groups[b].len() {
                        let (x, y) = (groups[a][p], groups[b][q]);
                        let delta = replace_delta(points, &gs[a], x, y) + replace_delta(points, &gs[b], y, x);
                        if delta < -eps {
                            groups[a][p] = y;
                            groups[b][q] = x;
                            gs[a].remove(points, x);
                            gs[a].add(points, y);
                            gs[b].remove(points, y);
                            gs[b].add(points, x);
                            stats.swaps += 1;
                            changed[a] = true;
                            changed[b] = true;
                            any = true;
                        }
                    }
                }
            }
        }
        if !any {
            break;
        }
        dirty = changed;
    }
    for g in groups.iter_mut() {
        g.sort_unstable();
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::microagg::geometry::is_k_partition;
    use crate::microagg::mdav::mdav;
    use crate::rng::Rng;

    #[test]
    fn never_worse_and_sizes_kept() {
        let mut rng = Rng::new(8);
        let coords: Vec<f64> = (0..300).map(|_| rng.normal()).collect();
        let p = PointSet::new(3, &coords, None);
        let mut g = mdav(&p, 3);
        let before = p.partition_sse(&g);
        let st = local_search(&p, &mut g, 3, 20, 6);
        let after = p.partition_sse(&g);
        assert!(after <= before + 1e-9 && st.moves + st.swaps > 0, "{before} -> {after}");
        assert!(is_k_partition(&g, 100, 3, 5));
    }
}
