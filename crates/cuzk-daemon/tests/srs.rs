//! `PreloadSRS` and `EvictSRS` against a spawned daemon: only the ids the daemon knows are
//! set up, with their memory reserved; a missing Filecoin parameter file is
//! FAILED_PRECONDITION naming it; an open remote listener refuses both calls; and
//! `--check-config` never prints the token.

mod common;

use common::{Launch, BINARY};
use cuzk_daemon::proto::{EvictSrsRequest, GetMetricsRequest, GetStatusRequest, PreloadSrsRequest};
use std::process::Command;
use std::time::{Duration, Instant};
use tonic::Code;

fn preload(id: &str) -> PreloadSrsRequest {
    PreloadSrsRequest {
        circuit_id: id.to_string(),
    }
}

fn evict(id: &str) -> EvictSrsRequest {
    EvictSrsRequest {
        circuit_id: id.to_string(),
    }
}

fn assert_mentions(status: &tonic::Status, code: Code, parts: &[&str]) {
    assert_eq!(status.code(), code, "{status:?}");
    for part in parts {
        assert!(status.message().contains(part), "{part:?}: {status:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn preload_takes_only_the_ids_the_daemon_knows() {
    let params = tempfile::tempdir().unwrap();
    let config = format!(
        "[memory]\nhost_budget = \"8GiB\"\n[prover]\nbackend = \"cpu\"\n\
         [filecoin]\nparam_dir = {:?}\n\
         [[preload]]\ncircuit = \"synthetic-porep\"\nfields = {{ num_constraints = 254 }}\n",
        params.path().display().to_string()
    );
    let daemon = Launch::new(&config).start();
    let mut client = daemon.client().await;

    // A key of a huge circuit is refused at once, naming it and what is accepted, and
    // sets nothing up.
    let t = Instant::now();
    let status = client
        .preload_srs(preload("synthetic-porep-134217728"))
        .await
        .unwrap_err();
    assert_mentions(
        &status,
        Code::NotFound,
        &[
            "synthetic-porep-134217728",
            "porep-32g",
            "winning-2k",
            "[[preload]]",
            "synthetic-porep-254",
        ],
    );
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());

    // The configured circuit: already loaded at start; evicted, then preloaded again by key.
    let loaded = client
        .preload_srs(preload("synthetic-porep-254"))
        .await
        .unwrap()
        .into_inner();
    assert!(loaded.already_loaded);
    let status = client
        .get_status(GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    let ids: Vec<&str> = status
        .loaded_srs
        .iter()
        .map(|s| s.circuit_id.as_str())
        .collect();
    assert_eq!(ids, ["synthetic-porep-254"]);
    let evicted = client
        .evict_srs(evict("synthetic-porep-254"))
        .await
        .unwrap()
        .into_inner();
    assert!(evicted.was_loaded && evicted.freed_bytes > 0);
    let again = client
        .preload_srs(preload("synthetic-porep-254"))
        .await
        .unwrap()
        .into_inner();
    assert!(!again.already_loaded);

    // A Filecoin circuit whose parameters are not in the folder (and may not be generated):
    // FAILED_PRECONDITION naming the file.
    let status = client.preload_srs(preload("winning-2k")).await.unwrap_err();
    assert_mentions(
        &status,
        Code::FailedPrecondition,
        &[&params.path().display().to_string(), ".params", "missing"],
    );
    // One whose setup the budget could never hold: RESOURCE_EXHAUSTED naming the budget.
    let status = client.preload_srs(preload("porep-64g")).await.unwrap_err();
    assert_mentions(
        &status,
        Code::ResourceExhausted,
        &["budget host", "stacked-proof-of-replication"],
    );
    // The daemon serves on, with nothing left reserved but the loaded setup's own bytes.
    let status = client
        .get_status(GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status.loaded_srs.len(), 1);
    let metrics = client
        .get_metrics(GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text;
    let setup_bytes: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("cuzk_setup_bytes "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .expect("cuzk_setup_bytes in the metrics") as u64;
    assert!(setup_bytes > 0);
    assert_eq!(status.pinned_memory_bytes, setup_bytes);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_open_remote_listener_refuses_the_parameter_calls() {
    let config = "[memory]\nhost_budget = \"2GiB\"\n[server]\nallow_remote_without_token = true\n";
    let mut daemon = Launch::new(config)
        .args(&["--listen", "0.0.0.0:0", "--metrics-listen", "127.0.0.1:0"])
        .start();
    daemon.addr.set_ip([127, 0, 0, 1].into());
    let mut client = daemon.client().await;
    let status = client.preload_srs(preload("winning-2k")).await.unwrap_err();
    let keys = [
        "server.allow_remote_without_token",
        "server.auth_token",
        "0.0.0.0:",
    ];
    assert_mentions(
        &status,
        Code::PermissionDenied,
        &[&["PreloadSRS"], &keys[..]].concat(),
    );
    let status = client.evict_srs(evict("winning-2k")).await.unwrap_err();
    assert_mentions(
        &status,
        Code::PermissionDenied,
        &[&["EvictSRS"], &keys[..]].concat(),
    );
    // Everything else is served.
    client.get_status(GetStatusRequest {}).await.unwrap();

    // With a token, the token guards these calls as every other: past it, they are served.
    let config = "[memory]\nhost_budget = \"2GiB\"\n[server]\nauth_token = \"s3cret\"\n";
    let mut daemon = Launch::new(config)
        .args(&["--listen", "0.0.0.0:0", "--metrics-listen", "127.0.0.1:0"])
        .start();
    daemon.addr.set_ip([127, 0, 0, 1].into());
    let mut client = daemon.client().await;
    let mut request = tonic::Request::new(evict("winning-2k"));
    request
        .metadata_mut()
        .insert("authorization", "Bearer s3cret".parse().unwrap());
    let evicted = client.evict_srs(request).await.unwrap().into_inner();
    assert!(!evicted.was_loaded);
}

#[test]
fn check_config_never_prints_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "file-s3cret-token\n").unwrap();
    for config in [
        "[server]\nauth_token = \"inline-s3cret-token\"\n".to_string(),
        format!(
            "[server]\nauth_token_file = {:?}\n",
            token_file.display().to_string()
        ),
    ] {
        let path = dir.path().join("cuzk.toml");
        std::fs::write(&path, &config).unwrap();
        let out = Command::new(BINARY)
            .arg("--config")
            .arg(&path)
            .arg("--check-config")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{text}");
        assert!(text.contains("configuration OK"), "{text}");
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("\"<set>\""), "{text}");
    }
}
