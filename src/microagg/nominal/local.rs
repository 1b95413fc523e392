//! Local search for step 1: moves and swaps of rows between clusters that lower the
//! clustering weight (sum of within-cluster pairwise Hamming distances), for blocks too large
//! for column generation and as a polish after it.
//!
//! Why: the greedy construction (thesis-style, one cluster at a time) leaves late clusters
//! with poor fits; single moves and pairwise swaps repair most of that at O(n·clusters) per pass.
//!
//! Invariants: cluster sizes stay in [k, 2k−1] for clusters that started in that range (a
//! move needs the source > k and the target < 2k−1; swaps keep sizes); the weight never
//! increases; the scan order is fixed, so results are deterministic. Rows of pure clusters
//! (all members identical) never move (moving them cannot help) but such clusters with room
//! can receive rows.

use super::cluster::{hamming, row};

/// Improves `clusters` in place by first-improvement moves and swaps; returns the weight
/// reduction. Stops after `max_passes` passes or when a pass changes nothing.
pub fn local_search(codes: &[u32], m: usize, k: usize, clusters: &mut [Vec<usize>], max_passes: usize) -> u64 {
    let cap = 2 * k - 1;
    let pure = |c: &Vec<usize>| c.iter().all(|&i| row(codes, m, i) == row(codes, m, c[0]));
    // Universe: impure clusters (movers) and pure clusters with room (targets; one per
    // distinct record, as identical targets are interchangeable).
    let mut seen_pure: std::collections::HashSet<&[u32]> = std::collections::HashSet::new();
    let uni: Vec<usize> = (0..clusters.len())
        .filter(|&c| {
            !pure(&clusters[c]) || (clusters[c].len() < cap && seen_pure.insert(row(codes, m, clusters[c][0])))
        })
        .collect();
    let movers: Vec<usize> =
        uni.iter().filter(|&&c| !pure(&clusters[c])).flat_map(|&c| clusters[c].iter().copied()).collect();
    if movers.is_empty() || uni.len() < 2 {
        return 0;
    }
    let nc = uni.len();
    let nm = movers.len();
    let mut where_: Vec<usize> = vec![0; nm]; // position in uni
    let mut members: Vec<Vec<usize>> = uni.iter().map(|&c| clusters[c].clone()).collect();
    let mut mover_of = std::collections::HashMap::new();
    for (p, &r) in movers.iter().enumerate() {
        mover_of.insert(r, p);
    }
    for (u, mem) in members.iter().enumerate() {
        for r in mem {
            if let Some(&p) = mover_of.get(r) {
                where_[p] = u;
            }
        }
    }
    let d = |a: usize, b: usize| hamming(row(codes, m, a), row(codes, m, b)) as i64;
    // s[p * nc + u] = Σ_{y ∈ cluster u} d(mover p, y).
    let mut s = vec![0i64; nm * nc];
    for (p, &x) in movers.iter().enumerate() {
        for (u, mem) in members.iter().enumerate() {
            s[p * nc + u] = mem.iter().map(|&y| d(x, y)).sum();
        }
    }
    let mut gained: i64 = 0;
    let update = |s: &mut Vec<i64>, u: usize, r: usize, sign: i64| {
        for (p, &x) in movers.iter().enumerate() {
            s[p * nc + u] += sign * d(x, r);
        }
    };
    for _ in 0..max_passes {
        let mut changed = false;
        // Moves.
        for p in 0..nm {
            let a = where_[p];
            if members[a].len() <= k {
                continue;
            }
            let x = movers[p];
            let mut best = (0i64, usize::MAX);
            for b in 0..nc {
                if b == a || members[b].len() >= cap {
                    continue;
                }
                let g = s[p * nc + a] - s[p * nc + b];
                if g > best.0 {
                    best = (g, b);
                }
            }
            if best.1 != usize::MAX {
                let b = best.1;
                members[a].retain(|&y| y != x);
                members[b].push(x);
                update(&mut s, a, x, -1);
                update(&mut s, b, x, 1);
                where_[p] = b;
                gained += best.0;
                changed = true;
            }
        }
        // Swaps between movers.
        for p in 0..nm {
            let x = movers[p];
            let a = where_[p];
            let mut best = (0i64, usize::MAX);
            for q in 0..nm {
                let b = where_[q];
                if b == a {
                    continue;
                }
                let y = movers[q];
                let g = s[p * nc + a] + s[q * nc + b] - s[q * nc + a] - s[p * nc + b] + 2 * d(x, y);
                if g > best.0 {
                    best = (g, q);
                }
            }
            if best.1 != usize::MAX {
                let q = best.1;
                let y = movers[q];
                let b = where_[q];
                members[a].retain(|&z| z != x);
                members[b].retain(|&z| z != y);
                members[a].push(y);
                members[b].push(x);
                update(&mut s, a, x, -1);
                update(&mut s, a, y, 1);
                update(&mut s, b, y, -1);
                update(&mut s, b, x, 1);
                where_[p] = b;
                where_[q] = a;
                gained += best.0;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for (u, &c) in uni.iter().enumerate() {
        clusters[c] = std::mem::take(&mut members[u]);
    }
    gained as u64
}

#[cfg(test)]
mod tests {
    use super::super::cluster::clustering_weight;
    use super::*;

    #[test]
    fn swap_fixes_crossed_clusters() {
        // Two natural groups {a,a,b} style, deliberately crossed.
        let codes: Vec<u32> = vec![0, 0, 0, 0, 0, 1, 9, 9, 9, 9, 9, 8];
        let mut cl = vec![vec![0, 1, 5], vec![3, 4, 2]];
        let before = clustering_weight(&codes, 2, &cl);
        let g = local_search(&codes, 2, 3, &mut cl, 10);
        let after = clustering_weight(&codes, 2, &cl);
        assert_eq!(before - after, g);
        assert_eq!(after, 4);
    }

    #[test]
    fn never_worse_and_sizes_kept() {
        let mut rng = crate::rng::Rng::new(11);
        for k in 2..5 {
            let n = 60;
            let codes: Vec<u32> = (0..n * 5).map(|_| rng.below(3) as u32).collect();
            let mut cl = super::super::cluster::greedy_clusters(&codes, 5, k);
            let before = clustering_weight(&codes, 5, &cl);
            let g = local_search(&codes, 5, k, &mut cl, 50);
            let after = clustering_weight(&codes, 5, &cl);
            assert_eq!(before - after, g);
            for c in &cl {
                assert!(c.len() >= k && c.len() < 2 * k);
            }
            assert_eq!(cl.iter().map(|c| c.len()).sum::<usize>(), n);
        }
    }
}
