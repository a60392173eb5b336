//! Resources: values a page fetches once and awaits, possibly in several
//! places and render passes.
//!
//! On the server (where every page renders: it is never hydrated, only its
//! islands are) a resource is a fetch started at once and shared by every
//! `.await` of it, kept in the page's reactive owner: nothing of it is
//! serialized into the page. Leptos's own `Resource` decides at creation
//! whether to serialize its value by reading the request's "hydrating"
//! flag, which an island's render sets and restores; Suspense boundaries
//! re-render their children from effects on other threads, so two islands
//! rendering at once could leave the flag set and every later resource of
//! the page was sent twice (as HTML and as JSON nobody reads). That flag is
//! not read here at all.
//!
//! In the browser a resource is Leptos's (no page runs there; the type
//! keeps the components compiling for both), read with the same
//! serde_json reader as server function responses: Leptos's default codec
//! reads with `serde_json::from_str` while server function responses are
//! read with `serde_json::from_slice`, so every model's decoder would be in
//! the bundle twice.

use std::future::Future;

use codee::{Decoder, Encoder};
use serde::{de::DeserializeOwned, Serialize};

/// JSON written by `serde_json::to_string`, read by `serde_json::from_slice`.
pub struct Json;

impl<T: Serialize> Encoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(val: &T) -> Result<String, Self::Error> {
        serde_json::to_string(val)
    }
}

impl<T: DeserializeOwned> Decoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = str;

    fn decode(val: &str) -> Result<T, Self::Error> {
        serde_json::from_slice(val.as_bytes())
    }
}

#[cfg(not(feature = "ssr"))]
mod browser {
    use super::Json;
    use leptos::prelude::{OnceResource as LeptosOnceResource, Resource as LeptosResource};

    /// A resource of the console (see the module's docs).
    pub type Resource<T> = LeptosResource<T, Json>;

    /// A one-shot resource of the console (see the module's docs).
    pub type OnceResource<T> = LeptosOnceResource<T, Json>;
}

#[cfg(not(feature = "ssr"))]
pub use browser::{OnceResource, Resource};

#[cfg(feature = "ssr")]
mod server {
    use std::future::{Future, IntoFuture};
    use std::sync::Arc;

    use futures_util::future::{BoxFuture, FutureExt, Map, Shared};
    use leptos::prelude::{GetValue, StoredValue};
    use leptos::reactive::computed::ScopedFuture;

    /// The fetch every copy of a resource awaits.
    type Fetch<T> = Shared<BoxFuture<'static, Arc<T>>>;

    /// A fetch started when the page made it, awaited by every part of
    /// the page that reads it (see the module's docs). Copied freely; it
    /// lives as long as the page's render.
    pub struct Resource<T: Send + Sync + 'static>(StoredValue<Fetch<T>>);

    impl<T: Send + Sync + 'static> Clone for Resource<T> {
        fn clone(&self) -> Self {
            *self
        }
    }

    impl<T: Send + Sync + 'static> Copy for Resource<T> {}

    impl<T: Send + Sync + 'static> Resource<T> {
        /// Starts `fetch` now, with the current owner (what server
        /// functions read their context from) set whenever it is polled.
        pub(super) fn start(fetch: impl Future<Output = T> + Send + 'static) -> Self {
            let shared = ScopedFuture::new_untracked(fetch.map(Arc::new))
                .boxed()
                .shared();
            let eager = shared.clone();
            leptos::task::spawn(async move {
                eager.await;
            });
            Self(StoredValue::new(shared))
        }

        /// The value, read in place: awaiting the resource itself clones it.
        pub fn by_ref(&self) -> Fetch<T> {
            self.0.get_value()
        }
    }

    /// The value itself, out of the `Arc` its readers share.
    fn owned<T: Clone>(shared: Arc<T>) -> T {
        Arc::unwrap_or_clone(shared)
    }

    impl<T: Clone + Send + Sync + 'static> IntoFuture for Resource<T> {
        type Output = T;
        type IntoFuture = Map<Fetch<T>, fn(Arc<T>) -> T>;

        fn into_future(self) -> Self::IntoFuture {
            self.by_ref().map(owned::<T> as fn(Arc<T>) -> T)
        }
    }

    /// On the server a one-shot resource is a resource: neither refetches.
    pub type OnceResource<T> = Resource<T>;
}

#[cfg(feature = "ssr")]
pub use server::{OnceResource, Resource};

/// Like `Resource::new`: fetches with `fetcher` from `source` (on the
/// server once, with `source` as it is; in the browser again whenever it
/// changes).
#[track_caller]
pub fn resource<T, S, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetcher: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> Resource<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    S: PartialEq + Clone + Send + Sync + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    #[cfg(feature = "ssr")]
    {
        Resource::start(fetcher(leptos::prelude::untrack(source)))
    }
    #[cfg(not(feature = "ssr"))]
    {
        Resource::new_with_options(source, fetcher, false)
    }
}

/// Like `OnceResource::new`: runs `fut` once.
#[track_caller]
pub fn once_resource<T>(fut: impl Future<Output = T> + Send + 'static) -> OnceResource<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    #[cfg(feature = "ssr")]
    {
        Resource::start(fut)
    }
    #[cfg(not(feature = "ssr"))]
    {
        OnceResource::new_with_options(fut, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::AppError;

    #[test]
    fn a_value_written_for_the_page_reads_back_the_same() {
        let value: Result<Vec<(String, u32)>, AppError> = Ok(vec![("a\"b".into(), 7)]);
        let text = <Json as Encoder<_>>::encode(&value).unwrap();
        let back: Result<Vec<(String, u32)>, AppError> = Json::decode(&text).unwrap();
        assert_eq!(back, value);
        let err: Result<u32, AppError> = Err(AppError::NotFound {
            what: "job x".into(),
        });
        let text = <Json as Encoder<_>>::encode(&err).unwrap();
        assert_eq!(
            <Json as Decoder<Result<u32, AppError>>>::decode(&text).unwrap(),
            err
        );
    }
}
