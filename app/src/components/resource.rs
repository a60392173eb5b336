//! Resources whose values reach the browser in the page's HTML, as JSON read
//! by the same serde_json reader as server function responses.
//!
//! Leptos's default resource codec reads with `serde_json::from_str` while
//! server function responses are read with `serde_json::from_slice`: two
//! readers, so every model's decoder was compiled into the browser bundle
//! twice. Every resource of the console goes through [`resource`] (and
//! [`once_resource`]) instead, so that each decoder is there once.

use std::future::Future;

use codee::{Decoder, Encoder};
use leptos::prelude::{OnceResource as LeptosOnceResource, Resource as LeptosResource};
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

/// A resource of the console (see the module's docs).
pub type Resource<T> = LeptosResource<T, Json>;

/// A one-shot resource of the console (see the module's docs).
pub type OnceResource<T> = LeptosOnceResource<T, Json>;

/// Like `Resource::new`: refetches with `fetcher` whenever `source` changes.
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
    Resource::new_with_options(source, fetcher, false)
}

/// Like `OnceResource::new`: runs `fut` once.
#[track_caller]
pub fn once_resource<T>(fut: impl Future<Output = T> + Send + 'static) -> OnceResource<T>
where
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
{
    OnceResource::new_with_options(fut, false)
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
