//! Object stores for cluster processes: `s3://` buckets created on first use from the `AWS_*`
//! environment, exactly as the client does in [`crate::engine::s3_store`].
//!
//! The client registers the bucket of the input and the output explicitly, but the scheduler
//! (which lists files while planning a scan) and the executors (which read the files) cannot
//! know the buckets of a job in advance. A registry that builds a store for any `s3://bucket`
//! it is asked for solves this without configuration beyond the usual credentials (in
//! Kubernetes: the Secret mounted as environment, see `deploy/`).

use std::sync::Arc;

use datafusion::common::{DataFusionError, Result};
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use object_store::ObjectStore;
use url::Url;

/// An object-store registry that creates `s3://` stores from the environment on demand.
#[derive(Debug, Default)]
pub struct EnvObjectStoreRegistry {
    inner: DefaultObjectStoreRegistry,
}

impl ObjectStoreRegistry for EnvObjectStoreRegistry {
    fn register_store(&self, url: &Url, store: Arc<dyn ObjectStore>) -> Option<Arc<dyn ObjectStore>> {
        self.inner.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        self.inner.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        match self.inner.get_store(url) {
            Ok(s) => Ok(s),
            Err(e) if url.scheme() == "s3" => {
                let store = crate::engine::s3_store(url.as_str())
                    .map_err(|e| DataFusionError::External(Box::new(e)))?
                    .ok_or(e)?;
                let bucket = Url::parse(&format!("s3://{}", url.host_str().unwrap_or_default()))
                    .map_err(|e| DataFusionError::External(Box::new(e)))?;
                self.inner.register_store(&bucket, store.clone());
                Ok(store)
            }
            Err(e) => Err(e),
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
