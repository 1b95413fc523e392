//! # sdcflow — statistical disclosure control at census scale
//!
//! sdcflow reads microdata from Parquet or CSV (local or object store), tabulates it with Apache
//! DataFusion (locally or on an Apache Ballista cluster), finds the cells that would disclose a
//! person or an enterprise, protects them with secondary suppression that an attacker-LP audit
//! has checked, microaggregates released microdata, and publishes all of it atomically — or
//! nothing.
//!
//! ## The pipeline
//!
//! Data flows one way. Each stage is a module named for it; a stage imports only the stages
//! before it and the layers below the pipeline.
//!
//! ```text
//!  sdcflow run job.toml | protect | microaggregate        cli/ (in the binary): clap, one-liners
//!        │
//!        ▼
//!  job       JobSpec (the TOML, unknown keys refused) → Job: every default resolved, typed
//!        │   methods, safety rules parsed, paths checked; all errors reported at once
//!        ▼
//!  engine    DataFusion session: local | Ballista standalone | remote scheduler;
//!        │   microdata registered (file, directory, glob, s3:// via store), sql/ preludes run
//!        ▼
//!  tabulate  every level combination of the hierarchies, contributor statistics (one SQL
//!        │   aggregation, then a lattice roll-up); exact sums, independent of partitioning
//!        ▼
//!  rules     tau-Argus safety rules → AssessedTable: primary status + protection levels
//!        │
//!        ├──────────────────────────────┐
//!        ▼                              ▼
//!  protect   secondary suppression      masking   microaggregation of released microdata
//!        │   (suppress: optimal, tabu,        │   (microagg: MDAV family, nominal two-step),
//!        │   fast, modular; auto by size),    │   k-anonymity verified on the written values
//!        │   a-priori files, attacker-LP      │
//!        │   audit — fail closed              │
//!        ▼                              ▼
//!  publish   cells.parquet, published.csv (primaries-only tables: parts written where they
//!            are rolled up), masked.parquet, report.json (+ report_html), staged and
//!            committed atomically; `sdcflow audit` re-checks a written table
//! ```
//!
//! [`run`] drives these stages for a job. Below the pipeline, and imported by it:
//!
//! - **solvers** — [`suppress`] (secondary suppression and its audit) and [`microagg`] take plain
//!   data and a seed and return plain data: no DataFusion, tokio or object store, so they run
//!   anywhere with the same result. [`table`] (the additive table model), [`lp`] (HiGHS
//!   behind one adapter) and [`rng`] serve them.
//! - **[`cluster`]** — the layer the stages hand solver work to: an [`Executor`](cluster::ship::Executor)
//!   writes modular subtables, whole-table protections and microaggregation strata as Parquet
//!   rows to a scratch location and runs one SQL function per row ([`cluster::udf`]) where the
//!   engine runs queries: in this process, or on every executor of a Ballista cluster
//!   (`sdcflow scheduler` / `sdcflow executor`). Local and cluster outputs are byte-identical.
//! - **[`store`]** — object stores from the `AWS_*` environment, and the private local
//!   directories removed when a signal ends a run.
//! - [`hierarchy`], [`error`], [`progress`].
//!
//! The [`job`] holds the resolved settings of every stage, so it names their vocabularies
//! (the parsed [`rules::Safety`], the solvers' method enums) without calling them.
//!
//! ## Extension points
//!
//! - **A safety rule:** a variant of [`rules::Rule`], its syntax in [`rules::Safety::parse`],
//!   its test in [`rules::Safety::assess`], and in [`rules::Safety::top_needed`] the number of
//!   largest contributions it reads (tabulation keeps that many; `sdcflow audit` re-evaluates
//!   the rules when two suffice).
//! - **A suppression method:** a pure solver in `suppress/` behind a variant of
//!   [`suppress::Method`] (table model + options + seed → statuses), and its job-file name in
//!   [`job::SecondaryMethod::NAMES`]. Nothing else changes: [`protect`] audits every pattern
//!   and fails closed, and the cluster ships a whole-table task ([`suppress::TableTask`]) for any
//!   method.
//! - **A microaggregation method:** numeric — a variant of [`microagg::Method`] with its name in
//!   [`job::NUMERIC_METHODS`]; nominal — a variant of
//!   [`microagg::nominal_stratum::NominalMethod`] with its name in [`job::NOMINAL_METHODS`].
//!   [`masking`] verifies k-anonymity on the written values whatever the method.
//! - **A storage backend:** a URL scheme in [`store::s3_store`] (the store of a location) and
//!   in [`store::EnvObjectStoreRegistry`] (opened on demand by cluster processes); inputs,
//!   outputs ([`publish::staging`]) and solver scratch use the `ObjectStore` API only.
//! - **A kind of solver work for the cluster:** a [`cluster::udf::PartitionTask`] (pure solve
//!   and log lines) and a [`cluster::wire::Wire`] impl for its task and for its
//!   [`cluster::wire::Solved`] outcome (the JSON forms; versioning and errors are shared).
//! - **An aggregate function** for tabulation (see [`tabulate::topn`]) is registered in every
//!   session by [`engine::session`] and [`cluster::register_functions`], so Ballista executors
//!   built from that state can run plans that contain it.
#![warn(missing_docs)]

pub mod cluster;
pub mod engine;
pub mod error;
pub mod generate;
pub mod hierarchy;
pub mod import_argus;
pub mod job;
pub mod lp;
pub mod masking;
pub mod microagg;
pub mod progress;
pub mod protect;
pub mod publish;
pub mod report_html;
pub mod rng;
pub mod rules;
pub mod run;
pub mod store;
pub mod suppress;
pub mod table;
pub mod tabulate;

pub use error::{Error, Result};
