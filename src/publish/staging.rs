//! Writing results atomically, and only where sdcflow may write.
//!
//! Why: an output location is somebody's directory or bucket prefix. sdcflow only ever
//! replaces what it wrote itself, and readers only ever see a complete output — the previous
//! one or the new one, never a mix.
//!
//! - **Where:** [`check_target`] runs before any work. It refuses (exit 2, nothing touched) a
//!   path that is a file, a non-empty directory or prefix without sdcflow's marker (a previous
//!   sdcflow output carries [`OUTPUT_MARKER`] locally and [`MANIFEST`] on an object store), and
//!   an output that equals, contains or lies inside one of the job's inputs.
//! - **Local disk:** every file is written into a private staging directory beside the target
//!   (`.NAME.sdcflow-staging-PID-START-NANOS`), then moved into place by directory renames. The
//!   staging name carries the process id and start time, so staging left by a killed run is
//!   recognised and removed by the next run; [`crate::store::remove_active`] removes this
//!   process's staging on SIGINT/SIGTERM.
//! - **Object store:** a run uploads below its own prefix `OUT/runs/RUN/` and publishes it with
//!   one last PUT of `OUT/_sdcflow_manifest.json`, which names the run and its files. Readers
//!   follow the manifest ([`read_location`] does). A failed or killed upload leaves the previous
//!   manifest — the previous complete output — in force; objects of older runs are deleted only
//!   after the new manifest is written. Files other processes wrote below the run's prefix (the
//!   parts of primaries-only tables, [`Staging::parts_root`]) are named in the same manifest.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use futures::TryStreamExt;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use crate::error::{Error, Result};
use crate::job::Job;
use crate::store::{register_active, unregister_active};

/// File in every local output directory sdcflow writes: only a directory holding it (or an
/// empty one) may be replaced by a run.
pub const OUTPUT_MARKER: &str = ".sdcflow-output";

/// Object at an object-store output prefix naming the run readers should see.
pub const MANIFEST: &str = "_sdcflow_manifest.json";

fn refuse(target: &str, message: impl Into<String>) -> Error {
    Error::Output { location: target.to_string(), message: message.into() }
}

/// Checks, before any work, that `target` may receive the outputs of `job`.
pub async fn check_target(target: &str, job: &Job) -> Result<()> {
    let inputs = job_inputs(job);
    if is_remote(target) {
        return check_remote_target(target, &inputs).await;
    }
    let t = Path::new(target.trim_end_matches('/'));
    if t.as_os_str().is_empty() {
        return Err(refuse(target, "empty output location"));
    }
    let resolved = resolve(t);
    for input in inputs.iter().filter(|i| !is_remote(i)) {
        let i = resolve(Path::new(input));
        if resolved == i || i.starts_with(&resolved) {
            return Err(refuse(
                target,
                format!("contains the input {input}: replacing it would delete the input; choose another output"),
            ));
        }
        if resolved.starts_with(&i) {
            return Err(refuse(target, format!("lies inside the input {input}; choose an output outside it")));
        }
    }
    check_local_replaceable(target, t)
}

/// A local target may be missing, an empty directory or a previous sdcflow output.
fn check_local_replaceable(target: &str, t: &Path) -> Result<()> {
    let meta = match std::fs::symlink_metadata(t) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(t, e)),
    };
    if !meta.is_dir() {
        return Err(refuse(target, "is a file (or link), not a directory: sdcflow never replaces a file"));
    }
    if t.join(OUTPUT_MARKER).is_file() {
        return Ok(());
    }
    let mut entries = std::fs::read_dir(t).map_err(|e| Error::io(t, e))?;
    if entries.next().is_none() {
        return Ok(());
    }
    Err(refuse(
        target,
        format!(
            "is a directory with files that sdcflow did not write (no {OUTPUT_MARKER} marker); \
             sdcflow only replaces its own previous output: choose a new or empty directory"
        ),
    ))
}

async fn check_remote_target(target: &str, inputs: &[String]) -> Result<()> {
    let (store, prefix) = store_and_prefix(target)?;
    let bucket = bucket_of(target);
    for input in inputs.iter().filter(|i| is_remote(i)) {
        if bucket_of(input) != bucket {
            continue;
        }
        let (_, ip) = store_and_prefix(input)?;
        if under(&ip, &prefix) || under(&prefix, &ip) {
            return Err(refuse(target, format!("overlaps the input {input}; choose a prefix outside it")));
        }
    }
    let manifest = child(&prefix, MANIFEST);
    match store.head(&manifest).await {
        Ok(_) => return Ok(()),
        Err(object_store::Error::NotFound { .. }) => {}
        Err(e) => return Err(Error::Store { url: target.into(), message: e.to_string() }),
    }
    let list_prefix = StorePath::from(prefix.as_str());
    let first = store
        .list(if prefix.is_empty() { None } else { Some(&list_prefix) })
        .try_next()
        .await
        .map_err(|e| Error::Store { url: target.into(), message: e.to_string() })?;
    if let Some(o) = first {
        return Err(refuse(
            target,
            format!(
                "holds objects that sdcflow did not write (e.g. {}; no {MANIFEST}): choose a new prefix",
                o.location
            ),
        ));
    }
    Ok(())
}

/// Local files and locations a job reads (the output must stay clear of them).
fn job_inputs(job: &Job) -> Vec<String> {
    let mut v = vec![glob_root(&job.microdata)];
    v.extend(job.sql.iter().map(|p| p.display().to_string()));
    for t in &job.tables {
        if let Some(crate::job::TableSource::SqlFile(f)) = &t.source {
            v.push(f.display().to_string());
        }
        if let Some(a) = &t.apriori {
            v.push(a.display().to_string());
        }
    }
    for h in job.hierarchies.values() {
        match h {
            crate::hierarchy::HierarchySpec::Hrc { path, .. } => v.push(path.display().to_string()),
            crate::hierarchy::HierarchySpec::Mapping(p) => v.push(p.display().to_string()),
            _ => {}
        }
    }
    if job.path.exists() {
        v.push(job.path.display().to_string());
    }
    v
}

/// The part of a location before its first glob character, up to a path separator.
fn glob_root(location: &str) -> String {
    match location.find(['*', '?', '[', '{']) {
        Some(i) => location[..i].rsplit_once('/').map(|(d, _)| d.to_string()).unwrap_or_else(|| ".".into()),
        None => location.to_string(),
    }
}

/// An absolute path with `.`/`..` removed and existing ancestors' links resolved, so that two
/// spellings of one location compare equal even when the location does not exist yet.
fn resolve(p: &Path) -> PathBuf {
    let abs = if p.is_absolute() { p.to_path_buf() } else { std::env::current_dir().unwrap_or_default().join(p) };
    let mut lexical = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            c => lexical.push(c),
        }
    }
    let mut existing = lexical.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match existing.file_name() {
            Some(n) => rest.push(n.to_os_string()),
            None => break,
        }
        existing.pop();
    }
    let mut out = existing.canonicalize().unwrap_or(existing);
    for n in rest.into_iter().rev() {
        out.push(n);
    }
    out
}

/// The id of this process run: pid and start time (clock ticks since boot, from /proc), so that
/// a recycled pid is not taken for the run that left a staging directory.
fn process_tag() -> String {
    format!("{}-{}", std::process::id(), start_ticks(std::process::id()).unwrap_or(0))
}

fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Field 22; the command name (field 2) may contain spaces, so count after its ')'.
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process that wrote tag `pid-start` is gone. Without /proc nothing is declared
/// dead (never delete what may still be in use).
fn tag_is_dead(pid: &str, start: &str) -> bool {
    if !Path::new("/proc/self/stat").exists() {
        return false;
    }
    let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else { return false };
    start_ticks(pid) != Some(start)
}

/// Removes staging and replaced-output directories of `name` in `parent` left by dead runs.
/// Only directories with sdcflow's name pattern *and* its marker inside are touched.
fn remove_stale(parent: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().to_string();
        let rest = [".sdcflow-staging-", ".sdcflow-old-"]
            .iter()
            .find_map(|k| file.strip_prefix(&format!(".{name}{k}")).map(str::to_string));
        let Some(rest) = rest else { continue };
        let parts: Vec<&str> = rest.split('-').collect();
        if parts.len() != 3 || !tag_is_dead(parts[0], parts[1]) {
            continue;
        }
        let p = e.path();
        if p.is_dir() && p.join(OUTPUT_MARKER).is_file() {
            let _ = std::fs::remove_dir_all(&p);
        }
    }
}

/// A staging area for one run's outputs.
#[derive(Debug)]
pub struct Staging {
    dir: PathBuf,
    target: String,
    committed: bool,
    /// Object store: the run's id (its objects go below `OUT/runs/RUN/`).
    run: String,
    /// Object store: files already below the run's prefix (written by the executors), with
    /// their sizes, for the manifest.
    remote_files: BTreeMap<String, u64>,
}

impl Staging {
    /// Creates the staging directory for `target` (a local directory or `s3://bucket/prefix`),
    /// after removing staging left behind by dead runs. Call [`check_target`] first.
    pub fn new(target: &str) -> Result<Self> {
        let stamp = format!("{}-{}", process_tag(), chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0));
        let dir = if is_remote(target) {
            std::env::temp_dir().join(format!("sdcflow-staging-{stamp}"))
        } else {
            let (parent, name) = parent_and_name(target);
            std::fs::create_dir_all(&parent).map_err(|e| Error::io(&parent, e))?;
            remove_stale(&parent, &name);
            parent.join(format!(".{name}.sdcflow-staging-{stamp}"))
        };
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        register_active(&dir);
        let marker = dir.join(OUTPUT_MARKER);
        std::fs::write(&marker, "written by sdcflow; a directory holding this file may be replaced by sdcflow\n")
            .map_err(|e| Error::io(&marker, e))?;
        let run = format!("{}-{}", chrono::Utc::now().format("%Y%m%dT%H%M%S%.9fZ"), std::process::id());
        Ok(Self { dir, target: target.to_string(), committed: false, run, remote_files: BTreeMap::new() })
    }

    /// Where other processes (the executors) write output files of this run: the staging
    /// directory, absolute, or on an object store the run's prefix `OUT/runs/RUN`. Files
    /// written below an object-store root must be declared with [`Self::add_remote_files`].
    pub fn parts_root(&self) -> Result<String> {
        if is_remote(&self.target) {
            return Ok(format!("{}/runs/{}", self.target.trim_end_matches('/'), self.run));
        }
        let dir = std::fs::canonicalize(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
        Ok(dir.display().to_string())
    }

    /// Declares files (relative to the output, with their sizes) that were written below an
    /// object-store [`Self::parts_root`]; the commit names them in the manifest.
    pub fn add_remote_files(&mut self, files: impl IntoIterator<Item = (String, u64)>) {
        self.remote_files.extend(files);
    }

    /// The staging directory: write every output below it.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Gives up the run: removes the staging directory and, on an object store, everything
    /// below the run's prefix (what executors wrote there). Best effort: what remains is
    /// unreferenced, and removed by the next run that publishes to the same output.
    pub async fn abort(self) {
        if is_remote(&self.target) {
            if let Ok((store, prefix)) = store_and_prefix(&self.target) {
                let mine = child(&prefix, &format!("runs/{}", self.run));
                let objects: Vec<_> = store.list(Some(&mine)).try_collect().await.unwrap_or_default();
                for o in objects {
                    let _ = store.delete(&o.location).await;
                }
            }
        }
        drop(self);
    }

    /// Moves the staged outputs into the target location: the last step of a run.
    pub async fn commit(mut self) -> Result<()> {
        if is_remote(&self.target) {
            upload_and_publish(&self.dir, &self.target, &self.run, &self.remote_files).await?;
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            let target = PathBuf::from(self.target.trim_end_matches('/'));
            // The location may have changed while the run worked.
            check_local_replaceable(&self.target, &target)?;
            let (parent, name) = parent_and_name(&self.target);
            let stamp = self.dir.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            let old = parent.join(stamp.replace(".sdcflow-staging-", ".sdcflow-old-"));
            debug_assert!(old.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&format!(".{name}"))));
            let had_old = target.exists();
            if had_old {
                std::fs::rename(&target, &old).map_err(|e| Error::io(&target, e))?;
            }
            if let Err(e) = std::fs::rename(&self.dir, &target) {
                if had_old {
                    let _ = std::fs::rename(&old, &target);
                }
                return Err(Error::io(&target, e));
            }
            if had_old {
                let _ = std::fs::remove_dir_all(&old);
            }
        }
        unregister_active(&self.dir);
        self.committed = true;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
            unregister_active(&self.dir);
        }
    }
}

fn parent_and_name(target: &str) -> (PathBuf, String) {
    let t = Path::new(target.trim_end_matches('/'));
    let parent = t.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
    let name = t.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_else(|| "out".into());
    (parent, name)
}

fn is_remote(target: &str) -> bool {
    target.contains("://")
}

fn bucket_of(url: &str) -> String {
    url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_string)).unwrap_or_default()
}

fn store_and_prefix(target: &str) -> Result<(std::sync::Arc<dyn ObjectStore>, String)> {
    let store = crate::store::s3_store(target)?.ok_or_else(|| Error::Internal(format!("no store for {target}")))?;
    let url = url::Url::parse(target).map_err(|e| Error::data(target, e.to_string()))?;
    Ok((store, url.path().trim_matches('/').to_string()))
}

/// Whether key prefix `a` lies at or below `b` (on `/` boundaries).
fn under(a: &str, b: &str) -> bool {
    b.is_empty() || a == b || a.starts_with(&format!("{b}/"))
}

fn child(prefix: &str, rel: &str) -> StorePath {
    if prefix.is_empty() {
        StorePath::from(rel)
    } else {
        StorePath::from(format!("{prefix}/{rel}").as_str())
    }
}

fn files_below(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(|e| Error::io(&d, e))? {
            let p = e.map_err(|e| Error::io(&d, e))?.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// What `OUT/_sdcflow_manifest.json` says: the run readers should see and its files.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Manifest {
    /// Always "sdcflow": marks the prefix as sdcflow's.
    pub written_by: String,
    /// The run's id; its objects are below `runs/RUN/`.
    pub run: String,
    /// Output files relative to the output location, with their sizes in bytes.
    pub files: BTreeMap<String, u64>,
}

impl Manifest {
    /// The key prefix (relative to the output) of this run's objects.
    pub fn root(&self) -> String {
        format!("runs/{}", self.run)
    }
}

async fn upload_and_publish(dir: &Path, target: &str, run: &str, remote: &BTreeMap<String, u64>) -> Result<()> {
    let (store, prefix) = store_and_prefix(target)?;
    let store_err =
        |key: &str, e: object_store::Error| Error::Store { url: format!("{target} ({key})"), message: e.to_string() };
    let mut manifest = Manifest { written_by: "sdcflow".into(), run: run.to_string(), files: remote.clone() };
    let root = manifest.root();
    // On failure the files written by others are removed with the uploads.
    let mut done: Vec<StorePath> = remote.keys().map(|rel| child(&prefix, &format!("{root}/{rel}"))).collect();
    for f in files_below(dir)? {
        let rel = f.strip_prefix(dir).map_err(|e| Error::Internal(e.to_string()))?.to_string_lossy().to_string();
        if rel == OUTPUT_MARKER {
            continue;
        }
        let bytes = std::fs::read(&f).map_err(|e| Error::io(&f, e))?;
        let loc = child(&prefix, &format!("{root}/{rel}"));
        let size = bytes.len() as u64;
        if let Err(e) = store.put(&loc, PutPayload::from(bytes)).await {
            // Nothing readers follow points here yet: the previous output stays in force.
            for d in &done {
                let _ = store.delete(d).await;
            }
            return Err(store_err(loc.as_ref(), e));
        }
        done.push(loc);
        manifest.files.insert(rel, size);
    }
    let json = serde_json::to_vec_pretty(&manifest).map_err(|e| Error::Internal(e.to_string()))?;
    let mloc = child(&prefix, MANIFEST);
    if let Err(e) = store.put(&mloc, PutPayload::from(json)).await {
        for d in &done {
            let _ = store.delete(d).await;
        }
        return Err(store_err(mloc.as_ref(), e));
    }
    // Published. Objects of earlier (or killed) runs are no longer reachable: remove them.
    let runs = child(&prefix, "runs");
    let mine = child(&prefix, &root);
    let stale: Vec<StorePath> = store
        .list(Some(&runs))
        .try_filter_map(|o| {
            let keep = o.location.as_ref().starts_with(&format!("{}/", mine.as_ref()));
            futures::future::ready(Ok((!keep).then_some(o.location)))
        })
        .try_collect()
        .await
        .unwrap_or_default();
    for s in stale {
        let _ = store.delete(&s).await;
    }
    Ok(())
}

/// Reads a whole local file or object. An object below an sdcflow output prefix is read
/// through its manifest (`s3://b/out/publish/t/published.csv` → the published run's object).
pub async fn read_location(location: &str) -> Result<Vec<u8>> {
    let Some(store) = crate::store::s3_store(location)? else {
        return std::fs::read(location).map_err(|e| Error::io(location, e));
    };
    let url = url::Url::parse(location).map_err(|e| Error::data(location, e.to_string()))?;
    let key = url.path().trim_matches('/').to_string();
    let get = |k: StorePath| {
        let store = store.clone();
        async move {
            let r = store.get(&k).await?;
            r.bytes().await
        }
    };
    // Look for a manifest at each ancestor prefix, nearest first.
    let parts: Vec<&str> = key.split('/').collect();
    for cut in (0..parts.len()).rev() {
        let prefix = parts[..cut].join("/");
        let rel = parts[cut..].join("/");
        match get(child(&prefix, MANIFEST)).await {
            Ok(bytes) => {
                let m: Manifest = serde_json::from_slice(&bytes)
                    .map_err(|e| Error::Store { url: location.into(), message: format!("bad {MANIFEST}: {e}") })?;
                if m.files.contains_key(&rel) {
                    let b = get(child(&prefix, &format!("{}/{rel}", m.root())))
                        .await
                        .map_err(|e| Error::Store { url: location.into(), message: e.to_string() })?;
                    return Ok(b.to_vec());
                }
                break;
            }
            Err(object_store::Error::NotFound { .. }) => continue,
            Err(e) => return Err(Error::Store { url: location.into(), message: e.to_string() }),
        }
    }
    let b = get(StorePath::from(key.as_str()))
        .await
        .map_err(|e| Error::Store { url: location.into(), message: e.to_string() })?;
    Ok(b.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_equates_spellings_of_missing_paths() {
        let d = tempfile::tempdir().unwrap();
        let a = resolve(&d.path().join("x/../y/z"));
        let b = resolve(&d.path().join("y/./z"));
        assert_eq!(a, b);
        assert!(a.starts_with(d.path().canonicalize().unwrap()));
    }

    #[test]
    fn glob_roots_are_directories() {
        assert_eq!(glob_root("data/part-*.parquet"), "data");
        assert_eq!(glob_root("data/sample"), "data/sample");
        assert_eq!(glob_root("*.parquet"), ".");
    }

    #[test]
    fn key_prefixes_nest_on_separators() {
        assert!(under("a/b", "a"));
        assert!(under("a", "a"));
        assert!(!under("ab", "a"));
        assert!(under("x", ""));
    }

    #[test]
    fn stale_staging_of_dead_runs_is_removed_and_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        let mk = |n: &str, marker: bool| {
            let p = d.path().join(n);
            std::fs::create_dir_all(&p).unwrap();
            if marker {
                std::fs::write(p.join(OUTPUT_MARKER), "").unwrap();
            }
            p
        };
        // A pid that cannot be alive with that start time.
        let dead = mk(".out.sdcflow-staging-4194303-1-5", true);
        let dead_old = mk(".out.sdcflow-old-4194303-1-6", true);
        let alive = mk(&format!(".out.sdcflow-staging-{}-7", process_tag()), true);
        let foreign = mk(".out.sdcflow-staging-4194303-1-8", false);
        let other_name = mk(".other.sdcflow-staging-4194303-1-9", true);
        remove_stale(d.path(), "out");
        assert!(!dead.exists() && !dead_old.exists());
        assert!(alive.exists() && foreign.exists() && other_name.exists());
    }
}
