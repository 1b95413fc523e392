//! Parts of a table: the roll-up of a primaries-only table cut into independent tasks.
//!
//! A part is a run of consecutive shards of the lattice ([`lattice::Shard`]: the cells under
//! fixed nodes of the leading variables). Shards never share a cell, so a part rolled up on
//! its own gives *final* cells — no partial cells to merge, no shuffle — and the parts of a
//! table, in part order, are the table in key order. The client cuts the table into parts
//! ([`plan_parts`]: each part's inputs and shards as one binary payload), or — on a cluster,
//! without holding the pairs — plans them from the pair counts per leading prefix
//! ([`plan_from_counts`]) while the executors assemble each part's payload from the pairs
//! routed to it ([`parts_of`], [`part_shards`], [`pairs_payload`]); wherever the payload lands
//! (an executor, or the client itself in local mode) [`roll_up_part`] rolls it up with the same
//! lattice code as a local run.
//!
//! Determinism: the cut depends only on the inputs (the pre-aggregated pairs, which are the
//! same in every engine mode) and `part_cells`, never on the number of executors; so are the
//! part files named after it. The plan from counts is the plan from the pairs (one cutting
//! function), and a part's cells depend neither on the order of its pairs nor on the numbering
//! of its contributors.
//!
//! Inputs are replicated only across the leading variables' ancestor chains: a pair is in
//! the shards of each ancestor of its leading nodes (`(Total, Total, …)` holds every pair).

use super::lattice::{self, CellStats, Lattice, Pairs, Shard, Share};
use super::{to_cells, Cells, SCALE_F};
use crate::error::{Error, Result};

/// Default upper bound of the cells of one part (`[engine] part_cells`): a part closes once
/// the cell bounds of its shards reach it.
pub const PART_CELLS: u64 = 1 << 22;

/// The inputs of a table's roll-up: (leaf cell, contributor) pairs, or summarised leaf cells
/// of a table without contributor variable (each record is a contributor).
pub enum Inputs<'a, const N: usize> {
    /// Contributor pairs.
    Pairs(&'a Pairs),
    /// Leaf-cell summaries.
    Leaves(&'a [(u128, CellStats<N>)]),
}

impl<const N: usize> Inputs<'_, N> {
    fn keys(&self) -> Vec<u128> {
        match self {
            Inputs::Pairs(p) => p.leaf.clone(),
            Inputs::Leaves(l) => l.iter().map(|x| x.0).collect(),
        }
    }

    /// Records of input `i`.
    fn records(&self, i: u32) -> u64 {
        match self {
            Inputs::Pairs(p) => p.share[i as usize].records,
            Inputs::Leaves(l) => l[i as usize].1.records,
        }
    }
}

/// Cuts the roll-up of `inputs` into parts of at most about `part_cells` cells and hands each
/// part's payload to `emit` with its number (0, 1, …, in key order); returns the number of
/// parts.
///
/// A shard's size is bounded from its *records* (an upper bound of its inputs: each pair or
/// leaf cell has at least one record), so the same plan can be made without the inputs, from
/// the number of records under each leading prefix ([`plan_from_counts`]) — one cheap
/// `GROUP BY` over the records instead of a second contributor pre-aggregation.
pub fn plan_parts<const N: usize>(
    lat: &Lattice,
    inputs: &Inputs<'_, N>,
    part_cells: u64,
    emit: &mut dyn FnMut(usize, Vec<u8>) -> Result<()>,
) -> Result<usize> {
    let keys = inputs.keys();
    let mut parts = 0usize;
    let records = |sh: &Shard| sh.idx.iter().map(|&i| inputs.records(i)).sum::<u64>();
    cut(lat, &keys, &records, part_cells, &mut |shards| {
        emit(parts, encode(inputs, shards))?;
        parts += 1;
        Ok(())
    })?;
    Ok(parts)
}

/// Cuts the shards of `keys` (in key order) into runs whose cell bounds reach `part_cells`;
/// `records` gives the number of records of a shard (an upper bound of its inputs). The one place where parts are cut, so the
/// plan from the pairs and the plan from their counts ([`plan_from_counts`]) cannot differ.
fn cut(
    lat: &Lattice,
    keys: &[u128],
    records: &dyn Fn(&Shard) -> u64,
    part_cells: u64,
    close: &mut dyn FnMut(Vec<Shard>) -> Result<()>,
) -> Result<()> {
    let split = lat.split();
    let mut part: Vec<Shard> = Vec::new();
    let mut bound = 0u128;
    let mut failed: Result<()> = Ok(());
    let mut flush = |part: &mut Vec<Shard>, failed: &mut Result<()>| {
        if part.is_empty() || failed.is_err() {
            return;
        }
        *failed = close(std::mem::take(part));
    };
    lat.shards(keys, &mut |sh| {
        bound += lat.shard_bound(split, records(&sh) as usize);
        part.push(sh);
        if bound >= part_cells as u128 {
            flush(&mut part, &mut failed);
            bound = 0;
        }
    });
    flush(&mut part, &mut failed);
    failed
}

/// The parts of a table from the number of records under each combination of nodes of its
/// leading variables (`prefixes[i]`: a key holding only those nodes, `counts[i]` records
/// under it): the key of each part's first shard, in key order. The same cut as
/// [`plan_parts`] makes from the inputs themselves — shards fix only the leading variables, so
/// their records follow from the counts — which lets the client plan the parts without
/// holding the inputs.
pub fn plan_from_counts(lat: &Lattice, prefixes: &[u128], counts: &[u64], part_cells: u64) -> Vec<u128> {
    let mut starts = Vec::new();
    let records = |sh: &Shard| sh.idx.iter().map(|&i| counts[i as usize]).sum::<u64>();
    cut(lat, prefixes, &records, part_cells, &mut |shards| {
        starts.push(shards[0].prefix);
        Ok(())
    })
    .expect("collecting never fails");
    starts
}

/// The part holding the shard `prefix`, given the parts' first shards (`starts`, in key
/// order): parts are runs of consecutive shards.
pub fn part_of(starts: &[u128], prefix: u128) -> usize {
    starts.partition_point(|&s| s <= prefix).saturating_sub(1)
}

/// The parts that need the inputs under the leading nodes of `key`: those of the shards of
/// each combination of their ancestors (a pair is in the shards of every ancestor of its
/// leading nodes), each once, in increasing order.
pub fn parts_of(lat: &Lattice, starts: &[u128], key: u128) -> Vec<usize> {
    let mut parts = Vec::new();
    lat.each_prefix_ancestor(key, &mut |prefix| parts.push(part_of(starts, prefix)));
    parts.sort_unstable();
    parts.dedup();
    parts
}

/// The shards of one part, from the inputs routed to it (`keys`; [`parts_of`]): the shards
/// with a prefix in `starts[part]..starts[part + 1]`, each with all its inputs. Other shards
/// that these inputs reach belong to other parts and are left out.
pub fn part_shards(lat: &Lattice, starts: &[u128], part: usize, keys: &[u128]) -> Vec<Shard> {
    let (lo, hi) = (starts.get(part).copied().unwrap_or(u128::MAX), starts.get(part + 1).copied());
    let mut out = Vec::new();
    lat.shards(keys, &mut |sh| {
        if sh.prefix >= lo && hi.is_none_or(|h| sh.prefix < h) {
            out.push(sh);
        }
    });
    out
}

/// The payload of a part assembled where its pairs are: `pairs` (those routed to the part,
/// [`parts_of`]) and the part's shards over them ([`part_shards`]). It rolls up to the cells
/// of the payload [`plan_parts`] makes for the same part: the same shards with the same pairs,
/// whatever their order and contributor numbering.
pub fn pairs_payload(pairs: &Pairs, shards: Vec<Shard>) -> Vec<u8> {
    encode::<2>(&Inputs::Pairs(pairs), shards)
}

/// Records routed to one chunk of a part, on average, at most: a routed part's pairs are
/// split by contributor into `⌈records / CHUNK_RECORDS⌉` chunks ([`chunks_for`]), each
/// assembled by its own aggregate group and written as its own payload file, so that no
/// executor holds a whole part (the part of the leading totals has every pair) as one
/// allocation. 1 Mi records is at most 1 Mi pairs, about 64 MB of aggregate state.
pub const CHUNK_RECORDS: u64 = 1 << 20;

/// Number of chunks of a routed part whose pairs come from `records` records, at most about
/// `per_chunk` records a chunk (≥ 1).
pub fn chunks_for(records: u64, per_chunk: u64) -> u64 {
    records.div_ceil(per_chunk.max(1)).max(1)
}

/// The chunk (`0..chunks`) of a part that a contributor's pairs go to: FNV-1a of the
/// contributor's text, so a contributor's pairs are all in one chunk of a part and the chunks'
/// contributors are disjoint ([`roll_up_chunks`] numbers them apart). The same on every
/// machine; which chunk a pair is in never changes a cell.
pub fn chunk_of(contributor: &[u8], chunks: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in contributor {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h % chunks.max(1)
}

/// Rolls up a part that arrives as several payloads over *disjoint contributors* (chunks
/// [`chunk_of`], each [`pairs_payload`] of its pairs and the part's shards over them) and
/// hands its cells to `sink` in key order, one batch a shard: the pairs of up to
/// [`ROUND_CHUNKS`] chunks are concatenated with their contributors numbered apart, each shard
/// getting the pairs of every chunk, and the cells of successive rounds are summed, so the
/// cells — and their batches — are those of the part's single payload. One chunk is rolled up
/// as it is (any kind of payload).
pub fn roll_up_chunks(
    layout: &PartLayout,
    chunks: &mut dyn Iterator<Item = Result<Vec<u8>>>,
    sink: &mut super::CellSink<'_>,
) -> Result<()> {
    match layout.top_n {
        0..=2 => roll_up_chunks_with::<2>(layout, chunks, sink),
        3..=4 => roll_up_chunks_with::<4>(layout, chunks, sink),
        _ => roll_up_chunks_with::<8>(layout, chunks, sink),
    }
}

/// Chunks of a part rolled up together at most. A part in more chunks (the part of the
/// leading totals holds every pair of the table) is rolled up a round of chunks at a time and
/// the rounds' cells are summed ([`CellStats::merge`]: the rounds' contributors are disjoint),
/// so a roll-up task holds at most this many chunks' pairs (about 8 Mi records), however many
/// rows the table has. The price: each round produces the part's cells again and merges them.
/// 8, not 4: at 60 M rows of the benchmark job the executor's peak stayed at the routing
/// stage's (1.59 against 1.58 GB) while the totals part's roll-up at 20 M took 5.4 instead of
/// 6.7 s (one go: 5.2 s; BENCHMARKS, "Session 24").
pub const ROUND_CHUNKS: usize = 8;

/// Where the cells summed over a part's rounds wait for the next round ([`SpillFile`]): the
/// executor's work directory once [`set_spill_dir`] is called, else the system's temporary
/// directory.
static SPILL_DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Puts the files of the rounds' summed cells into `dir` (an executor's `--work-dir`, with its
/// shuffle and spill files); the first call wins.
pub fn set_spill_dir(dir: std::path::PathBuf) {
    let _ = SPILL_DIR.set(dir);
}

/// A cell key with its statistics.
type Stat<const N: usize> = (u128, CellStats<N>);

fn roll_up_chunks_with<const N: usize>(
    layout: &PartLayout,
    chunks: &mut dyn Iterator<Item = Result<Vec<u8>>>,
    sink: &mut super::CellSink<'_>,
) -> Result<()> {
    let mut chunks = chunks.peekable();
    let (inputs, shards) = merge_chunks::<N>(&mut chunks.by_ref().take(ROUND_CHUNKS))?;
    if chunks.peek().is_none() {
        return roll_up_decoded(layout, inputs, shards, sink);
    }
    let lat = Lattice::new(&layout.dims)?;
    let dir = SPILL_DIR.get().cloned().unwrap_or_else(std::env::temp_dir);
    // The cells summed so far, in key order, on disk: a part's cells (up to `part_cells`,
    // ~100 bytes each) held in memory beside a round's pairs took the executor's peak to
    // 1.75 GB in a 1 GiB pool at 60 M × 7 (BENCHMARKS, "Session 27"); streamed through a file,
    // a round holds its pairs and one block of cells.
    let mut summed: Option<SpillFile> = None;
    let mut round = Some((inputs, shards));
    while let Some((inputs, shards)) = round.take() {
        let mut old = summed.take().map(SpillFile::read::<N>).transpose()?;
        let mut next = SpillFile::create(&dir)?;
        let mut last = None;
        roll_up_stats(&lat, inputs, shards, &mut |block| sum_in_order(old.as_mut(), block, &mut last, &mut next))?;
        if let Some(old) = old.as_mut() {
            while let Some(cell) = old.next_stat()? {
                next.write(&cell)?;
            }
        }
        summed = Some(next);
        if chunks.peek().is_some() {
            round = Some(merge_chunks::<N>(&mut chunks.by_ref().take(ROUND_CHUNKS))?);
        }
    }
    // One batch a shard, as a part rolled up at once hands them over: the writers' pages
    // follow the batches, so other cuts would give other bytes.
    let mut cells = summed.expect("one round at least").read::<N>()?;
    let mut shard: Vec<Stat<N>> = Vec::new();
    while let Some(cell) = cells.next_stat()? {
        if shard.last().is_some_and(|last| lat.shard_prefix(last.0) != lat.shard_prefix(cell.0)) {
            sink(to_cells(layout.top_n, layout.weighted, &layout.dims, &lat, std::mem::take(&mut shard)))?;
        }
        shard.push(cell);
    }
    if !shard.is_empty() {
        sink(to_cells(layout.top_n, layout.weighted, &layout.dims, &lat, shard))?;
    }
    Ok(())
}

/// Writes `block` (the next cells of a round, in key order, after `last`) summed with the
/// cells of the earlier rounds (`old`, in key order, read as far as the block reaches) to
/// `out`: the cells up to the block's last key, merged or not, in key order.
fn sum_in_order<const N: usize>(
    mut old: Option<&mut SpillReader<N>>,
    block: Vec<Stat<N>>,
    last: &mut Option<u128>,
    out: &mut SpillFile,
) -> Result<()> {
    for (key, mut stats) in block {
        if last.is_some_and(|l| l >= key) {
            return Err(Error::Internal("a part's roll-up handed its cells out of key order".into()));
        }
        *last = Some(key);
        if let Some(old) = old.as_deref_mut() {
            while let Some(k) = old.peek_key()? {
                if k > key {
                    break;
                }
                let (_, earlier) = old.next_stat()?.expect("peeked");
                if k == key {
                    stats.merge(&earlier);
                } else {
                    out.write(&(k, earlier))?;
                }
            }
        }
        out.write(&(key, stats))?;
    }
    Ok(())
}

/// The cells summed over a part's rounds so far, in key order, in an anonymous file (removed
/// by the system when closed, so a killed task leaves nothing behind).
struct SpillFile {
    out: std::io::BufWriter<std::fs::File>,
    dir: std::path::PathBuf,
    /// One cell's bytes.
    cell: Out,
}

impl SpillFile {
    fn create(dir: &std::path::Path) -> Result<Self> {
        let file = tempfile::tempfile_in(dir).map_err(|e| Error::io(dir, e))?;
        let out = std::io::BufWriter::with_capacity(1 << 20, file);
        Ok(Self { out, dir: dir.to_path_buf(), cell: Out(Vec::with_capacity(CELL_BYTES + 8 * 8)) })
    }

    /// Appends one cell: key, counts, sums, then the used entries of the top list.
    fn write<const N: usize>(&mut self, (key, s): &Stat<N>) -> Result<()> {
        use std::io::Write;
        self.cell.0.clear();
        self.cell.stat(*key, s);
        self.out.write_all(&self.cell.0).map_err(|e| Error::io(&self.dir, e))
    }

    /// The cells written, from the first.
    fn read<const N: usize>(self) -> Result<SpillReader<N>> {
        use std::io::Seek;
        let dir = self.dir;
        let mut file = self.out.into_inner().map_err(|e| Error::io(&dir, e.into_error()))?;
        file.rewind().map_err(|e| Error::io(&dir, e))?;
        Ok(SpillReader { r: std::io::BufReader::with_capacity(1 << 20, file), dir, peeked: None })
    }
}

/// Bytes of a spilled cell before its top list: key, freq, records, value, weight, ntop.
const CELL_BYTES: usize = 16 + 8 + 8 + 16 + 16 + 1;

/// Reads a [`SpillFile`] back, one cell at a time.
struct SpillReader<const N: usize> {
    r: std::io::BufReader<std::fs::File>,
    dir: std::path::PathBuf,
    peeked: Option<Stat<N>>,
}

impl<const N: usize> SpillReader<N> {
    /// The key of the next cell, if any.
    fn peek_key(&mut self) -> Result<Option<u128>> {
        if self.peeked.is_none() {
            self.peeked = self.read_stat()?;
        }
        Ok(self.peeked.as_ref().map(|c| c.0))
    }

    fn next_stat(&mut self) -> Result<Option<Stat<N>>> {
        match self.peeked.take() {
            Some(c) => Ok(Some(c)),
            None => self.read_stat(),
        }
    }

    fn read_stat(&mut self) -> Result<Option<Stat<N>>> {
        use std::io::{BufRead, Read};
        let at_end = self.r.fill_buf().map_err(|e| Error::io(&self.dir, e))?.is_empty();
        if at_end {
            return Ok(None);
        }
        let mut fixed = [0u8; CELL_BYTES];
        self.r.read_exact(&mut fixed).map_err(|e| Error::io(&self.dir, e))?;
        let (key, mut s, ntop) = In(&fixed).stat_head::<N>()?;
        if ntop > N {
            return Err(Error::Internal(format!("a spilled cell with {ntop} top entries of {N}")));
        }
        s.ntop = ntop as u8;
        for j in 0..ntop {
            let mut x = [0u8; 8];
            self.r.read_exact(&mut x).map_err(|e| Error::io(&self.dir, e))?;
            s.top[j] = f64::from_le_bytes(x);
        }
        Ok(Some((key, s)))
    }
}

/// The inputs and shards of a part from its chunks (see [`roll_up_chunks`]); each chunk's
/// bytes are dropped once decoded.
fn merge_chunks<const N: usize>(chunks: &mut dyn Iterator<Item = Result<Vec<u8>>>) -> Result<(Decoded<N>, Vec<Shard>)> {
    let Some(first) = chunks.next() else {
        return Err(Error::Internal("a part without chunks".into()));
    };
    let (mut inputs, first_shards) = decode::<N>(&first?)?;
    let Some(second) = chunks.next() else { return Ok((inputs, first_shards)) };
    let Decoded::Pairs(pairs) = &mut inputs else {
        return Err(Error::Internal("a part in several chunks of leaf cells".into()));
    };
    let mut shards: std::collections::BTreeMap<u128, Vec<u32>> =
        first_shards.into_iter().map(|s| (s.prefix, s.idx)).collect();
    let mut next_contributor = contributors_after(pairs, 0)?;
    for chunk in std::iter::once(second).chain(chunks) {
        let (more, more_shards) = decode::<N>(&chunk?)?;
        let Decoded::Pairs(more) = more else {
            return Err(Error::Internal("a part in several chunks of leaf cells".into()));
        };
        let base =
            u32::try_from(pairs.len()).map_err(|_| Error::Internal("more than 4 billion pairs in a part".into()))?;
        let offset = next_contributor;
        next_contributor = contributors_after(&more, offset)?;
        pairs.leaf.extend_from_slice(&more.leaf);
        pairs.contributor.extend(more.contributor.iter().map(|c| c + offset));
        pairs.share.extend_from_slice(&more.share);
        for s in more_shards {
            shards.entry(s.prefix).or_default().extend(s.idx.iter().map(|i| i + base));
        }
        u32::try_from(pairs.len()).map_err(|_| Error::Internal("more than 4 billion pairs in a part".into()))?;
    }
    let shards = shards.into_iter().map(|(prefix, idx)| Shard { prefix, idx }).collect();
    Ok((inputs, shards))
}

/// The first contributor number free after `pairs` numbered from `offset`.
fn contributors_after(pairs: &Pairs, offset: u32) -> Result<u32> {
    let top = pairs.contributor.iter().max().map_or(0, |&c| c as u64 + 1);
    u32::try_from(offset as u64 + top).map_err(|_| Error::Internal("more than 4 billion contributors in a part".into()))
}

/// Little-endian writer of a payload.
struct Out(Vec<u8>);

impl Out {
    fn u8(&mut self, x: u8) {
        self.0.push(x);
    }
    fn u64(&mut self, x: u64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn u32(&mut self, x: u32) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn i128(&mut self, x: i128) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn u128(&mut self, x: u128) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    /// A cell: key, counts, sums, the number of top entries, then the used entries (the leaves
    /// of a payload, and the cells spilled between rounds).
    fn stat<const N: usize>(&mut self, key: u128, s: &CellStats<N>) {
        self.u128(key);
        self.u64(s.freq);
        self.u64(s.records);
        self.i128(s.value);
        self.i128(s.weight);
        self.u8(s.ntop);
        for &x in &s.top[..s.ntop as usize] {
            self.u64(x.to_bits());
        }
    }
}

/// Little-endian reader of a payload; every read is bounds-checked (a broken payload is an
/// error, never a panic).
struct In<'a>(&'a [u8]);

impl In<'_> {
    fn take<const B: usize>(&mut self) -> Result<[u8; B]> {
        if self.0.len() < B {
            return Err(Error::Internal("roll-up payload truncated".into()));
        }
        let (a, rest) = self.0.split_at(B);
        self.0 = rest;
        Ok(a.try_into().expect("length checked"))
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take::<1>()?[0])
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take()?))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take()?))
    }
    fn i128(&mut self) -> Result<i128> {
        Ok(i128::from_le_bytes(self.take()?))
    }
    fn u128(&mut self) -> Result<u128> {
        Ok(u128::from_le_bytes(self.take()?))
    }
    /// The first [`CELL_BYTES`] of an [`Out::stat`] cell: its key, its statistics without the
    /// top list, and the number of top entries that follow.
    fn stat_head<const N: usize>(&mut self) -> Result<(u128, CellStats<N>, usize)> {
        let key = self.u128()?;
        let s = CellStats::<N> {
            freq: self.u64()?,
            records: self.u64()?,
            value: self.i128()?,
            weight: self.i128()?,
            ..Default::default()
        };
        Ok((key, s, self.u8()? as usize))
    }
    fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_bits(self.u64()?))
    }
    fn len(&mut self) -> Result<usize> {
        let n = self.u64()? as usize;
        // Every element takes at least 4 bytes: a larger count is a broken payload.
        if n > self.0.len() / 4 + 1 {
            return Err(Error::Internal(format!("roll-up payload: count {n} exceeds its bytes")));
        }
        Ok(n)
    }
}

const PAIRS: u8 = 0;
const LEAVES: u8 = 1;

/// The payload of one part: the inputs its shards need (each once), then the shards with
/// their inputs renumbered.
fn encode<const N: usize>(inputs: &Inputs<'_, N>, shards: Vec<Shard>) -> Vec<u8> {
    let mut members: Vec<u32> = shards.iter().flat_map(|s| s.idx.iter().copied()).collect();
    members.sort_unstable();
    members.dedup();
    let mut o = Out(Vec::new());
    match inputs {
        Inputs::Pairs(p) => {
            o.u8(PAIRS);
            o.u64(members.len() as u64);
            for &i in &members {
                let i = i as usize;
                o.u128(p.leaf[i]);
                o.u32(p.contributor[i]);
                let s = &p.share[i];
                o.i128(s.value);
                o.i128(s.weight);
                o.u64(s.records);
            }
        }
        Inputs::Leaves(l) => {
            o.u8(LEAVES);
            o.u64(members.len() as u64);
            for &i in &members {
                let (k, s) = &l[i as usize];
                o.stat(*k, s);
            }
        }
    }
    o.u64(shards.len() as u64);
    for s in shards {
        o.u128(s.prefix);
        o.u64(s.idx.len() as u64);
        for i in s.idx {
            o.u32(members.binary_search(&i).expect("a member") as u32);
        }
    }
    o.0
}

/// Decoded inputs of a part.
enum Decoded<const N: usize> {
    Pairs(Pairs),
    Leaves(Vec<(u128, CellStats<N>)>),
}

fn decode<const N: usize>(data: &[u8]) -> Result<(Decoded<N>, Vec<Shard>)> {
    let mut r = In(data);
    let kind = r.u8()?;
    let n = r.len()?;
    let inputs = match kind {
        PAIRS => {
            let mut p = Pairs::default();
            for _ in 0..n {
                p.leaf.push(r.u128()?);
                p.contributor.push(r.u32()?);
                p.share.push(Share { value: r.i128()?, weight: r.i128()?, records: r.u64()? });
            }
            Decoded::Pairs(p)
        }
        LEAVES => {
            let mut l = Vec::with_capacity(n);
            for _ in 0..n {
                let (k, mut s, ntop) = r.stat_head::<N>()?;
                for j in 0..ntop {
                    let x = r.f64()?;
                    if j < N {
                        s.top[j] = x;
                    }
                }
                s.ntop = ntop.min(N) as u8;
                l.push((k, s));
            }
            Decoded::Leaves(l)
        }
        k => return Err(Error::Internal(format!("roll-up payload of unknown kind {k}"))),
    };
    let shards_n = r.len()?;
    let mut shards = Vec::with_capacity(shards_n);
    for _ in 0..shards_n {
        let prefix = r.u128()?;
        let m = r.len()?;
        let mut idx = Vec::with_capacity(m);
        for _ in 0..m {
            let i = r.u32()?;
            if i as usize >= n {
                return Err(Error::Internal(format!("roll-up payload: input {i} of {n}")));
            }
            idx.push(i);
        }
        shards.push(Shard { prefix, idx });
    }
    if !r.0.is_empty() {
        return Err(Error::Internal("roll-up payload: trailing bytes".into()));
    }
    Ok((inputs, shards))
}

/// What a part's cells look like (the table's layout, fixed by the client).
#[derive(Debug, Clone)]
pub struct PartLayout {
    /// The table's hierarchies.
    pub dims: Vec<crate::hierarchy::Hierarchy>,
    /// Largest contributions kept per cell.
    pub top_n: usize,
    /// Whether the table is weighted.
    pub weighted: bool,
}

/// Rolls up the part `data` (from [`plan_parts`]) and hands its cells to `sink` in key order,
/// a chunk at a time: exactly the cells a local roll-up gives for these shards.
pub fn roll_up_part(layout: &PartLayout, data: &[u8], sink: &mut super::CellSink<'_>) -> Result<()> {
    match layout.top_n {
        0..=2 => roll_up_part_with::<2>(layout, data, sink),
        3..=4 => roll_up_part_with::<4>(layout, data, sink),
        _ => roll_up_part_with::<8>(layout, data, sink),
    }
}

fn roll_up_part_with<const N: usize>(layout: &PartLayout, data: &[u8], sink: &mut super::CellSink<'_>) -> Result<()> {
    let (inputs, shards) = decode::<N>(data)?;
    roll_up_decoded(layout, inputs, shards, sink)
}

fn roll_up_decoded<const N: usize>(
    layout: &PartLayout,
    inputs: Decoded<N>,
    shards: Vec<Shard>,
    sink: &mut super::CellSink<'_>,
) -> Result<()> {
    let lat = Lattice::new(&layout.dims)?;
    roll_up_stats(&lat, inputs, shards, &mut |rolled: Vec<Stat<N>>| {
        sink(to_cells(layout.top_n, layout.weighted, &layout.dims, &lat, rolled))
    })
}

/// The cells of `shards` over `inputs` with their statistics, handed to `chunk` in key order.
fn roll_up_stats<const N: usize>(
    lat: &Lattice,
    inputs: Decoded<N>,
    shards: Vec<Shard>,
    chunk: &mut (dyn FnMut(Vec<Stat<N>>) -> Result<()> + Send),
) -> Result<()> {
    // The source is called once: hand the shards over rather than copying their indices.
    let mut shards = Some(shards);
    let mut source = move |emit: &mut dyn FnMut(Shard)| {
        for s in shards.take().unwrap_or_default() {
            emit(s)
        }
    };
    match &inputs {
        Decoded::Pairs(p) => lattice::roll_up_pair_shards::<N>(lat, p, &mut source, SCALE_F, chunk),
        Decoded::Leaves(l) => lattice::roll_up_leaf_shards::<N>(lat, l, &mut source, chunk),
    }
}

/// Appends the chunks of `sink` calls into one [`Cells`] (tests and small tables).
pub fn collect_part(layout: &PartLayout, data: &[u8]) -> Result<Cells> {
    let mut all = Cells::empty(layout.dims.clone(), layout.top_n, layout.weighted);
    roll_up_part(layout, data, &mut |c| {
        all.append(c);
        Ok(())
    })?;
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy::{Hierarchy, HierarchySpec};

    fn dims() -> Vec<Hierarchy> {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        vec![
            Hierarchy::resolve("geo", &HierarchySpec::Levels(vec![1, 1]), &s(&["1a", "1b", "2a", "3c", "3d"])).unwrap(),
            Hierarchy::resolve("sex", &HierarchySpec::Flat, &s(&["f", "m"])).unwrap(),
            Hierarchy::resolve("age", &HierarchySpec::Levels(vec![1, 1]), &s(&["1x", "1y", "2z"])).unwrap(),
        ]
    }

    /// Parts rolled up one by one and concatenated in part order are the local roll-up, cell
    /// for cell, whatever the part size; a broken payload is an error, not a panic.
    /// Distinct (leaf cell, contributor) pairs with random values.
    fn random_pairs(dims: &[Hierarchy], lat: &Lattice, seed: u64) -> Pairs {
        let mut rng = crate::rng::Rng::new(seed);
        let leaves = |h: &Hierarchy| h.leaves().collect::<Vec<_>>();
        let ls: Vec<Vec<usize>> = dims.iter().map(leaves).collect();
        let mut pairs = Pairs::default();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..400 {
            let coords: Vec<u32> = ls.iter().map(|l| l[rng.below(l.len() as u64) as usize] as u32).collect();
            let key = lat.key(&coords);
            let c = rng.below(40) as u32;
            if seen.insert((key, c)) {
                pairs.leaf.push(key);
                pairs.contributor.push(c);
                let records = 1 + rng.below(3);
                pairs.share.push(Share { value: 1 + rng.below(10_000) as i128, weight: 0, records });
            }
        }
        pairs
    }

    /// The plan the client makes from the number of records under each leading prefix is the
    /// plan made from the pairs (same parts, same shards); the pairs routed to a part by
    /// [`parts_of`] give back exactly the part's shards with all their pairs.
    #[test]
    fn the_plan_from_counts_is_the_plan_from_the_pairs() {
        let dims = dims();
        for shard_cells in [1 << 22, 4] {
            let lat = Lattice::new(&dims).unwrap().with_shard_cells(shard_cells);
            let pairs = random_pairs(&dims, &lat, 11);
            let mut counts = std::collections::BTreeMap::<u128, u64>::new();
            for (k, s) in pairs.leaf.iter().zip(&pairs.share) {
                *counts.entry(lat.shard_prefix(*k)).or_default() += s.records;
            }
            let (prefixes, n): (Vec<u128>, Vec<u64>) = counts.into_iter().unzip();
            for part_cells in [1, 7, 50, 300, u64::MAX] {
                let mut want: Vec<Vec<ShardPairs>> = Vec::new();
                let mut planned = Vec::new();
                plan_parts::<2>(&lat, &Inputs::Pairs(&pairs), part_cells, &mut |_, p| {
                    let (Decoded::Pairs(q), shards) = decode::<2>(&p)? else { unreachable!() };
                    let of = |i: &u32| (q.leaf[*i as usize], q.contributor[*i as usize], q.share[*i as usize].value);
                    want.push(shards.iter().map(|s| (s.prefix, sorted(s.idx.iter().map(of)))).collect());
                    planned.push(p);
                    Ok(())
                })
                .unwrap();
                let starts = plan_from_counts(&lat, &prefixes, &n, part_cells);
                if part_cells == u64::MAX {
                    assert_eq!(want.len(), 1, "a small table stays in one part");
                }
                let first: Vec<u128> = want.iter().map(|p| p[0].0).collect();
                assert_eq!(starts, first, "split {}, part_cells {part_cells}", lat.split());
                for (part, shards) in want.iter().enumerate() {
                    let routed: Vec<usize> =
                        (0..pairs.len()).filter(|&i| parts_of(&lat, &starts, pairs.leaf[i]).contains(&part)).collect();
                    let keys: Vec<u128> = routed.iter().map(|&i| pairs.leaf[i]).collect();
                    let got: Vec<ShardPairs> = part_shards(&lat, &starts, part, &keys)
                        .into_iter()
                        .map(|s| {
                            let of = |j: &u32| {
                                let i = routed[*j as usize];
                                (pairs.leaf[i], pairs.contributor[i], pairs.share[i].value)
                            };
                            (s.prefix, sorted(s.idx.iter().map(of)))
                        })
                        .collect();
                    assert_eq!(&got, shards, "part {part} of part_cells {part_cells}");
                    if shard_cells == 1 << 22 {
                        // The payload made of the routed pairs rolls up to the planned part's cells.
                        let layout = PartLayout { dims: dims.clone(), top_n: 2, weighted: false };
                        let mut mine = Pairs::default();
                        for &i in routed.iter().rev() {
                            mine.leaf.push(pairs.leaf[i]);
                            mine.contributor.push(1000 - pairs.contributor[i]);
                            mine.share.push(pairs.share[i]);
                        }
                        let payload = pairs_payload(&mine, part_shards(&lat, &starts, part, &mine.leaf));
                        let cells = collect_part(&layout, &payload).unwrap();
                        assert_eq!(cells, collect_part(&layout, &planned[part]).unwrap(), "part {part}");
                    }
                }
            }
        }
    }

    /// A part routed in chunks by contributor ([`chunk_of`]), each chunk a payload of its own
    /// pairs (contributors numbered from 0 in each, pairs in another order) with the part's
    /// shards over them, rolls up to the cells of the part's single payload, for any number of
    /// chunks, empty chunks left out.
    #[test]
    fn chunks_roll_up_to_the_parts_cells() {
        let dims = dims();
        let lat = Lattice::new(&dims).unwrap();
        let layout = PartLayout { dims: dims.clone(), top_n: 2, weighted: false };
        let pairs = random_pairs(&dims, &lat, 23);
        let mut counts = std::collections::BTreeMap::<u128, u64>::new();
        for (k, s) in pairs.leaf.iter().zip(&pairs.share) {
            *counts.entry(lat.shard_prefix(*k)).or_default() += s.records;
        }
        let (prefixes, n): (Vec<u128>, Vec<u64>) = counts.into_iter().unzip();
        for part_cells in [7, 300, u64::MAX] {
            let mut planned = Vec::new();
            plan_parts::<2>(&lat, &Inputs::Pairs(&pairs), part_cells, &mut |_, p| {
                planned.push(p);
                Ok(())
            })
            .unwrap();
            let starts = plan_from_counts(&lat, &prefixes, &n, part_cells);
            for (part, payload) in planned.iter().enumerate() {
                let want = collect_part(&layout, payload).unwrap();
                // The batches handed to the writers too (their pages follow the batches).
                let mut want_batches = Vec::new();
                roll_up_part(&layout, payload, &mut |c| {
                    want_batches.push(c.len());
                    Ok(())
                })
                .unwrap();
                let routed: Vec<usize> =
                    (0..pairs.len()).filter(|&i| parts_of(&lat, &starts, pairs.leaf[i]).contains(&part)).collect();
                for chunks in [1u64, 2, 3, 4, 5, 7, 9, 64] {
                    let mut payloads = Vec::new();
                    for chunk in 0..chunks {
                        let mut mine = Pairs::default();
                        let mut ids = std::collections::HashMap::new();
                        for &i in routed.iter().rev() {
                            let text = format!("ent{}", pairs.contributor[i]);
                            if chunk_of(text.as_bytes(), chunks) != chunk {
                                continue;
                            }
                            let next = ids.len() as u32;
                            mine.leaf.push(pairs.leaf[i]);
                            mine.contributor.push(*ids.entry(text).or_insert(next));
                            mine.share.push(pairs.share[i]);
                        }
                        if !mine.is_empty() {
                            payloads.push(pairs_payload(&mine, part_shards(&lat, &starts, part, &mine.leaf)));
                        }
                    }
                    let mut got = Cells::empty(dims.clone(), 2, false);
                    let mut got_batches = Vec::new();
                    roll_up_chunks(&layout, &mut payloads.into_iter().map(Ok), &mut |c| {
                        got_batches.push(c.len());
                        got.append(c);
                        Ok(())
                    })
                    .unwrap();
                    assert_eq!(got, want, "part {part} of part_cells {part_cells} in {chunks} chunks");
                    assert_eq!(got_batches, want_batches, "part {part} of part_cells {part_cells} in {chunks} chunks");
                }
            }
        }
        // The hash spreads contributors over the chunks and never leaves the range.
        let spread: std::collections::BTreeSet<u64> =
            (0..100).map(|c| chunk_of(format!("{c}").as_bytes(), 8)).collect();
        assert_eq!(spread.len(), 8);
        assert_eq!(chunk_of(b"anything", 1), 0);
        assert_eq!(chunks_for(0, CHUNK_RECORDS), 1);
        assert_eq!(chunks_for(CHUNK_RECORDS + 1, CHUNK_RECORDS), 2);
    }

    /// A shard's prefix and its pairs (leaf, contributor, value), sorted.
    type ShardPairs = (u128, Vec<(u128, u32, i128)>);

    fn sorted<T: Ord>(x: impl Iterator<Item = T>) -> Vec<T> {
        let mut v: Vec<T> = x.collect();
        v.sort();
        v
    }

    #[test]
    fn parts_concatenate_to_the_local_roll_up() {
        let dims = dims();
        let lat = Lattice::new(&dims).unwrap().with_shard_cells(4);
        let pairs = random_pairs(&dims, &lat, 5);
        let layout = PartLayout { dims: dims.clone(), top_n: 2, weighted: false };
        let mut local = Cells::empty(dims.clone(), 2, false);
        lattice::roll_up_pairs::<2>(&lat, &pairs, SCALE_F, &mut |r| {
            local.append(to_cells(2, false, &dims, &lat, r));
            Ok(())
        })
        .unwrap();
        // The executor builds its lattice with the default shard size: plan with it too.
        let lat = Lattice::new(&dims).unwrap();
        for part_cells in [1, 7, 50, u64::MAX] {
            let mut payloads = Vec::new();
            let n = plan_parts::<2>(&lat, &Inputs::Pairs(&pairs), part_cells, &mut |i, p| {
                assert_eq!(i, payloads.len());
                payloads.push(p);
                Ok(())
            })
            .unwrap();
            assert_eq!(n, payloads.len());
            let mut got = Cells::empty(dims.clone(), 2, false);
            for p in &payloads {
                got.append(collect_part(&layout, p).unwrap());
            }
            assert_eq!(got, local, "part_cells {part_cells} ({n} parts)");
            if part_cells == 1 {
                assert!(n > 3, "small parts cut the table: {n}");
                assert!(collect_part(&layout, &payloads[0][..payloads[0].len() - 3]).is_err());
            }
        }
    }
}
