//! The protected-table model: cells, their status and protection levels, and the additivity
//! relations between them (each marginal equals the sum of its parts).
//!
//! A [`Table`] is built once from its [`Dimension`]s (code hierarchies, node 0 = "Total") and its
//! nonempty [`Cell`]s; [`Table::new`] validates it and computes the sparse additivity
//! [`Relations`] (see `relations.rs`). Missing coordinate combinations are structural zeros: they
//! are not cells and take part in no relation. Invariants after construction: coordinates are
//! unique and in range, every non-total node has its parent cell present, and every relation adds
//! up within a relative tolerance. A-priori information (force publish / suppress, costs,
//! protection levels, attacker bounds) is applied with the functions in `apriori.rs`.
//! Model: Fischetti & Salazar's cell suppression problem, restated in
//! `papers/tabular-cell-suppression-big-data-tabu.txt` (relations `M y = b`, bounds `lb <= y <= ub`).

pub mod apriori;
pub mod relations;
pub mod synth;

pub use apriori::{AprioriAction, AprioriEntry, CostKind};
pub use relations::{CoordIndex, Relations};

/// Status of a cell, with the tau-Argus letters used in every output. This is the one place
/// where statuses map to letters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CellStatus {
    /// Safe: published (`S`).
    Safe,
    /// Primary unsafe: fails a sensitivity rule (`U`).
    Primary,
    /// Secondary suppression chosen by a method (`M`).
    Secondary,
    /// Protected: must be published, never suppressed (`P`).
    Protected,
    /// Empty or structural zero (`Z`).
    Empty,
}

impl CellStatus {
    /// The tau-Argus letter for this status.
    pub fn letter(self) -> &'static str {
        match self {
            CellStatus::Safe => "S",
            CellStatus::Primary => "U",
            CellStatus::Secondary => "M",
            CellStatus::Protected => "P",
            CellStatus::Empty => "Z",
        }
    }

    /// Parses a tau-Argus letter.
    pub fn from_letter(s: &str) -> Option<Self> {
        Some(match s {
            "S" => CellStatus::Safe,
            "U" => CellStatus::Primary,
            "M" => CellStatus::Secondary,
            "P" => CellStatus::Protected,
            "Z" => CellStatus::Empty,
            _ => return None,
        })
    }

    /// Whether the cell's value is withheld from the publication.
    pub fn is_suppressed(self) -> bool {
        matches!(self, CellStatus::Primary | CellStatus::Secondary)
    }
}

/// Serde for [`CellStatus`] as its tau-Argus letter (the enum itself stays serde-free).
pub mod status_letter {
    use super::CellStatus;

    /// Serialises a status as its letter.
    pub fn serialize<S: serde::Serializer>(s: &CellStatus, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_str(s.letter())
    }

    /// Parses a status letter.
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(de: D) -> Result<CellStatus, D::Error> {
        let s: String = serde::Deserialize::deserialize(de)?;
        CellStatus::from_letter(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown status letter `{s}`")))
    }

    /// Serde for `Vec<CellStatus>` as a string of letters.
    pub mod vec {
        use super::CellStatus;

        /// Serialises statuses as one string of letters.
        pub fn serialize<S: serde::Serializer>(v: &[CellStatus], ser: S) -> Result<S::Ok, S::Error> {
            ser.serialize_str(&v.iter().map(|s| s.letter()).collect::<String>())
        }

        /// Parses a string of letters.
        pub fn deserialize<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Vec<CellStatus>, D::Error> {
            let s: String = serde::Deserialize::deserialize(de)?;
            s.chars()
                .map(|c| {
                    CellStatus::from_letter(&c.to_string())
                        .ok_or_else(|| serde::de::Error::custom(format!("unknown status letter `{c}`")))
                })
                .collect()
        }
    }
}

/// A cell named by its codes, e.g. `geo=11, sex=Total`: what users see in messages, instead of
/// node indices. An index out of range is shown as `#n`.
pub fn cell_codes(dims: &[Dimension], coord: &[u32]) -> String {
    dims.iter()
        .zip(coord)
        .map(|(d, &n)| match d.codes.get(n as usize) {
            Some(code) => format!("{}={code}", d.name),
            None => format!("{}=#{n}", d.name),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl TableError {
    /// The message with cells named by their codes in `dims` (see [`cell_codes`]).
    pub fn describe(&self, dims: &[Dimension]) -> String {
        let name = |coord: &[u32]| format!("({})", cell_codes(dims, coord));
        match self {
            TableError::DuplicateCell { coord, .. } => format!("cell {} appears twice", name(coord)),
            TableError::MissingMarginal { coord, dim, missing } => {
                format!("cell {} has no marginal cell {} in dimension `{dim}`", name(coord), name(missing))
            }
            TableError::NotAdditive { coord, dim, value, sum } => {
                format!("marginal {} in dimension `{dim}` is {value} but its parts sum to {sum}", name(coord))
            }
            other => other.to_string(),
        }
    }
}

/// Why a [`Table`] could not be built or modified.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TableError {
    /// A dimension's parent vector is malformed (node 0 must be the root, others need a parent).
    #[error("dimension `{dim}`: bad hierarchy at node {node}: {why}")]
    BadHierarchy {
        /// Dimension name.
        dim: String,
        /// Offending node index.
        node: usize,
        /// What is wrong.
        why: String,
    },
    /// A cell's coordinate has the wrong length or a node index out of range.
    #[error("cell {cell}: bad coordinate {coord:?} (expected {dims} dimensions with nodes in range)")]
    BadCoord {
        /// Cell index.
        cell: usize,
        /// The coordinate.
        coord: Vec<u32>,
        /// Number of dimensions of the table.
        dims: usize,
    },
    /// Two cells have the same coordinate.
    #[error("cells {first} and {second} have the same coordinate {coord:?}")]
    DuplicateCell {
        /// First cell index.
        first: usize,
        /// Second cell index.
        second: usize,
        /// The coordinate.
        coord: Vec<u32>,
    },
    /// A nonempty cell's marginal (parent node in one dimension) is missing.
    #[error("cell {coord:?} has no marginal cell in dimension `{dim}` (missing {missing:?})")]
    MissingMarginal {
        /// Coordinate of the child cell.
        coord: Vec<u32>,
        /// Dimension name.
        dim: String,
        /// Coordinate of the missing marginal.
        missing: Vec<u32>,
    },
    /// A marginal differs from the sum of its parts.
    #[error("marginal {coord:?} in dimension `{dim}` is {value} but its parts sum to {sum}")]
    NotAdditive {
        /// Coordinate of the marginal cell.
        coord: Vec<u32>,
        /// Dimension name.
        dim: String,
        /// Marginal value.
        value: f64,
        /// Sum of the parts.
        sum: f64,
    },
    /// Coordinates need more than 128 bits in the compact encoding.
    #[error("coordinates need {bits} bits; at most 128 are supported")]
    TooManyCodes {
        /// Bits needed.
        bits: u32,
    },
    /// An a-priori entry names a cell that does not exist or has an invalid value.
    #[error("a-priori entry {entry}: {why}")]
    BadApriori {
        /// Entry index.
        entry: usize,
        /// What is wrong.
        why: String,
    },
}

/// One explanatory variable with its code hierarchy.
///
/// Node 0 is the grand total ("Total"); every other node has a parent, and a node's cell is the
/// marginal of its children's cells. Single-child ("trivial") levels are allowed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Dimension {
    /// Variable name (used to match dimensions of linked tables).
    pub name: String,
    /// Code of each node; `codes[0]` is the total.
    pub codes: Vec<String>,
    /// Parent of each node; `parent[0]` is `None`, all others `Some`.
    pub parent: Vec<Option<usize>>,
}

impl Dimension {
    /// A flat dimension: "Total" plus one leaf per code.
    pub fn flat(name: &str, codes: &[&str]) -> Self {
        let mut all = vec!["Total".to_string()];
        all.extend(codes.iter().map(|c| c.to_string()));
        let mut parent = vec![None];
        parent.extend(codes.iter().map(|_| Some(0)));
        Self { name: name.to_string(), codes: all, parent }
    }

    /// Children of every node, in node order.
    pub fn children(&self) -> Vec<Vec<usize>> {
        let mut ch = vec![Vec::new(); self.codes.len()];
        for (n, p) in self.parent.iter().enumerate() {
            if let Some(p) = p {
                ch[*p].push(n);
            }
        }
        ch
    }

    /// Depth of every node (total = 0); call on a validated dimension.
    pub fn depths(&self) -> Vec<u32> {
        (0..self.codes.len())
            .map(|mut n| {
                let mut d = 0;
                while let Some(p) = self.parent[n] {
                    n = p;
                    d += 1;
                }
                d
            })
            .collect()
    }

    fn validate(&self) -> Result<(), TableError> {
        let bad =
            |node: usize, why: &str| TableError::BadHierarchy { dim: self.name.clone(), node, why: why.to_string() };
        if self.codes.is_empty() || self.codes.len() != self.parent.len() {
            return Err(bad(0, "codes and parent must be nonempty and of equal length"));
        }
        if self.parent[0].is_some() {
            return Err(bad(0, "node 0 (the total) must have no parent"));
        }
        for n in 1..self.codes.len() {
            let mut cur = n;
            let mut steps = 0;
            while let Some(p) = self.parent[cur] {
                if p >= self.codes.len() {
                    return Err(bad(n, "parent out of range"));
                }
                cur = p;
                steps += 1;
                if steps > self.codes.len() {
                    return Err(bad(n, "cycle in the hierarchy"));
                }
            }
            if cur != 0 || steps == 0 {
                return Err(bad(n, "every non-total node needs a parent chain to node 0"));
            }
        }
        Ok(())
    }
}

/// One nonempty cell of a table.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cell {
    /// Node index per dimension.
    pub coord: Vec<u32>,
    /// Cell value (sum of contributions).
    pub value: f64,
    /// Number of contributors.
    pub freq: u64,
    /// Largest contribution.
    pub top1: f64,
    /// Second-largest contribution.
    pub top2: f64,
    /// Input status: `Primary` = sensitive, `Protected` = force publish, `Secondary` = force
    /// suppress, `Safe`, `Empty` (published zero, never suppressed).
    #[serde(with = "status_letter")]
    pub status: CellStatus,
    /// Lower protection level (absolute).
    pub lpl: f64,
    /// Upper protection level (absolute).
    pub upl: f64,
    /// Sliding protection level (absolute).
    pub spl: f64,
    /// Cost of suppressing the cell (information loss weight).
    pub cost: f64,
}

impl Cell {
    /// A safe cell with cost = value and no protection levels.
    pub fn new(coord: Vec<u32>, value: f64, freq: u64) -> Self {
        Self {
            coord,
            value,
            freq,
            top1: 0.0,
            top2: 0.0,
            status: CellStatus::Safe,
            lpl: 0.0,
            upl: 0.0,
            spl: 0.0,
            cost: value,
        }
    }
}

/// A validated table with its additivity relations and attacker bounds.
#[derive(Debug, Clone)]
pub struct Table {
    dims: Vec<Dimension>,
    cells: Vec<Cell>,
    lower: Vec<f64>,
    upper: Vec<f64>,
    index: CoordIndex,
    relations: Relations,
}

impl Table {
    /// Validates `dims` and `cells` and builds the coordinate index and the relations.
    ///
    /// Attacker bounds default to `[0, +inf)` when every value is nonnegative, else
    /// `(-inf, +inf)`; change them with [`apriori::apply`] or [`Table::set_bounds`].
    pub fn new(dims: Vec<Dimension>, cells: Vec<Cell>) -> Result<Self, TableError> {
        for d in &dims {
            d.validate()?;
        }
        let index = CoordIndex::build(&dims, &cells)?;
        let relations = Relations::build(&dims, &cells, &index)?;
        relations.check_additive(&dims, &cells)?;
        let nonneg = cells.iter().all(|c| c.value >= 0.0);
        let lo = if nonneg { 0.0 } else { f64::NEG_INFINITY };
        let n = cells.len();
        Ok(Self { dims, cells, lower: vec![lo; n], upper: vec![f64::INFINITY; n], index, relations })
    }

    /// The dimensions.
    pub fn dims(&self) -> &[Dimension] {
        &self.dims
    }

    /// The cells (index = cell id used everywhere in `suppress`).
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// The additivity relations.
    pub fn relations(&self) -> &Relations {
        &self.relations
    }

    /// Attacker's a-priori lower bound of each cell.
    pub fn lower_bounds(&self) -> &[f64] {
        &self.lower
    }

    /// Attacker's a-priori upper bound of each cell.
    pub fn upper_bounds(&self) -> &[f64] {
        &self.upper
    }

    /// The packed-coordinate index (fast neighbour look-ups: replace one dimension's node in a
    /// packed key instead of rebuilding the coordinate).
    pub fn index(&self) -> &CoordIndex {
        &self.index
    }

    /// Index of the cell at `coord`, if it exists.
    pub fn find(&self, coord: &[u32]) -> Option<usize> {
        self.index.find(coord)
    }

    /// Sets the attacker bounds of one cell (must contain the cell value).
    pub fn set_bounds(&mut self, cell: usize, lower: f64, upper: f64) -> Result<(), TableError> {
        let v = self.cells[cell].value;
        if !(lower <= v && v <= upper) {
            return Err(TableError::BadApriori {
                entry: cell,
                // The value itself stays out of the message: errors end up in logs.
                why: format!("bounds [{lower}, {upper}] exclude the cell's value"),
            });
        }
        self.lower[cell] = lower;
        self.upper[cell] = upper;
        Ok(())
    }

    /// Sets every cell's cost from `kind`.
    pub fn set_costs(&mut self, kind: CostKind) {
        for c in &mut self.cells {
            c.cost = kind.cost_of(c);
        }
    }

    /// Sets the input status of one cell (e.g. primary suppression results).
    pub fn set_status(&mut self, cell: usize, status: CellStatus) {
        self.cells[cell].status = status;
    }

    /// Sets the protection levels of one cell.
    pub fn set_protection(&mut self, cell: usize, lpl: f64, upl: f64, spl: f64) {
        let c = &mut self.cells[cell];
        c.lpl = lpl;
        c.upl = upl;
        c.spl = spl;
    }

    /// Sets the cost of one cell.
    pub fn set_cost(&mut self, cell: usize, cost: f64) {
        self.cells[cell].cost = cost;
    }

    /// The input statuses of all cells.
    pub fn statuses(&self) -> Vec<CellStatus> {
        self.cells.iter().map(|c| c.status).collect()
    }
}
