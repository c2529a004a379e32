//! What the server answers: JSON bodies, and errors as `{"error", "kind"}` with the status
//! that says whose fault it was (4xx the request's, 5xx the server's).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::cli::output::CliError;

/// A failed request.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    /// One word a client can branch on: `usage`, `corruption`, `io`, `overload`, ...
    pub kind: &'static str,
    pub message: String,
    /// Seconds after which a retry may succeed (503).
    pub retry_after: Option<u32>,
}

impl ApiError {
    pub fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            kind,
            message: message.into(),
            retry_after: None,
        }
    }

    /// The request asked for something that cannot be: 400, kind `usage`.
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "usage", message)
    }

    /// The request exceeds a bound: 413, kind `too_large`.
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", message)
    }

    /// The server failed: 500.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// The body of this error, as one JSON object.
    pub fn body(&self) -> Value {
        json!({"error": self.message, "kind": self.kind})
    }
}

impl From<mhdb::Error> for ApiError {
    fn from(e: mhdb::Error) -> Self {
        use mhdb::Error as E;
        let (status, kind) = match &e {
            E::InvalidParameter { .. } | E::ParameterMismatch { .. } => {
                (StatusCode::BAD_REQUEST, "usage")
            }
            E::Corruption { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "corruption"),
            E::Io { .. } | E::PreviousIo { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "io"),
            E::ReadOnly => (StatusCode::FORBIDDEN, "read_only"),
            E::Locked { .. } => (StatusCode::SERVICE_UNAVAILABLE, "locked"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "other"),
        };
        // The CLI's wording, which names the file and offset of corruption.
        ApiError::new(status, kind, CliError::from(e).to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, json_body(self.body().to_string())).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// A 200 answer whose body is `text`, one JSON value.
pub fn json_body(text: impl Into<axum::body::Body>) -> Response {
    let mut response = Response::new(text.into());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A 200 JSON answer.
pub fn json_value(v: &Value) -> Response {
    json_body(v.to_string())
}

/// What a handler returns.
pub type Reply = Result<Response, ApiError>;
