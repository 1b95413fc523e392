//! Protection: assessed table → secondary suppression → audited pattern, fail closed. The
//! bridge between the rules stage and the pure solvers in [`crate::suppress`].
//!
//! The [`AssessedTable`] (tabulated cells with their primary statuses) becomes a
//! [`Table`](crate::table::Table) (dimensions from the hierarchies, additivity relations built
//! there), with the user's a-priori knowledge applied ([`apriori`]); the job's
//! [`SecondaryMethod`] (`auto` resolved here by table size, [`auto_method`]) returns statuses
//! that have already passed the attacker-LP audit. Anything else — an infeasible setting, an
//! under-protected cell — is an error: the run fails and nothing is published (fail closed).
//! The solver work runs on the [`Executor`] it is handed (the executors of a cluster, or this
//! process).

pub mod apriori;

use crate::cluster::ship::Executor;
use crate::error::{Error, Result};
use crate::job::{SecondaryMethod, TableJob};
use crate::rules::AssessedTable;
use crate::suppress::{self, Method, ProtectOptions, Protection, SuppressError};
use crate::table::{AprioriEntry, Cell, CellStatus, Dimension, Table, TableError};
pub use apriori::{
    apply_apriori_statuses, check_linked_conflicts, read_apriori, AprioriChange, AprioriFile, AprioriLine,
};

/// `auto` uses the exact method on tables up to this many cells (joint cells for linked
/// tables). Measured (BENCHMARKS-style jobs on `sdcflow generate --rows 200000` data, `ci`
/// build, DESIGN.md "Choosing a method"): `optimal` proved its optimum in 0.2 s on 348 cells
/// and 1.7 s on 580, where `modular` was 1-15 % and `fast` 7-9× costlier; one flat 308-cell
/// table needed its whole node budget (73 s) without a proof, so the limit stays low and the
/// node budget bounds the rest.
pub const AUTO_OPTIMAL_MAX_CELLS: usize = 600;

/// `auto` also uses the exact method on tables above `exact::HITAS_START_CELLS` cells (2,000)
/// up to this many, when at most [`AUTO_EXACT_MAX_PRIMARIES`] of them are primary (up to
/// [`AUTO_EXACT_SINGLETON_MAX_CELLS`] with the singleton rule), within the budget
/// [`AUTO_EXACT_BUDGET`]; it never publishes more than `modular` would: it starts from the fast
/// pattern (`exact::starts_fast`) and falls back on `modular`'s pattern when unproven. Why:
/// "exact when it fits" (issue 11 item 6), and within that budget it fits there. Measured
/// (release build, BENCHMARKS.md "Session 83", then from HiTaS's start; the fast start is
/// faster still, "Session 88"), singleton rule off: it proves the optimum of eia (5,525 cells)
/// in 2.9 s, adult (6,333) in 21 s, c2-persons in 3.1 s, c4-persons (2,389) in 11 s and
/// c3-persons (11,264 cells, 3,543 primary) in 91 s, where `modular` published 1.3 %, 10.3 %,
/// 8.4 %, 0.5 % and 7.5 % more secondary value (tau-Argus OPT given five minutes proved eia
/// only). The primaries keep c3-enterprises
/// (11,317 cells, 6,936 primary) with `modular`: there the exact model's cutting planes alone
/// took minutes per round (session 29).
pub const AUTO_EXACT_MAX_CELLS: usize = 12_000;

/// See [`AUTO_EXACT_MAX_CELLS`].
pub const AUTO_EXACT_MAX_PRIMARIES: usize = 4_000;

/// [`AUTO_EXACT_MAX_CELLS`] under the singleton rule. Measured (release build, BENCHMARKS.md
/// "Session 84"), singleton rule on: the exact search from HiTaS proves the optimum of adult in
/// 25 s, c2-persons in 6.0 s and c4-persons in 27 s, and ends eia at a 0.3 % gap in 9.2 s, where
/// `modular` (2.5, 1.9, 32.7 and 1.0 s) published 9.6 %, 5.5 %, 1.3 % and 1.5 % more secondary
/// value; on c3-persons (11,264 cells) it took 206 s for 4.4 % less than `modular`'s 60 s,
/// a third of the default limit (a slower machine would come near the hard stop), so
/// `modular` stays there. Before the master kept its partner rows under the rule
/// (`singleton::exposed`) adult's search took 383 s.
pub const AUTO_EXACT_SINGLETON_MAX_CELLS: usize = 8_000;

/// Master MIP solves and branch-and-bound nodes per solve of the exact method when `auto` picks
/// it above [`AUTO_OPTIMAL_MAX_CELLS`]: work units, so the pattern is the same on every
/// machine; a table the budget does not prove publishes the best clean pattern found (HiTaS's
/// at worst) with its gap. The proofs measured took 2–5 solves, each within its first 500
/// nodes; the explicit `optimal` keeps its own larger budget.
pub const AUTO_EXACT_BUDGET: (usize, usize) = (10, 500);

/// The gap on the secondary cost at which that search stops (`ProtectOptions::secondary_gap`):
/// a clean pattern within 0.1 % of its proven bound is published with that gap instead of being
/// proven optimal; the explicit `optimal` proves. The same share below which a search from the
/// fast start counts as proven (`exact::PROVEN_SECONDARY_GAP`), so stopping there never sends
/// `auto` on to `modular`. Why: the proof is what the last master of a search spends most of
/// its time on, for a pattern it usually holds already (BENCHMARKS.md, "Session 92").
pub const AUTO_EXACT_GAP: f64 = suppress::exact::PROVEN_SECONDARY_GAP;

/// `auto` uses `modular` up to this many cells (and above, see
/// [`AUTO_MODULAR_LARGE_MAX_CELLS`]). Measured: `modular` halved `fast`'s secondary cost on
/// 2,552 and 7,653 cells (3.5e9 vs 6.6e9, 7.9e9 vs 16.1e9) but took 3.4-6.6× its time (6.7 s vs
/// 1.0 s, 246 s vs 72 s), growing faster than linearly. Since `modular` is HiTaS with exact
/// subtables (BENCHMARKS.md "Session 6"): on the 11,264-cell census-shaped c3-persons table,
/// within the default 600 s limit, 3.23 % of the value against `fast`'s 4.06 % (tau-Argus OPT
/// 3.35 %), so the limit moved from 10 k to 20 k cells.
pub const AUTO_MODULAR_MAX_CELLS: usize = 20_000;

/// `auto` also uses `modular` up to this many cells when at most
/// [`AUTO_MODULAR_MAX_PRIMARIES`] of them are primary; `fast` above. Why the primaries: HiTaS's
/// work grows with them — each is a target of the exact subtables and of the whole-table audit
/// of their merge, whose batch LPs span one component of most suppressed cells. Measured at
/// the 600-s default on the 4-dimensional suite tables (BENCHMARKS.md, sessions 48–49):
/// c4-hier (29,101 cells, 11,285 primary) publishes 11.5 % of the value with `modular`
/// (first audit of the merge 71 s) against 25.0 % with `fast`; c4-large (46,853 cells, 18,379
/// primary) and c4-ent (44,375 cells, 28,718 primary) publish nothing with `modular` — the
/// merge's first audit, or the levels, pass the limit — while `fast` publishes. One table
/// inside, two outside: the bounds stay close to the one measured success. Measured again in
/// session 52 with the small batches: on c4-large HiTaS would publish 6.50 % of the value
/// against `fast`'s 29.01 %, but its merge's first audit alone takes 980 s (limit 1,800 s).
pub const AUTO_MODULAR_LARGE_MAX_CELLS: usize = 30_000;

/// See [`AUTO_MODULAR_LARGE_MAX_CELLS`].
pub const AUTO_MODULAR_MAX_PRIMARIES: usize = 12_000;

/// The method `auto` picks for a table of `cells` cells of which `primaries` are primary, with
/// the singleton rule on or off (see the thresholds' reasoning above).
pub fn auto_method(cells: usize, primaries: usize, singleton_rule: bool) -> Method {
    if cells <= AUTO_OPTIMAL_MAX_CELLS || auto_exact_from_hitas(cells, primaries, singleton_rule) {
        Method::Optimal
    } else if cells <= AUTO_MODULAR_MAX_CELLS
        || cells <= AUTO_MODULAR_LARGE_MAX_CELLS && primaries <= AUTO_MODULAR_MAX_PRIMARIES
    {
        Method::Modular
    } else {
        Method::Fast
    }
}

/// Whether `auto` picks the exact method from HiTaS's start, within [`AUTO_EXACT_BUDGET`]
/// ([`AUTO_EXACT_MAX_CELLS`]).
fn auto_exact_from_hitas(cells: usize, primaries: usize, singleton_rule: bool) -> bool {
    let max_cells = if singleton_rule { AUTO_EXACT_SINGLETON_MAX_CELLS } else { AUTO_EXACT_MAX_CELLS };
    cells > suppress::exact::HITAS_START_CELLS && cells <= max_cells && primaries <= AUTO_EXACT_MAX_PRIMARIES
}

/// A protected table is called too detailed to publish usefully when more than this share of
/// its cells are primary, or when its pattern suppresses more than this share of its value: at
/// that point most of what users look for is blank (issue 11 measured 87 % of the cells of a
/// 5-dimensional census table suppressed), and coarsening beats any suppression method.
pub const DETAIL_WARN_SHARE: f64 = 0.30;

/// Level combinations named by [`detail_warning`].
const DETAIL_WARN_COMBINATIONS: usize = 3;

/// The warning for a table too detailed to publish usefully ([`DETAIL_WARN_SHARE`]), naming
/// the level combinations (each variable at one hierarchy level) with the highest share of
/// primary cells, so the user knows which variables to coarsen; `None` below the thresholds.
pub fn detail_warning(table_name: &str, a: &AssessedTable, suppressed_value_share: Option<f64>) -> Option<String> {
    let n = a.status.len();
    let primaries = a.status.iter().filter(|s| **s == CellStatus::Primary).count();
    let primary_share = primaries as f64 / n.max(1) as f64;
    if primary_share <= DETAIL_WARN_SHARE && suppressed_value_share.unwrap_or(0.0) <= DETAIL_WARN_SHARE {
        return None;
    }
    let dims = &a.cells.dims;
    // (depth per variable) → (cells, primaries)
    let mut by_levels: std::collections::BTreeMap<Vec<usize>, (usize, usize)> = Default::default();
    for i in 0..n {
        let key: Vec<usize> =
            a.cells.coord(i).iter().zip(dims).map(|(&node, h)| h.nodes()[node as usize].depth).collect();
        let e = by_levels.entry(key).or_default();
        e.0 += 1;
        e.1 += usize::from(a.status[i] == CellStatus::Primary);
    }
    let mut ranked: Vec<(Vec<usize>, usize, usize)> =
        by_levels.into_iter().filter(|(_, (_, p))| *p > 0).map(|(k, (c, p))| (k, c, p)).collect();
    // Highest primary share first, then most primaries; ties in level order (deterministic).
    ranked.sort_by(|a, b| (b.2 * a.1).cmp(&(a.2 * b.1)).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0)));
    let worst: Vec<String> = ranked
        .iter()
        .take(DETAIL_WARN_COMBINATIONS)
        .map(|(levels, cells, prim)| {
            let vars: Vec<String> = levels
                .iter()
                .zip(dims)
                .map(|(&l, h)| match l {
                    0 => format!("{} total", h.variable()),
                    l => format!("{} at level {l} of {}", h.variable(), h.depth()),
                })
                .collect();
            format!(
                "{} ({prim} of {cells} cells primary, {:.0} %)",
                vars.join(" × "),
                100.0 * *prim as f64 / *cells as f64
            )
        })
        .collect();
    // Before protection (`None`) only the primaries are known.
    let suppressed =
        suppressed_value_share.map_or(String::new(), |v| format!(" and {:.1} % of its value is suppressed", 100.0 * v));
    Some(format!(
        "table `{table_name}` is too detailed to publish usefully: {:.1} % of its cells are primary{suppressed} \
         (warning above {:.0} %). Highest primary shares: {}. Coarsen these variables (fewer hierarchy levels or \
         grouped codes) or drop one",
        100.0 * primary_share,
        100.0 * DETAIL_WARN_SHARE,
        worst.join("; ")
    ))
}

/// The solver's dimensions (code trees) of a tabulated table.
pub fn dimensions(cells: &crate::tabulate::Cells) -> Vec<Dimension> {
    cells
        .dims
        .iter()
        .map(|h| Dimension {
            name: h.variable().to_string(),
            codes: h.nodes().iter().map(|n| n.code.clone()).collect(),
            parent: h.nodes().iter().map(|n| n.parent).collect(),
        })
        .collect()
}

/// Primary cells of a table model (what `auto` weighs beside its size).
fn primaries(t: &Table) -> usize {
    t.cells().iter().filter(|c| c.status == CellStatus::Primary).count()
}

/// The solver's table model for an assessed table.
pub fn to_table(a: &AssessedTable) -> Result<Table> {
    let dims = dimensions(&a.cells);
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

/// Solver options of table job `t` (its secondary method and settings) on a problem of `cells`
/// cells, `primaries` of them primary (`auto` resolved).
fn solver_options(t: &TableJob, cells: usize, primaries: usize) -> Result<ProtectOptions> {
    let method = match t.secondary {
        SecondaryMethod::Auto => auto_method(cells, primaries, t.singleton_rule),
        SecondaryMethod::Solver(m) => m,
        SecondaryMethod::PrimariesOnly => {
            return Err(Error::Internal("secondary method `none` reached the solver".into()))
        }
    };
    let defaults = ProtectOptions::default();
    let (master_solves, mip_nodes, secondary_gap) = match t.secondary {
        SecondaryMethod::Auto if auto_exact_from_hitas(cells, primaries, t.singleton_rule) => {
            (AUTO_EXACT_BUDGET.0, AUTO_EXACT_BUDGET.1, AUTO_EXACT_GAP)
        }
        _ => (defaults.master_solves, defaults.mip_nodes, defaults.secondary_gap),
    };
    Ok(ProtectOptions {
        method,
        seed: t.seed,
        time_limit_s: t.time_limit_s,
        singleton_rule: t.singleton_rule,
        cleanup_trials: t.cleanup_trials,
        master_solves,
        mip_nodes,
        secondary_gap,
        ..defaults
    })
}

/// The joint model's error for users (a `[[linked]]` group named `group`): the joint cell the
/// solver names (see [`suppress::linked::joint_cells`]) becomes its table and codes, e.g.
/// `table "a": dept=0102, sex=1`.
fn linked_protection_error(group: &str, e: SuppressError, names: &[&str], models: &[Table]) -> Error {
    let owners = suppress::linked::joint_cells(models);
    let name = |g: usize| {
        owners.get(g).map(|&(t, i)| {
            let m = &models[t];
            format!("table \"{}\": {}", names[t], crate::table::cell_codes(m.dims(), &m.cells()[i].coord))
        })
    };
    let located = match &e {
        SuppressError::Infeasible { cell, .. } => name(*cell),
        SuppressError::Unprotected { first, .. } => name(*first),
        _ => None,
    };
    let message = match (e, located) {
        (SuppressError::Infeasible { why, .. }, Some(c)) => format!("cell ({c}) cannot be protected: {why}"),
        (SuppressError::Unprotected { method, count, .. }, Some(c)) => {
            format!("{method:?} left {count} sensitive cells under-protected (first: cell ({c}))")
        }
        (e, _) => return protection_error(group, e, None),
    };
    Error::Protection { table: group.into(), message }
}

/// The solver's error for users: cells named by their codes when `model` (a single table) is
/// known; a joint linked model goes through [`linked_protection_error`].
fn protection_error(table_name: &str, e: SuppressError, model: Option<&Table>) -> Error {
    let message = match (e, model) {
        (SuppressError::Input(m), _) => m,
        (SuppressError::Infeasible { coord, why, .. }, Some(t)) if !coord.is_empty() => {
            format!("cell ({}) cannot be protected: {why}", crate::table::cell_codes(t.dims(), &coord))
        }
        (SuppressError::Unprotected { method, count, first }, Some(t)) if first < t.cells().len() => format!(
            "{method:?} left {count} sensitive cells under-protected (first: cell ({}))",
            crate::table::cell_codes(t.dims(), &t.cells()[first].coord)
        ),
        (other, _) => other.to_string(),
    };
    Error::Protection { table: table_name.into(), message }
}

/// Fails closed unless the final audit in `p` is clean.
fn check_clean(table_name: &str, p: &Protection) -> Result<()> {
    if p.audit.under_protected > 0 || p.audit.singleton_violations > 0 {
        return Err(Error::Protection {
            table: table_name.into(),
            message: format!(
                "the audit found {} under-protected cells and {} singleton violations; nothing was published",
                p.audit.under_protected, p.audit.singleton_violations
            ),
        });
    }
    Ok(())
}

/// The solver's table for `a` with the model-level a-priori changes (costs, sliding protection
/// levels, attacker bounds) of `apriori` applied; status changes must already be in `a`
/// ([`apply_apriori_statuses`]).
pub fn to_table_with(a: &AssessedTable, apriori: Option<&AprioriFile>) -> Result<Table> {
    let mut table = to_table(a)?;
    if let Some(f) = apriori {
        let (entries, lines): (Vec<AprioriEntry>, Vec<usize>) =
            f.model_entries().map(|(l, entry)| (entry, l.line)).unzip();
        crate::table::apriori::apply(&mut table, &entries).map_err(|e| match e {
            TableError::BadApriori { entry, why } => f.error(lines[entry], why),
            other => Error::Internal(format!("a-priori file {}: {other}", f.path.display())),
        })?;
    }
    Ok(table)
}

/// Protects `a` in place with the secondary method and settings of table job `t` (method, seed,
/// time limit, singleton rule, cleanup trials), with a-priori information (see
/// [`read_apriori`]); the modular method's subtables are solved by `solver` (in process, or on
/// the executors of the engine: the cluster path of `run`). The merged pattern is audited here
/// either way; returns the solver's protection summary. Status changes of `apriori` must
/// already be applied with [`apply_apriori_statuses`].
pub fn protect_with(
    t: &TableJob,
    a: &mut AssessedTable,
    apriori: Option<&AprioriFile>,
    solver: &dyn suppress::SubtableSolver,
) -> Result<Protection> {
    let table_name = t.name.as_str();
    let table = to_table_with(a, apriori)?;
    let opts = solver_options(t, table.cells().len(), primaries(&table))?;
    let p = suppress::protect_with(&table, &opts, solver).map_err(|e| protection_error(table_name, e, Some(&table)))?;
    check_clean(table_name, &p)?;
    a.status.clone_from(&p.statuses);
    Ok(p)
}

/// Protects an assessed table with its secondary method, the solver work run by `executor`
/// (the executors of a cluster, in-process otherwise); runs the solver on a blocking thread so
/// the engine's runtime stays free to drive the queries.
pub async fn protect_table(
    executor: &Executor,
    t: &TableJob,
    mut assessed: AssessedTable,
    apriori: Option<AprioriFile>,
) -> Result<(AssessedTable, Protection)> {
    let solver = executor.subtable_solver(&t.name);
    let t = t.clone();
    tokio::task::spawn_blocking(move || {
        let p = protect_with(&t, &mut assessed, apriori.as_ref(), &solver)?;
        Ok((assessed, p))
    })
    .await
    .map_err(|e| Error::Internal(format!("secondary suppression task: {e}")))?
}

/// Protects linked tables jointly ([`suppress::protect_linked_with`], the joint solve and
/// audit run by `solver`): one status per common cell, one joint audit. `tables` are `(name, assessed table, a-priori file)`; statuses are updated
/// in place only when the joint audit is clean; the secondary settings are those of table job
/// `settings` (the group's first table).
pub fn protect_linked(
    tables: &mut [(&str, &mut AssessedTable, Option<&AprioriFile>)],
    settings: &TableJob,
    solver: &dyn suppress::SubtableSolver,
) -> Result<Vec<Protection>> {
    let names: Vec<&str> = tables.iter().map(|t| t.0).collect();
    let group = names.join(", ");
    check_linked_conflicts(tables)?;
    let models: Vec<Table> = tables.iter().map(|(_, a, f)| to_table_with(a, *f)).collect::<Result<_>>()?;
    let cells = models.iter().map(|t| t.cells().len()).sum();
    let opts = solver_options(settings, cells, models.iter().map(primaries).sum())?;
    let ps = suppress::protect_linked_with(&models, &opts, solver)
        .map_err(|e| linked_protection_error(&group, e, &names, &models))?;
    for p in &ps {
        check_clean(&group, p)?;
    }
    for ((_, a, _), p) in tables.iter_mut().zip(&ps) {
        a.status.clone_from(&p.statuses);
    }
    Ok(ps)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `auto` by the suite's shapes: the exact model on small tables and, from HiTaS's start,
    /// on those of 2,000–12,000 cells (8,000 with the singleton rule) with at most 4,000
    /// primaries; HiTaS up to 20,000 cells and up to 30,000 when at most 12,000 are primary
    /// (c4-hier), `fast` on c4-large, c4-ent and c5-persons.
    #[test]
    fn auto_weighs_size_and_primaries() {
        for singleton in [false, true] {
            assert_eq!(auto_method(600, 300, singleton), Method::Optimal);
            assert_eq!(auto_method(924, 19, singleton), Method::Modular); // ex-salary: the fast start below 2,000
            assert_eq!(auto_method(11_317, 6_903, singleton), Method::Modular); // c3-enterprises
            assert_eq!(auto_method(29_101, 11_285, singleton), Method::Modular); // c4-hier
            assert_eq!(auto_method(46_853, 18_379, singleton), Method::Fast); // c4-large
            assert_eq!(auto_method(44_375, 28_718, singleton), Method::Fast); // c4-ent
            assert_eq!(auto_method(25_000, 15_000, singleton), Method::Fast);
            assert_eq!(auto_method(101_827, 44_565, singleton), Method::Fast); // c5-persons
            assert_eq!(auto_method(30_001, 100, singleton), Method::Fast);
        }
        // From HiTaS's start: c4-persons, c2-persons, eia, adult, either rule; c3-persons with
        // the singleton rule off only.
        for (cells, primaries) in [(2_389, 559), (4_107, 1_161), (5_525, 156), (6_333, 1_054), (8_000, 4_000)] {
            for singleton in [false, true] {
                assert_eq!(auto_method(cells, primaries, singleton), Method::Optimal, "{cells} cells, {singleton}");
            }
        }
        assert_eq!(auto_method(11_264, 3_543, false), Method::Optimal);
        assert_eq!(auto_method(11_264, 3_543, true), Method::Modular);
        assert_eq!(auto_method(8_001, 3_000, true), Method::Modular);
        assert_eq!(auto_method(12_001, 3_000, false), Method::Modular);
        assert_eq!(auto_method(8_000, 4_001, false), Method::Modular);
    }

    /// `auto` gives the exact method its own work budget where it picks it from HiTaS's start;
    /// the method named in a job, and `auto`'s other choices, keep the defaults.
    #[test]
    fn auto_gives_the_exact_search_from_hitas_its_budget() {
        let table = |secondary: &str| {
            let text = format!(
                "[input]\nmicrodata = \"m.parquet\"\n[[table]]\nname = \"t\"\nexplanatory = [\"a\"]\n\
                 safety = \"FREQ(3,10)\"\nsecondary = {secondary}\n[output]\ndir = \"out\"\n"
            );
            crate::job::Job::parse(std::path::Path::new("j.toml"), &text).unwrap().tables.remove(0)
        };
        let d = ProtectOptions::default();
        let chosen = |secondary: &str, cells, primaries| {
            let o = solver_options(&table(secondary), cells, primaries).unwrap();
            (o.method, o.master_solves, o.mip_nodes)
        };
        let (solves, nodes) = AUTO_EXACT_BUDGET;
        assert_eq!(chosen("{ method = \"auto\", singleton = false }", 6_333, 1_054), (Method::Optimal, solves, nodes));
        assert_eq!(chosen("{ method = \"auto\" }", 6_333, 1_054), (Method::Optimal, solves, nodes));
        assert_eq!(chosen("{ method = \"auto\" }", 11_264, 3_543), (Method::Modular, d.master_solves, d.mip_nodes));
        assert_eq!(
            chosen("{ method = \"optimal\", singleton = false }", 6_333, 1_054),
            (Method::Optimal, d.master_solves, d.mip_nodes)
        );
        assert_eq!(
            chosen("{ method = \"auto\", singleton = false }", 500, 100),
            (Method::Optimal, d.master_solves, d.mip_nodes)
        );
        // Only `auto`'s exact range stops at a gap; an explicit `optimal` proves.
        let gap = |secondary: &str, cells, primaries| {
            solver_options(&table(secondary), cells, primaries).unwrap().secondary_gap
        };
        assert_eq!(gap("{ method = \"auto\", singleton = false }", 6_333, 1_054), AUTO_EXACT_GAP);
        assert_eq!(gap("{ method = \"optimal\", singleton = false }", 6_333, 1_054), 0.0);
        assert_eq!(gap("{ method = \"auto\", singleton = false }", 500, 100), 0.0);
    }

    /// Issue 13 item 12: infeasibility and under-protection name cells by codes, not indices.
    #[test]
    fn protection_errors_name_cells_by_codes() {
        let d = vec![Dimension::flat("geo", &["11", "12"]), Dimension::flat("sex", &["1", "2"])];
        let mut cells = Vec::new();
        for g in 0..3u32 {
            for x in 0..3u32 {
                // Additive: a total has two parts in its dimension.
                let n = if g == 0 { 2 } else { 1 } * if x == 0 { 2 } else { 1 };
                cells.push(Cell::new(vec![g, x], n as f64, n));
            }
        }
        let t = Table::new(d, cells).unwrap();
        let e = SuppressError::Infeasible { cell: 7, coord: vec![2, 1], why: "all partners published".into() };
        let msg = protection_error("t", e, Some(&t)).to_string();
        assert!(msg.contains("cell (geo=12, sex=1) cannot be protected: all partners published"), "{msg}");
        let first = t.find(&[1, 2]).unwrap();
        let e = SuppressError::Unprotected { method: Method::Fast, count: 2, first };
        let msg = protection_error("t", e, Some(&t)).to_string();
        assert!(msg.contains("2 sensitive cells under-protected (first: cell (geo=11, sex=2))"), "{msg}");
        let e = TableError::NotAdditive { coord: vec![0, 1], dim: "geo".into(), value: 3.0, sum: 2.0 };
        assert_eq!(e.describe(t.dims()), "marginal (geo=Total, sex=1) in dimension `geo` is 3 but its parts sum to 2");
    }
}
