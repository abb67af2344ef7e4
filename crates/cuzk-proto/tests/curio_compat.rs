//! Wire compatibility with Curio: the facts of Curio's `cuzk.v1` interface, typed in from
//! filecoin-project/curio `extern/cuzk/cuzk-proto/proto/cuzk/v1/proving.proto` at commit
//! e0294b0f, checked against the descriptor compiled from our proving.proto in both
//! directions: every method, message, field (name, number, type, label) and enum value of
//! Curio's is ours, and everything of ours numbered below 100 is Curio's. A field renumbered,
//! retyped, relabelled or renamed, a method or enum value changed, fails here.

use cuzk_proto::FILE_DESCRIPTOR_SET;
use prost::Message;
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorProto, FileDescriptorSet};
use std::collections::BTreeSet;

/// The Curio commit these facts were read from.
const CURIO_COMMIT: &str = "e0294b0f";

/// Service `cuzk.v1.ProvingEngine`: method, request type, response type.
const METHODS: &[(&str, &str, &str)] = &[
    ("SubmitProof", "SubmitProofRequest", "SubmitProofResponse"),
    ("AwaitProof", "AwaitProofRequest", "AwaitProofResponse"),
    ("Prove", "ProveRequest", "ProveResponse"),
    ("CancelProof", "CancelProofRequest", "CancelProofResponse"),
    ("GetStatus", "GetStatusRequest", "GetStatusResponse"),
    ("GetMetrics", "GetMetricsRequest", "GetMetricsResponse"),
    ("PreloadSRS", "PreloadSrsRequest", "PreloadSrsResponse"),
    ("EvictSRS", "EvictSrsRequest", "EvictSrsResponse"),
];

/// Enums by full path (nested ones as `Message.Enum`): value name and number.
const ENUMS: &[(&str, &[(&str, i32)])] = &[
    (
        "ProofKind",
        &[
            ("PROOF_KIND_UNSPECIFIED", 0),
            ("POREP_SEAL_COMMIT", 1),
            ("SNAP_DEALS_UPDATE", 2),
            ("WINDOW_POST_PARTITION", 3),
            ("WINNING_POST", 4),
        ],
    ),
    (
        "Priority",
        &[
            ("PRIORITY_UNSPECIFIED", 0),
            ("LOW", 1),
            ("NORMAL", 2),
            ("HIGH", 3),
            ("CRITICAL", 4),
        ],
    ),
    (
        "AwaitProofResponse.Status",
        &[
            ("UNKNOWN", 0),
            ("COMPLETED", 1),
            ("FAILED", 2),
            ("CANCELLED", 3),
            ("TIMEOUT", 4),
        ],
    ),
    ("SRSStatus.Tier", &[("HOT", 0), ("WARM", 1), ("COLD", 2)]),
];

/// How a field is declared: singular (proto3 implicit presence) or repeated, and its type
/// (a scalar, or `.cuzk.v1.X` for an enum or message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum F {
    One(&'static str),
    Many(&'static str),
}

/// A message's fields: name, number, declaration.
type Fields = &'static [(&'static str, i32, F)];

/// Messages and their fields.
const MESSAGES: &[(&str, Fields)] = &[
    (
        "SubmitProofRequest",
        &[
            ("request_id", 1, F::One("string")),
            ("proof_kind", 2, F::One(".cuzk.v1.ProofKind")),
            ("sector_size", 3, F::One("uint64")),
            ("registered_proof", 4, F::One("uint64")),
            ("priority", 5, F::One(".cuzk.v1.Priority")),
            ("vanilla_proof", 10, F::One("bytes")),
            ("vanilla_proofs", 11, F::Many("bytes")),
            ("sector_number", 20, F::One("uint64")),
            ("miner_id", 21, F::One("uint64")),
            ("randomness", 22, F::One("bytes")),
            ("partition_index", 23, F::One("uint32")),
            ("comm_r_old", 30, F::One("bytes")),
            ("comm_r_new", 31, F::One("bytes")),
            ("comm_d_new", 32, F::One("bytes")),
        ],
    ),
    (
        "SubmitProofResponse",
        &[
            ("job_id", 1, F::One("string")),
            ("queue_position", 2, F::One("uint32")),
            ("assigned_gpu", 3, F::One("string")),
        ],
    ),
    (
        "AwaitProofRequest",
        &[
            ("job_id", 1, F::One("string")),
            ("timeout_ms", 2, F::One("uint64")),
        ],
    ),
    (
        "AwaitProofResponse",
        &[
            ("job_id", 1, F::One("string")),
            ("status", 2, F::One(".cuzk.v1.AwaitProofResponse.Status")),
            ("proof", 3, F::One("bytes")),
            ("error_message", 4, F::One("string")),
            ("queue_wait_ms", 10, F::One("uint64")),
            ("srs_load_ms", 11, F::One("uint64")),
            ("synthesis_ms", 12, F::One("uint64")),
            ("gpu_compute_ms", 13, F::One("uint64")),
            ("total_ms", 14, F::One("uint64")),
        ],
    ),
    (
        "ProveRequest",
        &[("submit", 1, F::One(".cuzk.v1.SubmitProofRequest"))],
    ),
    (
        "ProveResponse",
        &[("result", 1, F::One(".cuzk.v1.AwaitProofResponse"))],
    ),
    ("CancelProofRequest", &[("job_id", 1, F::One("string"))]),
    ("CancelProofResponse", &[("was_running", 1, F::One("bool"))]),
    ("GetStatusRequest", &[]),
    (
        "GetStatusResponse",
        &[
            ("gpus", 1, F::Many(".cuzk.v1.GPUStatus")),
            ("loaded_srs", 2, F::Many(".cuzk.v1.SRSStatus")),
            ("queues", 3, F::Many(".cuzk.v1.QueueStatus")),
            ("total_proofs_completed", 4, F::One("uint64")),
            ("total_proofs_failed", 5, F::One("uint64")),
            ("uptime_seconds", 6, F::One("uint64")),
            ("pinned_memory_bytes", 7, F::One("uint64")),
            ("pinned_memory_limit_bytes", 8, F::One("uint64")),
        ],
    ),
    (
        "GPUStatus",
        &[
            ("ordinal", 1, F::One("uint32")),
            ("name", 2, F::One("string")),
            ("vram_total_bytes", 3, F::One("uint64")),
            ("vram_free_bytes", 4, F::One("uint64")),
            ("current_job_id", 5, F::One("string")),
            ("current_proof_kind", 6, F::One("string")),
        ],
    ),
    (
        "SRSStatus",
        &[
            ("circuit_id", 1, F::One("string")),
            ("tier", 2, F::One(".cuzk.v1.SRSStatus.Tier")),
            ("size_bytes", 3, F::One("uint64")),
            ("ref_count", 4, F::One("uint32")),
        ],
    ),
    (
        "QueueStatus",
        &[
            ("proof_kind", 1, F::One("string")),
            ("pending", 2, F::One("uint32")),
            ("in_progress", 3, F::One("uint32")),
        ],
    ),
    ("PreloadSrsRequest", &[("circuit_id", 1, F::One("string"))]),
    (
        "PreloadSrsResponse",
        &[
            ("already_loaded", 1, F::One("bool")),
            ("load_time_ms", 2, F::One("uint64")),
        ],
    ),
    ("EvictSrsRequest", &[("circuit_id", 1, F::One("string"))]),
    (
        "EvictSrsResponse",
        &[
            ("was_loaded", 1, F::One("bool")),
            ("freed_bytes", 2, F::One("uint64")),
        ],
    ),
    ("GetMetricsRequest", &[]),
    (
        "GetMetricsResponse",
        &[("prometheus_text", 1, F::One("string"))],
    ),
];

/// Our additions must stay out of the way of numbers Curio may use next: from 100 up.
const FIRST_ADDITION: i32 = 100;

fn ours() -> FileDescriptorProto {
    let set = FileDescriptorSet::decode(FILE_DESCRIPTOR_SET)
        .expect("the compiled descriptor set decodes");
    set.file
        .into_iter()
        .find(|f| f.name() == "cuzk/v1/proving.proto")
        .expect("proving.proto is in the descriptor set")
}

fn message<'a>(file: &'a FileDescriptorProto, path: &str) -> &'a DescriptorProto {
    let mut parts = path.split('.');
    let top = parts.next().unwrap();
    let mut m = file
        .message_type
        .iter()
        .find(|m| m.name() == top)
        .unwrap_or_else(|| panic!("message {top} (Curio {CURIO_COMMIT}) is missing"));
    for part in parts {
        m = m
            .nested_type
            .iter()
            .find(|n| n.name() == part)
            .unwrap_or_else(|| panic!("message {path} is missing"));
    }
    m
}

fn enumeration<'a>(file: &'a FileDescriptorProto, path: &str) -> &'a EnumDescriptorProto {
    let (parent, name) = match path.rsplit_once('.') {
        Some((parent, name)) => (Some(parent), name),
        None => (None, path),
    };
    let list = match parent {
        Some(parent) => &message(file, parent).enum_type,
        None => &file.enum_type,
    };
    list.iter()
        .find(|e| e.name() == name)
        .unwrap_or_else(|| panic!("enum {path} (Curio {CURIO_COMMIT}) is missing"))
}

/// A field's declaration as the descriptor states it.
fn declared(field: &prost_types::FieldDescriptorProto) -> (bool, String) {
    let repeated = field.label() == Label::Repeated;
    let ty = match field.r#type() {
        Type::Message | Type::Enum => field.type_name().to_string(),
        Type::String => "string".into(),
        Type::Bytes => "bytes".into(),
        Type::Uint64 => "uint64".into(),
        Type::Uint32 => "uint32".into(),
        Type::Bool => "bool".into(),
        other => format!("{other:?}"),
    };
    (repeated, ty)
}

#[test]
fn package_and_service_match_curio() {
    let file = ours();
    assert_eq!(file.package(), "cuzk.v1");
    assert_eq!(file.syntax(), "proto3");
    assert_eq!(file.service.len(), 1, "one service, as in Curio");
    let service = &file.service[0];
    assert_eq!(service.name(), "ProvingEngine");
    let names: Vec<&str> = service.method.iter().map(|m| m.name()).collect();
    let curio: Vec<&str> = METHODS.iter().map(|m| m.0).collect();
    assert_eq!(names, curio, "methods (Curio {CURIO_COMMIT})");
    for (name, input, output) in METHODS {
        let m = service.method.iter().find(|m| m.name() == *name).unwrap();
        assert_eq!(
            m.input_type(),
            format!(".cuzk.v1.{input}"),
            "{name} request"
        );
        assert_eq!(
            m.output_type(),
            format!(".cuzk.v1.{output}"),
            "{name} response"
        );
        assert!(
            !m.client_streaming() && !m.server_streaming(),
            "{name} is unary"
        );
    }
}

#[test]
fn enums_match_curio() {
    let file = ours();
    for (path, values) in ENUMS {
        let e = enumeration(&file, path);
        for (name, number) in *values {
            let v = e
                .value
                .iter()
                .find(|v| v.name() == *name)
                .unwrap_or_else(|| panic!("{path}.{name} (Curio {CURIO_COMMIT}) is missing"));
            assert_eq!(v.number(), *number, "{path}.{name}");
        }
        for v in &e.value {
            let curio = values.iter().any(|(name, _)| *name == v.name());
            assert!(
                curio || v.number() >= FIRST_ADDITION,
                "{path}.{} = {} is ours and must be numbered from {FIRST_ADDITION}",
                v.name(),
                v.number()
            );
        }
    }
}

#[test]
fn messages_match_curio_and_additions_do_not_clash() {
    let file = ours();
    for (name, fields) in MESSAGES {
        let m = message(&file, name);
        for (field, number, decl) in *fields {
            let f = m
                .field
                .iter()
                .find(|f| f.name() == *field)
                .unwrap_or_else(|| panic!("{name}.{field} (Curio {CURIO_COMMIT}) is missing"));
            assert_eq!(f.number(), *number, "{name}.{field} number");
            assert!(
                f.oneof_index.is_none() && !f.proto3_optional(),
                "{name}.{field} presence"
            );
            let (repeated, ty) = declared(f);
            let want = match decl {
                F::One(t) => (false, t.to_string()),
                F::Many(t) => (true, t.to_string()),
            };
            assert_eq!((repeated, ty), want, "{name}.{field} type");
        }
        let curio_numbers: BTreeSet<i32> = fields.iter().map(|f| f.1).collect();
        for f in &m.field {
            if fields.iter().any(|(field, _, _)| *field == f.name()) {
                continue;
            }
            assert!(
                f.number() >= FIRST_ADDITION && !curio_numbers.contains(&f.number()),
                "{name}.{} = {} is ours and must be numbered from {FIRST_ADDITION}",
                f.name(),
                f.number()
            );
        }
    }
}

#[test]
fn every_curio_message_and_no_stray_top_level_type() {
    let file = ours();
    let ours: BTreeSet<&str> = file.message_type.iter().map(|m| m.name()).collect();
    let curio: BTreeSet<&str> = MESSAGES.iter().map(|m| m.0).collect();
    assert_eq!(ours, curio, "top-level messages (Curio {CURIO_COMMIT})");
    let enums: BTreeSet<&str> = file.enum_type.iter().map(|e| e.name()).collect();
    assert_eq!(enums, BTreeSet::from(["ProofKind", "Priority"]));
}
