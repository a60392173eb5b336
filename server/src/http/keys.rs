//! `POST /account/keys`: the Account page's "Create key" form as a browser
//! without JavaScript posts it. The answer is the new key's credentials file,
//! as a download: the secret exists only in that one answer. (Hydrated, the
//! page calls the `create_access_key` server function instead and shows the
//! key in place.)

use app::api::context::site_url;
use app::models::{Credentials, CREDENTIALS_FILE};
use app::pages::access_keys::KEY_ERROR_PARAM;
use axum::extract::rejection::FormRejection;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use http::{header, HeaderValue};
use serde::Deserialize;

use super::caller::Caller;
use super::AppState;

/// The form's one field.
#[derive(Debug, Default, Deserialize)]
pub struct KeyForm {
    /// What the user calls the key.
    #[serde(default)]
    name: String,
    /// What it may do (empty: everything).
    #[serde(default)]
    scope: String,
    /// Days until it expires (empty: never).
    #[serde(default)]
    expires_in_days: String,
}

/// Creates a key and answers with `credentials.json`; a refused name goes
/// back to the form with the reason.
pub async fn create(
    State(state): State<AppState>,
    caller: Option<Caller>,
    parts: http::request::Parts,
    form: Result<Form<KeyForm>, FormRejection>,
) -> Response {
    let Some(Caller(who)) = caller else {
        return Redirect::to("/login?next=%2Faccount").into_response();
    };
    let form = form.map(|Form(f)| f).unwrap_or_default();
    let created = match app::api::access_keys::key_terms(&form.scope, &form.expires_in_days) {
        Ok(terms) => {
            state
                .services
                .access_keys
                .create_key(&who.me, &form.name, terms)
                .await
        }
        Err(err) => Err(err),
    };
    match created {
        Ok(created) => {
            let credentials = Credentials::new(site_url(&parts), &who.me, created.key);
            let disposition = format!("attachment; filename=\"{CREDENTIALS_FILE}\"");
            (
                [
                    (
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/json"),
                    ),
                    (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
                    (
                        header::CONTENT_DISPOSITION,
                        HeaderValue::from_str(&disposition)
                            .unwrap_or(HeaderValue::from_static("attachment")),
                    ),
                ],
                credentials.to_json(),
            )
                .into_response()
        }
        Err(err) => {
            let message: String =
                form_urlencoded::byte_serialize(err.to_string().as_bytes()).collect();
            Redirect::to(&format!("/account?{KEY_ERROR_PARAM}={message}#keys")).into_response()
        }
    }
}
