//! Primary suppression: tau-Argus safety rules and protection levels.
//!
//! The stage between tabulation and protection: [`assess`] turns the tabulated
//! [`Cells`] into an [`AssessedTable`] — every cell with its primary status and protection
//! levels — which secondary suppression (`crate::protect`) and the table writer take from here.
//!
//! A safety string such as `NK(1,85)|FREQ(3,10)` is a list of rules combined with `|`; a cell is
//! unsafe (status `U`) when any rule flags it, and its protection level is the largest level any
//! flagging rule asks for (tau-Argus semantics; levels are symmetric, upper = lower).
//!
//! | rule | unsafe when | protection level |
//! |---|---|---|
//! | `FREQ(m,r)` | fewer than `m` contributors | `r/100 · T` |
//! | `NK(n,k)` | `Σ_{i≤n} x_i > k/100 · T` | `100/k · Σ_{i≤n} x_i − T` |
//! | `P(p[,n])` | `T − Σ_{i≤n+1} x_i < p/100 · x_1` | `p/100 · x_1 − (T − Σ_{i≤n+1} x_i)` |
//! | `PQ(p,q[,n])`, `P(p,q,n)` | `q/100 (T − Σ_{i≤n+1} x_i) < p/100 · x_1` | `p/100 · x_1 − q/100 (T − Σ_{i≤n+1} x_i)` |
//! | `ZERO(r)` | `T = 0` (with contributors) | `r` (absolute) |
//! | `MAN(r)` | the cell is marked manually unsafe | `r/100 · T` |
//!
//! `x_i` are the largest contributions per contributor (holding) in the cell, `T` the cell total.
//! Dominance rules (NK, P, PQ) are meaningless with negative contributions; tabulation rejects them.
//!
//! **Minimum protection.** A rule can ask for level 0 (`FREQ(3,10)` on a cell of value 0,
//! `FREQ(m,0)`, `ZERO(0)`, `MAN(0)`), and a suppressed cell with level 0 may be recalculated
//! exactly from its totals. So every primary's upper level is at least [`MIN_PROTECTION`]
//! (one unit of the response; one contributor in a frequency table), and its lower level at
//! least `min(MIN_PROTECTION, |T|)` (a nonnegative cell cannot go below 0, so a zero cell is
//! protected upwards): the attacker's feasible interval of every suppressed sensitive cell has
//! a nonzero width. tau-Argus likewise gives frequency-rule cells a protection level.
//!
//! ```
//! use sdcflow::rules::{CellFacts, Safety};
//! use sdcflow::table::CellStatus;
//! let s = Safety::parse("NK(1,85)|FREQ(3,10)").unwrap();
//! // one enterprise holds 90 of 100: dominance, level 90/0.85 − 100
//! let a = s.assess(&CellFacts { freq: 5, value: 100.0, top: &[90.0, 4.0], manual: false });
//! assert_eq!(a.status, CellStatus::Primary);
//! assert!((a.protection - (90.0 / 0.85 - 100.0)).abs() < 1e-9);
//! ```

use crate::error::{Error, Result};
use crate::table::CellStatus;
use crate::tabulate::Cells;

/// One tau-Argus sensitivity rule.
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    /// `FREQ(min, range)`: fewer than `min` contributors; level `range` % of the value.
    Freq {
        /// Minimum number of contributors for a safe cell.
        min: u64,
        /// Protection level as a percentage of the cell value.
        range: f64,
    },
    /// `NK(n, k)`: the `n` largest contributions exceed `k` % of the total.
    Nk {
        /// Number of largest contributions.
        n: usize,
        /// Threshold percentage.
        k: f64,
    },
    /// `P(p, n)` (q = 100) and `PQ(p, q, n)`: the remainder after the `n + 1` largest
    /// contributions estimates the largest within `p` % (with prior knowledge `q` %).
    Pq {
        /// Required precision percentage.
        p: f64,
        /// Prior-knowledge percentage (100 for the p% rule).
        q: f64,
        /// Number of intruders (coalition size).
        n: usize,
    },
    /// `ZERO(range)`: zero-valued cells with contributors are unsafe; absolute level `range`.
    Zero {
        /// Absolute protection level.
        range: f64,
    },
    /// `MAN(range)`: cells marked manually unsafe get `range` % of their value.
    Man {
        /// Protection level as a percentage of the cell value.
        range: f64,
    },
}

/// A parsed safety specification: rules combined with `|`.
#[derive(Debug, Clone, PartialEq)]
pub struct Safety {
    /// The rules, in the order given.
    pub rules: Vec<Rule>,
    /// The text they were parsed from.
    pub text: String,
}

/// What a rule assessment needs to know about a cell.
#[derive(Debug, Clone, Copy)]
pub struct CellFacts<'a> {
    /// Number of contributors (holdings).
    pub freq: u64,
    /// Cell total `T`.
    pub value: f64,
    /// Largest contributions, descending (at least [`Safety::top_needed`] when available).
    pub top: &'a [f64],
    /// Whether the cell is marked manually unsafe (a-priori file).
    pub manual: bool,
}

/// The primary status and protection levels of a cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Assessment {
    /// `Primary` when a rule flags the cell, `Empty` for a safe zero cell, `Safe` otherwise.
    pub status: CellStatus,
    /// The rules' symmetric protection level (the largest any flagging rule asks for); 0 for
    /// safe cells.
    pub protection: f64,
    /// Lower protection level: `protection` raised to the minimum ([`min_levels`]).
    pub lpl: f64,
    /// Upper protection level: `protection` raised to the minimum ([`min_levels`]).
    pub upl: f64,
}

/// The smallest upper protection level of a primary cell, in units of the response (one
/// contributor in a frequency table); see the module doc.
pub const MIN_PROTECTION: f64 = 1.0;

/// The minimum `(lower, upper)` protection levels of a primary cell with value `value`:
/// `(min(MIN_PROTECTION, |value|), MIN_PROTECTION)`. Why: a level of 0 lets a suppressed
/// sensitive cell be recalculated exactly; the lower level stops at `|value|` because a
/// nonnegative cell cannot be pushed below 0 (a zero cell is protected upwards).
pub fn min_levels(value: f64) -> (f64, f64) {
    (MIN_PROTECTION.min(value.abs()), MIN_PROTECTION)
}

const KNOWN: &str = "FREQ(m,r), NK(n,k), P(p[,n]), PQ(p,q[,n]), ZERO(r), MAN(r)";

impl Safety {
    /// Parses a tau-Argus safety string such as `NK(1,85)|P(10,1)|FREQ(3,10)`.
    pub fn parse(text: &str) -> Result<Self> {
        let mut rules = Vec::new();
        let err = |rule: &str, message: String| Error::Rule { rule: rule.to_string(), message };
        if text.trim().is_empty() {
            return Err(err(text, format!("no rule given; known rules: {KNOWN}")));
        }
        for part in text.split('|') {
            let part = part.trim();
            let open = part.find('(').ok_or_else(|| err(part, format!("expected NAME(args); known rules: {KNOWN}")))?;
            let inner =
                part[open + 1..].strip_suffix(')').ok_or_else(|| err(part, "missing closing parenthesis".into()))?;
            let name = part[..open].trim().to_ascii_uppercase();
            let args: Vec<f64> = inner
                .split(',')
                .map(|a| {
                    a.trim().parse::<f64>().map_err(|_| err(part, format!("argument {:?} is not a number", a.trim())))
                })
                .collect::<Result<_>>()?;
            if args.iter().any(|a| !a.is_finite() || *a < 0.0) {
                return Err(err(part, "arguments must be finite and non-negative".into()));
            }
            let int = |x: f64, what: &str| -> Result<usize> {
                if x.fract() != 0.0 || x < 1.0 {
                    Err(err(part, format!("{what} must be a whole number ≥ 1, got {x}")))
                } else {
                    Ok(x as usize)
                }
            };
            let pct = |x: f64, what: &str| -> Result<f64> {
                if x <= 0.0 || x > 100.0 {
                    Err(err(part, format!("{what} must be a percentage in (0, 100], got {x}")))
                } else {
                    Ok(x)
                }
            };
            let arity = |want: &[usize]| -> Result<()> {
                if want.contains(&args.len()) {
                    Ok(())
                } else {
                    Err(err(part, format!("{name} takes {want:?} arguments, got {}", args.len())))
                }
            };
            let rule = match name.as_str() {
                "FREQ" => {
                    arity(&[2])?;
                    if args[1] > 100.0 {
                        return Err(err(part, format!("the range must be a percentage in [0, 100], got {}", args[1])));
                    }
                    Rule::Freq { min: int(args[0], "the minimum frequency")? as u64, range: args[1] }
                }
                "NK" => {
                    arity(&[2])?;
                    Rule::Nk { n: int(args[0], "n")?, k: pct(args[1], "k")? }
                }
                "P" => {
                    arity(&[1, 2, 3])?;
                    match args.len() {
                        1 => Rule::Pq { p: pct(args[0], "p")?, q: 100.0, n: 1 },
                        2 => Rule::Pq { p: pct(args[0], "p")?, q: 100.0, n: int(args[1], "n")? },
                        _ => Rule::Pq { p: pct(args[0], "p")?, q: pct(args[1], "q")?, n: int(args[2], "n")? },
                    }
                }
                "PQ" => {
                    arity(&[2, 3])?;
                    let n = if args.len() == 3 { int(args[2], "n")? } else { 1 };
                    Rule::Pq { p: pct(args[0], "p")?, q: pct(args[1], "q")?, n }
                }
                "ZERO" => {
                    arity(&[1])?;
                    Rule::Zero { range: args[0] }
                }
                "MAN" => {
                    arity(&[1])?;
                    Rule::Man { range: args[0] }
                }
                other => {
                    let hint = crate::error::nearest(other, ["FREQ", "NK", "P", "PQ", "ZERO", "MAN"])
                        .map(|n| format!(" (did you mean {n}?)"))
                        .unwrap_or_default();
                    return Err(err(part, format!("unknown rule {other}{hint}; known rules: {KNOWN}")));
                }
            };
            if let Rule::Pq { p, q, .. } = rule {
                if p >= q {
                    return Err(err(part, format!("p ({p}) must be smaller than q ({q})")));
                }
            }
            rules.push(rule);
        }
        let dominance = rules.iter().filter(|r| matches!(r, Rule::Nk { .. } | Rule::Pq { .. })).count();
        let freq = rules.iter().filter(|r| matches!(r, Rule::Freq { .. })).count();
        if dominance > 4 || freq > 2 {
            return Err(err(text, "at most 4 NK/P rules and 2 FREQ rules may be combined (tau-Argus)".into()));
        }
        Ok(Self { rules, text: text.to_string() })
    }

    /// How many largest contributions per cell the rules need (at least 2, for `top1`/`top2`).
    pub fn top_needed(&self) -> usize {
        self.rules
            .iter()
            .map(|r| match r {
                Rule::Nk { n, .. } => *n,
                Rule::Pq { n, .. } => n + 1,
                _ => 0,
            })
            .max()
            .unwrap_or(0)
            .max(2)
    }

    /// Whether any rule looks at individual contributions (NK, P, PQ), which requires
    /// non-negative contributions.
    pub fn has_dominance(&self) -> bool {
        self.rules.iter().any(|r| matches!(r, Rule::Nk { .. } | Rule::Pq { .. }))
    }

    /// Applies every rule to a cell; the largest protection level wins.
    pub fn assess(&self, c: &CellFacts<'_>) -> Assessment {
        let top = |i: usize| c.top.get(i).copied().unwrap_or(0.0).max(0.0);
        let sum_top = |n: usize| (0..n).map(top).sum::<f64>();
        let t = c.value;
        let mut unsafe_ = false;
        let mut level: f64 = 0.0;
        let mut flag = |l: f64| {
            unsafe_ = true;
            level = level.max(l.max(0.0));
        };
        for r in &self.rules {
            match *r {
                Rule::Freq { min, range } => {
                    if c.freq < min {
                        flag(range / 100.0 * t.abs());
                    }
                }
                Rule::Nk { n, k } => {
                    let s = sum_top(n);
                    if s > k / 100.0 * t {
                        flag(100.0 / k * s - t);
                    }
                }
                Rule::Pq { p, q, n } => {
                    let x1 = top(0);
                    let rest = (t - sum_top(n + 1)).max(0.0);
                    if q / 100.0 * rest < p / 100.0 * x1 {
                        flag(p / 100.0 * x1 - q / 100.0 * rest);
                    }
                }
                Rule::Zero { range } => {
                    if t == 0.0 && c.freq > 0 {
                        flag(range);
                    }
                }
                Rule::Man { range } => {
                    if c.manual {
                        flag(range / 100.0 * t.abs());
                    }
                }
            }
        }
        if unsafe_ {
            let (lo, up) = min_levels(t);
            Assessment { status: CellStatus::Primary, protection: level, lpl: level.max(lo), upl: level.max(up) }
        } else if t == 0.0 {
            // A safe cell with a zero total is a zero cell (`Z`): nothing to protect.
            Assessment { status: CellStatus::Empty, protection: 0.0, lpl: 0.0, upl: 0.0 }
        } else {
            Assessment { status: CellStatus::Safe, protection: 0.0, lpl: 0.0, upl: 0.0 }
        }
    }
}

/// A tabulated table with its primary statuses and protection levels.
#[derive(Debug, Clone)]
pub struct AssessedTable {
    /// The cells.
    pub cells: Cells,
    /// Status per cell.
    pub status: Vec<CellStatus>,
    /// Lower protection level per cell.
    pub lpl: Vec<f64>,
    /// Upper protection level per cell.
    pub upl: Vec<f64>,
}

/// Applies the safety rules to every cell of a tabulated table (or chunk of one).
pub fn assess(safety: &Safety, cells: Cells) -> AssessedTable {
    let mut status = Vec::with_capacity(cells.len());
    let mut lpl = Vec::with_capacity(cells.len());
    let mut upl = Vec::with_capacity(cells.len());
    for i in 0..cells.len() {
        let a =
            safety.assess(&CellFacts { freq: cells.freq[i], value: cells.value[i], top: cells.tops(i), manual: false });
        status.push(a.status);
        lpl.push(a.lpl);
        upl.push(a.upl);
    }
    AssessedTable { cells, status, lpl, upl }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(freq: u64, value: f64, top: &[f64]) -> CellFacts<'_> {
        CellFacts { freq, value, top, manual: false }
    }

    #[test]
    fn parse_and_top_needed() {
        let s = Safety::parse("nk(2, 80) | P(10,2) | FREQ(3,10)").unwrap();
        assert_eq!(s.rules.len(), 3);
        assert_eq!(s.top_needed(), 3);
        assert_eq!(Safety::parse("P(10,20,1)").unwrap().rules[0], Rule::Pq { p: 10.0, q: 20.0, n: 1 });
        assert_eq!(Safety::parse("PQ(10,20)").unwrap().rules[0], Rule::Pq { p: 10.0, q: 20.0, n: 1 });
    }

    #[test]
    fn parse_errors_are_clear() {
        for (s, want) in [
            ("NKK(1,85)", "did you mean NK"),
            ("NK(1,85", "closing parenthesis"),
            ("NK(1,x)", "not a number"),
            ("NK(0,85)", "whole number"),
            ("NK(1,150)", "percentage"),
            ("FREQ(3)", "takes [2] arguments"),
            ("FREQ(3,150)", "percentage in [0, 100]"),
            ("PQ(30,20)", "smaller than q"),
            ("", "no rule"),
            ("NK(1,80)|NK(2,80)|NK(3,80)|P(10)|P(20)", "at most 4"),
        ] {
            let e = Safety::parse(s).unwrap_err().to_string();
            assert!(e.contains(want), "{s}: {e}");
            assert_eq!(Safety::parse(s).unwrap_err().exit_code(), 2);
        }
    }

    #[test]
    fn freq_rule() {
        let s = Safety::parse("FREQ(3,10)").unwrap();
        let a = s.assess(&facts(2, 200.0, &[150.0, 50.0]));
        assert_eq!(a.status, CellStatus::Primary);
        assert!((a.protection - 20.0).abs() < 1e-12);
        assert_eq!(s.assess(&facts(3, 200.0, &[150.0, 40.0])).status, CellStatus::Safe);
        // one contributor
        assert_eq!(s.assess(&facts(1, 7.0, &[7.0])).status, CellStatus::Primary);
    }

    #[test]
    fn nk_rule_by_hand() {
        let s = Safety::parse("NK(1,85)").unwrap();
        // 86 > 85 → unsafe, level 86/0.85 − 100 = 1.17647…
        let a = s.assess(&facts(3, 100.0, &[86.0, 10.0]));
        assert_eq!(a.status, CellStatus::Primary);
        assert!((a.protection - (86.0 / 0.85 - 100.0)).abs() < 1e-9);
        assert_eq!(s.assess(&facts(3, 100.0, &[85.0, 10.0])).status, CellStatus::Safe);
        // NK(2,90): 60 + 35 = 95 > 90; level 95/0.9 − 100
        let s = Safety::parse("NK(2,90)").unwrap();
        let a = s.assess(&facts(4, 100.0, &[60.0, 35.0, 3.0]));
        assert!((a.protection - (95.0 / 0.9 - 100.0)).abs() < 1e-9);
        // one contributor always dominates
        let a = Safety::parse("NK(1,85)").unwrap().assess(&facts(1, 50.0, &[50.0]));
        assert_eq!(a.status, CellStatus::Primary);
    }

    #[test]
    fn p_and_pq_rules_by_hand() {
        // T = 100, x1 = 50, x2 = 45: remainder 5 < 10% of 50 = 5? no (equal) → safe
        let p = Safety::parse("P(10)").unwrap();
        assert_eq!(p.assess(&facts(3, 100.0, &[50.0, 45.0, 5.0])).status, CellStatus::Safe);
        // x2 = 46: remainder 4 < 5 → unsafe, level 5 − 4 = 1
        let a = p.assess(&facts(3, 100.0, &[50.0, 46.0, 4.0]));
        assert_eq!(a.status, CellStatus::Primary);
        assert!((a.protection - 1.0).abs() < 1e-9);
        // PQ(10,50): 0.5 * 4 = 2 < 5 → level 5 − 2 = 3
        let a = Safety::parse("PQ(10,50)").unwrap().assess(&facts(3, 100.0, &[50.0, 46.0, 4.0]));
        assert!((a.protection - 3.0).abs() < 1e-9);
        // two intruders: P(10,2): remainder after 3 largest
        let a = Safety::parse("P(10,2)").unwrap().assess(&facts(4, 100.0, &[40.0, 30.0, 28.0, 2.0]));
        assert!((a.protection - (4.0 - 2.0)).abs() < 1e-9);
    }

    #[test]
    fn zero_cells_and_largest_level_wins() {
        let s = Safety::parse("ZERO(5)|FREQ(3,10)").unwrap();
        let a = s.assess(&facts(4, 0.0, &[0.0, 0.0]));
        assert_eq!((a.status, a.protection), (CellStatus::Primary, 5.0));
        let s = Safety::parse("FREQ(3,10)").unwrap();
        assert_eq!(s.assess(&facts(4, 0.0, &[0.0, 0.0])).status, CellStatus::Empty);
        // zero total with all-zero contributions is not dominated
        assert_eq!(Safety::parse("NK(1,85)").unwrap().assess(&facts(3, 0.0, &[0.0])).status, CellStatus::Empty);
        // both FREQ (level 10) and NK (level 100/0.85 − 100 = 17.6…) flag: the larger wins
        let s = Safety::parse("NK(1,85)|FREQ(3,10)").unwrap();
        let a = s.assess(&facts(1, 100.0, &[100.0]));
        assert!((a.protection - (100.0 / 0.85 - 100.0)).abs() < 1e-9);
    }

    #[test]
    fn primaries_never_get_level_zero() {
        // FREQ on a zero cell: the rule asks for 10 % of 0; the minimum keeps it recoverable
        // only up to an interval of width ≥ 1 (upwards: the cell cannot go below 0).
        let s = Safety::parse("FREQ(3,10)").unwrap();
        let a = s.assess(&facts(2, 0.0, &[0.0, 0.0]));
        assert_eq!((a.status, a.protection, a.lpl, a.upl), (CellStatus::Primary, 0.0, 0.0, MIN_PROTECTION));
        // FREQ(m,0) on a positive cell: both directions get the minimum.
        let a = Safety::parse("FREQ(3,0)").unwrap().assess(&facts(1, 40.0, &[40.0]));
        assert_eq!((a.lpl, a.upl), (1.0, 1.0));
        // A small cell: the lower level stops at the value.
        let a = Safety::parse("FREQ(3,0)").unwrap().assess(&facts(1, 0.25, &[0.25]));
        assert_eq!((a.lpl, a.upl), (0.25, 1.0));
        // Levels above the minimum are kept; safe cells get none.
        let a = s.assess(&facts(2, 200.0, &[150.0, 50.0]));
        assert_eq!((a.lpl, a.upl), (20.0, 20.0));
        assert_eq!(s.assess(&facts(5, 200.0, &[50.0, 50.0])).upl, 0.0);
    }

    #[test]
    fn manual_rule() {
        let s = Safety::parse("MAN(20)").unwrap();
        let mut f = facts(10, 50.0, &[5.0, 5.0]);
        assert_eq!(s.assess(&f).status, CellStatus::Safe);
        f.manual = true;
        assert_eq!(s.assess(&f).protection, 10.0);
    }
}
