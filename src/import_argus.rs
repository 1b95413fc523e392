//! `sdcflow import-argus`: a way in from tau-Argus. Reads a batch file (`.arb`) with the
//! metadata (`.rda`), hierarchy (`.hrc`) and a-priori (`.hst`) files it names, converts the
//! microdata to Parquet, and writes an equivalent sdcflow job TOML.
//!
//! What translates: `<OPENMICRODATA>` (fixed-width `.asc`, or a separated file when the `.rda`
//! starts with `<SEPARATOR>`), `<OPENMETADATA>`, `<SPECIFYTABLE>`, `<SAFETYRULE>` (`NK`, `P`,
//! `FREQ`, `ZERO`, `MAN`; `Wgt` → the `.rda`'s `<WEIGHT>` variable), `<APRIORY>`/`<APRIORI>`,
//! `<SUPPRESS>` (`MOD` → `modular`, `OPT` → `optimal`, `GH`/`NET` → `fast`: the nearest method)
//! and `<WRITETABLE>` (its file name becomes the table's name). `<READMICRODATA>`,
//! `<GOINTERACTIVE>`, `<LOGBOOK>`, `<SOLVER>` and `<VERSIONINFO>` have no effect on the result and
//! are ignored. Everything else, and every option whose meaning sdcflow does not share, is
//! listed in [`Translation::untranslated`] — printed by the command and written as comments at
//! the top of the job — never dropped silently.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;

use crate::error::{Error, Result};

/// First words of every job file the importer writes: how it recognises its own files.
pub const JOB_HEADER: &str = "# Translated by `sdcflow import-argus`";

/// Key of the Parquet metadata entry that marks microdata converted by the importer, which
/// alone it may overwrite.
const CONVERTED_KEY: &str = "sdcflow.converted_from";

/// What `sdcflow import-argus` needs besides the batch file.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Use this Parquet/CSV microdata instead of converting the batch's `.asc` file (it must
    /// have the `.rda`'s variables as columns).
    pub microdata: Option<String>,
    /// Where the converted microdata goes (default: beside the job file, `<asc stem>.parquet`).
    pub converted: Option<PathBuf>,
    /// `[output] dir` of the job (default: `sdcflow-out` beside the job file).
    pub output_dir: Option<String>,
}

/// The result of a translation.
#[derive(Debug, Clone)]
pub struct Translation {
    /// The job file's text.
    pub toml: String,
    /// Commands and options that were not translated, each naming the batch line.
    pub untranslated: Vec<String>,
    /// The converted microdata, when the batch's data file was converted.
    pub converted: Option<PathBuf>,
}

/// A variable of the `.rda` file.
#[derive(Debug, Clone, Default)]
struct RdaVar {
    name: String,
    /// 1-based start column (fixed-width files).
    start: usize,
    width: usize,
    kind: VarKind,
    tot_code: Option<String>,
    levels: Option<Vec<usize>>,
    hrc: Option<String>,
    lead: Option<String>,
    missing: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
enum VarKind {
    #[default]
    Other,
    Categorical,
    Numeric,
    Weight,
    Holding,
}

#[derive(Debug, Default)]
struct Rda {
    path: PathBuf,
    separator: Option<String>,
    vars: Vec<RdaVar>,
}

impl Rda {
    fn var(&self, name: &str) -> Option<&RdaVar> {
        self.vars.iter().find(|v| v.name.eq_ignore_ascii_case(name))
    }
}

/// A table of the batch.
#[derive(Debug, Clone, Default)]
struct ArgusTable {
    line: usize,
    explanatory: Vec<String>,
    response: Option<String>,
    shadow: String,
    cost: String,
    rules: Vec<(usize, String)>,
    apriori: Option<(PathBuf, String)>,
    suppress: Option<(usize, String, Vec<String>)>,
    name: Option<String>,
}

/// Splits a batch or metadata line into tokens: quoted strings (without their quotes), the
/// punctuation `, | ( )` one character each, and words.
fn tokens(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' {
            chars.next();
            let mut s = String::new();
            for c in chars.by_ref() {
                if c == '"' {
                    break;
                }
                s.push(c);
            }
            out.push(format!("\"{s}"));
        } else if ",|()".contains(c) {
            chars.next();
            out.push(c.to_string());
        } else {
            let mut s = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || ",|()\"".contains(c) {
                    break;
                }
                s.push(c);
                chars.next();
            }
            out.push(s);
        }
    }
    out
}

/// A token without the quote marker [`tokens`] leaves on quoted strings.
fn unquote(t: &str) -> &str {
    t.strip_prefix('"').unwrap_or(t)
}

/// Lines that hold something: not blank, not `//` comments; (1-based number, trimmed text).
fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty() && !l.starts_with("//"))
}

fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::job(path, format!("cannot read: {}", io_reason(&e))))?;
    String::from_utf8(bytes)
        .map_err(|e| Error::job(path, format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to())))
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

/// A file named in `from` (a batch or metadata file): as given when it exists, else relative
/// to `from`'s directory (tau-Argus resolves names against the batch file's directory).
fn resolve(from: &Path, name: &str) -> PathBuf {
    let p = PathBuf::from(name);
    if p.is_absolute() || p.exists() {
        return p;
    }
    from.parent().unwrap_or(Path::new(".")).join(p)
}

fn parse_rda(path: &Path) -> Result<Rda> {
    let text = read_text(path)?;
    let mut rda = Rda { path: path.to_path_buf(), ..Default::default() };
    let bad = |line: usize, msg: String| Error::job(path, format!("line {line}: {msg}"));
    for (n, line) in content_lines(&text) {
        let t = tokens(line);
        let Some(first) = t.first() else { continue };
        let arg = |i: usize| t.get(i).map(|s| unquote(s).to_string());
        if !first.starts_with('<') {
            let num = |i: usize, what: &str| -> Result<usize> {
                arg(i)
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| bad(n, format!("variable `{first}`: {what} must be a whole number")))
            };
            let start = num(1, "the start position")?;
            let width = num(2, "the width")?;
            let missing = (3..t.len()).filter_map(arg).filter(|s| !s.trim().is_empty()).collect();
            rda.vars.push(RdaVar { name: first.clone(), start, width, missing, ..Default::default() });
            continue;
        }
        if first == "<SEPARATOR>" {
            rda.separator = arg(1);
            continue;
        }
        if first == "<SPSS>" {
            continue;
        }
        let Some(v) = rda.vars.last_mut() else {
            return Err(bad(n, format!("{first} comes before any variable")));
        };
        match first.as_str() {
            "<RECODEABLE>" | "<RECODABLE>" => v.kind = VarKind::Categorical,
            // A recodable variable stays categorical when it is also numeric.
            "<NUMERIC>" if v.kind != VarKind::Categorical => v.kind = VarKind::Numeric,
            "<WEIGHT>" => v.kind = VarKind::Weight,
            "<HOLDING>" => v.kind = VarKind::Holding,
            "<TOTCODE>" => v.tot_code = arg(1),
            "<HIERARCHICAL>" => {}
            "<HIERLEVELS>" => {
                let levels: Option<Vec<usize>> = t[1..].iter().map(|s| unquote(s).parse().ok()).collect();
                v.levels = Some(levels.ok_or_else(|| bad(n, "<HIERLEVELS> takes whole numbers".into()))?);
            }
            "<HIERCODELIST>" => v.hrc = arg(1),
            "<HIERLEADSTRING>" => v.lead = arg(1),
            // Formatting and codelist labels: no effect on the tables.
            "<DECIMALS>" | "<CODELIST>" | "<TRUNCABLE>" | "<DISTANCE>" => {}
            _ => {} // reported by the caller when the variable is used
        }
    }
    if rda.vars.is_empty() {
        return Err(Error::job(path, "no variable is declared"));
    }
    Ok(rda)
}

/// Translates the batch file `arb`; `job_path` is where the job will be written (paths in the
/// job are absolute, so it runs from any directory).
pub fn import(arb: &Path, job_path: &Path, opts: &ImportOptions) -> Result<Translation> {
    let text = read_text(arb)?;
    let mut notes: Vec<String> = Vec::new();
    let arb_name = arb.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    let mut data_file: Option<PathBuf> = None;
    let mut rda: Option<Rda> = None;
    let mut tables: Vec<ArgusTable> = Vec::new();
    let mut linked_suppress: Option<(usize, String, Vec<String>)> = None;
    let bad = |line: usize, msg: String| Error::job(arb, format!("line {line}: {msg}"));
    for (n, line) in content_lines(&text) {
        let t = tokens(line);
        let cmd = t[0].to_ascii_uppercase();
        let rest: Vec<&str> = t[1..].iter().map(|s| s.as_str()).collect();
        match cmd.as_str() {
            "<OPENMICRODATA>" => {
                let f =
                    rest.first().map(|s| unquote(s)).ok_or_else(|| bad(n, "<OPENMICRODATA> names no file".into()))?;
                data_file = Some(resolve(arb, f));
            }
            "<OPENMETADATA>" => {
                let f =
                    rest.first().map(|s| unquote(s)).ok_or_else(|| bad(n, "<OPENMETADATA> names no file".into()))?;
                let p = resolve(arb, f);
                rda = Some(parse_rda(&p)?);
            }
            "<SPECIFYTABLE>" => {
                // "v1""v2"…|"response"|"shadow"|"cost"
                let mut fields: Vec<Vec<String>> = vec![Vec::new()];
                for tok in &rest {
                    if *tok == "|" {
                        fields.push(Vec::new());
                    } else {
                        fields.last_mut().unwrap().push(unquote(tok).to_string());
                    }
                }
                let field = |i: usize| fields.get(i).and_then(|f| f.first()).cloned().unwrap_or_default();
                let explanatory = fields[0].clone();
                if explanatory.is_empty() {
                    return Err(bad(n, "<SPECIFYTABLE> names no explanatory variable".into()));
                }
                let response = field(1);
                let response = (!response.is_empty() && !response.eq_ignore_ascii_case("<freq>")).then_some(response);
                tables.push(ArgusTable {
                    line: n,
                    explanatory,
                    response,
                    shadow: field(2),
                    cost: field(3),
                    ..Default::default()
                });
            }
            "<SAFETYRULE>" => {
                let table = tables.last_mut().ok_or_else(|| bad(n, "<SAFETYRULE> before any <SPECIFYTABLE>".into()))?;
                let joined: String = rest.concat();
                table.rules.extend(joined.split('|').filter(|s| !s.is_empty()).map(|s| (n, s.to_string())));
            }
            "<APRIORY>" | "<APRIORI>" => {
                // "file.hst",table,"separator",ignore_error,expand_trivial
                let args: Vec<&str> = rest.iter().filter(|s| **s != ",").map(|s| unquote(s)).collect();
                let (Some(file), Some(tab)) = (args.first(), args.get(1).and_then(|s| s.parse::<usize>().ok())) else {
                    return Err(bad(n, format!("{cmd} needs a file and a table number")));
                };
                let count = tables.len();
                let table = tab
                    .checked_sub(1)
                    .and_then(|i| tables.get_mut(i))
                    .ok_or_else(|| bad(n, format!("{cmd} names table {tab}; the batch specifies {count}")))?;
                let sep = args.get(2).map(|s| s.to_string()).unwrap_or_else(|| ",".into());
                table.apriori = Some((resolve(arb, file), sep));
                if args.get(3).is_some_and(|s| *s == "1") {
                    notes.push(format!("{arb_name}:{n}: {cmd} ignore-errors = 1 not translated: sdcflow rejects a-priori lines that match no cell"));
                }
                if args.get(4).is_some_and(|s| *s == "1") {
                    notes.push(format!("{arb_name}:{n}: {cmd} expand-trivial = 1 not translated"));
                }
            }
            "<SUPPRESS>" => {
                // METHOD(table, parameters…)
                let method = rest.first().map(|s| s.to_ascii_uppercase()).unwrap_or_default();
                let args: Vec<String> =
                    rest.iter().skip(1).filter(|s| !matches!(**s, "(" | ")" | ",")).map(|s| s.to_string()).collect();
                let tab: usize = args
                    .first()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| bad(n, format!("<SUPPRESS> {method} needs a table number as its first argument")))?;
                let entry = (n, method, args[1..].to_vec());
                if tab == 0 {
                    linked_suppress = Some(entry);
                } else {
                    let count = tables.len();
                    let table = tab
                        .checked_sub(1)
                        .and_then(|i| tables.get_mut(i))
                        .ok_or_else(|| bad(n, format!("<SUPPRESS> names table {tab}; the batch specifies {count}")))?;
                    table.suppress = Some(entry);
                }
            }
            "<WRITETABLE>" => {
                // (table, output type, options, "file")
                let args: Vec<&str> = rest.iter().filter(|s| !matches!(**s, "(" | ")" | ",")).copied().collect();
                let tab: Option<usize> = args.first().and_then(|s| s.parse().ok());
                let file = args.iter().rev().find(|s| s.starts_with('"')).map(|s| unquote(s));
                if let (Some(tab), Some(file)) = (tab, file) {
                    if let Some(table) = tab.checked_sub(1).and_then(|i| tables.get_mut(i)) {
                        table.name = Path::new(file).file_stem().map(|s| s.to_string_lossy().to_string());
                    }
                }
                notes.push(format!(
                    "{arb_name}:{n}: <WRITETABLE> output formats are not translated: sdcflow writes \
                     publish/<table>/published.csv and confidential/<table>/cells.parquet"
                ));
            }
            "<READMICRODATA>" | "<GOINTERACTIVE>" | "<LOGBOOK>" | "<SOLVER>" | "<VERSIONINFO>" => {}
            other => notes.push(format!("{arb_name}:{n}: {other} not translated (sdcflow has no counterpart)")),
        }
    }
    let rda = rda.ok_or_else(|| Error::job(arb, "the batch has no <OPENMETADATA> (the .rda file)"))?;
    if tables.is_empty() {
        return Err(Error::job(arb, "the batch specifies no table (<SPECIFYTABLE>)"));
    }
    let job_dir = job_path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let job_dir = std::path::absolute(job_dir).map_err(|e| Error::io(job_dir, e))?;

    // The microdata: given, or converted from the batch's data file.
    let (microdata, converted) = match &opts.microdata {
        Some(m) => (m.clone(), None),
        None => {
            let data = data_file.ok_or_else(|| {
                Error::job(arb, "the batch has no <OPENMICRODATA>; give the microdata with --microdata")
            })?;
            let stem = data.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "microdata".into());
            let out = opts.converted.clone().unwrap_or_else(|| job_dir.join(format!("{stem}.parquet")));
            convert_microdata(&data, &rda, &out)?;
            (std::path::absolute(&out).map_err(|e| Error::io(&out, e))?.display().to_string(), Some(out))
        }
    };

    // Variables the tables use, and their hierarchies.
    let used: BTreeSet<String> = tables.iter().flat_map(|t| t.explanatory.iter().cloned()).collect();
    let mut toml = String::new();
    let mut body = String::new();
    body.push_str(&format!("[input]\nmicrodata = {}\n\n", q(&microdata)));
    for name in &used {
        let v = rda.var(name).ok_or_else(|| {
            Error::job(arb, format!("explanatory variable `{name}` is not in {}", rda.path.display()))
        })?;
        if v.kind != VarKind::Categorical {
            notes.push(format!("{}: `{name}` is not <RECODEABLE> but is used as explanatory", rda.path.display()));
        }
        if let Some(tc) = &v.tot_code {
            if tc != "Total" {
                notes.push(format!(
                    "{}: <TOTCODE> \"{tc}\" of `{name}`: sdcflow names totals `Total`",
                    rda.path.display()
                ));
            }
        }
        if !v.missing.is_empty() {
            notes.push(format!(
                "{}: missing-value codes of `{name}` ({}) are tabulated as ordinary codes",
                rda.path.display(),
                v.missing.join(", ")
            ));
        }
        if let Some(levels) = &v.levels {
            let l: Vec<String> = levels.iter().map(|x| x.to_string()).collect();
            body.push_str(&format!("[[hierarchy]]\nvariable = {}\nlevels = [{}]\n\n", q(name), l.join(", ")));
        } else if let Some(hrc) = &v.hrc {
            let mut p = resolve(&rda.path, hrc);
            if !p.exists() {
                p = resolve(arb, hrc);
            }
            let p = std::path::absolute(&p).map_err(|e| Error::io(&p, e))?;
            body.push_str(&format!("[[hierarchy]]\nvariable = {}\nfile = {}\n", q(name), q(&p.display().to_string())));
            if let Some(lead) = &v.lead {
                body.push_str(&format!("lead = {}\n", q(lead)));
            }
            body.push('\n');
        }
    }

    let weight_var = rda.vars.iter().find(|v| v.kind == VarKind::Weight).map(|v| v.name.clone());
    let holding_var = rda.vars.iter().find(|v| v.kind == VarKind::Holding).map(|v| v.name.clone());
    let mut names = BTreeSet::new();
    let linked_all = linked_suppress.is_some();
    for (i, t) in tables.iter().enumerate() {
        let mut name = t.name.clone().unwrap_or_else(|| format!("table_{}", i + 1));
        name = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
        while !names.insert(name.clone()) {
            name.push_str(&format!("_{}", i + 1));
        }
        let at = |line: usize| format!("{arb_name}:{line}");
        // Safety rules: tau-Argus gives individual-level rules first, then holding-level ones
        // (3rd/4th NK or P, 2nd FREQ); zero-parameter rules are placeholders.
        let (mut kept, mut weighted, mut holding_rules) = (Vec::new(), false, false);
        let (mut nk, mut p, mut freq) = (0, 0, 0);
        for (line, r) in &t.rules {
            let upper = r.to_ascii_uppercase();
            let kind = upper.split('(').next().unwrap_or("").trim().to_string();
            let args: Vec<f64> = upper
                .split_once('(')
                .map(|(_, a)| a.trim_end_matches(')').split(',').filter_map(|x| x.trim().parse().ok()).collect())
                .unwrap_or_default();
            let placeholder = args.first().is_some_and(|a| *a == 0.0);
            match kind.as_str() {
                "WGT" => weighted = args.first().is_some_and(|a| *a != 0.0),
                "NK" | "P" | "FREQ" => {
                    let pos = match kind.as_str() {
                        "NK" => &mut nk,
                        "P" => &mut p,
                        _ => &mut freq,
                    };
                    let holding = if kind == "FREQ" { *pos >= 1 } else { *pos >= 2 };
                    *pos += 1;
                    if placeholder {
                        continue;
                    }
                    holding_rules |= holding;
                    kept.push(r.replace(' ', ""));
                }
                "ZERO" | "MAN" => kept.push(r.replace(' ', "")),
                "MIS" => notes.push(format!("{}: MIS (missing codes safe or not) not translated", at(*line))),
                other => notes.push(format!("{}: safety rule {other} not translated", at(*line))),
            }
        }
        // tau-Argus protects manually unsafe a-priori cells (`u`) with a 20 % range unless
        // MAN(r) says otherwise; sdcflow wants the rule spelled out.
        if t.apriori.is_some() && !kept.iter().any(|r| r.to_ascii_uppercase().starts_with("MAN")) {
            kept.push("MAN(20)".into());
        }
        if kept.is_empty() {
            return Err(Error::job(
                arb,
                format!("line {}: table {} has no safety rule sdcflow can apply", t.line, i + 1),
            ));
        }
        body.push_str(&format!("[[table]]\nname = {}\n", q(&name)));
        let ex: Vec<String> = t.explanatory.iter().map(|e| q(e)).collect();
        body.push_str(&format!("explanatory = [{}]\n", ex.join(", ")));
        if let Some(r) = &t.response {
            if rda.var(r).is_none() {
                return Err(Error::job(
                    arb,
                    format!("line {}: response `{r}` is not in {}", t.line, rda.path.display()),
                ));
            }
            body.push_str(&format!("response = {}\n", q(r)));
        }
        if holding_rules {
            match &holding_var {
                Some(h) => {
                    body.push_str(&format!("contributor = {}\n", q(h)));
                    notes.push(format!(
                        "{}: holding-level rules: sdcflow has one contributor level, so every rule of \
                         table `{name}` applies to holdings (`{h}`)",
                        at(t.line)
                    ));
                }
                None => {
                    notes.push(format!("{}: holding-level rules but the .rda has no <HOLDING> variable", at(t.line)))
                }
            }
        }
        if weighted {
            let w = weight_var.as_ref().ok_or_else(|| {
                Error::job(arb, format!("line {}: Wgt(1) but the .rda has no <WEIGHT> variable", t.line))
            })?;
            body.push_str(&format!("weight = {}\n", q(w)));
        }
        body.push_str(&format!("safety = {}\n", q(&kept.join("|"))));
        if !t.shadow.is_empty() && Some(&t.shadow) != t.response.as_ref() {
            notes.push(format!(
                "{}: shadow variable `{}` not translated: sdcflow applies the rules to the response",
                at(t.line),
                t.shadow
            ));
        }
        if !t.cost.is_empty() && Some(&t.cost) != t.response.as_ref() {
            notes.push(format!(
                "{}: cost `{}` not translated: sdcflow's cost is the cell value (frequency for counts)",
                at(t.line),
                t.cost
            ));
        }
        let suppress = t.suppress.as_ref().or(linked_suppress.as_ref());
        let secondary = match suppress {
            None => {
                notes.push(format!(
                    "{}: no <SUPPRESS> for table `{name}`: published with primary suppression only (method none)",
                    at(t.line)
                ));
                "{ method = \"none\" }".to_string()
            }
            Some((line, method, args)) => {
                let minutes = args.first().and_then(|s| s.parse::<f64>().ok()).filter(|m| *m > 0.0);
                let limit = |m: Option<f64>| m.map(|m| format!(", time_limit_s = {}", m * 60.0)).unwrap_or_default();
                match method.as_str() {
                    "MOD" => {
                        // MOD(table, minutes per subtable, singleton single, singleton multiple, min freq)
                        let singleton = args[1..].iter().take(2).any(|s| s == "1");
                        format!("{{ method = \"modular\"{}, singleton = {singleton} }}", limit(minutes))
                    }
                    "OPT" => format!("{{ method = \"optimal\"{} }}", limit(minutes)),
                    "GH" | "NET" => {
                        notes.push(format!(
                            "{}: {method} translated to sdcflow's `fast` heuristic (the nearest method)",
                            at(*line)
                        ));
                        "{ method = \"fast\" }".to_string()
                    }
                    other => {
                        notes.push(format!(
                            "{}: <SUPPRESS> {other} not translated (not a cell-suppression method sdcflow has); \
                             table `{name}` uses `modular`",
                            at(*line)
                        ));
                        "{ method = \"modular\" }".to_string()
                    }
                }
            }
        };
        body.push_str(&format!("secondary = {secondary}\n"));
        if let Some((file, sep)) = &t.apriori {
            let f = std::path::absolute(file).map_err(|e| Error::io(file, e))?;
            body.push_str(&format!("apriori = {}\n", q(&f.display().to_string())));
            if sep != "," {
                body.push_str(&format!("apriori_separator = {}\n", q(sep)));
            }
        }
        body.push('\n');
    }
    if linked_all && tables.len() > 1 {
        let n: Vec<String> = names.iter().map(|x| q(x)).collect();
        body.push_str(&format!("[[linked]]\ntables = [{}]\n\n", n.join(", ")));
    }
    let out_dir = opts.output_dir.clone().unwrap_or_else(|| job_dir.join("sdcflow-out").display().to_string());
    body.push_str(&format!("[output]\ndir = {}\n", q(&out_dir)));

    toml.push_str(&format!("{JOB_HEADER} from {}.\n", arb.display()));
    if notes.is_empty() {
        toml.push_str("# Every command was translated.\n");
    } else {
        toml.push_str("# Not translated:\n");
        for n in &notes {
            toml.push_str(&format!("# - {n}\n"));
        }
    }
    toml.push('\n');
    toml.push_str(&body);
    Ok(Translation { toml, untranslated: notes, converted })
}

/// A TOML basic string.
fn q(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Converts the tau-Argus data file to Parquet: categorical and holding variables as text
/// (trimmed, as tau-Argus compares codes), numeric and weight variables as floats.
fn convert_microdata(data: &Path, rda: &Rda, out: &Path) -> Result<()> {
    let text = read_text(data)?;
    let bad = |line: usize, msg: String| Error::data(data.display().to_string(), format!("line {line}: {msg}"));
    let numeric = |v: &RdaVar| matches!(v.kind, VarKind::Numeric | VarKind::Weight);
    let mut text_cols: Vec<Vec<String>> = vec![Vec::new(); rda.vars.len()];
    let mut num_cols: Vec<Vec<Option<f64>>> = vec![Vec::new(); rda.vars.len()];
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<String> = match &rda.separator {
            Some(sep) => line.split(sep.as_str()).map(|s| s.trim().trim_matches('"').to_string()).collect(),
            None => rda
                .vars
                .iter()
                .map(|v| {
                    let (a, b) = (v.start.saturating_sub(1), v.start.saturating_sub(1) + v.width);
                    line.get(a.min(line.len())..b.min(line.len())).unwrap_or("").trim().to_string()
                })
                .collect(),
        };
        for (j, v) in rda.vars.iter().enumerate() {
            let f = fields.get(j).cloned().unwrap_or_default();
            if numeric(v) {
                let x = if f.is_empty() || v.missing.iter().any(|m| m.trim() == f) {
                    None
                } else {
                    Some(f.parse::<f64>().map_err(|_| bad(n, format!("`{}` = `{f}` is not a number", v.name)))?)
                };
                num_cols[j].push(x);
            } else {
                text_cols[j].push(f);
            }
        }
    }
    let records = text_cols.iter().map(Vec::len).chain(num_cols.iter().map(Vec::len)).max().unwrap_or(0);
    if records == 0 {
        return Err(Error::data(data.display().to_string(), "no records"));
    }
    let mut fields = Vec::new();
    let mut cols: Vec<ArrayRef> = Vec::new();
    for (j, v) in rda.vars.iter().enumerate() {
        if numeric(v) {
            fields.push(Field::new(&v.name, DataType::Float64, true));
            cols.push(Arc::new(Float64Array::from(std::mem::take(&mut num_cols[j]))));
        } else {
            fields.push(Field::new(&v.name, DataType::Utf8, false));
            cols.push(Arc::new(StringArray::from(std::mem::take(&mut text_cols[j]))));
        }
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), cols).map_err(|e| Error::Internal(e.to_string()))?;
    if let Some(dir) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    if out.exists() && !converted_by_us(out) {
        return Err(Error::Output {
            location: out.display().to_string(),
            message: "exists and was not converted by `sdcflow import-argus`; give the microdata with --microdata or move the file".into(),
        });
    }
    let file = File::create(out).map_err(|e| Error::io(out, e))?;
    let props = parquet::file::properties::WriterProperties::builder()
        .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
            CONVERTED_KEY.to_string(),
            data.display().to_string(),
        )]))
        .build();
    let mut w = ArrowWriter::try_new(file, schema, Some(props)).map_err(|e| Error::Internal(e.to_string()))?;
    w.write(&batch).map_err(|e| Error::Internal(e.to_string()))?;
    w.close().map_err(|e| Error::Internal(e.to_string()))?;
    Ok(())
}

/// Whether `path` is a Parquet file this importer wrote.
fn converted_by_us(path: &Path) -> bool {
    let Ok(f) = File::open(path) else { return false };
    let Ok(reader) = parquet::file::reader::SerializedFileReader::new(f) else { return false };
    use parquet::file::reader::FileReader;
    reader.metadata().file_metadata().key_value_metadata().is_some_and(|kv| kv.iter().any(|e| e.key == CONVERTED_KEY))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_split_quotes_and_punctuation() {
        assert_eq!(tokens(r#""geo""nace"|"salary"||"#), vec!["\"geo", "\"nace", "|", "\"salary", "|", "|"]);
        assert_eq!(tokens("MOD(1,5,1,0,0)"), vec!["MOD", "(", "1", ",", "5", ",", "1", ",", "0", ",", "0", ")"]);
        assert_eq!(tokens("<TOTCODE> \"Total\""), vec!["<TOTCODE>", "\"Total"]);
    }
}
