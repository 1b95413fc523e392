//! Linked tables: several tables sharing explanatory variables are protected jointly, so a
//! common cell gets one status and an attacker combining all tables learns nothing more.
//!
//! Common cells are identified by their `(dimension name → code)` map over the dimensions not at
//! their total (a dimension absent from a table is at Total). The tables are joined into one
//! system (one variable per distinct cell, the union of all relations — tau-Argus's cover
//! table without its 4-dimension limit) and protected with `Fast`, `Tabu` or `Optimal` on that
//! system directly. `Modular` protects each table by itself, forces suppressions of common
//! cells suppressed anywhere and repeats until stable, then repairs on the joint system. Either
//! way the final audit is on the joint system (which implies each table's own audit: a
//! single-table attacker knows a subset of the relations). Invariants: common cells must agree
//! in value (else an input error), and a common cell is primary if it is primary anywhere (with
//! the largest protection levels), published if forced published anywhere.
//!
//! The entry points ([`super::protect_linked`], [`super::protect_linked_with`]) sit beside
//! [`super::protect`]: they ship the joint solve ([`solve_joint`]) as one [`super::TableTask`]
//! and check its outcome ([`audit_joint`]), so this file needs no task machinery.

use std::borrow::Cow;
use std::time::Instant;

use super::budget::Deadline;
use super::problem::{Fix, Problem, Sensitive};
use super::{construct, fast, AuditSummary, Method, ProtectOptions, SuppressError};
use crate::table::relations::FastMap;
use crate::table::{CellStatus, Relations, Table};

/// Key of a cell across tables: sorted `(dimension name, code)` pairs of non-total coordinates.
fn key(t: &Table, i: usize) -> Vec<(String, String)> {
    let mut k: Vec<(String, String)> = t.cells()[i]
        .coord
        .iter()
        .zip(t.dims())
        .filter(|(&n, _)| n != 0)
        .map(|(&n, d)| (d.name.clone(), d.codes[n as usize].clone()))
        .collect();
    k.sort();
    k
}

/// A cell key for messages: `dept=0102, sex=1` (`Total` when every dimension is at its total).
fn key_text(k: &[(String, String)]) -> String {
    if k.is_empty() {
        return "Total".into();
    }
    k.iter().map(|(v, c)| format!("{v}={c}")).collect::<Vec<_>>().join(", ")
}

/// Per table, the joint id of each cell; and per joint id, the table and cell it was first
/// seen in (its owner).
fn index(tables: &[Table]) -> (Vec<Vec<u32>>, Vec<(usize, usize)>) {
    let mut ids: FastMap<Vec<(String, String)>, u32> = FastMap::default();
    let mut maps = Vec::new();
    let mut owner: Vec<(usize, usize)> = Vec::new();
    for (ti, t) in tables.iter().enumerate() {
        let mut m = Vec::with_capacity(t.cells().len());
        for i in 0..t.cells().len() {
            let id = *ids.entry(key(t, i)).or_insert_with(|| {
                owner.push((ti, i));
                owner.len() as u32 - 1
            });
            m.push(id);
        }
        maps.push(m);
    }
    (maps, owner)
}

/// The joint model's cell → `(table, cell)` map: for each cell of the joint system of
/// `tables` (the index a [`SuppressError::Infeasible`] or [`SuppressError::Unprotected`] of
/// a linked group carries), the first table that has it and its index there. Why: errors of
/// the joint model must name a table and the cell's codes, never solver indices; the map is
/// rebuilt from the tables alone (no solver), so the client can name cells of a joint model
/// solved on an executor.
pub fn joint_cells(tables: &[Table]) -> Vec<(usize, usize)> {
    index(tables).1
}

/// A solver error on one table of a linked group, rewritten for the joint model: the cell
/// indices it carries become joint ids (the convention of linked errors, see [`joint_cells`]).
fn to_joint(e: SuppressError, map: &[u32]) -> SuppressError {
    let joint = |i: usize| map.get(i).map_or(i, |&g| g as usize);
    match e {
        SuppressError::Infeasible { cell, why, .. } => {
            SuppressError::Infeasible { cell: joint(cell), coord: Vec::new(), why }
        }
        SuppressError::Unprotected { method, count, first } => {
            SuppressError::Unprotected { method, count, first: joint(first) }
        }
        e => e,
    }
}

/// The joint system: global problem and, per table, the global id of each cell.
fn join(tables: &[Table]) -> Result<(Problem<'static>, Vec<Vec<u32>>), SuppressError> {
    let (maps, owner) = index(tables);
    let n = owner.len();
    let rank = |s: CellStatus| match s {
        CellStatus::Primary => 4,
        CellStatus::Protected => 3,
        CellStatus::Secondary => 2,
        CellStatus::Empty => 1,
        CellStatus::Safe => 0,
    };
    let mut status = vec![CellStatus::Safe; n];
    let mut value = vec![0.0; n];
    let mut lo_gap = vec![f64::INFINITY; n];
    let mut up_gap = vec![f64::INFINITY; n];
    let mut cost = vec![0.0f64; n];
    let mut freq = vec![u64::MAX; n];
    let mut pl: FastMap<u32, Sensitive> = FastMap::default();
    let mut lists = Vec::new();
    for (ti, t) in tables.iter().enumerate() {
        for (i, c) in t.cells().iter().enumerate() {
            let g = maps[ti][i] as usize;
            let (oi, oc) = owner[g];
            let v0 = tables[oi].cells()[oc].value;
            if (v0 - c.value).abs() > 1e-6 * v0.abs().max(1.0) {
                return Err(SuppressError::Input(format!(
                    "common cell ({}) has value {v0} in one linked table and {} in another; linked tables \
                     must agree on their common cells",
                    key_text(&key(t, i)),
                    c.value
                )));
            }
            if status[g] == CellStatus::Primary && c.status == CellStatus::Protected
                || status[g] == CellStatus::Protected && c.status == CellStatus::Primary
            {
                return Err(SuppressError::Input(format!(
                    "common cell ({}) is primary in one linked table and force-published in another",
                    key_text(&key(t, i))
                )));
            }
            if rank(c.status) > rank(status[g]) {
                status[g] = c.status;
            }
            value[g] = c.value;
            lo_gap[g] = lo_gap[g].min(c.value - t.lower_bounds()[i]);
            up_gap[g] = up_gap[g].min(t.upper_bounds()[i] - c.value);
            cost[g] = cost[g].max(c.cost);
            freq[g] = freq[g].min(c.freq);
            if c.status == CellStatus::Primary {
                let e = pl.entry(g as u32).or_insert(Sensitive { cell: g as u32, lpl: 0.0, upl: 0.0, spl: 0.0 });
                e.lpl = e.lpl.max(c.lpl);
                e.upl = e.upl.max(c.upl);
                e.spl = e.spl.max(c.spl);
            }
        }
        let r = t.relations();
        for k in 0..r.len() {
            let parts = r.parts(k).iter().map(|&c| maps[ti][c as usize]).collect();
            lists.push((r.dim(k) as u16, maps[ti][r.total(k) as usize], parts));
        }
    }
    let mut sens: Vec<Sensitive> = pl.into_values().collect();
    sens.sort_by_key(|s| s.cell);
    let fix = status
        .iter()
        .map(|s| match s {
            CellStatus::Primary | CellStatus::Secondary => Fix::Suppressed,
            CellStatus::Protected | CellStatus::Empty => Fix::Published,
            CellStatus::Safe => Fix::Free,
        })
        .collect();
    let mut p = Problem {
        rel: Cow::Owned(Relations::from_lists(n, &lists)),
        value,
        lo_gap,
        up_gap,
        cost,
        freq,
        fix,
        status,
        sens,
        sens_of: FastMap::default(),
        geom: None,
    };
    p.index_sensitive();
    Ok((p, maps))
}

/// The joint protection of linked tables with its joint audit: output statuses per table, and
/// whether the time limit ended a search.
pub(crate) fn solve_joint(
    tables: &[Table],
    opts: &ProtectOptions,
) -> Result<(Vec<Vec<CellStatus>>, AuditSummary, bool), SuppressError> {
    let start = Instant::now();
    let deadline = &Deadline::left_of(opts.time_limit_s, opts.budget_limit_s());
    let (p, maps) = join(tables)?;
    let sup = match opts.method {
        Method::Fast => fast::run(&p, opts, deadline)?,
        Method::Tabu => super::tabu::run(&p, opts, None, deadline)?,
        Method::Optimal => super::exact::run(&p, opts, None, deadline)?.0,
        Method::Modular => modular_linked(tables, &p, &maps, opts, deadline)?,
    };
    let joint = super::finish(&p, sup, opts.method, opts.singleton_rule, start)?;
    let statuses = tables
        .iter()
        .enumerate()
        .map(|(ti, t)| {
            (0..t.cells().len())
                .map(|i| {
                    let g = maps[ti][i] as usize;
                    match (t.cells()[i].status, joint.statuses[g].is_suppressed()) {
                        (CellStatus::Safe, true) => CellStatus::Secondary,
                        (s, _) => s,
                    }
                })
                .collect()
        })
        .collect();
    Ok((statuses, joint.audit, deadline.was_hit()))
}

/// The joint audit of given output statuses of linked tables (independent of how they were
/// found: the client's check of a result computed elsewhere). A common cell suppressed in one
/// table and published in another is itself a finding (`Err`), since no joint pattern has it.
pub(crate) fn audit_joint(
    tables: &[Table],
    statuses: &[Vec<CellStatus>],
    singleton_rule: bool,
) -> Result<super::AuditReport, SuppressError> {
    let (p, maps) = join(tables)?;
    let mut sup: Vec<Option<bool>> = vec![None; p.n()];
    for (ti, st) in statuses.iter().enumerate() {
        for (i, s) in st.iter().enumerate() {
            let g = maps[ti][i] as usize;
            let now = s.is_suppressed();
            if sup[g].is_some_and(|before| before != now) {
                return Err(SuppressError::Input(format!(
                    "common cell ({}) is suppressed in one linked table and published in another",
                    key_text(&key(&tables[ti], i))
                )));
            }
            sup[g] = Some(now);
        }
    }
    let sup: Vec<bool> = sup.into_iter().map(|s| s.unwrap_or(false)).collect();
    super::audit::audit_problem(&p, &sup, singleton_rule, &super::AuditOptions::default())
}

/// Modular per table with common suppressions forced, until stable; then joint repair.
fn modular_linked(
    tables: &[Table],
    p: &Problem,
    maps: &[Vec<u32>],
    opts: &ProtectOptions,
    deadline: &Deadline,
) -> Result<Vec<bool>, SuppressError> {
    let mut sup = p.initial();
    for _round in 0..10 {
        let mut changed = false;
        for (ti, t) in tables.iter().enumerate() {
            let mut t2 = t.clone();
            for (i, &g) in maps[ti].iter().enumerate() {
                if sup[g as usize] && t2.cells()[i].status == CellStatus::Safe {
                    t2.set_status(i, CellStatus::Secondary);
                }
            }
            let left = opts.with_time_left(deadline.left_s());
            let prot = super::protect(&t2, &left).map_err(|e| to_joint(e, &maps[ti]))?;
            if prot.stopped_by_time_limit {
                deadline.record_hit();
            }
            for (i, &g) in maps[ti].iter().enumerate() {
                if prot.statuses[i].is_suppressed() && !sup[g as usize] {
                    sup[g as usize] = true;
                    changed = true;
                }
            }
        }
        if !changed || deadline.reached() {
            break;
        }
    }
    Ok(construct::complete(p, sup, opts.singleton_rule, opts.construction, deadline)?.aud.sup)
}
