//! `report.json`: what was produced, how well it is protected, and how long it took.
//!
//! The report is the audit trail of a publication: per table the cell and suppression counts,
//! the share of the total value withheld, the method and whether the table is protected against
//! recalculation from its totals. Timings are kept apart (`timings_s`) so that every other field
//! is deterministic for the same input and seed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::publish::table::{HeatMap, LevelTally};

/// The whole report of a run.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Report {
    /// sdcflow version that wrote the report.
    pub sdcflow_version: String,
    /// Microdata location.
    pub input: String,
    /// Per-table figures, in job order.
    pub tables: Vec<TableReport>,
    /// Per microaggregated data set: method, k, SSE / IL or χ² figures, bounds, timings.
    pub microaggregations: Vec<crate::masking::MicroaggregationReport>,
    /// Warnings (also printed).
    pub warnings: Vec<String>,
}

/// Figures of one protected table.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct TableReport {
    /// Table name.
    pub name: String,
    /// Explanatory variables.
    pub explanatory: Vec<String>,
    /// Response variable (`null` for a frequency table).
    pub response: Option<String>,
    /// Safety rules as given.
    pub safety: String,
    /// Nodes per explanatory variable (including its total).
    pub codes_per_variable: BTreeMap<String, usize>,
    /// Nonempty cells.
    pub cells: usize,
    /// Cells per status letter.
    pub status_counts: BTreeMap<String, usize>,
    /// Primary (rule-unsafe) cells.
    pub primaries: usize,
    /// Secondary suppressions.
    pub secondaries: usize,
    /// Σ value of suppressed cells / Σ value of all cells (internal cells and marginals alike).
    pub suppressed_value_share: f64,
    /// Σ |value| of all cells.
    #[serde(default)]
    pub total_value: f64,
    /// Σ |value| of the suppressed cells.
    #[serde(default)]
    pub suppressed_value: f64,
    /// Per explanatory variable, cells and suppressions at each hierarchy level (0 = total).
    #[serde(default)]
    pub suppressed_by_level: BTreeMap<String, Vec<LevelTally>>,
    /// The two largest variables at their finest level, status per cell (report.html's picture).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heat_map: Option<HeatMap>,
    /// Secondary method.
    pub method: String,
    /// Whether the suppression pattern was audited and protects every primary against
    /// recalculation from the published cells.
    pub protected_against_recalculation: bool,
    /// Audit result in words.
    pub audit: String,
    /// Σ cost of the secondary suppressions (`null` without a secondary method).
    pub secondary_cost: Option<f64>,
    /// Lower bound on the secondary cost of any protecting pattern (`null` without a
    /// secondary method): how far from optimal `secondary_cost` can be.
    pub lower_bound: Option<f64>,
    /// Relative gap `(secondary_cost − lower_bound) / secondary_cost` (0 when both are 0).
    pub gap: Option<f64>,
    /// Whether the time limit (`secondary.time_limit_s`), not a work budget, ended a search:
    /// the pattern is audited but depends on machine speed, so the same input and seed may
    /// give another pattern on another machine (a warning says so).
    pub stopped_by_time_limit: bool,
    /// Files written, relative to the output directory.
    pub files: Vec<String>,
    /// Modular method: how many subtables each worker solved (a cluster executor, or the
    /// client process in local mode). Not deterministic: depends on the cluster's scheduling.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub subtables_per_worker: BTreeMap<String, usize>,
    /// Where the secondary method (or the modular completion) and the final audit ran: a
    /// cluster executor, or the client process in local mode. Not deterministic.
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub protected_on: String,
    /// Primaries-only tables: how many parts each worker rolled up and wrote (a cluster
    /// executor, or the client process in local mode). Not deterministic.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub parts_per_worker: BTreeMap<String, usize>,
    /// Primaries-only tables whose parts were assembled on the executors: the table's pairs
    /// and the rows the client received instead (counts and part summaries).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub routed_inputs: Option<crate::cluster::roll_up::RoutedInputs>,
    /// Seconds per stage (not deterministic).
    pub timings_s: BTreeMap<String, f64>,
}
