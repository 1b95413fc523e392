//! `sdcflow bench`: figures for BENCHMARKS.md (build with `--profile bench-release`).

use std::path::{Path, PathBuf};

use clap::Subcommand;

use sdcflow::job::{HierarchyEntry, InputSpec, Job, JobSpec, OutputSpec, SecondarySpec, TableSpec};
use sdcflow::progress::Progress;

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
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

fn peak_rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Tabulates (and with `write` runs) a 4- or 7-dimensional table on generated data.
#[allow(clippy::too_many_arguments)]
pub async fn tabulate(
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
        input: InputSpec { microdata: data.display().to_string(), ..Default::default() },
        hierarchy: hier
            .into_iter()
            .map(|(v, l)| HierarchyEntry { variable: v.into(), levels: Some(l), ..Default::default() })
            .collect(),
        table: vec![TableSpec {
            name: format!("bench{dims}"),
            explanatory: explanatory.iter().map(|s| s.to_string()).collect(),
            response: Some("salary".into()),
            contributor: Some("ent_id".into()),
            safety: "NK(1,85)|FREQ(3,10)".into(),
            secondary: SecondarySpec { method: "none".into(), ..Default::default() },
            ..Default::default()
        }],
        output: OutputSpec { dir: out.clone() },
        engine: sdcflow::job::EngineSpec { target_partitions: Some(threads), ..Default::default() },
        ..Default::default()
    };
    let job = Job::from_spec(Path::new("<bench>"), spec)?;
    let start = std::time::Instant::now();
    let (cells, primaries, tabulate_s) = if write {
        let summary = sdcflow::run::run_job(&job, None, None, progress).await?;
        let t = &summary.report.tables[0];
        (
            t.cells,
            t.primaries,
            t.timings_s.get("tabulate").or(t.timings_s.get("tabulate_primary_and_write")).copied().unwrap_or(0.0),
        )
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
