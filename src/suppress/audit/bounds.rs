//! Attacker-LP bounds: for each (sensitive cell, direction) not yet certified, the attacker's
//! optimum over a local ball or its component ([`super::super::attacker::CompLp`]) — batch LPs
//! certifying several targets at once, single LPs for the rest — and, for a shortfall, the
//! capacity cut from its duals.

use rayon::prelude::*;

use super::super::attacker::{tolerance, Attack, CompLp, Cut, Solves};
use super::super::problem::Problem;
use super::super::SuppressError;
use super::pinned::Pinned;
use super::{is_sliding, need, tick, Auditor, Cert, Checked};

/// A whole-table audit with at least this many open targets skips the single ball LPs of a
/// radius whose batch LPs (one per ball) certified fewer than one target in
/// [`FUTILE_BALL_SHARE`]: the balls are then too small for the pattern's protection levels,
/// and single LPs over the same balls fail too. Measured on HiTaS's merged pattern of a
/// 5-dimensional census table (c5-persons, 90,679 cells suppressed, 67,843 open bounds): the
/// 3-hop balls of <= 400 cells decided 19 of them with 70,940 LPs in 145 s, the 6-hop balls of
/// <= 5,000 cells 209 with 68,226 LPs in 1,033 s; their batch LPs alone take 5.5 and 6.5 s on
/// a like merge (93,519 cells, 46,121 open bounds, 4 decided). Exact either way:
/// the targets stay open for the larger balls and the component LPs. Neither cleanups (a few
/// lost certificates per trial) nor the realistic suite's 11 k-cell tables (at most ~14,000
/// bounds, re-certified at once by a cleanup's [`Auditor::localize`]) reach the threshold, so
/// their witnesses are unchanged; nor do tables above `KEEP_HELD_CELLS` cells, whose
/// components span millions of cells.
pub(super) const FUTILE_BALL_MIN_TARGETS: usize = 20_000;
const FUTILE_BALL_SHARE: usize = 100;

impl Auditor<'_, '_> {
    /// Component (cells, relations) of suppressed cell `t`.
    pub(crate) fn component(&mut self, t: u32) -> (Vec<u32>, Vec<u32>) {
        self.epoch += 1;
        let (mut cells, mut rows) = self.grow(t, self.epoch);
        cells.sort_unstable();
        rows.sort_unstable();
        (cells, rows)
    }

    /// Cells of the largest suppressed component: what one component LP spans.
    pub(crate) fn largest_component(&mut self) -> usize {
        self.epoch += 1;
        let e = self.epoch;
        let mut largest = 0;
        for t in 0..self.p.n() {
            if self.sup[t] && self.mark[t] != e {
                largest = largest.max(self.grow(t as u32, e).0.len());
            }
        }
        largest
    }

    /// The suppressed cells and relations reachable from `t`, marked with epoch `e` (cells
    /// already marked with it are not entered again).
    fn grow(&mut self, t: u32, e: u32) -> (Vec<u32>, Vec<u32>) {
        let (mut cells, mut rows) = (vec![t], Vec::new());
        self.mark[t as usize] = e;
        let mut k = 0;
        while k < cells.len() {
            let c = cells[k] as usize;
            k += 1;
            for &r in self.p.rel.of_cell(c) {
                if self.rmark[r as usize] == e {
                    continue;
                }
                self.rmark[r as usize] = e;
                rows.push(r);
                for m in self.p.rel.members(r as usize) {
                    if self.sup[m as usize] && self.mark[m as usize] != e {
                        self.mark[m as usize] = e;
                        cells.push(m);
                    }
                }
            }
        }
        (cells, rows)
    }

    /// Cells within `hops` relation hops of `t` (at most `max`) and every relation
    /// touching them.
    pub(super) fn ball(&mut self, t: u32, hops: usize, max: usize) -> (Vec<u32>, Vec<u32>) {
        self.epoch += 1;
        let e = self.epoch;
        let mut cells = vec![t];
        self.mark[t as usize] = e;
        let mut layer = 0..1;
        for _ in 0..hops {
            let end = cells.len();
            for k in layer.clone() {
                let c = cells[k] as usize;
                for &r in self.p.rel.of_cell(c) {
                    for m in self.p.rel.members(r as usize) {
                        if cells.len() < max && self.sup[m as usize] && self.mark[m as usize] != e {
                            self.mark[m as usize] = e;
                            cells.push(m);
                        }
                    }
                }
            }
            layer = end..cells.len();
        }
        let rows = self.p.relations_touching(&cells);
        cells.sort_unstable();
        (cells, rows)
    }

    /// Local LPs for unknown non-sliding targets: certifies those they can, and records a
    /// failure when the local LP's capacity cut is violated by the current pattern (a proof of
    /// under-protection, since the cut is valid for every protecting pattern).
    pub(super) fn solve_local(&mut self, hops: usize, max: usize) -> Result<(), SuppressError> {
        let p = self.p;
        let todo: Vec<(usize, usize)> = (0..p.sens.len())
            .filter(|&k| !is_sliding(&p.sens[k]))
            .flat_map(|k| [(k, 0), (k, 1)])
            .filter(|&(k, d)| matches!(self.certs[k][d], Cert::Unknown))
            .filter(|&(k, d)| need(&p.sens[k], d) > 0.0)
            .collect();
        let grouped = todo.len() >= self.group_min;
        if grouped {
            self.solve_local_groups(&todo, hops, max)?;
        }
        let open = todo.len();
        let todo: Vec<(usize, usize)> =
            todo.into_iter().filter(|&(k, d)| matches!(self.certs[k][d], Cert::Unknown)).collect();
        let futile = (open - todo.len()) * FUTILE_BALL_SHARE < open;
        if grouped && !self.keep_held && open >= self.futile_min_targets && futile {
            return Ok(()); // balls of this size are too small for this pattern (see the constant)
        }
        for chunk in todo.chunks(2048) {
            self.stop_check()?;
            self.solve_local_chunk(chunk, hops, max)?;
        }
        Ok(())
    }

    /// Local batch LPs: the unknown targets (one direction) inside one ball share one LP that
    /// maximises their capped sum; certifies those it reaches (many targets per LP on large
    /// tables). The rest are left unknown for single local LPs.
    pub(super) fn solve_local_groups(
        &mut self,
        todo: &[(usize, usize)],
        hops: usize,
        max: usize,
    ) -> Result<(), SuppressError> {
        let p = self.p;
        let mut at: crate::table::relations::FastMap<(u32, usize), usize> = Default::default();
        for (x, &(k, d)) in todo.iter().enumerate() {
            at.insert((p.sens[k].cell, d), x);
        }
        let mut taken = vec![false; todo.len()];
        let mut groups: Vec<(Vec<u32>, Vec<u32>, Vec<usize>)> = Vec::new();
        for x in 0..todo.len() {
            if taken[x] {
                continue;
            }
            let (k, d) = todo[x];
            let (cells, rows) = self.ball(p.sens[k].cell, hops, max);
            let members: Vec<usize> =
                cells.iter().filter_map(|&c| at.get(&(c, d)).copied()).filter(|&y| !taken[y]).collect();
            for &y in &members {
                taken[y] = true;
            }
            groups.push((cells, rows, members));
        }
        let (stop, effort) = (self.stop, self.lp_effort.clone());
        for chunk in groups.chunks(256) {
            self.stop_check()?;
            let sup = &self.sup;
            let res: Vec<Vec<(u32, f64)>> = chunk
                .par_iter()
                .map(|(cells, rows, members)| {
                    let lp = CompLp::new(p, sup, cells.clone(), rows.clone()).limited(stop, &effort);
                    let targets: Vec<(u32, f64, f64)> = members
                        .iter()
                        .map(|&y| {
                            let (k, d) = todo[y];
                            let s = &p.sens[k];
                            (s.cell, if d == 0 { -1.0 } else { 1.0 }, need(s, d))
                        })
                        .collect();
                    lp.batch(&targets)
                })
                .collect::<Result<_, SuppressError>>()?;
            self.solved(res.len(), chunk.iter().map(|g| g.0.len()).sum());
            for ((_, _, members), w) in chunk.iter().zip(res) {
                let z: crate::table::relations::FastMap<u32, f64> = w.iter().copied().collect();
                let done: Vec<(usize, usize, f64)> = members
                    .iter()
                    .map(|&y| todo[y])
                    .filter(|&(k, d)| {
                        let s = &p.sens[k];
                        let dir = if d == 0 { -1.0 } else { 1.0 };
                        let n = need(s, d);
                        dir * z.get(&s.cell).copied().unwrap_or(0.0) >= n - tolerance(n)
                    })
                    .map(|(k, d)| (k, d, need(&p.sens[k], d)))
                    .collect();
                if done.is_empty() {
                    continue;
                }
                self.record_shared((w, done));
            }
        }
        Ok(())
    }

    pub(super) fn solve_local_chunk(
        &mut self,
        todo: &[(usize, usize)],
        hops: usize,
        max: usize,
    ) -> Result<(), SuppressError> {
        let p = self.p;
        let balls: Vec<(Vec<u32>, Vec<u32>)> =
            todo.iter().map(|&(k, _)| self.ball(p.sens[k].cell, hops, max)).collect();
        let columns = balls.iter().map(|b| b.0.len()).sum();
        let sup = &self.sup;
        let checked = self.checked.as_ref();
        let (stop, effort) = (self.stop, self.lp_effort.clone());
        let res: Vec<(Attack, Option<Cut>)> = todo
            .par_iter()
            .zip(balls)
            .map(|(&(k, d), (cells, rows))| {
                let s = &p.sens[k];
                let lp = CompLp::new(p, sup, cells, rows).limited(stop, &effort);
                let dir = if d == 0 { -1.0 } else { 1.0 };
                let n = need(s, d);
                let x = |c: u32| if sup[c as usize] { 1.0 } else { 0.0 };
                let r = lp.single(p, &x, s.cell, dir, n, n);
                tick(checked, 1);
                r
            })
            .collect::<Result<_, SuppressError>>()?;
        self.solved(res.len(), columns);
        for (&(k, d), (att, cut)) in todo.iter().zip(res) {
            let n = need(&p.sens[k], d);
            if att.value >= n - tolerance(n) {
                let id = self.record(att.witness);
                self.users[id as usize].push((k as u32, d as u8));
                self.certs[k][d] = Cert::Ok(id, att.value);
            } else if let Some(cut) = cut.map(|c| c.capped(n)) {
                if cut.lhs(&self.sup) < n - tolerance(n) {
                    self.certs[k][d] = Cert::Failed(att.value, Some(Box::new(cut)));
                }
            }
        }
        Ok(())
    }

    /// Decides first, before the rest of a drop trial's check, the `max` lost certificates
    /// with the largest protection levels: a ball LP each, then component LPs for those the
    /// balls leave open, up to the first shortfall. Returns whether one is under-protected
    /// (its certificate then holds the shortfall and its cut, as after [`Self::check`]).
    ///
    /// Why: a refused trial's check re-certified every lost target (~2,000 on an 11 k-cell
    /// enterprise table, ~400 LPs) before its shortfall came up, and the shortfall is nearly
    /// always among the few lost targets with the largest levels (measured: within the first
    /// 3 for 11 of 12 refused trials of that table's cleanup). Exact either way: a probe only
    /// finds certificates or proven shortfalls, and the check still covers every target.
    pub(crate) fn probe_lost(&mut self, lost: &[(u32, u8, u32, f64)], max: usize) -> Result<bool, SuppressError> {
        let p = self.p;
        if self.exact {
            return Ok(false);
        }
        let mut ranked: Vec<(f64, usize, usize)> = lost
            .iter()
            .filter(|&&(k, d, ..)| {
                let t = &p.sens[k as usize];
                !is_sliding(t)
                    && need(t, d as usize) > 0.0
                    && matches!(self.certs[k as usize][d as usize], Cert::Unknown)
            })
            .map(|&(k, d, ..)| (need(&p.sens[k as usize], d as usize), k as usize, d as usize))
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
        let todo: Vec<(usize, usize)> = ranked.iter().take(max).map(|&(_, k, d)| (k, d)).collect();
        if todo.is_empty() {
            return Ok(false);
        }
        let (hops, cells) = self.balls.first().copied().unwrap_or((0, 1));
        self.solve_local_chunk(&todo, hops, cells)?;
        if todo.iter().any(|&(k, d)| matches!(self.certs[k][d], Cert::Failed(..))) {
            return Ok(true);
        }
        // Those the ball leaves open: component LPs, one hot-started run per component, up to
        // the first shortfall. Their witnesses are not kept: they span the component, and
        // later trials lose every certificate resting on one (measured: 2.8× more
        // certificates lost and a slower cleanup when kept); the check re-certifies locally.
        let sup = self.sup.clone();
        let mut open: Vec<(usize, usize)> =
            todo.iter().copied().filter(|&(k, d)| matches!(self.certs[k][d], Cert::Unknown)).collect();
        while let Some(&(k0, _)) = open.first() {
            self.stop_check()?;
            let (cells, rows) = self.component(p.sens[k0].cell);
            let (here, rest): (Vec<_>, Vec<_>) =
                open.iter().partition(|&&(k, _)| cells.binary_search(&p.sens[k].cell).is_ok());
            open = rest;
            let lp = CompLp::new(p, &sup, cells, rows).limited(self.stop, &self.lp_effort);
            let mut how = lp.warm();
            for (k, d) in here {
                let n = need(&p.sens[k], d);
                let (att, cut) = attack(p, &sup, &lp, &mut how, (k, d), n, n)?;
                self.solved(1, lp.cells.len());
                if att.value < n - tolerance(n) {
                    self.certs[k][d] = Cert::Failed(att.value, cut.map(|c| Box::new(c.capped(n))));
                    self.has_failed = true;
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Certifies the unknown targets that need no movement (an empty witness) and returns the
    /// (sensitive cell, direction) pairs left for attacker LPs; sliding targets always come
    /// with both directions.
    pub(super) fn settle_trivial(&mut self) -> Vec<(usize, usize)> {
        let p = self.p;
        let mut todo: Vec<(usize, usize)> = Vec::new();
        for (k, s) in p.sens.iter().enumerate() {
            let unk = [0, 1].map(|d| matches!(self.certs[k][d], Cert::Unknown));
            if is_sliding(s) && (unk[0] || unk[1]) {
                todo.push((k, 0));
                todo.push((k, 1));
            } else {
                for (d, &u) in unk.iter().enumerate() {
                    if u {
                        if need(s, d) <= 0.0 && !self.exact {
                            let w = self.record(Vec::new());
                            self.combinatorial[w as usize] = true;
                            self.users[w as usize].push((k as u32, d as u8));
                            self.certs[k][d] = Cert::Ok(w, 0.0);
                        } else {
                            todo.push((k, d));
                        }
                    }
                }
            }
        }
        todo
    }

    /// Component attacker LPs (batches, then one per pair) for every target still unknown.
    pub(super) fn solve_unknown(&mut self) -> Result<(), SuppressError> {
        let p = self.p;
        let todo = self.settle_trivial();
        if todo.is_empty() {
            return Ok(());
        }
        let t0 = std::time::Instant::now();
        // Components of the targets; those a deferral without LPs takes are not built
        // ([`DeferSingles::batches`]), their sensitive cells set aside in `deferred`.
        let defer_from = self.defer_singles.filter(|d| !d.batches).map(|d| d.min_cells);
        let mut deferred: crate::table::relations::FastMap<u32, ()> = Default::default();
        let mut comp_of: crate::table::relations::FastMap<u32, usize> = Default::default();
        let mut comps: Vec<(Vec<u32>, Vec<u32>)> = Vec::new();
        for &(k, _) in &todo {
            let t = p.sens[k].cell;
            if comp_of.contains_key(&t) || deferred.contains_key(&t) {
                continue;
            }
            let (cells, rows) = self.component(t);
            let sensitive = cells.iter().copied().filter(|c| p.sens_of.contains_key(c));
            if defer_from.is_some_and(|m| cells.len() >= m) {
                deferred.extend(sensitive.map(|c| (c, ())));
                continue;
            }
            comp_of.extend(sensitive.map(|c| (c, comps.len())));
            comps.push((cells, rows));
        }
        let todo = self.defer_without_lps(todo, &deferred);
        if todo.is_empty() {
            return Ok(());
        }
        self.stop_check()?;
        let sup_owned = self.sup.clone();
        let sup = &sup_owned;
        // In a lazy check or a drop trial's, targets the published cells determine fail without
        // an LP, and the check stops at them. Not in the other checks: there the shortcut
        // changes which bounds the batch rounds and hot-started runs see, and HiTaS's merge of
        // c4-hier took its first audit 11 s and its drop trials 46 s longer (BENCHMARKS,
        // "Session 79").
        let todo = if self.lazy_singles.is_some() || self.stops_at_pinned {
            match self.settle_pinned(&comps, &comp_of, todo, sup) {
                (_, failed) if failed > 0 => return Ok(()),
                (todo, _) => todo,
            }
        } else {
            todo
        };
        let (stop, effort) = (self.stop, self.lp_effort.clone());
        let lps: Vec<CompLp> =
            comps.into_par_iter().map(|(c, r)| CompLp::new(p, sup, c, r).limited(stop, &effort)).collect();
        // Phase A: batch LPs per (component, direction), several rounds.
        let mut groups: Vec<Vec<Vec<(usize, usize)>>> = vec![vec![Vec::new(), Vec::new()]; lps.len()];
        let mut singles: Vec<(usize, usize, usize)> = Vec::new();
        for &(k, d) in &todo {
            let ci = comp_of[&p.sens[k].cell];
            if self.exact || is_sliding(&p.sens[k]) {
                singles.push((ci, k, d));
            } else {
                groups[ci][d].push((k, d));
            }
        }
        // The bounds decided so far (the trivial ones above), then a running count in the LPs.
        self.sync_checked();
        let checked = self.checked.as_ref();
        let left = self.column_cap.map(|cap| cap.saturating_sub(self.lp_columns));
        let cold_cells = self.cold_rounds.clone();
        let cold = |lp: &CompLp| cold_cells.contains(&lp.cells.len());
        let min_targets = self.batch_min_targets;
        // The two directions of a component are independent runs (each its own hot start),
        // so they run side by side: on HiTaS's merge of c4-hier (one ~21 k-cell component)
        // the first audit's batch rounds took 131 s on one of two cores, and a group drop trial
        // over c5-persons' 95 k-cell component 336 s (`Work::drop_groups`). Recorded in the
        // same order as one after the other: the same witnesses and ids. Under a column cap
        // each direction gets half of what is left over its component's cells (not what the
        // other left: where it ends must not depend on the threads).
        let jobs: Vec<(usize, usize)> = (0..lps.len()).flat_map(|ci| [(ci, 0), (ci, 1)]).collect();
        let outs: Vec<BatchOut> = jobs
            .par_iter()
            .map(|&(ci, d)| {
                let max_lps = left.map(|l| l / lps[ci].cells.len().max(1) / 2);
                run_batches(p, &lps[ci], &groups[ci][d..=d], checked, (max_lps, min_targets), cold(&lps[ci]))
            })
            .collect::<Result<_, _>>()?;
        let mut outs = outs.into_iter();
        let batch: Vec<BatchOut> = (0..lps.len())
            .map(|_| {
                let (mut a, b) =
                    (outs.next().expect("two runs per component"), outs.next().expect("two runs per component"));
                a.witnesses.extend(b.witnesses);
                a.left.extend(b.left);
                a.lps += b.lps;
                let [_, up] = b.bases; // `a` ran direction 0, `b` direction 1
                a.bases[1] = up;
                a
            })
            .collect();
        // The batch rounds get their own trace line: whether they or the single LPs take an
        // audit's time differs between patterns (BENCHMARKS, "Session 64"). Counted from their
        // outputs, before the deferred components' small batches and single LPs below.
        let s = t0.elapsed().as_secs_f64();
        if super::super::trace::enabled() && s >= super::Phase::TRACE_SECONDS {
            let certified: usize = batch.iter().flat_map(|o| &o.witnesses).map(|(_, users)| users.len()).sum();
            let lps_run: usize = batch.iter().map(|o| o.lps).sum();
            let columns: usize = batch.iter().enumerate().map(|(ci, o)| o.lps * lps[ci].cells.len()).sum();
            super::super::trace::trace(format_args!(
                "audit component LPs, batch rounds: {certified} of {} open bounds certified, {lps_run} LPs over \
                 {columns} columns, {s:.1}s (with building the components' LPs)",
                todo.len()
            ));
        }
        let mut bases = Vec::with_capacity(batch.len());
        for (ci, mut out) in batch.into_iter().enumerate() {
            bases.push(std::mem::take(&mut out.bases));
            self.solved(out.lps, out.lps * lps[ci].cells.len());
            for shared in out.witnesses {
                self.record_shared(shared);
            }
            let cells = lps[ci].cells.len();
            if self.defer_singles.is_some_and(|d| d.applies(cells, out.left.len())) {
                for (k, d) in self.retry_in_small_batches(&lps[ci], out.left)? {
                    self.certs[k][d] = Cert::Failed(0.0, None);
                }
                continue;
            }
            singles.extend(out.left.into_iter().map(|(k, d)| (ci, k, d)));
        }
        singles.sort_unstable();
        // Phase B, in chunks when the caller stops at the first shortfalls (`lazy_singles`).
        let chunks: Vec<&[(usize, usize, usize)]> = match self.lazy_singles {
            Some(size) => lazy_chunks(&singles, size),
            None => vec![&singles[..]],
        };
        for chunk in chunks {
            if self.solve_singles(&lps, &bases, sup, chunk)? {
                break;
            }
        }
        Ok(())
    }

    /// Fails without a cut, for the caller to repair, the bounds of `todo` whose targets are
    /// in `deferred` (components a deferral without LPs takes, [`DeferSingles::batches`]);
    /// returns the others.
    fn defer_without_lps(
        &mut self,
        todo: Vec<(usize, usize)>,
        deferred: &crate::table::relations::FastMap<u32, ()>,
    ) -> Vec<(usize, usize)> {
        if deferred.is_empty() {
            return todo;
        }
        let p = self.p;
        let (out, left): (Vec<_>, Vec<_>) =
            todo.into_iter().partition(|&(k, _)| deferred.contains_key(&p.sens[k].cell));
        for &(k, d) in &out {
            self.certs[k][d] = Cert::Failed(0.0, None);
        }
        super::super::trace::trace(format_args!(
            "audit: {} open bounds deferred without an LP on components of {} cells or more",
            out.len(),
            self.defer_singles.map_or(0, |d| d.min_cells)
        ));
        left
    }

    /// Fails the bounds of `todo` whose targets the published cells determine
    /// ([`super::pinned`]), each with its cut, without an LP; returns the other bounds and how
    /// many failed. `comps` are the components of `todo`'s targets (`comp_of`) in pattern
    /// `sup`. Sliding requirements, whose two directions share one cut, are left to the LPs.
    fn settle_pinned(
        &mut self,
        comps: &[(Vec<u32>, Vec<u32>)],
        comp_of: &crate::table::relations::FastMap<u32, usize>,
        todo: Vec<(usize, usize)>,
        sup: &[bool],
    ) -> (Vec<(usize, usize)>, usize) {
        let p = self.p;
        let pinned: Vec<Pinned> = comps.par_iter().map(|(cells, rows)| Pinned::of(p, sup, cells, rows)).collect();
        let mut left = Vec::with_capacity(todo.len());
        let mut failed = 0;
        for (k, d) in todo {
            let s = &p.sens[k];
            let f = &pinned[comp_of[&s.cell]];
            let n = need(s, d);
            if f.is_empty() || is_sliding(s) || !f.contains(s.cell) || n <= tolerance(n) {
                left.push((k, d));
                continue;
            }
            let dir = if d == 0 { -1.0 } else { 1.0 };
            let cut = f.cut(p, sup, s.cell, dir, n);
            self.certs[k][d] = Cert::Failed(0.0, Some(Box::new(cut.capped(n))));
            failed += 1;
        }
        (left, failed)
    }

    /// Phase B of [`Self::solve_unknown`] for the (component, sensitive index, direction)
    /// triples `singles` over the pattern `sup` (the components' LPs were built on it): one LP
    /// each; returns whether a bound fell short.
    fn solve_singles(
        &mut self,
        lps: &[CompLp],
        bases: &[[Option<crate::lp::Basis>; 2]],
        sup: &[bool],
        singles: &[(usize, usize, usize)],
    ) -> Result<bool, SuppressError> {
        let p = self.p;
        let cold_cells = self.cold_rounds.clone();
        let cold = |lp: &CompLp| cold_cells.contains(&lp.cells.len());
        // A column cap refuses phase B's LPs before solving any of them when they would pass it
        // (decided from their count and sizes: the same on every machine).
        self.stop_check()?;
        if let Some(cap) = self.column_cap {
            let planned: usize = singles.iter().map(|&(ci, ..)| lps[ci].cells.len()).sum();
            if self.lp_columns + planned > cap {
                return Err(super::stopped());
            }
        }
        // Phase B: one LP per remaining (target, direction), hot-started from the previous LP of
        // the same component in runs of at most WARM_RUN, or LONG_WARM_RUN on the components
        // whose batch rounds are solved from scratch (fixed runs in target order: the same
        // witnesses on any number of threads).
        let exact = self.exact;
        let checked = self.checked.as_ref();
        let lazy = self.lazy_singles.is_some();
        let warm_run = if lazy { self.lazy_run } else { WARM_RUN };
        let mut runs: Vec<&[(usize, usize, usize)]> = Vec::new();
        for comp in singles.chunk_by(|a, b| a.0 == b.0) {
            runs.extend(comp.chunks(if cold(&lps[comp[0].0]) { LONG_WARM_RUN } else { warm_run }));
        }
        let t1 = std::time::Instant::now();
        // Microseconds of the runs' first LPs (from scratch) and of the rest (hot-started).
        let spent = [std::sync::atomic::AtomicU64::new(0), std::sync::atomic::AtomicU64::new(0)];
        let res: Vec<Vec<_>> = runs
            .par_iter()
            .map(|run| {
                // In a lazy check, a run over a component of more than
                // `lp::PRESOLVE_MIN_COLUMNS` columns starts from the batch rounds' last basis in
                // its first target's direction: from scratch its first LP would run HiGHS's
                // presolve, ~40 % of the samples of Adult's merge repair (a ~1,600-column
                // component, new runs for each round and drop trial). Smaller components are
                // solved from scratch without presolve, as before; so are the other checks'
                // runs, since the cleanup of c3-enterprises (~9,000-column components) got
                // slower and other patterns from such starts. Measured in BENCHMARKS.md,
                // "Session 78". The batch rounds are fixed runs: the same start on any number
                // of threads.
                let (ci, _, d) = run[0];
                let start = (lazy && lps[ci].cells.len() > crate::lp::PRESOLVE_MIN_COLUMNS)
                    .then(|| bases.get(ci).and_then(|b| b[d].clone()))
                    .flatten();
                let mut how = lps[ci].warm_from(start);
                run.iter()
                    .enumerate()
                    .map(|(i, &(ci, k, d))| {
                        let t = std::time::Instant::now();
                        let s = &p.sens[k];
                        let n = need(s, d);
                        // The target's whole range in this direction: no cap (`LONG_WARM_RUN`).
                        let range = if d == 0 { p.lo_gap[s.cell as usize] } else { p.up_gap[s.cell as usize] };
                        let cap = if exact {
                            f64::INFINITY
                        } else if cold(&lps[ci]) && range.is_finite() {
                            range
                        } else {
                            n.max(s.spl)
                        };
                        let cut_at = if is_sliding(s) { n.max(s.spl) } else { n };
                        let r = attack(p, sup, &lps[ci], &mut how, (k, d), cap, cut_at);
                        tick(checked, 1);
                        let us = t.elapsed().as_micros() as u64;
                        spent[usize::from(i > 0)].fetch_add(us, std::sync::atomic::Ordering::Relaxed);
                        r
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .collect::<Result<_, _>>()?;
        let res: Vec<_> = res.into_iter().flatten().collect();
        let s = t1.elapsed().as_secs_f64();
        if super::super::trace::enabled() && s >= super::Phase::TRACE_SECONDS {
            let cpu = spent.map(|a| a.into_inner() as f64 / 1e6);
            super::super::trace::trace(format_args!(
                "audit component LPs, single LPs: {} in {} hot-started runs, {s:.1}s; CPU {:.1}s in the runs' first \
                 LPs, {:.1}s in the others",
                res.len(),
                runs.len(),
                cpu[0],
                cpu[1]
            ));
        }
        self.solved(res.len(), singles.iter().map(|&(ci, ..)| lps[ci].cells.len()).sum());
        let mut raw_of: crate::table::relations::FastMap<(usize, usize), Cut> = Default::default();
        let mut short = false;
        for (&(_, k, d), (att, raw)) in singles.iter().zip(res) {
            if let Some(raw) = &raw {
                raw_of.insert((k, d), raw.clone());
            }
            short |= !self.settle_single((k, d), att, raw);
        }
        // Sliding requirement: both directions were solved in this round.
        for (k, s) in p.sens.iter().enumerate() {
            if !is_sliding(s) || !raw_of.contains_key(&(k, 0)) && !raw_of.contains_key(&(k, 1)) {
                continue;
            }
            let v = [0, 1].map(|d| match &self.certs[k][d] {
                Cert::Ok(_, v) | Cert::Failed(v, _) => *v,
                Cert::Unknown => 0.0,
            });
            if v[0] + v[1] < s.spl - tolerance(s.spl) {
                let mut coefs: Vec<(u32, f64)> = Vec::new();
                for d in 0..2 {
                    if let Some(c) = raw_of.get(&(k, d)) {
                        coefs.extend(&c.coefs);
                    }
                }
                let cut = Cut { coefs, rhs: s.spl }.merged().capped(s.spl);
                self.certs[k][1] = Cert::Failed(v[1], Some(Box::new(cut)));
                short = true;
            }
        }
        Ok(short)
    }
}

/// `singles` (sorted by component, sensitive index, direction) cut into chunks of about `size`
/// that keep both directions of a sensitive cell together (a sliding requirement needs both).
fn lazy_chunks(singles: &[(usize, usize, usize)], size: usize) -> Vec<&[(usize, usize, usize)]> {
    let mut out = Vec::new();
    let mut rest = singles;
    while !rest.is_empty() {
        let mut end = size.max(1).min(rest.len());
        while end < rest.len() && rest[end].0 == rest[end - 1].0 && rest[end].1 == rest[end - 1].1 {
            end += 1;
        }
        let (head, tail) = rest.split_at(end);
        out.push(head);
        rest = tail;
    }
    out
}

/// A witness and its users `(sensitive index, direction, value)`.
type SharedWitness = (Vec<(u32, f64)>, Vec<(usize, usize, f64)>);

struct BatchOut {
    witnesses: Vec<SharedWitness>,
    left: Vec<(usize, usize)>,
    lps: usize,
    /// The last basis of each direction's rounds ([`Auditor::solve_singles`]).
    bases: [Option<crate::lp::Basis>; 2],
}

/// Batch LPs per (component, direction) while each certifies a target (each maximises the
/// capped sum of the targets still unknown). Measured on HiTaS's merged c3-persons pattern: 4
/// rounds left 1,307 targets to single LPs (11.9 s of audit), 16 left 166 (2.2 s), with the
/// same verdicts; c4-persons and c3-ent-flat as fast or faster.
const BATCH_ROUNDS: usize = 16;

/// Components of at least this many cells keep the caps of the targets an earlier batch round
/// reached ([`CompLp::batch_with`]'s `settled`). Why: releasing those caps moves the columns
/// HiGHS holds at them, so the next round's hot start is primal infeasible; on HiTaS's merge of
/// a 5-dimensional census table (one 93 k-cell component) that phase 1 took minutes per round,
/// with the caps kept each round takes 0.1–24 s. On smaller components the caps cost
/// certificates: c3-persons' first audit (components of ~2,500 cells) took 2,046 LPs with them
/// against 167 without, and c3-enterprises' (~9,000 cells) gains nothing; there the caps are
/// released, and the rounds from [`COLD_ROUNDS_MIN_CELLS`] cells are solved from scratch.
const SETTLED_CAPS_MIN_CELLS: usize = 50_000;

/// Components from this many cells up to [`SETTLED_CAPS_MIN_CELLS`] release the reached targets'
/// caps and solve each batch round from scratch; smaller ones hot-start each round from the
/// last. Why: on a component this large the hot start's phase 1 after thousands of released
/// caps took longer than a new solve. c4-large's published pattern (one 35,769-cell component):
/// 28–52 s a round against 2–7 s, the batch rounds of its audit 184 s against 49 s, every bound
/// certified either way; c4-ent's split closure (~41 k cells) clean at 111 s instead of 472 s
/// (BENCHMARKS, "Session 65"). Below it the phase 1 costs less and the suite's patterns stay as
/// they were: from scratch, HiTaS's merge of c4-hier (~17,700 cells) took its batch rounds in
/// 17 s instead of 86 s, but its repair took another path, to 4.97 % of the value against 4.91 %.
const COLD_ROUNDS_MIN_CELLS: usize = 30_000;

/// Attacker LPs of one component solved in a row from one hot start ([`CompLp::warm`]): the
/// first from scratch, the others from the previous basis.
pub(super) const WARM_RUN: usize = 32;

/// [`WARM_RUN`] on the components whose batch rounds are solved from scratch
/// ([`Auditor::cold_rounds`]). Why: there the first LP of a run is most of the run's time. On
/// c4-large's closure (one ~35 k-cell component) the first audit's 778 single LPs took 66 s in
/// 25 runs, 112 s of CPU in the runs' first LPs and 17 s in the other 753; in 4 runs they take
/// 21 s (BENCHMARKS, "Session 66"). Their single LPs also go without the target's cap, so that
/// a hot start changes only the objective and stays in the simplex's phase 2: on c4-large's
/// published pattern 256 hot-started single LPs that reached their targets took 584 s with
/// the cap and 154 s without (session 65). A shortfall's LP never meets its cap either way.
const LONG_WARM_RUN: usize = 256;

/// Component sizes (cells) whose batch rounds are solved from scratch and whose single LPs run
/// [`LONG_WARM_RUN`] long without the target's cap ([`Auditor::cold_rounds`]).
pub(super) const COLD_ROUNDS_CELLS: std::ops::Range<usize> = COLD_ROUNDS_MIN_CELLS..SETTLED_CAPS_MIN_CELLS;

/// Component LP `lp`'s attack on target `(k, d)` of pattern `sup` (capped at `cap`, a cut
/// below `cut_at`), hot-started from the previous solve of `how`.
fn attack(
    p: &Problem,
    sup: &[bool],
    lp: &CompLp,
    how: &mut Solves,
    (k, d): (usize, usize),
    cap: f64,
    cut_at: f64,
) -> Result<(Attack, Option<Cut>), SuppressError> {
    let dir = if d == 0 { -1.0 } else { 1.0 };
    let x = |c: u32| if sup[c as usize] { 1.0 } else { 0.0 };
    lp.single_with(how, p, &x, p.sens[k].cell, dir, cap, cut_at)
}

fn run_batches(
    p: &Problem,
    lp: &CompLp,
    groups: &[Vec<(usize, usize)>],
    checked: Option<&Checked>,
    (max_lps, min_targets): (Option<usize>, usize),
    cold: bool,
) -> Result<BatchOut, SuppressError> {
    let mut out = BatchOut { witnesses: Vec::new(), left: Vec::new(), lps: 0, bases: [None, None] };
    for g in groups {
        // Each round from scratch or from the last round's basis (`cold`: `Auditor::cold_rounds`). One
        // hot start per direction: every target's cap moves when the direction changes, so the
        // last basis would be neither primal nor dual feasible.
        let mut how = if cold { Solves::Cold } else { lp.warm() };
        let limits = RoundLimits { min_targets, max_lps, checked };
        let left = batch_rounds(p, lp, &mut how, g.clone(), limits, &mut out)?;
        if let Some(&(_, d)) = g.first() {
            out.bases[d] = how.basis();
        }
        out.left.extend(left);
    }
    Ok(out)
}

/// Targets of one direction per small batch ([`SmallBatches`]). Measured on HiTaS's merge of
/// c4-hier (3,180 bounds left by the batch rounds over its 17,657-cell component; the
/// repaired pattern after the repair's 100 drop trials in brackets): batches of 32 certified
/// 2,712 of them with 395 LPs (6.22 %), 64 2,766 with 280 (5.72 %), 128 2,840 with 222 in
/// 109 s (5.36 %), 256 2,642 with 135 (5.64 %).
const SMALL_BATCH: usize = 128;

/// Which suppressed components leave the bounds their batch rounds do not reach to the caller
/// (a [`super::Failure`] without a cut) instead of one single LP each: HiTaS's merge repairs
/// them with hypercubes, the split closure's repair with whole moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeferSingles {
    /// Components of at least this many cells defer.
    pub min_cells: usize,
    /// They defer only when those single LPs would span at least this many LP columns (bounds
    /// left × component cells); below that the bounds get their single LPs (set by the split
    /// closure's repair, `Work::split_closure`; 0 for HiTaS's merge).
    pub min_columns: usize,
    /// Whether such a component's open bounds get its batch rounds first. Without them
    /// (`false`, the cube assignment's repair on a giant component, `super::super::construct`)
    /// every bound the witnesses leave is deferred without an LP: on c5-persons' 95,011-cell
    /// component one batch LP and one single LP for its last 8 bounds took 280 s.
    pub batches: bool,
}

impl DeferSingles {
    /// Every component defers whatever its batch rounds leave.
    pub const ALL: Self = Self { min_cells: 0, min_columns: 0, batches: true };

    /// Components of at least `min_cells` cells defer every bound the witnesses leave, without
    /// an LP ([`Self::batches`]).
    pub const fn without_lps(min_cells: usize) -> Self {
        Self { min_cells, min_columns: 0, batches: false }
    }

    /// Whether a component of `cells` cells whose batch rounds left `left` bounds defers them.
    pub fn applies(&self, cells: usize, left: usize) -> bool {
        cells >= self.min_cells && left * cells >= self.min_columns
    }
}

/// The budget of [`Auditor::retry_in_small_batches`]: the bounds a deferred component's batch
/// rounds leave are often protected — a batch LP maximises the capped sum of its targets'
/// moves, and where targets compete for the same cells it moves each part of the way rather
/// than any one all the way, so the rounds stop with none reached. On HiTaS's merge of c4-hier
/// at least 2,840 of the 3,180 bounds its rounds left are protected (found in batches of
/// [`SMALL_BATCH`]); the cubes the deferral laid for them took the repaired pattern to
/// 18.04 % of the value, where with the small batches first it is 6.32 % (BENCHMARKS,
/// "Session 51").
#[derive(Debug, Clone, Copy)]
pub(crate) struct SmallBatches {
    /// LP columns left (each direction's run gets half of what is left when it starts, so
    /// where the budget ends does not depend on the threads).
    pub columns: usize,
    /// No batch starts past this instant (the hard stop): the bounds left stay deferred.
    pub until: std::time::Instant,
    /// Whether `until` ended a run (the caller records it as the hard stop's).
    pub stopped: bool,
}

impl Auditor<'_, '_> {
    /// Records one LP witness shared by several bounds and certifies each of them by it.
    fn record_shared(&mut self, (w, users): SharedWitness) {
        let id = self.record(w);
        for (k, d, v) in users {
            self.users[id as usize].push((k as u32, d as u8));
            self.certs[k][d] = Cert::Ok(id, v);
        }
    }

    /// The bounds `left` of component LP `lp` (one its batch rounds did not reach) that small
    /// batches do not certify either and the budget leaves without a single LP
    /// ([`Self::singles_within`]), within [`Self::retry_deferred`] (all of them without it).
    pub(super) fn retry_in_small_batches(
        &mut self,
        lp: &CompLp,
        left: Vec<(usize, usize)>,
    ) -> Result<Vec<(usize, usize)>, SuppressError> {
        let Some(budget) = self.retry_deferred else { return Ok(left) };
        let max_lps = budget.columns / 2 / lp.cells.len().max(1);
        if left.is_empty() || max_lps == 0 {
            return Ok(left);
        }
        let (t0, n0) = (std::time::Instant::now(), left.len());
        let p = self.p;
        let dirs: Vec<Vec<(usize, usize)>> =
            (0..2).map(|d| left.iter().copied().filter(|&(_, e)| e == d).collect()).collect();
        let outs: Vec<(BatchOut, bool)> =
            dirs.par_iter().map(|g| run_small_batches(p, lp, g, max_lps, budget.until)).collect::<Result<_, _>>()?;
        let (mut lps, mut stopped, mut left) = (0, false, Vec::new());
        for (out, hit) in outs {
            lps += out.lps;
            stopped |= hit;
            for shared in out.witnesses {
                self.record_shared(shared);
            }
            left.extend(out.left);
        }
        self.solved(lps, lps * lp.cells.len());
        super::super::trace::trace(format_args!(
            "small batches of {SMALL_BATCH}: {} of {n0} bounds certified, {lps} LPs over {} cells, {:.1}s{}",
            n0 - left.len(),
            lp.cells.len(),
            t0.elapsed().as_secs_f64(),
            if stopped { ", stopped by the limit" } else { "" }
        ));
        let mut columns = budget.columns.saturating_sub(lps * lp.cells.len());
        if !stopped {
            (left, stopped) = self.singles_within(lp, left, &mut columns, budget.until)?;
        }
        self.retry_deferred = Some(SmallBatches { columns, stopped: budget.stopped || stopped, ..budget });
        Ok(left)
    }

    /// Records bound `(k, d)`'s single-LP outcome: certified by its witness, or a shortfall
    /// with its capacity cut (capped at the requirement). Returns whether it is certified.
    fn settle_single(&mut self, (k, d): (usize, usize), att: Attack, cut: Option<Cut>) -> bool {
        let n = need(&self.p.sens[k], d);
        let ok = att.value >= n - tolerance(n);
        self.certs[k][d] = if ok {
            let id = self.record(att.witness);
            self.users[id as usize].push((k as u32, d as u8));
            Cert::Ok(id, att.value)
        } else {
            Cert::Failed(att.value, cut.map(|c| Box::new(c.capped(n))))
        };
        ok
    }

    /// One single attacker LP each for the first bounds of `left` (in target order) that
    /// `columns` LP columns pay for; each is certified or gets its shortfall and capacity cut,
    /// so the repair adds the cells its cut asks for instead of a hypercube. No LP starts past
    /// `until` (the hard stop; then `true`): the bounds not tried are returned with those the
    /// budget leaves (deferred to the cubes), so a slow machine still ends the first audit
    /// with a repairable pattern. Why: on HiTaS's merge of c4-hier the small batches left 340
    /// bounds; their single LPs (58.8 s) certified 168 and gave the other 172 their cuts, and
    /// the repaired pattern cost 5.08 % of the value instead of 6.32 % with a cube each
    /// (BENCHMARKS, "Session 54").
    pub(super) fn singles_within(
        &mut self,
        lp: &CompLp,
        mut left: Vec<(usize, usize)>,
        columns: &mut usize,
        until: std::time::Instant,
    ) -> Result<(Vec<(usize, usize)>, bool), SuppressError> {
        let n = left.len().min(*columns / lp.cells.len().max(1));
        if n == 0 {
            return Ok((left, false));
        }
        let t0 = std::time::Instant::now();
        left.sort_unstable();
        let rest = left.split_off(n);
        let p = self.p;
        let sup = &self.sup;
        // Fixed runs in target order, each from its own hot start: the same witnesses on any
        // number of threads (as phase B of `solve_unknown`) unless the stop cuts runs short.
        let runs: Vec<&[(usize, usize)]> = left.chunks(WARM_RUN).collect();
        let res: Vec<Vec<(Attack, Option<Cut>)>> = runs
            .par_iter()
            .map(|run| {
                let mut how = lp.warm();
                let mut out = Vec::with_capacity(run.len());
                for &(k, d) in run.iter() {
                    if std::time::Instant::now() >= until {
                        break;
                    }
                    let n = need(&p.sens[k], d);
                    out.push(attack(p, sup, lp, &mut how, (k, d), n.max(p.sens[k].spl), n)?);
                }
                Ok(out)
            })
            .collect::<Result<_, SuppressError>>()?;
        let solved: usize = res.iter().map(Vec::len).sum();
        self.solved(solved, solved * lp.cells.len());
        *columns -= solved * lp.cells.len();
        let (mut short, mut untried) = (0, Vec::new());
        for (run, out) in runs.iter().zip(res) {
            untried.extend_from_slice(&run[out.len()..]);
            for (&(k, d), (att, cut)) in run.iter().zip(out) {
                short += usize::from(!self.settle_single((k, d), att, cut));
            }
        }
        let stopped = !untried.is_empty();
        super::super::trace::trace(format_args!(
            "single LPs after the small batches: {solved} of {n} bounds, {short} short, {} left to cubes, {:.1}s{}",
            untried.len() + rest.len(),
            t0.elapsed().as_secs_f64(),
            if stopped { ", stopped by the limit" } else { "" }
        ));
        untried.extend(rest);
        Ok((untried, stopped))
    }
}

/// [`SMALL_BATCH`] targets at a time from `targets` (one direction), each batch in rounds
/// ([`batch_rounds`]) from the previous batch's basis, at most `max_lps` LPs and no batch
/// started past `until` (then `true`: the targets not tried are left).
fn run_small_batches(
    p: &Problem,
    lp: &CompLp,
    targets: &[(usize, usize)],
    max_lps: usize,
    until: std::time::Instant,
) -> Result<(BatchOut, bool), SuppressError> {
    let mut out = BatchOut { witnesses: Vec::new(), left: Vec::new(), lps: 0, bases: [None, None] };
    let mut how = lp.warm();
    let mut chunks = targets.chunks(SMALL_BATCH);
    let mut stopped = false;
    for chunk in chunks.by_ref() {
        let late = std::time::Instant::now() >= until;
        if late || out.lps >= max_lps {
            stopped = late;
            out.left.extend_from_slice(chunk);
            break;
        }
        let limits = RoundLimits { min_targets: 1, max_lps: Some(max_lps), checked: None };
        let left = batch_rounds(p, lp, &mut how, chunk.to_vec(), limits, &mut out)?;
        out.left.extend(left);
    }
    out.left.extend(chunks.flatten());
    Ok((out, stopped))
}

/// When [`batch_rounds`] stops besides [`BATCH_ROUNDS`] and a round that certifies nothing,
/// and whom it tells of its progress.
#[derive(Clone, Copy)]
struct RoundLimits<'c> {
    /// Fewer targets left than this: stop.
    min_targets: usize,
    /// Stop when the output holds this many LPs.
    max_lps: Option<usize>,
    /// Counts the certified targets (progress display).
    checked: Option<&'c Checked>,
}

/// Batch LPs over the targets `g` (one direction) while each certifies some of them, within
/// `limits`, hot-started by `how`; records the witnesses in `out` and returns the targets left.
fn batch_rounds(
    p: &Problem,
    lp: &CompLp,
    how: &mut Solves,
    mut g: Vec<(usize, usize)>,
    limits: RoundLimits,
    out: &mut BatchOut,
) -> Result<Vec<(usize, usize)>, SuppressError> {
    let RoundLimits { min_targets, max_lps, checked } = limits;
    let mut settled: Vec<(u32, f64, f64)> = Vec::new();
    for _round in 0..BATCH_ROUNDS {
        if g.len() < min_targets || max_lps.is_some_and(|m| out.lps >= m) {
            break;
        }
        let targets: Vec<(u32, f64, f64)> = g
            .iter()
            .map(|&(k, d)| {
                let s = &p.sens[k];
                (s.cell, if d == 0 { -1.0 } else { 1.0 }, need(s, d))
            })
            .collect();
        let w = lp.batch_with(how, &targets, &settled)?;
        out.lps += 1;
        let z: crate::table::relations::FastMap<u32, f64> = w.iter().copied().collect();
        let reached: Vec<bool> =
            targets.iter().map(|&(c, dir, n)| dir * z.get(&c).copied().unwrap_or(0.0) >= n - tolerance(n)).collect();
        let (done, rest): (Vec<_>, Vec<_>) = g.iter().zip(&reached).partition(|(_, &r)| r);
        if done.is_empty() {
            break;
        }
        tick(checked, done.len());
        let users = done.iter().map(|&(&(k, d), _)| (k, d, need(&p.sens[k], d))).collect();
        if lp.cells.len() >= SETTLED_CAPS_MIN_CELLS {
            settled.extend(targets.iter().zip(&reached).filter(|(_, &r)| r).map(|(t, _)| *t));
        }
        out.witnesses.push((w, users));
        g = rest.into_iter().map(|(t, _)| *t).collect();
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::lazy_chunks;

    /// Chunks of about the size asked, in order, covering every triple once, and never
    /// splitting the two directions of a sensitive cell (a sliding requirement needs both).
    #[test]
    fn lazy_chunks_keep_a_cells_directions_together() {
        let singles = [(0, 1, 0), (0, 1, 1), (0, 2, 0), (0, 2, 1), (0, 3, 1), (1, 4, 0), (1, 4, 1)];
        let chunks = lazy_chunks(&singles, 3);
        let sizes: Vec<usize> = chunks.iter().map(|c| c.len()).collect();
        assert_eq!(sizes, vec![4, 3]);
        assert_eq!(chunks.concat(), singles.to_vec());
        assert_eq!(lazy_chunks(&singles, 1).len(), 4);
        assert_eq!(lazy_chunks(&singles, 100).len(), 1);
        assert!(lazy_chunks(&[], 5).is_empty());
    }
}
