//! The cross-crate GPU tests, in one test binary (the bundle runs one binary per package):
//! every test is `#[ignore = "needs a CUDA GPU"]` and named `gpu_…`.

mod device_eval;
mod one_call;
mod paramgen;
mod prover;
