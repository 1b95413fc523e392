//! The roll-up of contributions over every combination of hierarchy levels (the cell lattice).
//!
//! A cell is one node per explanatory variable. A contribution in leaf cell `(l₀, …, lₖ₋₁)`
//! counts in every cell whose node of each dimension is `lᵢ` or one of its ancestors: the
//! product of the ancestor chains. Per cell we need the number of distinct contributors and
//! the largest per-contributor totals, so the same contributor must be counted once per cell
//! even when several of its leaf cells roll up into it. That is what makes per-contributor
//! tables expensive in SQL: `GROUPING SETS ((…, contributor))` materialises every
//! (cell, contributor) pair of every grouping set before counting them.
//!
//! Here the cells are produced in **shards**: a shard fixes the nodes of the leading `s`
//! variables exactly (`s` is the smallest number that leaves at most 4 Mi possible cells per
//! shard). Its inputs are the pairs whose leaves lie in the subtrees of those nodes (contiguous
//! ranges, because nodes are numbered in pre-order), with those coordinates replaced by the
//! shard's nodes. Within a shard each contributor's pairs are rolled up the remaining
//! variables one at a time, merging duplicates after each variable, so a contributor reaches
//! each of its cells exactly once and is then folded into the shard's cell map (`freq + 1`,
//! sums, top-N insert). Consequences:
//! - every (cell, contributor) pair is computed exactly once and never stored globally;
//! - memory is bounded by the largest shard's cells, not by the table;
//! - shards are independent (run in parallel, a window at a time) and come out in key order,
//!   because the leading variables occupy the highest bits of the packed cell key:
//!   concatenating sorted shards in prefix order sorts the whole table, so cells can be
//!   streamed to the writers;
//! - results are exact (integer sums; top-N is a multiset) and so do not depend on thread
//!   count or arrival order.
//!
//! Tables without a contributor variable count records: their leaf cells arrive already
//! summarised (count, sums, top-N of the records), and the roll-up merges those summaries.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::hierarchy::Hierarchy;

/// No parent (the total).
const ROOT: u32 = u32::MAX;

/// A multiply-xorshift hasher for packed cell keys (already well spread in the low bits).
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        let h = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^ (h >> 29)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x100_0000_01B3);
        }
    }
    fn write_u128(&mut self, k: u128) {
        self.0 = (k as u64) ^ ((k >> 64) as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    }
}

type KeyMap<V> = HashMap<u128, V, BuildHasherDefault<KeyHasher>>;

/// One explanatory variable: its tree in pre-order and its bits in the packed key.
#[derive(Debug, Clone)]
struct Dim {
    /// Parent of each node ([`ROOT`] for the total).
    parent: Vec<u32>,
    /// Subtree of node `n` = nodes `n .. end[n]` (pre-order).
    end: Vec<u32>,
    /// Longest ancestor chain (deepest node's depth + 1).
    chain: u32,
    shift: u32,
    mask: u128,
}

/// The cell lattice of a table: how node coordinates pack into one sortable integer key, and
/// how each node rolls up.
#[derive(Debug, Clone)]
pub struct Lattice {
    dims: Vec<Dim>,
    shard_cells: u128,
    parallel_pairs: usize,
}

impl Lattice {
    /// Builds the lattice of the hierarchies `dims` (table order). Keys put dimension 0 in the
    /// highest bits, so key order is the lexicographic order of coordinates.
    pub fn new(dims: &[Hierarchy]) -> Result<Self> {
        let bits: Vec<u32> = dims.iter().map(|h| (usize::BITS - h.len().leading_zeros()).max(1)).collect();
        if bits.iter().sum::<u32>() > 128 {
            return Err(Error::data(
                "tabulation",
                "too many codes across the explanatory variables (cell keys exceed 128 bits)",
            ));
        }
        let mut shift = bits.iter().sum::<u32>();
        let dims = dims
            .iter()
            .zip(&bits)
            .map(|(h, &b)| {
                shift -= b;
                let nodes = h.nodes();
                let parent: Vec<u32> = nodes.iter().map(|n| n.parent.map_or(ROOT, |p| p as u32)).collect();
                let mut end: Vec<u32> = (1..=nodes.len() as u32).collect();
                for i in (0..nodes.len()).rev() {
                    for &c in &nodes[i].children {
                        end[i] = end[i].max(end[c]);
                    }
                }
                let chain = nodes.iter().map(|n| n.depth as u32 + 1).max().unwrap_or(1);
                Dim { parent, end, chain, shift, mask: (1u128 << b) - 1 }
            })
            .collect();
        Ok(Self { dims, shard_cells: SHARD_CELLS, parallel_pairs: PARALLEL_SHARD_PAIRS })
    }

    /// Sets the largest number of cells a shard may produce (default 4 Mi); smaller values
    /// split shards on more leading variables (less memory, more shards).
    pub fn with_shard_cells(mut self, cells: u128) -> Self {
        self.shard_cells = cells.max(1);
        self
    }

    /// Sets the number of pairs from which a shard is itself split across threads.
    pub fn with_parallel_shard_pairs(mut self, pairs: usize) -> Self {
        self.parallel_pairs = pairs;
        self
    }

    /// Number of dimensions.
    pub fn len(&self) -> usize {
        self.dims.len()
    }

    /// Whether the table has no dimension.
    pub fn is_empty(&self) -> bool {
        self.dims.is_empty()
    }

    /// The packed key of a cell given one node per dimension.
    pub fn key(&self, coords: &[u32]) -> u128 {
        coords.iter().zip(&self.dims).fold(0u128, |k, (&n, d)| k | ((n as u128) << d.shift))
    }

    /// Appends the node coordinates of `key` to `out`.
    pub fn unpack(&self, key: u128, out: &mut Vec<u32>) {
        out.extend(self.dims.iter().map(|d| self.node_of(key, d)));
    }

    fn node_of(&self, key: u128, d: &Dim) -> u32 {
        ((key >> d.shift) & d.mask) as u32
    }

    fn with_node(key: u128, d: &Dim, node: u32) -> u128 {
        (key & !(d.mask << d.shift)) | ((node as u128) << d.shift)
    }
}

/// Sums of one contributor in one cell.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Share {
    /// Σ response (× 10^scale, exact).
    pub value: i128,
    /// Σ weight (× 10^scale, exact).
    pub weight: i128,
    /// Records.
    pub records: u64,
}

impl Share {
    fn add(&mut self, o: &Share) {
        self.value += o.value;
        self.weight += o.weight;
        self.records += o.records;
    }
}

/// Statistics of one cell: `N` is the capacity of the top list (≥ the table's top-N).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellStats<const N: usize> {
    /// Contributors.
    pub freq: u64,
    /// Records.
    pub records: u64,
    /// Σ response (× 10^scale).
    pub value: i128,
    /// Σ weight (× 10^scale).
    pub weight: i128,
    /// Largest contributions, descending; entries past `ntop` are unused.
    pub top: [f64; N],
    /// Used entries of `top`.
    pub ntop: u8,
}

impl<const N: usize> Default for CellStats<N> {
    fn default() -> Self {
        Self { freq: 0, records: 0, value: 0, weight: 0, top: [0.0; N], ntop: 0 }
    }
}

impl<const N: usize> CellStats<N> {
    /// Inserts one contribution into the descending top list (kept at `N` entries).
    fn push_top(&mut self, x: f64) {
        let n = self.ntop as usize;
        let mut i = n.min(N);
        while i > 0 && self.top[i - 1] < x {
            if i < N {
                self.top[i] = self.top[i - 1];
            }
            i -= 1;
        }
        if i < N {
            self.top[i] = x;
            self.ntop = (n + 1).min(N) as u8;
        }
    }

    /// Counts one more contributor with its share of this cell.
    fn add_contributor(&mut self, s: &Share, scale: f64) {
        self.freq += 1;
        self.records += s.records;
        self.value += s.value;
        self.weight += s.weight;
        self.push_top(s.value as f64 / scale);
    }

    /// Adds the statistics of a disjoint set of contributors.
    pub fn merge(&mut self, o: &Self) {
        self.freq += o.freq;
        self.records += o.records;
        self.value += o.value;
        self.weight += o.weight;
        for &x in &o.top[..o.ntop as usize] {
            self.push_top(x);
        }
    }
}

/// Something that can be rolled up: a contributor's share, or a cell summary.
trait Part: Copy + Send + Sync {
    fn absorb(&mut self, other: &Self);
}

impl Part for Share {
    fn absorb(&mut self, other: &Self) {
        self.add(other);
    }
}

impl<const N: usize> Part for CellStats<N> {
    fn absorb(&mut self, other: &Self) {
        self.merge(other);
    }
}

/// (leaf cell, contributor) pairs from the contributor pre-aggregation.
#[derive(Debug, Default, Clone)]
pub struct Pairs {
    /// Packed leaf-cell key.
    pub leaf: Vec<u128>,
    /// Contributor number (any numbering: only equality matters).
    pub contributor: Vec<u32>,
    /// The contributor's sums in that leaf cell.
    pub share: Vec<Share>,
}

impl Pairs {
    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.leaf.len()
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.leaf.is_empty()
    }
}

/// Largest number of cells one shard may produce (bounds a shard's map): shards are split on
/// as many leading variables as needed for the product of the remaining variables' node
/// counts to stay below it.
const SHARD_CELLS: u128 = 1 << 22;

/// Cells (upper bound) of the shards handed to the thread pool at once: bounds the memory of
/// shard results in flight.
const WINDOW_CELLS: u128 = 1 << 23;

/// A shard with more pairs than this is itself split across threads by contributor.
const PARALLEL_SHARD_PAIRS: usize = 1 << 15;

/// Hands the shards of a roll-up, in key order, to the function it is given.
pub type ShardSource<'a> = dyn FnMut(&mut dyn FnMut(Shard)) + 'a;

/// One shard: the cells whose leading `split` nodes are those of `prefix`, and the indices of
/// the pairs (or leaf cells) under that prefix. Shards of one table never share a cell, so a
/// shard rolled up anywhere gives final cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Shard {
    /// Packed key holding the shard's nodes of the leading variables (the others are 0).
    pub prefix: u128,
    /// Indices of the inputs under the prefix.
    pub idx: Vec<u32>,
}

impl Lattice {
    /// How many leading variables the shards fix (≥ 1, ≤ dims − 1 unless there is one dim).
    pub fn split(&self) -> usize {
        let mut s = 1;
        while s + 1 < self.dims.len() {
            let rest: u128 = self.dims[s..].iter().map(|d| d.parent.len() as u128).product();
            if rest <= self.shard_cells {
                break;
            }
            s += 1;
        }
        s
    }

    /// Upper bound of the cells a shard with `pairs` pairs can produce.
    pub fn shard_bound(&self, split: usize, pairs: usize) -> u128 {
        let free = &self.dims[split..];
        let nodes: u128 = free.iter().map(|d| d.parent.len() as u128).product();
        let chains: u128 = free.iter().map(|d| d.chain as u128).product();
        nodes.min(pairs as u128 * chains)
    }

    /// `key` with only its nodes of the leading variables kept: the prefix of its shard.
    pub fn shard_prefix(&self, key: u128) -> u128 {
        key & self.prefix_mask(self.split())
    }

    /// Calls `f` with the prefix of every shard whose inputs include those under the leading
    /// nodes of `key`: every combination of those nodes and their ancestors.
    pub fn each_prefix_ancestor(&self, key: u128, f: &mut dyn FnMut(u128)) {
        fn walk(lat: &Lattice, key: u128, d: usize, split: usize, f: &mut dyn FnMut(u128)) {
            if d == split {
                f(key);
                return;
            }
            let dim = &lat.dims[d];
            let mut node = lat.node_of(key, dim);
            loop {
                walk(lat, Lattice::with_node(key, dim, node), d + 1, split, f);
                node = dim.parent[node as usize];
                if node == ROOT {
                    break;
                }
            }
        }
        let split = self.split().min(self.dims.len());
        walk(self, self.shard_prefix(key), 0, split, f);
    }

    /// Mask of the bits of the first `s` variables.
    fn prefix_mask(&self, s: usize) -> u128 {
        self.dims[..s].iter().fold(0, |m, d| m | (d.mask << d.shift))
    }

    /// Enumerates the shards in key order, calling `emit` for each nonempty one. `idx` holds
    /// the pairs under `prefix` (fixed on variables `..j`) sorted by their node of variable `j`.
    fn walk(&self, leaf: &[u128], idx: &[u32], j: usize, split: usize, prefix: u128, emit: &mut dyn FnMut(Shard)) {
        let d = &self.dims[j];
        let node_at = |p: usize| self.node_of(leaf[idx[p] as usize], d);
        let lower = |from: usize, n: u32| {
            let (mut lo, mut hi) = (from, idx.len());
            while lo < hi {
                let mid = (lo + hi) / 2;
                if node_at(mid) < n {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        let mut n = 0u32;
        while (n as usize) < d.parent.len() {
            let lo = lower(0, n);
            let hi = lower(lo, d.end[n as usize]);
            if lo == hi {
                // Nothing under n: skip its whole subtree.
                n = d.end[n as usize];
                continue;
            }
            let key = Lattice::with_node(prefix, d, n);
            let mut sub = idx[lo..hi].to_vec();
            if j + 1 == split {
                emit(Shard { prefix: key, idx: sub });
            } else {
                let next = &self.dims[j + 1];
                sub.sort_unstable_by_key(|&i| self.node_of(leaf[i as usize], next));
                self.walk(leaf, &sub, j + 1, split, key, emit);
            }
            n += 1;
        }
    }

    /// Enumerates the nonempty shards of the inputs with leaf keys `leaf`, in key order.
    pub fn shards(&self, leaf: &[u128], emit: &mut dyn FnMut(Shard)) {
        if self.dims.is_empty() || leaf.is_empty() {
            return;
        }
        let mut idx: Vec<u32> = (0..leaf.len() as u32).collect();
        idx.sort_unstable_by_key(|&i| self.node_of(leaf[i as usize], &self.dims[0]));
        self.walk(leaf, &idx, 0, self.split(), 0, emit);
    }

    /// Runs `work` on every shard `source` emits (in key order) — in parallel, a window of
    /// shards at a time — and hands the results to `sink` in the same order.
    fn for_each_shard<T: Send>(
        &self,
        source: &mut ShardSource<'_>,
        work: impl Fn(&Shard, usize) -> Vec<T> + Sync,
        sink: &mut (dyn FnMut(Vec<T>) -> Result<()> + Send),
    ) -> Result<()> {
        let split = self.split();
        let mut window: Vec<Shard> = Vec::new();
        let mut cells = 0u128;
        let mut failed: Result<()> = Ok(());
        // The previous window's results go to the sink while the pool computes the next one.
        let mut done: Vec<Vec<T>> = Vec::new();
        let mut drain = |parts: Vec<Vec<T>>, failed: &mut Result<()>| {
            for p in parts {
                if failed.is_ok() {
                    *failed = sink(p);
                }
            }
        };
        let mut flush = |window: &mut Vec<Shard>, done: &mut Vec<Vec<T>>, failed: &mut Result<()>| {
            let previous = std::mem::take(done);
            let (parts, ()) = rayon::join(
                || window.par_iter().map(|sh| work(sh, split)).collect::<Vec<Vec<T>>>(),
                || drain(previous, failed),
            );
            window.clear();
            *done = parts;
        };
        source(&mut |sh| {
            cells += self.shard_bound(split, sh.idx.len());
            window.push(sh);
            if cells >= WINDOW_CELLS {
                flush(&mut window, &mut done, &mut failed);
                cells = 0;
            }
        });
        flush(&mut window, &mut done, &mut failed);
        flush(&mut window, &mut done, &mut failed);
        failed
    }
}

/// Rolls `items` (keys with their parts) up variables `from..`: afterwards `items` holds every
/// cell reached, once, with the merged part (in no particular order). `items` must be free of
/// duplicate keys. `index` is scratch space.
///
/// Before variable `d` is rolled, every item's node of `d` is still a leaf, and a projection
/// replaces it by a proper ancestor (an inner node), so projections can only collide with each
/// other: a hash index of this variable's projections merges them in O(1) each.
fn roll_up<P: Part>(lat: &Lattice, items: &mut Vec<(u128, P)>, from: usize, index: &mut KeyMap<u32>) {
    for d in &lat.dims[from..] {
        reset(index);
        let n = items.len();
        for i in 0..n {
            let (key, part) = items[i];
            let mut a = d.parent[lat.node_of(key, d) as usize];
            while a != ROOT {
                upsert(items, index, Lattice::with_node(key, d, a), &part);
                a = d.parent[a as usize];
            }
        }
    }
}

/// Adds `part` to the item of `key`, creating it if `index` does not know it yet.
fn upsert<P: Part>(items: &mut Vec<(u128, P)>, index: &mut KeyMap<u32>, key: u128, part: &P) {
    match index.entry(key) {
        std::collections::hash_map::Entry::Occupied(e) => items[*e.get() as usize].1.absorb(part),
        std::collections::hash_map::Entry::Vacant(e) => {
            e.insert(items.len() as u32);
            items.push((key, *part));
        }
    }
}

/// Empties a scratch index; a large one is dropped (clearing costs its capacity, and most
/// contributors are small).
fn reset(index: &mut KeyMap<u32>) {
    if index.capacity() > 1 << 12 {
        *index = KeyMap::default();
    } else {
        index.clear();
    }
}

/// Merges the parts of equal keys in `raw` into `items` (cleared first).
fn dedup_into<P: Part>(raw: impl Iterator<Item = (u128, P)>, items: &mut Vec<(u128, P)>, index: &mut KeyMap<u32>) {
    items.clear();
    reset(index);
    for (k, p) in raw {
        upsert(items, index, k, &p);
    }
}

/// Cells sorted by key (keys are distinct), sorting small (key, position) pairs rather than
/// the statistics themselves.
fn sorted<const N: usize>(cells: impl Iterator<Item = (u128, CellStats<N>)>) -> Vec<(u128, CellStats<N>)> {
    let entries: Vec<(u128, CellStats<N>)> = cells.collect();
    let mut order: Vec<(u128, u32)> = entries.iter().enumerate().map(|(i, e)| (e.0, i as u32)).collect();
    order.sort_unstable_by_key(|x| x.0);
    order.iter().map(|&(_, i)| entries[i as usize]).collect()
}

/// Calls `f` for every cell of the product of ancestor chains of `key` over variables `d..`.
fn each_ancestor_cell(lat: &Lattice, key: u128, d: usize, f: &mut impl FnMut(u128)) {
    let Some(dim) = lat.dims.get(d) else {
        f(key);
        return;
    };
    let mut node = lat.node_of(key, dim);
    loop {
        each_ancestor_cell(lat, Lattice::with_node(key, dim, node), d + 1, f);
        node = dim.parent[node as usize];
        if node == ROOT {
            break;
        }
    }
}

/// The cells of one shard, sorted by key: each contributor's pairs in the shard rolled up the
/// free variables once, then counted in every cell it reached. Large shards are split by
/// contributor across threads; the partial cell maps merge exactly (disjoint contributors).
fn contributor_shard<const N: usize>(
    lat: &Lattice,
    pairs: &Pairs,
    shard: &Shard,
    split: usize,
    scale: f64,
) -> Vec<(u128, CellStats<N>)> {
    let mut by_contributor = shard.idx.clone();
    by_contributor.sort_unstable_by_key(|&i| pairs.contributor[i as usize]);
    let same = |a: &u32, b: &u32| pairs.contributor[*a as usize] == pairs.contributor[*b as usize];
    let cells = if by_contributor.len() < lat.parallel_pairs {
        fold_contributors::<N>(lat, pairs, shard.prefix, split, scale, by_contributor.chunk_by(same))
    } else {
        // Cut into pieces at contributor boundaries.
        let target = by_contributor.len().div_ceil(4 * rayon::current_num_threads().max(1));
        let mut pieces: Vec<&[u32]> = Vec::new();
        let mut start = 0;
        while start < by_contributor.len() {
            let mut end = (start + target).min(by_contributor.len());
            while end < by_contributor.len() && same(&by_contributor[end - 1], &by_contributor[end]) {
                end += 1;
            }
            pieces.push(&by_contributor[start..end]);
            start = end;
        }
        pieces
            .par_iter()
            .map(|p| fold_contributors::<N>(lat, pairs, shard.prefix, split, scale, p.chunk_by(same)))
            .reduce(KeyMap::default, |mut a, b| {
                let (mut a, b) = if a.len() >= b.len() { (a, b) } else { (b, std::mem::take(&mut a)) };
                for (k, s) in b {
                    a.entry(k).or_default().merge(&s);
                }
                a
            })
    };
    sorted(cells.into_iter())
}

/// Folds the contributors of `groups` (each the pair indices of one contributor) into a cell map.
fn fold_contributors<'a, const N: usize>(
    lat: &Lattice,
    pairs: &Pairs,
    prefix: u128,
    split: usize,
    scale: f64,
    groups: impl Iterator<Item = &'a [u32]>,
) -> KeyMap<CellStats<N>> {
    let keep = !lat.prefix_mask(split);
    let in_shard = |i: u32| (pairs.leaf[i as usize] & keep) | prefix;
    let mut cells: KeyMap<CellStats<N>> = KeyMap::default();
    let mut items: Vec<(u128, Share)> = Vec::new();
    let mut index: KeyMap<u32> = KeyMap::default();
    for group in groups {
        if let [i] = group {
            // One leaf cell: its ancestor cells are all distinct, no merging needed.
            let share = pairs.share[*i as usize];
            each_ancestor_cell(lat, in_shard(*i), split, &mut |k| {
                cells.entry(k).or_default().add_contributor(&share, scale)
            });
            continue;
        }
        dedup_into(group.iter().map(|&i| (in_shard(i), pairs.share[i as usize])), &mut items, &mut index);
        roll_up(lat, &mut items, split, &mut index);
        for (k, s) in &items {
            cells.entry(*k).or_default().add_contributor(s, scale);
        }
    }
    cells
}

/// Every nonempty cell of a table with contributors, in key order, handed to `sink` a window
/// at a time; at most `N` top contributions each. `scale` converts the exact sums (10^scale).
pub fn roll_up_pairs<const N: usize>(
    lat: &Lattice,
    pairs: &Pairs,
    scale: f64,
    sink: &mut (dyn FnMut(Vec<(u128, CellStats<N>)>) -> Result<()> + Send),
) -> Result<()> {
    roll_up_pair_shards::<N>(lat, pairs, &mut |emit| lat.shards(&pairs.leaf, emit), scale, sink)
}

/// The cells of the shards `source` emits (from [`Lattice::shards`] over `pairs`, in key
/// order), handed to `sink` in key order: one part of a table rolled up on its own.
pub fn roll_up_pair_shards<const N: usize>(
    lat: &Lattice,
    pairs: &Pairs,
    source: &mut ShardSource<'_>,
    scale: f64,
    sink: &mut (dyn FnMut(Vec<(u128, CellStats<N>)>) -> Result<()> + Send),
) -> Result<()> {
    if lat.is_empty() || pairs.is_empty() {
        return Ok(());
    }
    lat.for_each_shard(source, |sh, split| contributor_shard::<N>(lat, pairs, sh, split, scale), sink)
}

/// Every nonempty cell of a table whose leaf cells arrive summarised (no contributor
/// variable: each record is a contributor), in key order, handed to `sink` a window at a time.
pub fn roll_up_leaf_cells<const N: usize>(
    lat: &Lattice,
    leaves: &[(u128, CellStats<N>)],
    sink: &mut (dyn FnMut(Vec<(u128, CellStats<N>)>) -> Result<()> + Send),
) -> Result<()> {
    let keys: Vec<u128> = leaves.iter().map(|x| x.0).collect();
    roll_up_leaf_shards(lat, leaves, &mut |emit| lat.shards(&keys, emit), sink)
}

/// The cells of the shards `source` emits over summarised leaf cells (see
/// [`roll_up_pair_shards`]).
pub fn roll_up_leaf_shards<const N: usize>(
    lat: &Lattice,
    leaves: &[(u128, CellStats<N>)],
    source: &mut ShardSource<'_>,
    sink: &mut (dyn FnMut(Vec<(u128, CellStats<N>)>) -> Result<()> + Send),
) -> Result<()> {
    if lat.is_empty() || leaves.is_empty() {
        return Ok(());
    }
    lat.for_each_shard(
        source,
        |sh, split| {
            let keep = !lat.prefix_mask(split);
            let (mut items, mut index) = (Vec::new(), KeyMap::default());
            let raw = sh.idx.iter().map(|&i| {
                let (k, s) = leaves[i as usize];
                ((k & keep) | sh.prefix, s)
            });
            dedup_into(raw, &mut items, &mut index);
            roll_up(lat, &mut items, split, &mut index);
            sorted(items.into_iter())
        },
        sink,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy::HierarchySpec;
    use std::collections::BTreeMap;

    fn dims() -> Vec<Hierarchy> {
        let geo: Vec<String> = ["1a", "1b", "2a", "3c", "3d"].iter().map(|s| s.to_string()).collect();
        let sex: Vec<String> = ["f", "m"].iter().map(|s| s.to_string()).collect();
        let age: Vec<String> = ["x", "y", "z"].iter().map(|s| s.to_string()).collect();
        vec![
            Hierarchy::resolve("geo", &HierarchySpec::Levels(vec![1, 1]), &geo).unwrap(),
            Hierarchy::resolve("sex", &HierarchySpec::Flat, &sex).unwrap(),
            Hierarchy::resolve("age", &HierarchySpec::Flat, &age).unwrap(),
        ]
    }

    fn collect<T: Send>(run: impl FnOnce(&mut (dyn FnMut(Vec<T>) -> Result<()> + Send)) -> Result<()>) -> Vec<T> {
        let mut out = Vec::new();
        run(&mut |part| {
            out.extend(part);
            Ok(())
        })
        .unwrap();
        out
    }

    fn chain(h: &Hierarchy, n: usize) -> Vec<usize> {
        let mut c = vec![n];
        while let Some(p) = h.parent(*c.last().unwrap()) {
            c.push(p);
        }
        c
    }

    /// Brute force: every (cell, contributor) pair by explicit set membership.
    fn brute(dims: &[Hierarchy], recs: &[([usize; 3], u32, i128)]) -> BTreeMap<Vec<u32>, (u64, i128, Vec<f64>)> {
        let mut per: BTreeMap<(Vec<u32>, u32), i128> = BTreeMap::new();
        for (leaf, c, v) in recs {
            for a in chain(&dims[0], leaf[0]) {
                for b in chain(&dims[1], leaf[1]) {
                    for d in chain(&dims[2], leaf[2]) {
                        *per.entry((vec![a as u32, b as u32, d as u32], *c)).or_default() += v;
                    }
                }
            }
        }
        let mut out: BTreeMap<Vec<u32>, (u64, i128, Vec<f64>)> = BTreeMap::new();
        for ((cell, _), v) in per {
            let e = out.entry(cell).or_default();
            e.0 += 1;
            e.1 += v;
            e.2.push(v as f64);
        }
        for e in out.values_mut() {
            e.2.sort_by(|a, b| b.total_cmp(a));
            e.2.truncate(2);
        }
        out
    }

    #[test]
    fn contributor_roll_up_matches_brute_force() {
        let dims = dims();
        let lat = Lattice::new(&dims).unwrap();
        let mut rng = crate::rng::Rng::new(7);
        let leaves: Vec<usize> = dims[0].leaves().collect();
        let mut recs = Vec::new();
        for _ in 0..300 {
            let leaf =
                [leaves[rng.below(leaves.len() as u64) as usize], 1 + rng.below(2) as usize, 1 + rng.below(3) as usize];
            recs.push((leaf, rng.below(25) as u32, 1 + rng.below(1000) as i128));
        }
        // Pre-aggregate per (leaf, contributor) as the SQL does.
        let mut base: BTreeMap<(u128, u32), Share> = BTreeMap::new();
        for (leaf, c, v) in &recs {
            let key = lat.key(&leaf.map(|x| x as u32));
            base.entry((key, *c)).or_default().add(&Share { value: *v, weight: 0, records: 1 });
        }
        let mut pairs = Pairs::default();
        for ((k, c), s) in base {
            pairs.leaf.push(k);
            pairs.contributor.push(c);
            pairs.share.push(s);
        }
        let got = collect(|sink| roll_up_pairs::<2>(&lat, &pairs, 1.0, sink));
        let fine = lat.clone().with_shard_cells(1);
        assert_eq!(fine.split(), 2, "shards fixed on geo and sex");
        let got_fine = collect(|sink| roll_up_pairs::<2>(&fine, &pairs, 1.0, sink));
        assert_eq!(got, got_fine, "the result does not depend on the sharding");
        let split_shards = lat.clone().with_parallel_shard_pairs(8);
        let got_split = collect(|sink| roll_up_pairs::<2>(&split_shards, &pairs, 1.0, sink));
        assert_eq!(got, got_split, "nor on splitting shards across threads");
        let want = brute(&dims, &recs);
        assert_eq!(got.len(), want.len());
        assert!(got.windows(2).all(|w| w[0].0 < w[1].0), "cells come out sorted");
        for ((key, s), (cell, (freq, value, top))) in got.iter().zip(&want) {
            let mut coords = Vec::new();
            lat.unpack(*key, &mut coords);
            assert_eq!(&coords, cell);
            assert_eq!((s.freq, s.value), (*freq, *value), "cell {cell:?}");
            assert_eq!(&s.top[..s.ntop as usize], &top[..], "cell {cell:?}");
        }
        assert_eq!(got.iter().map(|x| x.1.records).max(), Some(300), "the grand total has every record");
    }

    #[test]
    fn leaf_summaries_roll_up_like_records() {
        let dims = dims();
        let lat = Lattice::new(&dims).unwrap();
        let leaves: Vec<usize> = dims[0].leaves().collect();
        let mut rng = crate::rng::Rng::new(3);
        let mut recs = Vec::new();
        for i in 0..200u32 {
            let leaf =
                [leaves[rng.below(leaves.len() as u64) as usize], 1 + rng.below(2) as usize, 1 + rng.below(3) as usize];
            recs.push((leaf, i, 1 + rng.below(500) as i128));
        }
        let mut by_leaf: BTreeMap<u128, CellStats<2>> = BTreeMap::new();
        for (leaf, _, v) in &recs {
            let key = lat.key(&leaf.map(|x| x as u32));
            by_leaf.entry(key).or_default().add_contributor(&Share { value: *v, weight: 0, records: 1 }, 1.0);
        }
        let leaf_cells: Vec<(u128, CellStats<2>)> = by_leaf.into_iter().collect();
        let got = collect(|sink| roll_up_leaf_cells(&lat, &leaf_cells, sink));
        let fine = lat.clone().with_shard_cells(1);
        assert_eq!(got, collect(|sink| roll_up_leaf_cells(&fine, &leaf_cells, sink)));
        let want = brute(&dims, &recs);
        assert_eq!(got.len(), want.len());
        for ((_, s), (cell, (freq, value, top))) in got.iter().zip(&want) {
            assert_eq!((s.freq, s.records, s.value), (*freq, *freq, *value), "cell {cell:?}");
            assert_eq!(&s.top[..s.ntop as usize], &top[..], "cell {cell:?}");
        }
    }

    #[test]
    fn top_list_keeps_the_largest_in_order() {
        let mut s = CellStats::<3>::default();
        for x in [5.0, 1.0, 9.0, 7.0, 9.0, -2.0] {
            s.push_top(x);
        }
        assert_eq!((s.ntop, s.top), (3, [9.0, 9.0, 7.0]));
        let mut t = CellStats::<3>::default();
        t.push_top(-1.0);
        assert_eq!((t.ntop, t.top[0]), (1, -1.0));
    }
}
