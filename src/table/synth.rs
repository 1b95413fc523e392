//! Seeded synthetic hierarchical tables for tests and benchmarks.
//!
//! Why: suppression methods need many tables of known structure (flat, hierarchical, with
//! trivial single-child levels) that are additive by construction. Leaf cells are drawn
//! sparsely with heavy-tailed values (log-normal per contributor), marginals are rolled up
//! one dimension at a time (so a 7-dimensional million-cell table builds in seconds), and
//! primaries follow a frequency rule with protection levels as a share of the value.

use super::relations::FastMap;
use super::{Cell, CellStatus, Dimension, Table, TableError};
use crate::rng::Rng;

/// A dimension with `branching[k]` children per node at depth `k` (a `1` makes a trivial level).
pub fn hierarchy(name: &str, branching: &[usize]) -> Dimension {
    let mut codes = vec!["Total".to_string()];
    let mut parent = vec![None];
    let mut level = vec![0usize];
    for &b in branching {
        let mut next = Vec::new();
        for &p in &level {
            for k in 0..b {
                codes.push(format!("{}{}", codes[p].trim_start_matches("Total"), k + 1));
                parent.push(Some(p));
                next.push(codes.len() - 1);
            }
        }
        level = next;
    }
    Dimension { name: name.to_string(), codes, parent }
}

/// Parameters of [`generate`].
#[derive(Debug, Clone, PartialEq)]
pub struct SynthSpec {
    /// Branching per level, per dimension.
    pub dims: Vec<Vec<usize>>,
    /// Probability that a leaf combination is nonempty.
    pub density: f64,
    /// Mean number of contributors of a nonempty leaf (geometric, ≥ 1).
    pub mean_freq: f64,
    /// Cells with fewer contributors than this are primary.
    pub min_freq: u64,
    /// Protection levels (lower = upper) as a share of the value.
    pub protection: f64,
    /// Seed.
    pub seed: u64,
}

/// Generates an additive table (see the module doc).
pub fn generate(spec: &SynthSpec) -> Result<Table, TableError> {
    let dims: Vec<Dimension> = spec.dims.iter().enumerate().map(|(k, b)| hierarchy(&format!("v{k}"), b)).collect();
    let children: Vec<Vec<Vec<usize>>> = dims.iter().map(|d| d.children()).collect();
    let leaves: Vec<Vec<u32>> =
        children.iter().map(|ch| (0..ch.len()).filter(|&n| ch[n].is_empty()).map(|n| n as u32).collect()).collect();
    let mut rng = Rng::new(spec.seed);
    let total: usize = leaves.iter().map(|l| l.len()).product();
    let mut map: FastMap<Vec<u32>, (f64, u64)> = FastMap::default();
    let mut coord = vec![0u32; dims.len()];
    for mut idx in 0..total {
        for (d, l) in leaves.iter().enumerate() {
            coord[d] = l[idx % l.len()];
            idx /= l.len();
        }
        if rng.next_f64() >= spec.density {
            continue;
        }
        let mut f = 1u64;
        while rng.next_f64() > 1.0 / spec.mean_freq.max(1.0) {
            f += 1;
        }
        let v: f64 = (0..f).map(|_| (4.0 + 1.2 * rng.normal()).exp().round() + 1.0).sum();
        map.insert(coord.clone(), (v, f));
    }
    for (d, dim) in dims.iter().enumerate() {
        let mut add: FastMap<Vec<u32>, (f64, u64)> = FastMap::default();
        for (c, &(v, f)) in &map {
            let mut cc = c.clone();
            let mut n = c[d] as usize;
            while let Some(p) = dim.parent[n] {
                cc[d] = p as u32;
                let e = add.entry(cc.clone()).or_insert((0.0, 0));
                e.0 += v;
                e.1 += f;
                n = p;
            }
        }
        for (c, (v, f)) in add {
            let e = map.entry(c).or_insert((0.0, 0));
            e.0 += v;
            e.1 += f;
        }
    }
    let mut cells: Vec<Cell> = map
        .into_iter()
        .map(|(c, (v, f))| {
            let mut cell = Cell::new(c, v, f);
            if f < spec.min_freq {
                cell.status = CellStatus::Primary;
                cell.lpl = spec.protection * v;
                cell.upl = spec.protection * v;
            }
            cell
        })
        .collect();
    cells.sort_by(|a, b| a.coord.cmp(&b.coord));
    Table::new(dims, cells)
}
