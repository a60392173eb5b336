//! Links that carry a page's state in the URL.

/// Percent-encodes all but the unreserved characters, so names like
/// `trainer-1` stay readable in links.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `path?…` from `params` (the current query, in order) with `changes`
/// applied: `Some` sets a parameter, `None` removes it.
pub fn href_with<'a>(
    path: &str,
    params: impl IntoIterator<Item = (&'a str, &'a str)>,
    changes: &[(&str, Option<String>)],
) -> String {
    let mut pairs: Vec<(String, String)> = params
        .into_iter()
        .filter(|(k, _)| !changes.iter().any(|(c, _)| c == k))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    pairs.extend(
        changes
            .iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| ((*k).to_owned(), v.clone()))),
    );
    let query: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", query.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_replace_remove_and_add_parameters_keeping_the_rest() {
        let now = [("status", "running"), ("page", "2"), ("q", "a b")];
        assert_eq!(
            href_with(
                "/jobs",
                now,
                &[("page", None), ("log", Some("job-1".into()))]
            ),
            "/jobs?status=running&q=a%20b&log=job-1"
        );
        assert_eq!(
            href_with("/jobs", [("page", "2")], &[("page", None)]),
            "/jobs"
        );
    }
}
