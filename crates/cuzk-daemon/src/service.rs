//! cuzk.v1.ProvingEngine: each RPC of the wire interface mapped onto the engine, with its
//! outcome counted by method and code.

use crate::engine::{CancelOnDrop, Engine, VERSION};
use crate::proto::proving_engine_server::ProvingEngine;
use crate::proto::{
    srs_status, AwaitProofRequest, AwaitProofResponse, CancelProofRequest, CancelProofResponse,
    EvictSrsRequest, EvictSrsResponse, GetMetricsRequest, GetMetricsResponse, GetStatusRequest,
    GetStatusResponse, PreloadSrsRequest, PreloadSrsResponse, ProveRequest, ProveResponse,
    QueueStatus, SrsStatus, SubmitProofRequest, SubmitProofResponse,
};
use cuzk_sched::{JobId, JobState};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tonic::{Request, Response, Status};

/// The gRPC service over an [`Engine`]; cheap to clone.
#[derive(Clone, Debug)]
pub struct ProvingService {
    engine: Arc<Engine>,
}

impl ProvingService {
    /// The service of `engine`.
    pub fn new(engine: Arc<Engine>) -> ProvingService {
        ProvingService { engine }
    }

    fn count<T>(
        &self,
        method: &'static str,
        result: Result<T, Status>,
    ) -> Result<Response<T>, Status> {
        let code = result
            .as_ref()
            .map_or_else(Status::code, |_| tonic::Code::Ok);
        self.engine.counters().rpc(method, code);
        result.map(Response::new)
    }

    fn status(&self) -> GetStatusResponse {
        let scheduler = self.engine.scheduler();
        let m = scheduler.metrics();
        let mut queues: BTreeMap<String, QueueStatus> = BTreeMap::new();
        for (id, kind) in self.engine.jobs().unfinished() {
            let state = scheduler.status(JobId(id)).map(|s| s.state);
            let queue = queues.entry(kind.clone()).or_insert_with(|| QueueStatus {
                proof_kind: kind,
                ..QueueStatus::default()
            });
            match state {
                Ok(JobState::Queued) => queue.pending += 1,
                Ok(JobState::Running) => queue.in_progress += 1,
                _ => {}
            }
        }
        let loaded_srs = scheduler
            .registry()
            .cached_keys()
            .into_iter()
            .map(|circuit_id| SrsStatus {
                circuit_id,
                tier: srs_status::Tier::Hot.into(),
                size_bytes: 0,
                ref_count: 0,
            })
            .collect();
        let p = &m.partitions;
        GetStatusResponse {
            // The CPU backend has no GPUs to report.
            gpus: Vec::new(),
            loaded_srs,
            queues: queues.into_values().collect(),
            total_proofs_completed: m.jobs.succeeded,
            total_proofs_failed: m.jobs.failed,
            uptime_seconds: m.uptime.as_secs(),
            pinned_memory_bytes: m.memory.used,
            pinned_memory_limit_bytes: m.memory.capacity,
            backend: m.backend.clone(),
            lanes: u32::try_from(m.lanes.len()).unwrap_or(u32::MAX),
            circuits: scheduler.registry().kind_names(),
            version: VERSION.to_string(),
            partitions_in_flight: u32::try_from(p.synthesizing + p.ready + p.proving)
                .unwrap_or(u32::MAX),
            memory_high_water_bytes: m.memory.high_water,
        }
    }
}

fn wait_limit(timeout_ms: u64) -> Option<Duration> {
    (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms))
}

#[tonic::async_trait]
impl ProvingEngine for ProvingService {
    async fn submit_proof(
        &self,
        request: Request<SubmitProofRequest>,
    ) -> Result<Response<SubmitProofResponse>, Status> {
        let result = self
            .engine
            .submit(request.into_inner())
            .map(|s| SubmitProofResponse {
                job_id: s.id.to_string(),
                queue_position: s.queue_position,
                assigned_gpu: String::new(),
            });
        self.count("SubmitProof", result)
    }

    async fn await_proof(
        &self,
        request: Request<AwaitProofRequest>,
    ) -> Result<Response<AwaitProofResponse>, Status> {
        let r = request.into_inner();
        let result = self.engine.wait(&r.job_id, wait_limit(r.timeout_ms)).await;
        self.count("AwaitProof", result)
    }

    async fn prove(
        &self,
        request: Request<ProveRequest>,
    ) -> Result<Response<ProveResponse>, Status> {
        let result = async {
            let submit = request
                .into_inner()
                .submit
                .ok_or_else(|| Status::invalid_argument("ProveRequest.submit is missing"))?;
            let submitted = self.engine.submit(submit)?;
            let guard = CancelOnDrop::new(&self.engine, submitted.id);
            let result = self.engine.wait(&submitted.id.to_string(), None).await;
            guard.disarm();
            result.map(|r| ProveResponse { result: Some(r) })
        }
        .await;
        self.count("Prove", result)
    }

    async fn cancel_proof(
        &self,
        request: Request<CancelProofRequest>,
    ) -> Result<Response<CancelProofResponse>, Status> {
        let result = self
            .engine
            .cancel(&request.into_inner().job_id)
            .map(|was_running| CancelProofResponse { was_running });
        self.count("CancelProof", result)
    }

    async fn get_status(
        &self,
        _request: Request<GetStatusRequest>,
    ) -> Result<Response<GetStatusResponse>, Status> {
        let status = self.status();
        self.count("GetStatus", Ok(status))
    }

    async fn get_metrics(
        &self,
        _request: Request<GetMetricsRequest>,
    ) -> Result<Response<GetMetricsResponse>, Status> {
        let prometheus_text = self.engine.metrics_text();
        self.count("GetMetrics", Ok(GetMetricsResponse { prometheus_text }))
    }

    async fn preload_srs(
        &self,
        request: Request<PreloadSrsRequest>,
    ) -> Result<Response<PreloadSrsResponse>, Status> {
        let id = request.into_inner().circuit_id;
        let registry = self.engine.scheduler().registry();
        let result = if registry.cached(&id).is_some() {
            Ok(PreloadSrsResponse {
                already_loaded: true,
                load_time_ms: 0,
            })
        } else {
            // Parameters are made per circuit shape, which a bare id does not fix.
            Err(Status::unimplemented(format!(
                "cannot preload {id:?} by id: a circuit's parameters are loaded by its first job \
                 or by a [[preload]] entry in the configuration (loaded: {:?})",
                registry.cached_keys()
            )))
        };
        self.count("PreloadSRS", result)
    }

    async fn evict_srs(
        &self,
        request: Request<EvictSrsRequest>,
    ) -> Result<Response<EvictSrsResponse>, Status> {
        let id = request.into_inner().circuit_id;
        let registry = self.engine.scheduler().registry();
        let result = if registry.cached(&id).is_none() {
            Ok(EvictSrsResponse {
                was_loaded: false,
                freed_bytes: 0,
            })
        } else {
            Err(Status::unimplemented(format!(
                "evicting loaded parameters ({id:?}) is not supported yet; restart the daemon to free them"
            )))
        };
        self.count("EvictSRS", result)
    }
}
