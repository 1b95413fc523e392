//! Job files: the TOML a user writes ([`JobSpec`]) and its validated, resolved form ([`Job`]).
//!
//! Two layers, as in ripgrep's `lowargs`/`hiargs`: serde parses the text with unknown keys
//! rejected (so a typo is an error naming the key and the valid ones, never silently ignored);
//! [`Job::from_spec`] then checks every value, reports *all* problems at once, parses the safety
//! rules and resolves paths. Relative paths are relative to the current directory, like every
//! other path given on the command line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{nearest, Error, Result};
use crate::hierarchy::HierarchySpec;
use crate::microagg::nominal_stratum::NominalMethod;
use crate::microagg::{self, MicroaggParams, Standardisation};
use crate::rules::Safety;
use crate::suppress::Method;

/// The job file as written. `Default` (nothing to read, do or write) is a start for jobs built
/// in code, e.g. `JobSpec { input, output, table: vec![t], ..Default::default() }`; every key
/// left out takes the default documented here, as in a job file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// Where the microdata comes from.
    pub input: InputSpec,
    /// Hierarchies of explanatory variables (default: none; variables are flat).
    #[serde(default)]
    pub hierarchy: Vec<HierarchyEntry>,
    /// Tables to tabulate and protect.
    #[serde(default)]
    pub table: Vec<TableSpec>,
    /// Microdata sets to microaggregate.
    #[serde(default)]
    pub microaggregation: Vec<MicroaggregationSpec>,
    /// Where the results go.
    pub output: OutputSpec,
    /// Query-engine settings (default: local DataFusion with one partition per core).
    #[serde(default)]
    pub engine: EngineSpec,
    /// Groups of linked tables protected jointly (tau-Argus "linked tables"; default: none).
    #[serde(default)]
    pub linked: Vec<LinkedSpec>,
}

/// `[[linked]]`: tables of this job protected together, so a cell they share (same codes of
/// the same variables, e.g. `(geo, Total)` in geo×nace and geo×size) gets one status in all of
/// them and the attacker-LP audit runs on the union of their relations.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkedSpec {
    /// Names of the `[[table]]`s (at least two) protected jointly.
    pub tables: Vec<String>,
}

/// `[input]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    /// Parquet file, directory, glob, or `s3://bucket/prefix/`; registered as table `microdata`.
    pub microdata: String,
    /// SQL files run in order before tabulation (views over `microdata`); the last view they
    /// create is the default source of every table. Default: none.
    #[serde(default)]
    pub sql: Vec<String>,
    /// Field delimiter when `microdata` is a `.csv` file (default `,`); CSV files need a header.
    pub csv_delimiter: Option<String>,
}

/// `[[hierarchy]]`: exactly one of `levels`, `file`, `mapping`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HierarchyEntry {
    /// The explanatory variable.
    pub variable: String,
    /// Code-width levels (tau-Argus HIERLEVELS).
    pub levels: Option<Vec<usize>>,
    /// tau-Argus `.hrc` file.
    pub file: Option<String>,
    /// `child,parent` CSV.
    pub mapping: Option<String>,
    /// Lead string of the `.hrc` file (default `@`).
    pub lead: Option<String>,
}

/// `[[table]]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// Table name: the output sub-directory.
    pub name: String,
    /// Explanatory (spanning) variables.
    pub explanatory: Vec<String>,
    /// Response (magnitude) variable; omit for a frequency table.
    pub response: Option<String>,
    /// Contributor / holding identifier (default: each record is a contributor).
    pub contributor: Option<String>,
    /// Sampling weight variable (default: none).
    pub weight: Option<String>,
    /// tau-Argus safety rules, e.g. `NK(1,85)|FREQ(3,10)`.
    pub safety: String,
    /// Secondary suppression, e.g. `{ method = "modular", time_limit_s = 300 }` (default:
    /// `{ method = "auto" }`).
    #[serde(default)]
    pub secondary: SecondarySpec,
    /// Source: a view name or a `.sql` file with a query (default: the last prelude view, or
    /// `microdata`).
    pub source: Option<String>,
    /// tau-Argus a-priori file (`.hst`): cells by their codes with a change — `S`, `U`, `P`,
    /// `M`/`ML`, `C`/`W` cost, `PL` protection levels, `AB` attacker bounds (default: none).
    #[serde(default)]
    pub apriori: Option<String>,
    /// Field separator of the a-priori file (default `,`; tau-Argus files often use `;`).
    #[serde(default)]
    pub apriori_separator: Option<String>,
}

/// `[[microaggregation]]`: numeric (MDAV family) or nominal (two-step k-anonymity).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MicroaggregationSpec {
    /// Data set name: the output sub-directory.
    pub name: String,
    /// Variables to aggregate (quasi-identifiers).
    pub variables: Vec<String>,
    /// Minimum group size (≥ 2).
    pub k: usize,
    /// `numeric` (default) or `nominal`.
    pub kind: Option<String>,
    /// Numeric: `mdav`, `vmdav`, `univariate-optimal`, `two-step` (default). Nominal:
    /// `two-step` (default), `cluster-mode`, `random-member` (baselines).
    pub method: Option<String>,
    /// Aggregate within each combination of these variables (default: none).
    pub strata: Option<Vec<String>>,
    /// Record weights (numeric only; default: none).
    pub weight: Option<String>,
    /// Numeric: `zscore` (default), `range` or `none`.
    pub standardise: Option<String>,
    /// Seed (default 1).
    pub seed: Option<u64>,
    /// V-MDAV gain factor γ (default 0.2).
    pub gamma: Option<f64>,
    /// Nominal: control tables are all tables up to this dimension (default 2).
    pub control: Option<usize>,
    /// Nominal: explicit control tables (lists of variables), instead of `control`.
    pub control_tables: Option<Vec<Vec<String>>>,
    /// Source view (default: the last prelude view, or `microdata`).
    pub source: Option<String>,
}

/// Numeric microaggregation methods with their job-file names (the first is not the default:
/// see [`DEFAULT_NUMERIC_METHOD`]); validation, parsing and `report.json` read this one list.
pub const NUMERIC_METHODS: [(&str, microagg::Method); 4] = [
    ("mdav", microagg::Method::Mdav),
    ("vmdav", microagg::Method::Vmdav),
    ("univariate-optimal", microagg::Method::UnivariateOptimal),
    ("two-step", microagg::Method::TwoStep),
];
/// The numeric method of a `[[microaggregation]]` without `method`.
pub const DEFAULT_NUMERIC_METHOD: microagg::Method = microagg::Method::TwoStep;
/// Nominal microaggregation methods with their job-file names.
pub const NOMINAL_METHODS: [(&str, NominalMethod); 3] = [
    ("two-step", NominalMethod::TwoStep),
    ("cluster-mode", NominalMethod::ClusterMode),
    ("random-member", NominalMethod::RandomMember),
];
/// Standardisations of numeric microaggregation with their job-file names (default `zscore`).
pub const STANDARDISATIONS: [(&str, Standardisation); 3] =
    [("zscore", Standardisation::ZScore), ("range", Standardisation::Range), ("none", Standardisation::None)];
/// Dimension of the default control tables of a nominal microaggregation.
pub const DEFAULT_CONTROL_DIMENSION: usize = 2;

/// The name of `value` in a list of (name, value) pairs.
fn name_in<T: PartialEq + Copy>(list: &[(&'static str, T)], value: T) -> &'static str {
    list.iter().find(|(_, v)| *v == value).map(|(n, _)| *n).expect("every value of the list has a name")
}

/// A validated `[[microaggregation]]` with every default filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct MicroaggregationJob {
    /// Data set name: the output sub-directory.
    pub name: String,
    /// Variables to aggregate.
    pub variables: Vec<String>,
    /// Minimum group size (≥ 2).
    pub k: usize,
    /// Strata variables (aggregate within each combination), if any.
    pub strata: Option<Vec<String>>,
    /// Seed.
    pub seed: u64,
    /// Source view (default: the last prelude view, or `microdata`).
    pub source: Option<String>,
    /// Numeric or nominal, with the kind's settings.
    pub kind: MaskingKind,
}

/// The kind of a microaggregation with its resolved settings.
#[derive(Debug, Clone, PartialEq)]
pub enum MaskingKind {
    /// MDAV family on numeric variables.
    Numeric {
        /// Method.
        method: microagg::Method,
        /// Scaling before distances are computed.
        standardisation: Standardisation,
        /// Record weights.
        weight: Option<String>,
        /// V-MDAV gain factor γ.
        gamma: f64,
    },
    /// Two-step k-anonymity on categorical variables.
    Nominal {
        /// How representatives are chosen.
        method: NominalMethod,
        /// Explicit control tables (indices into the variables); `None`: all tables up to
        /// `up_to` variables.
        control: Option<Vec<Vec<usize>>>,
        /// Dimension of the default control tables (at most the number of variables).
        up_to: usize,
    },
}

impl MicroaggregationJob {
    /// The method's job-file name (as `report.json` shows it).
    pub fn method_name(&self) -> &'static str {
        match &self.kind {
            MaskingKind::Numeric { method, .. } => name_in(&NUMERIC_METHODS, *method),
            MaskingKind::Nominal { method, .. } => name_in(&NOMINAL_METHODS, *method),
        }
    }
}

/// `secondary = { … }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecondarySpec {
    /// Method name; see [`SecondaryMethod::NAMES`] (default `auto`: the best method for the
    /// table's size; `none` must be asked for by name).
    #[serde(default = "auto")]
    pub method: String,
    /// Seed for randomised methods (default 1).
    pub seed: Option<u64>,
    /// Hard stop in seconds for the secondary method (default 600). Searches end on work
    /// budgets, so the output does not depend on machine speed unless this stop is reached
    /// (then reported as `stopped_by_time_limit`, with a warning).
    pub time_limit_s: Option<f64>,
    /// Enforce the singleton rule: a sensitive cell may not be protected only by a cell whose
    /// single respondent can subtract its own value (default true; tau-Argus MOD's singleton
    /// options). `false` only for comparisons with tools that do not apply it.
    #[serde(default)]
    pub singleton: Option<bool>,
    /// Drop trials of the cleanup that un-suppresses secondaries the table does not need (a
    /// work budget, so the pattern does not depend on machine speed). Default: every candidate
    /// once for `fast`; for `modular` (and `optimal`'s and `tabu`'s modular start) none without
    /// the singleton rule and 20,000 attacker LPs with it. More trials trade time for a
    /// cheaper pattern (BENCHMARKS.md, "Session 29").
    pub cleanup_trials: Option<usize>,
}

fn auto() -> String {
    SecondaryMethod::Auto.name().to_string()
}

impl Default for SecondarySpec {
    fn default() -> Self {
        Self { method: auto(), seed: None, time_limit_s: None, singleton: None, cleanup_trials: None }
    }
}

/// `[output]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Output directory or `s3://bucket/prefix`.
    pub dir: String,
}

/// `[engine]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineSpec {
    /// `local` (default) or `standalone` (in-process Ballista scheduler and executor).
    pub mode: Option<String>,
    /// A Ballista scheduler `df://host:port` (overridden by `--cluster`).
    pub cluster: Option<String>,
    /// DataFusion target partitions (default: number of cores).
    pub target_partitions: Option<usize>,
    /// Memory limit for the query engine in MiB; beyond it operators spill to disk (default:
    /// no limit).
    pub memory_limit_mb: Option<usize>,
    /// Upper bound of the cells of one output part of a primaries-only table (default
    /// 4,194,304): each part is one roll-up task, written as one Parquet and one CSV file. The
    /// part layout depends only on the data and this value, never on the executors.
    pub part_cells: Option<u64>,
}

/// The secondary suppression of a table: `auto`, a solver method, or `none` (primaries only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecondaryMethod {
    /// `auto` (the default): the best solver method for the table's size, chosen when the
    /// table is protected (its size is known only then).
    Auto,
    /// `none`: primaries are suppressed but the table is NOT protected against recalculation
    /// from its totals.
    PrimariesOnly,
    /// One solver method.
    Solver(Method),
}

impl SecondaryMethod {
    /// Every method of the job files with its name: the one list that parsing, names and
    /// messages read.
    pub const NAMES: [(&'static str, SecondaryMethod); 6] = [
        ("auto", SecondaryMethod::Auto),
        ("none", SecondaryMethod::PrimariesOnly),
        ("optimal", SecondaryMethod::Solver(Method::Optimal)),
        ("tabu", SecondaryMethod::Solver(Method::Tabu)),
        ("fast", SecondaryMethod::Solver(Method::Fast)),
        ("modular", SecondaryMethod::Solver(Method::Modular)),
    ];

    /// The method named `name` in a job file.
    pub fn parse(name: &str) -> Option<Self> {
        Self::NAMES.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    }

    /// The job-file name of the method.
    pub fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(_, m)| *m == self).map(|(n, _)| *n).expect("every method has a name")
    }

    /// The job-file name of a solver method.
    pub fn solver_name(m: Method) -> &'static str {
        Self::Solver(m).name()
    }

    /// Whether the table is protected against recalculation (a method other than `none`).
    pub fn protects(self) -> bool {
        self != SecondaryMethod::PrimariesOnly
    }

    /// The method name for `report.json`: `auto (optimal)` when `auto` chose `optimal`.
    pub fn reported(self, chosen: Option<Method>) -> String {
        match (self, chosen) {
            (SecondaryMethod::Auto, Some(m)) => format!("{} ({})", self.name(), Self::solver_name(m)),
            _ => self.name().to_string(),
        }
    }
}

impl std::fmt::Display for SecondaryMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where the engine runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineMode {
    /// DataFusion in this process (the embedded default).
    Local,
    /// Ballista scheduler and executor in this process.
    Standalone,
    /// A remote Ballista scheduler.
    Remote(String),
}

/// A validated table definition.
#[derive(Debug, Clone)]
pub struct TableJob {
    /// Table name.
    pub name: String,
    /// Explanatory variables.
    pub explanatory: Vec<String>,
    /// Response variable, `None` for a frequency table.
    pub response: Option<String>,
    /// Contributor variable.
    pub contributor: Option<String>,
    /// Weight variable.
    pub weight: Option<String>,
    /// Parsed safety rules.
    pub safety: Safety,
    /// Secondary method.
    pub secondary: SecondaryMethod,
    /// Seed of randomised methods.
    pub seed: u64,
    /// Time limit of iterative methods.
    pub time_limit_s: f64,
    /// Whether methods and audits enforce the singleton rule.
    pub singleton_rule: bool,
    /// Cleanup drop trials asked for (`None`: the method's default).
    pub cleanup_trials: Option<usize>,
    /// Source view or SQL file.
    pub source: Option<TableSource>,
    /// A-priori file, if any.
    pub apriori: Option<PathBuf>,
    /// Field separator of the a-priori file.
    pub apriori_separator: u8,
}

/// Where a table's records come from.
#[derive(Debug, Clone, PartialEq)]
pub enum TableSource {
    /// A registered table or view.
    View(String),
    /// A file holding one query.
    SqlFile(PathBuf),
}

/// A validated job.
#[derive(Debug, Clone)]
pub struct Job {
    /// The job file (for messages).
    pub path: PathBuf,
    /// Microdata location.
    pub microdata: String,
    /// SQL prelude files.
    pub sql: Vec<PathBuf>,
    /// CSV delimiter byte, when the microdata is CSV.
    pub csv_delimiter: u8,
    /// Hierarchy of each variable that has one.
    pub hierarchies: BTreeMap<String, HierarchySpec>,
    /// Tables.
    pub tables: Vec<TableJob>,
    /// Microaggregations.
    pub microaggregations: Vec<MicroaggregationJob>,
    /// Output location.
    pub output: String,
    /// Engine mode.
    pub mode: EngineMode,
    /// Engine target partitions.
    pub target_partitions: usize,
    /// Engine memory limit in bytes.
    pub memory_limit: Option<usize>,
    /// Cells (upper bound) per output part of a primaries-only table.
    pub part_cells: u64,
    /// Groups of linked tables (names of tables protected jointly), each with ≥ 2 tables.
    pub linked: Vec<Vec<String>>,
}

impl Job {
    /// Reads, parses and validates a job file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::job(path, format!("the job file {}", Error::unreadable_reason(&e))))?;
        Self::parse(path, &text)
    }

    /// Parses and validates job text (`path` is used in messages).
    pub fn parse(path: &Path, text: &str) -> Result<Self> {
        let spec: JobSpec = toml::from_str(text).map_err(|e| Error::job(path, e.to_string().trim_end().to_string()))?;
        Self::from_spec(path, spec)
    }

    /// Validates a parsed spec, reporting every problem together.
    pub fn from_spec(path: &Path, spec: JobSpec) -> Result<Self> {
        let mut errs = Vec::new();
        let jerr = |m: String| Error::job(path, m);
        let exists = |key: &str, p: &str, errs: &mut Vec<Error>| {
            if !Path::new(p).exists() {
                errs.push(jerr(format!("{key} = {p:?}: file not found")));
            }
        };
        if spec.input.microdata.trim().is_empty() {
            errs.push(jerr("input.microdata: must name a Parquet file, directory, glob or s3:// URL".into()));
        }
        for s in &spec.input.sql {
            exists("input.sql", s, &mut errs);
        }
        let csv_delimiter = match spec.input.csv_delimiter.as_deref() {
            None => b',',
            Some(d) if d.len() == 1 => d.as_bytes()[0],
            Some(d) => {
                errs.push(jerr(format!("input.csv_delimiter = {d:?}: expected a single character")));
                b','
            }
        };
        if spec.output.dir.trim().is_empty() {
            errs.push(jerr("output.dir: must not be empty".into()));
        }
        if spec.table.is_empty() && spec.microaggregation.is_empty() {
            errs.push(jerr("no [[table]] or [[microaggregation]] given: nothing to do".into()));
        }

        let used: BTreeSet<&str> = spec.table.iter().flat_map(|t| t.explanatory.iter().map(String::as_str)).collect();
        let mut hierarchies = BTreeMap::new();
        for (i, h) in spec.hierarchy.iter().enumerate() {
            let key = format!("hierarchy[{i}] (variable {:?})", h.variable);
            let given = [h.levels.is_some(), h.file.is_some(), h.mapping.is_some()].iter().filter(|b| **b).count();
            if given != 1 {
                errs.push(jerr(format!("{key}: give exactly one of `levels`, `file`, `mapping` ({given} given)")));
                continue;
            }
            if !used.contains(h.variable.as_str()) {
                let hint = nearest(&h.variable, used.iter().copied())
                    .map(|n| format!(" (did you mean {n:?}?)"))
                    .unwrap_or_default();
                errs.push(jerr(format!("{key}: no table uses this variable{hint}")));
            }
            if h.lead.is_some() && h.file.is_none() {
                errs.push(jerr(format!("{key}: `lead` only applies to `file` (.hrc) hierarchies")));
            }
            let hs = if let Some(l) = &h.levels {
                if l.is_empty() || l.contains(&0) {
                    errs.push(jerr(format!("{key}: levels must be a non-empty list of widths ≥ 1, got {l:?}")));
                }
                HierarchySpec::Levels(l.clone())
            } else if let Some(f) = &h.file {
                exists(&format!("{key}.file"), f, &mut errs);
                HierarchySpec::Hrc { path: f.into(), lead: h.lead.clone().unwrap_or_else(|| "@".into()) }
            } else {
                let m = h.mapping.as_ref().expect("one of three is set");
                exists(&format!("{key}.mapping"), m, &mut errs);
                HierarchySpec::Mapping(m.into())
            };
            if hierarchies.insert(h.variable.clone(), hs).is_some() {
                errs.push(jerr(format!("{key}: a second hierarchy for the same variable")));
            }
        }

        let mut names = BTreeSet::new();
        let mut tables = Vec::new();
        for (i, t) in spec.table.iter().enumerate() {
            let key = format!("table[{i}] ({:?})", t.name);
            if t.name.is_empty() || !t.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                errs.push(jerr(format!("{key}.name: use letters, digits, `_` or `-` (it names the output directory)")));
            }
            if !names.insert(t.name.clone()) {
                errs.push(jerr(format!("{key}.name: a second table with this name")));
            }
            if t.explanatory.is_empty() {
                errs.push(jerr(format!("{key}.explanatory: give at least one variable")));
            }
            let uniq: BTreeSet<&String> = t.explanatory.iter().collect();
            if uniq.len() != t.explanatory.len() {
                errs.push(jerr(format!("{key}.explanatory: a variable is listed twice")));
            }
            if let Some(r) = t.response.as_ref().filter(|r| t.explanatory.contains(r)) {
                errs.push(jerr(format!(
                    "{key}.response: {r:?} is also an explanatory variable; a variable either spans the table or is summed in its cells"
                )));
            }
            let safety = match Safety::parse(&t.safety) {
                Ok(s) => Some(s),
                Err(e) => {
                    errs.push(jerr(format!("{key}.safety: {e}")));
                    None
                }
            };
            let secondary = SecondaryMethod::parse(&t.secondary.method);
            if secondary.is_none() {
                let names = SecondaryMethod::NAMES.map(|(n, _)| n);
                let hint = nearest(&t.secondary.method, names.iter().copied())
                    .map(|n| format!(" (did you mean {n:?}?)"))
                    .unwrap_or_default();
                errs.push(jerr(format!(
                    "{key}.secondary.method: unknown method {:?}{hint}; known methods: {}",
                    t.secondary.method,
                    names.join(", ")
                )));
            }
            if let Some(tl) = t.secondary.time_limit_s {
                if !(tl > 0.0 && tl.is_finite()) {
                    errs.push(jerr(format!("{key}.secondary.time_limit_s: must be a positive number of seconds")));
                }
            }
            let source = t.source.as_ref().map(|s| {
                if s.ends_with(".sql") {
                    exists(&format!("{key}.source"), s, &mut errs);
                    TableSource::SqlFile(s.into())
                } else {
                    TableSource::View(s.clone())
                }
            });
            if let Some(a) = &t.apriori {
                exists(&format!("{key}.apriori"), a, &mut errs);
            } else if t.apriori_separator.is_some() {
                errs.push(jerr(format!("{key}.apriori_separator: only applies with `apriori`")));
            }
            let apriori_separator = match t.apriori_separator.as_deref() {
                None => b',',
                Some(d) if d.len() == 1 => d.as_bytes()[0],
                Some(d) => {
                    errs.push(jerr(format!("{key}.apriori_separator = {d:?}: expected a single character")));
                    b','
                }
            };
            if let (Some(safety), Some(secondary)) = (safety, secondary) {
                tables.push(TableJob {
                    name: t.name.clone(),
                    explanatory: t.explanatory.clone(),
                    response: t.response.clone(),
                    contributor: t.contributor.clone(),
                    weight: t.weight.clone(),
                    safety,
                    secondary,
                    seed: t.secondary.seed.unwrap_or(1),
                    time_limit_s: t.secondary.time_limit_s.unwrap_or(600.0),
                    singleton_rule: t.secondary.singleton.unwrap_or(true),
                    cleanup_trials: t.secondary.cleanup_trials,
                    source,
                    apriori: t.apriori.as_ref().map(PathBuf::from),
                    apriori_separator,
                });
            }
        }

        let mut microaggregations = Vec::new();
        for (i, m) in spec.microaggregation.iter().enumerate() {
            microaggregations.extend(validate_microaggregation(i, m, &mut names, &mut errs, path));
        }
        let linked = validate_linked(&spec.linked, &spec.table, &mut errs, path);

        let e = &spec.engine;
        let mode = match (e.mode.as_deref(), &e.cluster) {
            (_, Some(url)) => {
                if !url.starts_with("df://") {
                    errs.push(jerr(format!("engine.cluster = {url:?}: expected df://HOST:PORT")));
                }
                EngineMode::Remote(url.clone())
            }
            (None | Some("local"), None) => EngineMode::Local,
            (Some("standalone"), None) => EngineMode::Standalone,
            (Some(other), None) => {
                errs.push(jerr(format!(
                    "engine.mode = {other:?}: expected \"local\" or \"standalone\" (or set engine.cluster)"
                )));
                EngineMode::Local
            }
        };
        if e.target_partitions == Some(0) {
            errs.push(jerr("engine: target_partitions must be ≥ 1".into()));
        }
        if e.part_cells == Some(0) {
            errs.push(jerr("engine: part_cells must be ≥ 1".into()));
        }
        Error::collect(errs)?;
        Ok(Job {
            path: path.to_path_buf(),
            microdata: spec.input.microdata,
            sql: spec.input.sql.iter().map(PathBuf::from).collect(),
            csv_delimiter,
            hierarchies,
            tables,
            microaggregations,
            output: spec.output.dir,
            mode,
            target_partitions: e
                .target_partitions
                .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)),
            memory_limit: e.memory_limit_mb.map(|m| m * 1024 * 1024),
            part_cells: e.part_cells.unwrap_or(crate::tabulate::parts::PART_CELLS),
            linked,
        })
    }
}

/// Checks `[[linked]]` groups: known, distinct tables, each in at most one group, with one
/// response variable and one secondary method (not `none`) per group.
fn validate_linked(
    groups: &[LinkedSpec],
    tables: &[TableSpec],
    errs: &mut Vec<Error>,
    path: &Path,
) -> Vec<Vec<String>> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (g, l) in groups.iter().enumerate() {
        let key = format!("linked[{g}].tables");
        let mut err = |m: String| errs.push(Error::job(path, format!("{key}: {m}")));
        if l.tables.len() < 2 {
            err(format!("link at least two tables, got {:?}", l.tables));
        }
        let mut members = Vec::new();
        for name in &l.tables {
            match tables.iter().find(|t| &t.name == name) {
                None => {
                    let hint = nearest(name, tables.iter().map(|t| t.name.as_str()))
                        .map(|n| format!(" (did you mean {n:?}?)"))
                        .unwrap_or_default();
                    err(format!("no [[table]] named {name:?}{hint}"));
                }
                Some(t) => {
                    if let Some(prev) = seen.insert(name.as_str(), g) {
                        err(format!("table {name:?} is already in linked[{prev}] (a table links into one group)"));
                    }
                    members.push(t);
                }
            }
        }
        if let Some(first) = members.first() {
            for t in &members[1..] {
                if t.response != first.response {
                    err(format!(
                        "tables {:?} and {:?} have different responses ({:?} vs {:?}); linked tables share one response",
                        first.name, t.name, first.response, t.response
                    ));
                }
                if t.secondary.method != first.secondary.method {
                    err(format!(
                        "tables {:?} and {:?} have different secondary methods ({:?} vs {:?}); linked tables are protected by one",
                        first.name, t.name, first.secondary.method, t.secondary.method
                    ));
                }
            }
            if SecondaryMethod::parse(&first.secondary.method) == Some(SecondaryMethod::PrimariesOnly) {
                err("linked tables need a secondary method other than \"none\"".into());
            }
        }
        out.push(l.tables.clone());
    }
    out
}

/// Checks a `[[microaggregation]]` and resolves its defaults (`None` when it has an error).
fn validate_microaggregation(
    i: usize,
    m: &MicroaggregationSpec,
    names: &mut BTreeSet<String>,
    errs: &mut Vec<Error>,
    path: &Path,
) -> Option<MicroaggregationJob> {
    let before = errs.len();
    let key = format!("microaggregation[{i}] ({:?})", m.name);
    let mut err = |msg: String| errs.push(Error::job(path, format!("{key}{msg}")));
    if m.name.is_empty() || !m.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        err(".name: use letters, digits, `_` or `-` (it names the output directory)".into());
    }
    if !names.insert(m.name.clone()) {
        err(".name: a table or data set with this name already exists".into());
    }
    if m.variables.is_empty() {
        err(".variables: give at least one variable".into());
    }
    let mut seen = BTreeSet::new();
    for v in m.variables.iter().filter(|v| !seen.insert(v.as_str())) {
        err(format!(".variables: {v:?} is listed twice"));
    }
    if m.k < 2 {
        err(format!(".k: must be at least 2, got {}", m.k));
    }
    let kind = m.kind.as_deref().unwrap_or("numeric");
    let methods: Vec<&str> = match kind {
        "numeric" => NUMERIC_METHODS.iter().map(|(n, _)| *n).collect(),
        "nominal" => NOMINAL_METHODS.iter().map(|(n, _)| *n).collect(),
        other => {
            err(format!(".kind: {other:?} is not known; use \"numeric\" or \"nominal\""));
            return None;
        }
    };
    if let Some(method) = &m.method {
        if !methods.contains(&method.as_str()) {
            let hint =
                nearest(method, methods.iter().copied()).map(|n| format!(" (did you mean {n:?}?)")).unwrap_or_default();
            err(format!(".method: unknown {kind} method {method:?}{hint}; known: {}", methods.join(", ")));
        }
    }
    let standardisation = match &m.standardise {
        None => Some(Standardisation::ZScore),
        Some(s) => {
            let found = STANDARDISATIONS.iter().find(|(n, _)| n == s).map(|(_, v)| *v);
            if found.is_none() {
                err(format!(".standardise: {s:?}; use \"zscore\", \"range\" or \"none\""));
            }
            found
        }
    };
    if kind == "nominal" {
        for (field, set) in
            [("weight", m.weight.is_some()), ("standardise", m.standardise.is_some()), ("gamma", m.gamma.is_some())]
        {
            if set {
                err(format!(".{field}: only applies to numeric microaggregation"));
            }
        }
        if m.control.is_some() && m.control_tables.is_some() {
            err(": give `control` or `control_tables`, not both".into());
        }
        for t in m.control_tables.iter().flatten() {
            for v in t {
                if !m.variables.contains(v) {
                    err(format!(".control_tables: {v:?} is not one of the variables"));
                }
            }
        }
    } else if m.control.is_some() || m.control_tables.is_some() {
        err(": control tables only apply to kind = \"nominal\"".into());
    }
    if errs.len() > before {
        return None;
    }
    fn lookup<T: Copy>(method: Option<&str>, list: &[(&str, T)], default: T) -> T {
        method.map_or(default, |name| list.iter().find(|(n, _)| *n == name).expect("validated").1)
    }
    let kind = if kind == "nominal" {
        MaskingKind::Nominal {
            method: lookup(m.method.as_deref(), &NOMINAL_METHODS, NominalMethod::default()),
            control: m.control_tables.as_ref().map(|t| {
                t.iter()
                    .map(|vs| vs.iter().map(|v| m.variables.iter().position(|x| x == v).expect("validated")).collect())
                    .collect()
            }),
            up_to: m.control.unwrap_or(DEFAULT_CONTROL_DIMENSION).min(m.variables.len()),
        }
    } else {
        MaskingKind::Numeric {
            method: lookup(m.method.as_deref(), &NUMERIC_METHODS, DEFAULT_NUMERIC_METHOD),
            standardisation: standardisation.expect("validated"),
            weight: m.weight.clone(),
            gamma: m.gamma.unwrap_or(MicroaggParams::default().vmdav_gamma),
        }
    };
    Some(MicroaggregationJob {
        name: m.name.clone(),
        variables: m.variables.clone(),
        k: m.k,
        strata: m.strata.clone(),
        seed: m.seed.unwrap_or(1),
        source: m.source.clone(),
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"
[input]
microdata = "data.parquet"
[[hierarchy]]
variable = "geo"
levels = [2, 2]
[[table]]
name = "salary"
explanatory = ["sex", "geo"]
response = "salary"
contributor = "ent_id"
safety = "NK(1,85)|FREQ(3,10)"
secondary = { method = "none" }
[output]
dir = "out"
"#;

    #[test]
    fn parses_a_good_job() {
        let j = Job::parse(Path::new("j.toml"), OK).unwrap();
        assert_eq!(j.tables[0].safety.rules.len(), 2);
        assert_eq!(j.hierarchies["geo"], HierarchySpec::Levels(vec![2, 2]));
        assert_eq!(j.mode, EngineMode::Local);
    }

    #[test]
    fn unknown_key_names_file_and_key() {
        let text = OK.replace("response = \"salary\"", "respons = \"salary\"");
        let e = Job::parse(Path::new("j.toml"), &text).unwrap_err();
        let m = e.to_string();
        assert!(m.starts_with("j.toml:") && m.contains("unknown field `respons`"), "{m}");
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn all_semantic_errors_reported_together() {
        let text = OK
            .replace("NK(1,85)|FREQ(3,10)", "NK(1,185)")
            .replace("method = \"none\"", "method = \"nne\"")
            .replace("variable = \"geo\"", "variable = \"gep\"");
        let m = Job::parse(Path::new("j.toml"), &text).unwrap_err().to_string();
        assert!(m.contains("3 errors"), "{m}");
        assert!(
            m.contains("percentage") && m.contains("did you mean \"none\"") && m.contains("did you mean \"geo\""),
            "{m}"
        );
    }

    #[test]
    fn apriori_and_linked_keys() {
        let text = OK.replace("secondary = { method = \"none\" }", "secondary = { method = \"fast\", singleton = false }\napriori = \"missing.hst\"\napriori_separator = \";;\"")
            + "[[linked]]\ntables = [\"salary\", \"other\"]\n";
        let m = Job::parse(Path::new("j.toml"), &text).unwrap_err().to_string();
        assert!(m.contains("3 errors"), "{m}");
        assert!(m.contains("apriori = \"missing.hst\": file not found"), "{m}");
        assert!(m.contains("apriori_separator = \";;\""), "{m}");
        assert!(m.contains("no [[table]] named \"other\""), "{m}");
        let j =
            Job::parse(Path::new("j.toml"), &OK.replace("method = \"none\"", "method = \"fast\", singleton = false"))
                .unwrap();
        assert!(!j.tables[0].singleton_rule);
        assert!(j.linked.is_empty());
    }

    /// `secondary.cleanup_trials` reaches the table job (absent: the method's default); a
    /// negative count is refused with the key named.
    #[test]
    fn cleanup_trials_key() {
        let j = Job::parse(Path::new("j.toml"), OK).unwrap();
        assert_eq!(j.tables[0].cleanup_trials, None);
        let j = Job::parse(
            Path::new("j.toml"),
            &OK.replace("method = \"none\"", "method = \"modular\", cleanup_trials = 400"),
        )
        .unwrap();
        assert_eq!(j.tables[0].cleanup_trials, Some(400));
        let e = Job::parse(
            Path::new("j.toml"),
            &OK.replace("method = \"none\"", "method = \"modular\", cleanup_trials = -1"),
        )
        .unwrap_err();
        let m = e.to_string();
        assert!(m.contains("cleanup_trials") || m.contains("secondary"), "{m}");
        assert_eq!(e.exit_code(), 2);
    }
}
