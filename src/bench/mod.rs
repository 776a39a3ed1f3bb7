//! `leaselab bench`: throughput of the claim loop on real SQLite, measured against the
//! ceiling of the same database file in the same run, so ratios survive a noisy machine.
//! This file only names the parts; each does one job and none imports this file.

mod ceiling;
mod child;
mod effectum;
mod error;
mod measure;
mod options;
mod pg;
mod pg_report;
mod pgbench;
mod report;
mod run;
mod stop;
mod target;

pub use ceiling::Ceiling;
pub use effectum::{measure as measure_effectum, time_limit as effectum_time_limit};
pub use error::BenchError;
pub use measure::{measure, measure_plain};
pub use options::{BenchOptions, Mode};
pub use pg::{measure_pg, PgRun};
pub use pg_report::{PgComparison, Versus};
pub use pgbench::{
    find_pgbench, measure_pgbench, script as pgbench_script, with_variables, PGBENCH_CLIENTS,
};
pub use report::{BenchReport, BenchRun, CostSplit, Scaling};
pub use run::run;
pub use target::Target;
