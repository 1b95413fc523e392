//! Combinatorial witnesses: attacker tables read off the table's geometry and verified
//! exactly, so most (sensitive cell, direction) pairs of an audit need no LP.
//!
//! Why: a cell is protected upwards by `UPL` as soon as *one* feasible attacker table has
//! `z_t ≥ UPL` (`z = y − a`); an LP is only one way to find such a point. In a hierarchical
//! table the natural ones are tensor products `h = v_1 ⊗ … ⊗ v_k` of one-dimensional vectors
//! `v_j ∈ {−1, 0, 1}^{nodes of dim j}` with `v_j(a_j) = 1` that balance every relation of
//! dimension `j` (`v(node) = Σ v(children)`): e.g. `+1` on the target's node and `−1` on a
//! sibling, extended down one child path below each non-leaf and optionally up the ancestor
//! chain. Every relation of the table is then balanced by `h` (its dimension's factor sums to
//! zero), so `δ·h` is an attacker move whenever all cells of `h`'s support exist and are
//! suppressed and `δ` respects the bounds — the classical hypercube of GHMITER/tau-Argus, with
//! hierarchies. A witness is a sum `Σ δ_k h_k` of such integer vectors found greedily.
//!
//! Soundness does not rest on the search: [`verify`] checks a witness against the problem
//! alone — every support cell suppressed, every relation touching the support balanced in
//! exact integer arithmetic for each `h_k`, every cell within its bounds for the summed move —
//! and returns the reach `dir·z_t` it proves. The search only needs the geometry to propose
//! candidates; a wrong proposal is refused, and the pair goes to the LP audit.

use crate::table::relations::FastMap;
use crate::table::{Dimension, Table};

use super::problem::Problem;

/// One-dimensional balanced vectors kept per (dimension, node), smallest first.
const MAX_OPTIONS: usize = 512;

/// A hypercube as `(cell, ±1)` pairs (the target first where it is built for one).
pub(crate) type Cube = Vec<(u32, i8)>;

/// A verified move `(cell, value)` pairs and the reach it proves, per direction.
pub(crate) type Certified = [Option<(Vec<(u32, f64)>, f64)>; 2];

/// A partial hypercube: `(packed key, cell, sign)` per cell.
type Partial = Vec<(u128, u32, i8)>;

/// A proposed attacker move `z = Σ δ_k · h_k`, `h_k` integer vectors over cells.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Witness {
    /// `(δ_k, h_k)` with `h_k` as `(cell, coefficient)` pairs.
    pub parts: Vec<(f64, Vec<(u32, i8)>)>,
}

impl Witness {
    /// The move `z` as sparse `(cell, value)` pairs (cell order).
    pub fn moves(&self) -> Vec<(u32, f64)> {
        let mut z: FastMap<u32, f64> = FastMap::default();
        for (d, h) in &self.parts {
            for &(c, s) in h {
                *z.entry(c).or_insert(0.0) += d * s as f64;
            }
        }
        let mut out: Vec<(u32, f64)> = z.into_iter().filter(|(_, v)| *v != 0.0).collect();
        out.sort_unstable_by_key(|(c, _)| *c);
        out
    }
}

/// Checks witness `w` for target `t` in direction `dir` (±1) against the problem and the
/// pattern `sup`; returns the proven reach `dir·z_t`, or `None` when any check fails:
/// a nonfinite or zero `δ`, a repeated, out-of-range or published cell, a relation touching a
/// part's support whose integer sum is not zero, a non-±1 relation coefficient, or a cell
/// moved outside its attacker bounds.
pub(crate) fn verify(p: &Problem, sup: &[bool], w: &Witness, t: u32, dir: f64) -> Option<f64> {
    if !w.parts.iter().all(|(_, h)| balanced(p, sup, h)) {
        return None;
    }
    reach_within_bounds(p, w, t, dir)
}

/// Whether integer vector `h` is an attacker direction on pattern `sup`: nonempty, every
/// cell in range, suppressed and listed once with a nonzero coefficient, and every relation
/// touching it balanced in exact integer arithmetic (±1 relation coefficients only).
pub(crate) fn balanced(p: &Problem, sup: &[bool], h: &[(u32, i8)]) -> bool {
    if h.is_empty() {
        return false;
    }
    let mut coef: FastMap<u32, i64> = FastMap::default();
    for &(c, s) in h {
        if c as usize >= p.n() || !sup[c as usize] || s == 0 || coef.insert(c, s as i64).is_some() {
            return false;
        }
    }
    let mut seen: FastMap<u32, ()> = FastMap::default();
    for &(c, _) in h {
        for &r in p.rel.of_cell(c as usize) {
            if seen.insert(r, ()).is_some() {
                continue;
            }
            let mut sum = 0i64;
            for (m, a) in p.rel.terms(r as usize) {
                let k = if a == 1.0 {
                    1
                } else if a == -1.0 {
                    -1
                } else {
                    return false;
                };
                sum += k * coef.get(&m).copied().unwrap_or(0);
            }
            if sum != 0 {
                return false;
            }
        }
    }
    true
}

/// The reach `dir·z_t` of `w` when every step is finite and nonzero and the summed move keeps
/// every cell within its attacker bounds; the parts must already be known [`balanced`].
pub(crate) fn reach_within_bounds(p: &Problem, w: &Witness, t: u32, dir: f64) -> Option<f64> {
    let mut z: FastMap<u32, f64> = FastMap::default();
    for (delta, h) in &w.parts {
        if !delta.is_finite() || *delta == 0.0 || h.is_empty() {
            return None;
        }
        for &(c, s) in h {
            *z.entry(c).or_insert(0.0) += delta * s as f64;
        }
    }
    for (&c, &v) in &z {
        let c = c as usize;
        // Written so that a NaN fails.
        if !(v <= p.up_gap[c] && -v <= p.lo_gap[c]) {
            return None;
        }
    }
    let reach = dir * z.get(&t).copied().unwrap_or(0.0);
    reach.is_finite().then_some(reach)
}

/// The table's geometry for proposing witnesses: per dimension and node, the balanced
/// one-dimensional vectors through that node (without the node itself, which carries `+1`).
#[derive(Debug, Clone)]
pub(crate) struct Geometry<'a> {
    table: &'a Table,
    options: Vec<Vec<Vec<(u32, i8)>>>,
    /// `options[start[d] + node]`.
    start: Vec<usize>,
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
    out.sort_by_key(|v| v.len());
    out.truncate(MAX_OPTIONS);
    out
}

impl<'a> Geometry<'a> {
    /// Geometry of `table` (one pass over its dimensions).
    pub fn new(table: &'a Table) -> Self {
        let mut options = Vec::new();
        let mut start = Vec::new();
        for dim in table.dims() {
            start.push(options.len());
            let ch = dim.children();
            for a in 0..dim.codes.len() {
                options.push(node_options(dim, &ch, a));
            }
        }
        Self { table, options, start }
    }

    /// Coordinate of cell `c` (for diagnostics).
    pub fn coord(&self, c: u32) -> &[u32] {
        &self.table.cells()[c as usize].coord
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
        'opt: for opt in &self.options[self.start[d] + a as usize] {
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

    /// [`Self::cheapest_cube`] keeping the `beam` cheapest one-dimensional extensions per
    /// dimension (a wider search for tables small enough to afford it).
    pub fn cheapest_cube_beam(
        &self,
        t: u32,
        accept: &(dyn Fn(usize) -> Option<f64> + Sync),
        budget: usize,
        beam: usize,
    ) -> Option<(f64, Vec<(u32, i8)>)> {
        let coord = &self.table.cells()[t as usize].coord;
        let mut st = CostSearch { accept, best: None, budget, beam: beam.max(1) };
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
        let opts = &self.options[self.start[d] + a as usize];
        let mut memo: Vec<Option<Option<Column>>> = vec![None; self.table.dims()[d].codes.len()];
        let mut picks: Vec<(f64, usize)> = Vec::new();
        'opt: for (o, opt) in opts.iter().enumerate() {
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
            picks.push((add, o));
        }
        picks.sort_by(|a, b| a.0.total_cmp(&b.0));
        picks.truncate(st.beam);
        for (add, o) in picks {
            if st.best.as_ref().is_none_or(|(b, _)| cost + add < *b) {
                let next = extend(&partial, &opts[o], &memo);
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

/// Combinatorial certificates of sensitive cell `s` for the directions in `dirs` (0 = down by
/// `LPL`, 1 = up by `UPL`) on pattern `sup`: each entry is the verified move and its reach,
/// or `None`. At most `cubes` hypercubes and `budget` look-ups are tried.
pub(crate) fn certify(
    p: &Problem,
    geom: &Geometry,
    sup: &[bool],
    s: &super::problem::Sensitive,
    dirs: &[usize],
    cubes: usize,
    budget: usize,
) -> Certified {
    propose(p, geom, sup, s, dirs, cubes, budget).map(|r| r.map(|(w, v)| (w.moves(), v)))
}

/// [`certify`] returning the verified witnesses themselves (their cubes can be handed on as
/// candidate certificates, see `Auditor::offer`).
pub(crate) fn propose(
    p: &Problem,
    geom: &Geometry,
    sup: &[bool],
    s: &super::problem::Sensitive,
    dirs: &[usize],
    cubes: usize,
    budget: usize,
) -> [Option<(Witness, f64)>; 2] {
    let mut out = [None, None];
    let need = |d: usize| if d == 0 { s.lpl } else { s.upl };
    if dirs.iter().all(|&d| need(d) <= 0.0) {
        return out;
    }
    // One cube usually suffices (the hypercube cover builds them with enough capacity);
    // search for more only when it does not.
    for max in [1, cubes] {
        let found = geom.hypercubes(sup, s.cell, max, budget);
        if found.is_empty() {
            return out;
        }
        for &d in dirs {
            let n = need(d);
            if n <= 0.0 || out[d].is_some() {
                continue;
            }
            let dir = if d == 0 { -1.0 } else { 1.0 };
            let Some(w) = combine(p, &found, dir, n) else { continue };
            match verify(p, sup, &w, s.cell, dir) {
                Some(v) if v >= n - super::attacker::tolerance(n) => out[d] = Some((w, v)),
                _ => {}
            }
        }
        if dirs.iter().all(|&d| need(d) <= 0.0 || out[d].is_some()) || max >= cubes {
            break;
        }
    }
    out
}

struct Search<'s> {
    sup: &'s [bool],
    found: Vec<Vec<(u32, i8)>>,
    max: usize,
    budget: usize,
}

/// Greedy witness for `t` in direction `dir` from `cubes`: each cube gets the largest step
/// the bounds still allow (shrunk by 1e-9 so that rounding cannot cross a bound) until `need`
/// is reached. `None` when no cube can move at all. Verify the result with [`verify`].
pub(crate) fn combine(p: &Problem, cubes: &[Vec<(u32, i8)>], dir: f64, need: f64) -> Option<Witness> {
    let mut z: FastMap<u32, f64> = FastMap::default();
    let mut parts = Vec::new();
    let mut reach = 0.0;
    for cube in cubes {
        let rem = need - reach;
        if rem <= 0.0 {
            break;
        }
        let mut room = f64::INFINITY;
        for &(c, s) in cube {
            let zc = z.get(&c).copied().unwrap_or(0.0);
            let r = if dir * s as f64 > 0.0 { p.up_gap[c as usize] - zc } else { p.lo_gap[c as usize] + zc };
            room = room.min(r);
        }
        let delta = rem.min(room * (1.0 - 1e-9));
        if delta.is_nan() || delta <= 0.0 || !delta.is_finite() {
            continue;
        }
        for &(c, s) in cube {
            *z.entry(c).or_insert(0.0) += dir * delta * s as f64;
        }
        reach += delta;
        parts.push((dir * delta, cube.clone()));
    }
    (!parts.is_empty()).then_some(Witness { parts })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suppress::tests::{grid, primary};
    use crate::table::synth::hierarchy;
    use crate::table::{Cell, CellStatus};

    fn sup_of(t: &Table, coords: &[[u32; 2]]) -> Vec<bool> {
        let mut s = vec![false; t.cells().len()];
        for c in coords {
            s[t.find(c).unwrap()] = true;
        }
        s
    }

    /// The 2x2 rectangle of the hand-solved audit test: a ∈ [0, 12] by hand, and the witness
    /// proves exactly the reach it was built for; tampered witnesses are refused.
    #[test]
    fn rectangle_witness_and_tampering() {
        let mut t = grid(&[vec![10.0, 5.0], vec![2.0, 20.0]], None);
        let a = primary(&mut t, &[1, 1], 3.0) as u32;
        let p = Problem::from_table(&t, None);
        let sup = sup_of(&t, &[[1, 1], [1, 2], [2, 1], [2, 2]]);
        let g = Geometry::new(&t);
        let cubes = g.hypercubes(&sup, a, 8, 10_000);
        assert_eq!(cubes.len(), 1, "{cubes:?}");
        assert_eq!(cubes[0].len(), 4);
        // Up: limited by cells b = 5 and c = 2 moving down: 2 < 3 = UPL.
        let up = combine(&p, &cubes, 1.0, 3.0).unwrap();
        let v = verify(&p, &sup, &up, a, 1.0).unwrap();
        assert!((v - 2.0).abs() < 1e-6, "{v}");
        // Down: limited by a = 10 and d = 20: reaches the LPL of 3.
        let down = combine(&p, &cubes, -1.0, 3.0).unwrap();
        assert!((verify(&p, &sup, &down, a, -1.0).unwrap() - 3.0).abs() < 1e-6);
        // Tampering: a flipped sign unbalances the relations.
        let mut bad = down.clone();
        bad.parts[0].1[1].1 *= -1;
        assert_eq!(verify(&p, &sup, &bad, a, -1.0), None);
        // A step past a bound (c = 2 cannot go below 0).
        let mut bad = up.clone();
        bad.parts[0].0 = 2.5;
        assert_eq!(verify(&p, &sup, &bad, a, 1.0), None);
        // A support cell that is published.
        let sup3 = sup_of(&t, &[[1, 1], [1, 2], [2, 1]]);
        assert_eq!(verify(&p, &sup3, &up, a, 1.0), None);
        // A dropped cell.
        let mut bad = up.clone();
        bad.parts[0].1.pop();
        assert_eq!(verify(&p, &sup, &bad, a, 1.0), None);
        // A repeated cell, a zero or NaN step.
        let mut bad = up.clone();
        let first = bad.parts[0].1[0];
        bad.parts[0].1.push(first);
        assert_eq!(verify(&p, &sup, &bad, a, 1.0), None);
        for d in [0.0, f64::NAN, f64::INFINITY] {
            let mut bad = up.clone();
            bad.parts[0].0 = d;
            assert_eq!(verify(&p, &sup, &bad, a, 1.0), None, "{d}");
        }
        // Without the fourth cell there is no hypercube.
        assert!(g.hypercubes(&sup3, a, 8, 10_000).is_empty());
    }

    /// Two rectangles through the primary add up when one alone lacks capacity.
    #[test]
    fn greedy_sum_of_two_cubes() {
        let mut t = grid(&[vec![10.0, 2.0, 2.0], vec![2.0, 20.0, 20.0], vec![2.0, 20.0, 20.0]], None);
        let a = primary(&mut t, &[1, 1], 3.0) as u32;
        let p = Problem::from_table(&t, None);
        let sup = sup_of(&t, &[[1, 1], [1, 2], [1, 3], [2, 1], [3, 1], [2, 2], [3, 3]]);
        let g = Geometry::new(&t);
        let cubes = g.hypercubes(&sup, a, 8, 10_000);
        assert_eq!(cubes.len(), 2, "{cubes:?}");
        let w = combine(&p, &cubes, 1.0, 3.0).unwrap();
        assert_eq!(w.parts.len(), 2);
        let v = verify(&p, &sup, &w, a, 1.0).unwrap();
        assert!((v - 3.0).abs() < 1e-6, "{v}");
    }

    /// A hierarchical 2-dim table: a subtotal's hypercube extends down a child path, and the
    /// witness balances every relation (checked by `verify`).
    #[test]
    fn hierarchical_cube_goes_down_the_tree() {
        let d0 = hierarchy("r", &[2, 2]);
        let d1 = Dimension::flat("c", &["x", "y"]);
        let leaves: Vec<u32> = (0..d0.codes.len() as u32).filter(|&n| !d0.parent.contains(&Some(n as usize))).collect();
        let mut cells = Vec::new();
        let mut vals: FastMap<(u32, u32), f64> = FastMap::default();
        for (i, &r) in leaves.iter().enumerate() {
            for c in 1..=2u32 {
                let v = 10.0 + (i as f64) * 3.0 + c as f64;
                let mut n = r as usize;
                loop {
                    *vals.entry((n as u32, c)).or_insert(0.0) += v;
                    *vals.entry((n as u32, 0)).or_insert(0.0) += v;
                    match d0.parent[n] {
                        Some(p) => n = p,
                        None => break,
                    }
                }
            }
        }
        for (&(r, c), &v) in &vals {
            cells.push(Cell::new(vec![r, c], v, 5));
        }
        let mut t = Table::new(vec![d0, d1], cells).unwrap();
        // Primary: subtotal node 1 ("1") in column x.
        let a = t.find(&[1, 1]).unwrap();
        t.set_status(a, CellStatus::Primary);
        t.set_protection(a, 1.0, 1.0, 0.0);
        let p = Problem::from_table(&t, None);
        let mut sup = vec![false; t.cells().len()];
        // Nodes 1, 2 (subtotals), 3 (child of 1), 5 (child of 2) in columns x and y.
        for r in [1, 2, 3, 5] {
            for c in [1, 2] {
                sup[t.find(&[r, c]).unwrap()] = true;
            }
        }
        let g = Geometry::new(&t);
        let cubes = g.hypercubes(&sup, a as u32, 8, 10_000);
        assert!(!cubes.is_empty());
        assert_eq!(cubes[0].len(), 8, "{:?}", cubes[0]);
        for dir in [1.0, -1.0] {
            let w = combine(&p, &cubes, dir, 1.0).unwrap();
            assert!(verify(&p, &sup, &w, a as u32, dir).unwrap() >= 1.0 - 1e-6);
        }
        // Without the child path below the subtotal the move is unbalanced: no cube.
        sup[t.find(&[3, 2]).unwrap()] = false;
        assert!(g.hypercubes(&sup, a as u32, 8, 10_000).is_empty());
    }
}
