//! The server's layers, read from its source: every `crate::…` path in
//! `server/src` may only point down (or sideways within a layer), and no
//! two modules may depend on each other, directly or around a circle.
//! The table below is the one the README's Architecture section shows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module of `server/src` and its layer, bottom first.
const LAYERS: &[(&str, &[&str])] = &[
    ("storage", &["time", "storage"]),
    ("backend traits", &["backend", "metric_files"]),
    ("backends", &["local", "kubernetes", "mail"]),
    (
        "services",
        &[
            "accounts",
            "access_keys",
            "assets",
            "clusters",
            "environments",
            "local_runs",
            "mlflow",
            "notebooks",
            "paddleboard",
            "pipelines",
            "quota",
            "resources",
            "serving",
            "templates",
        ],
    ),
    ("http", &["http"]),
    ("composition root", &["console"]),
    ("command line", &["cli", "api_client"]),
    ("fuzz targets", &["fuzzing"]),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules a line of code names through `crate::`, including
/// every branch of a `use crate::{a, b::{c, d}}` group.
fn crate_paths(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            // Names that follow `{` or `,` at depth one.
            let (mut depth, mut expecting) = (1, true);
            let mut name = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 1 => break,
                    '}' => depth -= 1,
                    ',' if depth == 1 => {
                        if !name.is_empty() {
                            out.push(std::mem::take(&mut name));
                        }
                        expecting = true;
                    }
                    c if expecting && (c.is_alphanumeric() || c == '_') => name.push(c),
                    _ if expecting && !name.is_empty() => {
                        out.push(std::mem::take(&mut name));
                        expecting = false;
                    }
                    _ => {}
                }
            }
            if !name.is_empty() {
                out.push(name);
            }
        } else {
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
        rest = after;
    }
    out
}

/// module → (module it uses → where), from the source of `server/src`.
fn dependencies() -> BTreeMap<String, BTreeMap<String, String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut deps: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap();
        let first = relative.components().next().unwrap().as_os_str();
        let module = first.to_string_lossy().trim_end_matches(".rs").to_owned();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue; // a doc link is no dependency
            }
            for used in crate_paths(line) {
                if used != module {
                    deps.entry(module.clone())
                        .or_default()
                        .entry(used)
                        .or_insert_with(|| format!("{}:{}", relative.display(), n + 1));
                }
            }
        }
    }
    deps
}

#[test]
fn every_server_module_has_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let unplaced: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned()
        })
        .filter(|m| m != "lib" && m != "main" && layer_of(m).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules with no layer in tests/it/architecture.rs (and the README): {unplaced:?}"
    );
}

#[test]
fn modules_only_use_their_own_layer_and_the_layers_below() {
    let mut upward = Vec::new();
    for (module, used) in dependencies() {
        let Some(from) = layer_of(&module) else {
            continue;
        };
        for (target, at) in used {
            if let Some(to) = layer_of(&target) {
                if to > from {
                    upward.push(format!(
                        "{at}: {module} ({}) uses {target} ({})",
                        LAYERS[from].0, LAYERS[to].0
                    ));
                }
            }
        }
    }
    assert!(
        upward.is_empty(),
        "uses that point up:\n{}",
        upward.join("\n")
    );
}

#[test]
fn no_two_server_modules_depend_on_each_other_even_around_a_circle() {
    let deps = dependencies();
    let graph: BTreeMap<&str, BTreeSet<&str>> = deps
        .iter()
        .map(|(m, used)| (m.as_str(), used.keys().map(String::as_str).collect()))
        .collect();
    // Depth-first search; a node met again while on the path closes a circle.
    fn visit<'a>(
        node: &'a str,
        graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
        circles: &mut Vec<String>,
    ) {
        if let Some(start) = path.iter().position(|n| *n == node) {
            let mut circle = path[start..].to_vec();
            circle.push(node);
            circles.push(circle.join(" -> "));
            return;
        }
        if !done.insert(node) {
            return;
        }
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, path, done, circles);
        }
        path.pop();
    }
    let mut circles = Vec::new();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, &graph, &mut Vec::new(), &mut done, &mut circles);
    }
    let wheres: Vec<String> = circles
        .iter()
        .flat_map(|c| {
            let names: Vec<&str> = c.split(" -> ").collect();
            names
                .windows(2)
                .map(|w| format!("  {} -> {}: {}", w[0], w[1], deps[w[0]][w[1]]))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        circles.is_empty(),
        "import circles:\n{}\nwhere:\n{}",
        circles.join("\n"),
        wheres.join("\n")
    );
}

#[test]
fn the_source_reader_sees_grouped_and_nested_imports() {
    assert_eq!(
        crate_paths("use crate::{a::{b, c}, d, e::f};"),
        ["a", "d", "e"]
    );
    assert_eq!(crate_paths("let x = crate::time::now_ms();"), ["time"]);
    assert_eq!(crate_paths("f(crate::a::x(), crate::b::y)"), ["a", "b"]);
}
