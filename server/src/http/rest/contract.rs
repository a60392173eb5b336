//! The error answers every operation shares, added to the OpenAPI document
//! after the routes are collected.
//!
//! Some statuses follow from an operation's shape, not from what it does: any
//! parameter or body can be malformed (400), a secured route refuses a missing
//! or wrong key (401), a path names something that may not exist or not be
//! the caller's to see (404), a body can be over the limit (413), and the
//! database or cluster can be away for a moment (503). Writing them on each of
//! ninety `#[utoipa::path]`s would let one be forgotten; deriving them here
//! cannot. What depends on the operation (403, 409, 416) stays on its path.

use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, ResponseBuilder};

/// Unsigned integers as they are: utoipa writes a `u32` as `int32` with
/// `minimum: 0`, which says 3,000,000,000 is refused when the console takes
/// it (and a `u64` as `int64`, whose top half it also takes). Such a schema
/// gets the type's real maximum instead of the signed format, unless it
/// states a maximum of its own.
/// The document as served: the routes' own, with the shared errors and the
/// unsigned ranges added.
pub fn finish(mut doc: OpenApi) -> serde_json::Value {
    add_shared_errors(&mut doc);
    let mut value = serde_json::to_value(&doc).unwrap_or_default();
    unsigned_ranges(&mut value);
    value
}

fn unsigned_ranges(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            let is_integer = match map.get("type") {
                Some(serde_json::Value::String(t)) => t == "integer",
                Some(serde_json::Value::Array(ts)) => ts.iter().any(|t| t == "integer"),
                _ => false,
            };
            let unsigned = map.get("minimum").and_then(serde_json::Value::as_u64) == Some(0);
            if is_integer && unsigned {
                let top = match map.get("format").and_then(serde_json::Value::as_str) {
                    Some("int32") => Some(u64::from(u32::MAX)),
                    Some("int64") => Some(u64::MAX),
                    _ => None,
                };
                if let Some(top) = top {
                    map.remove("format");
                    map.entry("maximum").or_insert(top.into());
                }
            }
            for child in map.values_mut() {
                unsigned_ranges(child);
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(unsigned_ranges),
        _ => {}
    }
}

/// Adds the shared error answers an operation's shape implies, keeping any
/// description the operation gives itself.
fn add_shared_errors(doc: &mut OpenApi) {
    for item in doc.paths.paths.values_mut() {
        for operation in [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ]
        .into_iter()
        .flatten()
        {
            add_to(operation);
        }
    }
}

fn add_to(operation: &mut Operation) {
    let parameters = operation.parameters.as_deref().unwrap_or_default();
    let has_path = parameters
        .iter()
        .any(|p| matches!(p, RefOr::T(p) if matches!(p.parameter_in, ParameterIn::Path)));
    let has_input = !parameters.is_empty() || operation.request_body.is_some();
    // `security(())` on a path (an empty requirement) makes it public.
    let secured = operation
        .security
        .as_ref()
        .is_none_or(|reqs| !reqs.iter().all(is_empty_requirement));
    let mut shared = Vec::new();
    if has_input {
        shared.push((
            "400",
            "A malformed parameter or body: `field` names it and `message` says what is allowed",
        ));
    }
    if secured {
        shared.push((
            "401",
            "No access key, or one that is wrong, revoked or expired",
        ));
    }
    if has_path {
        shared.push((
            "404",
            "Nothing by that name that the caller may see (another account's is not found either)",
        ));
    }
    if operation.request_body.is_some() {
        shared.push(("413", "The body is larger than the route takes"));
    }
    shared.push((
        "503",
        "The database or the cluster cannot be reached just now: retry later",
    ));
    for (status, description) in shared {
        operation
            .responses
            .responses
            .entry(status.to_owned())
            .or_insert_with(|| error_response(description).into());
    }
}

fn is_empty_requirement(requirement: &utoipa::openapi::security::SecurityRequirement) -> bool {
    // The type keeps its map private; its JSON form is `{}` when empty.
    serde_json::to_value(requirement).is_ok_and(|v| v.as_object().is_some_and(|m| m.is_empty()))
}

fn error_response(description: &str) -> utoipa::openapi::Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    fn refs(value: &serde_json::Value, out: &mut BTreeSet<String>) {
        match value {
            serde_json::Value::Object(map) => {
                if let Some(serde_json::Value::String(r)) = map.get("$ref") {
                    out.insert(r.clone());
                }
                map.values().for_each(|v| refs(v, out));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn every_schema_the_document_refers_to_is_defined() {
        let (_, doc) = super::super::api();
        let mut found = BTreeSet::new();
        refs(&doc, &mut found);
        assert!(found.len() > 50, "refs: {found:?}");
        let missing: Vec<_> = found
            .iter()
            .filter(|r| doc.pointer(r.trim_start_matches('#')).is_none())
            .collect();
        assert!(
            missing.is_empty(),
            "referenced but not defined: {missing:?}"
        );
    }

    #[test]
    fn every_operation_lists_the_errors_its_shape_allows() {
        let (_, doc) = super::super::api();
        let job = &doc["paths"]["/api/v1/jobs/{name}"]["get"]["responses"];
        for status in ["400", "401", "404", "503"] {
            assert!(
                job.get(status).is_some(),
                "GET /jobs/{{name}} lacks {status}"
            );
        }
        let submit = &doc["paths"]["/api/v1/jobs"]["post"]["responses"];
        assert!(submit.get("413").is_some(), "a body can be too large");
        let public = &doc["paths"]["/api/v1/password-resets"]["post"]["responses"];
        assert!(
            public.get("401").is_none(),
            "a public route does not answer 401"
        );
        // A u32 is described as what it is, not as a signed 32-bit number.
        let replicas = &doc["components"]["schemas"]["ReplicaResources"]["properties"]["gpu"];
        assert_eq!(
            replicas["maximum"],
            serde_json::json!(u32::MAX),
            "{replicas}"
        );
        assert!(replicas.get("format").is_none(), "{replicas}");
    }
}
