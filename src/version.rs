//! Which leaselab this is: its version, the target it was built for and the commit it was
//! built from (`build.rs` finds the last two), as `leaselab --version` says them and a
//! worker records them when it joins.

use crate::engine::software::Software;

/// The version of the package.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The target triple the binary was built for: `aarch64-apple-darwin`.
pub const TARGET: &str = env!("LEASELAB_TARGET");
/// `git rev-parse --short HEAD` of the checkout it was built from (`-modified` when its
/// compiled files differed from that commit), or `unknown` when built from a source
/// without one.
pub const COMMIT: &str = env!("LEASELAB_COMMIT");

/// What `--version` prints after the name: `0.1.0 (x86_64-unknown-linux-gnu, commit
/// f3fb608)`.
pub const LONG: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("LEASELAB_TARGET"),
    ", commit ",
    env!("LEASELAB_COMMIT"),
    ")"
);

/// This leaselab, as a worker records it when it joins.
pub fn software() -> Software {
    Software::of_build(VERSION, COMMIT, TARGET)
}
