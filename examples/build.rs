//! Compiles vLLM's gRPC schema (`proto/*.proto`, from vLLM's `rust/proto` as published
//! in the `vllm-proto` 0.6.0 crate that `vllm-rs` 0.33.0 is built with) into tonic
//! servers and clients. `protox` parses the files in Rust, so no `protoc` binary is
//! needed; the encoded descriptor set is kept for server reflection.

use std::path::PathBuf;

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("proto");
    let protos = [dir.join("control.proto"), dir.join("inference.proto")];
    for proto in &protos {
        println!("cargo:rerun-if-changed={}", proto.display());
    }
    let descriptors = protox::compile(&protos, [&dir])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("vllm_descriptor.bin"), descriptors.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(descriptors)?;
    Ok(())
}
