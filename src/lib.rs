//! # sdcflow — statistical disclosure control at census scale
//!
//! sdcflow reads microdata from Parquet (local or object store), tabulates it with Apache
//! DataFusion (locally or on an Apache Ballista cluster), finds the cells that would disclose a
//! person or an enterprise, and writes protected, audited output.
//!
//! ```text
//! job.toml ─► job ─► engine (DataFusion session: local | Ballista standalone | remote)
//!                      │ register Parquet (file / s3://), run sql/ preludes
//!                      ▼
//! hierarchy ───────► tabulate   every level combination, contributor statistics (SQL)
//!                      ▼
//!                    rules      primary status + protection levels (tau-Argus rules)
//!                      ▼
//!                    output     cells.parquet, published.csv, report.json — atomic
//! ```
//!
//! Modules follow the pipeline stages. Pure solver modules (`lp`, `rng`, `table`) take plain
//! data and a seed and know nothing of DataFusion, so they can run on any executor.
//!
//! Extension points: sdcflow's own aggregate functions (see [`tabulate::topn`]) are registered
//! in every session by [`engine::session`], so Ballista executors built from that state can run
//! plans that contain them.
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
