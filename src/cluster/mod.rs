//! Cluster roles: `sdcflow scheduler` and `sdcflow executor` start Ballista components from the
//! same binary, with sdcflow's own functions registered, so that any plan the client ships —
//! including the `sdc_top<N>` aggregates of tabulation — can run on every executor.
//!
//! Executors only run code linked into them; this is why sdcflow does not use the stock Ballista
//! binaries. The scheduler plans with the same session builder as the client.
//!
//! Solver work is shipped as data, not as plan nodes: [`ship`] writes each level of modular
//! subtables as Parquet rows to a scratch location and runs `sdc_solve_subtable(payload)`
//! ([`udf`]) over them, so Ballista schedules one task per partition file on whichever executor
//! has a free slot, retries it elsewhere when an executor dies, and the client merges the
//! results in partition-id order. The roll-up and writing of primaries-only tables is shipped
//! the same way, one part of whole shards per row ([`roll_up`]). [`crate::store`] lets the
//! scheduler and executors open any `s3://`
//! bucket from the `AWS_*` environment. README.md ("Distribution") explains the choice.

pub mod host_slots;
pub mod part_agg;
pub mod roll_up;
pub mod ship;
pub mod udf;
pub mod wire;

use std::net::SocketAddr;
use std::sync::Arc;

use ballista_core::extension::SessionConfigExt;
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_core::RuntimeProducer;
use ballista_executor::execution_engine::{DefaultExecutionEngine, ExecutionEngine};
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::{SchedulerConfig, TaskDistributionPolicy};
use ballista_scheduler::scheduler_process::start_server;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::prelude::SessionConfig;

use crate::error::{Error, Result};
use crate::tabulate::topn::TopN;

/// A session state with sdcflow's functions and on-demand `s3://` stores, for the scheduler
/// and executors.
pub fn session_state(config: SessionConfig) -> datafusion::common::Result<SessionState> {
    // The scheduler plans every job with the static planner, whatever the client asked for:
    // the adaptive one never finishes a job that lost an executor mid-shuffle (see
    // `engine::session`).
    let config = config.with_ballista_adaptive_query_planner(false);
    let runtime = runtime_env(None)?;
    let mut state =
        SessionStateBuilder::new().with_config(config).with_runtime_env(runtime).with_default_features().build();
    register_functions(&mut state)?;
    Ok(state)
}

/// Registers sdcflow's functions (`sdc_top<N>` aggregates, the solver-partition functions) in
/// `state`.
pub fn register_functions(state: &mut SessionState) -> datafusion::common::Result<()> {
    for f in TopN::all() {
        datafusion::execution::FunctionRegistry::register_udaf(state, f)?;
    }
    datafusion::execution::FunctionRegistry::register_udaf(state, part_agg::RoutePairs::udaf())?;
    for f in udf::scalar_functions() {
        datafusion::execution::FunctionRegistry::register_udf(state, f)?;
    }
    Ok(())
}

/// Registers the functions a client session plans with (the `sdc_top<N>` aggregates and the
/// SQL-callable scalar functions) on `ctx`; the engine calls it after Ballista rebuilt the state.
pub fn register_on_context(ctx: &datafusion::prelude::SessionContext) {
    for f in TopN::all() {
        ctx.register_udaf(f.as_ref().clone());
    }
    ctx.register_udaf(part_agg::RoutePairs::udaf().as_ref().clone());
    for f in udf::scalar_functions() {
        ctx.register_udf(f.as_ref().clone());
    }
}

/// A runtime whose object-store registry opens `s3://` buckets from the environment; spill
/// files go to `temp_dir` when given.
pub fn runtime_env(temp_dir: Option<&str>) -> datafusion::common::Result<Arc<RuntimeEnv>> {
    let mut b =
        RuntimeEnvBuilder::new().with_object_store_registry(Arc::new(crate::store::EnvObjectStoreRegistry::default()));
    if let Some(d) = temp_dir {
        b = b.with_temp_file_path(d);
    }
    b.build_arc()
}

/// Scheduler settings from the command line.
#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    /// Address to bind.
    pub bind_host: String,
    /// gRPC port.
    pub port: u16,
    /// Seconds without a heartbeat after which an executor is declared lost and its running
    /// tasks are scheduled elsewhere (Ballista's default is 180).
    pub executor_timeout_s: u64,
}

/// Runs a Ballista scheduler on `host:port` until the process is stopped.
pub async fn run_scheduler(o: &SchedulerOptions) -> Result<()> {
    let (host, port) = (o.bind_host.as_str(), o.port);
    let mut config = SchedulerConfig::default().with_hostname(host).with_port(port);
    config.override_session_builder = Some(Arc::new(session_state));
    // One scheduler: spread tasks one per executor in turn (Ballista's advice), so the
    // partitions of a level land on every executor instead of filling the first one.
    config.task_distribution = TaskDistributionPolicy::RoundRobin;
    config.executor_timeout_seconds = o.executor_timeout_s.max(1);
    config.no_executors_grace_period_seconds = config.executor_timeout_seconds;
    config.expire_dead_executor_interval_seconds = (o.executor_timeout_s / 3).clamp(1, 15);
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
    /// Memory for the operators of all running tasks together, in MiB; beyond it they spill
    /// to `work_dir`. `None`: Ballista's default, 70 % of the machine's (or cgroup's) memory.
    pub memory_limit_mb: Option<u64>,
    /// Tasks run at once by this cluster's executors on this host together
    /// ([`host_slots`]); `None`: the host's cores; `Some(0)`: no limit.
    pub host_slots: Option<usize>,
    /// Fault injection for tests: sleep this long before each subtable (0 = off).
    pub test_solve_delay_ms: u64,
    /// Fault injection for tests: sleep this long in each batch through
    /// `sdc_test_scan_delay` (0 = off).
    pub test_scan_delay_ms: u64,
    /// Fault injection for tests: publish the secondaries of every whole-table result again,
    /// and one line more in every part than reported.
    pub test_tamper_results: bool,
    /// Fault injection for tests: sleep this long before each roll-up part (0 = off).
    pub test_roll_up_delay_ms: u64,
    /// Fault injection for tests: sleep this long before writing each routed chunk (0 = off).
    pub test_route_delay_ms: u64,
}

/// Runs a Ballista executor registered with the scheduler until a signal ends the process;
/// Ballista ending it is an error (exit 1), so a supervisor restarts it.
pub async fn run_executor(o: &ExecutorOptions) -> Result<()> {
    let state = session_state(SessionConfig::new()).map_err(|e| Error::Engine(e.to_string()))?;
    let registry = BallistaFunctionRegistry::from(&state);
    // Shuffle and spill files: the given directory, else a private one removed on exit.
    let temp;
    let work_dir = match &o.work_dir {
        Some(d) => d.clone(),
        None => {
            temp = tempfile::Builder::new()
                .prefix("sdcflow-executor-")
                .tempdir()
                .map_err(|e| Error::io(std::env::temp_dir(), e))?;
            temp.path().display().to_string()
        }
    };
    let wd = work_dir.clone();
    crate::tabulate::parts::set_spill_dir(std::path::PathBuf::from(&work_dir));
    let runtime: RuntimeProducer = Arc::new(move |_| runtime_env(Some(&wd)));
    let executor_id = format!(
        "{}-{}-{}",
        std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()).unwrap_or_else(|| o.bind_host.clone()),
        o.port,
        std::process::id()
    );
    udf::set_worker_identity(format!("executor {executor_id}"));
    udf::set_test_solve_delay_ms(o.test_solve_delay_ms);
    udf::set_test_scan_delay_ms(o.test_scan_delay_ms);
    udf::set_test_tamper_results(o.test_tamper_results);
    udf::set_test_roll_up_delay_ms(o.test_roll_up_delay_ms);
    udf::set_test_route_delay_ms(o.test_route_delay_ms);
    // Tasks wait for one of the host's slots (see `host_slots`), unless switched off. The
    // gated engine wraps Ballista's own, without a connection pool for shuffle reads (Ballista's
    // `DefaultBallistaClientPool` is private to ballista-executor; a pool of our own would
    // implement the public `ballista_core::client_pool::BallistaClientPool`, not done): a remote
    // shuffle read connects anew, as Ballista's own executors do with `client_ttl = 0`.
    let engine: Option<Arc<dyn ExecutionEngine>> = match o.host_slots {
        Some(0) => None,
        slots => {
            let slots = host_slots::HostSlots::for_cluster(&o.scheduler_host, o.scheduler_port, slots)
                .map_err(|e| Error::io(std::env::temp_dir(), e))?;
            Some(Arc::new(host_slots::GatedEngine::new(Arc::new(DefaultExecutionEngine::new()), slots)))
        }
    };
    let config = ExecutorProcessConfig {
        executor_id,
        bind_host: o.bind_host.clone(),
        external_host: Some(o.bind_host.clone()),
        port: o.port,
        grpc_port: o.grpc_port,
        scheduler_host: o.scheduler_host.clone(),
        scheduler_port: o.scheduler_port,
        scheduler_connect_timeout_seconds: 30,
        vcores: o.concurrent_tasks,
        work_dir: Some(work_dir),
        executor_heartbeat_interval_seconds: 2,
        // Shuffle files hold confidential partial cells. The scheduler has executors remove a
        // job's files shortly after the job ends; this sweep also removes what an interrupted
        // job (lost scheduler, killed client) left behind, once unused for a whole run's
        // deadline (deploy/k8s: 6 h). A graceful stop removes everything.
        job_data_clean_up_interval_seconds: 600,
        job_data_ttl_seconds: 6 * 3600,
        // Ballista gives each task a spilling pool of its share (limit / concurrent tasks),
        // built on our runtime, so spill files go to the work directory.
        memory_pool_size: o.memory_limit_mb.map(|mb| mb.max(1) * 1024 * 1024),
        override_function_registry: Some(Arc::new(registry)),
        override_runtime_producer: Some(runtime),
        override_execution_engine: engine,
        ..Default::default()
    };
    // Ballista's flight service binds `--port` in a task of its own: taken, the executor
    // would stop without a word and exit 0. Checked here, the error names the port.
    for (flag, port) in [("--port", o.port), ("--grpc-port", o.grpc_port)] {
        std::net::TcpListener::bind((o.bind_host.as_str(), port))
            .map_err(|e| Error::Engine(format!("executor: cannot listen on {}:{port} ({flag}): {e}", o.bind_host)))?;
    }
    start_executor_process(Arc::new(config)).await.map_err(|e| Error::Engine(format!("executor: {e}")))?;
    // SIGINT and SIGTERM end the process in `main` before this returns, so Ballista ending
    // the executor is a failure a supervisor must see (and restart after).
    Err(Error::Engine(
        "executor: stopped: one of its services ended (a port taken after the check?) or the scheduler \
         declared it lost (no heartbeat within the scheduler's --executor-timeout-s) and stopped it"
            .into(),
    ))
}
