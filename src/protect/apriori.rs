//! tau-Argus a-priori (`.hst`) files: what a user knows or wants about single cells before
//! protection — cells that must be safe, unsafe, published or suppressed, their costs, their
//! protection levels and the attacker's bounds.
//!
//! [`read_apriori`] parses a file against a table's code lists (every bad line reported, named
//! by file and line); [`apply_apriori_statuses`] applies the status changes to an assessed table
//! and [`AprioriFile::model_entries`] yields the changes that belong to the solver's model
//! (costs, protection levels, attacker bounds), for the run ([`super::to_table_with`]) and
//! `sdcflow audit` alike.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::rules::{AssessedTable, CellFacts, Rule, Safety};
use crate::table::{AprioriAction, AprioriEntry, CellStatus, Dimension};

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
    /// The changes of the solver's model — costs (`C`/`W`), protection levels (`PL`) and
    /// attacker bounds (`AB`) — in file order, with their lines; status changes are applied to
    /// the assessed table instead ([`apply_apriori_statuses`]).
    pub fn model_entries(&self) -> impl Iterator<Item = (&AprioriLine, AprioriEntry)> + '_ {
        self.lines.iter().filter_map(|l| match &l.change {
            AprioriChange::Action(
                act @ (AprioriAction::Cost(_) | AprioriAction::Bounds { .. } | AprioriAction::Protection { .. }),
            ) => Some((l, AprioriEntry { coord: l.coord.clone(), action: act.clone() })),
            _ => None,
        })
    }

    /// An input error naming the file and line.
    pub(crate) fn error(&self, line: usize, why: String) -> Error {
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
