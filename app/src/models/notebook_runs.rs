//! A notebook file run as a job (papermill's way): the parameters its
//! `parameters`-tagged cell declares, typed from what the cell writes; what
//! a user asks for (a version, values, resources); the job that runs it;
//! and, from the executed notebook, how far it got and where it failed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::AppError;
use crate::models::job_origin::{NotebookRunUse, TemplateValue};
use crate::models::names::MAX_JOB_NAME_LEN;
use crate::models::templates::{ParamType, TemplateParam, TemplateSpec};
use crate::models::{JobSpec, ReplicaResources};

pub use crate::models::job_origin::{DEFAULT_RUN_ENVIRONMENT, RUNNER_MODULE};
/// The tag papermill looks for on the cell that declares the parameters.
pub const PARAMETERS_TAG: &str = "parameters";

/// One parameter of a notebook: a template parameter (so forms, the CLI
/// and checks treat it as a template's), and its default as the cell
/// writes it in Python.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NotebookParameter {
    /// Name, type (`int`, `float`, `bool`, `string`), default, description
    /// (the line's comment). A default that is not a number, a boolean or a
    /// text (`None`, a list) is no default: the notebook keeps it unless a
    /// value is given, which is then text.
    #[serde(flatten)]
    pub param: TemplateParam,
    /// The default as written, e.g. `0.01` or `["a", "b"]`.
    pub written: String,
}

/// What a notebook file version declares: what `GET
/// /api/v1/notebooks/{name}/parameters` answers and the run form shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NotebookParameters {
    /// The notebook.
    pub notebook: String,
    /// The file.
    pub path: String,
    /// The version read (its id).
    pub version: i64,
    /// The parameters cell's position (1 for the first cell); `None`: no
    /// cell is tagged `parameters`, so the notebook runs as it is and takes
    /// no values.
    pub cell: Option<u32>,
    /// Its parameters, in the cell's order.
    pub parameters: Vec<NotebookParameter>,
}

impl NotebookParameters {
    /// Reads a notebook's JSON: the first code cell tagged `parameters`
    /// and its assignments.
    pub fn read(notebook: &str, path: &str, version: i64, json: &Value) -> Self {
        let (cell, parameters) = match parameters_cell(json) {
            Some((index, source)) => (Some(index as u32 + 1), parse_parameters(&source)),
            None => (None, vec![]),
        };
        Self {
            notebook: notebook.to_owned(),
            path: path.to_owned(),
            version,
            cell,
            parameters,
        }
    }

    /// `values` checked against the parameters (each by its type, as a
    /// template's; form posts send text): a name the notebook does not
    /// declare is an error naming the ones it does.
    pub fn check(
        &self,
        values: &BTreeMap<String, Value>,
    ) -> Result<BTreeMap<String, TemplateValue>, AppError> {
        let mut checked = BTreeMap::new();
        for (name, raw) in values {
            let Some(p) = self.parameters.iter().find(|p| &p.param.name == name) else {
                return Err(AppError::invalid(
                    format!("values.{name}"),
                    self.no_such_parameter(name),
                ));
            };
            checked.insert(name.clone(), p.param.check(raw)?);
        }
        Ok(checked)
    }

    /// Why `name` is no parameter of this notebook, naming those it has.
    fn no_such_parameter(&self, name: &str) -> String {
        if self.cell.is_none() {
            return format!(
                "{} has no cell tagged “{PARAMETERS_TAG}”, so it takes no values \
                 (tag the cell that sets its parameters in JupyterLab: Property \
                 Inspector → Cell Tags).",
                self.path
            );
        }
        let known = self
            .parameters
            .iter()
            .map(|p| p.param.name.as_str())
            .collect::<Vec<_>>();
        format!(
            "{} has no parameter “{name}”; its parameters: {}.",
            self.path,
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )
    }

    /// Fits notebook template `template` to this notebook: a template
    /// without parameters takes the notebook's (their defaults those of
    /// its cell, or `defaults` where given: a run's values); otherwise each
    /// parameter the template passes to the notebook must be one it
    /// declares (a 400 naming `parameters[i].name`).
    pub fn fit_template(
        &self,
        template: &mut TemplateSpec,
        defaults: &BTreeMap<String, TemplateValue>,
    ) -> Result<(), AppError> {
        if template.parameters.is_empty() {
            template.parameters = self
                .parameters
                .iter()
                .map(|p| {
                    let mut param = p.param.clone();
                    if let Some(value) = defaults.get(&param.name) {
                        param.default = Some(value.to_json());
                    }
                    param
                })
                .collect();
            return Ok(());
        }
        let passed: Vec<String> = template
            .notebook_parameters()
            .iter()
            .map(|p| p.name.clone())
            .collect();
        for (i, p) in template.parameters.iter().enumerate() {
            let declared = self.parameters.iter().any(|d| d.param.name == p.name);
            if passed.contains(&p.name) && !declared {
                return Err(AppError::invalid(
                    format!("parameters[{i}].name"),
                    format!(
                        "{} (a parameter the job does not use goes to the notebook)",
                        self.no_such_parameter(&p.name)
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The first code cell tagged `parameters`: its index and source.
pub fn parameters_cell(notebook: &Value) -> Option<(usize, String)> {
    let cells = notebook.get("cells")?.as_array()?;
    cells.iter().enumerate().find_map(|(i, cell)| {
        let tagged = cell["metadata"]["tags"]
            .as_array()
            .is_some_and(|tags| tags.iter().any(|t| t == PARAMETERS_TAG));
        (tagged && cell["cell_type"] == "code").then(|| (i, cell_source(cell)))
    })
}

/// A cell's source: nbformat writes it as a string or a list of lines.
pub fn cell_source(cell: &Value) -> String {
    match &cell["source"] {
        Value::String(s) => s.clone(),
        Value::Array(lines) => lines.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// The assignments of a parameters cell, as papermill's `inspect_notebook`
/// reads them: `name = value`, `name: type = value`, each with an optional
/// `# comment` (its description); a value may go on over lines while
/// brackets are open. Other lines (imports, expressions) are skipped.
pub fn parse_parameters(source: &str) -> Vec<NotebookParameter> {
    let mut found: Vec<NotebookParameter> = vec![];
    let mut lines = source.lines();
    while let Some(line) = lines.next() {
        let Some((name, annotation, rest)) = assignment(line) else {
            continue;
        };
        let (mut value, mut comment) = split_comment(rest);
        let mut value_text = value.trim().to_owned();
        while open_brackets(&value_text) > 0 {
            let Some(next) = lines.next() else { break };
            (value, comment) = split_comment(next);
            value_text.push('\n');
            value_text.push_str(value.trim_end());
        }
        let (kind, default) = typed(&value_text, annotation.as_deref());
        let param = TemplateParam {
            name: name.clone(),
            kind,
            default,
            description: comment.trim().to_owned(),
            required: false,
        };
        let parameter = NotebookParameter {
            param,
            written: value_text,
        };
        // A name set twice: the later line wins, as in Python.
        match found.iter_mut().find(|p| p.param.name == name) {
            Some(earlier) => *earlier = parameter,
            None => found.push(parameter),
        }
    }
    found
}

/// `name`, its annotation and what follows `=`, if `line` assigns one
/// plain name (not `a == b`, `a.b = c`, `a[0] = c` or `a += 1`).
fn assignment(line: &str) -> Option<(String, Option<String>, &str)> {
    let first = line.chars().next()?;
    if !(first.is_alphabetic() || first == '_') {
        return None;
    }
    let end = line
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(line.len());
    let name = &line[..end];
    let mut rest = line[end..].trim_start();
    let mut annotation = None;
    if let Some(after) = rest.strip_prefix(':') {
        let eq = after.find('=')?;
        let written = after[..eq].trim().trim_matches(|c| c == '"' || c == '\'');
        annotation = Some(written.to_owned());
        rest = &after[eq..];
    }
    let value = rest.strip_prefix('=')?;
    if value.starts_with('=') {
        return None;
    }
    Some((name.to_owned(), annotation, value))
}

/// The characters of `text` outside its string literals, with their byte
/// offsets (quotes and what they enclose left out, escapes honoured).
fn code_chars(text: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    text.char_indices().filter(move |&(_, c)| match quote {
        Some(q) => {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            false
        }
        None if c == '"' || c == '\'' => {
            quote = Some(c);
            false
        }
        None => true,
    })
}

/// A line's code and its comment: the first `#` outside a string.
fn split_comment(line: &str) -> (&str, &str) {
    match code_chars(line).find(|&(_, c)| c == '#') {
        Some((i, _)) => (&line[..i], &line[i + 1..]),
        None => (line, ""),
    }
}

/// Brackets opened and not closed (outside strings).
fn open_brackets(text: &str) -> i32 {
    code_chars(text)
        .map(|(_, c)| match c {
            '(' | '[' | '{' => 1,
            ')' | ']' | '}' => -1,
            _ => 0,
        })
        .sum()
}

/// The type and default a value's Python literal (or the annotation) says.
fn typed(value: &str, annotation: Option<&str>) -> (ParamType, Option<Value>) {
    let literal = literal(value);
    let by_annotation = match annotation.map(str::trim) {
        Some("int") => Some(ParamType::Int {
            min: None,
            max: None,
        }),
        Some("float") => Some(ParamType::Float {
            min: None,
            max: None,
        }),
        Some("bool") => Some(ParamType::Bool),
        Some("str") => Some(ParamType::String { pattern: None }),
        _ => None,
    };
    let by_value = match &literal {
        Some(Value::Bool(_)) => ParamType::Bool,
        Some(Value::Number(n)) if n.is_i64() => ParamType::Int {
            min: None,
            max: None,
        },
        Some(Value::Number(_)) => ParamType::Float {
            min: None,
            max: None,
        },
        _ => ParamType::String { pattern: None },
    };
    let kind = by_annotation.unwrap_or(by_value);
    // A default that does not fit the annotation is no default.
    let default = literal.filter(|v| match (&kind, v) {
        (ParamType::Bool, Value::Bool(_)) | (ParamType::String { .. }, Value::String(_)) => true,
        (ParamType::Int { .. }, Value::Number(n)) => n.is_i64(),
        (ParamType::Float { .. }, Value::Number(_)) => true,
        _ => false,
    });
    (kind, default)
}

/// A Python literal as JSON: `True`, `-3`, `1_000`, `2.5e-3`, `'text'`;
/// `None` for anything else.
fn literal(value: &str) -> Option<Value> {
    let v = value.trim();
    match v {
        "True" => return Some(Value::Bool(true)),
        "False" => return Some(Value::Bool(false)),
        _ => {}
    }
    if let Some(text) = string_literal(v) {
        return Some(Value::String(text));
    }
    let digits = v.replace('_', "");
    let numeric = !digits.is_empty()
        && digits
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))
        && digits.chars().any(|c| c.is_ascii_digit());
    if !numeric {
        return None;
    }
    if let Ok(i) = digits.parse::<i64>() {
        return Some(Value::from(i));
    }
    digits
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .and_then(serde_json::Number::from_f64)
        .map(Value::Number)
}

/// A one-line Python string literal's text (`'a'`, `"a"`, `r'a'`), with
/// the common escapes undone; `None` if `v` is not one.
fn string_literal(v: &str) -> Option<String> {
    let (raw, body) = match v.strip_prefix(['r', 'R']) {
        Some(rest) => (true, rest),
        None => (false, v),
    };
    let quote = body.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    if body.len() < 2 || !body.ends_with(quote) || body.starts_with(&quote.to_string().repeat(3)) {
        return None;
    }
    let inner = &body[1..body.len() - 1];
    if raw {
        return Some(inner.to_owned());
    }
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            if c == quote {
                // An unescaped quote inside: two literals, or not one.
                return None;
            }
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => return None,
        }
    }
    Some(out)
}

/// A run of a notebook file: what `POST /api/v1/notebooks/{name}/runs`
/// takes. The job runs the file's version with papermill, the values
/// injected after its parameters cell.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NotebookRunSpec {
    /// The file, e.g. `train.ipynb`.
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = r"^[^/\x00-\x1f][^\x00-\x1f]{0,1022}\.ipynb$")
    )]
    pub path: String,
    /// The version to run (its id); default: the file's newest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    /// The job's name; default: the file's name and a random suffix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A value per parameter to set; those left out keep the notebook's.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(value_type = Object))]
    pub values: BTreeMap<String, Value>,
    /// What the job's one replica asks for (default 1 CPU, 1Gi).
    #[serde(default)]
    pub resources: ReplicaResources,
    /// The environment it runs in; default: the notebook's, else
    /// `paddlecloud/minimal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// Datasets it reads (as a job's `datasets`).
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(max_items = 20))]
    pub datasets: Vec<String>,
}

impl NotebookRunSpec {
    /// The job that runs `run` in `environment`: one trainer starting the
    /// SDK's runner, which fetches the input, runs papermill with the
    /// values and sends the executed notebook back as it goes.
    /// `default_name` names it when the run does not.
    pub fn job(
        &self,
        run: NotebookRunUse,
        environment: String,
        default_name: String,
    ) -> Result<JobSpec, AppError> {
        let name = match &self.name {
            Some(name) => name.trim().to_owned(),
            None => default_name,
        };
        let mut spec = JobSpec::recorded(&name, vec![], String::new(), 1);
        spec.command = run.runner_command();
        spec.args = run.runner_args();
        spec.trainer = self.resources.clone();
        spec.datasets = self.datasets.clone();
        spec.environment = Some(environment);
        spec.notebook_run = Some(run);
        spec.validate()?;
        Ok(spec)
    }
}

/// The run form of file `path` of notebook `notebook` (`version`: the
/// newest when `None`), filled from job `from` when given.
pub fn run_href(notebook: &str, path: &str, version: Option<i64>, from: Option<&str>) -> String {
    use crate::models::url::encode;
    let mut href = format!("/notebooks/{}/run?path={}", encode(notebook), encode(path));
    if let Some(v) = version {
        href.push_str(&format!("&version={v}"));
    }
    if let Some(job) = from {
        href.push_str(&format!("&from={}", encode(job)));
    }
    href
}

/// What the run form shows: the parameters of the version, and the values,
/// environment, resources and datasets to start from (a job run again, or
/// the defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotebookRunForm {
    /// The version's parameters.
    pub parameters: NotebookParameters,
    /// A value per parameter to show instead of its default.
    pub values: BTreeMap<String, String>,
    /// The environment it runs in unless changed.
    pub environment: String,
    /// What its replica asks for.
    pub resources: ReplicaResources,
    /// Datasets it reads, `,`-separated.
    pub datasets: String,
    /// The job whose values these are, if one.
    pub from: Option<String>,
}

/// The job fields of the run form, as posted (text).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NotebookJobForm {
    /// The job's name; empty: the file's name and a suffix.
    #[serde(default)]
    pub name: String,
    /// The environment; empty: the notebook's, else the default.
    #[serde(default)]
    pub environment: String,
    /// CPU; empty: 1.
    #[serde(default)]
    pub cpu: String,
    /// Memory; empty: 1Gi.
    #[serde(default)]
    pub memory: String,
    /// GPUs; empty: none.
    #[serde(default)]
    pub gpu: String,
    /// Datasets, `,`-separated.
    #[serde(default)]
    pub datasets: String,
}

impl NotebookJobForm {
    /// The run of version `version` of `path` with `values` (given as
    /// text; the run checks each against its parameter), or which field is
    /// wrong.
    pub fn to_spec(
        &self,
        path: String,
        version: i64,
        values: BTreeMap<String, Value>,
    ) -> Result<NotebookRunSpec, AppError> {
        let defaults = ReplicaResources::default();
        let given = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
        let gpu = match self.gpu.trim() {
            "" => 0,
            n => n
                .parse()
                .map_err(|_| AppError::invalid("gpu", "GPUs are a whole number."))?,
        };
        Ok(NotebookRunSpec {
            path,
            version: Some(version),
            name: given(&self.name),
            values,
            resources: ReplicaResources {
                cpu: given(&self.cpu).unwrap_or(defaults.cpu),
                memory: given(&self.memory).unwrap_or(defaults.memory),
                gpu,
            },
            environment: given(&self.environment),
            datasets: self
                .datasets
                .split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(str::to_owned)
                .collect(),
        })
    }
}

/// `train` for `experiments/Train.ipynb`: the file's name as the stem of
/// a job name (lower case, `-` for the rest; `notebook` if nothing is
/// left), to which a run adds a random suffix.
pub fn run_name_stem(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.strip_suffix(".ipynb").unwrap_or(file);
    let mut name = String::new();
    for c in stem.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            name.push(c);
        } else if !name.is_empty() && !name.ends_with('-') {
            name.push('-');
        }
    }
    let name = name.trim_start_matches(|c: char| c.is_ascii_digit() || c == '-');
    let stem: String = name.chars().take(MAX_JOB_NAME_LEN - 7).collect();
    match stem.trim_end_matches('-') {
        "" => "notebook".to_owned(),
        stem => stem.to_owned(),
    }
}

/// How far an executed notebook got, read from papermill's marks on its
/// cells (`metadata.papermill.status`): what the job page shows above the
/// rendered notebook.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NotebookRunReport {
    /// Code cells in the notebook (the injected parameters cell included).
    pub cells: u32,
    /// Code cells that ran to the end.
    pub done: u32,
    /// The code cell running (1 for the first code cell), if one is.
    pub running: Option<u32>,
    /// The cell that failed, if one did.
    pub failed: Option<FailedCell>,
    /// Seconds papermill took, once it ended.
    pub seconds: Option<f64>,
}

/// The cell a run failed at.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct FailedCell {
    /// Its position among the code cells (1 for the first).
    pub cell: u32,
    /// Its `In [n]`, if it has one.
    pub execution_count: Option<u32>,
    /// Its source.
    pub source: String,
    /// `ZeroDivisionError: division by zero`.
    pub error: String,
    /// The traceback, as text (terminal colours taken out).
    pub traceback: String,
}

impl NotebookRunReport {
    /// Reads an executed (or executing) notebook's JSON.
    pub fn read(notebook: &Value) -> Self {
        let mut report = Self::default();
        let cells = notebook["cells"].as_array().cloned().unwrap_or_default();
        for cell in cells.iter().filter(|c| c["cell_type"] == "code") {
            report.cells += 1;
            let position = report.cells;
            match cell["metadata"]["papermill"]["status"].as_str() {
                Some("completed") => report.done += 1,
                Some("running") => report.running = Some(position),
                Some("failed") if report.failed.is_none() => {
                    report.failed = Some(failed_cell(cell, position));
                }
                _ => {}
            }
        }
        report.seconds = notebook["metadata"]["papermill"]["duration"]
            .as_f64()
            .filter(|s| s.is_finite());
        report
    }

    /// "Cell 3 of 8 running", "8 of 8 cells ran", "Failed at cell 4 of 8".
    pub fn headline(&self) -> String {
        if let Some(failed) = &self.failed {
            return format!("Failed at cell {} of {}", failed.cell, self.cells);
        }
        if let Some(running) = self.running {
            return format!("Cell {running} of {} running", self.cells);
        }
        format!("{} of {} cells ran", self.done, self.cells)
    }
}

fn failed_cell(cell: &Value, position: u32) -> FailedCell {
    let error = cell["outputs"]
        .as_array()
        .and_then(|outputs| outputs.iter().find(|o| o["output_type"] == "error"));
    let (message, traceback) = match error {
        Some(e) => (
            format!(
                "{}: {}",
                e["ename"].as_str().unwrap_or("Error"),
                e["evalue"].as_str().unwrap_or_default()
            ),
            e["traceback"]
                .as_array()
                .map(|lines| {
                    lines
                        .iter()
                        .filter_map(Value::as_str)
                        .map(without_colours)
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default(),
        ),
        None => (String::from("The cell failed."), String::new()),
    };
    FailedCell {
        cell: position,
        execution_count: cell["execution_count"].as_u64().map(|n| n as u32),
        source: cell_source(cell),
        error: message,
        traceback,
    }
}

/// `text` without terminal escape sequences (`ESC [ … letter`), which
/// IPython's tracebacks are coloured with.
pub fn without_colours(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests;
