//! Running the daemon: bind first (so a taken port fails at once), start the scheduler,
//! serve gRPC, health and metrics, log "ready", and on a signal drain in order: refuse new
//! work, stop accepting connections, settle the jobs, deliver their answers, exit.

pub mod admission;

use crate::auth::BearerAuth;
use crate::config::{hex, BackendChoice, Settings};
use crate::engine::Engine;
use crate::error::StartError;
use crate::proto::proving_engine_server::ProvingEngineServer;
use crate::service::ProvingService;
use crate::srs::SrsAccess;
use admission::{Admission, Limits, RequestBudget};
use cuzk_gpu::{FaultPlan, GpuBackend, GpuConfig, ParamgenChoice};
use cuzk_mem::{Budget, Bytes};
use cuzk_sched::plugin::AnyBackend;
use cuzk_sched::{CpuBackend, Inputs, Registry, Scheduler};
use std::future::Future;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tonic::codegen::http;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::server::TcpIncoming;
use tonic::transport::Server;

/// After the jobs are settled, how long connections get to take their last answers.
const DELIVERY_GRACE: Duration = Duration::from_secs(10);

/// The daemon's sockets, bound before anything else starts.
#[derive(Debug)]
pub struct Listeners {
    grpc: TcpListener,
    metrics: Option<TcpListener>,
}

impl Listeners {
    /// Binds the gRPC address and, if configured, the metrics address. A taken port is an
    /// error naming the address, returned before any other start-up work.
    pub fn bind(settings: &Settings) -> Result<Listeners, StartError> {
        let bind = |what, addr: SocketAddr| {
            let listener = TcpListener::bind(addr).map_err(|source| StartError::Bind {
                what,
                addr,
                source,
            })?;
            listener
                .set_nonblocking(true)
                .map_err(|source| StartError::Bind { what, addr, source })?;
            Ok::<_, StartError>(listener)
        };
        Ok(Listeners {
            grpc: bind("gRPC", settings.listen)?,
            metrics: settings
                .metrics_listen
                .map(|addr| bind("metrics", addr))
                .transpose()?,
        })
    }

    /// The bound gRPC address (its real port when the configuration asked for port 0).
    pub fn grpc_addr(&self) -> std::io::Result<SocketAddr> {
        self.grpc.local_addr()
    }
}

/// Serves until `shutdown` resolves (to the name of what asked for it), then drains and
/// returns. Must run inside a tokio runtime.
pub async fn run(
    settings: Settings,
    listeners: Listeners,
    shutdown: impl Future<Output = &'static str>,
) -> Result<(), StartError> {
    let host = settings.host_budget.capacity()?;
    let (backend, budget) = backend(&settings, host)?;
    let (registry, param_writes) = registry(&settings, &*backend);
    let scheduler = Arc::new(Scheduler::start(
        settings.scheduler.clone(),
        backend,
        registry,
        budget,
    )?);
    preload(&scheduler, &settings).await?;
    let engine = Arc::new(Engine::new(
        Arc::clone(&scheduler),
        settings.scheduler.finished_history,
        settings.retry_grace,
    ));

    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<ProvingEngineServer<ProvingService>>()
        .await;
    let limit = settings.max_message_size;
    let service = ProvingService::new(Arc::clone(&engine))
        .with_srs_access(SrsAccess::from_settings(&settings));
    let proving = ProvingEngineServer::new(service)
        .max_decoding_message_size(limit)
        .max_encoding_message_size(limit);
    let auth = BearerAuth::new(settings.auth_token.clone());
    let proving = InterceptedService::new(proving, auth.clone());
    // Outside the token check: a call refused for its token never has its body read, so
    // it claims nothing. The health service is left out: it must answer a busy daemon.
    let limits = Limits::resolve(
        settings.request_bytes_per_call,
        settings.request_bytes_in_flight,
        settings.max_message_size,
        host,
    );
    tracing::info!(
        per_call = %Bytes(limits.per_call),
        in_flight = %Bytes(limits.in_flight),
        per_call_set_by = limits.per_call_set_by,
        "request admission"
    );
    let proving = Admission::new(proving, RequestBudget::new(limits));

    let (stop, stopped) = watch::channel(false);
    let grpc_addr = listeners.grpc.local_addr().map_err(StartError::Runtime)?;
    let incoming =
        tokio::net::TcpListener::from_std(listeners.grpc).map_err(StartError::Runtime)?;
    let incoming = TcpIncoming::from(incoming).with_nodelay(Some(true));
    let mut stop_grpc = stopped.clone();
    let mut server = tokio::spawn(
        Server::builder()
            .layer(tower::util::MapResponseLayer::new(too_large_is_exhausted))
            .add_service(health_service)
            .add_service(proving)
            .serve_with_incoming_shutdown(incoming, async move {
                let _ = stop_grpc.wait_for(|s| *s).await;
            }),
    );
    let mut metrics_addr = String::from("off");
    let metrics_task = match listeners.metrics {
        Some(listener) => {
            metrics_addr = listener
                .local_addr()
                .map_err(StartError::Runtime)?
                .to_string();
            let listener =
                tokio::net::TcpListener::from_std(listener).map_err(StartError::Runtime)?;
            Some(tokio::spawn(crate::http::serve(
                listener,
                Arc::clone(&engine),
                auth,
                stopped.clone(),
            )))
        }
        None => None,
    };

    // The listeners are bound and the server task is running: connections queue in the
    // kernel and are served from here on, so this is the moment to say so.
    let gpus: Vec<String> = scheduler
        .metrics()
        .devices
        .iter()
        .map(|d| format!("{} {}", d.ordinal, d.name))
        .collect();
    tracing::info!(
        address = %grpc_addr,
        metrics = %metrics_addr,
        backend = scheduler.backend_name(),
        lanes = %scheduler.lanes(),
        gpus = ?gpus,
        budget = %Bytes(scheduler.budget().capacity()),
        parameters = ?scheduler.registry().cached_keys(),
        circuits = ?scheduler.registry().kind_names(),
        auth = settings.auth_token.is_some(),
        pid = std::process::id(),
        "ready"
    );

    tokio::select! {
        signal = shutdown => tracing::info!(signal, grace = ?settings.shutdown_grace, "shutting down: refusing new jobs"),
        ended = &mut server => {
            // The server never ends on its own; if it did, say why and stop the jobs.
            tracing::error!(?ended, "the gRPC server stopped unexpectedly");
        }
    }
    engine.drain();
    health
        .set_not_serving::<ProvingEngineServer<ProvingService>>()
        .await;
    health
        .set_service_status("", tonic_health::ServingStatus::NotServing)
        .await;
    // New connections are refused from here; calls in flight (AwaitProof, Prove) go on
    // and receive their jobs' outcomes below.
    let _ = stop.send(true);
    let grace = settings.shutdown_grace;
    let settle = Arc::clone(&scheduler);
    let report = tokio::task::spawn_blocking(move || settle.shutdown(grace))
        .await
        .unwrap_or_default();
    tracing::info!(
        finished = report.finished_in_grace,
        stopped = report.stopped,
        "jobs settled"
    );
    // Parameter files generated in this run are written before it ends, so that the next
    // start finds them instead of generating again.
    let _ = tokio::task::spawn_blocking(move || param_writes.wait()).await;
    if !server.is_finished()
        && tokio::time::timeout(DELIVERY_GRACE, &mut server)
            .await
            .is_err()
    {
        tracing::warn!("connections still open after {DELIVERY_GRACE:?}; closing them");
        server.abort();
    }
    if let Some(task) = metrics_task {
        let _ = task.await;
    }
    tracing::info!(address = %grpc_addr, "stopped; the port is released");
    Ok(())
}

/// Which backend `choice` resolves to, given what probing the driver found (the number of
/// devices, or why there is no driver).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// The CPU backend, and why (for the log).
    Cpu(String),
    /// The CUDA backend.
    Cuda,
}

/// The built-in circuits and, with the `filecoin` feature, the four Filecoin proof kinds over
/// the configured parameter folder, whose missing test parameters the backend's generator
/// makes (the GPU's on the CUDA backend unless `[cuda] paramgen = "cpu"`).
fn registry(settings: &Settings, backend: &dyn AnyBackend) -> (Registry, ParamWrites) {
    #[cfg_attr(not(feature = "filecoin"), allow(unused_mut))] // only the feature adds kinds
    let mut registry = Registry::with_builtins();
    #[cfg(feature = "filecoin")]
    let writes = {
        use cuzk_filecoin::{CachePolicy, DigestCheck, FilecoinKind, Generator, ParamCache};
        let f = &settings.filecoin;
        let generator = Generator::of(backend);
        let policy = CachePolicy {
            generate_up_to: f.generate_up_to,
            generator: generator.clone(),
            digests: if f.verify_digests {
                DigestCheck::Verify
            } else {
                DigestCheck::Skip
            },
            write_generated: f.write_generated,
            native_witness: f.native_witness,
            ..CachePolicy::default()
        };
        tracing::info!(
            param_dir = %f.param_dir.display(),
            generate_up_to = f.generate_up_to,
            %generator,
            verify_digests = f.verify_digests,
            write_generated = f.write_generated,
            native_witness = f.native_witness,
            "Filecoin proof kinds served"
        );
        let cache = Arc::new(ParamCache::with_policy(&f.param_dir, policy));
        for kind in FilecoinKind::all(Arc::clone(&cache)) {
            registry
                .register(Arc::new(kind))
                .expect("the Filecoin kinds' names differ from the built-ins'");
        }
        ParamWrites(Some(cache))
    };
    #[cfg(not(feature = "filecoin"))]
    let writes = {
        let _ = (settings, backend);
        ParamWrites::default()
    };
    (registry, writes)
}

/// The Filecoin parameter cache, whose generated parameter files the daemon waits for
/// before it exits.
#[derive(Default)]
struct ParamWrites(#[cfg(feature = "filecoin")] Option<Arc<cuzk_filecoin::ParamCache>>);

impl ParamWrites {
    fn wait(&self) {
        #[cfg(feature = "filecoin")]
        if let Some(cache) = &self.0 {
            cache.wait_for_writes();
        }
    }
}

/// Resolves the configured backend: `auto` is CUDA when the driver reports a device.
pub fn resolve_backend(choice: BackendChoice, probe: Result<usize, String>) -> Resolved {
    match (choice, probe) {
        (BackendChoice::Cpu, _) => Resolved::Cpu("configured".into()),
        (BackendChoice::Cuda, _) => Resolved::Cuda,
        (BackendChoice::Auto, Ok(0)) => Resolved::Cpu("the CUDA driver reports no GPU".into()),
        (BackendChoice::Auto, Ok(_)) => Resolved::Cuda,
        (BackendChoice::Auto, Err(reason)) => {
            Resolved::Cpu(format!("no usable CUDA driver ({reason})"))
        }
    }
}

/// The prover backend for the configuration and the host budget partitions are admitted
/// against (the host budget less the GPUs' pinned pools).
fn backend(settings: &Settings, host: u64) -> Result<(Arc<dyn AnyBackend>, Budget), StartError> {
    let probe = cuzk_gpu::device_count().map_err(|e| e.to_string());
    let reason = match resolve_backend(settings.backend, probe.clone()) {
        Resolved::Cpu(reason) => reason,
        Resolved::Cuda => match gpu_backend(settings, host, probe.unwrap_or(0)) {
            Ok(chosen) => return Ok(chosen),
            Err(e) if settings.backend == BackendChoice::Auto => {
                tracing::warn!(error = %e, "backend auto: the CUDA backend could not start");
                format!("the CUDA backend could not start: {e}")
            }
            Err(e) => return Err(e),
        },
    };
    tracing::info!(backend = "cpu", reason = %reason, "proving on the CPU");
    let budget = Budget::new("host", host);
    tracing::info!(capacity = host, human = %Bytes(host), policy = ?settings.host_budget, "host memory budget");
    let lanes = settings.workers_per_device.unwrap_or(1);
    cpu_pool(settings.cpu_threads, 0);
    Ok((Arc::new(CpuBackend::with_lanes(1, lanes)), budget))
}

/// Sizes the shared CPU pool (synthesis, evaluation, CPU proofs): `configured` threads, or
/// every core less one per GPU lane, so that a lane thread feeding its GPU kernels is never
/// left waiting for a core behind a pool that holds them all (its kernels would then wait on
/// the host). A pool already started (a second daemon in one process) is kept as it is.
fn cpu_pool(configured: Option<usize>, gpu_lanes: usize) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = configured.unwrap_or_else(|| cores.saturating_sub(gpu_lanes).max(1));
    match rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("cuzk-cpu-{i}"))
        .build_global()
    {
        Ok(()) => tracing::info!(threads, cores, gpu_lanes, "CPU pool"),
        Err(e) => tracing::debug!(error = %e, "CPU pool already started; kept"),
    }
}

/// The CUDA backend, with its pinned pools taken out of the `host` bytes of the budget.
fn gpu_backend(
    settings: &Settings,
    host: u64,
    devices_found: usize,
) -> Result<(Arc<dyn AnyBackend>, Budget), StartError> {
    let c = &settings.cuda;
    let devices = if settings.devices.is_empty() {
        devices_found
    } else {
        settings.devices.len()
    };
    let pinned = c
        .pinned_memory
        .unwrap_or_else(|| cuzk_gpu::sizes::default_pinned_bytes(host, devices));
    let pinned_total = pinned.saturating_mul(devices as u64);
    if pinned_total >= host {
        return Err(StartError::Config(crate::ConfigError::Invalid {
            key: "cuda.pinned_memory",
            value: Bytes(pinned).to_string(),
            reason: format!(
                "× {devices} GPU(s) leaves nothing of the host budget ({}); lower it or raise memory.host_budget",
                Bytes(host)
            ),
        }));
    }
    let config = GpuConfig {
        devices: settings.devices.clone(),
        workers_per_device: settings.workers_per_device.unwrap_or(2),
        vram: c.vram,
        msm_vram: c.msm_vram,
        residency: c.residency,
        idle_evict: c.idle_evict,
        pinned_bytes: Some(pinned),
        pinned_idle: c.pinned_idle,
        device_eval: c.device_eval,
        keep_freed_vram: c.keep_freed_vram,
        paramgen: if c.gpu_paramgen {
            ParamgenChoice::Auto
        } else {
            ParamgenChoice::Cpu
        },
        faults: FaultPlan::from_env()?,
    };
    let backend = GpuBackend::new(config)?;
    let lanes = backend.lanes();
    cpu_pool(
        settings.cpu_threads,
        lanes.devices * lanes.workers_per_device,
    );
    let left = host - backend.pinned_bytes();
    tracing::info!(
        capacity = left,
        human = %Bytes(left),
        pinned_pools = %Bytes(backend.pinned_bytes()),
        policy = ?settings.host_budget,
        "host memory budget"
    );
    Ok((Arc::new(backend), Budget::new("host", left)))
}

/// Sets up every `[[preload]]` circuit before ready, so that its first job pays no setup.
async fn preload(scheduler: &Arc<Scheduler>, settings: &Settings) -> Result<(), StartError> {
    for p in &settings.preload {
        let failed = |reason: String| StartError::Preload {
            circuit: p.circuit.clone(),
            reason,
        };
        let inputs = Inputs {
            bytes: hex(&p.input_hex).map_err(|e| failed(e.to_string()))?,
            fields: p.fields.clone(),
            ..Inputs::default()
        };
        tracing::info!(circuit = %p.circuit, fields = ?p.fields, "preloading parameters");
        let (scheduler, circuit) = (Arc::clone(scheduler), p.circuit.clone());
        // Pinned: what the configuration preloads stays resident.
        let made = tokio::task::spawn_blocking(move || scheduler.preload(&circuit, &inputs, true))
            .await
            .map_err(|e| failed(e.to_string()))?;
        let report = made.map_err(|e| failed(e.to_string()))?;
        tracing::info!(
            circuit = %report.circuit_key,
            setup = ?report.setup_time,
            load = ?report.load_time,
            devices = report.load.devices,
            resident = report.load.resident,
            "parameters loaded"
        );
    }
    Ok(())
}

/// tonic answers a request over the size limit with OUT_OF_RANGE; gRPC's status-code
/// guide asks for RESOURCE_EXHAUSTED, which is also what callers here test for.
fn too_large_is_exhausted<B>(mut response: http::Response<B>) -> http::Response<B> {
    let headers = response.headers_mut();
    let out_of_range = headers.get("grpc-status").map(|v| v.as_bytes()) == Some(b"11");
    let too_large = headers.get("grpc-message").is_some_and(|m| {
        let m = m.as_bytes();
        m.windows(9).any(|w| w == b"too large") || m.windows(11).any(|w| w == b"too%20large")
    });
    if out_of_range && too_large {
        headers.insert("grpc-status", http::HeaderValue::from_static("8"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_is_cuda_only_with_a_device() {
        let cpu = |r: Resolved| matches!(r, Resolved::Cpu(_));
        assert!(cpu(resolve_backend(BackendChoice::Auto, Ok(0))));
        assert!(cpu(resolve_backend(
            BackendChoice::Auto,
            Err("no CUDA driver".into())
        )));
        assert_eq!(resolve_backend(BackendChoice::Auto, Ok(2)), Resolved::Cuda);
        assert!(cpu(resolve_backend(BackendChoice::Cpu, Ok(8))));
        assert_eq!(
            resolve_backend(BackendChoice::Cuda, Err("x".into())),
            Resolved::Cuda
        );
        let Resolved::Cpu(reason) = resolve_backend(BackendChoice::Auto, Err("libcuda".into()))
        else {
            unreachable!()
        };
        assert!(reason.contains("libcuda"));
    }
}
