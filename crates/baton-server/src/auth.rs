//! The API's bearer token (`[server] token`, `BATON_SERVER_TOKEN`): when one
//! is set, every `/api/v1` request must carry it, as `Authorization:
//! Bearer …` or, for the event stream a browser opens, `?access_token=…`.
//! Compared in constant time. Webhooks are authenticated by their
//! signature instead; the dashboard page itself holds no data.

use crate::App;
use crate::views::ApiError;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

pub async fn require_token(State(app): State<App>, req: Request, next: Next) -> Response {
    let Some(want) = app.token.as_deref() else {
        return next.run(req).await;
    };
    let header = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let query = req.uri().query().and_then(|q| {
        form_urlencoded::parse(q.as_bytes())
            .find(|(k, _)| k == "access_token")
            .map(|(_, v)| v.into_owned())
    });
    let given = header.or(query).unwrap_or_default();
    if bool::from(given.as_bytes().ct_eq(want.as_bytes())) {
        return next.run(req).await;
    }
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "UNAUTHORIZED",
        if given.is_empty() {
            "the API needs the server's token".into()
        } else {
            "that token is not the server's".into()
        },
        "send Authorization: Bearer <BATON_SERVER_TOKEN>; in the dashboard, open /#token=<token> once",
    )
    .into_response()
}
