//! Step 1 of the thesis (chapter 4): partition rows into clusters of size k..2k−1 with a small
//! sum of within-cluster pairwise Hamming distances — blocking, duplicate grouping and the
//! greedy construction.
//!
//! Why pairwise and not distance-to-centre: for nominal data records close to a mode can still
//! differ a lot from each other (thesis §4.1), so every cost here is the clique weight
//! `w_C = Σ_{i<l∈C} d(i,l)`.
//!
//! Invariants: [`make_blocks`] returns blocks of at least k rows covering every row once;
//! [`cluster_block`] returns clusters covering every row of its block once, each of size
//! ≥ k and ≤ 2k−1 (a block of fewer than 2k rows is one cluster); both are deterministic.

use std::collections::HashMap;

use super::{colgen, local, ClusteringMethod, NominalData, NominalError, NominalOptions};

/// Hamming distance: number of attributes on which two records differ.
#[inline]
pub fn hamming(a: &[u32], b: &[u32]) -> u32 {
    a.iter().zip(b).filter(|(x, y)| x != y).count() as u32
}

/// Sum of within-cluster pairwise Hamming distances of `clusters` (row indices into `codes`,
/// row-major with `m` codes per row).
pub fn clustering_weight(codes: &[u32], m: usize, clusters: &[Vec<usize>]) -> u64 {
    clusters.iter().map(|c| cluster_weight(codes, m, c)).sum()
}

pub(crate) fn cluster_weight(codes: &[u32], m: usize, c: &[usize]) -> u64 {
    let mut w = 0u64;
    for (a, &i) in c.iter().enumerate() {
        for &l in &c[a + 1..] {
            w += hamming(row(codes, m, i), row(codes, m, l)) as u64;
        }
    }
    w
}

#[inline]
pub(crate) fn row(codes: &[u32], m: usize, i: usize) -> &[u32] {
    &codes[i * m..(i + 1) * m]
}

/// A block: rows clustered independently of the others (the partition shipped to an executor).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Row indices of the block, in lexicographic order of the (reordered) records.
    pub rows: Vec<usize>,
}

/// Splits the rows into blocks of at most `max_units` distinct records (plus possibly a small
/// run merged in to reach k rows), each with at least k rows.
///
/// Records are sorted lexicographically with attributes in ascending order of cardinality, so
/// identical records are adjacent (exact-value blocking on the first attributes) and
/// neighbouring records share long prefixes (similarity blocking). A range too large for one
/// block is split by the value of the next attribute and the value groups are packed in order.
pub fn make_blocks(data: &NominalData, k: usize, max_units: usize) -> Vec<Block> {
    let m = data.n_attributes();
    let n = data.n_rows();
    let max_units = max_units.max(1);
    let mut card: Vec<(usize, usize)> = (0..m)
        .map(|j| {
            let mut v: Vec<u32> = (0..n).map(|i| data.row(i)[j]).collect();
            v.sort_unstable();
            v.dedup();
            (v.len(), j)
        })
        .collect();
    card.sort_unstable();
    let order: Vec<usize> = card.iter().map(|&(_, j)| j).collect();
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|&a, &b| {
        let (ra, rb) = (data.row(a), data.row(b));
        order
            .iter()
            .map(|&j| ra[j].cmp(&rb[j]))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(&b))
    });
    // Units: runs of identical records, as (start, end) into idx.
    let mut units: Vec<(usize, usize)> = Vec::new();
    let mut s = 0;
    for i in 1..=n {
        if i == n || data.row(idx[i]) != data.row(idx[s]) {
            units.push((s, i));
            s = i;
        }
    }
    let mut packs: Vec<(usize, usize)> = Vec::new(); // ranges of units
    split_units(data, &idx, &units, &order, 0, units.len(), 0, max_units, &mut packs);
    // Merge packs with fewer than k rows into a neighbour.
    let rows_of = |p: &(usize, usize)| units[p.1 - 1].1 - units[p.0].0;
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for p in packs {
        match merged.last_mut() {
            Some(last) if rows_of(last) < k || rows_of(&p) < k => last.1 = p.1,
            _ => merged.push(p),
        }
    }
    if merged.len() > 1 && rows_of(merged.last().expect("nonempty")) < k {
        let last = merged.pop().expect("nonempty");
        merged.last_mut().expect("nonempty").1 = last.1;
    }
    merged.into_iter().map(|(a, b)| Block { rows: idx[units[a].0..units[b - 1].1].to_vec() }).collect()
}

#[allow(clippy::too_many_arguments)]
fn split_units(
    data: &NominalData,
    idx: &[usize],
    units: &[(usize, usize)],
    order: &[usize],
    a: usize,
    b: usize,
    depth: usize,
    max_units: usize,
    out: &mut Vec<(usize, usize)>,
) {
    if b - a <= max_units || depth >= order.len() {
        out.push((a, b));
        return;
    }
    let j = order[depth];
    let val = |u: usize| data.row(idx[units[u].0])[j];
    let mut cur: Option<(usize, usize)> = None;
    let mut g = a;
    while g < b {
        let mut h = g + 1;
        while h < b && val(h) == val(g) {
            h += 1;
        }
        if h - g > max_units {
            if let Some(c) = cur.take() {
                out.push(c);
            }
            split_units(data, idx, units, order, g, h, depth + 1, max_units, out);
        } else {
            match cur {
                Some((ca, cb)) if cb - ca + (h - g) <= max_units => cur = Some((ca, h)),
                Some(c) => {
                    out.push(c);
                    cur = Some((g, h));
                }
                None => cur = Some((g, h)),
            }
        }
        g = h;
    }
    if let Some(c) = cur {
        out.push(c);
    }
}

/// Clustering of one block.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockClustering {
    /// Clusters of local row indices (into the block's rows).
    pub clusters: Vec<Vec<usize>>,
    /// Clustering weight.
    pub weight: u64,
    /// Final restricted-master LP value when column generation ran.
    pub lp_value: Option<f64>,
}

/// Clusters one block (`codes` row-major, `m` per row) into clusters of size k..2k−1.
///
/// Pure and deterministic: the function an executor runs on a shipped block. Perfect clusters
/// of ≥ k identical rows first, then [`greedy_clusters`], then column generation (blocks of
/// at most `colgen_max_rows` rows) and/or local search according to `opts.clustering`.
pub fn cluster_block(
    codes: &[u32],
    m: usize,
    k: usize,
    opts: &NominalOptions,
) -> Result<BlockClustering, NominalError> {
    let n = codes.len() / m.max(1);
    if k == 0 {
        return Err(NominalError::BadK { k });
    }
    if n < k {
        return Err(NominalError::TooFewRows { rows: n, k });
    }
    let mut clusters = greedy_clusters(codes, m, k);
    let mut lp_value = None;
    if opts.clustering == ClusteringMethod::ColumnGeneration && n <= opts.colgen_max_rows && n >= 2 * k {
        let out = colgen::improve_by_column_generation(codes, m, k, &clusters, opts)?;
        clusters = out.clusters;
        lp_value = Some(out.lp_value);
    }
    if opts.clustering != ClusteringMethod::Greedy {
        local::local_search(codes, m, k, &mut clusters, opts.local_search_passes);
    }
    if opts.clustering == ClusteringMethod::ColumnGeneration && lp_value.is_none() && opts.colgen_windows {
        colgen_windows(codes, m, k, &mut clusters, opts)?;
        local::local_search(codes, m, k, &mut clusters, opts.local_search_passes);
    }
    for c in &mut clusters {
        c.sort_unstable();
    }
    clusters.sort_unstable();
    let weight = clustering_weight(codes, m, &clusters);
    Ok(BlockClustering { clusters, weight, lp_value })
}

/// Column generation on windows of a large block: impure clusters (in block order, i.e. of
/// lexicographically close records) are packed into windows of at most `colgen_max_rows`
/// rows and each window is re-clustered by column generation started from its current
/// clusters (so a window never gets worse).
fn colgen_windows(
    codes: &[u32],
    m: usize,
    k: usize,
    clusters: &mut Vec<Vec<usize>>,
    opts: &NominalOptions,
) -> Result<(), NominalError> {
    let pure = |c: &Vec<usize>| c.iter().all(|&i| row(codes, m, i) == row(codes, m, c[0]));
    let mut impure: Vec<usize> = (0..clusters.len()).filter(|&c| !pure(&clusters[c])).collect();
    impure.sort_by_key(|&c| clusters[c].iter().min().copied());
    let mut windows: Vec<Vec<usize>> = Vec::new();
    let mut cur: Vec<usize> = Vec::new();
    let mut rows = 0;
    for c in impure {
        if rows + clusters[c].len() > opts.colgen_max_rows && !cur.is_empty() {
            windows.push(std::mem::take(&mut cur));
            rows = 0;
        }
        rows += clusters[c].len();
        cur.push(c);
    }
    if !cur.is_empty() {
        windows.push(cur);
    }
    let mut wopts = opts.clone();
    wopts.colgen_max_iterations = opts.colgen_window_iterations;
    for w in windows {
        if w.len() < 2 {
            continue;
        }
        let members: Vec<usize> = w.iter().flat_map(|&c| clusters[c].iter().copied()).collect();
        let mut sub = Vec::with_capacity(members.len() * m);
        for &r in &members {
            sub.extend_from_slice(row(codes, m, r));
        }
        let mut pos = 0;
        let initial: Vec<Vec<usize>> = w
            .iter()
            .map(|&c| {
                let v: Vec<usize> = (pos..pos + clusters[c].len()).collect();
                pos += clusters[c].len();
                v
            })
            .collect();
        let out = colgen::improve_by_column_generation(&sub, m, k, &initial, &wopts)?;
        for &c in &w {
            clusters[c].clear();
        }
        clusters.extend(out.clusters.into_iter().map(|c| c.into_iter().map(|i| members[i]).collect()));
    }
    clusters.retain(|c| !c.is_empty());
    Ok(())
}

/// Greedy construction: duplicate runs of ≥ k identical rows become perfect clusters; the
/// other rows get an MDAV-like loop on Hamming distance (seed = row farthest from the
/// attribute-wise mode of the unassigned rows, grown by the row adding least pairwise weight,
/// extended by free identical rows), where a seed may instead join the perfect cluster it is
/// closest to when that is cheaper than its share in the new cluster.
pub fn greedy_clusters(codes: &[u32], m: usize, k: usize) -> Vec<Vec<usize>> {
    let n = codes.len() / m;
    let cap = 2 * k - 1;
    let mut by_rec: HashMap<&[u32], Vec<usize>> = HashMap::new();
    for i in 0..n {
        by_rec.entry(row(codes, m, i)).or_default().push(i);
    }
    let mut groups: Vec<Vec<usize>> = by_rec.into_values().collect();
    groups.sort_unstable_by_key(|g| g[0]);
    let mut clusters: Vec<Vec<usize>> = Vec::new();
    // Perfect clusters with room, one list per duplicate group (identical targets, so only
    // the first with room is ever scanned: a huge group does not slow the scan down).
    let mut absorbers: Vec<Vec<usize>> = Vec::new();
    let mut unassigned: Vec<usize> = Vec::new();
    for g in groups {
        if g.len() >= k {
            let q = g.len() / k;
            let mut start = 0;
            let mut room = Vec::new();
            for c in 0..q {
                let size = g.len() / q + usize::from(c < g.len() % q);
                clusters.push(g[start..start + size].to_vec());
                if size < cap {
                    room.push(clusters.len() - 1);
                }
                start += size;
            }
            room.reverse(); // smallest (last) clusters first
            if !room.is_empty() {
                absorbers.push(room);
            }
        } else {
            unassigned.extend(g);
        }
    }
    unassigned.sort_unstable();
    let d = |a: usize, b: usize| hamming(row(codes, m, a), row(codes, m, b));
    let mut acc = vec![0u32; n];
    let mut in_c = vec![false; n];
    while unassigned.len() >= k {
        // Attribute-wise mode of the unassigned rows.
        let mode: Vec<u32> = (0..m)
            .map(|j| {
                let mut cnt: HashMap<u32, usize> = HashMap::new();
                for &i in &unassigned {
                    *cnt.entry(codes[i * m + j]).or_default() += 1;
                }
                let mut best = (0usize, u32::MAX);
                for (v, c) in cnt {
                    if c > best.0 || (c == best.0 && v < best.1) {
                        best = (c, v);
                    }
                }
                best.1
            })
            .collect();
        let seed = *unassigned
            .iter()
            .max_by_key(|&&i| (hamming(row(codes, m, i), &mode), std::cmp::Reverse(i)))
            .expect("nonempty");
        for &j in &unassigned {
            acc[j] = d(seed, j);
        }
        let mut c = vec![seed];
        in_c[seed] = true;
        while c.len() < k {
            let next = *unassigned.iter().filter(|&&j| !in_c[j]).min_by_key(|&&j| (acc[j], j)).expect("enough rows");
            c.push(next);
            in_c[next] = true;
            for &j in &unassigned {
                acc[j] += d(next, j);
            }
        }
        while c.len() < cap {
            match unassigned.iter().find(|&&j| !in_c[j] && acc[j] == 0) {
                Some(&j) => {
                    c.push(j);
                    in_c[j] = true;
                }
                None => break,
            }
        }
        // Cheaper to join a perfect cluster?
        let share = acc[seed];
        let best_abs = absorbers
            .iter()
            .filter_map(|list| list.iter().copied().find(|&a| clusters[a].len() < cap))
            .map(|a| (clusters[a].iter().map(|&x| d(seed, x)).sum::<u32>(), a))
            .min();
        for &j in &c {
            in_c[j] = false;
        }
        match best_abs {
            Some((cost, a)) if cost < share => {
                clusters[a].push(seed);
                unassigned.retain(|&j| j != seed);
            }
            _ => {
                unassigned.retain(|j| !c.contains(j));
                clusters.push(c);
            }
        }
    }
    for r in unassigned {
        place_leftover(codes, m, k, &mut clusters, r);
    }
    split_oversized(codes, m, k, &mut clusters);
    clusters
}

/// Adds row `r` to the cluster where it adds the least weight, preferring clusters with room
/// (size < 2k−1); creates the first cluster if there is none.
pub(crate) fn place_leftover(codes: &[u32], m: usize, k: usize, clusters: &mut Vec<Vec<usize>>, r: usize) {
    let cap = 2 * k - 1;
    let best = clusters
        .iter()
        .enumerate()
        .map(|(a, c)| {
            let cost: u32 = c.iter().map(|&x| hamming(row(codes, m, r), row(codes, m, x))).sum();
            (c.len() >= cap, cost, a)
        })
        .min();
    match best {
        Some((_, _, a)) => clusters[a].push(r),
        None => clusters.push(vec![r]),
    }
}

/// Splits clusters of size ≥ 2k: the member with the largest distance sum seeds a cluster of k
/// grown greedily; the rest (≥ k) stays.
pub(crate) fn split_oversized(codes: &[u32], m: usize, k: usize, clusters: &mut Vec<Vec<usize>>) {
    let d = |a: usize, b: usize| hamming(row(codes, m, a), row(codes, m, b));
    let mut i = 0;
    while i < clusters.len() {
        if clusters[i].len() < 2 * k {
            i += 1;
            continue;
        }
        let c = std::mem::take(&mut clusters[i]);
        let seed = *c
            .iter()
            .max_by_key(|&&x| (c.iter().map(|&y| d(x, y)).sum::<u32>(), std::cmp::Reverse(x)))
            .expect("nonempty");
        let mut part = vec![seed];
        let mut rest: Vec<usize> = c.into_iter().filter(|&x| x != seed).collect();
        while part.len() < k {
            let (pos, _) = rest
                .iter()
                .enumerate()
                .min_by_key(|&(_, &y)| (part.iter().map(|&x| d(x, y)).sum::<u32>(), y))
                .expect("enough");
            part.push(rest.remove(pos));
        }
        clusters[i] = rest;
        clusters.push(part);
    }
}

/// Optimal clustering weight by exhaustive search over all partitions into clusters of size
/// k..2k−1 (tests only, n ≤ ~12).
#[cfg(test)]
pub(crate) fn brute_force_clustering(codes: &[u32], m: usize, k: usize) -> u64 {
    fn rec(codes: &[u32], m: usize, k: usize, free: &[usize]) -> u64 {
        if free.is_empty() {
            return 0;
        }
        if free.len() < k {
            return u64::MAX;
        }
        let first = free[0];
        let rest = &free[1..];
        let mut best = u64::MAX;
        for mask in 0u32..(1u32 << rest.len()) {
            let sz = mask.count_ones() as usize + 1;
            if sz < k || sz > 2 * k - 1 {
                continue;
            }
            let mut c = vec![first];
            let mut others = Vec::new();
            for (b, &x) in rest.iter().enumerate() {
                if mask >> b & 1 == 1 {
                    c.push(x);
                } else {
                    others.push(x);
                }
            }
            let sub = rec(codes, m, k, &others);
            if sub != u64::MAX {
                best = best.min(sub + cluster_weight(codes, m, &c));
            }
        }
        best
    }
    let free: Vec<usize> = (0..codes.len() / m).collect();
    rec(codes, m, k, &free)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(rows: &[&[u32]]) -> NominalData {
        NominalData::from_rows(&rows.iter().map(|r| r.to_vec()).collect::<Vec<_>>()).unwrap()
    }

    fn check_sizes(clusters: &[Vec<usize>], n: usize, k: usize) {
        let mut seen = vec![false; n];
        for c in clusters {
            assert!(c.len() >= k && c.len() < 2 * k, "size {} for k {k}", c.len());
            for &i in c {
                assert!(!seen[i]);
                seen[i] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn duplicates_form_perfect_clusters() {
        let d = data(&[&[1, 1], &[1, 1], &[1, 1], &[2, 2], &[2, 2], &[2, 2], &[2, 2], &[2, 2], &[2, 2], &[2, 2]]);
        let cl = greedy_clusters(d.codes(), 2, 3);
        check_sizes(&cl, 10, 3);
        assert_eq!(clustering_weight(d.codes(), 2, &cl), 0);
    }

    #[test]
    fn problem_row_joins_nearest_perfect_cluster() {
        // (1,1)x3 perfect, (5,5)x3 perfect, (1,2) unique: joins the (1,1) cluster at cost 3.
        let d = data(&[&[1, 1], &[1, 1], &[1, 1], &[5, 5], &[5, 5], &[5, 5], &[1, 2]]);
        let cl = greedy_clusters(d.codes(), 2, 3);
        check_sizes(&cl, 7, 3);
        assert_eq!(clustering_weight(d.codes(), 2, &cl), 3);
    }

    #[test]
    fn oversized_clusters_are_split() {
        let codes: Vec<u32> = (0..7u32).flat_map(|i| [i, 0]).collect();
        let mut cl = vec![(0..7).collect::<Vec<_>>()];
        split_oversized(&codes, 2, 3, &mut cl);
        check_sizes(&cl, 7, 3);
    }

    #[test]
    fn blocks_cover_rows_with_at_least_k() {
        let mut rows = Vec::new();
        for i in 0..500u32 {
            rows.push(vec![i % 7, i % 11, i % 13]);
        }
        let d = NominalData::from_rows(&rows).unwrap();
        let blocks = make_blocks(&d, 3, 40);
        assert!(blocks.len() > 5);
        let mut seen = [false; 500];
        for b in &blocks {
            assert!(b.rows.len() >= 3);
            for &r in &b.rows {
                assert!(!seen[r]);
                seen[r] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
        for b in &blocks {
            let mut codes = Vec::new();
            for &r in &b.rows {
                codes.extend_from_slice(d.row(r));
            }
            let bc = cluster_block(&codes, 3, 3, &NominalOptions::default()).unwrap();
            check_sizes(&bc.clusters, b.rows.len(), 3);
        }
    }

    #[test]
    fn greedy_sizes_on_random_data() {
        let mut rng = crate::rng::Rng::new(5);
        for k in 2..6 {
            let n = 40 + rng.index(30);
            let codes: Vec<u32> = (0..n * 4).map(|_| rng.below(3) as u32).collect();
            let cl = greedy_clusters(&codes, 4, k);
            check_sizes(&cl, n, k);
        }
    }
}
