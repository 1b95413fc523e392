//! Secondary suppression of a tabulated table: the bridge between tabulation output and the
//! pure solvers in [`crate::suppress`].
//!
//! The tabulated [`Cells`](crate::tabulate::Cells) and their primary statuses become a
//! [`Table`](crate::table::Table) (dimensions from the hierarchies, additivity relations built
//! there); the chosen method returns statuses that have already passed the attacker-LP audit.
//! Anything else — an infeasible setting, an under-protected cell — is an error: the run fails and
//! nothing is published (fail closed).

use crate::error::{Error, Result};
use crate::run::AssessedTable;
use crate::suppress::{self, Method, ProtectOptions, Protection, SuppressError};
use crate::table::{Cell, Dimension, Table};

/// Secondary methods accepted in job files, with `none` (primaries only).
pub const METHODS: &[&str] = &["none", "optimal", "tabu", "fast", "modular"];

/// Parses a method name (one of [`METHODS`] except `none`).
pub fn method(name: &str) -> Option<Method> {
    Some(match name {
        "optimal" => Method::Optimal,
        "tabu" => Method::Tabu,
        "fast" => Method::Fast,
        "modular" => Method::Modular,
        _ => return None,
    })
}

/// The solver's table model for an assessed table.
pub fn to_table(a: &AssessedTable) -> Result<Table> {
    let dims: Vec<Dimension> = a
        .cells
        .dims
        .iter()
        .map(|h| Dimension {
            name: h.variable().to_string(),
            codes: h.nodes().iter().map(|n| n.code.clone()).collect(),
            parent: h.nodes().iter().map(|n| n.parent).collect(),
        })
        .collect();
    let cells: Vec<Cell> = (0..a.cells.len())
        .map(|i| {
            let mut c = Cell::new(a.cells.coord(i).to_vec(), a.cells.value[i], a.cells.freq[i]);
            c.top1 = a.cells.tops(i)[0];
            c.top2 = a.cells.tops(i)[1];
            c.status = a.status[i];
            c.lpl = a.lpl[i];
            c.upl = a.upl[i];
            c
        })
        .collect();
    Table::new(dims, cells).map_err(|e| Error::Internal(format!("building the table model: {e}")))
}

/// Protects `a` in place with the named method; returns the solver's protection summary.
pub fn protect(
    table_name: &str,
    a: &mut AssessedTable,
    method_name: &str,
    seed: u64,
    time_limit_s: f64,
) -> Result<Protection> {
    protect_with(table_name, a, method_name, seed, time_limit_s, &suppress::InProcess)
}

/// [`protect`] with the modular method's subtables solved by `solver` (the cluster path of
/// `run`); the merged pattern is audited here either way.
pub fn protect_with(
    table_name: &str,
    a: &mut AssessedTable,
    method_name: &str,
    seed: u64,
    time_limit_s: f64,
    solver: &dyn suppress::SubtableSolver,
) -> Result<Protection> {
    let method = method(method_name).ok_or_else(|| Error::Internal(format!("unknown method {method_name}")))?;
    let table = to_table(a)?;
    let opts = ProtectOptions { method, seed, time_limit_s, ..Default::default() };
    let p = suppress::protect_with(&table, &opts, solver).map_err(|e| match e {
        SuppressError::Input(m) => Error::Protection { table: table_name.into(), message: m },
        other => Error::Protection { table: table_name.into(), message: other.to_string() },
    })?;
    if p.audit.under_protected > 0 || p.audit.singleton_violations > 0 {
        return Err(Error::Protection {
            table: table_name.into(),
            message: format!(
                "the audit found {} under-protected cells and {} singleton violations; nothing was published",
                p.audit.under_protected, p.audit.singleton_violations
            ),
        });
    }
    a.status.clone_from(&p.statuses);
    Ok(p)
}
