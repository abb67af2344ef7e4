//! Groth16 on a CUDA device: parameter generation with fixed-base multiplication on the GPU,
//! and the GPU prover (H on the device, five MSMs against resident parameters).
