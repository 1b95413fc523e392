//! Part files of primaries-only tables: written where the roll-up runs, committed by the
//! client only when every part is complete and exactly as reported.
//!
//! A primaries-only table can have hundreds of millions of cells, so its roll-up, its primary
//! rules and its writing run in parts ([`crate::tabulate::parts`]), on the executors in
//! cluster mode and in-process otherwise (same code, same files):
//!
//! ```text
//! confidential/<table>/cells/part-00000.parquet   every cell of part 0 (contract columns)
//! publish/<table>/published/part-00000.csv        what part 0 may release (with a header)
//! ```
//!
//! Parts are numbered in key order, so reading them in name order gives the table sorted as a
//! single file would be; every CSV part has the header, so each is a valid CSV on its own (a
//! directory of parts reads as one table in DataFusion, DuckDB, Spark or pandas).
//!
//! A task writes its files under a private name in [`PARTS_TMP`] and renames them into place
//! when complete, so a task killed halfway leaves no partial part, and one run again elsewhere
//! writes the same bytes under the same names. [`check_parts`] is the client's side: exactly
//! the reported files, with the reported sizes and cell counts, nothing else; the scratch of
//! killed tasks is removed before the run commits.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::staging::OUTPUT_MARKER;
use super::table::{LevelTally, TableWriter, Tally, CONFIDENTIAL, PUBLISH};
use crate::error::{Error, Result};
use crate::rules::{assess, Safety};
use crate::tabulate::parts::{roll_up_chunks, roll_up_part, PartLayout};

/// Directory below the staging directory where tasks write unfinished parts.
pub const PARTS_TMP: &str = ".sdcflow-parts-tmp";

/// The folders of a table's parts, relative to the output: `[cells, published]`.
pub fn part_dirs(table: &str) -> [String; 2] {
    [format!("{CONFIDENTIAL}/{table}/cells"), format!("{PUBLISH}/{table}/published")]
}

/// The files of part `part` of table `table`, relative to the output: `[cells, published]`.
pub fn part_files(table: &str, part: usize) -> [String; 2] {
    let [c, p] = part_dirs(table);
    [format!("{c}/part-{part:05}.parquet"), format!("{p}/part-{part:05}.csv")]
}

/// What every part of a table needs to be rolled up, assessed and written (the part number
/// and the part's inputs travel beside it).
#[derive(Debug, Clone)]
pub struct PartTask {
    /// Table name (folders of the output).
    pub table: String,
    /// Explanatory variables (CSV header).
    pub explanatory: Vec<String>,
    /// Hierarchies, top-N, weight.
    pub layout: PartLayout,
    /// Safety rules, as written in the job.
    pub safety: String,
    /// The run's staging directory (absolute): where the part files go.
    pub root: String,
    /// Where the chunk files of routed parts are (a scratch directory or `s3://` prefix): when
    /// set, a part's inputs are the names of its chunk files, one a line
    /// ([`crate::cluster::part_agg`]); otherwise they are the part's payload.
    pub chunks: Option<String>,
}

/// The inputs of one part: its payload, or its chunks' payloads (disjoint contributors,
/// [`crate::tabulate::parts::roll_up_chunks`]), read one at a time.
pub enum PartInputs<'a> {
    /// The part's payload ([`crate::tabulate::parts::plan_parts`]).
    Payload(&'a [u8]),
    /// The payloads of the part's chunks.
    Chunks(Box<dyn Iterator<Item = Result<Vec<u8>>> + 'a>),
}

/// What writing a part gave: its files with their sizes, and its report figures.
#[derive(Debug, Clone, PartialEq)]
pub struct PartSummary {
    /// Part number.
    pub part: usize,
    /// Cells written.
    pub cells: usize,
    /// Files written, relative to the output, with their sizes in bytes.
    pub files: Vec<(String, u64)>,
    /// Report figures of the part.
    pub tally: Tally,
}

/// Rolls up part `part` of table `task` from its payload `data`, applies the primary rules and
/// writes its two files into the staging directory (privately, then renamed into place).
pub fn write_part(task: &PartTask, part: usize, inputs: PartInputs<'_>) -> Result<PartSummary> {
    if task.root.starts_with("s3://") {
        // Written here, then uploaded below the run's prefix (one PUT per file: atomic).
        let local = tempfile::Builder::new()
            .prefix("sdcflow-part-")
            .tempdir()
            .map_err(|e| Error::io(std::env::temp_dir(), e))?;
        std::fs::write(local.path().join(OUTPUT_MARKER), "").map_err(|e| Error::io(local.path(), e))?;
        let here = PartTask { root: local.path().display().to_string(), ..task.clone() };
        let summary = write_part(&here, part, inputs)?;
        let store = crate::store::s3_store(&task.root)?.ok_or_else(|| Error::Internal("no store".into()))?;
        let prefix = url::Url::parse(&task.root).map_err(|e| Error::data(&task.root, e.to_string()))?;
        let prefix = prefix.path().trim_matches('/').to_string();
        let handle = tokio::runtime::Handle::try_current().map_err(|e| Error::Internal(e.to_string()))?;
        for (rel, _) in &summary.files {
            let bytes = std::fs::read(local.path().join(rel)).map_err(|e| Error::io(local.path().join(rel), e))?;
            let key = object_store::path::Path::from(format!("{prefix}/{rel}").as_str());
            tokio::task::block_in_place(|| {
                handle.block_on(object_store::ObjectStoreExt::put(store.as_ref(), &key, bytes.into()))
            })
            .map_err(|e| Error::Store { url: format!("{}/{rel}", task.root), message: e.to_string() })?;
        }
        return Ok(summary);
    }
    let safety = Safety::parse(&task.safety).map_err(|e| Error::Internal(format!("safety rules in a part: {e}")))?;
    let root = Path::new(&task.root);
    if !root.join(OUTPUT_MARKER).is_file() {
        return Err(Error::Output {
            location: task.root.clone(),
            message: "the run's staging directory is not visible here: on a remote cluster the output must be \
                      on a filesystem every executor mounts"
                .into(),
        });
    }
    let stamp = format!(
        "{}-{:05}-{}-{}",
        task.table.replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
        part,
        std::process::id(),
        chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)
    );
    let tmp = root.join(PARTS_TMP).join(stamp);
    std::fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    let (pq, csv) = (tmp.join("cells.parquet"), tmp.join("published.csv"));
    let l = &task.layout;
    let mut writer = TableWriter::create_at(pq.clone(), csv.clone(), &task.explanatory, &l.dims, l.weighted)?;
    let mut sink = |cells| writer.write(&assess(&safety, cells));
    match inputs {
        PartInputs::Payload(data) => roll_up_part(l, data, &mut sink)?,
        PartInputs::Chunks(mut chunks) => roll_up_chunks(l, &mut chunks, &mut sink)?,
    }
    let tally = writer.finish()?;
    let mut files = Vec::with_capacity(2);
    for (from, rel) in [pq, csv].into_iter().zip(part_files(&task.table, part)) {
        let to = root.join(&rel);
        let dir = to.parent().expect("part files are below a folder");
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        std::fs::rename(&from, &to).map_err(|e| Error::io(&to, e))?;
        let size = std::fs::metadata(&to).map_err(|e| Error::io(&to, e))?.len();
        files.push((rel, size));
    }
    let _ = std::fs::remove_dir(&tmp);
    Ok(PartSummary { part, cells: tally.cells, files, tally })
}

/// Checks that the staging directory `root` holds exactly the parts the summaries report
/// ([`check_listing`]), after removing the unfinished parts of killed tasks.
pub fn check_parts(root: &Path, table: &str, parts: usize, summaries: &[(PartSummary, String)]) -> Result<Tally> {
    let tmp = root.join(PARTS_TMP);
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    }
    let mut listing = BTreeMap::new();
    let mut rows = BTreeMap::new();
    for dir in part_dirs(table) {
        for f in files_in(&root.join(&dir))? {
            let rel = format!("{dir}/{}", f.file_name().unwrap_or_default().to_string_lossy());
            listing.insert(rel.clone(), std::fs::metadata(&f).map_err(|e| Error::io(&f, e))?.len());
            if rel.ends_with(".parquet") {
                let f = std::fs::File::open(&f).map_err(|e| Error::io(&f, e))?;
                rows.insert(rel, parquet_rows(f)?);
            }
        }
    }
    check_listing(table, parts, summaries, &listing, &rows)
}

/// [`check_parts`] for parts below an object-store run prefix `root` (`s3://…/runs/RUN`):
/// the listing and each cells file's footer come from the store.
pub async fn check_remote_parts(
    root: &str,
    table: &str,
    parts: usize,
    summaries: &[(PartSummary, String)],
) -> Result<Tally> {
    use futures::TryStreamExt;
    use object_store::ObjectStoreExt;
    let store = crate::store::s3_store(root)?.ok_or_else(|| Error::Internal(format!("no store for {root}")))?;
    let url = url::Url::parse(root).map_err(|e| Error::data(root, e.to_string()))?;
    let prefix = url.path().trim_matches('/').to_string();
    let err = |e: object_store::Error| Error::Store { url: root.to_string(), message: e.to_string() };
    let mut listing = BTreeMap::new();
    let mut rows = BTreeMap::new();
    for dir in part_dirs(table) {
        let p = object_store::path::Path::from(format!("{prefix}/{dir}").as_str());
        let objects: Vec<_> = store.list(Some(&p)).try_collect().await.map_err(err)?;
        for o in objects {
            let rel = o.location.as_ref().strip_prefix(&format!("{prefix}/")).unwrap_or_default().to_string();
            listing.insert(rel.clone(), o.size);
            if rel.ends_with(".parquet") {
                let bytes = store.get(&o.location).await.map_err(err)?.bytes().await.map_err(err)?;
                rows.insert(rel, parquet_rows(bytes)?);
            }
        }
    }
    check_listing(table, parts, summaries, &listing, &rows)
}

/// The client's check of a table's parts: one summary per part, in order, each naming its
/// part's files; `listing` (every file found in the table's part folders, relative to the
/// output, with its size) holds exactly the reported files with the reported sizes; `rows`
/// (each cells file's Parquet footer) holds the reported cell counts. Merges the report figures
/// in part order. Any mismatch refuses the table (nothing is published).
pub fn check_listing(
    table: &str,
    parts: usize,
    summaries: &[(PartSummary, String)],
    listing: &BTreeMap<String, u64>,
    rows: &BTreeMap<String, u64>,
) -> Result<Tally> {
    let refuse =
        |why: String| Error::Protection { table: table.to_string(), message: format!("{why}; nothing is published") };
    if summaries.len() != parts {
        return Err(refuse(format!("{} part results for {parts} parts", summaries.len())));
    }
    let mut expected: BTreeMap<&str, u64> = BTreeMap::new();
    let mut tally: Option<Tally> = None;
    for (i, (s, worker)) in summaries.iter().enumerate() {
        let names: Vec<String> = s.files.iter().map(|f| f.0.clone()).collect();
        if s.part != i || names != part_files(table, i) {
            return Err(refuse(format!("refused the result of {worker} for part {i}: it reports files {names:?}")));
        }
        for (rel, size) in &s.files {
            let found = listing.get(rel);
            if found != Some(size) {
                return Err(refuse(format!(
                    "refused the result of {worker} for part {i}: {rel} has {} bytes, the executor reported {size}",
                    found.map_or("no file, 0".to_string(), |n| n.to_string())
                )));
            }
            expected.insert(rel, *size);
        }
        let found = rows.get(&s.files[0].0).copied().unwrap_or(0);
        if found != s.cells as u64 || s.tally.cells != s.cells {
            return Err(refuse(format!(
                "refused the result of {worker} for part {i}: {found} rows in its cells file, {} cells reported",
                s.cells
            )));
        }
        match &mut tally {
            None => tally = Some(s.tally.clone()),
            Some(t) => merge_tally(t, &s.tally),
        }
    }
    if let Some(stray) = listing.keys().find(|f| !expected.contains_key(f.as_str())) {
        return Err(refuse(format!("{stray} was written but no part reports it")));
    }
    tally.ok_or_else(|| Error::Internal(format!("table `{table}` has no parts")))
}

/// Rows of a Parquet file, from its footer.
fn parquet_rows<R: parquet::file::reader::ChunkReader + 'static>(r: R) -> Result<u64> {
    use parquet::file::reader::FileReader;
    let r = parquet::file::reader::SerializedFileReader::new(r)?;
    Ok(r.metadata().file_metadata().num_rows().max(0) as u64)
}

fn files_in(dir: &Path) -> Result<Vec<PathBuf>> {
    match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(Error::io(dir, e)),
        Ok(entries) => entries.map(|e| e.map(|e| e.path()).map_err(|e| Error::io(dir, e))).collect(),
    }
}

/// Adds the figures of a later part to `t` (same table, so same levels and heat map axes).
pub fn merge_tally(t: &mut Tally, o: &Tally) {
    t.cells += o.cells;
    for (k, v) in &o.status_counts {
        *t.status_counts.entry(k).or_default() += v;
    }
    t.total_abs += o.total_abs;
    t.suppressed_abs += o.suppressed_abs;
    for (a, b) in t.by_level.iter_mut().zip(&o.by_level) {
        for (x, y) in a.iter_mut().zip(b) {
            let LevelTally { level: _, cells, suppressed, value, suppressed_value } = y;
            x.cells += cells;
            x.suppressed += suppressed;
            x.value += value;
            x.suppressed_value += suppressed_value;
        }
    }
    if let (Some(h), Some(o)) = (t.heat_map.as_mut(), o.heat_map.as_ref()) {
        for (a, b) in h.status.iter_mut().zip(&o.status) {
            if !b.is_empty() {
                a.clone_from(b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy::{Hierarchy, HierarchySpec};
    use crate::tabulate::lattice::{Lattice, Pairs, Share};
    use crate::tabulate::parts::{plan_parts, Inputs};

    /// Parts written one by one pass the client's checks, and their figures merge to those of
    /// the whole table; a part that changed after its report, a missing part, a stray file and
    /// a wrong row count are each refused.
    #[test]
    fn parts_commit_only_as_reported() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let dims = vec![
            Hierarchy::resolve("geo", &HierarchySpec::Levels(vec![1, 1]), &s(&["1a", "1b", "2a", "3c"])).unwrap(),
            Hierarchy::resolve("sex", &HierarchySpec::Flat, &s(&["f", "m"])).unwrap(),
        ];
        let lat = Lattice::new(&dims).unwrap();
        let mut pairs = Pairs::default();
        for (i, (g, x)) in [(2u32, 1u32), (3, 2), (5, 1), (7, 2), (3, 1), (7, 1)].into_iter().enumerate() {
            pairs.leaf.push(lat.key(&[g, x]));
            pairs.contributor.push(i as u32 % 4);
            pairs.share.push(Share { value: 1_000_000 * (i as i128 + 1), weight: 0, records: 1 });
        }
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::write(root.join(OUTPUT_MARKER), "").unwrap();
        let layout = PartLayout { dims: dims.clone(), top_n: 2, weighted: false };
        let task = PartTask {
            table: "t".into(),
            explanatory: vec!["geo".into(), "sex".into()],
            layout: layout.clone(),
            safety: "FREQ(3,10)".into(),
            root: root.display().to_string(),
            chunks: None,
        };
        let mut payloads = Vec::new();
        let n = plan_parts::<2>(&lat, &Inputs::Pairs(&pairs), 1, &mut |_, p| {
            payloads.push(p);
            Ok(())
        })
        .unwrap();
        assert!(n >= 3, "{n} parts");
        let summaries: Vec<(PartSummary, String)> = payloads
            .iter()
            .enumerate()
            .map(|(i, p)| (write_part(&task, i, PartInputs::Payload(p)).unwrap(), "w".to_string()))
            .collect();
        // A killed task's leftovers are removed, not published.
        std::fs::create_dir_all(root.join(PARTS_TMP).join("dead")).unwrap();
        let merged = check_parts(root, "t", n, &summaries).unwrap();
        assert!(!root.join(PARTS_TMP).exists());
        let whole = crate::tabulate::parts::collect_part(&layout, &{
            let mut all = Vec::new();
            plan_parts::<2>(&lat, &Inputs::Pairs(&pairs), u64::MAX, &mut |_, p| {
                all = p;
                Ok(())
            })
            .unwrap();
            all
        })
        .unwrap();
        assert_eq!(merged.cells, whole.len());
        assert_eq!(merged.by_level[0].iter().map(|l| l.cells).sum::<usize>(), whole.len());
        assert_eq!(merged.count("U") + merged.count("S"), whole.len());

        assert!(check_parts(root, "t", n + 1, &summaries).is_err(), "a missing part");
        let mut wrong = summaries.clone();
        wrong[1].0.cells += 1;
        wrong[1].0.tally.cells += 1;
        assert!(check_parts(root, "t", n, &wrong).unwrap_err().to_string().contains("cells reported"));
        let csv = root.join(&summaries[0].0.files[1].0);
        let mut bytes = std::fs::read(&csv).unwrap();
        bytes.extend_from_slice(b"1,f,42\n");
        std::fs::write(&csv, &bytes).unwrap();
        let e = check_parts(root, "t", n, &summaries).unwrap_err().to_string();
        assert!(e.contains("refused the result of w for part 0") && e.contains("nothing is published"), "{e}");
        bytes.truncate(bytes.len() - 7);
        std::fs::write(&csv, &bytes).unwrap();
        check_parts(root, "t", n, &summaries).unwrap();
        std::fs::write(root.join("publish/t/published/part-99999.csv"), "x").unwrap();
        assert!(check_parts(root, "t", n, &summaries).unwrap_err().to_string().contains("no part reports it"));
    }
}
