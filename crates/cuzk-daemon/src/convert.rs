//! The edge between the wire and the scheduler: requests in, statuses and responses out.
//! Every scheduler error gets its gRPC code here and nowhere else.

use crate::jobs::Digest;
use crate::proto::{
    await_proof_response, AwaitProofResponse, Priority, ProofKind, SubmitProofRequest,
};
use cuzk_sched::{Inputs, JobError, JobOutput, Request, SubmitError};
use std::time::Duration;
use tonic::Status;

/// The registry name a Filecoin proof kind is served under, once its crate registers it.
pub fn filecoin_kind_name(kind: ProofKind) -> Option<&'static str> {
    match kind {
        ProofKind::Unspecified => None,
        ProofKind::PorepSealCommit => Some("porep-seal-commit"),
        ProofKind::SnapDealsUpdate => Some("snap-deals-update"),
        ProofKind::WindowPostPartition => Some("window-post-partition"),
        ProofKind::WinningPost => Some("winning-post"),
    }
}

/// Reads a submission into a scheduler request. `registered` says whether a kind name is
/// registered, so that a Filecoin kind this daemon cannot prove yet is UNIMPLEMENTED (a
/// capability gap) rather than INVALID_ARGUMENT (a caller's mistake).
pub fn to_request(
    submit: SubmitProofRequest,
    registered: impl Fn(&str) -> bool,
) -> Result<Request, Status> {
    let kind = ProofKind::try_from(submit.proof_kind).map_err(|_| {
        Status::invalid_argument(format!("unknown proof_kind value {}", submit.proof_kind))
    })?;
    let priority = match Priority::try_from(submit.priority) {
        Ok(Priority::Unspecified | Priority::Normal) => cuzk_sched::Priority::Normal,
        Ok(Priority::Low) => cuzk_sched::Priority::Low,
        Ok(Priority::High) => cuzk_sched::Priority::High,
        Ok(Priority::Critical) => cuzk_sched::Priority::Critical,
        Err(_) => {
            return Err(Status::invalid_argument(format!(
                "unknown priority value {}",
                submit.priority
            )))
        }
    };
    let mut request = if !submit.circuit.is_empty() {
        if kind != ProofKind::Unspecified {
            return Err(Status::invalid_argument(format!(
                "the request names both proof_kind {} and circuit {:?}; name one",
                kind.as_str_name(),
                submit.circuit
            )));
        }
        let inputs = Inputs {
            bytes: submit.circuit_inputs,
            fields: submit.circuit_fields.into_iter().collect(),
            ..Inputs::default()
        };
        Request::new(submit.circuit, inputs)
    } else {
        let Some(name) = filecoin_kind_name(kind) else {
            return Err(Status::invalid_argument(
                "the request names no proof_kind and no circuit",
            ));
        };
        if !registered(name) {
            return Err(Status::unimplemented(format!(
                "proof kind {} is not supported by this daemon yet",
                kind.as_str_name()
            )));
        }
        // The Filecoin kinds read the vanilla proof(s), the sector's numbers, the randomness
        // and the SnapDeals commitments; zeros and empty bytes are proto3's "unset", so only
        // set values are passed on.
        let mut inputs = Inputs::from_bytes(submit.vanilla_proof).with_parts(submit.vanilla_proofs);
        for (field, value) in [
            ("sector_size", submit.sector_size),
            ("registered_proof", submit.registered_proof),
            ("sector_number", submit.sector_number),
            ("miner_id", submit.miner_id),
            ("partition_index", u64::from(submit.partition_index)),
        ] {
            if value != 0 {
                inputs = inputs.with_field(field, value);
            }
        }
        for (field, value) in [
            ("randomness", submit.randomness),
            ("comm_r_old", submit.comm_r_old),
            ("comm_r_new", submit.comm_r_new),
            ("comm_d_new", submit.comm_d_new),
        ] {
            if !value.is_empty() {
                inputs = inputs.with_byte_field(field, value);
            }
        }
        Request::new(name, inputs)
    };
    request = request.with_priority(priority);
    if submit.deadline_ms > 0 {
        request = request.with_timeout(Duration::from_millis(submit.deadline_ms));
    }
    Ok(request)
}

/// A digest of everything `submit` asks for: every field but the request id (so a retry
/// of the same request under the same id has the same digest, and any change does not).
pub fn request_digest(submit: &mut SubmitProofRequest) -> Digest {
    let request_id = std::mem::take(&mut submit.request_id);
    let vanilla_proof = std::mem::take(&mut submit.vanilla_proof);
    let vanilla_proofs = std::mem::take(&mut submit.vanilla_proofs);
    let circuit_inputs = std::mem::take(&mut submit.circuit_inputs);
    let fields = std::mem::take(&mut submit.circuit_fields);
    // The small fields as protobuf (new fields are covered without a change here); the
    // large ones and the map (whose encoding order is not fixed) apart, length-prefixed.
    let mut state = blake2b_simd::Params::new().hash_length(32).to_state();
    let head = prost::Message::encode_to_vec(&*submit);
    let mut part = |bytes: &[u8]| {
        state.update(&(bytes.len() as u64).to_le_bytes());
        state.update(bytes);
    };
    part(&head);
    part(&vanilla_proof);
    part(&circuit_inputs);
    part(&(vanilla_proofs.len() as u64).to_le_bytes());
    for p in &vanilla_proofs {
        part(p);
    }
    let sorted: std::collections::BTreeMap<&String, &u64> = fields.iter().collect();
    for (name, value) in sorted {
        part(name.as_bytes());
        part(&value.to_le_bytes());
    }
    let mut digest = [0u8; 32];
    digest.copy_from_slice(state.finalize().as_bytes());
    submit.request_id = request_id;
    submit.vanilla_proof = vanilla_proof;
    submit.vanilla_proofs = vanilla_proofs;
    submit.circuit_inputs = circuit_inputs;
    submit.circuit_fields = fields;
    digest
}

/// The status of a refused submission.
pub fn submit_status(error: &SubmitError) -> Status {
    let message = error.to_string();
    match error {
        SubmitError::InvalidInput {
            source: cuzk_sched::plugin::InputError::MissingFile { .. },
            ..
        } => Status::failed_precondition(message),
        SubmitError::UnknownKind { .. } | SubmitError::InvalidInput { .. } => {
            Status::invalid_argument(message)
        }
        SubmitError::TooLarge { .. } | SubmitError::QueueFull { .. } => {
            Status::resource_exhausted(message)
        }
        SubmitError::ShuttingDown => Status::unavailable(message),
    }
}

/// Whole milliseconds, saturating.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The response for a job that produced its proofs.
pub fn completed(job_id: &str, output: &JobOutput, verifying_key: Vec<u8>) -> AwaitProofResponse {
    let t = &output.timings;
    AwaitProofResponse {
        job_id: job_id.to_string(),
        status: await_proof_response::Status::Completed.into(),
        proof: output.proof_bytes(),
        error_message: String::new(),
        queue_wait_ms: millis(t.queue_wait),
        srs_load_ms: millis(t.setup),
        synthesis_ms: millis(t.synthesis),
        gpu_compute_ms: millis(t.prove),
        total_ms: millis(t.total),
        circuit_key: output.circuit_key.clone(),
        verifying_key,
        partitions: u32::try_from(output.proofs.len()).unwrap_or(u32::MAX),
        verify_ms: millis(t.verify),
        verified: output.verified,
        prepare_ms: millis(t.prepare),
        devices: {
            let mut devices: Vec<u32> = t
                .partitions
                .iter()
                .map(|p| u32::try_from(p.lane.device).unwrap_or(u32::MAX))
                .collect();
            devices.sort_unstable();
            devices.dedup();
            devices
        },
    }
}

/// The response for a job that ended without proofs: CANCELLED for a cancellation, FAILED
/// for everything else (deadline and shutdown included), with the reason.
pub fn failed(job_id: &str, error: &JobError, total: Duration) -> AwaitProofResponse {
    let status = match error {
        JobError::Cancelled { .. } => await_proof_response::Status::Cancelled,
        _ => await_proof_response::Status::Failed,
    };
    AwaitProofResponse {
        job_id: job_id.to_string(),
        status: status.into(),
        error_message: error.to_string(),
        total_ms: millis(total),
        ..AwaitProofResponse::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    fn submit() -> SubmitProofRequest {
        SubmitProofRequest::default()
    }

    #[test]
    fn circuits_and_kinds_map_to_requests_or_codes() {
        let r = to_request(
            SubmitProofRequest {
                circuit: "synthetic-porep".into(),
                circuit_fields: [("log2_constraints".to_string(), 8)].into(),
                priority: Priority::High.into(),
                deadline_ms: 1000,
                ..submit()
            },
            |_| false,
        )
        .unwrap();
        assert_eq!(r.kind, "synthetic-porep");
        assert_eq!(r.inputs.fields["log2_constraints"], 8);
        assert_eq!(r.priority, cuzk_sched::Priority::High);
        assert!(r.deadline.is_some());

        let code = |s: SubmitProofRequest| to_request(s, |_| false).unwrap_err().code();
        assert_eq!(code(submit()), Code::InvalidArgument);
        let porep = SubmitProofRequest {
            proof_kind: ProofKind::PorepSealCommit.into(),
            ..submit()
        };
        let err = to_request(porep.clone(), |_| false).unwrap_err();
        assert_eq!(err.code(), Code::Unimplemented);
        assert!(err.message().contains("POREP_SEAL_COMMIT"));
        assert_eq!(
            to_request(porep, |_| true).unwrap().kind,
            "porep-seal-commit"
        );
        // Every Filecoin field Curio sends reaches the kind.
        let snap = to_request(
            SubmitProofRequest {
                proof_kind: ProofKind::SnapDealsUpdate.into(),
                vanilla_proof: vec![9],
                vanilla_proofs: vec![vec![5], vec![6, 7]],
                sector_size: 2048,
                registered_proof: 0,
                sector_number: 7,
                miner_id: 1000,
                partition_index: 2,
                randomness: vec![1; 32],
                comm_r_old: vec![2],
                comm_r_new: vec![3],
                comm_d_new: vec![4],
                ..submit()
            },
            |_| true,
        )
        .unwrap();
        assert_eq!(snap.kind, "snap-deals-update");
        let i = &snap.inputs;
        assert_eq!(i.bytes, [9]);
        assert_eq!(i.fields["sector_size"], 2048);
        assert!(!i.fields.contains_key("registered_proof"));
        assert_eq!(
            (
                i.fields["sector_number"],
                i.fields["miner_id"],
                i.fields["partition_index"]
            ),
            (7, 1000, 2)
        );
        assert_eq!(i.byte_fields["randomness"], [1; 32]);
        assert_eq!(i.parts, [vec![5], vec![6, 7]]);
        assert_eq!(i.byte_fields["comm_r_old"], [2]);
        assert_eq!(i.byte_fields["comm_r_new"], [3]);
        assert_eq!(i.byte_fields["comm_d_new"], [4]);
        assert_eq!(
            code(SubmitProofRequest {
                proof_kind: 42,
                ..submit()
            }),
            Code::InvalidArgument
        );
        assert_eq!(
            code(SubmitProofRequest {
                proof_kind: ProofKind::WinningPost.into(),
                circuit: "sha256".into(),
                ..submit()
            }),
            Code::InvalidArgument
        );
    }

    #[test]
    fn digests_cover_every_field_but_the_request_id() {
        let base = SubmitProofRequest {
            request_id: "porep-1-2".into(),
            proof_kind: ProofKind::PorepSealCommit.into(),
            vanilla_proof: vec![1; 100],
            circuit_fields: [("a".to_string(), 1), ("b".to_string(), 2)].into(),
            ..submit()
        };
        let digest = |mut r: SubmitProofRequest| {
            let before = r.clone();
            let d = request_digest(&mut r);
            assert_eq!(r, before, "the request is given back whole");
            d
        };
        let d = digest(base.clone());
        assert_eq!(
            d,
            digest(SubmitProofRequest {
                request_id: "other".into(),
                ..base.clone()
            })
        );
        let changed = [
            SubmitProofRequest {
                vanilla_proof: vec![1; 99],
                ..base.clone()
            },
            SubmitProofRequest {
                vanilla_proofs: vec![vec![1; 100]],
                ..base.clone()
            },
            SubmitProofRequest {
                sector_number: 3,
                ..base.clone()
            },
            SubmitProofRequest {
                comm_d_new: vec![0; 32],
                ..base.clone()
            },
            SubmitProofRequest {
                priority: Priority::High.into(),
                ..base.clone()
            },
            SubmitProofRequest {
                circuit_fields: [("a".to_string(), 2)].into(),
                ..base.clone()
            },
            SubmitProofRequest {
                circuit_inputs: vec![1],
                ..base.clone()
            },
        ];
        for c in changed {
            assert_ne!(digest(c.clone()), d, "{c:?}");
        }
        // Parts are told apart from one part of the same bytes.
        let two = SubmitProofRequest {
            vanilla_proofs: vec![vec![1], vec![2]],
            ..submit()
        };
        let one = SubmitProofRequest {
            vanilla_proofs: vec![vec![1, 2]],
            ..submit()
        };
        assert_ne!(digest(two), digest(one));
    }

    #[test]
    fn refusals_get_their_codes() {
        let full = SubmitError::QueueFull { limit: 3 };
        assert_eq!(submit_status(&full).code(), Code::ResourceExhausted);
        let missing = SubmitError::InvalidInput {
            kind: "porep-seal-commit".into(),
            source: cuzk_sched::plugin::InputError::MissingFile {
                what: "parameter file",
                path: "/p/v28-x.params".into(),
                reason: "not generated".into(),
            },
        };
        assert_eq!(submit_status(&missing).code(), Code::FailedPrecondition);
        assert!(submit_status(&missing)
            .message()
            .contains("/p/v28-x.params"));
        let unknown = SubmitError::UnknownKind {
            kind: "x".into(),
            known: vec!["sha256".into()],
        };
        assert_eq!(submit_status(&unknown).code(), Code::InvalidArgument);
        assert!(submit_status(&unknown).message().contains("sha256"));
        assert_eq!(
            submit_status(&SubmitError::ShuttingDown).code(),
            Code::Unavailable
        );
    }
}
