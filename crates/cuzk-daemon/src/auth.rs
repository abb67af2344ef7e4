//! The optional bearer token: every ProvingEngine call and every /metrics scrape must
//! carry `authorization: Bearer <token>` when one is configured. The health service stays
//! open, so that load balancers can probe without the secret.

use std::sync::Arc;
use tonic::service::Interceptor;
use tonic::{Request, Status};

/// Checks the `authorization` header against the configured token, if any.
#[derive(Clone, Debug, Default)]
pub struct BearerAuth {
    token: Option<Arc<str>>,
}

impl BearerAuth {
    /// Requires `token` when it is `Some`; lets every call through otherwise.
    pub fn new(token: Option<String>) -> BearerAuth {
        BearerAuth {
            token: token.map(Arc::from),
        }
    }

    /// Whether an `authorization` header value is acceptable.
    pub fn allows(&self, header: Option<&[u8]>) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let Some(value) = header.and_then(|h| h.strip_prefix(b"Bearer ")) else {
            return false;
        };
        constant_time_eq(value, token.as_bytes())
    }
}

impl Interceptor for BearerAuth {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let header = request
            .metadata()
            .get("authorization")
            .map(|v| v.as_bytes());
        if self.allows(header) {
            Ok(request)
        } else {
            Err(Status::unauthenticated(
                "this daemon requires `authorization: Bearer <token>`",
            ))
        }
    }
}

/// Compares without stopping at the first difference, so that timing does not reveal how
/// much of a guess was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_token_passes() {
        let open = BearerAuth::new(None);
        assert!(open.allows(None));
        let auth = BearerAuth::new(Some("s3cret".into()));
        assert!(auth.allows(Some(b"Bearer s3cret")));
        assert!(!auth.allows(Some(b"Bearer s3cre")));
        assert!(!auth.allows(Some(b"bearer s3cret")));
        assert!(!auth.allows(Some(b"s3cret")));
        assert!(!auth.allows(None));
    }
}
