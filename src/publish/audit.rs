//! `sdcflow audit`: the attacker-LP audit of a table that was already written.
//!
//! Why: a publication must be checkable after the fact and independently of the method that
//! produced it — by sdcflow (every run already audits before it writes), after a manual edit,
//! or for another tool's output (the tau-Argus comparison in `benches/tauargus_compare.py`
//! audits tau-Argus's patterns this way). The input is `OUT/<table>/cells.parquet` (codes,
//! `freq`, `value`, `top1`, `top2`, `status`, `lpl`, `upl`) and the job file, which supplies
//! the variables' hierarchies (so the additivity relations can be rebuilt), the safety rules
//! and the table's a-priori file (attacker bounds, sliding protection levels).
//!
//! Checks, all fail closed (exit 1 with the cells named): (1) every cell marked `U` keeps its
//! feasibility interval `[lo, hi]` wide enough for its protection levels when the attacker
//! solves the min/max LPs over the published cells, relations and bounds
//! ([`crate::suppress::audit`]); (2) the singleton rule (unless the job sets `singleton =
//! false`); (3) when the rules can be re-evaluated from the stored columns (at most two largest
//! contributions needed), no cell the rules flag is published. Cells the rules flag that are
//! suppressed but not marked `U` are audited as sensitive too. The file must be internally
//! consistent: unknown codes, unknown statuses, missing marginals or
//! marginals that do not add up are input errors (exit 2).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Float64Type, UInt64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::error::{Error, Result};
use crate::hierarchy::{Hierarchy, HierarchySpec, TOTAL};
use crate::job::{Job, TableJob};
use crate::publish::table::column;
use crate::rules::CellFacts;
use crate::suppress::{audit, AuditOptions};
use crate::table::{AprioriAction, Cell, CellStatus, Dimension, Table};

/// The audit outcome of one sensitive cell.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CellInterval {
    /// Codes of the cell, in the table's variable order.
    pub codes: Vec<String>,
    /// Published-or-not status letter in the file (`U` for a primary).
    pub status: String,
    /// The true value.
    pub value: f64,
    /// Lower protection level.
    pub lpl: f64,
    /// Upper protection level.
    pub upl: f64,
    /// Attacker's lowest feasible value.
    pub lo: f64,
    /// Attacker's highest feasible value.
    pub hi: f64,
    /// Whether the interval covers `[value − lpl, value + upl]` (and the sliding level).
    pub protected: bool,
}

/// Result of auditing one written table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AuditOutcome {
    /// Table name.
    pub table: String,
    /// Variables, in code order of [`CellInterval::codes`].
    pub variables: Vec<String>,
    /// Cells in the file.
    pub cells: usize,
    /// Suppressed cells (`U` and `M`).
    pub suppressed: usize,
    /// One entry per sensitive cell.
    pub intervals: Vec<CellInterval>,
    /// Codes of under-protected sensitive cells.
    pub under_protected: Vec<Vec<String>>,
    /// Codes of sensitive cells a singleton respondent can recover (singleton rule).
    pub singleton_violations: Vec<Vec<String>>,
    /// Codes of cells the safety rules flag that are published.
    pub published_sensitive: Vec<Vec<String>>,
    /// Attacker LPs solved.
    pub lps_solved: usize,
    /// Sensitive-cell bounds proven by exact combinatorial witnesses instead of LPs.
    pub witnessed: usize,
    /// Sensitive-cell bounds proven in all (witnesses and attacker-LP solutions).
    pub proven: usize,
    /// Whether intervals are exact (else proven only up to the protection levels).
    pub exact_intervals: bool,
}

impl AuditOutcome {
    /// No finding of any kind.
    pub fn is_clean(&self) -> bool {
        self.under_protected.is_empty() && self.singleton_violations.is_empty() && self.published_sensitive.is_empty()
    }

    /// The findings as an error (exit 1), naming up to 20 cells per kind; `Ok` when clean.
    pub fn check(&self) -> Result<()> {
        if self.is_clean() {
            return Ok(());
        }
        let list = |v: &[Vec<String>]| {
            let shown: Vec<String> = v.iter().take(20).map(|c| format!("({})", c.join(", "))).collect();
            let more = if v.len() > 20 { format!(" … and {} more", v.len() - 20) } else { String::new() };
            format!("{}{more}", shown.join(", "))
        };
        let mut parts = Vec::new();
        if !self.under_protected.is_empty() {
            parts.push(format!(
                "{} under-protected sensitive cells ({}): {}",
                self.under_protected.len(),
                self.variables.join(", "),
                list(&self.under_protected)
            ));
        }
        if !self.singleton_violations.is_empty() {
            parts.push(format!(
                "{} sensitive cells recoverable by a singleton respondent: {}",
                self.singleton_violations.len(),
                list(&self.singleton_violations)
            ));
        }
        if !self.published_sensitive.is_empty() {
            parts.push(format!(
                "{} cells the safety rules flag are published: {}",
                self.published_sensitive.len(),
                list(&self.published_sensitive)
            ));
        }
        Err(Error::Protection { table: self.table.clone(), message: format!("audit failed: {}", parts.join("; ")) })
    }

    /// Writes the intervals as CSV (codes, status, value, lpl, upl, lo, hi, protected).
    pub fn write_csv(&self, path: &Path) -> Result<()> {
        use std::io::Write;
        let io = |e| Error::io(path, e);
        let mut w = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
        self.write_csv_to(&mut w).map_err(io)?;
        w.flush().map_err(io)
    }

    /// [`Self::write_csv`] to any writer (e.g. standard output); codes are quoted when needed.
    pub fn write_csv_to(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        let q = |s: &str| {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        let head: Vec<String> = self.variables.iter().map(|v| q(v)).collect();
        writeln!(w, "{},status,value,lpl,upl,lo,hi,protected", head.join(","))?;
        for c in &self.intervals {
            let codes: Vec<String> = c.codes.iter().map(|v| q(v)).collect();
            writeln!(
                w,
                "{},{},{},{},{},{},{},{}",
                codes.join(","),
                c.status,
                c.value,
                c.lpl,
                c.upl,
                c.lo,
                c.hi,
                c.protected
            )?;
        }
        Ok(())
    }
}

/// The table a `cells.parquet` (or a `cells` folder of parts, or one of its parts) belongs to:
/// `name`, or the name of the folder holding the file or `cells` folder.
fn table_of<'j>(job: &'j Job, cells: &Path, name: Option<&str>) -> Result<&'j TableJob> {
    let mut dir = if cells.is_dir() { Some(cells) } else { cells.parent() };
    if dir.is_some_and(|d| d.file_name().is_some_and(|n| n == "cells")) {
        dir = dir.and_then(Path::parent);
    }
    let guess = dir.and_then(|d| d.file_name()).map(|n| n.to_string_lossy().into_owned());
    let wanted = name.map(str::to_string).or(guess).unwrap_or_default();
    job.tables.iter().find(|t| t.name == wanted).ok_or_else(|| {
        Error::job(
            &job.path,
            format!(
                "no [[table]] named {wanted:?} (tables: {}); pass --table",
                job.tables.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
        )
    })
}

/// Columns of a written table.
struct Columns {
    codes: Vec<Vec<String>>,
    freq: Vec<u64>,
    value: Vec<f64>,
    top1: Vec<f64>,
    top2: Vec<f64>,
    status: Vec<String>,
    lpl: Vec<f64>,
    upl: Vec<f64>,
}

/// The cells of a written table: one Parquet file, or a local folder of parts (a
/// primaries-only table, [`super::parts`]) read in name order.
fn read_columns(path: &Path, variables: &[String]) -> Result<Columns> {
    let mut c = Columns {
        codes: vec![Vec::new(); variables.len()],
        freq: Vec::new(),
        value: Vec::new(),
        top1: Vec::new(),
        top2: Vec::new(),
        status: Vec::new(),
        lpl: Vec::new(),
        upl: Vec::new(),
    };
    if path.is_dir() {
        let mut parts: Vec<std::path::PathBuf> = std::fs::read_dir(path)
            .map_err(|e| Error::io(path, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
            .collect();
        parts.sort();
        if parts.is_empty() {
            return Err(Error::data(path.display().to_string(), "no Parquet parts in this folder"));
        }
        for p in parts {
            let bytes = std::fs::read(&p).map_err(|e| Error::io(&p, e))?;
            read_file_columns(&p.display().to_string(), bytes, variables, &mut c)?;
        }
        return Ok(c);
    }
    let name = path.display().to_string();
    let bytes = if name.starts_with("s3://") {
        // An object-store output is read through its manifest (the published run).
        let handle = tokio::runtime::Handle::try_current().map_err(|e| Error::Internal(e.to_string()))?;
        tokio::task::block_in_place(|| handle.block_on(crate::publish::staging::read_location(&name)))?
    } else {
        std::fs::read(path).map_err(|e| Error::io(path, e))?
    };
    read_file_columns(&name, bytes, variables, &mut c)?;
    Ok(c)
}

/// Appends the cells of one Parquet file (`bytes`, called `name` in messages) to `c`.
fn read_file_columns(name: &str, bytes: Vec<u8>, variables: &[String], c: &mut Columns) -> Result<()> {
    let name = name.to_string();
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
        .map_err(|e| Error::data(&name, format!("not a Parquet file: {e}")))?
        .build()
        .map_err(|e| Error::data(&name, e.to_string()))?;
    for b in reader {
        let b = b.map_err(|e| Error::data(&name, e.to_string()))?;
        let col = |n: &str, ty: &DataType| -> Result<std::sync::Arc<dyn Array>> {
            let a = b.column_by_name(n).ok_or_else(|| Error::data(&name, format!("missing column `{n}`")))?;
            arrow::compute::cast(a, ty).map_err(|e| Error::data(&name, format!("column `{n}`: {e}")))
        };
        let f64s = |n: &str| -> Result<Vec<f64>> {
            let a = col(n, &DataType::Float64)?;
            if a.null_count() > 0 {
                return Err(Error::data(&name, format!("column `{n}` has nulls")));
            }
            Ok(a.as_primitive::<Float64Type>().values().to_vec())
        };
        let strs = |n: &str| -> Result<Vec<String>> {
            let a = col(n, &DataType::Utf8)?;
            let s = a.as_string::<i32>();
            Ok((0..s.len()).map(|i| s.value(i).to_string()).collect())
        };
        for (d, v) in variables.iter().enumerate() {
            c.codes[d].extend(strs(v)?);
        }
        let freq = col(column::FREQ, &DataType::UInt64)?;
        c.freq.extend(freq.as_primitive::<UInt64Type>().values().iter().copied());
        c.value.extend(f64s(column::VALUE)?);
        c.top1.extend(f64s(column::TOP1)?);
        c.top2.extend(f64s(column::TOP2)?);
        c.status.extend(strs(column::STATUS)?);
        c.lpl.extend(f64s(column::LPL)?);
        c.upl.extend(f64s(column::UPL)?);
    }
    Ok(())
}

/// A cell named by its codes, e.g. `geo=1101, sex=Total`.
pub fn cell_name(variables: &[String], codes: &[&str]) -> String {
    variables.iter().zip(codes).map(|(v, c)| format!("{v}={c}")).collect::<Vec<_>>().join(", ")
}

/// Fails on a NaN or infinite number in the file: it is a damaged input, not an audit finding.
fn check_finite(c: &Columns, variables: &[String], file: &str) -> Result<()> {
    let numbers = [
        (column::VALUE, &c.value),
        (column::TOP1, &c.top1),
        (column::TOP2, &c.top2),
        (column::LPL, &c.lpl),
        (column::UPL, &c.upl),
    ];
    for (column, values) in numbers {
        let bad: Vec<usize> = (0..values.len()).filter(|&i| !values[i].is_finite()).collect();
        if let Some(&first) = bad.first() {
            let codes: Vec<&str> = c.codes.iter().map(|d| d[first].as_str()).collect();
            return Err(Error::data(
                file,
                format!(
                    "column `{column}` has {} NaN or infinite values, the first {} in cell ({}); the file is damaged",
                    bad.len(),
                    values[first],
                    cell_name(variables, &codes)
                ),
            ));
        }
    }
    Ok(())
}

/// Rebuilds a variable's hierarchy from the job and the codes in the file.
fn dimension(job: &Job, variable: &str, codes: &[String], file: &str) -> Result<Dimension> {
    let spec = job.hierarchies.get(variable).cloned().unwrap_or(HierarchySpec::Flat);
    let distinct: BTreeSet<&String> = codes.iter().filter(|c| c.as_str() != TOTAL).collect();
    let data: Vec<String> = match &spec {
        HierarchySpec::Flat => distinct.iter().map(|c| c.to_string()).collect(),
        HierarchySpec::Levels(w) => {
            let full: usize = w.iter().sum();
            distinct.iter().filter(|c| c.chars().count() == full).map(|c| c.to_string()).collect()
        }
        HierarchySpec::Hrc { .. } | HierarchySpec::Mapping(_) => Vec::new(),
    };
    let h = Hierarchy::resolve(variable, &spec, &data)?;
    let unknown: Vec<&str> = distinct.iter().filter(|c| h.index(c).is_none()).map(|c| c.as_str()).collect();
    if !unknown.is_empty() {
        return Err(Error::data(
            file,
            format!(
                "column `{variable}`: {} codes are not in the variable's hierarchy: {}",
                unknown.len(),
                crate::hierarchy::preview(unknown.into_iter())
            ),
        ));
    }
    Ok(Dimension {
        name: variable.to_string(),
        codes: h.nodes().iter().map(|n| n.code.clone()).collect(),
        parent: h.nodes().iter().map(|n| n.parent).collect(),
    })
}

/// Audits the written table `cells` of `job` (table `name`, default: the file's directory
/// name). `exact_intervals` solves two uncapped LPs per sensitive cell so the reported
/// intervals are the attacker's exact ones.
pub fn audit_output(
    cells: &Path,
    job: &Job,
    name: Option<&str>,
    exact_intervals: bool,
    progress: &crate::progress::Progress,
) -> Result<AuditOutcome> {
    let t = table_of(job, cells, name)?;
    let file = cells.display().to_string();
    let stage = progress.stage(&format!("{}: reading {file}", t.name), 1);
    let c = read_columns(cells, &t.explanatory)?;
    stage.finish();
    check_finite(&c, &t.explanatory, &file)?;
    let dims: Vec<Dimension> =
        t.explanatory.iter().enumerate().map(|(d, v)| dimension(job, v, &c.codes[d], &file)).collect::<Result<_>>()?;
    let index: Vec<HashMap<&str, u32>> =
        dims.iter().map(|d| d.codes.iter().enumerate().map(|(i, c)| (c.as_str(), i as u32)).collect()).collect();
    let recheck = t.safety.top_needed() <= 2;
    let n = c.value.len();
    let mut model = Vec::with_capacity(n);
    let mut published_sensitive = Vec::new();
    for i in 0..n {
        let codes: Vec<String> = (0..dims.len()).map(|d| c.codes[d][i].clone()).collect();
        let coord: Vec<u32> = codes.iter().enumerate().map(|(d, code)| index[d][code.as_str()]).collect();
        let mut status = CellStatus::from_letter(&c.status[i]).ok_or_else(|| {
            Error::data(&file, format!("cell ({}): unknown status {:?}", codes.join(", "), c.status[i]))
        })?;
        let (mut lpl, mut upl) = (c.lpl[i], c.upl[i]);
        if recheck {
            let a = t.safety.assess(&CellFacts {
                freq: c.freq[i],
                value: c.value[i],
                top: &[c.top1[i], c.top2[i]],
                manual: false,
            });
            if a.status == CellStatus::Primary {
                if !status.is_suppressed() {
                    published_sensitive.push(codes.clone());
                } else {
                    status = CellStatus::Primary;
                    lpl = lpl.max(a.lpl);
                    upl = upl.max(a.upl);
                }
            }
        }
        if status == CellStatus::Primary {
            // The run's minimum levels hold for every sensitive cell, also when the rules
            // cannot be re-evaluated from the stored columns.
            let (l, u) = crate::rules::min_levels(c.value[i]);
            lpl = lpl.max(l);
            upl = upl.max(u);
        }
        let mut cell = Cell::new(coord, c.value[i], c.freq[i]);
        cell.top1 = c.top1[i];
        cell.top2 = c.top2[i];
        cell.status = status;
        cell.lpl = lpl;
        cell.upl = upl;
        model.push(cell);
    }
    let mut table = Table::new(dims.clone(), model)
        .map_err(|e| Error::data(&file, format!("the cells do not form an additive table: {}", e.describe(&dims))))?;
    if let Some(ap) = &t.apriori {
        let f = crate::protect::read_apriori(ap, t.apriori_separator, &dims)?;
        let mut entries = Vec::new();
        // The model-level changes, as in the run; costs do not change what an attacker learns.
        for (l, entry) in f.model_entries() {
            let Some(i) = table.find(&l.coord) else { continue };
            match entry.action {
                AprioriAction::Bounds { .. } => entries.push(entry),
                AprioriAction::Protection { lpl, upl, spl } => {
                    // As in the run: `PL` raises a primary's levels, never lowers them.
                    let cell = &table.cells()[i];
                    if cell.status == CellStatus::Primary {
                        let (l, u, s) = (cell.lpl.max(lpl), cell.upl.max(upl), cell.spl.max(spl));
                        table.set_protection(i, l, u, s);
                    }
                }
                _ => {}
            }
        }
        crate::table::apriori::apply(&mut table, &entries)
            .map_err(|e| Error::data(ap.display().to_string(), e.to_string()))?;
    }
    let statuses = table.statuses();
    // The attacker's LPs are most of the time on a large table; one stage, so it is visible.
    let stage = progress.stage(&format!("{}: attacker LPs over {} cells", t.name, table.cells().len()), 1);
    let rep = audit(&table, &statuses, t.singleton_rule, &AuditOptions { exact_intervals, ..Default::default() })
        .map_err(|e| Error::Protection { table: t.name.clone(), message: format!("audit: {e}") })?;
    stage.finish();
    let codes_of = |i: usize| -> Vec<String> { (0..dims.len()).map(|d| c.codes[d][i].clone()).collect() };
    let intervals = rep
        .cells
        .iter()
        .map(|a| {
            let cell = &table.cells()[a.cell];
            CellInterval {
                codes: codes_of(a.cell),
                status: c.status[a.cell].clone(),
                value: cell.value,
                lpl: cell.lpl,
                upl: cell.upl,
                lo: a.lo,
                hi: a.hi,
                protected: a.protected(),
            }
        })
        .collect();
    let mut singles: Vec<usize> = rep.singleton_violations.iter().map(|v| v.1).collect();
    singles.sort_unstable();
    singles.dedup();
    Ok(AuditOutcome {
        table: t.name.clone(),
        variables: t.explanatory.clone(),
        cells: n,
        suppressed: statuses.iter().filter(|s| s.is_suppressed()).count(),
        intervals,
        under_protected: rep.under_protected.iter().map(|&i| codes_of(i)).collect(),
        singleton_violations: singles.into_iter().map(codes_of).collect(),
        published_sensitive,
        lps_solved: rep.lps_solved,
        witnessed: rep.witnessed,
        proven: rep.proven,
        exact_intervals,
    })
}

/// Where `sdcflow audit --out` writes: `.json` → JSON, anything else → CSV.
pub fn write_outcome(outcome: &AuditOutcome, path: &PathBuf) -> Result<()> {
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
        let json = serde_json::to_vec_pretty(outcome).map_err(|e| Error::Internal(e.to_string()))?;
        std::fs::write(path, json).map_err(|e| Error::io(path, e))
    } else {
        outcome.write_csv(path)
    }
}
