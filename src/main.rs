//! The `sdcflow` command line. Parsing and error printing live here; the work is in the library.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use sdcflow::job::{
    EngineMode, HierarchyEntry, InputSpec, Job, JobSpec, MicroaggregationSpec, OutputSpec, SecondarySpec, TableSpec,
};
use sdcflow::progress::{Progress, Verbosity};

#[derive(Parser, Debug)]
#[command(name = "sdcflow", version, about = "Statistical disclosure control at census scale on DataFusion / Ballista")]
struct Cli {
    /// Print only errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// Print engine details too.
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a job file: tabulate, protect and write every table.
    Run {
        /// The job file (TOML).
        job: PathBuf,
        #[command(flatten)]
        engine: EngineArgs,
        /// Output location (overrides `[output] dir`).
        #[arg(long)]
        out: Option<String>,
    },
    /// One-line protection of one table (tau-Argus batch syntax).
    Protect(ProtectArgs),
    /// Attacker-LP audit of a written table (OUT/<table>/cells.parquet); exit 1 when a
    /// sensitive cell is under-protected.
    Audit {
        /// The table's cells.parquet.
        cells: PathBuf,
        /// The job file that produced it (hierarchies, safety rules, a-priori file).
        #[arg(long)]
        job: PathBuf,
        /// Table name in the job (default: the directory holding cells.parquet).
        #[arg(long)]
        table: Option<String>,
        /// Write the per-cell intervals to this file (.json → JSON, else CSV).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Only prove the protection levels (faster) instead of exact feasibility intervals.
        #[arg(long)]
        levels_only: bool,
    },
    /// One-line microaggregation of one data set (numeric or nominal).
    Microaggregate(MicroaggregateArgs),
    /// Re-render OUT/report.html from OUT/report.json (a local output directory).
    Report {
        /// The output directory of a run.
        out: PathBuf,
    },
    /// Translate a tau-Argus batch file (.arb, with its .rda/.hrc/.hst files) into a job file;
    /// converts the batch's microdata to Parquet and lists what it cannot translate.
    ImportArgus {
        /// The tau-Argus batch file.
        arb: PathBuf,
        /// The job file to write.
        #[arg(long, default_value = "job.toml")]
        out: PathBuf,
        /// Use this Parquet/CSV microdata (with the .rda's variables as columns) instead of
        /// converting the batch's data file.
        #[arg(long)]
        microdata: Option<String>,
        /// `[output] dir` of the job (default: `sdcflow-out` beside the job file).
        #[arg(long)]
        output_dir: Option<String>,
    },
    /// Generate census-like synthetic microdata as Parquet parts.
    Generate {
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Number of rows.
        #[arg(long, default_value_t = 100_000)]
        rows: u64,
        /// Seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Rows per Parquet part (at least 1).
        #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
        rows_per_part: u64,
        /// Shape of the code lists: `regular` (even) or `census` (irregular hierarchies with
        /// single-division sections and very unequal region sizes).
        #[arg(long, default_value = "regular")]
        shape: sdcflow::generate::Shape,
    },
    /// Start a Ballista scheduler that knows sdcflow's functions.
    Scheduler {
        /// Address to bind.
        #[arg(long, default_value = "0.0.0.0")]
        bind_host: String,
        /// Port.
        #[arg(long, default_value_t = 50050)]
        port: u16,
        /// Seconds without a heartbeat before an executor is declared lost and its tasks are
        /// run elsewhere (executors send one every 2 s).
        #[arg(long, default_value_t = 30)]
        executor_timeout_s: u64,
    },
    /// Start a Ballista executor that runs sdcflow's functions.
    Executor {
        /// Address to bind (and advertise).
        #[arg(long, default_value = "127.0.0.1")]
        bind_host: String,
        /// Flight (data) port.
        #[arg(long, default_value_t = 50051)]
        port: u16,
        /// gRPC port.
        #[arg(long, default_value_t = 50052)]
        grpc_port: u16,
        /// Scheduler host.
        #[arg(long, default_value = "localhost")]
        scheduler_host: String,
        /// Scheduler port.
        #[arg(long, default_value_t = 50050)]
        scheduler_port: u16,
        /// Concurrent tasks (default: number of cores).
        #[arg(long)]
        concurrent_tasks: Option<usize>,
        /// Work directory for shuffle files (default: a temporary directory).
        #[arg(long)]
        work_dir: Option<String>,
        /// Fault injection for tests: sleep this many milliseconds before each subtable.
        #[arg(long, default_value_t = 0, hide = true)]
        test_solve_delay_ms: u64,
    },
    /// Benchmarks (build with `--profile bench-release`); prints figures for BENCHMARKS.md.
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Tabulation of a 4- or 7-dimensional hierarchical table on generated data.
    Tabulate {
        /// Directory of generated data (created with `generate` if empty).
        #[arg(long)]
        data: PathBuf,
        /// Rows to generate when the directory is empty.
        #[arg(long, default_value_t = 2_000_000)]
        rows: u64,
        /// 4 (2 hierarchical) or 7 (4 hierarchical) dimensions.
        #[arg(long, default_value_t = 4)]
        dims: usize,
        /// DataFusion partitions (threads).
        #[arg(long, default_value_t = 2)]
        threads: usize,
        /// Where to write the result (default: a temporary directory).
        #[arg(long)]
        out: Option<String>,
        /// Run the whole job and write cells.parquet / published.csv (default: tabulate and
        /// assess the primaries, counting cells, like the DuckDB baseline counts them).
        #[arg(long)]
        write: bool,
    },
}

#[derive(Args, Debug)]
struct EngineArgs {
    /// Run on a Ballista scheduler (df://HOST:PORT).
    #[arg(long, conflicts_with = "standalone")]
    cluster: Option<String>,
    /// Run on an in-process Ballista scheduler and executor.
    #[arg(long)]
    standalone: bool,
}

impl EngineArgs {
    fn mode(&self) -> Option<EngineMode> {
        match (&self.cluster, self.standalone) {
            (Some(url), _) => Some(EngineMode::Remote(url.clone())),
            (None, true) => Some(EngineMode::Standalone),
            _ => None,
        }
    }
}

#[derive(Args, Debug)]
struct MicroaggregateArgs {
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
struct ProtectArgs {
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
    engine: EngineArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let verbosity = if cli.quiet {
        Verbosity::Quiet
    } else if cli.verbose {
        Verbosity::Verbose
    } else {
        Verbosity::Normal
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(async {
        tokio::select! {
            r = run(cli.command, verbosity) => Ok(r),
            s = interrupted() => Err(s),
        }
    });
    let result = match outcome {
        Ok(r) => r,
        Err((name, code)) => {
            // Staged outputs and solver scratch hold unprotected cells: remove them, leave any
            // previous output as it was, and exit at once (solver threads are not waited for).
            sdcflow::store::remove_active();
            eprintln!("error: interrupted by {name}: nothing was published; any previous output is unchanged");
            std::process::exit(code);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            let code =
                e.chain().find_map(|c| c.downcast_ref::<sdcflow::Error>()).map(sdcflow::Error::exit_code).unwrap_or(1);
            ExitCode::from(code)
        }
    }
}

/// Waits for SIGINT or SIGTERM; returns the signal's name and the conventional exit code.
async fn interrupted() -> (&'static str, i32) {
    use tokio::signal::unix::{signal, SignalKind};
    match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
        (Ok(mut int), Ok(mut term)) => tokio::select! {
            _ = int.recv() => ("SIGINT", 130),
            _ = term.recv() => ("SIGTERM", 143),
        },
        _ => std::future::pending().await,
    }
}

async fn run(cmd: Command, verbosity: Verbosity) -> anyhow::Result<()> {
    let progress = Progress::new(verbosity);
    progress.install_for_solvers();
    match cmd {
        Command::Run { job, engine, out } => {
            let j = Job::load(&job).with_context(|| format!("loading job {}", job.display()))?;
            execute(&j, engine.mode(), out.as_deref(), &progress, verbosity).await
        }
        Command::Protect(a) => {
            let j = protect_job(&a)?;
            execute(&j, a.engine.mode(), None, &progress, verbosity).await
        }
        Command::Audit { cells, job, table, out, levels_only } => {
            let j = Job::load(&job).with_context(|| format!("loading job {}", job.display()))?;
            let o = sdcflow::publish::audit::audit_output(&cells, &j, table.as_deref(), !levels_only, &progress)?;
            if let Some(path) = &out {
                sdcflow::publish::audit::write_outcome(&o, path)?;
            }
            if verbosity > Verbosity::Quiet {
                if out.is_none() {
                    o.write_csv_to(&mut std::io::stdout().lock()).context("writing the intervals")?;
                }
                println!(
                    "audit of table {}: {} cells, {} suppressed, {} sensitive, {} under-protected, {} singleton violations, {} published sensitive, {} attacker LPs",
                    o.table,
                    o.cells,
                    o.suppressed,
                    o.intervals.len(),
                    o.under_protected.len(),
                    o.singleton_violations.len(),
                    o.published_sensitive.len(),
                    o.lps_solved
                );
            }
            Ok(o.check()?)
        }
        Command::Microaggregate(a) => {
            let list =
                |s: &str| s.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect::<Vec<_>>();
            let spec = JobSpec {
                input: InputSpec { microdata: a.micro.clone(), sql: vec![], csv_delimiter: a.csv_delimiter.clone() },
                hierarchy: vec![],
                table: vec![],
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
                    gamma: None,
                    control: a.control,
                    control_tables: None,
                    source: None,
                }],
                output: OutputSpec { dir: a.out.clone() },
                engine: Default::default(),
                linked: vec![],
            };
            let j = Job::from_spec(Path::new("<command line>"), spec)?;
            execute(&j, None, None, &progress, verbosity).await
        }
        Command::Report { out } => {
            let html = sdcflow::report_html::render_output(&out)?;
            if verbosity > Verbosity::Quiet {
                println!("report written to {}", html.display());
            }
            Ok(())
        }
        Command::ImportArgus { arb, out, microdata, output_dir } => {
            let opts = sdcflow::import_argus::ImportOptions { microdata, converted: None, output_dir };
            // Refuse to overwrite anything but a job file this command wrote (checked before
            // anything is converted or written).
            if let Ok(old) = std::fs::read(&out) {
                if !old.starts_with(sdcflow::import_argus::JOB_HEADER.as_bytes()) {
                    return Err(sdcflow::Error::Output {
                        location: out.display().to_string(),
                        message: "exists and was not written by `sdcflow import-argus`; choose another --out".into(),
                    }
                    .into());
                }
            }
            let t = sdcflow::import_argus::import(&arb, &out, &opts)?;
            std::fs::write(&out, &t.toml).map_err(|e| sdcflow::Error::io(&out, e))?;
            if verbosity > Verbosity::Quiet {
                if let Some(c) = &t.converted {
                    println!("microdata converted to {}", c.display());
                }
                for n in &t.untranslated {
                    eprintln!("not translated: {n}");
                }
                println!("job written to {} ({} untranslated)", out.display(), t.untranslated.len());
            }
            Ok(())
        }
        Command::Generate { out, rows, seed, rows_per_part, shape } => {
            let opts = sdcflow::generate::GenerateOptions { rows, seed, rows_per_part, shape, ..Default::default() };
            let stage = progress.stage(&format!("generating {rows} rows"), 1);
            let parts = sdcflow::generate::generate(&out, &opts)
                .with_context(|| format!("generating into {}", out.display()))?;
            stage.finish();
            if verbosity > Verbosity::Quiet {
                println!("wrote {rows} rows in {} Parquet parts to {}", parts.len(), out.display());
            }
            Ok(())
        }
        Command::Scheduler { bind_host, port, executor_timeout_s } => {
            let o = sdcflow::cluster::SchedulerOptions { bind_host, port, executor_timeout_s };
            Ok(sdcflow::cluster::run_scheduler(&o).await?)
        }
        Command::Executor {
            bind_host,
            port,
            grpc_port,
            scheduler_host,
            scheduler_port,
            concurrent_tasks,
            work_dir,
            test_solve_delay_ms,
        } => {
            let o = sdcflow::cluster::ExecutorOptions {
                bind_host,
                port,
                grpc_port,
                scheduler_host,
                scheduler_port,
                concurrent_tasks: concurrent_tasks
                    .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)),
                work_dir,
                test_solve_delay_ms,
            };
            Ok(sdcflow::cluster::run_executor(&o).await?)
        }
        Command::Bench { what } => match what {
            BenchCommand::Tabulate { data, rows, dims, threads, out, write } => {
                bench_tabulate(&data, rows, dims, threads, out, write, &progress).await
            }
        },
    }
}

async fn execute(
    job: &Job,
    mode: Option<EngineMode>,
    out: Option<&str>,
    progress: &Progress,
    verbosity: Verbosity,
) -> anyhow::Result<()> {
    let summary = sdcflow::run::run_job(job, mode, out, progress).await.context("running the job")?;
    if verbosity > Verbosity::Quiet {
        for t in &summary.report.tables {
            // Only the gap: a cost or bound may equal one cell's value, and logs hold none (issue
            // 13); both are in report.json.
            let cost =
                t.gap.map(|g| format!(", {:.1}% above the lower bound on its cost", 100.0 * g)).unwrap_or_default();
            let stopped = if t.stopped_by_time_limit { ", stopped by the time limit" } else { "" };
            println!(
                "table {}: {} cells, {} primary, {} secondary, {:.2}% of value suppressed{cost}{stopped}, audit: {}",
                t.name,
                t.cells,
                t.primaries,
                t.secondaries,
                100.0 * t.suppressed_value_share,
                t.audit
            );
        }
        for m in &summary.report.microaggregations {
            let figure = match m["kind"].as_str() {
                Some("numeric") => format!(
                    "SSE {:.2}, IL {:.2}%{}",
                    m["sse"].as_f64().unwrap_or(f64::NAN),
                    m["information_loss_percent"].as_f64().unwrap_or(f64::NAN),
                    m["lower_bound"].as_f64().map(|b| format!(", lower bound {b:.2}")).unwrap_or_default()
                ),
                _ => "k-anonymous, frequency-table errors in report.json".to_string(),
            };
            println!(
                "microaggregation {}: {} rows, k = {}, {figure}",
                m["name"].as_str().unwrap_or("?"),
                m["rows"],
                m["k"]
            );
        }
        println!("output written to {}", summary.output);
    }
    Ok(())
}

fn protect_job(a: &ProtectArgs) -> anyhow::Result<Job> {
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
        let mut e = HierarchyEntry { variable: var.to_string(), levels: None, file: None, mapping: None, lead: None };
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
        input: InputSpec { microdata: a.micro.clone(), sql: vec![], csv_delimiter: None },
        hierarchy,
        microaggregation: vec![],
        table: vec![TableSpec {
            name: a.name.clone().unwrap_or_else(|| explanatory.join("_")),
            explanatory,
            response: a.response.clone(),
            contributor: a.contributor.clone(),
            weight: a.weight.clone(),
            safety: a.safety.clone(),
            secondary: SecondarySpec { method: a.secondary.clone(), seed: None, time_limit_s: None, singleton: None },
            source: None,
            apriori: None,
            apriori_separator: None,
        }],
        output: OutputSpec { dir: a.out.clone() },
        engine: Default::default(),
        linked: vec![],
    };
    Ok(Job::from_spec(Path::new("<command line>"), spec)?)
}

fn peak_rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

async fn bench_tabulate(
    data: &Path,
    rows: u64,
    dims: usize,
    threads: usize,
    out: Option<String>,
    write: bool,
    progress: &Progress,
) -> anyhow::Result<()> {
    let has_parts = std::fs::read_dir(data)
        .map(|mut d| d.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".parquet"))))
        .unwrap_or(false);
    if !has_parts {
        let opts = sdcflow::generate::GenerateOptions { rows, ..Default::default() };
        sdcflow::generate::generate(data, &opts)?;
    }
    let (explanatory, hier): (Vec<&str>, Vec<(&str, Vec<usize>)>) = match dims {
        4 => (vec!["geo", "nace", "sex", "age_band"], vec![("geo", vec![2, 2, 2]), ("nace", vec![1, 2])]),
        7 => (
            vec!["geo", "nace", "occupation", "education", "sex", "age_band", "contract"],
            vec![("geo", vec![2, 2, 2]), ("nace", vec![1, 2]), ("occupation", vec![1, 1]), ("education", vec![1, 1])],
        ),
        _ => anyhow::bail!("--dims must be 4 or 7"),
    };
    let tmp = tempfile::tempdir()?;
    let out = out.unwrap_or_else(|| tmp.path().join("out").display().to_string());
    let spec = JobSpec {
        input: InputSpec { microdata: data.display().to_string(), sql: vec![], csv_delimiter: None },
        hierarchy: hier
            .into_iter()
            .map(|(v, l)| HierarchyEntry { variable: v.into(), levels: Some(l), file: None, mapping: None, lead: None })
            .collect(),
        microaggregation: vec![],
        table: vec![TableSpec {
            name: format!("bench{dims}"),
            explanatory: explanatory.iter().map(|s| s.to_string()).collect(),
            response: Some("salary".into()),
            contributor: Some("ent_id".into()),
            weight: None,
            safety: "NK(1,85)|FREQ(3,10)".into(),
            secondary: SecondarySpec { method: "none".into(), seed: None, time_limit_s: None, singleton: None },
            source: None,
            apriori: None,
            apriori_separator: None,
        }],
        output: OutputSpec { dir: out.clone() },
        engine: sdcflow::job::EngineSpec { target_partitions: Some(threads), ..Default::default() },
        linked: vec![],
    };
    let job = Job::from_spec(Path::new("<bench>"), spec)?;
    let start = std::time::Instant::now();
    let (cells, primaries, tabulate_s) = if write {
        let summary = sdcflow::run::run_job(&job, None, None, progress).await?;
        let t = &summary.report.tables[0];
        (t.cells, t.primaries, t.timings_s.get("tabulate").copied().unwrap_or(0.0))
    } else {
        let ctx = sdcflow::engine::session(&sdcflow::engine::EngineOptions {
            mode: sdcflow::job::EngineMode::Local,
            target_partitions: threads,
            memory_limit: None,
        })
        .await?;
        sdcflow::engine::register_microdata(&ctx, &job.microdata, job.csv_delimiter).await?;
        let t = &job.tables[0];
        let query = sdcflow::run::table_query(t, "microdata".into());
        let hierarchies: std::collections::HashMap<_, _> = job.hierarchies.clone().into_iter().collect();
        let (mut cells, mut primaries) = (0, 0);
        sdcflow::tabulate::tabulate_streaming(&ctx, &query, &hierarchies, progress, &mut |chunk| {
            let a = sdcflow::rules::assess(&t.safety, chunk);
            cells += a.status.len();
            primaries += a.status.iter().filter(|s| s.letter() == "U").count();
            Ok(())
        })
        .await?;
        (cells, primaries, start.elapsed().as_secs_f64())
    };
    let secs = start.elapsed().as_secs_f64();
    println!(
        "bench tabulate: dims={dims} threads={threads} write={write} cells={cells} primaries={primaries} tabulate_s={tabulate_s:.2} total_s={secs:.2} peak_rss_mib={:.0}",
        peak_rss_mib().unwrap_or(f64::NAN)
    );
    Ok(())
}
