//! The wire format of solver partitions: one problem per payload row and one solution per
//! result row, as JSON text.
//!
//! Why JSON and not a binary codec: the payload is small next to the solve (a 1-level subtable
//! has tens to thousands of cells), it needs no new dependency, and a failing partition can be
//! read by a person. Every `f64` travels as its IEEE bit pattern (`u64`): JSON has no infinity
//! (attacker bounds are often `+inf`) and decimal round trips are not guaranteed bit-exact,
//! while the outputs must be byte-identical on every executor. Every payload and result carries
//! the sdcflow version; a process built from another version refuses it (clear error, no
//! silent drift).
//!
//! One mechanism serves every kind: a type that travels implements [`Wire`] (its JSON form and
//! the conversions to and from it), and [`encode`] / [`decode`] add the version stamp, its
//! check and the error messages. Results travel as [`Solved`]: the outcome and who computed it.
//!
//! The roll-up parts of primaries-only tables are the exception for their inputs: the table's
//! [`PartTask`] travels as JSON, but a part's (leaf cell, contributor) pairs — millions of
//! integers — travel as little-endian bytes in a binary column
//! ([`crate::tabulate::parts`]).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use super::part_agg::RouteTask;
use crate::hierarchy::{Hierarchy, Node};
use crate::microagg::nominal_stratum::{NominalStratumOutcome, NominalStratumTask};
use crate::microagg::{MicroaggParams, StratumOutcome, StratumTask, Timings};
use crate::publish::parts::{PartSummary, PartTask};
use crate::publish::{HeatMap, LevelTally, Tally};
use crate::suppress::{
    AuditSummary, Method, ProtectOptions, SubtableOutcome, SubtableStatus, SubtableTask, SuppressError, TableOutcome,
    TableTask,
};
use crate::table::{Cell, CellStatus, Dimension, Table};
use crate::tabulate::parts::PartLayout;

/// sdcflow version stamped into every payload.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A value that travels between the client and the executors as one JSON text.
///
/// The contract: `from_repr(to_repr(x)?)` gives back `x` bit for bit (floats as bit
/// patterns), and the JSON form's first field is `version` (see [`Stamped`]), so that a
/// payload of another sdcflow version is refused before anything else is read from it.
pub trait Wire: Sized {
    /// What the text is called in error messages (`"subtable payload"`).
    const WHAT: &'static str;
    /// The JSON form.
    type Repr: Serialize + DeserializeOwned + Stamped;
    /// The JSON form of `self`, stamped with [`VERSION`]; fails only when the value cannot
    /// travel exactly.
    fn to_repr(&self) -> Result<Self::Repr, String>;
    /// Rebuilds the value from a JSON form whose version was checked.
    fn from_repr(r: Self::Repr) -> Result<Self, String>;
}

/// A JSON form that names the sdcflow version that wrote it.
pub trait Stamped {
    /// The version that wrote it.
    fn version(&self) -> &str;
}

/// What solving a partition gave and the identity of the process that solved it.
#[derive(Debug, Clone, PartialEq)]
pub struct Solved<O> {
    /// The outcome, solver errors included.
    pub outcome: O,
    /// The process that solved it ([`super::udf::worker_identity`]).
    pub worker: String,
}

/// Serialises `x` ([`Wire`]).
pub fn encode<T: Wire>(x: &T) -> Result<String, String> {
    let r = x.to_repr().map_err(|e| format!("{}: {e}", T::WHAT))?;
    serde_json::to_string(&r).map_err(|e| format!("{}: {e}", T::WHAT))
}

/// Parses a text written by [`encode`], refusing another sdcflow version.
pub fn decode<T: Wire>(s: &str) -> Result<T, String> {
    let r: T::Repr = serde_json::from_str(s).map_err(|e| format!("malformed {}: {e}", T::WHAT))?;
    check_version(r.version())?;
    T::from_repr(r).map_err(|e| format!("{}: {e}", T::WHAT))
}

fn check_version(version: &str) -> Result<(), String> {
    if version != VERSION {
        return Err(format!("payload from sdcflow {version} but this executor runs sdcflow {VERSION}"));
    }
    Ok(())
}

/// Implements [`Stamped`] for JSON forms whose `version` field is a `String`.
macro_rules! stamped {
    ($($t:ty),*) => {$(
        impl Stamped for $t {
            fn version(&self) -> &str {
                &self.version
            }
        }
    )*};
}

stamped!(
    WireTask,
    WireOutcome,
    WireStratum,
    WireStratumOutcome,
    WireTableTask,
    WireTableOutcome,
    WireNominal,
    WireNominalOutcome,
    WirePartTask,
    WirePartOutcome,
    WireRouteTask
);

#[derive(Serialize, Deserialize)]
struct WireCell {
    coord: Vec<u32>,
    freq: u64,
    #[serde(with = "crate::table::status_letter")]
    status: CellStatus,
    /// value, top1, top2, lpl, upl, spl, cost as bit patterns.
    floats: [u64; 7],
}

/// A table model: code trees, cells and attacker bounds.
#[derive(Serialize, Deserialize)]
struct WireTable {
    dims: Vec<Dimension>,
    cells: Vec<WireCell>,
    lower: Vec<u64>,
    upper: Vec<u64>,
}

impl WireTable {
    fn of(t: &Table) -> Self {
        let cells = t
            .cells()
            .iter()
            .map(|c| WireCell {
                coord: c.coord.clone(),
                freq: c.freq,
                status: c.status,
                floats: [c.value, c.top1, c.top2, c.lpl, c.upl, c.spl, c.cost].map(bits),
            })
            .collect();
        WireTable {
            dims: t.dims().to_vec(),
            cells,
            lower: t.lower_bounds().iter().copied().map(bits).collect(),
            upper: t.upper_bounds().iter().copied().map(bits).collect(),
        }
    }

    fn table(self) -> Result<Table, String> {
        let cells = self
            .cells
            .into_iter()
            .map(|c| {
                let [value, top1, top2, lpl, upl, spl, cost] = c.floats.map(float);
                Cell { coord: c.coord, value, freq: c.freq, top1, top2, status: c.status, lpl, upl, spl, cost }
            })
            .collect();
        let mut t = Table::new(self.dims, cells).map_err(|e| e.to_string())?;
        if self.lower.len() != t.cells().len() || self.upper.len() != t.cells().len() {
            return Err("bounds do not match the cells".into());
        }
        for (k, (lo, hi)) in self.lower.iter().zip(&self.upper).enumerate() {
            t.set_bounds(k, float(*lo), float(*hi)).map_err(|e| e.to_string())?;
        }
        Ok(t)
    }
}

fn bits(x: f64) -> u64 {
    x.to_bits()
}

fn float(b: u64) -> f64 {
    f64::from_bits(b)
}

fn pattern_string(p: &[bool]) -> String {
    p.iter().map(|&b| if b { '1' } else { '0' }).collect()
}

fn parse_pattern(p: &str) -> Result<Vec<bool>, String> {
    p.chars()
        .map(|c| match c {
            '1' => Ok(true),
            '0' => Ok(false),
            _ => Err(format!("bad pattern character {c:?}")),
        })
        .collect()
}

/// JSON form of a [`SubtableTask`].
#[derive(Serialize, Deserialize)]
pub struct WireTask {
    version: String,
    table: WireTable,
    relaxable: Vec<usize>,
    fallback: Vec<bool>,
    opts: ProtectOptions,
    time_limit_bits: u64,
    stop_unix_ms: u64,
}

/// A modular subtable (bit-exact floats).
impl Wire for SubtableTask {
    const WHAT: &'static str = "subtable payload";
    type Repr = WireTask;
    fn to_repr(&self) -> Result<WireTask, String> {
        Ok(WireTask {
            version: VERSION.into(),
            table: WireTable::of(&self.local),
            relaxable: self.relaxable.clone(),
            fallback: self.fallback.clone(),
            opts: self.opts.clone(),
            time_limit_bits: bits(self.opts.time_limit_s),
            stop_unix_ms: self.stop_unix_ms,
        })
    }
    fn from_repr(w: WireTask) -> Result<Self, String> {
        let local = w.table.table()?;
        let opts = ProtectOptions { time_limit_s: float(w.time_limit_bits), ..w.opts };
        Ok(SubtableTask { local, relaxable: w.relaxable, fallback: w.fallback, opts, stop_unix_ms: w.stop_unix_ms })
    }
}

/// Result of one subtable: the pattern or the solver's error, and who computed it.
#[derive(Serialize, Deserialize)]
pub struct WireOutcome {
    version: String,
    worker: String,
    /// `'1'` = suppressed, `'0'` = published, per local cell.
    pattern: Option<String>,
    status: Option<SubtableStatus>,
    seconds_bits: u64,
    /// The exact model's lower bound on the subtable's secondary cost, when it gave one.
    #[serde(default)]
    lower_bound_bits: Option<u64>,
    error: Option<String>,
}

/// A solved subtable; the decoded outcome's `worker` is the solver's too.
impl Wire for Solved<Result<SubtableOutcome, String>> {
    const WHAT: &'static str = "subtable result";
    type Repr = WireOutcome;
    fn to_repr(&self) -> Result<WireOutcome, String> {
        let (version, worker) = (VERSION.into(), self.worker.clone());
        Ok(match &self.outcome {
            Ok(o) => WireOutcome {
                version,
                worker,
                pattern: Some(pattern_string(&o.pattern)),
                status: Some(o.status),
                seconds_bits: bits(o.seconds),
                lower_bound_bits: o.lower_bound.map(bits),
                error: None,
            },
            Err(e) => WireOutcome {
                version,
                worker,
                pattern: None,
                status: None,
                seconds_bits: bits(0.0),
                lower_bound_bits: None,
                error: Some(e.clone()),
            },
        })
    }
    fn from_repr(w: WireOutcome) -> Result<Self, String> {
        let outcome = match (w.error, w.pattern, w.status) {
            (Some(e), _, _) => Err(e),
            (None, Some(p), Some(status)) => Ok(SubtableOutcome {
                pattern: parse_pattern(&p)?,
                status,
                seconds: float(w.seconds_bits),
                lower_bound: w.lower_bound_bits.map(float),
                worker: w.worker.clone(),
            }),
            _ => return Err("no pattern".into()),
        };
        Ok(Solved { outcome, worker: w.worker })
    }
}

/// JSON form of a [`StratumTask`].
#[derive(Serialize, Deserialize)]
pub struct WireStratum {
    version: String,
    stratum: u64,
    cols: usize,
    points: Vec<u64>,
    weights: Option<Vec<u64>>,
    params: MicroaggParams,
}

/// A numeric microaggregation stratum (bit-exact points and weights). Refuses parameters that
/// do not survive the JSON round trip exactly (they are decimal settings, so they always
/// should).
impl Wire for StratumTask {
    const WHAT: &'static str = "stratum payload";
    type Repr = WireStratum;
    fn to_repr(&self) -> Result<WireStratum, String> {
        let back: MicroaggParams =
            serde_json::from_value(serde_json::to_value(&self.params).map_err(|e| e.to_string())?)
                .map_err(|e| format!("microaggregation parameters: {e}"))?;
        if back != self.params {
            return Err("microaggregation parameters do not survive serialisation exactly".into());
        }
        Ok(WireStratum {
            version: VERSION.into(),
            stratum: self.stratum,
            cols: self.cols,
            points: self.points.iter().copied().map(bits).collect(),
            weights: self.weights.as_ref().map(|w| w.iter().copied().map(bits).collect()),
            params: self.params.clone(),
        })
    }
    fn from_repr(w: WireStratum) -> Result<Self, String> {
        if w.cols == 0 || !w.points.len().is_multiple_of(w.cols) {
            return Err(format!("{} values for {} variables", w.points.len(), w.cols));
        }
        Ok(StratumTask {
            stratum: w.stratum,
            cols: w.cols,
            points: w.points.into_iter().map(float).collect(),
            weights: w.weights.map(|v| v.into_iter().map(float).collect()),
            params: w.params,
        })
    }
}

/// JSON form of a solved stratum.
#[derive(Serialize, Deserialize)]
pub struct WireStratumOutcome {
    version: String,
    worker: String,
    groups: Vec<Vec<usize>>,
    step1_sse: Option<u64>,
    restricted_bound: Option<u64>,
    optimisation_groups: (usize, usize),
    lower_bound: Option<u64>,
    /// Step timings as bit patterns, in [`Timings`] field order.
    timings: [u64; 8],
    warnings: Vec<String>,
}

fn timings_bits(t: &Timings) -> [u64; 8] {
    [t.standardise_s, t.partition_s, t.step1_s, t.step2_s, t.improve_s, t.bound_s, t.verify_s, t.total_s].map(bits)
}

fn timings_from(b: [u64; 8]) -> Timings {
    let [standardise_s, partition_s, step1_s, step2_s, improve_s, bound_s, verify_s, total_s] = b.map(float);
    Timings { standardise_s, partition_s, step1_s, step2_s, improve_s, bound_s, verify_s, total_s }
}

/// A microaggregated stratum.
impl Wire for Solved<StratumOutcome> {
    const WHAT: &'static str = "stratum result";
    type Repr = WireStratumOutcome;
    fn to_repr(&self) -> Result<WireStratumOutcome, String> {
        let o = &self.outcome;
        Ok(WireStratumOutcome {
            version: VERSION.into(),
            worker: self.worker.clone(),
            groups: o.groups.clone(),
            step1_sse: o.step1_sse.map(bits),
            restricted_bound: o.restricted_bound.map(bits),
            optimisation_groups: o.optimisation_groups,
            lower_bound: o.lower_bound.map(bits),
            timings: timings_bits(&o.timings),
            warnings: o.warnings.clone(),
        })
    }
    fn from_repr(w: WireStratumOutcome) -> Result<Self, String> {
        let outcome = StratumOutcome {
            groups: w.groups,
            step1_sse: w.step1_sse.map(float),
            restricted_bound: w.restricted_bound.map(float),
            optimisation_groups: w.optimisation_groups,
            lower_bound: w.lower_bound.map(float),
            timings: timings_from(w.timings),
            warnings: w.warnings,
        };
        Ok(Solved { outcome, worker: w.worker })
    }
}

/// JSON form of a [`TableTask`].
#[derive(Serialize, Deserialize)]
pub struct WireTableTask {
    version: String,
    tables: Vec<WireTable>,
    opts: ProtectOptions,
    time_limit_bits: u64,
    /// `'1'` = suppressed, per cell of the single table.
    merged: Option<String>,
}

/// A whole-table protection (bit-exact floats).
impl Wire for TableTask {
    const WHAT: &'static str = "table payload";
    type Repr = WireTableTask;
    fn to_repr(&self) -> Result<WireTableTask, String> {
        Ok(WireTableTask {
            version: VERSION.into(),
            tables: self.tables.iter().map(WireTable::of).collect(),
            opts: self.opts.clone(),
            time_limit_bits: bits(self.opts.time_limit_s),
            merged: self.merged.as_deref().map(pattern_string),
        })
    }
    fn from_repr(w: WireTableTask) -> Result<Self, String> {
        let tables = w.tables.into_iter().map(WireTable::table).collect::<Result<Vec<_>, _>>()?;
        let merged = w.merged.as_deref().map(parse_pattern).transpose()?;
        let opts = ProtectOptions { time_limit_s: float(w.time_limit_bits), ..w.opts };
        Ok(TableTask { tables, opts, merged })
    }
}

/// Output statuses of one table as status letters.
#[derive(Serialize, Deserialize)]
struct WireStatuses(#[serde(with = "crate::table::status_letter::vec")] Vec<CellStatus>);

/// A whole-table solver error, kept structured so the client reports it as if solved locally.
#[derive(Serialize, Deserialize)]
enum WireError {
    Infeasible {
        cell: usize,
        coord: Vec<u32>,
        why: String,
    },
    Unprotected {
        method: Method,
        count: usize,
        first: usize,
    },
    Input(String),
    /// The hard stop before any clean pattern: the user's error, not the worker's.
    TimeLimit {
        phase: String,
        limit_s: f64,
    },
    Other(String),
}

/// JSON form of a protected table or its error.
#[derive(Serialize, Deserialize)]
pub struct WireTableOutcome {
    version: String,
    worker: String,
    statuses: Vec<WireStatuses>,
    lower_bound_bits: Option<u64>,
    audit: Option<AuditSummary>,
    #[serde(default)]
    stopped_by_time_limit: bool,
    error: Option<WireError>,
}

/// A protected table. A solver error comes back as the same [`SuppressError`] variant (other
/// errors as `Distributed`, naming the worker); the decoded outcome's `worker` is the
/// solver's too.
impl Wire for Solved<Result<TableOutcome, SuppressError>> {
    const WHAT: &'static str = "table result";
    type Repr = WireTableOutcome;
    fn to_repr(&self) -> Result<WireTableOutcome, String> {
        let mut w = WireTableOutcome {
            version: VERSION.into(),
            worker: self.worker.clone(),
            statuses: Vec::new(),
            lower_bound_bits: None,
            audit: None,
            stopped_by_time_limit: false,
            error: None,
        };
        match &self.outcome {
            Ok(o) => {
                w.statuses = o.statuses.iter().map(|s| WireStatuses(s.clone())).collect();
                w.lower_bound_bits = o.lower_bound.map(bits);
                w.audit = Some(o.audit.clone());
                w.stopped_by_time_limit = o.stopped_by_time_limit;
            }
            Err(e) => {
                w.error = Some(match e {
                    SuppressError::Infeasible { cell, coord, why } => {
                        WireError::Infeasible { cell: *cell, coord: coord.clone(), why: why.clone() }
                    }
                    SuppressError::Unprotected { method, count, first } => {
                        WireError::Unprotected { method: *method, count: *count, first: *first }
                    }
                    SuppressError::Input(m) => WireError::Input(m.clone()),
                    SuppressError::TimeLimit { phase, limit_s } => {
                        WireError::TimeLimit { phase: phase.clone(), limit_s: *limit_s }
                    }
                    other => WireError::Other(other.to_string()),
                })
            }
        }
        Ok(w)
    }
    fn from_repr(w: WireTableOutcome) -> Result<Self, String> {
        let outcome = match w.error {
            Some(e) => Err(match e {
                WireError::Infeasible { cell, coord, why } => SuppressError::Infeasible { cell, coord, why },
                WireError::Unprotected { method, count, first } => SuppressError::Unprotected { method, count, first },
                WireError::Input(m) => SuppressError::Input(m),
                WireError::TimeLimit { phase, limit_s } => SuppressError::TimeLimit { phase, limit_s },
                WireError::Other(m) => SuppressError::Distributed(format!("on {}: {m}", w.worker)),
            }),
            None => Ok(TableOutcome {
                statuses: w.statuses.into_iter().map(|s| s.0).collect(),
                lower_bound: w.lower_bound_bits.map(float),
                audit: w.audit.ok_or("no audit")?,
                worker: w.worker.clone(),
                stopped_by_time_limit: w.stopped_by_time_limit,
            }),
        };
        Ok(Solved { outcome, worker: w.worker })
    }
}

/// JSON form of a [`NominalStratumTask`].
#[derive(Serialize, Deserialize)]
pub struct WireNominal {
    version: String,
    task: NominalStratumTask,
}

/// A nominal microaggregation stratum (codes are integers: exact in JSON).
impl Wire for NominalStratumTask {
    const WHAT: &'static str = "nominal stratum payload";
    type Repr = WireNominal;
    fn to_repr(&self) -> Result<WireNominal, String> {
        Ok(WireNominal { version: VERSION.into(), task: self.clone() })
    }
    fn from_repr(w: WireNominal) -> Result<Self, String> {
        Ok(w.task)
    }
}

/// JSON form of an anonymised nominal stratum or its error.
#[derive(Serialize, Deserialize)]
pub struct WireNominalOutcome {
    version: String,
    worker: String,
    outcome: Option<NominalStratumOutcome>,
    error: Option<String>,
}

/// An anonymised nominal stratum, or the stratum's error.
impl Wire for Solved<Result<NominalStratumOutcome, String>> {
    const WHAT: &'static str = "nominal result";
    type Repr = WireNominalOutcome;
    fn to_repr(&self) -> Result<WireNominalOutcome, String> {
        let (outcome, error) = match &self.outcome {
            Ok(o) => (Some(o.clone()), None),
            Err(e) => (None, Some(e.clone())),
        };
        Ok(WireNominalOutcome { version: VERSION.into(), worker: self.worker.clone(), outcome, error })
    }
    fn from_repr(w: WireNominalOutcome) -> Result<Self, String> {
        let outcome = match (w.outcome, w.error) {
            (_, Some(e)) => Err(e),
            (Some(o), None) => Ok(o),
            (None, None) => return Err("no outcome".into()),
        };
        Ok(Solved { outcome, worker: w.worker })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suppress::subtables;

    /// A synthetic table: a 2×2 hierarchy × a flat variable of 3 codes.
    fn small_table(seed: u64) -> Table {
        let spec = crate::table::synth::SynthSpec {
            dims: vec![vec![2, 2], vec![3]],
            density: 1.0,
            mean_freq: 4.0,
            min_freq: 3,
            protection: 0.1,
            seed,
        };
        crate::table::synth::generate(&spec).unwrap()
    }

    fn solved<O>(outcome: O, worker: &str) -> Solved<O> {
        Solved { outcome, worker: worker.into() }
    }

    /// `x` through [`encode`] and [`decode`].
    fn round_trip<T: Wire>(x: &T) -> T {
        decode(&encode(x).unwrap()).unwrap()
    }

    fn small_task() -> SubtableTask {
        let local = small_table(3);
        let n = local.cells().len();
        let stop_unix_ms = crate::suppress::unix_ms_after(600.0);
        SubtableTask {
            local,
            relaxable: vec![],
            fallback: vec![false; n],
            opts: ProtectOptions::default(),
            stop_unix_ms,
        }
    }

    #[test]
    fn tasks_round_trip_bit_exact() {
        let t = small_table(3);
        for s in subtables(&t).unwrap() {
            let mut local = s.table.clone();
            local.set_status(0, CellStatus::Primary);
            local.set_protection(0, 0.1 + 0.2, 1.0 / 3.0, 0.0);
            let task = SubtableTask {
                local,
                relaxable: vec![1],
                fallback: vec![false; s.cells.len()],
                opts: ProtectOptions { time_limit_s: 0.1 + 0.7, ..Default::default() },
                stop_unix_ms: 1_790_000_000_123,
            };
            let back: SubtableTask = decode(&encode(&task).unwrap()).unwrap();
            assert_eq!(back.stop_unix_ms, task.stop_unix_ms);
            assert_eq!(back.local.cells(), task.local.cells());
            assert_eq!(back.local.dims(), task.local.dims());
            assert_eq!(back.local.upper_bounds(), task.local.upper_bounds());
            assert!(back.local.upper_bounds().iter().all(|u| u.is_infinite()));
            assert_eq!(back.opts, task.opts);
            assert_eq!((back.relaxable, back.fallback), (task.relaxable, task.fallback));
        }
    }

    #[test]
    fn outcomes_and_errors_round_trip() {
        let o = SubtableOutcome {
            pattern: vec![true, false, true],
            status: SubtableStatus::Relaxed,
            seconds: 0.25,
            lower_bound: Some(12.5),
            worker: String::new(),
        };
        let back = round_trip(&solved(Ok::<_, String>(o.clone()), "exec-1"));
        assert_eq!(back, solved(Ok(SubtableOutcome { worker: "exec-1".into(), ..o }), "exec-1"));
        let e = round_trip(&solved(Err::<SubtableOutcome, _>("lp failed".to_string()), "exec-2"));
        assert_eq!(e, solved(Err("lp failed".to_string()), "exec-2"));
        let e = decode::<SubtableTask>("{\"version\":\"0.0.0\"}").unwrap_err();
        assert!(e.contains("malformed subtable payload"), "{e}");
        let e = decode::<SubtableTask>(&encode(&small_task()).unwrap().replacen(VERSION, "0.0.0", 1)).unwrap_err();
        assert!(e.contains("payload from sdcflow 0.0.0"), "{e}");
    }

    #[test]
    fn strata_round_trip_bit_exact() {
        let task = StratumTask {
            stratum: 7,
            cols: 2,
            points: vec![0.1 + 0.2, -1.0 / 3.0, 1e-300, 2.5],
            weights: Some(vec![1.0 / 7.0, 3.0]),
            params: MicroaggParams { k: 2, vmdav_gamma: 0.1 + 0.2, ..Default::default() },
        };
        let back: StratumTask = round_trip(&task);
        assert_eq!(back, task);
        let o = crate::microagg::solve_stratum(&task);
        assert_eq!(round_trip(&solved(o.clone(), "exec-1")), solved(o, "exec-1"));
    }

    #[test]
    fn table_tasks_outcomes_and_errors_round_trip() {
        let mut t = small_table(4);
        let v = t.cells()[1].value;
        t.set_bounds(1, v * (0.1 + 0.2), v + 1.0 / 3.0).unwrap();
        let n = t.cells().len();
        let task = TableTask {
            tables: vec![t.clone(), t],
            opts: ProtectOptions { method: Method::Modular, time_limit_s: 0.1 + 0.7, ..Default::default() },
            merged: Some((0..n).map(|i| i % 3 == 0).collect()),
        };
        let back: TableTask = round_trip(&task);
        assert_eq!(back.opts, task.opts);
        assert_eq!(back.merged, task.merged);
        for (a, b) in back.tables.iter().zip(&task.tables) {
            assert_eq!((a.cells(), a.dims()), (b.cells(), b.dims()));
            assert_eq!((a.lower_bounds(), a.upper_bounds()), (b.lower_bounds(), b.upper_bounds()));
        }

        let o = TableOutcome {
            statuses: vec![vec![CellStatus::Primary, CellStatus::Secondary, CellStatus::Safe], vec![CellStatus::Empty]],
            lower_bound: Some(1.0 / 3.0),
            audit: AuditSummary { sensitive: 3, lps_solved: 2, witnessed: 4, seconds: 0.5, ..Default::default() },
            worker: String::new(),
            stopped_by_time_limit: true,
        };
        let back = round_trip(&solved(Ok::<_, SuppressError>(o.clone()), "exec-1")).outcome.unwrap();
        assert_eq!(back, TableOutcome { worker: "exec-1".into(), ..o });
        let e = SuppressError::Infeasible { cell: 3, coord: vec![1, 2], why: "all partners published".into() };
        let back = round_trip(&solved(Err::<TableOutcome, _>(e.clone()), "exec-2")).outcome.unwrap_err();
        assert_eq!(back, e);
        let e = SuppressError::Unprotected { method: Method::Fast, count: 2, first: 9 };
        assert_eq!(round_trip(&solved(Err::<TableOutcome, _>(e.clone()), "x")).outcome.unwrap_err(), e);
        // The time limit stays the user's error (not "distributed subtable solve: on exec…").
        let e = SuppressError::TimeLimit { phase: "the audit-driven repair".into(), limit_s: 120.0 };
        assert_eq!(round_trip(&solved(Err::<TableOutcome, _>(e.clone()), "x")).outcome.unwrap_err(), e);
        let e = SuppressError::Distributed("gone".into());
        let back = round_trip(&solved(Err::<TableOutcome, _>(e), "exec-3")).outcome.unwrap_err();
        assert!(matches!(&back, SuppressError::Distributed(m) if m.contains("on exec-3")), "{back:?}");
        assert!(decode::<TableTask>("{\"version\":\"0.0.0\"}").is_err());
    }
    /// Issue 13 item 5: the client re-audits what an executor returns. A wire result whose
    /// pattern was tampered with (a secondary published again, still claiming a clean audit)
    /// or whose audit figures do not match the pattern is refused; the honest one passes.
    #[test]
    fn tampered_table_results_are_refused_by_the_client() {
        use crate::suppress::task::verify_outcome;
        let t = small_table(5);
        let task = TableTask {
            tables: vec![t.clone()],
            opts: ProtectOptions { method: Method::Fast, time_limit_s: 30.0, ..Default::default() },
            merged: None,
        };
        // What an executor sends back, as JSON.
        let outcome = crate::suppress::solve_table_task(&round_trip(&task));
        let honest = encode(&solved(outcome, "exec-1")).unwrap();
        let verify = |wire: &str| {
            let out = decode::<Solved<Result<TableOutcome, SuppressError>>>(wire).unwrap().outcome.unwrap();
            verify_outcome(&task.tables, task.opts.singleton_rule, &out)
        };
        verify(&honest).unwrap();
        let json: serde_json::Value = serde_json::from_str(&honest).unwrap();
        assert!(json["statuses"][0].to_string().contains('M'), "the honest pattern has secondaries: {json}");
        // Each secondary published again, one at a time: at least one exposes a primary.
        let letters = json["statuses"][0].clone();
        let flip = |k: usize| -> serde_json::Value {
            match &letters {
                serde_json::Value::String(s) => {
                    let mut c: Vec<char> = s.chars().collect();
                    c[k] = 'S';
                    serde_json::Value::String(c.into_iter().collect())
                }
                serde_json::Value::Array(a) => {
                    let mut a = a.clone();
                    a[k] = serde_json::Value::String("S".into());
                    serde_json::Value::Array(a)
                }
                other => panic!("unexpected status encoding {other}"),
            }
        };
        let secondaries: Vec<usize> =
            decode::<Solved<Result<TableOutcome, SuppressError>>>(&honest).unwrap().outcome.unwrap().statuses[0]
                .iter()
                .enumerate()
                .filter(|(_, s)| **s == CellStatus::Secondary)
                .map(|(i, _)| i)
                .collect();
        let mut refused = 0;
        for k in secondaries {
            let mut bad = json.clone();
            bad["statuses"][0] = flip(k);
            assert_eq!(bad["audit"]["under_protected"], 0, "the tampered result still claims a clean audit");
            if let Err(e) = verify(&bad.to_string()) {
                let m = e.to_string();
                assert!(matches!(e, SuppressError::Distributed(_)), "{e:?}");
                assert!(
                    m.contains("exec-1") && m.contains("under-protected") && m.contains("nothing is published"),
                    "{m}"
                );
                refused += 1;
            }
        }
        assert!(refused > 0, "publishing a secondary must expose some primary");
        // An audit summary that does not match the pattern.
        let mut bad = json.clone();
        bad["audit"]["sensitive"] = serde_json::json!(0);
        let e = verify(&bad.to_string()).unwrap_err().to_string();
        assert!(e.contains("does not match"), "{e}");
        // A primary published is a changed input status.
        let mut bad = json.clone();
        let p = decode::<Solved<Result<TableOutcome, SuppressError>>>(&honest).unwrap().outcome.unwrap().statuses[0]
            .iter()
            .position(|s| *s == CellStatus::Primary)
            .unwrap();
        bad["statuses"][0] = flip(p);
        let e = verify(&bad.to_string()).unwrap_err().to_string();
        assert!(e.contains("changed from U to S"), "{e}");
    }
}

/// A hierarchy as its nodes' codes and parents (pre-order; depths and children follow).
#[derive(Serialize, Deserialize)]
pub struct WireHierarchy {
    variable: String,
    codes: Vec<String>,
    parents: Vec<Option<usize>>,
}

impl WireHierarchy {
    fn of(h: &Hierarchy) -> Self {
        Self {
            variable: h.variable().to_string(),
            codes: h.nodes().iter().map(|n| n.code.clone()).collect(),
            parents: h.nodes().iter().map(|n| n.parent).collect(),
        }
    }

    fn rebuild(self) -> Result<Hierarchy, String> {
        let mut nodes: Vec<Node> = Vec::with_capacity(self.codes.len());
        for (i, (code, parent)) in self.codes.into_iter().zip(self.parents).enumerate() {
            let depth = match parent {
                None if i == 0 => 0,
                Some(p) if p < i => nodes[p].depth + 1,
                _ => return Err(format!("hierarchy `{}`: node {i} has parent {parent:?}", self.variable)),
            };
            if let Some(p) = parent {
                nodes[p].children.push(i);
            }
            nodes.push(Node { code, parent, depth, children: Vec::new() });
        }
        if nodes.is_empty() {
            return Err(format!("hierarchy `{}` without nodes", self.variable));
        }
        Ok(Hierarchy::from_nodes(&self.variable, nodes))
    }
}

/// JSON form of a [`PartTask`] (its inputs travel beside it as bytes).
#[derive(Serialize, Deserialize)]
pub struct WirePartTask {
    version: String,
    table: String,
    explanatory: Vec<String>,
    dims: Vec<WireHierarchy>,
    top_n: usize,
    weighted: bool,
    safety: String,
    root: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    chunks: Option<String>,
}

impl Wire for PartTask {
    const WHAT: &'static str = "roll-up part";
    type Repr = WirePartTask;
    fn to_repr(&self) -> Result<WirePartTask, String> {
        Ok(WirePartTask {
            version: VERSION.into(),
            table: self.table.clone(),
            explanatory: self.explanatory.clone(),
            dims: self.layout.dims.iter().map(WireHierarchy::of).collect(),
            top_n: self.layout.top_n,
            weighted: self.layout.weighted,
            safety: self.safety.clone(),
            root: self.root.clone(),
            chunks: self.chunks.clone(),
        })
    }
    fn from_repr(w: WirePartTask) -> Result<Self, String> {
        let dims = w.dims.into_iter().map(WireHierarchy::rebuild).collect::<Result<Vec<_>, _>>()?;
        Ok(PartTask {
            table: w.table,
            explanatory: w.explanatory,
            layout: PartLayout { dims, top_n: w.top_n, weighted: w.weighted },
            safety: w.safety,
            root: w.root,
            chunks: w.chunks,
        })
    }
}

/// JSON form of a [`RouteTask`].
#[derive(Serialize, Deserialize)]
pub struct WireRouteTask {
    version: String,
    table: String,
    dims: Vec<WireHierarchy>,
    /// The parts' first shard keys, in decimal (JSON numbers do not hold 128 bits everywhere).
    starts: Vec<String>,
    first: Vec<u64>,
    chunks: Vec<u64>,
    folder: String,
}

impl Wire for RouteTask {
    const WHAT: &'static str = "part routing";
    type Repr = WireRouteTask;
    fn to_repr(&self) -> Result<WireRouteTask, String> {
        Ok(WireRouteTask {
            version: VERSION.into(),
            table: self.table.clone(),
            dims: self.dims.iter().map(WireHierarchy::of).collect(),
            starts: self.starts.iter().map(u128::to_string).collect(),
            first: self.first.clone(),
            chunks: self.chunks.clone(),
            folder: self.folder.clone(),
        })
    }
    fn from_repr(w: WireRouteTask) -> Result<Self, String> {
        let dims = w.dims.into_iter().map(WireHierarchy::rebuild).collect::<Result<Vec<_>, _>>()?;
        let starts = w.starts.iter().map(|s| s.parse::<u128>().map_err(|e| format!("part start {s:?}: {e}")));
        let starts = starts.collect::<Result<_, _>>()?;
        Ok(RouteTask { table: w.table, dims, starts, first: w.first, chunks: w.chunks, folder: w.folder })
    }
}

/// One hierarchy level's figures, floats as bit patterns.
#[derive(Serialize, Deserialize)]
pub struct WireLevel {
    level: usize,
    cells: usize,
    suppressed: usize,
    value_bits: u64,
    suppressed_value_bits: u64,
}

/// JSON form of a written part or its error.
#[derive(Serialize, Deserialize)]
pub struct WirePartOutcome {
    version: String,
    worker: String,
    part: usize,
    cells: usize,
    files: Vec<(String, u64)>,
    status_counts: BTreeMap<String, usize>,
    total_abs_bits: u64,
    suppressed_abs_bits: u64,
    by_level: Vec<Vec<WireLevel>>,
    heat_map: Option<HeatMap>,
    error: Option<String>,
}

/// A written part (files, sizes, report figures) or why it could not be written.
impl Wire for Solved<Result<PartSummary, String>> {
    const WHAT: &'static str = "roll-up part result";
    type Repr = WirePartOutcome;
    fn to_repr(&self) -> Result<WirePartOutcome, String> {
        let mut w = WirePartOutcome {
            version: VERSION.into(),
            worker: self.worker.clone(),
            part: 0,
            cells: 0,
            files: Vec::new(),
            status_counts: BTreeMap::new(),
            total_abs_bits: 0,
            suppressed_abs_bits: 0,
            by_level: Vec::new(),
            heat_map: None,
            error: None,
        };
        match &self.outcome {
            Ok(s) => {
                w.part = s.part;
                w.cells = s.cells;
                w.files = s.files.clone();
                let t = &s.tally;
                w.status_counts = t.status_counts.iter().map(|(k, v)| (k.to_string(), *v)).collect();
                w.total_abs_bits = bits(t.total_abs);
                w.suppressed_abs_bits = bits(t.suppressed_abs);
                w.by_level = t
                    .by_level
                    .iter()
                    .map(|ls| {
                        ls.iter()
                            .map(|l| WireLevel {
                                level: l.level,
                                cells: l.cells,
                                suppressed: l.suppressed,
                                value_bits: bits(l.value),
                                suppressed_value_bits: bits(l.suppressed_value),
                            })
                            .collect()
                    })
                    .collect();
                w.heat_map = t.heat_map.clone();
            }
            Err(e) => w.error = Some(e.clone()),
        }
        Ok(w)
    }
    fn from_repr(w: WirePartOutcome) -> Result<Self, String> {
        if let Some(e) = w.error {
            return Ok(Solved { outcome: Err(e), worker: w.worker });
        }
        let mut status_counts = BTreeMap::new();
        for (k, v) in w.status_counts {
            let s = CellStatus::from_letter(&k).ok_or_else(|| format!("unknown status {k:?}"))?;
            status_counts.insert(s.letter(), v);
        }
        let tally = Tally {
            cells: w.cells,
            status_counts,
            total_abs: float(w.total_abs_bits),
            suppressed_abs: float(w.suppressed_abs_bits),
            by_level: w
                .by_level
                .into_iter()
                .map(|ls| {
                    ls.into_iter()
                        .map(|l| LevelTally {
                            level: l.level,
                            cells: l.cells,
                            suppressed: l.suppressed,
                            value: float(l.value_bits),
                            suppressed_value: float(l.suppressed_value_bits),
                        })
                        .collect()
                })
                .collect(),
            heat_map: w.heat_map,
        };
        let summary = PartSummary { part: w.part, cells: w.cells, files: w.files, tally };
        Ok(Solved { outcome: Ok(summary), worker: w.worker })
    }
}

#[cfg(test)]
mod golden {
    use super::*;

    /// The JSON of every kind of payload and result, with the version as `@VERSION@`: the
    /// bytes a client and its executors exchange do not change unless this file does (an
    /// executor only talks to a client of its own version, but the bytes are what the
    /// determinism of cluster runs rests on). Written by the encoders before they were merged
    /// into [`Wire`].
    const GOLDEN: &str = include_str!("testdata/wire_golden.txt");

    #[test]
    fn wire_bytes_are_unchanged() {
        let spec = crate::table::synth::SynthSpec {
            dims: vec![vec![2, 2], vec![3]],
            density: 1.0,
            mean_freq: 4.0,
            min_freq: 3,
            protection: 0.1,
            seed: 3,
        };
        let mut t = crate::table::synth::generate(&spec).unwrap();
        let v = t.cells()[1].value;
        t.set_bounds(1, v * (0.1 + 0.2), v + 1.0 / 3.0).unwrap();
        let n = t.cells().len();
        let opts = ProtectOptions { time_limit_s: 0.1 + 0.7, ..Default::default() };
        let sub = SubtableTask {
            local: t.clone(),
            relaxable: vec![1],
            fallback: vec![false; n],
            opts: opts.clone(),
            stop_unix_ms: 1_790_000_000_123,
        };
        let so = SubtableOutcome {
            pattern: vec![true, false, true],
            status: SubtableStatus::Relaxed,
            seconds: 0.25,
            lower_bound: Some(12.5),
            worker: String::new(),
        };
        let table = TableTask {
            tables: vec![t.clone()],
            opts: ProtectOptions { method: Method::Modular, ..opts.clone() },
            merged: Some((0..n).map(|i| i % 3 == 0).collect()),
        };
        let to = TableOutcome {
            statuses: vec![vec![CellStatus::Primary, CellStatus::Secondary, CellStatus::Safe], vec![CellStatus::Empty]],
            lower_bound: Some(1.0 / 3.0),
            audit: AuditSummary { sensitive: 3, lps_solved: 2, witnessed: 4, seconds: 0.5, ..Default::default() },
            worker: String::new(),
            stopped_by_time_limit: true,
        };
        let st = StratumTask {
            stratum: 7,
            cols: 2,
            points: vec![0.1 + 0.2, -1.0 / 3.0, 1e-300, 2.5],
            weights: Some(vec![1.0 / 7.0, 3.0]),
            params: MicroaggParams { k: 2, vmdav_gamma: 0.1 + 0.2, ..Default::default() },
        };
        let sto = StratumOutcome {
            timings: timings_from([1, 2, 3, 4, 5, 6, 7, 8].map(|i: u64| bits(i as f64 / 4.0))),
            ..crate::microagg::solve_stratum(&st)
        };
        let nt = NominalStratumTask {
            cols: 2,
            codes: vec![0, 1, 1, 0, 2, 1],
            k: 3,
            control: None,
            up_to: 2,
            seed: 5,
            method: Default::default(),
        };
        let nto = Ok::<_, String>(NominalStratumOutcome {
            released: vec![0, 1, 1, 0, 2, 2],
            report: serde_json::from_value(serde_json::json!({
                "blocks": 1, "clustering_weight": 7, "clusters": 2, "control_chi2": 0.5, "exact_status": "Optimal",
                "method": "exact", "per_dimension": [],
                "timings_ms": {"aggregate": 1.0, "partition": 2.0, "report": 3.0, "verify": 4.0},
                "verify": {"min_class_size": 3, "new_combination_rows": 0, "rows": 6}
            }))
            .unwrap(),
        });
        let geo = crate::hierarchy::Hierarchy::resolve(
            "geo",
            &crate::hierarchy::HierarchySpec::Levels(vec![1, 1]),
            &["1a".to_string(), "2b".to_string()],
        )
        .unwrap();
        let part_task = PartTask {
            table: "t 'x'".into(),
            explanatory: vec!["geo".into()],
            layout: PartLayout { dims: vec![geo], top_n: 2, weighted: true },
            safety: "NK(1,85)|FREQ(3,10)".into(),
            root: "/out/.staging".into(),
            chunks: None,
        };
        let mut status_counts = BTreeMap::new();
        status_counts.insert("U", 2);
        status_counts.insert("S", 3);
        let level =
            |level, cells| LevelTally { level, cells, suppressed: 1, value: 0.1 + 0.2, suppressed_value: 1.0 / 3.0 };
        let part_summary = PartSummary {
            part: 3,
            cells: 5,
            files: vec![
                ("confidential/t/cells/part-00003.parquet".into(), 1234),
                ("publish/t/published/part-00003.csv".into(), 56),
            ],
            tally: Tally {
                cells: 5,
                status_counts,
                total_abs: 0.1 + 0.7,
                suppressed_abs: 1e-300,
                by_level: vec![vec![level(0, 1), level(1, 2), level(2, 2)]],
                heat_map: None,
            },
        };
        fn w<O>(outcome: O, worker: &str) -> Solved<O> {
            Solved { outcome, worker: worker.into() }
        }
        // Parts round trip: hierarchies rebuilt node for node, figures bit for bit.
        let route = RouteTask {
            table: "t".into(),
            dims: part_task.layout.dims.clone(),
            starts: vec![0, 1 << 70, u128::MAX],
            first: vec![0, 3, 4],
            chunks: vec![3, 1, 6],
            folder: "s3://b/scratch/x".into(),
        };
        assert_eq!(
            (route.part_chunk(0), route.part_chunk(2), route.part_chunk(3)),
            (Some((0, 0)), Some((0, 2)), Some((1, 0)))
        );
        assert_eq!((route.part_chunk(4), route.part_chunk(9)), (Some((2, 0)), Some((2, 5))));
        let back = decode::<RouteTask>(&encode(&route).unwrap()).unwrap();
        assert_eq!(
            (back.starts, back.first, back.chunks, back.folder, back.dims[0].nodes()),
            (route.starts, route.first, route.chunks, route.folder, route.dims[0].nodes())
        );
        let chunked = PartTask { chunks: Some("/scratch/__sdc_t_parts".into()), ..part_task.clone() };
        let back: PartTask = decode(&encode(&chunked).unwrap()).unwrap();
        assert_eq!(back.chunks, chunked.chunks);
        let back: PartTask = decode(&encode(&part_task).unwrap()).unwrap();
        assert_eq!(back.chunks, None);
        assert_eq!(back.layout.dims[0].nodes(), part_task.layout.dims[0].nodes());
        assert_eq!((back.table.as_str(), back.layout.weighted), (part_task.table.as_str(), true));
        let s = w(Ok::<_, String>(part_summary.clone()), "exec-5");
        assert_eq!(decode::<Solved<Result<PartSummary, String>>>(&encode(&s).unwrap()).unwrap(), s);
        let lines = vec![
            ("subtable_task", encode(&sub)),
            ("subtable_outcome", encode(&w(Ok::<_, String>(so), "exec-1"))),
            ("subtable_error", encode(&w(Err::<SubtableOutcome, _>("lp failed".to_string()), "exec-2"))),
            ("table_task", encode(&table)),
            ("table_outcome", encode(&w(Ok::<_, SuppressError>(to), "exec-1"))),
            (
                "table_infeasible",
                encode(&w(
                    Err::<TableOutcome, _>(SuppressError::Infeasible { cell: 3, coord: vec![1, 2], why: "x".into() }),
                    "exec-2",
                )),
            ),
            (
                "table_unprotected",
                encode(&w(
                    Err::<TableOutcome, _>(SuppressError::Unprotected { method: Method::Fast, count: 2, first: 9 }),
                    "exec-2",
                )),
            ),
            ("table_input", encode(&w(Err::<TableOutcome, _>(SuppressError::Input("bad".into())), "exec-2"))),
            ("table_other", encode(&w(Err::<TableOutcome, _>(SuppressError::Distributed("gone".into())), "exec-2"))),
            ("stratum_task", encode(&st)),
            ("stratum_outcome", encode(&w(sto, "exec-3"))),
            ("nominal_task", encode(&nt)),
            ("nominal_outcome", encode(&w(nto, "exec-4"))),
            ("nominal_error", encode(&w(Err::<NominalStratumOutcome, _>("too few".to_string()), "exec-4"))),
            ("part_task", encode(&part_task)),
            ("part_outcome", encode(&w(Ok::<_, String>(part_summary), "exec-5"))),
            ("part_error", encode(&w(Err::<PartSummary, _>("disk full".to_string()), "exec-5"))),
        ];
        let mut out = String::new();
        for (k, v) in lines {
            out.push_str(&format!("{k}\t{}\n", v.unwrap().replace(VERSION, "@VERSION@")));
        }
        // A deliberate format change (a new option, a new report field) rewrites the file with
        // `SDCFLOW_BLESS_WIRE=1`; the diff is then reviewed in the commit.
        if std::env::var_os("SDCFLOW_BLESS_WIRE").is_some() {
            std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/src/cluster/testdata/wire_golden.txt"), &out).unwrap();
            return;
        }
        for (a, b) in out.lines().zip(GOLDEN.lines()) {
            assert_eq!(a, b);
        }
        assert_eq!(out, GOLDEN);
    }
}
