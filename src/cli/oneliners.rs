//! `sdcflow protect` and `sdcflow microaggregate`: one table or one data set from the command
//! line, built as a [`JobSpec`] (every other key at its default) and validated like a job file.

use std::path::Path;

use clap::Args;

use sdcflow::job::{
    HierarchyEntry, InputSpec, Job, JobSpec, MicroaggregationSpec, OutputSpec, SecondarySpec, TableSpec,
};

use super::EngineArgs;

#[derive(Args, Debug)]
pub struct MicroaggregateArgs {
    /// Microdata: Parquet file, directory, glob, s3:// URL or .csv file.
    micro: String,
    /// Variables to aggregate, comma-separated.
    #[arg(long)]
    variables: String,
    /// Minimum group size.
    #[arg(long, default_value_t = 3)]
    k: usize,
    /// `numeric` or `nominal`.
    #[arg(long, default_value = "numeric")]
    kind: String,
    /// Method (numeric: mdav, vmdav, univariate-optimal, two-step; nominal: two-step,
    /// cluster-mode, random-member).
    #[arg(long)]
    method: Option<String>,
    /// Strata variables, comma-separated.
    #[arg(long)]
    strata: Option<String>,
    /// Weight variable (numeric).
    #[arg(long)]
    weight: Option<String>,
    /// Standardisation (numeric): zscore, range, none.
    #[arg(long)]
    standardise: Option<String>,
    /// Control tables up to this dimension (nominal).
    #[arg(long)]
    control: Option<usize>,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// CSV delimiter for .csv input.
    #[arg(long)]
    csv_delimiter: Option<String>,
    /// Data set name (the output sub-directory).
    #[arg(long, default_value = "masked")]
    name: String,
    /// Output location.
    #[arg(long)]
    out: String,
}

#[derive(Args, Debug)]
pub struct ProtectArgs {
    /// Microdata: Parquet file, directory, glob or s3:// URL.
    micro: String,
    /// Explanatory variables of the table, comma-separated (e.g. 'geo,nace').
    #[arg(long)]
    tables: String,
    /// Response variable (omit for a frequency table).
    #[arg(long)]
    response: Option<String>,
    /// Contributor / holding variable.
    #[arg(long)]
    contributor: Option<String>,
    /// Weight variable.
    #[arg(long)]
    weight: Option<String>,
    /// Safety rules, e.g. 'NK(1,85)|FREQ(3,10)'.
    #[arg(long)]
    safety: String,
    /// Hierarchy as VAR=levels:2,2 | VAR=file:geo.hrc | VAR=mapping:geo.csv (repeatable).
    #[arg(long = "hierarchy")]
    hierarchies: Vec<String>,
    /// Secondary suppression method: auto (the best for the table's size), optimal, modular,
    /// fast, tabu, or none (primaries only: NOT protected against recalculation).
    #[arg(long, default_value = "auto")]
    secondary: String,
    /// Table name (default: the variables joined by `_`).
    #[arg(long)]
    name: Option<String>,
    /// Output location.
    #[arg(long)]
    out: String,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// The job of `sdcflow protect`.
pub fn protect_job(a: &ProtectArgs) -> anyhow::Result<Job> {
    let explanatory: Vec<String> =
        a.tables.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    let mut hierarchy = Vec::new();
    for h in &a.hierarchies {
        let bad = || {
            sdcflow::Error::job(
                "--hierarchy",
                format!("{h:?}: expected VAR=levels:W,W | VAR=file:PATH | VAR=mapping:PATH"),
            )
        };
        let (var, spec) = h.split_once('=').ok_or_else(bad)?;
        let (kind, arg) = spec.split_once(':').ok_or_else(bad)?;
        let mut e = HierarchyEntry { variable: var.to_string(), ..Default::default() };
        match kind {
            "levels" => {
                e.levels = Some(
                    arg.split(',').map(|w| w.trim().parse::<usize>()).collect::<Result<_, _>>().map_err(|_| bad())?,
                )
            }
            "file" => e.file = Some(arg.to_string()),
            "mapping" => e.mapping = Some(arg.to_string()),
            _ => return Err(bad().into()),
        }
        hierarchy.push(e);
    }
    let spec = JobSpec {
        input: InputSpec { microdata: a.micro.clone(), ..Default::default() },
        hierarchy,
        table: vec![TableSpec {
            name: a.name.clone().unwrap_or_else(|| explanatory.join("_")),
            explanatory,
            response: a.response.clone(),
            contributor: a.contributor.clone(),
            weight: a.weight.clone(),
            safety: a.safety.clone(),
            secondary: SecondarySpec { method: a.secondary.clone(), ..Default::default() },
            ..Default::default()
        }],
        output: OutputSpec { dir: a.out.clone() },
        ..Default::default()
    };
    Ok(Job::from_spec(Path::new("<command line>"), spec)?)
}

/// The job of `sdcflow microaggregate`.
pub fn microaggregate_job(a: &MicroaggregateArgs) -> anyhow::Result<Job> {
    let list = |s: &str| s.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect::<Vec<_>>();
    let spec = JobSpec {
        input: InputSpec { microdata: a.micro.clone(), csv_delimiter: a.csv_delimiter.clone(), ..Default::default() },
        microaggregation: vec![MicroaggregationSpec {
            name: a.name.clone(),
            variables: list(&a.variables),
            k: a.k,
            kind: Some(a.kind.clone()),
            method: a.method.clone(),
            strata: a.strata.as_deref().map(list),
            weight: a.weight.clone(),
            standardise: a.standardise.clone(),
            seed: Some(a.seed),
            control: a.control,
            ..Default::default()
        }],
        output: OutputSpec { dir: a.out.clone() },
        ..Default::default()
    };
    Ok(Job::from_spec(Path::new("<command line>"), spec)?)
}
