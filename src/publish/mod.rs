//! Publishing: the last stage. Protected tables and masked microdata are written into a private
//! staging area and committed to the output location only when every output of the run is
//! complete and checked; `sdcflow audit` checks a written table after the fact.
//!
//! - [`table`]: the table-output contract — `confidential/<table>/cells.parquet` (every cell
//!   with its status and protection levels) and `publish/<table>/published.csv` (only what may
//!   be released), written chunk by chunk with the report figures tallied on the way.
//! - [`parts`]: primaries-only tables as part files, written where the roll-up runs and
//!   committed only when every part is exactly as reported.
//! - [`staging`]: where sdcflow may write, and the atomic commit (directory renames locally, a
//!   manifest on an object store).
//! - [`report`]: `report.json`, the audit trail of a publication.
//! - [`audit`]: `sdcflow audit`, the attacker-LP audit of a written `cells.parquet`, reading
//!   the columns [`table`] writes.

pub mod audit;
pub mod parts;
pub mod report;
pub mod staging;
pub mod table;

pub use table::{
    cells_batch, cells_schema, table_files, HeatMap, LevelTally, TableWriter, Tally, CONFIDENTIAL, PUBLISH,
};
