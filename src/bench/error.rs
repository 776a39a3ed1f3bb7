//! Why a bench ended without a report: each cause a type of its own, each still one line
//! for the user, the underlying error kept as its source.

use crate::engine::outbox::OutboxError;

/// A bench that could not finish. Its `Display` is the one line the command prints.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A stopping signal arrived: the runs ended at their next message (the command line
    /// reports the signal, not this).
    #[error("the bench was stopped")]
    Stopped,
    #[error(transparent)]
    Outbox(#[from] OutboxError),
    #[error("cannot create a temporary folder: {0}")]
    Scratch(#[source] std::io::Error),
    #[error("a bench worker panicked")]
    WorkerPanicked,
    /// The reference program could not be read, started or waited for.
    #[error("--effectum {program}: {source}")]
    EffectumIo {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("--effectum {program}: not an executable file (build it with cargo build --release --manifest-path reference/effectum/Cargo.toml)")]
    EffectumNotExecutable { program: String },
    #[error("--effectum {program}: no output pipes")]
    EffectumNoPipes { program: String },
    #[error("--effectum {program}: no result after {seconds} s; stopped it")]
    EffectumTimedOut { program: String, seconds: u64 },
    /// It ended unsuccessfully: `why` is the last line of its error output, bounded.
    #[error("--effectum {program} failed ({status}): {why}")]
    EffectumFailed {
        program: String,
        status: std::process::ExitStatus,
        why: String,
    },
    #[error(
        "--effectum {program} printed no line of figures ({source}); is it reference/effectum?"
    )]
    EffectumNoFigures {
        program: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("--effectum {program} printed figures of another run ({counts} worker counts for {workers} workers)")]
    EffectumOtherRun {
        program: String,
        counts: usize,
        workers: usize,
    },
    /// `said` is the rate as printed back, `most` the highest rate believed.
    #[error("--effectum {program} printed an impossible rate ({said} jobs/s; a rate is above 0 and at most {most:.0})")]
    EffectumImpossibleRate {
        program: String,
        said: String,
        most: f64,
    },
    /// pgbench could not be started or waited for, or its script not written.
    #[error("pgbench {program}: {source}")]
    PgbenchIo {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("pgbench {program}: no result after {seconds} s; stopped it")]
    PgbenchTimedOut { program: String, seconds: u64 },
    /// It ended unsuccessfully: `why` is the line of its error output that says why.
    #[error("pgbench {program} failed ({status}): {why}")]
    PgbenchFailed {
        program: String,
        status: std::process::ExitStatus,
        why: String,
    },
    #[error("pgbench {program} printed no rate (tps = ...)")]
    PgbenchNoFigures { program: String },
    #[error("pgbench {program} left messages unprocessed ({processed} of {seeded})")]
    PgbenchIncomplete {
        program: String,
        processed: u64,
        seeded: u64,
    },
}
