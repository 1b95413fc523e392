//! sdcflow integration tests: one binary, modules by feature (like ripgrep's `tests/`).

mod apriori;
mod bad_input;
mod cli;
mod cluster;
mod common;
mod deploy;
mod engines;
mod import_argus;
mod linked;
mod microagg;
mod output;
mod report_html;
mod s3;
mod secondary;
mod tabulation;
