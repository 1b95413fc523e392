//! Executors of one cluster on one host share its cores: a task runs only while it holds one of
//! the host's slots, so four single-task executors started on a two-core machine run two tasks
//! at a time instead of time-sharing the cores four ways.
//!
//! Why: sdcflow's tasks are CPU-bound (roll-up, routing, solvers). Oversubscribed, each task
//! runs at a fraction of a core, and the switching and shared caches cost the same work 5–13 %
//! more CPU (BENCHMARKS, sessions 25–26: four single-thread executors on two cores were that
//! much slower than two). Ballista trusts each executor's declared task count and cannot see
//! that several executors share a machine. With one executor per host and `--concurrent-tasks`
//! at most the host's cores (the usual deployment), no task ever waits here.
//!
//! A slot is an exclusive `flock` on one of `slots` files in a folder private to the cluster
//! (its scheduler's address) under the temporary directory; the kernel releases it when the
//! task ends or its process dies, so a killed executor never leaks a slot. Containers each see
//! their own temporary directory and their own CPU quota, so they are not gated across.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ballista_core::serde::protobuf::{ShuffleWritePartition, TaskColumnStats};
use ballista_core::JobId;
use ballista_executor::execution_engine::{ExecutionEngine, QueryStageExecutor};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::TaskContext;
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionConfig;

/// How often a waiting task tries the slots again.
const RETRY: Duration = Duration::from_millis(20);

/// The CPU slots of one host, shared by the processes that open the same folder.
#[derive(Debug)]
pub struct HostSlots {
    files: Vec<PathBuf>,
}

/// A held slot; dropping it (closing the file) frees the slot.
#[derive(Debug)]
pub struct Slot(#[allow(dead_code)] File);

impl HostSlots {
    /// `slots` slots (at least 1) in `dir`, created if missing.
    pub fn new(dir: &Path, slots: usize) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let files = (0..slots.max(1)).map(|i| dir.join(format!("slot-{i}"))).collect();
        Ok(Self { files })
    }

    /// The slots of a cluster's executors on this host, in a folder named after the cluster's
    /// scheduler: `slots`, or as many as the cores this process may use
    /// (`available_parallelism` follows cgroup quotas).
    pub fn for_cluster(scheduler_host: &str, scheduler_port: u16, slots: Option<usize>) -> std::io::Result<Self> {
        let cores = slots.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
        let scope: String = format!("{scheduler_host}-{scheduler_port}")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '_' })
            .collect();
        Self::new(&std::env::temp_dir().join("sdcflow-host-slots").join(scope), cores)
    }

    /// A free slot, or `None` when every slot is held. Each try opens the files anew: `flock`
    /// belongs to an open file, so two tasks of one executor sharing a handle would both get it.
    pub fn try_acquire(&self) -> std::io::Result<Option<Slot>> {
        for path in &self.files {
            let file = OpenOptions::new().create(true).truncate(false).write(true).open(path)?;
            match file.try_lock() {
                Ok(()) => return Ok(Some(Slot(file))),
                Err(TryLockError::WouldBlock) => continue,
                Err(TryLockError::Error(e)) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Waits for a free slot (without blocking the runtime's thread).
    pub async fn acquire(&self) -> std::io::Result<Slot> {
        loop {
            if let Some(slot) = self.try_acquire()? {
                return Ok(slot);
            }
            tokio::time::sleep(RETRY).await;
        }
    }
}

/// An execution engine whose tasks each hold a host slot while they run.
pub struct GatedEngine {
    inner: Arc<dyn ExecutionEngine>,
    slots: Arc<HostSlots>,
}

impl GatedEngine {
    /// Gates the tasks of `inner` by `slots`.
    pub fn new(inner: Arc<dyn ExecutionEngine>, slots: HostSlots) -> Self {
        Self { inner, slots: Arc::new(slots) }
    }
}

impl ExecutionEngine for GatedEngine {
    fn create_query_stage_exec(
        &self,
        job_id: JobId,
        stage_id: usize,
        task_id: usize,
        global_output_partition_ids: Vec<usize>,
        plan: Arc<dyn ExecutionPlan>,
        work_dir: &str,
        config: &SessionConfig,
    ) -> Result<Arc<dyn QueryStageExecutor>> {
        let inner = self.inner.create_query_stage_exec(
            job_id,
            stage_id,
            task_id,
            global_output_partition_ids,
            plan,
            work_dir,
            config,
        )?;
        Ok(Arc::new(GatedStage { inner, slots: self.slots.clone() }))
    }
}

/// A query stage task that waits for a host slot before it runs.
#[derive(Debug)]
struct GatedStage {
    inner: Arc<dyn QueryStageExecutor>,
    slots: Arc<HostSlots>,
}

impl std::fmt::Display for GatedStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.inner, f)
    }
}

#[async_trait::async_trait]
impl QueryStageExecutor for GatedStage {
    async fn execute_query_stage(
        &self,
        task_id: usize,
        context: Arc<TaskContext>,
    ) -> Result<Vec<ShuffleWritePartition>> {
        let _slot = self.slots.acquire().await.map_err(|e| DataFusionError::External(Box::new(e)))?;
        self.inner.execute_query_stage(task_id, context).await
    }

    fn collect_plan_metrics(&self) -> Vec<MetricsSet> {
        self.inner.collect_plan_metrics()
    }

    fn collect_runtime_stats_reports(&self) -> Vec<ballista_core::serde::protobuf::RuntimeStatsReport> {
        self.inner.collect_runtime_stats_reports()
    }

    fn collect_window_state_reports(&self) -> Result<Vec<ballista_core::serde::protobuf::WindowStateReport>> {
        self.inner.collect_window_state_reports()
    }

    fn collect_column_stats(&self) -> Vec<TaskColumnStats> {
        self.inner.collect_column_stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two slots admit two holders; a third waits until one is released, also when the holders
    /// opened the slots separately (as separate executor processes do).
    #[tokio::test]
    async fn a_third_task_waits_for_a_released_slot() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (HostSlots::new(dir.path(), 2).unwrap(), HostSlots::new(dir.path(), 2).unwrap());
        let first = a.acquire().await.unwrap();
        let second = b.acquire().await.unwrap();
        assert!(a.try_acquire().unwrap().is_none(), "both slots are held");
        let waiting = tokio::time::timeout(Duration::from_millis(300), b.acquire()).await;
        assert!(waiting.is_err(), "a third task must wait while two hold the slots");
        drop(first);
        let third = tokio::time::timeout(Duration::from_secs(5), b.acquire()).await;
        assert!(third.expect("a released slot is taken").is_ok());
        drop(second);
    }
}
