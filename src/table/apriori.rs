//! A-priori information about cells, as data: force publish, force suppress, cost and
//! protection-level overrides, attacker bounds. The lead parses the CSV; this applies it.
//!
//! Why separate: a-priori settings change the optimisation problem (fixed variables, weights,
//! protection requirements, what the attacker knows), so they must be applied before any method
//! runs and be visible to the audit. Invariant: after [`apply`], `Protected` cells are never
//! suppressed by a method, `Secondary` input cells are always suppressed and never removed by
//! a cleanup, and bounds always contain the cell value.

use super::{Cell, CellStatus, Table, TableError};

/// How suppression costs are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CostKind {
    /// Cell value (information loss by value; tau-Argus default).
    Value,
    /// Number of contributors.
    Frequency,
    /// One per cell (minimise the number of suppressions).
    Unity,
}

impl CostKind {
    /// Cost of a cell under this rule.
    pub fn cost_of(self, c: &Cell) -> f64 {
        match self {
            CostKind::Value => c.value.abs(),
            CostKind::Frequency => c.freq as f64,
            CostKind::Unity => 1.0,
        }
    }
}

/// One a-priori action.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum AprioriAction {
    /// Must be published (status `Protected`); an error if the cell is primary.
    ForcePublish,
    /// Must be suppressed (status `Secondary`, kept by every method).
    ForceSuppress,
    /// Cost override.
    Cost(f64),
    /// Protection levels (absolute lower, upper, sliding): raise the cell's levels, never
    /// lower them.
    Protection {
        /// Lower protection level.
        lpl: f64,
        /// Upper protection level.
        upl: f64,
        /// Sliding protection level.
        spl: f64,
    },
    /// Attacker's a-priori bounds on the cell value.
    Bounds {
        /// Lower bound.
        lower: f64,
        /// Upper bound.
        upper: f64,
    },
}

/// An action on the cell at `coord`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AprioriEntry {
    /// Node index per dimension.
    pub coord: Vec<u32>,
    /// What to do.
    pub action: AprioriAction,
}

/// Applies all entries; reports the first bad entry (unknown cell, publish of a primary,
/// negative cost or level, bounds excluding the value). Entries apply in order.
pub fn apply(table: &mut Table, entries: &[AprioriEntry]) -> Result<(), TableError> {
    for (k, e) in entries.iter().enumerate() {
        let bad = |why: String| TableError::BadApriori { entry: k, why };
        let i = table.find(&e.coord).ok_or_else(|| bad(format!("no cell at {:?}", e.coord)))?;
        match &e.action {
            AprioriAction::ForcePublish => {
                if table.cells()[i].status == CellStatus::Primary {
                    return Err(bad(format!("cell {:?} is primary; cannot publish", e.coord)));
                }
                table.set_status(i, CellStatus::Protected);
            }
            AprioriAction::ForceSuppress => {
                if table.cells()[i].status != CellStatus::Primary {
                    table.set_status(i, CellStatus::Secondary);
                }
            }
            AprioriAction::Cost(c) => {
                if !(c.is_finite() && *c >= 0.0) {
                    return Err(bad(format!("cost {c} must be finite and >= 0")));
                }
                table.set_cost(i, *c);
            }
            AprioriAction::Protection { lpl, upl, spl } => {
                if [lpl, upl, spl].iter().any(|v| !(v.is_finite() && **v >= 0.0)) {
                    return Err(bad("protection levels must be finite and >= 0".into()));
                }
                // Raise only: the levels the safety rules set are the minimum (a lower a-priori
                // level would let the audit pass a cell the rules call sensitive).
                let c = &table.cells()[i];
                let (l, u, s) = (c.lpl.max(*lpl), c.upl.max(*upl), c.spl.max(*spl));
                table.set_protection(i, l, u, s);
            }
            AprioriAction::Bounds { lower, upper } => {
                table
                    .set_bounds(i, *lower, *upper)
                    .map_err(|_| bad(format!("bounds [{lower}, {upper}] exclude the value")))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{Cell, Dimension};

    fn tiny() -> Table {
        let d = Dimension::flat("a", &["x", "y"]);
        let cells = vec![Cell::new(vec![0], 10.0, 3), Cell::new(vec![1], 4.0, 1), Cell::new(vec![2], 6.0, 2)];
        Table::new(vec![d], cells).unwrap()
    }

    #[test]
    fn apply_entries() {
        let mut t = tiny();
        t.set_status(1, CellStatus::Primary);
        apply(
            &mut t,
            &[
                AprioriEntry { coord: vec![2], action: AprioriAction::ForcePublish },
                AprioriEntry { coord: vec![0], action: AprioriAction::Cost(0.5) },
                AprioriEntry { coord: vec![1], action: AprioriAction::Bounds { lower: 1.0, upper: 5.0 } },
            ],
        )
        .unwrap();
        assert_eq!(t.cells()[2].status, CellStatus::Protected);
        assert_eq!(t.cells()[0].cost, 0.5);
        assert_eq!((t.lower_bounds()[1], t.upper_bounds()[1]), (1.0, 5.0));
        let e = apply(&mut t, &[AprioriEntry { coord: vec![1], action: AprioriAction::ForcePublish }]);
        assert!(matches!(e, Err(TableError::BadApriori { entry: 0, .. })));
        let e = apply(&mut t, &[AprioriEntry { coord: vec![7], action: AprioriAction::ForceSuppress }]);
        assert!(e.is_err());
    }

    #[test]
    fn relations_of_a_hierarchy_with_trivial_level() {
        // Total -> A -> {a1}; Total -> B -> {b1, b2}; trivial level A -> a1.
        let d = Dimension {
            name: "r".into(),
            codes: ["T", "A", "B", "a1", "b1", "b2"].map(String::from).to_vec(),
            parent: vec![None, Some(0), Some(0), Some(1), Some(2), Some(2)],
        };
        let v = [10.0, 3.0, 7.0, 3.0, 5.0, 2.0];
        let cells: Vec<Cell> = (0..6).map(|i| Cell::new(vec![i as u32], v[i], 1)).collect();
        let t = Table::new(vec![d.clone()], cells.clone()).unwrap();
        let r = t.relations();
        assert_eq!(r.len(), 3);
        let mut got: Vec<(u32, Vec<u32>)> = (0..r.len()).map(|k| (r.total(k), r.parts(k).to_vec())).collect();
        got.sort();
        assert_eq!(got, vec![(0, vec![1, 2]), (1, vec![3]), (2, vec![4, 5])]);
        assert_eq!(r.of_cell(1).len(), 2);
        let mut bad = cells;
        bad[4].value = 6.0;
        assert!(matches!(Table::new(vec![d], bad), Err(TableError::NotAdditive { .. })));
    }
}
