//! The table's geometry: per dimension and node, the balanced one-dimensional vectors through
//! that node, and the hypercube searches built on them ([`Geometry::hypercubes`],
//! [`Geometry::cheapest_cube`], [`Geometry::ancestor_cube`], [`Geometry::neighbourhood`]).
//!
//! Why a module of its own: a hypercube is a tensor product of such vectors, one per
//! dimension, so every relation of the table is balanced by it (see [`super::witness`], which
//! turns cubes into verified attacker moves). The geometry depends on the table alone — not on
//! the problem's bounds or pattern, which callers pass in — so [`super::problem::Problem`]
//! can hold one without a circle.

use crate::table::{Dimension, Table};

/// One-dimensional balanced vectors kept per (dimension, node), smallest first.
const MAX_OPTIONS: usize = 512;

/// A hypercube as `(cell, ±1)` pairs (the target first where it is built for one).
pub(crate) type Cube = Vec<(u32, i8)>;

/// A partial hypercube: `(packed key, cell, sign)` per cell.
type Partial = Vec<(u128, u32, i8)>;

/// The table's geometry for proposing witnesses: per dimension and node, the balanced
/// one-dimensional vectors through that node (without the node itself, which carries `+1`).
#[derive(Debug, Clone)]
pub(crate) struct Geometry<'a> {
    table: &'a Table,
    options: Options,
    /// Node `a` of dimension `d` is node `start[d] + a` of `options`.
    start: Vec<usize>,
}

/// Every node's one-dimensional vectors in one arena: vector `o` is
/// `entries[opt_start[o]..opt_start[o + 1]]`, node `x`'s vectors are `node_start[x]..node_start[x + 1]`.
///
/// Why not a vector per option: a 3-level geography (~2,900 nodes, up to 512 vectors each) held
/// 0.8 GB in separately allocated vectors (their headers, allocator rounding and doubling
/// growth) for a 1 M-cell census table, measured with heaptrack; the arena holds the entries only.
#[derive(Debug, Clone, Default)]
struct Options {
    entries: Vec<(u32, i8)>,
    opt_start: Vec<usize>,
    node_start: Vec<usize>,
}

impl Options {
    /// Appends the next node's vectors.
    fn push_node(&mut self, opts: Vec<Vec<(u32, i8)>>) {
        if self.node_start.is_empty() {
            self.node_start.push(0);
            self.opt_start.push(0);
        }
        for o in opts {
            self.entries.extend(o);
            self.opt_start.push(self.entries.len());
        }
        self.node_start.push(self.opt_start.len() - 1);
    }

    /// Vector `o` (global index).
    fn get(&self, o: usize) -> &[(u32, i8)] {
        &self.entries[self.opt_start[o]..self.opt_start[o + 1]]
    }

    /// Node `x`'s vectors (global indices), smallest first.
    fn of(&self, x: usize) -> std::ops::Range<usize> {
        self.node_start[x]..self.node_start[x + 1]
    }
}

/// All paths from `x` down to a leaf (one child per level) with sign `s`, at most `max`.
fn down_paths(ch: &[Vec<usize>], x: usize, s: i8, max: usize) -> Vec<Vec<(u32, i8)>> {
    if ch[x].is_empty() {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for &c in &ch[x] {
        for rest in down_paths(ch, c, s, max) {
            if out.len() >= max {
                return out;
            }
            let mut v = vec![(c as u32, s)];
            v.extend(rest);
            out.push(v);
        }
    }
    out
}

/// Balanced one-dimensional vectors with `+1` at `a` (see the module doc), smallest first.
fn node_options(dim: &Dimension, ch: &[Vec<usize>], a: usize) -> Vec<Vec<(u32, i8)>> {
    let downs_a = down_paths(ch, a, 1, MAX_OPTIONS);
    let mut out: Vec<Vec<(u32, i8)>> = Vec::new();
    let mut chain: Vec<(u32, i8)> = Vec::new();
    let mut top = a;
    while out.len() < MAX_OPTIONS {
        let Some(par) = dim.parent[top] else {
            for d in &downs_a {
                out.push(chain.iter().chain(d).copied().collect());
            }
            break;
        };
        for &b in &ch[par] {
            if b == top {
                continue;
            }
            for db in down_paths(ch, b, -1, MAX_OPTIONS) {
                for d in &downs_a {
                    let mut v: Vec<(u32, i8)> = chain.iter().chain(d).copied().collect();
                    v.push((b as u32, -1));
                    v.extend(&db);
                    out.push(v);
                }
            }
        }
        chain.push((par as u32, 1));
        top = par;
    }
    // The paths up to the root (all `+1`) come last and the vectors of a wide hierarchy's
    // siblings fill the list first: when the list is cut, keep some of them anyway, since
    // for a sparse cell they are often the only vectors whose cubes exist (session 96).
    let mut full: Vec<Vec<(u32, i8)>> = Vec::new();
    if out.len() > MAX_OPTIONS || dim.parent[top].is_some() {
        // `chain` climbed from `a` to `top`; go on from there to the root.
        let mut up = chain;
        let mut x = top;
        while let Some(par) = dim.parent[x] {
            up.push((par as u32, 1));
            x = par;
        }
        full = downs_a.iter().take(FULL_PATHS).map(|d| up.iter().chain(d).copied().collect()).collect();
        out.retain(|v| !full.contains(v));
    }
    out.sort_by_key(|v| v.len());
    out.truncate(MAX_OPTIONS - full.len());
    if !full.is_empty() {
        out.extend(full);
        out.sort_by_key(|v| v.len());
    }
    out
}

/// Paths up to the root kept per node whose vectors are cut at [`MAX_OPTIONS`]. Measured on
/// c4-geo3 (session 96): 8 paths 78.45 % of the value suppressed (kept on every node in that
/// build), 24 78.38 %, 64 76.47 %, 512 76.76 % (which leaves the widest nodes no sibling
/// vectors), against 80.44 % without.
const FULL_PATHS: usize = 64;

impl<'a> Geometry<'a> {
    /// Geometry of `table` (one pass over its dimensions).
    pub fn new(table: &'a Table) -> Self {
        let mut options = Options::default();
        let mut start = Vec::new();
        let mut nodes = 0;
        for dim in table.dims() {
            start.push(nodes);
            let ch = dim.children();
            for a in 0..dim.codes.len() {
                options.push_node(node_options(dim, &ch, a));
            }
            nodes += dim.codes.len();
        }
        options.entries.shrink_to_fit();
        Self { table, options, start }
    }

    /// Coordinate of cell `c` (for diagnostics).
    pub fn coord(&self, c: u32) -> &[u32] {
        &self.table.cells()[c as usize].coord
    }

    /// Per dimension, the depth of each node in its hierarchy (0 = the total), from which
    /// [`Self::levels`] reads a cell's level combination.
    pub fn depths(&self) -> Vec<Vec<u32>> {
        self.table.dims().iter().map(|d| d.depths()).collect()
    }

    /// The level combination of cell `c`: per dimension the depth of its coordinate
    /// (`depths` from [`Self::depths`]).
    pub fn levels<'g>(&'g self, depths: &'g [Vec<u32>], c: u32) -> impl Iterator<Item = u32> + 'g {
        self.coord(c).iter().zip(depths).map(|(&x, d)| d[x as usize])
    }

    /// The cube of every cell between a leaf-level descendant `L` of `t` and the grand
    /// total: per dimension the path from `L`'s node up to the root, all with `+1` (balanced:
    /// each node on a path has exactly one child on it). Every such cell is a marginal of
    /// `L`, so it exists and its value is at least `L`'s: a cube that needs no sibling cell,
    /// for sensitive cells whose neighbourhood is too sparse or too small for any cheaper
    /// cube. `L` is the descendant of largest value among the first `max_lookups`
    /// coordinates tried. Returns the cost (`accept` summed; `None` if a cell is refused).
    pub fn ancestor_cube(
        &self,
        t: u32,
        accept: &dyn Fn(usize) -> Option<f64>,
        max_lookups: usize,
    ) -> Option<(f64, Vec<(u32, i8)>)> {
        let coord = self.coord(t).to_vec();
        let dims = self.table.dims();
        let leaves: Vec<Vec<u32>> = dims
            .iter()
            .zip(&coord)
            .map(|(dim, &a)| {
                let ch = dim.children();
                let mut stack = vec![a as usize];
                let mut out = Vec::new();
                while let Some(x) = stack.pop() {
                    if ch[x].is_empty() {
                        out.push(x as u32);
                    } else {
                        stack.extend(ch[x].iter().rev());
                    }
                }
                out
            })
            .collect();
        let idx = self.table.index();
        let cells = self.table.cells();
        let mut best: Option<(f64, Vec<u32>)> = None;
        let mut at = vec![0usize; leaves.len()];
        let mut c = coord.clone();
        let mut lookups = 0;
        while lookups < max_lookups {
            for (d, &k) in at.iter().enumerate() {
                c[d] = leaves[d][k];
            }
            lookups += 1;
            if let Some(i) = idx.find(&c) {
                if best.as_ref().is_none_or(|(v, _)| cells[i].value > *v) {
                    best = Some((cells[i].value, c.clone()));
                }
            }
            if !advance(&mut at, |d| leaves[d].len()) {
                break;
            }
        }
        let (_, leaf) = best?;
        let paths: Vec<Vec<u32>> = dims
            .iter()
            .zip(&leaf)
            .map(|(dim, &l)| {
                let mut path = vec![l];
                let mut x = l as usize;
                while let Some(par) = dim.parent[x] {
                    path.push(par as u32);
                    x = par;
                }
                path
            })
            .collect();
        let mut cube = vec![(t, 1i8)];
        let mut cost = 0.0;
        let mut at = vec![0usize; paths.len()];
        loop {
            for (d, &k) in at.iter().enumerate() {
                c[d] = paths[d][k];
            }
            let i = idx.find(&c)?;
            if i as u32 != t {
                cost += accept(i)?;
                cube.push((i as u32, 1));
            }
            if !advance(&mut at, |d| paths[d].len()) {
                break;
            }
        }
        Some((cost, cube))
    }

    /// Existing cells of a box around cell `t`: per dimension a list of nodes (`t`'s own,
    /// its parent, its siblings, then the descendants of those breadth-first), each list
    /// grown round-robin while the number of coordinates in the product stays within
    /// `max_coords`. Why: an attacker LP over such a box, with every other cell held at its
    /// value, is a restriction of the attacker (any optimum is a valid witness) that follows
    /// the table's geometry: it finds moves through cells that exist even where no tensor
    /// product of one-dimensional vectors does (sparse tables, marginals of few contributors).
    pub fn neighbourhood(&self, t: u32, max_coords: usize) -> Vec<u32> {
        let coord = self.coord(t).to_vec();
        let lists: Vec<Vec<u32>> = self
            .table
            .dims()
            .iter()
            .zip(&coord)
            .map(|(dim, &a)| {
                let ch = dim.children();
                // The node and its subtree, then up the ancestor chain: the siblings of each
                // node on the chain (with their subtrees) before its parent.
                let mut order: Vec<usize> = Vec::new();
                let push_tree = |order: &mut Vec<usize>, root: usize| {
                    let start = order.len();
                    order.push(root);
                    let mut k = start;
                    while k < order.len() {
                        let x = order[k];
                        k += 1;
                        order.extend(ch[x].iter().copied());
                    }
                };
                push_tree(&mut order, a as usize);
                let mut x = a as usize;
                while let Some(par) = dim.parent[x] {
                    for &b in &ch[par] {
                        if b != x {
                            push_tree(&mut order, b);
                        }
                    }
                    order.push(par);
                    x = par;
                }
                order.into_iter().map(|x| x as u32).collect()
            })
            .collect();
        let mut sizes = vec![1usize; lists.len()];
        let mut coords = 1usize;
        loop {
            let mut grew = false;
            for (d, l) in lists.iter().enumerate() {
                let next = coords / sizes[d] * (sizes[d] + 1);
                if sizes[d] < l.len() && next <= max_coords {
                    coords = next;
                    sizes[d] += 1;
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        let idx = self.table.index();
        let mut out = Vec::new();
        let mut at = vec![0usize; lists.len()];
        let mut c = coord.clone();
        loop {
            for (d, &k) in at.iter().enumerate() {
                c[d] = lists[d][k];
            }
            if let Some(i) = idx.find(&c) {
                out.push(i as u32);
            }
            if !advance(&mut at, |d| sizes[d]) {
                break;
            }
        }
        out.sort_unstable();
        out
    }

    /// Up to `max` hypercubes through suppressed cell `t` whose whole support exists and is
    /// suppressed in `sup`, as `(cell, ±1)` lists with `t` first; at most `budget` cell
    /// look-ups. Depth-first over dimensions, smallest one-dimensional vectors first.
    pub fn hypercubes(&self, sup: &[bool], t: u32, max: usize, budget: usize) -> Vec<Vec<(u32, i8)>> {
        let idx = self.table.index();
        let coord = &self.table.cells()[t as usize].coord;
        let mut st = Search { sup, found: Vec::new(), max, budget };
        let base = vec![(idx.key(coord), t, 1i8)];
        self.dfs(&mut st, coord, 0, base);
        st.found
    }

    fn dfs(&self, st: &mut Search, coord: &[u32], d: usize, partial: Vec<(u128, u32, i8)>) {
        if d == coord.len() {
            st.found.push(partial.iter().map(|&(_, c, s)| (c, s)).collect());
            return;
        }
        let a = coord[d];
        let sup = st.sup;
        let ok = |c: usize| sup[c].then_some(0.0);
        let mut memo: Vec<Option<Option<Column>>> = vec![None; self.table.dims()[d].codes.len()];
        'opt: for opt in self.options.of(self.start[d] + a as usize).map(|o| self.options.get(o)) {
            if st.found.len() >= st.max || st.budget == 0 {
                return;
            }
            for &(node, _) in opt {
                let col = memo[node as usize]
                    .get_or_insert_with(|| self.column(&mut st.budget, &partial, d, a, node, &ok, f64::INFINITY));
                if col.is_none() {
                    if st.budget == 0 {
                        return;
                    }
                    continue 'opt;
                }
            }
            let next = extend(&partial, opt, &memo);
            self.dfs(st, coord, d + 1, next);
        }
    }

    /// The cells of `partial` with dimension `d` moved from node `a` to `node`, when all exist
    /// and pass `accept`, with their summed cost; `None` when one does not, when the cost
    /// reaches `limit`, or when the `budget` of look-ups runs out (then set to 0). Why: the
    /// one-dimensional vectors of a node share most of their nodes, so the searches evaluate
    /// each (partial cube, node) column once instead of once per vector — on marginal cells
    /// of deep hierarchies (hundreds of vectors, cubes of hundreds of cells) this is what
    /// keeps the search within its budget.
    #[allow(clippy::too_many_arguments)]
    fn column(
        &self,
        budget: &mut usize,
        partial: &[(u128, u32, i8)],
        d: usize,
        a: u32,
        node: u32,
        accept: &dyn Fn(usize) -> Option<f64>,
        limit: f64,
    ) -> Option<Column> {
        let idx = self.table.index();
        let mut cells = Vec::with_capacity(partial.len());
        let mut cost = 0.0;
        for &(key, _, _) in partial {
            if *budget == 0 {
                return None;
            }
            *budget -= 1;
            let k2 = idx.replace(key, d, a, node);
            let c = idx.get(k2)?;
            cost += accept(c)?;
            if cost >= limit {
                return None;
            }
            cells.push((k2, c as u32));
        }
        Some((cost, cells))
    }
}

/// One evaluated column of a partial cube (see [`Geometry::column`]): cost and `(key, cell)`
/// per cell of the partial cube, in its order.
type Column = (f64, Vec<(u128, u32)>);

/// `partial` extended by the one-dimensional vector `opt` whose columns are all in `memo`.
fn extend(partial: &[(u128, u32, i8)], opt: &[(u32, i8)], memo: &[Option<Option<Column>>]) -> Partial {
    let mut next = partial.to_vec();
    for &(node, s2) in opt {
        let Some(Some((_, col))) = &memo[node as usize] else { unreachable!("column evaluated before extending") };
        next.extend(col.iter().zip(partial).map(|(&(k2, c), &(_, _, s))| (k2, c, s * s2)));
    }
    next
}

/// State of [`Geometry::cheapest_cube`].
struct CostSearch<'s> {
    accept: &'s (dyn Fn(usize) -> Option<f64> + Sync),
    best: Option<(f64, Vec<(u32, i8)>)>,
    budget: usize,
    beam: usize,
    /// Also keep each dimension's cheapest extension up the ancestor chain (all `+1`).
    climb: bool,
}

/// Cheapest candidates kept per dimension in [`Geometry::cheapest_cube`].
const BEAM: usize = 3;

impl Geometry<'_> {
    /// The cheapest hypercube through cell `t` (found within `budget` look-ups) whose other
    /// cells all exist and pass `accept`, which returns the cost of adding a cell to the
    /// pattern (0 when it is already suppressed) or `None` when the cell may not be used.
    /// Depth-first over dimensions, the [`BEAM`] cheapest one-dimensional extensions first,
    /// pruned by the best cost found so far.
    pub fn cheapest_cube(
        &self,
        t: u32,
        accept: &(dyn Fn(usize) -> Option<f64> + Sync),
        budget: usize,
    ) -> Option<(f64, Vec<(u32, i8)>)> {
        self.cheapest_cube_beam(t, accept, budget, BEAM)
    }

    /// [`Self::cheapest_cube`] that also follows, in every dimension, the cheapest extension up
    /// the ancestor chain beside the beam. Why: on a sparse table the cheap sibling extensions
    /// of the first dimensions often lead to cells that do not exist in the next ones, and the
    /// beam then finds nothing; a cube that climbs in some dimensions and turns to a sibling in
    /// others often exists (where a cell exists, so do all its marginals) and is much cheaper
    /// than the ancestor cube, which climbs in all of them up to the grand total.
    pub fn climbing_cube(
        &self,
        t: u32,
        accept: &(dyn Fn(usize) -> Option<f64> + Sync),
        budget: usize,
    ) -> Option<(f64, Vec<(u32, i8)>)> {
        self.search_cost(CostSearch { accept, best: None, budget, beam: BEAM, climb: true }, t)
    }

    /// [`Self::cheapest_cube`] keeping the `beam` cheapest one-dimensional extensions per
    /// dimension (a wider search for tables small enough to afford it).
    pub fn cheapest_cube_beam(
        &self,
        t: u32,
        accept: &(dyn Fn(usize) -> Option<f64> + Sync),
        budget: usize,
        beam: usize,
    ) -> Option<(f64, Vec<(u32, i8)>)> {
        self.search_cost(CostSearch { accept, best: None, budget, beam: beam.max(1), climb: false }, t)
    }

    /// Runs the search `st` from cell `t` alone; its best cube.
    fn search_cost(&self, mut st: CostSearch, t: u32) -> Option<(f64, Vec<(u32, i8)>)> {
        let coord = &self.table.cells()[t as usize].coord;
        let base = vec![(self.table.index().key(coord), t, 1i8)];
        self.dfs_cost(&mut st, coord, 0, base, 0.0);
        st.best
    }

    fn dfs_cost(&self, st: &mut CostSearch, coord: &[u32], d: usize, partial: Vec<(u128, u32, i8)>, cost: f64) {
        if d == coord.len() {
            if st.best.as_ref().is_none_or(|(b, _)| cost < *b) {
                st.best = Some((cost, partial.iter().map(|&(_, c, s)| (c, s)).collect()));
            }
            return;
        }
        let a = coord[d];
        let bound = st.best.as_ref().map_or(f64::INFINITY, |(b, _)| *b);
        let accept = st.accept;
        let opts = self.options.of(self.start[d] + a as usize);
        let mut memo: Vec<Option<Option<Column>>> = vec![None; self.table.dims()[d].codes.len()];
        let mut picks: Vec<(f64, usize)> = Vec::new();
        let mut climb: Option<(f64, usize)> = None;
        'opt: for o in opts {
            let opt = self.options.get(o);
            let mut add = 0.0;
            for &(node, _) in opt {
                if st.budget == 0 {
                    break 'opt;
                }
                let col = memo[node as usize]
                    .get_or_insert_with(|| self.column(&mut st.budget, &partial, d, a, node, accept, bound - cost));
                let Some((x, _)) = col else { continue 'opt };
                add += *x;
                if cost + add >= bound {
                    continue 'opt;
                }
            }
            if st.climb && opt.iter().all(|&(_, s)| s > 0) && climb.is_none_or(|(c, _)| add < c) {
                climb = Some((add, o));
            }
            picks.push((add, o));
        }
        picks.sort_by(|a, b| a.0.total_cmp(&b.0));
        picks.truncate(st.beam);
        if let Some(c) = climb {
            if !picks.iter().any(|&(_, o)| o == c.1) {
                picks.push(c);
            }
        }
        for (add, o) in picks {
            if st.best.as_ref().is_none_or(|(b, _)| cost + add < *b) {
                let next = extend(&partial, self.options.get(o), &memo);
                self.dfs_cost(st, coord, d + 1, next, cost + add);
            }
        }
    }
}

/// Advances the mixed-radix counter `at` (digit `d` runs over `0..len(d)`, the first digit
/// fastest); `false` once every combination has been visited.
fn advance(at: &mut [usize], len: impl Fn(usize) -> usize) -> bool {
    for (d, x) in at.iter_mut().enumerate() {
        *x += 1;
        if *x < len(d) {
            return true;
        }
        *x = 0;
    }
    false
}
struct Search<'s> {
    sup: &'s [bool],
    found: Vec<Vec<(u32, i8)>>,
    max: usize,
    budget: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hierarchy `Total → regions → departments → communes`, `width` children per node
    /// (only the first region has `width` departments; the second has one of one commune).
    fn wide(width: usize) -> Dimension {
        let mut codes = vec!["Total".to_string(), "R1".to_string(), "R2".to_string()];
        let mut parent = vec![None, Some(0), Some(0)];
        for d in 0..width {
            codes.push(format!("D{d}"));
            parent.push(Some(1));
        }
        codes.push("D_R2".to_string());
        parent.push(Some(2));
        for d in 0..width {
            for c in 0..width {
                codes.push(format!("C{d}_{c}"));
                parent.push(Some(3 + d));
            }
        }
        codes.push("C_R2".to_string());
        parent.push(Some(3 + width));
        Dimension { name: "geo".to_string(), codes, parent }
    }

    /// A commune's siblings at the department and region levels give more vectors than
    /// `MAX_OPTIONS` before its path to the root is reached; the path (all `+1`) is kept
    /// anyway, every vector is balanced, and a narrow hierarchy's list is the complete one.
    #[test]
    fn node_options_keep_the_path_to_the_root_when_cut() {
        for (width, cut) in [(30, true), (4, false)] {
            let dim = wide(width);
            let ch = dim.children();
            let a = dim.codes.iter().position(|c| c == "C0_0").unwrap();
            let opts = node_options(&dim, &ch, a);
            assert!(opts.len() <= MAX_OPTIONS);
            assert_eq!(opts.len() == MAX_OPTIONS, cut, "width {width}: {} vectors", opts.len());
            let up: Vec<(u32, i8)> = vec![(3, 1), (1, 1), (0, 1)];
            assert!(opts.contains(&up), "width {width}: no path to the root");
            for o in &opts {
                // Balanced: every node's value equals its children's sum (`a` carries +1).
                let mut v = vec![0i32; dim.codes.len()];
                v[a] = 1;
                for &(x, s) in o {
                    v[x as usize] += s as i32;
                }
                for (x, kids) in ch.iter().enumerate().filter(|(_, k)| !k.is_empty()) {
                    assert_eq!(v[x], kids.iter().map(|&k| v[k]).sum::<i32>(), "width {width}: {o:?} at {x}");
                }
            }
        }
    }
}
