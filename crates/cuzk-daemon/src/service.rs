//! cuzk.v1.ProvingEngine: each RPC of the wire interface mapped onto the engine, with its
//! outcome counted by method and code.

use crate::engine::{Engine, Submitted, Via, VERSION};
use crate::proto::proving_engine_server::ProvingEngine;
use crate::proto::GpuStatus;
use crate::proto::{
    srs_status, AwaitProofRequest, AwaitProofResponse, CancelProofRequest, CancelProofResponse,
    EvictSrsRequest, EvictSrsResponse, GetMetricsRequest, GetMetricsResponse, GetStatusRequest,
    GetStatusResponse, PreloadSrsRequest, PreloadSrsResponse, ProveRequest, ProveResponse,
    QueueStatus, SrsStatus, SubmitProofRequest, SubmitProofResponse,
};
use crate::srs::{preload_status, SrsAccess};
use cuzk_sched::{JobId, JobState};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tonic::{Request, Response, Status};

/// The gRPC service over an [`Engine`]; cheap to clone.
#[derive(Clone, Debug)]
pub struct ProvingService {
    engine: Arc<Engine>,
    srs: SrsAccess,
}

impl ProvingService {
    /// The service of `engine`.
    pub fn new(engine: Arc<Engine>) -> ProvingService {
        ProvingService {
            engine,
            srs: SrsAccess::open(),
        }
    }

    /// The same service with `PreloadSRS` and `EvictSRS` open as `access` says.
    pub fn with_srs_access(self, access: SrsAccess) -> ProvingService {
        ProvingService {
            srs: access,
            ..self
        }
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
        // Parameters on a device are HOT; set up but only on the host, WARM. Each is named
        // as PreloadSRS takes it: a Filecoin circuit by Curio's id (`porep-32g`), others by
        // their circuit key.
        let registry = scheduler.registry();
        let mut loaded: BTreeMap<String, SrsStatus> = BTreeMap::new();
        for key in registry.cached_keys() {
            let size_bytes = registry.cached(&key).map_or(0, |s| s.parameter_bytes());
            loaded.insert(
                key.clone(),
                SrsStatus {
                    circuit_id: registry.public_id(&key),
                    tier: srs_status::Tier::Warm.into(),
                    size_bytes,
                    ref_count: 0,
                },
            );
        }
        for p in m.devices.iter().flat_map(|d| &d.parameters) {
            let entry = loaded
                .entry(p.circuit_key.clone())
                .or_insert_with(|| SrsStatus {
                    circuit_id: registry.public_id(&p.circuit_key),
                    ..SrsStatus::default()
                });
            entry.tier = srs_status::Tier::Hot.into();
            entry.ref_count += u32::try_from(p.in_use).unwrap_or(u32::MAX);
        }
        let loaded_srs = loaded.into_values().collect();
        let kinds = self.engine.jobs().unfinished();
        let gpus = m
            .devices
            .iter()
            .map(|d| {
                // The job on the device's first busy lane.
                let job = m
                    .lanes
                    .iter()
                    .filter(|l| l.lane.device == d.index)
                    .find_map(|l| l.job);
                let kind = job
                    .and_then(|j| kinds.iter().find(|(id, _)| *id == j.0))
                    .map(|(_, kind)| kind.clone())
                    .unwrap_or_default();
                GpuStatus {
                    ordinal: u32::try_from(d.ordinal).unwrap_or(u32::MAX),
                    name: d.name.clone(),
                    vram_total_bytes: d.driver_total,
                    vram_free_bytes: d.driver_free,
                    current_job_id: job
                        .map(|j| self.engine.jobs().wire_id(j.0))
                        .unwrap_or_default(),
                    current_proof_kind: kind,
                }
            })
            .collect();
        let p = &m.partitions;
        GetStatusResponse {
            gpus,
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

/// Submits on a blocking thread: reading a request's inputs can take a while (a 32GiB
/// sector's C1 output is tens of megabytes of JSON), and must not hold up the runtime's
/// workers, which serve every other call.
async fn submit_blocking(
    engine: &Arc<Engine>,
    submit: SubmitProofRequest,
    via: Via,
) -> Result<Submitted, Status> {
    let engine = Arc::clone(engine);
    tokio::task::spawn_blocking(move || engine.submit(submit, via))
        .await
        .map_err(|e| Status::internal(format!("the submission task failed: {e}")))?
}

#[tonic::async_trait]
impl ProvingEngine for ProvingService {
    async fn submit_proof(
        &self,
        request: Request<SubmitProofRequest>,
    ) -> Result<Response<SubmitProofResponse>, Status> {
        let result = submit_blocking(&self.engine, request.into_inner(), Via::Submit)
            .await
            .map(|s| SubmitProofResponse {
                job_id: s.job_id,
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
            let submitted = submit_blocking(&self.engine, submit, Via::Prove).await?;
            // A caller going away stops waiting; the job goes on for the retry grace period
            // when nobody else waits on it.
            let result = self.engine.wait(&submitted.job_id, None).await;
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
        let scheduler = self.engine.scheduler_arc();
        let result = match self.srs.check("PreloadSRS") {
            Err(refused) => Err(refused),
            // Setting a circuit up can take minutes: off the async runtime. Only the ids
            // the daemon knows are set up (preload_named), reserving their memory meanwhile.
            Ok(()) => match tokio::task::spawn_blocking(move || scheduler.preload_named(&id, true))
                .await
            {
                Err(e) => Err(Status::internal(format!("the preload task failed: {e}"))),
                Ok(Ok(report)) => Ok(PreloadSrsResponse {
                    already_loaded: report.was_cached && report.load.already == report.load.devices,
                    load_time_ms: u64::try_from((report.setup_time + report.load_time).as_millis())
                        .unwrap_or(u64::MAX),
                }),
                Ok(Err(e)) => Err(preload_status(&e)),
            },
        };
        self.count("PreloadSRS", result)
    }

    async fn evict_srs(
        &self,
        request: Request<EvictSrsRequest>,
    ) -> Result<Response<EvictSrsResponse>, Status> {
        let id = request.into_inner().circuit_id;
        let scheduler = self.engine.scheduler_arc();
        let result = match self.srs.check("EvictSRS") {
            Err(refused) => Err(refused),
            // Freeing device memory waits for the device.
            Ok(()) => tokio::task::spawn_blocking(move || scheduler.evict(&id))
                .await
                .map(|r| EvictSrsResponse {
                    was_loaded: r.was_loaded,
                    freed_bytes: r.freed_bytes,
                })
                .map_err(|e| Status::internal(format!("the evict task failed: {e}"))),
        };
        self.count("EvictSRS", result)
    }
}
