//! Writing results atomically: nothing partial is ever left in the output location.
//!
//! Every file of a run is first written into a private staging directory. Only when all of them
//! are complete are they moved into place: by a directory rename on local disk (the previous
//! output, if any, is replaced as a whole), or by uploading each object to its final key on an
//! object store — each PUT is atomic, `report.json` goes last as the commit marker, and objects
//! already uploaded are deleted again if a later upload fails.

use std::path::{Path, PathBuf};

use object_store::path::Path as StorePath;
use object_store::{ObjectStoreExt, PutPayload};

use crate::error::{Error, Result};

/// A staging area for one run's outputs.
#[derive(Debug)]
pub struct Staging {
    dir: PathBuf,
    target: String,
    committed: bool,
}

impl Staging {
    /// Creates the staging directory for `target` (a local directory or `s3://bucket/prefix`).
    pub fn new(target: &str) -> Result<Self> {
        let stamp = format!("{}-{}", std::process::id(), chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0));
        let dir = if is_remote(target) {
            std::env::temp_dir().join(format!("sdcflow-staging-{stamp}"))
        } else {
            let t = Path::new(target.trim_end_matches('/'));
            let parent = t.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
            let name = t.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_else(|| "out".into());
            parent.join(format!(".{name}.sdcflow-staging-{stamp}"))
        };
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        Ok(Self { dir, target: target.to_string(), committed: false })
    }

    /// The staging directory: write every output below it.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Moves the staged outputs into the target location.
    pub async fn commit(mut self) -> Result<()> {
        if is_remote(&self.target) {
            upload(&self.dir, &self.target).await?;
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            let target = PathBuf::from(self.target.trim_end_matches('/'));
            let old = self.dir.with_extension("old");
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
        self.committed = true;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn is_remote(target: &str) -> bool {
    target.contains("://")
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

async fn upload(dir: &Path, target: &str) -> Result<()> {
    let store = crate::engine::s3_store(target)?.ok_or_else(|| Error::Internal(format!("no store for {target}")))?;
    let url = url::Url::parse(target).map_err(|e| Error::data(target, e.to_string()))?;
    let prefix = url.path().trim_matches('/').to_string();
    let mut files = files_below(dir)?;
    // report.json last: its presence marks a complete output.
    files.sort_by_key(|p| (p.file_name().is_some_and(|n| n == "report.json"), p.clone()));
    let mut done: Vec<StorePath> = Vec::new();
    for f in files {
        let rel = f.strip_prefix(dir).map_err(|e| Error::Internal(e.to_string()))?;
        let key = if prefix.is_empty() {
            rel.to_string_lossy().to_string()
        } else {
            format!("{prefix}/{}", rel.to_string_lossy())
        };
        let bytes = std::fs::read(&f).map_err(|e| Error::io(&f, e))?;
        let loc = StorePath::from(key.as_str());
        if let Err(e) = store.put(&loc, PutPayload::from(bytes)).await {
            for d in &done {
                let _ = store.delete(d).await;
            }
            return Err(Error::Store { url: format!("{target} ({key})"), message: e.to_string() });
        }
        done.push(loc);
    }
    Ok(())
}

/// Reads a whole object or local file (used by `audit` and tests).
pub async fn read_location(location: &str) -> Result<Vec<u8>> {
    if let Some(store) = crate::engine::s3_store(location)? {
        let url = url::Url::parse(location).map_err(|e| Error::data(location, e.to_string()))?;
        let key = StorePath::from(url.path().trim_matches('/'));
        let r = store.get(&key).await.map_err(|e| Error::Store { url: location.into(), message: e.to_string() })?;
        let b = r.bytes().await.map_err(|e| Error::Store { url: location.into(), message: e.to_string() })?;
        Ok(b.to_vec())
    } else {
        std::fs::read(location).map_err(|e| Error::io(location, e))
    }
}
