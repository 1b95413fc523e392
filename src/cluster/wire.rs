//! The wire format of solver partitions: one subtable problem per row, as JSON text.
//!
//! Why JSON and not a binary codec: the payload is small next to the solve (a 1-level subtable
//! has tens to thousands of cells), it needs no new dependency, and a failing partition can be
//! read by a person. Every `f64` travels as its IEEE bit pattern (`u64`): JSON has no infinity
//! (attacker bounds are often `+inf`) and decimal round trips are not guaranteed bit-exact,
//! while the outputs must be byte-identical on every executor. Payloads carry the sdcflow
//! version; an executor built from another version refuses them (clear error, no silent drift).

use serde::{Deserialize, Serialize};

use crate::microagg::nominal_stratum::{NominalStratumOutcome, NominalStratumTask};
use crate::microagg::{MicroaggParams, StratumOutcome, StratumTask, Timings};
use crate::suppress::{
    AuditSummary, Method, ProtectOptions, SubtableOutcome, SubtableStatus, SubtableTask, SuppressError, TableOutcome,
    TableTask,
};
use crate::table::{Cell, CellStatus, Dimension, Table};

/// sdcflow version stamped into every payload.
const VERSION: &str = env!("CARGO_PKG_VERSION");

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

#[derive(Serialize, Deserialize)]
struct WireTask {
    version: String,
    table: WireTable,
    relaxable: Vec<usize>,
    fallback: Vec<bool>,
    opts: ProtectOptions,
    time_limit_bits: u64,
}

/// Result of one partition row: the outcome or the solver's error, and who computed it.
#[derive(Serialize, Deserialize)]
struct WireOutcome {
    version: String,
    worker: String,
    /// `'1'` = suppressed, `'0'` = published, per local cell.
    pattern: Option<String>,
    status: Option<SubtableStatus>,
    seconds_bits: u64,
    error: Option<String>,
}

fn bits(x: f64) -> u64 {
    x.to_bits()
}

fn float(b: u64) -> f64 {
    f64::from_bits(b)
}

/// Serialises a subtable task (bit-exact floats).
pub fn encode_task(t: &SubtableTask) -> String {
    let w = WireTask {
        version: VERSION.into(),
        table: WireTable::of(&t.local),
        relaxable: t.relaxable.clone(),
        fallback: t.fallback.clone(),
        opts: t.opts.clone(),
        time_limit_bits: bits(t.opts.time_limit_s),
    };
    serde_json::to_string(&w).expect("a subtable task always serialises")
}

fn check_version(version: &str) -> Result<(), String> {
    if version != VERSION {
        return Err(format!("payload from sdcflow {version} but this executor runs sdcflow {VERSION}"));
    }
    Ok(())
}

/// Parses a payload written by [`encode_task`] and rebuilds the local table.
pub fn decode_task(s: &str) -> Result<SubtableTask, String> {
    let w: WireTask = serde_json::from_str(s).map_err(|e| format!("malformed subtable payload: {e}"))?;
    check_version(&w.version)?;
    let local = w.table.table().map_err(|e| format!("subtable payload: {e}"))?;
    let opts = ProtectOptions { time_limit_s: float(w.time_limit_bits), ..w.opts };
    Ok(SubtableTask { local, relaxable: w.relaxable, fallback: w.fallback, opts })
}

/// Serialises the result of solving one payload.
pub fn encode_outcome(r: &Result<SubtableOutcome, String>, worker: &str) -> String {
    let w = match r {
        Ok(o) => WireOutcome {
            version: VERSION.into(),
            worker: worker.into(),
            pattern: Some(pattern_string(&o.pattern)),
            status: Some(o.status),
            seconds_bits: bits(o.seconds),
            error: None,
        },
        Err(e) => WireOutcome {
            version: VERSION.into(),
            worker: worker.into(),
            pattern: None,
            status: None,
            seconds_bits: bits(0.0),
            error: Some(e.clone()),
        },
    };
    serde_json::to_string(&w).expect("an outcome always serialises")
}

/// Parses a result of [`encode_outcome`]: `Err((worker, message))` when the solver failed.
pub fn decode_outcome(s: &str) -> Result<Result<SubtableOutcome, (String, String)>, String> {
    let w: WireOutcome = serde_json::from_str(s).map_err(|e| format!("malformed subtable result: {e}"))?;
    if let Some(e) = w.error {
        return Ok(Err((w.worker, e)));
    }
    let (Some(p), Some(status)) = (w.pattern, w.status) else {
        return Err("subtable result without a pattern".into());
    };
    let pattern = parse_pattern(&p).map_err(|e| format!("subtable result: {e}"))?;
    Ok(Ok(SubtableOutcome { pattern, status, seconds: float(w.seconds_bits), worker: w.worker }))
}

#[derive(Serialize, Deserialize)]
struct WireStratum {
    version: String,
    stratum: u64,
    cols: usize,
    points: Vec<u64>,
    weights: Option<Vec<u64>>,
    params: MicroaggParams,
}

#[derive(Serialize, Deserialize)]
struct WireStratumOutcome {
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

/// Serialises a stratum task (bit-exact points and weights). Errors if the parameters do not
/// survive the JSON round trip exactly (they are decimal settings, so they always should).
pub fn encode_stratum(t: &StratumTask) -> Result<String, String> {
    let w = WireStratum {
        version: VERSION.into(),
        stratum: t.stratum,
        cols: t.cols,
        points: t.points.iter().copied().map(bits).collect(),
        weights: t.weights.as_ref().map(|w| w.iter().copied().map(bits).collect()),
        params: t.params.clone(),
    };
    let s = serde_json::to_string(&w).map_err(|e| format!("stratum payload: {e}"))?;
    let back: MicroaggParams = serde_json::from_value(serde_json::to_value(&t.params).map_err(|e| e.to_string())?)
        .map_err(|e| format!("microaggregation parameters: {e}"))?;
    if back != t.params {
        return Err("microaggregation parameters do not survive serialisation exactly".into());
    }
    Ok(s)
}

/// Parses a payload written by [`encode_stratum`].
pub fn decode_stratum(s: &str) -> Result<StratumTask, String> {
    let w: WireStratum = serde_json::from_str(s).map_err(|e| format!("malformed stratum payload: {e}"))?;
    if w.version != VERSION {
        return Err(format!("payload from sdcflow {} but this executor runs sdcflow {VERSION}", w.version));
    }
    if w.cols == 0 || !w.points.len().is_multiple_of(w.cols) {
        return Err(format!("stratum payload: {} values for {} variables", w.points.len(), w.cols));
    }
    Ok(StratumTask {
        stratum: w.stratum,
        cols: w.cols,
        points: w.points.into_iter().map(float).collect(),
        weights: w.weights.map(|v| v.into_iter().map(float).collect()),
        params: w.params,
    })
}

/// Serialises a stratum result with the identity of the process that computed it.
pub fn encode_stratum_outcome(o: &StratumOutcome, worker: &str) -> String {
    let w = WireStratumOutcome {
        version: VERSION.into(),
        worker: worker.into(),
        groups: o.groups.clone(),
        step1_sse: o.step1_sse.map(bits),
        restricted_bound: o.restricted_bound.map(bits),
        optimisation_groups: o.optimisation_groups,
        lower_bound: o.lower_bound.map(bits),
        timings: timings_bits(&o.timings),
        warnings: o.warnings.clone(),
    };
    serde_json::to_string(&w).expect("a stratum outcome always serialises")
}

/// Parses a result of [`encode_stratum_outcome`]: the outcome and the worker.
pub fn decode_stratum_outcome(s: &str) -> Result<(StratumOutcome, String), String> {
    let w: WireStratumOutcome = serde_json::from_str(s).map_err(|e| format!("malformed stratum result: {e}"))?;
    let o = StratumOutcome {
        groups: w.groups,
        step1_sse: w.step1_sse.map(float),
        restricted_bound: w.restricted_bound.map(float),
        optimisation_groups: w.optimisation_groups,
        lower_bound: w.lower_bound.map(float),
        timings: timings_from(w.timings),
        warnings: w.warnings,
    };
    Ok((o, w.worker))
}

#[derive(Serialize, Deserialize)]
struct WireTableTask {
    version: String,
    tables: Vec<WireTable>,
    opts: ProtectOptions,
    time_limit_bits: u64,
    /// `'1'` = suppressed, per cell of the single table.
    merged: Option<String>,
}

/// Output statuses of one table as status letters.
#[derive(Serialize, Deserialize)]
struct WireStatuses(#[serde(with = "crate::table::status_letter::vec")] Vec<CellStatus>);

/// A whole-table solver error, kept structured so the client reports it as if solved locally.
#[derive(Serialize, Deserialize)]
enum WireError {
    Infeasible { cell: usize, coord: Vec<u32>, why: String },
    Unprotected { method: Method, count: usize, first: usize },
    Input(String),
    Other(String),
}

#[derive(Serialize, Deserialize)]
struct WireTableOutcome {
    version: String,
    worker: String,
    statuses: Vec<WireStatuses>,
    lower_bound_bits: Option<u64>,
    audit: Option<AuditSummary>,
    #[serde(default)]
    stopped_by_time_limit: bool,
    error: Option<WireError>,
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

/// Serialises a whole-table task (bit-exact floats).
pub fn encode_table_task(t: &TableTask) -> String {
    let w = WireTableTask {
        version: VERSION.into(),
        tables: t.tables.iter().map(WireTable::of).collect(),
        opts: t.opts.clone(),
        time_limit_bits: bits(t.opts.time_limit_s),
        merged: t.merged.as_deref().map(pattern_string),
    };
    serde_json::to_string(&w).expect("a table task always serialises")
}

/// Parses a payload written by [`encode_table_task`].
pub fn decode_table_task(s: &str) -> Result<TableTask, String> {
    let w: WireTableTask = serde_json::from_str(s).map_err(|e| format!("malformed table payload: {e}"))?;
    check_version(&w.version)?;
    let tables = w
        .tables
        .into_iter()
        .map(|t| t.table().map_err(|e| format!("table payload: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let merged = w.merged.as_deref().map(parse_pattern).transpose().map_err(|e| format!("table payload: {e}"))?;
    let opts = ProtectOptions { time_limit_s: float(w.time_limit_bits), ..w.opts };
    Ok(TableTask { tables, opts, merged })
}

/// Serialises the result of a whole-table task.
pub fn encode_table_outcome(r: &Result<TableOutcome, SuppressError>, worker: &str) -> String {
    let mut w = WireTableOutcome {
        version: VERSION.into(),
        worker: worker.into(),
        statuses: Vec::new(),
        lower_bound_bits: None,
        audit: None,
        stopped_by_time_limit: false,
        error: None,
    };
    match r {
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
                other => WireError::Other(other.to_string()),
            })
        }
    }
    serde_json::to_string(&w).expect("a table outcome always serialises")
}

/// Parses a result of [`encode_table_outcome`]; a solver error comes back as the same
/// [`SuppressError`] variant (other errors as `Distributed`, naming the worker).
pub fn decode_table_outcome(s: &str) -> Result<Result<TableOutcome, SuppressError>, String> {
    let w: WireTableOutcome = serde_json::from_str(s).map_err(|e| format!("malformed table result: {e}"))?;
    check_version(&w.version)?;
    if let Some(e) = w.error {
        return Ok(Err(match e {
            WireError::Infeasible { cell, coord, why } => SuppressError::Infeasible { cell, coord, why },
            WireError::Unprotected { method, count, first } => SuppressError::Unprotected { method, count, first },
            WireError::Input(m) => SuppressError::Input(m),
            WireError::Other(m) => SuppressError::Distributed(format!("on {}: {m}", w.worker)),
        }));
    }
    let audit = w.audit.ok_or("table result without an audit")?;
    Ok(Ok(TableOutcome {
        statuses: w.statuses.into_iter().map(|s| s.0).collect(),
        lower_bound: w.lower_bound_bits.map(float),
        audit,
        worker: w.worker,
        stopped_by_time_limit: w.stopped_by_time_limit,
    }))
}

#[derive(Serialize, Deserialize)]
struct WireNominal {
    version: String,
    task: NominalStratumTask,
}

#[derive(Serialize, Deserialize)]
struct WireNominalOutcome {
    version: String,
    worker: String,
    outcome: Option<NominalStratumOutcome>,
    error: Option<String>,
}

/// Serialises a nominal microaggregation stratum (codes are integers: exact in JSON).
pub fn encode_nominal(t: &NominalStratumTask) -> String {
    serde_json::to_string(&WireNominal { version: VERSION.into(), task: t.clone() })
        .expect("a nominal stratum always serialises")
}

/// Parses a payload written by [`encode_nominal`].
pub fn decode_nominal(s: &str) -> Result<NominalStratumTask, String> {
    let w: WireNominal = serde_json::from_str(s).map_err(|e| format!("malformed nominal stratum payload: {e}"))?;
    check_version(&w.version)?;
    Ok(w.task)
}

/// Serialises the result of a nominal stratum.
pub fn encode_nominal_outcome(r: &Result<NominalStratumOutcome, String>, worker: &str) -> String {
    let (outcome, error) = match r {
        Ok(o) => (Some(o.clone()), None),
        Err(e) => (None, Some(e.clone())),
    };
    serde_json::to_string(&WireNominalOutcome { version: VERSION.into(), worker: worker.into(), outcome, error })
        .expect("a nominal outcome always serialises")
}

/// Parses a result of [`encode_nominal_outcome`]: the outcome or the solver's error, and who
/// computed it.
pub fn decode_nominal_outcome(s: &str) -> Result<(Result<NominalStratumOutcome, String>, String), String> {
    let w: WireNominalOutcome = serde_json::from_str(s).map_err(|e| format!("malformed nominal result: {e}"))?;
    check_version(&w.version)?;
    let r = match (w.outcome, w.error) {
        (_, Some(e)) => Err(e),
        (Some(o), None) => Ok(o),
        (None, None) => return Err("nominal result without an outcome".into()),
    };
    Ok((r, w.worker))
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
            };
            let back = decode_task(&encode_task(&task)).unwrap();
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
            worker: String::new(),
        };
        let back = decode_outcome(&encode_outcome(&Ok(o.clone()), "exec-1")).unwrap().unwrap();
        assert_eq!(back, SubtableOutcome { worker: "exec-1".into(), ..o });
        let e = decode_outcome(&encode_outcome(&Err("lp failed".into()), "exec-2")).unwrap().unwrap_err();
        assert_eq!(e, ("exec-2".to_string(), "lp failed".to_string()));
        assert!(decode_task("{\"version\":\"0.0.0\"}").is_err());
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
        let back = decode_stratum(&encode_stratum(&task).unwrap()).unwrap();
        assert_eq!(back, task);
        let o = crate::microagg::solve_stratum(&task);
        let (o2, w) = decode_stratum_outcome(&encode_stratum_outcome(&o, "exec-1")).unwrap();
        assert_eq!((o2, w.as_str()), (o, "exec-1"));
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
        let back = decode_table_task(&encode_table_task(&task)).unwrap();
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
        let back = decode_table_outcome(&encode_table_outcome(&Ok(o.clone()), "exec-1")).unwrap().unwrap();
        assert_eq!(back, TableOutcome { worker: "exec-1".into(), ..o });
        let e = SuppressError::Infeasible { cell: 3, coord: vec![1, 2], why: "all partners published".into() };
        let back = decode_table_outcome(&encode_table_outcome(&Err(e.clone()), "exec-2")).unwrap().unwrap_err();
        assert_eq!(back, e);
        let e = SuppressError::Unprotected { method: Method::Fast, count: 2, first: 9 };
        assert_eq!(decode_table_outcome(&encode_table_outcome(&Err(e.clone()), "x")).unwrap().unwrap_err(), e);
        assert!(decode_table_task("{\"version\":\"0.0.0\"}").is_err());
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
        let honest = encode_table_outcome(
            &crate::suppress::solve_table_task(&decode_table_task(&encode_table_task(&task)).unwrap()),
            "exec-1",
        );
        let verify = |wire: &str| {
            let out = decode_table_outcome(wire).unwrap().unwrap();
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
        let secondaries: Vec<usize> = decode_table_outcome(&honest).unwrap().unwrap().statuses[0]
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
        let p = decode_table_outcome(&honest).unwrap().unwrap().statuses[0]
            .iter()
            .position(|s| *s == CellStatus::Primary)
            .unwrap();
        bad["statuses"][0] = flip(p);
        let e = verify(&bad.to_string()).unwrap_err().to_string();
        assert!(e.contains("changed from U to S"), "{e}");
    }
}
