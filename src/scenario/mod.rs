//! The scripted stories, run headless by `leaselab run` and stepped in the dashboard, with
//! the checks and the report of a run.

mod catalog;
pub mod checks;
mod drain;
mod error;
mod headless;
mod options;
mod outcome;
mod proof;
pub mod report;
pub mod save;
pub mod soak;
mod story;
mod timeline;

pub use catalog::{Scenario, SetupError};
pub use error::RunError;
pub use headless::run;
pub use options::RunOptions;
pub use outcome::RunOutcome;
pub use proof::StoryProof;
pub use story::lease_expiry_story;
pub use timeline::on_timeline;
