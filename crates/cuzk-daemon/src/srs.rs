//! `PreloadSRS` and `EvictSRS`: who may call them, and their errors as gRPC statuses.

use crate::config::Settings;
use crate::convert::submit_status;
use cuzk_sched::PreloadError;
use tonic::Status;

/// Whether the parameter calls are open to the daemon's callers. They make the daemon set
/// circuits up (gigabytes of memory, minutes of CPU) or free them under running work, so
/// they are refused when anyone who reaches the port may call them: a non-loopback
/// `listen` without a token (`allow_remote_without_token = true`). With a token, the token
/// check already guards every call.
#[derive(Clone, Debug, Default)]
pub struct SrsAccess {
    /// Why the calls are refused, if they are.
    refusal: Option<String>,
}

impl SrsAccess {
    /// Open to every caller (a loopback listener, or a token).
    pub fn open() -> SrsAccess {
        SrsAccess::default()
    }

    /// The access `settings` give.
    pub fn from_settings(settings: &Settings) -> SrsAccess {
        let remote = !settings.listen.ip().is_loopback();
        let refusal = (remote && settings.auth_token.is_none()).then(|| {
            format!(
                "the daemon listens on {} beyond loopback without a token \
                 (server.allow_remote_without_token = true), so any host that reaches it could \
                 make it set up or free parameters; set server.auth_token (or \
                 server.auth_token_file), or a loopback server.listen, to allow it",
                settings.listen
            )
        });
        SrsAccess { refusal }
    }

    /// PERMISSION_DENIED naming the reason, when `method` is refused.
    pub fn check(&self, method: &str) -> Result<(), Status> {
        match &self.refusal {
            Some(reason) => Err(Status::permission_denied(format!(
                "{method} is refused: {reason}"
            ))),
            None => Ok(()),
        }
    }
}

/// The status of a failed `PreloadSRS`.
pub fn preload_status(error: &PreloadError) -> Status {
    match error {
        PreloadError::NotPreloadable {
            id,
            public,
            trusted,
            cached,
        } => Status::not_found(format!(
            "circuit id {id:?} is not one this daemon preloads. PreloadSRS takes a Filecoin \
             circuit id (porep-, snap-, wpost- or winning- and a sector size: 2k, 8m, 512m, \
             32g, 64g; served here: {}), the circuit key of a [[preload]] entry of the \
             daemon's configuration ({}), or the key of a circuit already set up ({})",
            list(public),
            list(trusted),
            list(cached)
        )),
        PreloadError::UnknownKey { .. } => Status::not_found(error.to_string()),
        PreloadError::Submit(s) => submit_status(s),
        PreloadError::Memory { .. } | PreloadError::Load { .. } => {
            Status::resource_exhausted(error.to_string())
        }
        PreloadError::Setup(setup) if setup.missing_file().is_some() => {
            Status::failed_precondition(error.to_string())
        }
        PreloadError::Setup(_) => Status::internal(error.to_string()),
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;
    use cuzk_sched::SetupError;
    use std::path::Path;
    use tonic::Code;

    fn access(toml: &str) -> SrsAccess {
        SrsAccess::from_settings(
            &Config::parse(toml, Path::new("t.toml"))
                .unwrap()
                .settings()
                .unwrap(),
        )
    }

    #[test]
    fn only_an_open_remote_listener_refuses_the_parameter_calls() {
        assert!(access("").check("PreloadSRS").is_ok());
        let token = "[server]\nlisten = \"0.0.0.0:9820\"\nauth_token = \"t\"";
        assert!(access(token).check("PreloadSRS").is_ok());
        let open = "[server]\nlisten = \"0.0.0.0:9820\"\nallow_remote_without_token = true";
        let status = access(open).check("EvictSRS").unwrap_err();
        assert_eq!(status.code(), Code::PermissionDenied);
        for part in [
            "EvictSRS",
            "0.0.0.0:9820",
            "allow_remote_without_token",
            "server.auth_token",
        ] {
            assert!(status.message().contains(part), "{part}: {status:?}");
        }
    }

    #[test]
    fn preload_errors_have_their_codes() {
        let not = PreloadError::NotPreloadable {
            id: "synthetic-porep-134217728".into(),
            public: vec!["porep-2k".into()],
            trusted: vec![],
            cached: vec!["sha256-preimage-3B".into()],
        };
        let status = preload_status(&not);
        assert_eq!(status.code(), Code::NotFound);
        for part in [
            "synthetic-porep-134217728",
            "porep-2k",
            "[[preload]]",
            "sha256-preimage-3B",
        ] {
            assert!(status.message().contains(part), "{part}: {status:?}");
        }
        let missing = PreloadError::Setup(SetupError::MissingFile {
            circuit_key: "k".into(),
            path: "/p/v28-k.params".into(),
            reason: "parameters /p/v28-k.params are missing".into(),
        });
        let status = preload_status(&missing);
        assert_eq!(status.code(), Code::FailedPrecondition);
        assert!(status.message().contains("/p/v28-k.params"), "{status:?}");
        let budget = cuzk_mem::Budget::new("host", 10);
        let memory = PreloadError::Memory {
            circuit_key: "k".into(),
            needed: 11,
            source: budget.try_reserve(11).unwrap_err(),
        };
        let status = preload_status(&memory);
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert!(status.message().contains("budget host"), "{status:?}");
    }
}
