//! The `cuzk.v1` gRPC interface of the cuzk proving daemon, wire-compatible with Curio's
//! `cuzk.v1.ProvingEngine`: the protobuf types, the generated client
//! ([`proving_engine_client::ProvingEngineClient`]) and server
//! ([`proving_engine_server`]), and the compiled descriptor set
//! ([`FILE_DESCRIPTOR_SET`]) that the compatibility test compares with Curio's interface.
//!
//! The source is `proto/cuzk/v1/proving.proto`. A client needs this crate alone: it links
//! no prover, no CUDA and no Filecoin code.
#![forbid(unsafe_code)]

// The generated code's shape is prost's and tonic's, not ours to lint.
#[allow(missing_docs, clippy::all, clippy::pedantic, rust_2018_idioms)]
mod generated {
    tonic::include_proto!("cuzk.v1");
}

pub mod codec;

pub use generated::*;

/// The compiled `FileDescriptorSet` of proving.proto (what the compatibility test compares
/// with Curio's interface).
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/cuzk_v1_descriptor.bin"));

/// The service's full name, as health checks and load balancers address it.
pub const SERVICE_NAME: &str = "cuzk.v1.ProvingEngine";
