//! The singleton rule (tau-Argus's singleton protection), as a pattern-level check.
//!
//! Why: a contributor knows its own contribution. If a cell has exactly one contributor
//! (`freq == 1`), that respondent knows the cell value exactly, so for them the cell is as good
//! as published. Rule implemented: in every relation with exactly two suppressed cells where
//! one is sensitive and the *other* is a singleton, the singleton's respondent can compute the
//! sensitive cell as `±(published sum) ∓ own value`; a third suppression is required in that
//! relation. This also covers the classic case of two singleton primaries in one relation.
//! Limits: it is relation-local. A singleton respondent who combines several relations, or
//! a chain where its knowledge pins a cell that then pins another, is not detected (that
//! would need one attacker LP per singleton with its cell fixed). Two-contributor cells are
//! handled by the protection levels: the p% rule's level `(p/100)·x1 − (T − x1 − x2)` already
//! assumes the second-largest contributor knows its own value.

use super::problem::Problem;

/// Whether the singleton `s` can recover the sensitive `t` when they are the only suppressed
/// cells of relation `r`. Not when `s` is the marginal of `t` (its one respondent is `t`'s only
/// contributor), nor when `t` is the marginal with one contributor (the same respondent).
fn recovers(p: &Problem, r: usize, s: u32, t: u32) -> bool {
    if !p.sens_of.contains_key(&t) || p.freq[s as usize] != 1 {
        return false;
    }
    let total = p.rel.total(r);
    !(s == total || (t == total && p.freq[t as usize] <= 1))
}

/// Cells whose publication may break the singleton rule elsewhere: some relation through the
/// cell holds a sensitive cell and a singleton that recovers it ([`recovers`]), both other
/// cells. Why it matters: a secondary alone in a relation is known, and dropping it keeps
/// every attacker interval, so the exact master may require a partner for it (a valid row for
/// some optimal pattern) — unless dropping it leaves such a pair alone in a relation.
pub(crate) fn exposed(p: &Problem) -> Vec<bool> {
    let mut out = vec![false; p.n()];
    for r in 0..p.rel.len() {
        let singletons: Vec<u32> = p.rel.members(r).filter(|&m| p.freq[m as usize] == 1).collect();
        if singletons.is_empty() {
            continue;
        }
        let sensitive: Vec<u32> = p.rel.members(r).filter(|m| p.sens_of.contains_key(m)).collect();
        // A cell is exposed unless it is in every recovering pair: the pairs' common cells.
        let mut common: Option<Vec<u32>> = None;
        'pairs: for &s in &singletons {
            for &t in &sensitive {
                if s != t && recovers(p, r, s, t) {
                    let c = common.get_or_insert_with(|| vec![s, t]);
                    c.retain(|&m| m == s || m == t);
                    if c.is_empty() {
                        break 'pairs;
                    }
                }
            }
        }
        if let Some(c) = common {
            for m in p.rel.members(r).filter(|m| !c.contains(m)) {
                out[m as usize] = true;
            }
        }
    }
    out
}

/// Violation of relation `r` under `sup`: `Some(sensitive cell)` when broken.
pub(crate) fn relation_violation(p: &Problem, sup: &[bool], r: usize) -> Option<usize> {
    let mut s = p.rel.members(r).filter(|&m| sup[m as usize]);
    let a = s.next()?;
    let b = s.next()?;
    if s.next().is_some() {
        return None;
    }
    if recovers(p, r, b, a) {
        Some(a as usize)
    } else if recovers(p, r, a, b) {
        Some(b as usize)
    } else {
        None
    }
}

/// All violations `(relation, sensitive cell)` in relation order.
pub(crate) fn violations(p: &Problem, sup: &[bool]) -> Vec<(usize, usize)> {
    (0..p.rel.len()).filter_map(|r| relation_violation(p, sup, r).map(|c| (r, c))).collect()
}

/// Violations among the relations of cell `i` only.
pub(crate) fn violations_near(p: &Problem, sup: &[bool], i: usize) -> Vec<(usize, usize)> {
    p.rel.of_cell(i).iter().filter_map(|&r| relation_violation(p, sup, r as usize).map(|c| (r as usize, c))).collect()
}
