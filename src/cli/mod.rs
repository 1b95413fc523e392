//! The commands: clap definitions and what each one runs. Parsing and printing live here; the
//! work is in the library.
//!
//! - [`oneliners`]: `sdcflow protect` and `sdcflow microaggregate`, which build a one-table or
//!   one-data-set [`JobSpec`](sdcflow::job::JobSpec) and run it like a job file;
//! - [`bench`]: `sdcflow bench`, figures for BENCHMARKS.md.

mod bench;
mod oneliners;

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use sdcflow::job::{EngineMode, Job};
use sdcflow::progress::{Progress, Verbosity};

use bench::BenchCommand;
use oneliners::{MicroaggregateArgs, ProtectArgs};

#[derive(Parser, Debug)]
#[command(name = "sdcflow", version, about = "Statistical disclosure control at census scale on DataFusion / Ballista")]
pub struct Cli {
    /// Print only errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print engine details too.
    #[arg(short, long, global = true)]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
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
        /// Memory for all running tasks together, in MiB; operators spill to the work
        /// directory beyond it (default: 70 % of the machine's or container's memory).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        memory_limit_mb: Option<u64>,
        /// Tasks that this cluster's executors on this host run at once, all together (default:
        /// the host's cores; 0: no limit). More executors than cores then queue instead of
        /// time-sharing the cores.
        #[arg(long)]
        host_slots: Option<usize>,
        /// Fault injection for tests: sleep this many milliseconds before each subtable.
        #[arg(long, default_value_t = 0, hide = true)]
        test_solve_delay_ms: u64,
        /// Fault injection for tests: sleep this many milliseconds in each batch through
        /// `sdc_test_scan_delay`.
        #[arg(long, default_value_t = 0, hide = true)]
        test_scan_delay_ms: u64,
        /// Fault injection for tests: lie in every whole-table result (secondaries published)
        /// and in every part (a line more than reported).
        #[arg(long, hide = true)]
        test_tamper_results: bool,
        /// Fault injection for tests: sleep this many milliseconds before each roll-up part.
        #[arg(long, default_value_t = 0, hide = true)]
        test_roll_up_delay_ms: u64,
        /// Fault injection for tests: sleep this many milliseconds before writing each routed
        /// chunk (the routing query's final, shuffle-reading stage).
        #[arg(long, default_value_t = 0, hide = true)]
        test_route_delay_ms: u64,
    },
    /// Benchmarks (build with `--profile bench-release`); prints figures for BENCHMARKS.md.
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
}

#[derive(Args, Debug)]
pub struct EngineArgs {
    /// Run on a Ballista scheduler (df://HOST:PORT).
    #[arg(long, conflicts_with = "standalone")]
    cluster: Option<String>,
    /// Run on an in-process Ballista scheduler and executor.
    #[arg(long)]
    standalone: bool,
}

impl EngineArgs {
    pub fn mode(&self) -> Option<EngineMode> {
        match (&self.cluster, self.standalone) {
            (Some(url), _) => Some(EngineMode::Remote(url.clone())),
            (None, true) => Some(EngineMode::Standalone),
            _ => None,
        }
    }
}

/// Runs one command.
pub async fn run(cmd: Command, verbosity: Verbosity) -> anyhow::Result<()> {
    let progress = Progress::new(verbosity);
    progress.install_for_solvers();
    match cmd {
        Command::Run { job, engine, out } => {
            let j = Job::load(&job).with_context(|| format!("loading job {}", job.display()))?;
            execute(&j, engine.mode(), out.as_deref(), &progress, verbosity).await
        }
        Command::Protect(a) => {
            let j = oneliners::protect_job(&a)?;
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
                    "audit of table {}: {} cells, {} suppressed, {} sensitive, {} under-protected, {} singleton violations, {} published sensitive, {}",
                    o.table,
                    o.cells,
                    o.suppressed,
                    o.intervals.len(),
                    o.under_protected.len(),
                    o.singleton_violations.len(),
                    o.published_sensitive.len(),
                    sdcflow::suppress::audit::proofs_line(o.proven, o.witnessed, o.lps_solved)
                );
            }
            Ok(o.check()?)
        }
        Command::Microaggregate(a) => {
            let j = oneliners::microaggregate_job(&a)?;
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
            memory_limit_mb,
            host_slots,
            test_solve_delay_ms,
            test_scan_delay_ms,
            test_tamper_results,
            test_roll_up_delay_ms,
            test_route_delay_ms,
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
                memory_limit_mb,
                host_slots,
                test_solve_delay_ms,
                test_scan_delay_ms,
                test_tamper_results,
                test_roll_up_delay_ms,
                test_route_delay_ms,
            };
            Ok(sdcflow::cluster::run_executor(&o).await?)
        }
        Command::Bench { what } => match what {
            BenchCommand::Tabulate { data, rows, dims, threads, out, write } => {
                bench::tabulate(&data, rows, dims, threads, out, write, &progress).await
            }
        },
    }
}

/// Runs a job and prints what it produced.
pub async fn execute(
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
            let cost = t.gap.map(|g| format!(", {}", gap_phrase(g))).unwrap_or_default();
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
            let figure = match m {
                sdcflow::masking::MicroaggregationReport::Numeric(r) => format!(
                    "SSE {:.2}, IL {:.2}%{}",
                    r.sse,
                    r.information_loss_percent,
                    r.lower_bound.map(|b| format!(", lower bound {b:.2}")).unwrap_or_default()
                ),
                sdcflow::masking::MicroaggregationReport::Nominal(_) => {
                    "k-anonymous, frequency-table errors in report.json".to_string()
                }
            };
            println!("microaggregation {}: {} rows, k = {}, {figure}", m.name(), m.rows(), m.k());
        }
        println!("output written to {}", summary.output);
    }
    Ok(())
}

/// Gaps up to this are rounding, not distance from the optimum ([`gap_phrase`]).
const PROVEN_GAP: f64 = 1e-9;

/// The run summary's words for a table's `gap = (cost − bound) / cost`. Why not "n % above the
/// bound": a gap of 91.4 % means a cost up to 11.6 times the optimum, not 1.9 times; the factor
/// `1 / (1 − gap)` is what a user can weigh (the optimum lies between the bound and the cost).
/// A gap within [`PROVEN_GAP`] is a proof: the bound and the cost are sums of the same cells'
/// costs in another order (c2-persons: 2.3e-16).
///
/// Gaps below 0.1 % (the exact search's last master stops within 0.01 % of its bound on the
/// table's cost) get three decimals, so that they do not read "0.0 %, at most 1.00×".
fn gap_phrase(gap: f64) -> String {
    let (pct, factor) = if gap < 1e-3 { (3, 5) } else { (1, 2) };
    let head = format!("{:.pct$}% gap to the lower bound on its secondary cost", 100.0 * gap);
    if gap <= PROVEN_GAP {
        format!("{head} (proven optimal)")
    } else if gap < 0.99 {
        format!("{head} (at most {:.factor$}× the optimum)", 1.0 / (1.0 - gap))
    } else {
        format!("{head} (the bound is too weak to say how far from the optimum)")
    }
}

#[cfg(test)]
mod tests {
    use super::gap_phrase;

    /// The summary states the gap as a share of the cost and the factor it allows above the
    /// optimum, never as a share of the bound.
    #[test]
    fn the_gap_is_stated_with_the_factor_it_allows() {
        assert_eq!(gap_phrase(0.32), "32.0% gap to the lower bound on its secondary cost (at most 1.47× the optimum)");
        assert_eq!(
            gap_phrase(0.914),
            "91.4% gap to the lower bound on its secondary cost (at most 11.63× the optimum)"
        );
        assert_eq!(gap_phrase(0.0), "0.000% gap to the lower bound on its secondary cost (proven optimal)");
        assert_eq!(
            gap_phrase(1.125e-4),
            "0.011% gap to the lower bound on its secondary cost (at most 1.00011× the optimum)"
        );
        assert!(gap_phrase(2.3e-16).ends_with("(proven optimal)"), "a rounding difference");
        assert!(gap_phrase(1.0).ends_with("(the bound is too weak to say how far from the optimum)"));
    }
}
