//! The house's architecture, read from the source of both crates.
//!
//! **Layers.** Each top-level module of `server/src` and of `app/src` sits on
//! a layer (the tables below, bottom first; docs/architecture.md
//! shows the same). A module may only use its own layer and the layers
//! below, and no two top-level modules may depend on each other, directly or
//! around a circle.
//!
//! **One home for SQL.** Only `server/src/storage` speaks to the database:
//! no other file of either crate names `sqlx` or holds a SQL statement.
//! Services hold the pool as `storage::db::Pool` and hand it to a store;
//! storage, the bottom layer, knows no service, so its functions take and
//! give models and plain values.
//!
//! **Rooms.** No two files may depend on each other either, directly or
//! around a circle: files in a circle are one room cut in pieces, none of
//! which a reader can take in on its own.
//!
//! How a file's uses are read (std only, no parser; enough for this code):
//! - The module tree comes from the files: `x.rs` or `x/mod.rs` is module
//!   `x`, `lib.rs` is the root (`main.rs` roots another crate, and a
//!   `tests.rs` is test code: both skipped). Items under `#[cfg(test)]`,
//!   comments and string literals are skipped too: tests and docs are no
//!   dependencies.
//! - A use is a path that starts with `crate::`, `super::`, `self::` or the
//!   name of one of the file's child modules, in a `use` (groups `{…}` too,
//!   over several lines) or anywhere in the code. `mod` declarations are
//!   none, and `pub use` re-exports are none between files (a module's
//!   re-exports do count as its uses between modules).
//! - The path walks down the module tree as far as modules go; the next
//!   segment names an item. It is in the module's own file when that file
//!   defines it at column 0 (`pub struct X`, `pub(crate) async fn x`,
//!   `macro_rules! x`, …); else in the one file below the module that does
//!   (a re-export such as `pub use jobs::*`); else in the module's file.
//! - A file's use of itself is no edge, nor is its use of the file of a
//!   module it is in: `a/mod.rs` is the face of `a`, and all below `a`
//!   (`a/b.rs`, `a/b/c.rs`) may use it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Layers, bottom first: each a name and its top-level modules.
type Layers = &'static [(&'static str, &'static [&'static str])];

/// Each top-level module of `server/src` and its layer, bottom first.
const SERVER_LAYERS: Layers = &[
    ("storage", &["time", "storage"]),
    ("backend traits", &["backend", "metric_files", "secrets"]),
    ("backends", &["local", "kubernetes", "mail"]),
    (
        "services",
        &[
            "accounts",
            "access_keys",
            "alerts",
            "assets",
            "clusters",
            "controller",
            "environments",
            "experiments",
            "local_runs",
            "mlflow",
            "notebooks",
            "notifications",
            "paddleboard",
            "pipelines",
            "quota",
            "resources",
            "run_params",
            "schedules",
            "serving",
            "stalls",
            "telemetry",
            "templates",
        ],
    ),
    ("http", &["http"]),
    ("composition root", &["console"]),
    ("command line", &["cli", "api_client"]),
];

/// Each top-level module of `app/src` and its layer, bottom first.
const APP_LAYERS: Layers = &[
    ("the error", &["error"]),
    ("models", &["models"]),
    ("ports", &["ports"]),
    ("use cases", &["use_cases"]),
    ("server functions", &["api"]),
    ("components", &["components"]),
    ("pages", &["pages"]),
    ("routes", &["routes"]),
];

/// One crate's source folder and its layers.
struct Crate {
    src: PathBuf,
    layers: Layers,
}

fn server() -> Crate {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    Crate {
        src,
        layers: SERVER_LAYERS,
    }
}

fn app() -> Crate {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../app/src");
    Crate {
        src,
        layers: APP_LAYERS,
    }
}

impl Crate {
    fn layer_of(&self, module: &str) -> Option<usize> {
        self.layers
            .iter()
            .position(|(_, modules)| modules.contains(&module))
    }

    /// Each `.rs` file as (path relative to `src`, text).
    fn sources(&self) -> Vec<(String, String)> {
        fn walk(dir: &Path, src: &Path, out: &mut Vec<(String, String)>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, src, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let file = path.strip_prefix(src).unwrap().to_string_lossy();
                    let text = std::fs::read_to_string(&path).unwrap();
                    out.push((file.replace('\\', "/"), text));
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.src, &self.src, &mut out);
        out
    }
}

/// The top-level module a file is in: `http/rest/mod.rs` → `http`.
fn top_module(file: &str) -> &str {
    file.split(['/', '.']).next().unwrap()
}

/// The non-empty parts of `path` between `separator`s.
fn segments(path: &str, separator: &str) -> Vec<String> {
    path.split(separator)
        .filter(|s| !s.is_empty())
        .map(Into::into)
        .collect()
}

/// One file of the module tree.
struct Module {
    file: String,
    text: String,
    /// The names it defines at column 0.
    defines: BTreeSet<String>,
}

/// A crate's modules, by path (`[]` is the root), as its files lay them out.
struct Tree(BTreeMap<Vec<String>, Module>);

/// Who uses what: file (or module) → what it uses → item → where first.
type Graph = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

impl Tree {
    fn new(sources: &[(String, String)]) -> Tree {
        let mut modules = BTreeMap::new();
        for (file, text) in sources {
            let mut path = segments(file.trim_end_matches(".rs"), "/");
            match (path.len(), path.last().unwrap().as_str()) {
                (1, "main") | (_, "tests") => continue,
                (1, "lib") | (_, "mod") => drop(path.pop()),
                _ => {}
            }
            let (file, text, defines) = (file.clone(), text.clone(), definitions(text));
            modules.insert(
                path,
                Module {
                    file,
                    text,
                    defines,
                },
            );
        }
        Tree(modules)
    }

    /// The module whose file holds the item a path in module `from` names
    /// (see the module docs), and the item (the module, when it ends at one).
    fn resolve(&self, from: &[String], path: &[String]) -> Option<(Vec<String>, String)> {
        let (mut module, rest) = match path[0].as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (from.to_vec(), &path[1..]),
            _ => (from.to_vec(), path),
        };
        let mut item = path.last().unwrap().clone();
        for segment in rest {
            let deeper = [module.as_slice(), std::slice::from_ref(segment)].concat();
            if segment == "super" {
                module.pop()?;
            } else if self.0.contains_key(&deeper) {
                module = deeper;
            } else {
                item = segment.clone();
                break;
            }
        }
        if self.0.get(&module)?.defines.contains(&item) {
            return Some((module, item));
        }
        let below: Vec<&Vec<String>> = (self.0.iter())
            .filter(|(m, f)| {
                m.len() > module.len() && m.starts_with(&module) && f.defines.contains(&item)
            })
            .map(|(m, _)| m)
            .collect();
        match below[..] {
            [one] => Some((one.clone(), item)),
            _ => Some((module, item)),
        }
    }

    /// file → file it uses → item → where, by the rules in the module docs;
    /// with `reexports`, `pub use` lines count too.
    fn file_graph(&self, reexports: bool) -> Graph {
        let mut graph = Graph::new();
        for (module, Module { file, text, .. }) in &self.0 {
            let children: BTreeSet<String> = (self.0.keys())
                .filter(|m| m.len() == module.len() + 1 && m.starts_with(module))
                .map(|m| m.last().unwrap().clone())
                .collect();
            for (line, path) in paths(text, &children, reexports) {
                let Some((target, item)) = self.resolve(module, &path) else {
                    continue;
                };
                if !module.starts_with(&target) {
                    // Not itself, nor the face of a module it is in.
                    let uses = graph.entry(file.clone()).or_default();
                    let items = uses.entry(self.0[&target].file.clone()).or_default();
                    items.entry(item).or_insert(format!("{file}:{line}"));
                }
            }
        }
        graph
    }
}

/// The uses between top-level modules (`lib.rs` left out), re-exports
/// included: a module that hands on another's names depends on it.
fn module_graph(tree: &Tree) -> Graph {
    let mut graph = Graph::new();
    for (from, used) in tree.file_graph(true) {
        for (to, items) in used {
            let (from, to) = (top_module(&from), top_module(&to));
            if from != to && from != "lib" && to != "lib" {
                let uses = graph.entry(from.to_owned()).or_default();
                for (item, at) in items {
                    uses.entry(to.to_owned())
                        .or_default()
                        .entry(item)
                        .or_insert(at);
                }
            }
        }
    }
    graph
}

/// The names a file defines at column 0: `pub(crate) async fn x` → `x`.
fn definitions(text: &str) -> BTreeSet<String> {
    let kinds = "struct enum union trait type fn const static mod macro_rules!";
    let mut names = BTreeSet::new();
    for line in text.lines().filter(|l| !l.starts_with(char::is_whitespace)) {
        let mut words = line.split_whitespace().filter(|w| *w != "mut").peekable();
        while let Some(word) = words.next() {
            let next = words.peek().copied().unwrap_or("");
            let qualifier = word.starts_with("pub")
                || ["async", "unsafe", "extern", "\"C\""].contains(&word)
                || (word == "const" && ["fn", "async", "unsafe"].contains(&next));
            if qualifier {
                continue;
            }
            if kinds.split(' ').any(|kind| kind == word) {
                let name = next
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .next();
                names.insert(name.unwrap_or("").to_owned());
            }
            break;
        }
    }
    names
}

/// Rust code as (line, token): identifiers, `::`, and any other character
/// but whitespace alone; comments and string and char literals are dropped.
fn tokens(text: &str) -> Vec<(usize, String)> {
    let s: Vec<char> = text.chars().collect();
    let at = |k: usize| s.get(k).copied().unwrap_or(' ');
    let find = |from: usize, end: &dyn Fn(usize) -> bool| {
        (from..s.len()).find(|&k| end(k)).unwrap_or(s.len())
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let (mut out, mut line, mut i) = (Vec::new(), 1, 0);
    while i < s.len() {
        let start = i;
        let hashes = find(i + 1, &|k| s[k] != '#') - i - 1;
        let raw = at(i) == 'r' && !ident(at(i.wrapping_sub(1))) && at(i + 1 + hashes) == '"';
        let escaped = |k: usize| s[..k].iter().rev().take_while(|c| **c == '\\').count() % 2 == 1;
        let closes_raw = |k: usize| s[k] == '"' && (1..=hashes).all(|h| at(k + h) == '#');
        let keep;
        (i, keep) = match (at(i), at(i + 1)) {
            ('/', '/') => (find(i, &|k| s[k] == '\n'), false),
            ('/', '*') => (find(i + 2, &|k| s[k - 1] == '*' && s[k] == '/') + 1, false),
            _ if raw => (find(i + hashes + 2, &closes_raw) + 1 + hashes, false),
            ('"', _) => (find(i + 1, &|k| s[k] == '"' && !escaped(k)) + 1, false),
            ('\'', '\\') => (find(i + 3, &|k| s[k] == '\'') + 1, false),
            ('\'', _) if at(i + 2) == '\'' => (i + 3, false),
            (':', ':') => (i + 2, true),
            (c, _) if ident(c) => (find(i, &|k| !ident(s[k])), true),
            (c, _) => (i + 1, !c.is_whitespace()),
        };
        let span = &s[start..i.min(s.len())];
        if keep {
            out.push((line, span.iter().collect()));
        }
        line += span.iter().filter(|c| **c == '\n').count();
    }
    out
}

/// Every path the code names from `crate`, `super`, `self` or one of
/// `children`, as (line of its last segment, segments): one per leaf of a
/// `use` group, none in a `#[cfg(test)]` item, none in a `pub use`
/// re-export unless `reexports`.
fn paths(text: &str, children: &BTreeSet<String>, reexports: bool) -> Vec<(usize, Vec<String>)> {
    let toks = tokens(text);
    let word = |k: usize| toks.get(k).map_or("", |t| t.1.as_str());
    let (mut out, mut i) = (Vec::new(), 0);
    while i < toks.len() {
        let reexport = word(i) == "pub"
            && (word(i + 1) == "use" || word(i + 1) == "(" && word(i + 4) == "use");
        if reexport && !reexports {
            i = item_end(&toks, i);
        } else if (i..i + 7)
            .map(word)
            .eq(["#", "[", "cfg", "(", "test", ")", "]"])
        {
            i = item_end(&toks, i + 7);
        } else if (matches!(word(i), "crate" | "super" | "self") || children.contains(word(i)))
            && word(i + 1) == "::"
            && (i == 0 || word(i - 1) != "::")
        {
            i = use_tree(&toks, i, Vec::new(), &mut out);
        } else {
            i += 1;
        }
    }
    out
}

/// The index after the item (or statement) that starts at `toks[i]`: after
/// its first `;` or its first `{ … }`, whichever comes first.
fn item_end(toks: &[(usize, String)], mut i: usize) -> usize {
    let mut depth = 0;
    while let Some((_, tok)) = toks.get(i) {
        i += 1;
        match tok.as_str() {
            "{" => depth += 1,
            "}" if depth == 1 => return i,
            "}" => depth -= 1,
            ";" if depth == 0 => return i,
            _ => {}
        }
    }
    i
}

/// Reads the path or `use` tree at `toks[i]` under `prefix`, pushing each
/// leaf onto `out`; returns the index of the token after it.
fn use_tree(
    toks: &[(usize, String)],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<(usize, Vec<String>)>,
) -> usize {
    let word = |k: usize| toks.get(k).map_or("", |t| t.1.as_str());
    let ident = |w: &str| w.starts_with(|c: char| c.is_alphanumeric() || c == '_');
    loop {
        let (line, name) = (toks.get(i).map_or(0, |t| t.0), word(i));
        if name == "{" {
            i += 1;
            while !matches!(word(i), "}" | "") {
                i = use_tree(toks, i, prefix.clone(), out);
                while !matches!(word(i), "," | "}" | "") {
                    i += 1; // past `as name`
                }
                i += (word(i) == ",") as usize;
            }
            return i + 1;
        }
        if !ident(name) && name != "*" {
            return i; // not a path after all
        }
        let group_self = name == "self" && !prefix.is_empty(); // `{self, …}`
        if ident(name) && !group_self {
            prefix.push(name.to_owned());
        }
        let next = word(i + 2);
        if name == "*" || word(i + 1) != "::" || !(ident(next) || next == "{" || next == "*") {
            out.push((line, prefix));
            return i + 1;
        }
        i += 2;
    }
}

/// The graph's circles: each set of nodes that all reach one another, with
/// the uses that tie them.
fn circles(graph: &Graph) -> Vec<String> {
    let reach = |from: &str| {
        let (mut seen, mut todo) = (BTreeSet::new(), vec![from]);
        while let Some(node) = todo.pop() {
            for next in graph.get(node).into_iter().flat_map(|used| used.keys()) {
                if seen.insert(next.as_str()) {
                    todo.push(next);
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&str, BTreeSet<&str>> =
        graph.keys().map(|n| (n.as_str(), reach(n))).collect();
    let (mut placed, mut out) = (BTreeSet::new(), Vec::new());
    for node in graph.keys().map(String::as_str) {
        let members: Vec<&str> = (reaches[node].iter().copied())
            .filter(|m| reaches.get(m).is_some_and(|back| back.contains(node)))
            .collect();
        if members.is_empty() || !placed.insert(members.clone()) {
            continue;
        }
        let mut text = members.join(", ");
        for from in &members {
            for (to, items) in graph[*from]
                .iter()
                .filter(|(to, _)| members.contains(&to.as_str()))
            {
                let items: Vec<String> = items
                    .iter()
                    .map(|(item, at)| format!("{item} ({at})"))
                    .collect();
                text += &format!("\n  {from} -> {to}: {}", items.join(", "));
            }
        }
        out.push(text);
    }
    out
}

fn assert_every_module_has_a_layer(krate: &Crate) {
    let sources = krate.sources();
    let unplaced: BTreeSet<&str> = (sources.iter().map(|(file, _)| top_module(file)))
        .filter(|m| !["lib", "main"].contains(m) && krate.layer_of(m).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules of {} with no layer in tests/it/architecture.rs (and docs/architecture.md): {unplaced:?}",
        krate.src.display()
    );
}

fn assert_uses_only_point_down(krate: &Crate) {
    let mut upward = Vec::new();
    for (module, used) in module_graph(&Tree::new(&krate.sources())) {
        for (target, items) in used {
            let (Some(from), Some(to)) = (krate.layer_of(&module), krate.layer_of(&target)) else {
                continue;
            };
            let (item, at) = items.first_key_value().unwrap();
            if to > from {
                let (up, down) = (krate.layers[to].0, krate.layers[from].0);
                upward.push(format!(
                    "{at}: {module} ({down}) uses {target} ({up}): {item}"
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "uses that point up:\n{}",
        upward.join("\n")
    );
}

fn assert_no_circles(krate: &Crate, graph: impl Fn(&Tree) -> Graph) {
    let found = circles(&graph(&Tree::new(&krate.sources())));
    let src = krate.src.display();
    assert!(
        found.is_empty(),
        "import circles in {src}:\n{}",
        found.join("\n")
    );
}

/// Where `text` (a file of `krate`) speaks SQL outside `storage/`: a
/// `sqlx` path in its code, or a string that starts a SQL statement.
fn sql_outside_storage(file: &str, text: &str) -> Vec<String> {
    if file.starts_with("storage/") {
        return Vec::new();
    }
    let mut found: Vec<String> = (tokens(text).into_iter())
        .filter(|(_, token)| token == "sqlx")
        .map(|(line, _)| format!("{file}:{line}: names sqlx"))
        .collect();
    const STATEMENTS: [&str; 6] = [
        "SELECT ",
        "INSERT INTO ",
        "UPDATE ",
        "DELETE FROM ",
        "CREATE TABLE ",
        "ALTER TABLE ",
    ];
    for (n, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let quoted = code.split('"').skip(1).step_by(2);
        if quoted
            .into_iter()
            .any(|s| STATEMENTS.iter().any(|k| s.starts_with(k)))
        {
            found.push(format!("{file}:{}: a SQL statement: {code}", n + 1));
        }
    }
    found
}

fn assert_sql_only_in_storage(krate: &Crate) {
    let found: Vec<String> = (krate.sources().iter())
        .flat_map(|(file, text)| sql_outside_storage(file, text))
        .collect();
    assert!(
        found.is_empty(),
        "SQL outside storage/ in {} (move it into a store there):\n{}",
        krate.src.display(),
        found.join("\n")
    );
}

/// Where `text` (a file of `krate`) opens a transaction with a plain
/// `.begin()` in a function that writes (INSERT, UPDATE, DELETE). On SQLite
/// such a transaction reads first and then cannot take the write lock once
/// another connection has committed: it fails at once with "database is
/// locked", whatever the busy timeout (a 500 under load). Writers begin
/// with `WriteTx::begin_write`; a plain `.begin()` is for reading a
/// consistent snapshot.
fn deferred_writes(file: &str, text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = (lines.iter().enumerate())
        .filter(|(_, l)| {
            let code = l.trim_start();
            code.starts_with("fn ")
                || code.starts_with("pub fn ")
                || code.contains(" fn ")
                || code.starts_with("async fn ")
        })
        .map(|(n, _)| n)
        .collect();
    let mut found = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") || !(code.contains(".begin()") || code == "begin()") {
            continue;
        }
        let from = starts.iter().rev().find(|&&s| s <= n).copied().unwrap_or(0);
        let to = starts
            .iter()
            .find(|&&s| s > n)
            .copied()
            .unwrap_or(lines.len());
        let body = lines[from..to].join("\n");
        if ["INSERT INTO ", "UPDATE ", "DELETE FROM "]
            .iter()
            .any(|k| body.contains(k))
        {
            found.push(format!("{file}:{}: {}", n + 1, code));
        }
    }
    found
}

#[test]
fn a_transaction_that_writes_takes_the_write_lock_when_it_begins() {
    let found: Vec<String> = (server().sources().iter())
        .flat_map(|(file, text)| deferred_writes(file, text))
        .collect();
    assert!(
        found.is_empty(),
        "a transaction that writes begins with `.begin()` (use WriteTx::begin_write):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_write_lock_check_sees_a_deferred_writer_but_not_a_reader() {
    let writer = "pub async fn delete(&self) {\n    let mut tx = self.pool.begin().await?;\n    sqlx::query(\"DELETE FROM alerts WHERE id = $1\");\n}\n";
    assert_eq!(deferred_writes("storage/a.rs", writer).len(), 1);
    let reader = "pub async fn load(&self) {\n    let mut tx = self.pool.begin().await?;\n    sqlx::query(\"SELECT 1\");\n}\nfn other() { \"UPDATE x\" }\n";
    assert!(deferred_writes("storage/a.rs", reader).is_empty());
    let fixed = writer.replace(".begin()", ".begin_write()");
    assert!(deferred_writes("storage/a.rs", &fixed).is_empty());
}

#[test]
fn only_the_servers_storage_speaks_sql() {
    assert_sql_only_in_storage(&server());
}

#[test]
fn the_app_speaks_no_sql() {
    assert_sql_only_in_storage(&app());
}

#[test]
fn the_sql_check_sees_sqlx_and_statements_but_not_comments_or_storage() {
    let code = "use sqlx::AnyPool;\nlet q = \"SELECT id FROM jobs\";\n// UPDATE x SET y\n";
    let found = sql_outside_storage("quota.rs", code);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("quota.rs:1: names sqlx"), "{found:?}");
    assert!(
        found[1].starts_with("quota.rs:2: a SQL statement"),
        "{found:?}"
    );
    assert!(sql_outside_storage("storage/jobs.rs", code).is_empty());
    let words = "let m = \"Select a job\"; /* sqlx */";
    assert!(sql_outside_storage("http/mod.rs", words).is_empty());
}

#[test]
fn every_server_module_has_a_layer() {
    assert_every_module_has_a_layer(&server());
}

#[test]
fn every_app_module_has_a_layer() {
    assert_every_module_has_a_layer(&app());
}

#[test]
fn server_modules_only_use_their_own_layer_and_the_layers_below() {
    assert_uses_only_point_down(&server());
}

#[test]
fn app_modules_only_use_their_own_layer_and_the_layers_below() {
    assert_uses_only_point_down(&app());
}

#[test]
fn no_two_server_modules_depend_on_each_other_even_around_a_circle() {
    assert_no_circles(&server(), module_graph);
}

#[test]
fn no_two_app_modules_depend_on_each_other_even_around_a_circle() {
    assert_no_circles(&app(), module_graph);
}

#[test]
fn no_two_server_files_depend_on_each_other_even_around_a_circle() {
    assert_no_circles(&server(), |tree| tree.file_graph(false));
}

#[test]
fn no_two_app_files_depend_on_each_other_even_around_a_circle() {
    assert_no_circles(&app(), |tree| tree.file_graph(false));
}

#[test]
fn the_source_reader_sees_grouped_and_nested_imports() {
    let read = |code: &str, reexports: bool| {
        let found = paths(code, &BTreeSet::from(["kid".into()]), reexports);
        let found: Vec<String> = found
            .iter()
            .map(|(n, p)| format!("{n}:{}", p.join("::")))
            .collect();
        found.join(" ")
    };
    let reexports = "pub use crate::a::X;\npub(crate) use super::Y;\nmod z;";
    assert_eq!(read(reexports, true), "1:crate::a::X 2:super::Y");
    for (code, seen) in [
        (
            "use crate::{a::{b, c}, d, e::f as g};",
            "1:crate::a::b 1:crate::a::c 1:crate::d 1:crate::e::f",
        ),
        ("let x = crate::time::now_ms();", "1:crate::time::now_ms"),
        (
            "f(crate::a::x(), super::b::Y::<T>::new)",
            "1:crate::a::x 1:super::b::Y",
        ),
        ("use super::{\n    self,\n    X,\n};", "2:super 3:super::X"),
        (
            "use self::kid::*; kid::f(); std::kid::g();",
            "1:self::kid 1:kid::f",
        ),
        (reexports, ""),
        (
            "#[cfg(test)]\nuse crate::t::x;\nuse crate::u::y;",
            "3:crate::u::y",
        ),
        (
            "#[cfg(test)]\nmod tests {\n    use super::*;\n}\ncrate::v",
            "5:crate::v",
        ),
        (
            "// crate::a\nf(\"crate::b\\\"\", r#\"\"crate::c\"#, '\"');\ncrate::d",
            "3:crate::d",
        ),
    ] {
        assert_eq!(read(code, false), seen, "in {code:?}");
    }
}

#[test]
fn the_resolver_finds_the_file_that_defines_the_named_item() {
    let sources = [
        ("lib.rs", "pub mod a;\npub mod b;"),
        (
            "a/mod.rs",
            "pub mod jobs;\npub mod forms;\npub use jobs::*;\npub struct Face;",
        ),
        (
            "a/jobs.rs",
            "pub(crate) async fn run() {}\npub struct Job;\nuse super::Face;",
        ),
        (
            "a/forms.rs",
            "use crate::a::{Job, jobs};\nfn f() { super::Missing }",
        ),
        (
            "b.rs",
            "use crate::a::forms::Form;\n#[cfg(test)]\nuse crate::a::run;",
        ),
        ("a/tests.rs", "use crate::b::*;"),
    ];
    let tree = Tree::new(&sources.map(|(file, text)| (file.into(), text.into())));
    let resolve = |from: &str, path: &str| {
        let found = tree.resolve(&segments(from, "::"), &segments(path, "::"));
        found.map_or("none".into(), |(m, item)| {
            format!("{} {item}", tree.0[&m].file)
        })
    };
    assert_eq!(resolve("b", "crate::a::Job"), "a/jobs.rs Job"); // re-exported
    assert_eq!(resolve("b", "crate::a::Face"), "a/mod.rs Face"); // its own
    assert_eq!(resolve("a::jobs", "super::forms"), "a/forms.rs forms");
    assert_eq!(resolve("a", "jobs::run"), "a/jobs.rs run");
    assert_eq!(resolve("a", "self::Nowhere"), "a/mod.rs Nowhere");
    assert_eq!(resolve("", "super::x"), "none");
    // jobs.rs → mod.rs is a child using its face; b.rs's test use is skipped.
    let edges = format!("{:?}", tree.file_graph(false));
    let forms = r#""a/forms.rs": {"a/jobs.rs": {"Job": "a/forms.rs:1", "jobs": "a/forms.rs:1"}}"#;
    let b = r#""b.rs": {"a/forms.rs": {"Form": "b.rs:1"}}"#;
    assert_eq!(edges, format!("{{{forms}, {b}}}"));
}
