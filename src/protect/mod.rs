//! Secondary suppression of a tabulated table: the bridge between tabulation output and the
//! pure solvers in [`crate::suppress`].
//!
//! The tabulated [`Cells`](crate::tabulate::Cells) and their primary statuses become a
//! [`Table`](crate::table::Table) (dimensions from the hierarchies, additivity relations built
//! there); the chosen method returns statuses that have already passed the attacker-LP audit.
//! Anything else — an infeasible setting, an under-protected cell — is an error: the run fails and
//! nothing is published (fail closed).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::cluster::ship::Executor;
use crate::error::{Error, Result};
use crate::job::{SecondaryMethod, TableJob};
use crate::rules::{AssessedTable, CellFacts, Rule, Safety};
use crate::suppress::{self, Method, ProtectOptions, Protection, SuppressError};
use crate::table::{apriori, AprioriAction, AprioriEntry, Cell, CellStatus, Dimension, Table, TableError};

/// `auto` uses the exact method on tables up to this many cells (joint cells for linked
/// tables). Measured (BENCHMARKS-style jobs on `sdcflow generate --rows 200000` data, `ci`
/// build, DESIGN.md "Choosing a method"): `optimal` proved its optimum in 0.2 s on 348 cells
/// and 1.7 s on 580, where `modular` was 1-15 % and `fast` 7-9× costlier; one flat 308-cell
/// table needed its whole node budget (73 s) without a proof, so the limit stays low and the
/// node budget bounds the rest.
pub const AUTO_OPTIMAL_MAX_CELLS: usize = 600;

/// `auto` uses `modular` up to this many cells and `fast` above. Measured: `modular` halved
/// `fast`'s secondary cost on 2,552 and 7,653 cells (3.5e9 vs 6.6e9, 7.9e9 vs 16.1e9) but took
/// 3.4-6.6× its time (6.7 s vs 1.0 s, 246 s vs 72 s), growing faster than linearly; above
/// ~10 k cells only `fast` stays within the default time limit.
pub const AUTO_MODULAR_MAX_CELLS: usize = 10_000;

/// The method `auto` picks for a table of `cells` cells (see the thresholds' reasoning above).
pub fn auto_method(cells: usize) -> Method {
    if cells <= AUTO_OPTIMAL_MAX_CELLS {
        Method::Optimal
    } else if cells <= AUTO_MODULAR_MAX_CELLS {
        Method::Modular
    } else {
        Method::Fast
    }
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
pub fn detail_warning(table_name: &str, a: &AssessedTable, suppressed_value_share: f64) -> Option<String> {
    let n = a.status.len();
    let primaries = a.status.iter().filter(|s| **s == CellStatus::Primary).count();
    let primary_share = primaries as f64 / n.max(1) as f64;
    if primary_share <= DETAIL_WARN_SHARE && suppressed_value_share <= DETAIL_WARN_SHARE {
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
    Some(format!(
        "table `{table_name}` is too detailed to publish usefully: {:.1} % of its cells are primary and {:.1} % of \
         its value is suppressed (warning above {:.0} %). Highest primary shares: {}. Coarsen these variables \
         (fewer hierarchy levels or grouped codes) or drop one",
        100.0 * primary_share,
        100.0 * suppressed_value_share,
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

/// Solver options for `method` on a problem of `cells` cells (`auto` resolved).
fn solver_options(
    method: SecondaryMethod,
    cells: usize,
    seed: u64,
    time_limit_s: f64,
    singleton_rule: bool,
) -> Result<ProtectOptions> {
    let method = match method {
        SecondaryMethod::Auto => auto_method(cells),
        SecondaryMethod::Solver(m) => m,
        SecondaryMethod::PrimariesOnly => {
            return Err(Error::Internal("secondary method `none` reached the solver".into()))
        }
    };
    Ok(ProtectOptions { method, seed, time_limit_s, singleton_rule, ..Default::default() })
}

/// The solver's error for users: cells named by their codes when `model` (a single table) is
/// known; a joint linked model has no codes of its own and keeps the solver's wording.
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
        let (entries, lines): (Vec<AprioriEntry>, Vec<usize>) = f
            .lines
            .iter()
            .filter_map(|l| match &l.change {
                AprioriChange::Action(
                    act @ (AprioriAction::Cost(_) | AprioriAction::Bounds { .. } | AprioriAction::Protection { .. }),
                ) => Some((AprioriEntry { coord: l.coord.clone(), action: act.clone() }, l.line)),
                _ => None,
            })
            .unzip();
        apriori::apply(&mut table, &entries).map_err(|e| match e {
            TableError::BadApriori { entry, why } => f.error(lines[entry], why),
            other => Error::Internal(format!("a-priori file {}: {other}", f.path.display())),
        })?;
    }
    Ok(table)
}

/// Protects `a` in place with `method`, with a-priori information (see
/// [`read_apriori`]) and the singleton rule on or off; the modular method's subtables are
/// solved by `solver` (in process, or on the executors of the engine: the cluster path of
/// `run`). The merged pattern is audited here either way; returns the solver's protection
/// summary. Status changes of `apriori` must already be applied with [`apply_apriori_statuses`].
#[allow(clippy::too_many_arguments)]
pub fn protect_with(
    table_name: &str,
    a: &mut AssessedTable,
    method: SecondaryMethod,
    seed: u64,
    time_limit_s: f64,
    singleton_rule: bool,
    apriori: Option<&AprioriFile>,
    solver: &dyn suppress::SubtableSolver,
) -> Result<Protection> {
    let table = to_table_with(a, apriori)?;
    let opts = solver_options(method, table.cells().len(), seed, time_limit_s, singleton_rule)?;
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
    let (name, method, seed, limit, singleton) =
        (t.name.clone(), t.secondary, t.seed, t.time_limit_s, t.singleton_rule);
    tokio::task::spawn_blocking(move || {
        let p = protect_with(&name, &mut assessed, method, seed, limit, singleton, apriori.as_ref(), &solver)?;
        Ok((assessed, p))
    })
    .await
    .map_err(|e| Error::Internal(format!("secondary suppression task: {e}")))?
}

/// Protects linked tables jointly ([`suppress::protect_linked_with`], the joint solve and
/// audit run by `solver`): one status per common cell, one joint audit. `tables` are `(name, assessed table, a-priori file)`; statuses are updated
/// in place only when the joint audit is clean.
pub fn protect_linked(
    tables: &mut [(&str, &mut AssessedTable, Option<&AprioriFile>)],
    method: SecondaryMethod,
    seed: u64,
    time_limit_s: f64,
    singleton_rule: bool,
    solver: &dyn suppress::SubtableSolver,
) -> Result<Vec<Protection>> {
    let names: Vec<&str> = tables.iter().map(|t| t.0).collect();
    let group = names.join(", ");
    check_linked_conflicts(tables)?;
    let models: Vec<Table> = tables.iter().map(|(_, a, f)| to_table_with(a, *f)).collect::<Result<_>>()?;
    let cells = models.iter().map(|t| t.cells().len()).sum();
    let opts = solver_options(method, cells, seed, time_limit_s, singleton_rule)?;
    let ps = suppress::protect_linked_with(&models, &opts, solver).map_err(|e| protection_error(&group, e, None))?;
    for p in &ps {
        check_clean(&group, p)?;
    }
    for ((_, a, _), p) in tables.iter_mut().zip(&ps) {
        a.status.clone_from(&p.statuses);
    }
    Ok(ps)
}

/// Refuses linked tables whose a-priori files disagree about a common cell: forced published
/// (`P`) in one table while suppressed in another (`M`/`ML`, or primary by the rules or a `U`
/// line). Why: a common cell gets one status in the joint problem, so one of the two requests
/// would be silently overridden. An input error (exit 2) naming both tables, the cell by its
/// codes and the files and lines; every conflict is reported.
pub fn check_linked_conflicts(tables: &[(&str, &mut AssessedTable, Option<&AprioriFile>)]) -> Result<()> {
    // A cell across tables: its `variable=code` pairs off the total (as in the joint problem).
    let key = |a: &AssessedTable, i: usize| -> Vec<(String, String)> {
        let mut k: Vec<(String, String)> = a
            .cells
            .coord(i)
            .iter()
            .zip(&a.cells.dims)
            .filter(|(&n, _)| n != 0)
            .map(|(&n, h)| (h.variable().to_string(), h.code(n as usize).to_string()))
            .collect();
        k.sort();
        k
    };
    let index: Vec<HashMap<Vec<(String, String)>, usize>> =
        tables.iter().map(|(_, a, _)| (0..a.cells.len()).map(|i| (key(a, i), i)).collect()).collect();
    // Where a table's a-priori file set a cell's status (the last matching line wins).
    let line_of = |t: usize, i: usize, want: fn(&AprioriChange) -> bool| -> Option<String> {
        let (_, a, f) = &tables[t];
        let f = (*f)?;
        let coord = a.cells.coord(i);
        f.lines
            .iter()
            .rev()
            .find(|l| l.coord == coord && want(&l.change))
            .map(|l| format!("{}:{}", f.path.display(), l.line))
    };
    let mut errs = Vec::new();
    for (ta, (name_a, a, _)) in tables.iter().enumerate() {
        for i in (0..a.cells.len()).filter(|&i| a.status[i] == CellStatus::Protected) {
            let k = key(a, i);
            for (tb, (name_b, b, _)) in tables.iter().enumerate().filter(|&(tb, _)| tb != ta) {
                let Some(&j) = index[tb].get(&k) else { continue };
                let why = match b.status[j] {
                    CellStatus::Secondary => {
                        let at = line_of(tb, j, |c| *c == AprioriChange::Action(AprioriAction::ForceSuppress));
                        format!("suppressed by `M` ({})", at.unwrap_or_else(|| "a-priori file".into()))
                    }
                    CellStatus::Primary => match line_of(tb, j, |c| *c == AprioriChange::Unsafe) {
                        Some(at) => format!("primary by `U` ({at})"),
                        None => "primary under its safety rules".into(),
                    },
                    _ => continue,
                };
                let at = line_of(ta, i, |c| *c == AprioriChange::Action(AprioriAction::ForcePublish))
                    .unwrap_or_else(|| format!("table `{name_a}`"));
                errs.push(Error::data(
                    at,
                    format!(
                        "linked tables `{name_a}` and `{name_b}` disagree on a common cell: `P` forces cell ({}) of \
                         table `{name_a}` to be published, but the same cell ({}) of table `{name_b}` is {why}; \
                         a common cell has one status in linked tables — remove one of the lines",
                        a.cells.codes(i).join(", "),
                        b.cells.codes(j).join(", "),
                    ),
                ));
            }
        }
    }
    Error::collect(errs)
}

/// One change of a tau-Argus a-priori line.
#[derive(Debug, Clone, PartialEq)]
pub enum AprioriChange {
    /// `S`: the cell must be safe (an error when the safety rules make it primary: sdcflow
    /// never publishes a cell its rules call sensitive); it may still become a secondary.
    Safe,
    /// `U`: the cell is manually unsafe; its protection level comes from the `MAN(r)` rule.
    Unsafe,
    /// `P` (force published), `M`/`ML` (force suppressed), `C`/`W` (cost), `PL` (protection
    /// levels) and `AB` (attacker bounds).
    Action(AprioriAction),
}

/// One parsed line of an a-priori file.
#[derive(Debug, Clone, PartialEq)]
pub struct AprioriLine {
    /// 1-based line number in the file.
    pub line: usize,
    /// Node index per dimension of the table.
    pub coord: Vec<u32>,
    /// What to do with the cell.
    pub change: AprioriChange,
}

/// A parsed tau-Argus a-priori (`.hst`) file for one table.
#[derive(Debug, Clone, PartialEq)]
pub struct AprioriFile {
    /// The file (for messages).
    pub path: PathBuf,
    /// Its lines with a change, in file order (later lines win).
    pub lines: Vec<AprioriLine>,
}

impl AprioriFile {
    /// An input error naming the file and line.
    fn error(&self, line: usize, why: String) -> Error {
        Error::data(format!("{}:{line}", self.path.display()), why)
    }
}

/// Reads a tau-Argus a-priori file for a table with dimensions `dims`.
///
/// Format (tau-Argus `.hst`): one cell per line, `code1 SEP … SEP codeN SEP change [SEP x1 [SEP
/// x2 [SEP x3]]]` with the codes in the table's variable order (blank or `Total` for a
/// total), and `change` one of `S` (safe), `U` (manually unsafe), `P` (protected: always
/// published), `M`/`ML` (suppressed, e.g. last year's suppressions), `C`/`W` cost, `PL` lower
/// and upper (and optionally sliding) protection level, `AB` the attacker's lower and upper
/// bound of the cell. Blank lines and lines starting with `#` are skipped. Every bad line — an
/// unknown code, a cell that does not exist, an unknown change, a missing number — is an
/// input error (exit 2) naming the file, line and code; all are reported together.
pub fn read_apriori(path: &Path, sep: u8, dims: &[Dimension]) -> Result<AprioriFile> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::unreadable(path, &e))?;
    let f = AprioriFile { path: path.to_path_buf(), lines: Vec::new() };
    let index: Vec<HashMap<&str, u32>> =
        dims.iter().map(|d| d.codes.iter().enumerate().map(|(i, c)| (c.as_str(), i as u32)).collect()).collect();
    let sep = sep as char;
    let mut lines = Vec::new();
    let mut errs = Vec::new();
    for (ln, raw) in text.lines().enumerate() {
        let ln = ln + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        match parse_apriori_line(raw, sep, dims, &index) {
            Ok((coord, change)) => lines.push(AprioriLine { line: ln, coord, change }),
            Err(why) => errs.push(f.error(ln, why)),
        }
    }
    Error::collect(errs)?;
    Ok(AprioriFile { lines, ..f })
}

fn parse_apriori_line(
    raw: &str,
    sep: char,
    dims: &[Dimension],
    index: &[HashMap<&str, u32>],
) -> std::result::Result<(Vec<u32>, AprioriChange), String> {
    let fields: Vec<&str> = raw.split(sep).map(|s| s.trim().trim_matches('"')).collect();
    let k = dims.len();
    if fields.len() < k + 1 {
        return Err(format!(
            "expected {k} codes ({}) and a change separated by {sep:?}, found {} fields",
            dims.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(", "),
            fields.len()
        ));
    }
    let mut coord = Vec::with_capacity(k);
    for (d, code) in fields[..k].iter().enumerate() {
        if code.is_empty() || *code == crate::hierarchy::TOTAL {
            coord.push(0);
            continue;
        }
        match index[d].get(code) {
            Some(&n) => coord.push(n),
            None => {
                let hint = crate::error::nearest(code, dims[d].codes.iter().map(String::as_str))
                    .map(|n| format!(" (did you mean {n:?}?)"))
                    .unwrap_or_default();
                return Err(format!("code {code:?} is not a code of variable `{}` in this table{hint}", dims[d].name));
            }
        }
    }
    let token = fields[k].to_ascii_uppercase();
    let nums = fields[k + 1..]
        .iter()
        .map(|x| x.parse::<f64>().map_err(|_| format!("{x:?} after change {token:?} is not a number")))
        .collect::<std::result::Result<Vec<f64>, String>>()?;
    let arity = |allowed: &[usize]| -> std::result::Result<(), String> {
        if allowed.contains(&nums.len()) {
            Ok(())
        } else {
            Err(format!("change {token:?} takes {allowed:?} numbers, found {}", nums.len()))
        }
    };
    let change = match token.as_str() {
        "S" => {
            arity(&[0])?;
            AprioriChange::Safe
        }
        "U" => {
            arity(&[0])?;
            AprioriChange::Unsafe
        }
        "P" => {
            arity(&[0])?;
            AprioriChange::Action(AprioriAction::ForcePublish)
        }
        "M" | "ML" => {
            arity(&[0])?;
            AprioriChange::Action(AprioriAction::ForceSuppress)
        }
        "C" | "W" => {
            arity(&[1])?;
            AprioriChange::Action(AprioriAction::Cost(nums[0]))
        }
        "PL" => {
            arity(&[2, 3])?;
            AprioriChange::Action(AprioriAction::Protection {
                lpl: nums[0],
                upl: nums[1],
                spl: nums.get(2).copied().unwrap_or(0.0),
            })
        }
        "AB" => {
            arity(&[2])?;
            AprioriChange::Action(AprioriAction::Bounds { lower: nums[0], upper: nums[1] })
        }
        other => {
            return Err(format!(
                "unknown change {other:?}; expected S, U, P, M, ML, C, W, PL or AB (tau-Argus a-priori codes)"
            ))
        }
    };
    Ok((coord, change))
}

/// Applies the status changes of an a-priori file to an assessed table, in file order: `U`
/// re-assesses the cell as manually unsafe, `P` marks it protected, `M`/`ML` suppressed, `PL`
/// raises the protection levels of a primary cell (never below the rules' levels); `S` checks
/// the cell is not primary. Costs and
/// bounds are applied on the solver's model ([`to_table_with`]). Errors name the file and line.
pub fn apply_apriori_statuses(safety: &Safety, a: &mut AssessedTable, f: &AprioriFile) -> Result<()> {
    let find: HashMap<&[u32], usize> = (0..a.cells.len()).map(|i| (a.cells.coord(i), i)).collect();
    let mut updates = Vec::new();
    let mut errs = Vec::new();
    let has_man = safety.rules.iter().any(|r| matches!(r, Rule::Man { .. }));
    for l in &f.lines {
        let Some(&i) = find.get(l.coord.as_slice()) else {
            let codes: Vec<&str> = l.coord.iter().zip(&a.cells.dims).map(|(&n, h)| h.code(n as usize)).collect();
            errs.push(f.error(l.line, format!("no cell {codes:?} in the table (the combination is empty)")));
            continue;
        };
        updates.push((l, i));
    }
    Error::collect(errs)?;
    for (l, i) in updates {
        let codes = || a.cells.codes(i).join(", ");
        let status = a.status[i];
        match &l.change {
            AprioriChange::Safe => {
                if status == CellStatus::Primary {
                    return Err(f.error(
                        l.line,
                        format!("cell ({}) is primary under the safety rules; `S` cannot publish it", codes()),
                    ));
                }
            }
            AprioriChange::Unsafe => {
                if !has_man {
                    return Err(f.error(
                        l.line,
                        format!("`U` on cell ({}) needs a MAN(r) rule in the table's safety rules", codes()),
                    ));
                }
                let r = safety.assess(&CellFacts {
                    freq: a.cells.freq[i],
                    value: a.cells.value[i],
                    top: a.cells.tops(i),
                    manual: true,
                });
                a.status[i] = r.status;
                a.lpl[i] = a.lpl[i].max(r.lpl);
                a.upl[i] = a.upl[i].max(r.upl);
            }
            AprioriChange::Action(AprioriAction::ForcePublish) => {
                if status == CellStatus::Primary {
                    return Err(f.error(
                        l.line,
                        format!("cell ({}) is primary under the safety rules; `P` cannot publish it", codes()),
                    ));
                }
                a.status[i] = CellStatus::Protected;
            }
            AprioriChange::Action(AprioriAction::ForceSuppress) => {
                if status != CellStatus::Primary {
                    a.status[i] = CellStatus::Secondary;
                }
            }
            AprioriChange::Action(AprioriAction::Protection { lpl, upl, .. }) => {
                if status != CellStatus::Primary {
                    return Err(f.error(
                        l.line,
                        format!("`PL` applies to primary cells; cell ({}) has status {}", codes(), status.letter()),
                    ));
                }
                // An a-priori level may raise protection, never lower it below what the safety
                // rules require: `sdcflow audit` re-assesses the rules and would reject it.
                a.lpl[i] = a.lpl[i].max(*lpl);
                a.upl[i] = a.upl[i].max(*upl);
            }
            AprioriChange::Action(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn dims() -> Vec<Dimension> {
        vec![
            Dimension {
                name: "geo".into(),
                codes: ["Total", "01", "0101", "0102"].map(String::from).to_vec(),
                parent: vec![None, Some(0), Some(1), Some(1)],
            },
            Dimension::flat("sex", &["1", "2"]),
        ]
    }

    fn read(text: &str, sep: u8) -> Result<AprioriFile> {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.hst");
        std::fs::write(&p, text).unwrap();
        read_apriori(&p, sep, &dims())
    }

    #[test]
    fn reads_every_tau_argus_change() {
        let f = read("# comment\n0101;1;m\n\n01;;ML\nTotal;2;P\n0102;Total;S\n0101;2;U\n0102;1;W;2.5\n0102;2;PL;3;4;1\n0101;Total;AB;0;99\n", b';')
            .unwrap();
        let got: Vec<(usize, Vec<u32>, AprioriChange)> =
            f.lines.iter().map(|l| (l.line, l.coord.clone(), l.change.clone())).collect();
        use AprioriAction::*;
        use AprioriChange::*;
        assert_eq!(
            got,
            vec![
                (2, vec![2, 1], Action(ForceSuppress)),
                (4, vec![1, 0], Action(ForceSuppress)),
                (5, vec![0, 2], Action(ForcePublish)),
                (6, vec![3, 0], Safe),
                (7, vec![2, 2], Unsafe),
                (8, vec![3, 1], Action(Cost(2.5))),
                (9, vec![3, 2], Action(Protection { lpl: 3.0, upl: 4.0, spl: 1.0 })),
                (10, vec![2, 0], Action(Bounds { lower: 0.0, upper: 99.0 })),
            ]
        );
    }

    #[test]
    fn bad_lines_are_all_reported_with_line_and_code() {
        let e = read("0101,1,M\n0103,1,M\n0101,3,M\n0101,1\n0101,1,PL,1\n0101,1,C,x\n", b',').unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let m = e.to_string();
        for want in [
            "x.hst:2",
            "\"0103\"",
            "did you mean \"0101\"",
            "x.hst:3",
            "variable `sex`",
            "x.hst:4",
            "found 2 fields",
            "x.hst:5",
            "takes [2, 3] numbers",
            "x.hst:6",
            "\"x\"",
        ] {
            assert!(m.contains(want), "want {want:?} in {m}");
        }
        assert!(!m.contains("x.hst:1:"), "{m}");
    }
}
