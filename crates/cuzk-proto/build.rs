//! Compiles proto/cuzk/v1/proving.proto into the server and client stubs, and keeps its
//! descriptor set so that tests can compare the compiled interface with Curio's.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A vendored protoc, so that building needs no system package.
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    // Build scripts run single-threaded, so setting the variable races with nothing.
    std::env::set_var("PROTOC", protoc);
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let proto = "proto/cuzk/v1/proving.proto";
    println!("cargo:rerun-if-changed={proto}");
    tonic_prost_build::configure()
        .file_descriptor_set_path(out.join("cuzk_v1_descriptor.bin"))
        // Malformed request bytes become INVALID_ARGUMENT instead of tonic's INTERNAL.
        .codec_path("crate::codec::ProtoCodec")
        .compile_protos(&[proto], &["proto"])?;
    Ok(())
}
