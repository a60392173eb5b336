//! Who is asking, once: [`Caller`] takes the [`Principal`] that
//! `session::resolve_session` put in the request, or answers 401 in the
//! shape the route's clients read (MLflow's on the MLflow API, ours
//! elsewhere). A handler that treats a signed-out caller its own way (a
//! redirect to sign in) takes `Option<Caller>`.

use std::convert::Infallible;

use app::error::AppError;
use app::ports::Principal;
use axum::extract::{FromRequestParts, OptionalFromRequestParts};
use axum::response::Response;
use http::request::Parts;

/// The signed-in caller (by session cookie or access key).
pub struct Caller(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Response> {
        match parts.extensions.get::<Principal>() {
            Some(principal) => Ok(Self(principal.clone())),
            None => Err(super::session::refuse(
                parts.uri.path(),
                AppError::Unauthenticated,
            )),
        }
    }
}

impl<S: Send + Sync> OptionalFromRequestParts<S> for Caller {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Option<Self>, Infallible> {
        Ok(parts.extensions.get::<Principal>().cloned().map(Self))
    }
}

/// The signed-in caller, if their role lets them change things in the
/// account: a viewer gets a 403 that says so (in the route's shape).
/// Handlers that change anything take this instead of [`Caller`].
pub struct Writer(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for Writer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        let Caller(who) = <Caller as FromRequestParts<S>>::from_request_parts(parts, state).await?;
        match who.require_change() {
            Ok(()) => Ok(Self(who)),
            Err(err) => Err(super::session::refuse(parts.uri.path(), err)),
        }
    }
}
