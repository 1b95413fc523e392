//! Storage backends: the object store of an `s3://` location, built from the usual `AWS_*`
//! environment ([`s3_store`]), for the client (inputs, outputs, solver scratch) and for cluster
//! processes alike.
//!
//! Local directories that hold unprotected cells (output staging, solver scratch) are registered
//! here ([`register_active`]) so that a signal removes them ([`remove_active`]).
//!
//! Cluster processes get their stores from a registry: `s3://` buckets created on first use.
//!
//! The client registers the bucket of the input and the output explicitly, but the scheduler
//! (which lists files while planning a scan) and the executors (which read the files) cannot
//! know the buckets of a job in advance. A registry that builds a store for any `s3://bucket`
//! it is asked for solves this without configuration beyond the usual credentials (in
//! Kubernetes: the Secret mounted as environment, see `deploy/`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use datafusion::common::DataFusionError;
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use object_store::ObjectStore;
use url::Url;

use crate::error::{Error, Result};

/// An object-store registry that creates `s3://` stores from the environment on demand.
#[derive(Debug, Default)]
pub struct EnvObjectStoreRegistry {
    inner: DefaultObjectStoreRegistry,
}

impl ObjectStoreRegistry for EnvObjectStoreRegistry {
    fn register_store(&self, url: &Url, store: Arc<dyn ObjectStore>) -> Option<Arc<dyn ObjectStore>> {
        self.inner.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> datafusion::common::Result<Arc<dyn ObjectStore>> {
        self.inner.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> datafusion::common::Result<Arc<dyn ObjectStore>> {
        match self.inner.get_store(url) {
            Ok(s) => Ok(s),
            Err(e) if url.scheme() == "s3" => {
                let store = s3_store(url.as_str()).map_err(|e| DataFusionError::External(Box::new(e)))?.ok_or(e)?;
                let bucket = Url::parse(&format!("s3://{}", url.host_str().unwrap_or_default()))
                    .map_err(|e| DataFusionError::External(Box::new(e)))?;
                self.inner.register_store(&bucket, store.clone());
                Ok(store)
            }
            Err(e) => Err(e),
        }
    }
}

/// The object store for an `s3://` location (`None` for local paths).
pub fn s3_store(location: &str) -> Result<Option<Arc<dyn object_store::ObjectStore>>> {
    if !location.starts_with("s3://") {
        return Ok(None);
    }
    let url = bucket_url(location)?;
    let bucket = url.host_str().unwrap_or_default().to_string();
    let mut b = object_store::aws::AmazonS3Builder::from_env().with_bucket_name(&bucket);
    if let Ok(ep) = std::env::var("AWS_ENDPOINT_URL").or_else(|_| std::env::var("AWS_ENDPOINT")) {
        b = b.with_endpoint(&ep).with_allow_http(ep.starts_with("http://"));
    }
    if std::env::var("AWS_REGION").is_err() && std::env::var("AWS_DEFAULT_REGION").is_err() {
        b = b.with_region("us-east-1");
    }
    let store = b.build().map_err(|e| Error::Store { url: location.into(), message: e.to_string() })?;
    Ok(Some(Arc::new(store)))
}

/// The `s3://bucket` URL of an `s3://` location (the key an object store is registered under).
pub fn bucket_url(location: &str) -> Result<Url> {
    let u = Url::parse(location).map_err(|e| Error::data(location, format!("not a valid URL: {e}")))?;
    if u.host_str().is_none_or(str::is_empty) {
        return Err(Error::data(location, "an s3:// URL needs a bucket name"));
    }
    Url::parse(&format!("s3://{}", u.host_str().unwrap_or_default())).map_err(|e| Error::Internal(e.to_string()))
}

/// Private local directories of this process (output staging, solver scratch) that hold
/// unprotected cells: removed when a signal ends the run.
static ACTIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Registers a directory of this process that must not outlive an interrupted run.
pub fn register_active(dir: &Path) {
    if let Ok(mut a) = ACTIVE.lock() {
        a.push(dir.to_path_buf());
    }
}

/// Forgets a directory registered with [`register_active`] (committed or removed).
pub fn unregister_active(dir: &Path) {
    if let Ok(mut a) = ACTIVE.lock() {
        a.retain(|d| d != dir);
    }
}

/// Removes every registered staging or scratch directory (called when a signal ends the run).
pub fn remove_active() {
    let dirs = ACTIVE.lock().map(|mut a| std::mem::take(&mut *a)).unwrap_or_default();
    for d in dirs {
        // A writer thread may still add a file while the tree is removed: try twice.
        if std::fs::remove_dir_all(&d).is_err() {
            let _ = std::fs::remove_dir_all(&d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_buckets_are_created_on_demand_and_files_still_work() {
        let r = EnvObjectStoreRegistry::default();
        assert!(r.get_store(&Url::parse("file:///tmp/x").unwrap()).is_ok());
        let a = r.get_store(&Url::parse("s3://census/micro/part-0.parquet").unwrap()).unwrap();
        let b = r.get_store(&Url::parse("s3://census/other").unwrap()).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "one store per bucket, cached");
        assert!(r.get_store(&Url::parse("hdfs://nn:8020/x").unwrap()).is_err());
    }
}
