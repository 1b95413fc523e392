//! The query engine: one place that builds the DataFusion `SessionContext`.
//!
//! The same job runs on local DataFusion (the embedded default), on Ballista standalone (an
//! in-process scheduler and executor, which exercises the distributed code paths without a
//! cluster) or on a remote Ballista scheduler. sdcflow's own functions are registered in the
//! `SessionState` *before* the context is upgraded for Ballista, so executors started from that
//! state know them. Object stores (`s3://`) are registered from the usual `AWS_*` variables.

use std::sync::Arc;

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SessionConfig, SessionContext};
use url::Url;

use crate::error::{Error, Result};
use crate::job::EngineMode;

/// Engine settings resolved from the job and the command line.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Local, standalone or remote.
    pub mode: EngineMode,
    /// DataFusion target partitions.
    pub target_partitions: usize,
    /// Memory pool limit in bytes (operators spill beyond it).
    pub memory_limit: Option<usize>,
}

/// Builds a session for `opts` with sdcflow's functions registered.
pub async fn session(opts: &EngineOptions) -> Result<SessionContext> {
    let base = match opts.mode {
        EngineMode::Local => SessionConfig::new(),
        // Ballista 55's adaptive planner (its default) cannot recover a job when an executor
        // dies while a stage that reads a shuffle runs: the rolled-back stage is never planned
        // again and the job stays `Running` for ever (apache/datafusion-ballista#1986; tried:
        // the routing query's kill test hung). The static planner re-resolves it.
        _ => SessionConfig::new_with_ballista().with_ballista_adaptive_query_planner(false),
    };
    let mut config = base
        .with_target_partitions(opts.target_partitions)
        // Sorting of the output is done by sdcflow; keep batches moderate for bounded memory.
        .with_batch_size(8192);
    // Parquet min/max statistics leave out NaN, and DataFusion 55 plans a column whose min equals
    // its max as that constant: `[1, NaN, 1]` would be read as `[1, 1, 1]`, hiding bad values
    // from the input checks. sdcflow scans every row anyway, so the statistics buy nothing.
    config.options_mut().execution.collect_statistics = false;
    // `s3://` buckets other than the input's (e.g. a scratch prefix) open on demand.
    let mut runtime =
        RuntimeEnvBuilder::new().with_object_store_registry(Arc::new(crate::store::EnvObjectStoreRegistry::default()));
    if let Some(limit) = opts.memory_limit {
        runtime = runtime.with_memory_limit(limit, 1.0);
    }
    let runtime = runtime.build_arc()?;
    let mut state =
        SessionStateBuilder::new().with_config(config).with_runtime_env(runtime).with_default_features().build();
    crate::cluster::register_functions(&mut state)?;
    let ctx = match &opts.mode {
        EngineMode::Local => SessionContext::new_with_state(state),
        EngineMode::Standalone => SessionContext::standalone_with_state(state).await?,
        EngineMode::Remote(url) => connect_remote(url, state).await?,
    };
    // Upgrading a state for Ballista rebuilds it; register again so the client plans with them.
    crate::cluster::register_on_context(&ctx);
    Ok(ctx)
}

async fn connect_remote(url: &str, state: datafusion::execution::SessionState) -> Result<SessionContext> {
    let parsed = Url::parse(url).map_err(|e| Error::Engine(format!("cluster URL {url:?}: {e}")))?;
    let host = parsed.host_str().unwrap_or("localhost").to_string();
    let port = parsed.port().unwrap_or(50050);
    // Fail fast with a clear message when nothing listens, instead of a gRPC retry loop.
    let addr = format!("{host}:{port}");
    match tokio::time::timeout(std::time::Duration::from_secs(5), tokio::net::TcpStream::connect(&addr)).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(Error::Engine(format!("Ballista scheduler {url} is unreachable: {e}"))),
        Err(_) => return Err(Error::Engine(format!("Ballista scheduler {url} did not answer within 5 s"))),
    }
    Ok(SessionContext::remote_with_state(url, state).await?)
}

/// Registers an `s3://bucket` object store built from the environment (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`, …) when `location` is an S3 URL.
pub fn register_store_for(ctx: &SessionContext, location: &str) -> Result<()> {
    if let Some(store) = crate::store::s3_store(location)? {
        let url = crate::store::bucket_url(location)?;
        ctx.runtime_env().register_object_store(&url, store);
    }
    Ok(())
}

/// Registers the microdata as table `microdata`: a Parquet file, directory, glob or S3 prefix,
/// or a `.csv` file with a header line. Errors name the location.
pub async fn register_microdata(ctx: &SessionContext, location: &str, csv_delimiter: u8) -> Result<()> {
    register_store_for(ctx, location)?;
    let local = !location.contains("://");
    if local && !has_glob(location) && !std::path::Path::new(location).exists() {
        return Err(Error::data(location, "file or directory not found"));
    }
    let is_file = local && std::path::Path::new(location).is_file();
    if location.to_ascii_lowercase().ends_with(".csv") {
        let opts = CsvReadOptions::new().has_header(true).delimiter(csv_delimiter).file_extension(".csv");
        ctx.register_csv("microdata", location, opts)
            .await
            .map_err(|e| Error::data(location, format!("cannot read as CSV: {e}")))?;
    } else {
        let extension = if is_file { "" } else { ".parquet" };
        if local && !is_file && !has_glob(location) {
            check_parquet_parts(std::path::Path::new(location))?;
        } else if !is_file {
            check_listed_parquet_parts(ctx, location, extension).await?;
        }
        let opts = ParquetReadOptions::default().file_extension(extension);
        ctx.register_parquet("microdata", location, opts)
            .await
            .map_err(|e| Error::data(location, format!("cannot read as Parquet: {e}")))?;
    }
    // Touch the schema and one batch now so an unreadable file fails here, naming the input.
    let df = ctx.sql("SELECT * FROM microdata LIMIT 1").await.map_err(|e| Error::data(location, e.to_string()))?;
    df.collect().await.map_err(|e| Error::data(location, format!("cannot be read: {e}")))?;
    Ok(())
}

/// Checks every `.parquet` part under a local directory from its footer alone: an empty or
/// unreadable part, or a part without a column another part has, is an error naming the part
/// (DataFusion would report missing columns or NULLs without saying which file is at fault).
fn check_parquet_parts(dir: &std::path::Path) -> Result<()> {
    let mut parts = Vec::new();
    collect_parquet_files(dir, &mut parts)?;
    parts.sort();
    let mut columns: Vec<(String, Vec<String>)> = Vec::new();
    for part in &parts {
        let shown = part.display().to_string();
        let file = std::fs::File::open(part).map_err(|e| Error::data(&shown, format!("cannot be opened: {e}")))?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len == 0 {
            return Err(empty_part(&shown));
        }
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| Error::data(&shown, format!("cannot read as Parquet: {e}")))?;
        let names = reader.schema().fields().iter().map(|f| f.name().clone()).collect();
        columns.push((shown, names));
    }
    check_part_columns(&columns)
}

/// [`check_parquet_parts`] for a glob (`data/*.parquet`) or an object-store location
/// (`s3://bucket/prefix/`): the parts DataFusion will read, listed through the same object
/// store, each checked from its footer (fetched by range, never the whole part).
async fn check_listed_parquet_parts(ctx: &SessionContext, location: &str, extension: &str) -> Result<()> {
    use datafusion::datasource::listing::ListingTableUrl;
    use datafusion::datasource::physical_plan::parquet::metadata::DFParquetMetadata;
    use futures::TryStreamExt;

    let url =
        ListingTableUrl::parse(location).map_err(|e| Error::data(location, format!("not a valid location: {e}")))?;
    let store = ctx
        .runtime_env()
        .object_store(url.object_store())
        .map_err(|e| Error::Store { url: location.into(), message: e.to_string() })?;
    let state = ctx.state();
    let listed = async { url.list_all_files(&state, store.as_ref(), extension).await?.try_collect::<Vec<_>>().await };
    let mut parts = listed.await.map_err(|e| Error::data(location, format!("cannot list the Parquet parts: {e}")))?;
    parts.sort_by(|a, b| a.location.cmp(&b.location));
    // A part as users wrote it: `s3://bucket/key`, or an absolute local path.
    let shown = |key: &object_store::path::Path| match url.get_url().scheme() {
        "file" => format!("/{key}"),
        scheme => format!("{scheme}://{}/{key}", url.get_url().host_str().unwrap_or_default()),
    };
    let mut columns: Vec<(String, Vec<String>)> = Vec::new();
    for part in parts {
        let name = shown(&part.location);
        if part.size == 0 {
            return Err(empty_part(&name));
        }
        let schema = DFParquetMetadata::new(store.as_ref(), &part)
            .fetch_schema()
            .await
            .map_err(|e| Error::data(&name, format!("cannot read as Parquet: {e}")))?;
        let names = schema.fields().iter().map(|f| f.name().clone()).collect();
        columns.push((name, names));
    }
    check_part_columns(&columns)
}

fn empty_part(shown: &str) -> Error {
    Error::data(shown, "the Parquet part is empty (0 bytes); remove it or write it again")
}

/// Every part (named as shown, with its column names) has the columns of every other part.
fn check_part_columns(columns: &[(String, Vec<String>)]) -> Result<()> {
    let mut errs = Vec::new();
    for (part, names) in columns {
        for (other, other_names) in columns {
            let missing: Vec<&String> = other_names.iter().filter(|n| !names.contains(n)).collect();
            if !missing.is_empty() {
                errs.push(Error::data(
                    part,
                    format!(
                        "the Parquet part has no column {} (present in {other}); all parts need the same columns",
                        missing.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", "),
                    ),
                ));
                break;
            }
        }
    }
    Error::collect(errs)
}

fn collect_parquet_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) -> Result<()> {
    let shown = dir.display().to_string();
    let entries = std::fs::read_dir(dir).map_err(|e| Error::data(&shown, format!("cannot list the directory: {e}")))?;
    for entry in entries {
        let path = entry.map_err(|e| Error::data(&shown, format!("cannot list the directory: {e}")))?.path();
        if path.is_dir() {
            collect_parquet_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "parquet") {
            out.push(path);
        }
    }
    Ok(())
}

fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// Runs SQL prelude files in order; returns the name of the last view they create, if any.
pub async fn run_preludes(ctx: &SessionContext, files: &[std::path::PathBuf]) -> Result<Option<String>> {
    let mut last = None;
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| Error::unreadable(f, &e))?;
        for stmt in split_statements(&text) {
            if let Some(v) = created_view(&stmt) {
                last = Some(v);
            }
            let df = ctx
                .sql(&stmt)
                .await
                .map_err(|e| Error::data(f.display().to_string(), format!("SQL statement failed: {e}")))?;
            df.collect().await.map_err(|e| Error::data(f.display().to_string(), e.to_string()))?;
        }
    }
    Ok(last)
}

/// Splits a SQL script on `;` outside quotes and comments.
fn split_statements(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                cur.push(c);
                if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    cur.push(c);
                }
                '-' if chars.peek() == Some(&'-') => {
                    for c2 in chars.by_ref() {
                        if c2 == '\n' {
                            break;
                        }
                    }
                    cur.push('\n');
                }
                ';' => {
                    if !cur.trim().is_empty() {
                        out.push(cur.trim().to_string());
                    }
                    cur.clear();
                }
                _ => cur.push(c),
            },
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

fn created_view(stmt: &str) -> Option<String> {
    let words: Vec<&str> = stmt.split_whitespace().collect();
    let upper: Vec<String> = words.iter().map(|w| w.to_ascii_uppercase()).collect();
    if upper.first().map(String::as_str) != Some("CREATE") {
        return None;
    }
    let pos = upper.iter().position(|w| w == "VIEW")?;
    let mut i = pos + 1;
    if upper.get(i).map(String::as_str) == Some("IF") {
        i += 3; // IF NOT EXISTS
    }
    words.get(i).map(|w| w.trim_matches('"').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_and_views() {
        let s =
            split_statements("-- a; comment\nCREATE VIEW a AS SELECT ';' AS x;\nCREATE OR REPLACE VIEW b AS SELECT 1;");
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(created_view(&s[0]).as_deref(), Some("a"));
        assert_eq!(created_view(&s[1]).as_deref(), Some("b"));
        assert_eq!(created_view("SELECT 1"), None);
    }
}
