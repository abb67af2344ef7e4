//! cuzk-bench's library: [`fabricate`], the generator of consistent PoRep C1 outputs for
//! sectors that were never sealed (C2 benchmarks and tests), used by the `fabricate-c1`
//! subcommand and by tests (this package's and the daemon's).
//!
//! The generator is CPU-only and builds without any feature: its Filecoin dependencies are
//! ordinary dependencies of this package (the workspace builds them for cuzk-filecoin anyway),
//! so `cargo test --workspace` runs its tests with no flag. The GPU benchmarks of the binary
//! stay behind the `cuda` feature.
#![forbid(unsafe_code)]

pub mod fabricate;
