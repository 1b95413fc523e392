//! Cluster roles: `sdcflow scheduler` and `sdcflow executor` start Ballista components from the
//! same binary, with sdcflow's own functions registered, so that any plan the client ships —
//! including the `sdc_top<N>` aggregates of tabulation — can run on every executor.
//!
//! Executors only run code linked into them; this is why sdcflow does not use the stock Ballista
//! binaries. The scheduler plans with the same session builder as the client.

use std::net::SocketAddr;
use std::sync::Arc;

use ballista_core::registry::BallistaFunctionRegistry;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::prelude::SessionConfig;

use crate::error::{Error, Result};
use crate::tabulate::topn::TopN;

/// A session state with sdcflow's functions, for the scheduler and executors.
pub fn session_state(config: SessionConfig) -> datafusion::common::Result<SessionState> {
    let mut state = SessionStateBuilder::new().with_config(config).with_default_features().build();
    for f in TopN::all() {
        datafusion::execution::FunctionRegistry::register_udaf(&mut state, f)?;
    }
    Ok(state)
}

/// Runs a Ballista scheduler on `host:port` until the process is stopped.
pub async fn run_scheduler(host: &str, port: u16) -> Result<()> {
    let mut config = SchedulerConfig::default().with_hostname(host).with_port(port);
    config.override_session_builder = Some(Arc::new(session_state));
    let addr: SocketAddr =
        format!("{host}:{port}").parse().map_err(|e| Error::Engine(format!("scheduler address {host}:{port}: {e}")))?;
    let cluster =
        BallistaCluster::new_from_config(&config).await.map_err(|e| Error::Engine(format!("scheduler: {e}")))?;
    start_server(cluster, addr, Arc::new(config)).await.map_err(|e| Error::Engine(format!("scheduler: {e}")))
}

/// Executor settings from the command line.
#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    /// Address to bind the flight service to.
    pub bind_host: String,
    /// Flight (data) port.
    pub port: u16,
    /// gRPC port.
    pub grpc_port: u16,
    /// Scheduler host.
    pub scheduler_host: String,
    /// Scheduler port.
    pub scheduler_port: u16,
    /// Concurrent tasks (default: cores).
    pub concurrent_tasks: usize,
    /// Work (shuffle) directory.
    pub work_dir: Option<String>,
}

/// Runs a Ballista executor registered with the scheduler until the process is stopped.
pub async fn run_executor(o: &ExecutorOptions) -> Result<()> {
    let state = session_state(SessionConfig::new()).map_err(|e| Error::Engine(e.to_string()))?;
    let registry = BallistaFunctionRegistry::from(&state);
    let config = ExecutorProcessConfig {
        bind_host: o.bind_host.clone(),
        external_host: Some(o.bind_host.clone()),
        port: o.port,
        grpc_port: o.grpc_port,
        scheduler_host: o.scheduler_host.clone(),
        scheduler_port: o.scheduler_port,
        scheduler_connect_timeout_seconds: 30,
        vcores: o.concurrent_tasks,
        work_dir: o.work_dir.clone(),
        executor_heartbeat_interval_seconds: 5,
        override_function_registry: Some(Arc::new(registry)),
        ..Default::default()
    };
    start_executor_process(Arc::new(config)).await.map_err(|e| Error::Engine(format!("executor: {e}")))
}
