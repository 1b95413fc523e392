//! The cell suppression problem as flat arrays, shared by the audit and every method.
//!
//! Why: methods work on "cells + relations + bounds + costs + fixings", whether the cells come
//! from one [`Table`], a modular subtable or several linked tables joined into one system. The
//! attacker works in shifted variables `z = y − a`: relations become `Σ coef·z = 0` and bounds
//! `−lo_gap ≤ z ≤ up_gap` (`lo_gap = a − lb`, `up_gap = ub − a`, both ≥ 0), which keeps the LPs
//! well scaled and makes `z = 0` always feasible. Invariant: `sens` lists each sensitive cell
//! once, in cell order, and every sensitive cell is fixed suppressed.

use std::borrow::Cow;

use crate::table::relations::FastMap;
use crate::table::{CellStatus, Relations, Table};

/// Whether a method may change a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fix {
    /// The method decides.
    Free,
    /// Always suppressed (primary or forced).
    Suppressed,
    /// Always published (protected or empty).
    Published,
}

/// A sensitive cell and its protection levels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sensitive {
    pub cell: u32,
    pub lpl: f64,
    pub upl: f64,
    pub spl: f64,
}

/// Movement requirement of a sensitive cell: how far the attacker must be able to move it
/// (`max(LPL, UPL, SPL/2)`).
pub(crate) fn requirement(s: &Sensitive) -> f64 {
    s.lpl.max(s.upl).max(s.spl / 2.0)
}

/// Flat problem data (see the module doc).
#[derive(Debug, Clone)]
pub(crate) struct Problem<'a> {
    pub rel: Cow<'a, Relations>,
    pub value: Vec<f64>,
    pub lo_gap: Vec<f64>,
    pub up_gap: Vec<f64>,
    pub cost: Vec<f64>,
    pub freq: Vec<u64>,
    pub fix: Vec<Fix>,
    pub status: Vec<CellStatus>,
    pub sens: Vec<Sensitive>,
    pub sens_of: FastMap<u32, u32>,
    /// Table geometry for combinatorial witnesses (`None` for joined linked tables), built on
    /// first use ([`Self::geometry`]).
    pub geom: Option<std::sync::Arc<LazyGeometry<'a>>>,
}

/// A table's [`Geometry`](super::geometry::Geometry), built when a method first asks for it.
///
/// Why lazily: a problem is built for the figures and the decomposition too (e.g. by
/// `protect_with` before the table task builds its own), and the geometry of a 1 M-cell census
/// table took 0.8 GB and seconds there for nothing (measured with heaptrack).
#[derive(Debug)]
pub(crate) struct LazyGeometry<'a> {
    table: &'a Table,
    built: std::sync::OnceLock<super::geometry::Geometry<'a>>,
}

impl<'a> LazyGeometry<'a> {
    fn new(table: &'a Table) -> Self {
        Self { table, built: std::sync::OnceLock::new() }
    }

    /// The geometry (built by the first caller; concurrent callers wait for it).
    pub fn get(&self) -> &super::geometry::Geometry<'a> {
        self.built.get_or_init(|| super::geometry::Geometry::new(self.table))
    }
}

impl<'a> Problem<'a> {
    /// Problem of `table` with the given statuses (input statuses when `None`).
    pub fn from_table(table: &'a Table, statuses: Option<&[CellStatus]>) -> Self {
        let cells = table.cells();
        let st = |i: usize| statuses.map_or(cells[i].status, |s| s[i]);
        let fix = (0..cells.len())
            .map(|i| match st(i) {
                CellStatus::Primary | CellStatus::Secondary => Fix::Suppressed,
                CellStatus::Protected | CellStatus::Empty => Fix::Published,
                CellStatus::Safe => Fix::Free,
            })
            .collect();
        let sens = (0..cells.len())
            .filter(|&i| st(i) == CellStatus::Primary)
            .map(|i| Sensitive { cell: i as u32, lpl: cells[i].lpl, upl: cells[i].upl, spl: cells[i].spl })
            .collect();
        let value: Vec<f64> = cells.iter().map(|c| c.value).collect();
        let lo_gap = value.iter().zip(table.lower_bounds()).map(|(a, l)| (a - l).max(0.0)).collect();
        let up_gap = value.iter().zip(table.upper_bounds()).map(|(a, u)| (u - a).max(0.0)).collect();
        let mut p = Self {
            rel: Cow::Borrowed(table.relations()),
            value,
            lo_gap,
            up_gap,
            cost: cells.iter().map(|c| c.cost.max(0.0)).collect(),
            freq: cells.iter().map(|c| c.freq).collect(),
            fix,
            status: (0..cells.len()).map(st).collect(),
            sens,
            sens_of: FastMap::default(),
            geom: Some(std::sync::Arc::new(LazyGeometry::new(table))),
        };
        p.index_sensitive();
        p
    }

    /// Rebuilds `sens_of` after `sens` changed.
    pub fn index_sensitive(&mut self) {
        self.sens_of = self.sens.iter().enumerate().map(|(k, s)| (s.cell, k as u32)).collect();
    }

    /// The table's geometry, if the problem has one (built on the first call).
    pub fn geometry(&self) -> Option<&super::geometry::Geometry<'a>> {
        self.geom.as_deref().map(LazyGeometry::get)
    }

    /// Number of cells.
    pub fn n(&self) -> usize {
        self.value.len()
    }

    /// Initial suppression vector: fixed-suppressed cells.
    pub fn initial(&self) -> Vec<bool> {
        self.fix.iter().map(|f| *f == Fix::Suppressed).collect()
    }

    /// Symmetric capacity of a cell: how far it can move both ways for the attacker.
    pub fn capacity(&self, i: usize) -> f64 {
        self.lo_gap[i].min(self.up_gap[i])
    }

    /// The relations touching any of `cells`, sorted: those an attacker LP over `cells` must
    /// keep balanced.
    pub fn relations_touching(&self, cells: &[u32]) -> Vec<u32> {
        let mut rows: Vec<u32> = cells.iter().flat_map(|&c| self.rel.of_cell(c as usize).iter().copied()).collect();
        rows.sort_unstable();
        rows.dedup();
        rows
    }

    /// Cost of a pattern.
    pub fn cost_of(&self, sup: &[bool]) -> f64 {
        sup.iter().zip(&self.cost).filter(|(s, _)| **s).map(|(_, c)| c).sum()
    }

    /// `cost` as a percentage of the cost of suppressing every cell: what progress lines show,
    /// since an absolute cost can equal one cell's value, and values stay out of logs.
    pub fn cost_percent(&self, cost: f64) -> f64 {
        let total: f64 = self.cost.iter().sum();
        if total > 0.0 {
            100.0 * cost / total
        } else {
            0.0
        }
    }
}
