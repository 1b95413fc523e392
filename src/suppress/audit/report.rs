//! What the audit tells its callers: options, the report per sensitive cell, and the entry
//! points that audit a table ([`audit`]) or a problem ([`audit_problem`]) from scratch.

use crate::table::{CellStatus, Table};

use super::super::attacker::tolerance;
use super::super::problem::Problem;
use super::super::singleton;
use super::super::SuppressError;
use super::{Auditor, Cert, Checked};

/// Options of [`audit`].
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct AuditOptions {
    /// Solve two uncapped LPs per sensitive cell and report exact feasibility intervals
    /// (slower); otherwise intervals are only proven up to the required levels.
    pub exact_intervals: bool,
    /// Certify every pair with an attacker LP, never with a combinatorial witness (the
    /// reference path the witness audit is tested against; slower on large tables).
    #[serde(default)]
    pub lp_only: bool,
}

/// What proved a sensitive cell's protection (both directions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CertifiedBy {
    /// Both directions by exactly verified combinatorial witnesses ([`super::witness`]): the
    /// interval holds the proven reach, the true one may be wider.
    Witness,
    /// Both directions by attacker LPs.
    Lp,
    /// One direction each.
    Mixed,
    /// Some requirement was not proven (the cell is under-protected).
    Unproven,
}

/// Audit result of one sensitive cell.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CellAudit {
    /// Cell index.
    pub cell: usize,
    /// Attacker's lowest feasible value (proven; exact with `exact_intervals`).
    pub lo: f64,
    /// Attacker's highest feasible value (proven; exact with `exact_intervals`).
    pub hi: f64,
    /// `lo ≤ a − LPL`.
    pub lower_ok: bool,
    /// `hi ≥ a + UPL`.
    pub upper_ok: bool,
    /// `hi − lo ≥ SPL`.
    pub sliding_ok: bool,
    /// How `lo` and `hi` were proven.
    pub certified_by: CertifiedBy,
}

impl CellAudit {
    /// Whether all three requirements hold.
    pub fn protected(&self) -> bool {
        self.lower_ok && self.upper_ok && self.sliding_ok
    }
}

/// Full audit result.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AuditReport {
    /// One entry per sensitive (primary) cell, in cell order.
    pub cells: Vec<CellAudit>,
    /// Under-protected sensitive cells (cell indices).
    pub under_protected: Vec<usize>,
    /// Singleton-rule violations `(relation, sensitive cell)` (see `singleton.rs`).
    pub singleton_violations: Vec<(usize, usize)>,
    /// Number of LPs solved.
    pub lps_solved: usize,
    /// (Sensitive cell, direction) pairs certified by combinatorial witnesses, without an LP.
    #[serde(default)]
    pub witnessed: usize,
    /// (Sensitive cell, direction) pairs certified in all: by combinatorial witnesses or by
    /// attacker-LP solutions (solved by this audit, or found by the search and re-verified).
    #[serde(default)]
    pub proven: usize,
}

/// How the bounds of an audit were proven, as the run report and `sdcflow audit` both say it:
/// `proven` (sensitive cell, direction) pairs, `witnessed` of them by combinatorial witnesses, the
/// rest by attacker-LP solutions (one solution often proves several bounds), and the LPs solved.
pub fn proofs_line(proven: usize, witnessed: usize, lps_solved: usize) -> String {
    format!(
        "{proven} protection bounds proven ({witnessed} by combinatorial witnesses, {} by attacker-LP solutions; \
         {lps_solved} LPs solved)",
        proven.saturating_sub(witnessed)
    )
}

impl AuditReport {
    /// No under-protected cell and no singleton violation.
    pub fn is_clean(&self) -> bool {
        self.under_protected.is_empty() && self.singleton_violations.is_empty()
    }
}

/// Audits `statuses` on `table`: sensitive = `Primary`, suppressed = `Primary | Secondary`.
/// `singleton_rule` also reports singleton-rule violations.
pub fn audit(
    table: &Table,
    statuses: &[CellStatus],
    singleton_rule: bool,
    opts: &AuditOptions,
) -> Result<AuditReport, SuppressError> {
    let p = Problem::from_table(table, Some(statuses));
    let sup: Vec<bool> = statuses.iter().map(|s| s.is_suppressed()).collect();
    audit_problem(&p, &sup, singleton_rule, opts)
}

/// [`audit`] on a flat problem.
pub(crate) fn audit_problem(
    p: &Problem,
    sup: &[bool],
    singleton_rule: bool,
    opts: &AuditOptions,
) -> Result<AuditReport, SuppressError> {
    let mut a = Auditor::new(p, sup.to_vec());
    a.checked = Some(Checked::new(2 * p.sens.len()));
    a.exact = opts.exact_intervals;
    a.lp_only = opts.lp_only;
    a.check()?;
    let cells = a.cell_audits();
    let under_protected = cells.iter().filter(|c| !c.protected()).map(|c| c.cell).collect();
    let singleton_violations = if singleton_rule { singleton::violations(p, sup) } else { Vec::new() };
    let (witnessed, proven) = (a.witnessed(), a.proven());
    Ok(AuditReport { cells, under_protected, singleton_violations, lps_solved: a.lps, witnessed, proven })
}

impl Auditor<'_, '_> {
    /// Per-sensitive-cell results (after [`Self::check`]).
    pub fn cell_audits(&self) -> Vec<CellAudit> {
        self.p
            .sens
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let v = [0, 1].map(|d| match &self.certs[k][d] {
                    Cert::Ok(_, v) | Cert::Failed(v, _) => *v,
                    Cert::Unknown => 0.0,
                });
                let ok = [0, 1].map(|d| matches!(self.certs[k][d], Cert::Ok(..)));
                let comb = [0, 1].map(|d| matches!(self.certs[k][d], Cert::Ok(w, _) if self.combinatorial[w as usize]));
                let a = self.p.value[s.cell as usize];
                let mut c = CellAudit {
                    cell: s.cell as usize,
                    lo: a - v[0],
                    hi: a + v[1],
                    lower_ok: ok[0],
                    upper_ok: ok[1] || v[1] >= s.upl - tolerance(s.upl),
                    sliding_ok: v[0] + v[1] >= s.spl - tolerance(s.spl),
                    certified_by: CertifiedBy::Unproven,
                };
                c.certified_by = if !c.protected() {
                    CertifiedBy::Unproven
                } else if comb[0] && comb[1] {
                    CertifiedBy::Witness
                } else if comb[0] || comb[1] {
                    CertifiedBy::Mixed
                } else {
                    CertifiedBy::Lp
                };
                c
            })
            .collect()
    }
}
