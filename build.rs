//! What `leaselab --version` says beside the version: the target the binary is built for
//! (`LEASELAB_TARGET`) and the commit it is built from (`LEASELAB_COMMIT`, see
//! `build/git.rs`). The script runs again only when the commit or the compiled files change.

#[path = "build/git.rs"]
mod git;

fn main() {
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_string());
    println!("cargo:rustc-env=LEASELAB_TARGET={target}");
    let dir = std::path::PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("Cargo names the package's folder"),
    );
    let checkout = git::checkout(&dir);
    println!("cargo:rustc-env=LEASELAB_COMMIT={}", checkout.shown());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/git.rs");
    for path in &checkout.watch {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}
