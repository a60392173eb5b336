use serde_json::json;

use super::*;

fn notebook(cells: Value) -> Value {
    json!({ "cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5 })
}

fn kinds(params: &[NotebookParameter]) -> Vec<(String, String, Option<Value>)> {
    params
        .iter()
        .map(|p| {
            let kind = serde_json::to_value(&p.param.kind).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned();
            (p.param.name.clone(), kind, p.param.default.clone())
        })
        .collect()
}

#[test]
fn a_parameters_cell_gives_each_assignment_its_type_default_and_comment() {
    let source = "import os\n\
                  epochs = 3  # how many passes\n\
                  lr = 2.5e-3\n\
                  use_gpu = False\n\
                  label = 'first run'  # shown in charts\n\
                  batch: int = 64\n\
                  ratio: float = 1\n\
                  data = None\n\
                  layers = [64,\n          32]  # sizes\n\
                  config.x = 1\n\
                  same == 1\n\
                  step += 1\n";
    let params = parse_parameters(source);
    assert_eq!(
        kinds(&params),
        vec![
            ("epochs".into(), "int".into(), Some(json!(3))),
            ("lr".into(), "float".into(), Some(json!(0.0025))),
            ("use_gpu".into(), "bool".into(), Some(json!(false))),
            ("label".into(), "string".into(), Some(json!("first run"))),
            ("batch".into(), "int".into(), Some(json!(64))),
            ("ratio".into(), "float".into(), Some(json!(1))),
            ("data".into(), "string".into(), None),
            ("layers".into(), "string".into(), None),
        ]
    );
    assert_eq!(params[0].param.description, "how many passes");
    assert_eq!(params[3].param.description, "shown in charts");
    assert_eq!(params[7].written, "[64,\n          32]");
    assert_eq!(params[7].param.description, "sizes");
}

#[test]
fn a_hash_inside_a_string_is_not_a_comment_and_escapes_are_undone() {
    let params = parse_parameters("tag = \"a#b\"  # the tag\npath = 'it\\'s'\nraw = r'\\d+'\n");
    assert_eq!(params[0].param.default, Some(json!("a#b")));
    assert_eq!(params[0].param.description, "the tag");
    assert_eq!(params[1].param.default, Some(json!("it's")));
    assert_eq!(params[2].param.default, Some(json!("\\d+")));
}

#[test]
fn the_first_code_cell_tagged_parameters_is_the_one_read() {
    let nb = notebook(json!([
        { "cell_type": "markdown", "metadata": { "tags": ["parameters"] }, "source": "x = 1" },
        { "cell_type": "code", "metadata": {}, "source": ["a = 1\n"], "outputs": [] },
        { "cell_type": "code", "metadata": { "tags": ["setup", "parameters"] },
          "source": ["epochs = 2\n", "lr = 0.1\n"], "outputs": [] },
    ]));
    let read = NotebookParameters::read("lab", "train.ipynb", 7, &nb);
    assert_eq!(read.cell, Some(3));
    let names: Vec<_> = read
        .parameters
        .iter()
        .map(|p| p.param.name.as_str())
        .collect();
    assert_eq!(names, ["epochs", "lr"]);
}

#[test]
fn values_are_checked_by_type_and_an_unknown_name_lists_the_known_ones() {
    let nb = notebook(
        json!([{ "cell_type": "code", "metadata": { "tags": ["parameters"] },
        "source": "epochs = 2\nlr = 0.1\nname = 'a'\n", "outputs": [] }]),
    );
    let read = NotebookParameters::read("lab", "train.ipynb", 7, &nb);
    let values = [
        ("epochs".to_owned(), json!("5")),
        ("lr".to_owned(), json!(0.5)),
        ("name".to_owned(), json!("b")),
    ]
    .into_iter()
    .collect();
    let checked = read.check(&values).unwrap();
    assert_eq!(checked["epochs"], TemplateValue::Int(5));
    assert_eq!(checked["lr"].to_json(), json!(0.5));
    let bad = [("epochs".to_owned(), json!("five"))].into_iter().collect();
    let err = read.check(&bad).unwrap_err();
    assert!(
        matches!(&err, AppError::Invalid { field: Some(f), .. } if f == "values.epochs"),
        "{err:?}"
    );
    let unknown = [("batch".to_owned(), json!(3))].into_iter().collect();
    let err = read.check(&unknown).unwrap_err().to_string();
    assert!(
        err.contains("no parameter “batch”") && err.contains("epochs, lr, name"),
        "{err}"
    );
}

#[test]
fn a_notebook_without_a_parameters_cell_takes_no_values_and_says_how_to_tag_one() {
    let nb = notebook(
        json!([{ "cell_type": "code", "metadata": {}, "source": "x = 1", "outputs": [] }]),
    );
    let read = NotebookParameters::read("lab", "plain.ipynb", 1, &nb);
    assert_eq!(read.cell, None);
    assert!(read.parameters.is_empty());
    assert!(read.check(&BTreeMap::new()).unwrap().is_empty());
    let err = read
        .check(&[("x".to_owned(), json!(1))].into_iter().collect())
        .unwrap_err()
        .to_string();
    assert!(err.contains("Cell Tags"), "{err}");
}

#[test]
fn a_run_is_one_trainer_starting_the_runner_with_the_values_as_typed_json() {
    let run = NotebookRunUse {
        notebook: "lab".into(),
        path: "train.ipynb".into(),
        version: 4,
        run: "ab".repeat(16),
        values: [
            ("epochs".to_owned(), TemplateValue::Int(5)),
            ("label".to_owned(), TemplateValue::Text("x".into())),
        ]
        .into_iter()
        .collect(),
    };
    let spec = NotebookRunSpec {
        path: "train.ipynb".into(),
        ..Default::default()
    };
    let job = spec
        .job(
            run.clone(),
            "paddlecloud/minimal".into(),
            "train-abc123".into(),
        )
        .unwrap();
    assert_eq!(job.name, "train-abc123");
    assert_eq!(job.command, ["python3", "-m", RUNNER_MODULE]);
    assert_eq!(job.args, ["--parameters", r#"{"epochs":5,"label":"x"}"#]);
    assert_eq!((job.num_trainers, job.num_ps), (1, 0));
    assert_eq!(job.environment.as_deref(), Some("paddlecloud/minimal"));
    assert_eq!(job.notebook_run, Some(run.clone()));
    let named = NotebookRunSpec {
        name: Some("Bad Name".into()),
        ..spec
    };
    assert!(named.job(run, "e".into(), "x".into()).is_err());
}

#[test]
fn a_files_name_becomes_a_job_names_stem() {
    assert_eq!(
        run_name_stem("experiments/Train Model.ipynb"),
        "train-model"
    );
    assert_eq!(run_name_stem("2024_report.ipynb"), "report");
    assert_eq!(run_name_stem("__.ipynb"), "notebook");
    assert!(run_name_stem(&format!("{}.ipynb", "a".repeat(80))).len() <= MAX_JOB_NAME_LEN - 7);
}

#[test]
fn an_executed_notebook_says_how_far_it_got_and_where_it_failed() {
    let nb = json!({
        "metadata": { "papermill": { "duration": 3.5 } },
        "cells": [
            { "cell_type": "markdown", "metadata": {}, "source": "# Train" },
            { "cell_type": "code", "execution_count": 1, "metadata": { "papermill": { "status": "completed" } }, "source": "a = 1", "outputs": [] },
            { "cell_type": "code", "execution_count": 2, "metadata": { "papermill": { "status": "failed", "exception": true } },
              "source": ["1 / ", "0"],
              "outputs": [{ "output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
                            "traceback": ["\u{1b}[0;31mZeroDivisionError\u{1b}[0m  Traceback", "line 1"] }] },
            { "cell_type": "code", "execution_count": null, "metadata": { "papermill": { "status": "pending" } }, "source": "b = 2", "outputs": [] },
        ]
    });
    let report = NotebookRunReport::read(&nb);
    assert_eq!((report.cells, report.done, report.running), (3, 1, None));
    let failed = report.failed.clone().unwrap();
    assert_eq!(failed.cell, 2);
    assert_eq!(failed.execution_count, Some(2));
    assert_eq!(failed.source, "1 / 0");
    assert_eq!(failed.error, "ZeroDivisionError: division by zero");
    assert_eq!(failed.traceback, "ZeroDivisionError  Traceback\nline 1");
    assert_eq!(report.seconds, Some(3.5));
    assert_eq!(report.headline(), "Failed at cell 2 of 3");
    let running = json!({ "cells": [
        { "cell_type": "code", "metadata": { "papermill": { "status": "completed" } }, "source": "", "outputs": [] },
        { "cell_type": "code", "metadata": { "papermill": { "status": "running" } }, "source": "", "outputs": [] },
    ]});
    assert_eq!(
        NotebookRunReport::read(&running).headline(),
        "Cell 2 of 2 running"
    );
}

#[test]
fn a_notebook_template_takes_the_notebooks_parameters_defaulting_to_a_runs_values() {
    let nb = notebook(json!([
        {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": "epochs = 2\nlabel = 'a'"},
    ]));
    let declared = NotebookParameters::read("lab", "t.ipynb", 4, &nb);
    let mut template: TemplateSpec = serde_json::from_value(json!({
        "name": "t", "job": {"trainer": {"cpu": "1", "memory": "{{memory}}"}},
    }))
    .unwrap();
    let run = BTreeMap::from([("epochs".to_owned(), TemplateValue::Int(9))]);
    declared.fit_template(&mut template, &run).unwrap();
    let defaults: Vec<_> = template
        .parameters
        .iter()
        .map(|p| (p.name.as_str(), p.default.clone()))
        .collect();
    assert_eq!(
        defaults,
        [("epochs", Some(json!(9))), ("label", Some(json!("a")))]
    );

    // Given parameters: those the job does not use must be the notebook's.
    let given = |names: &[&str]| -> TemplateSpec {
        let parameters: Vec<Value> = names
            .iter()
            .map(|n| json!({"name": n, "type": "string", "default": "x"}))
            .collect();
        serde_json::from_value(json!({
            "name": "t", "parameters": parameters,
            "job": {"trainer": {"cpu": "1", "memory": "{{memory}}"}},
        }))
        .unwrap()
    };
    let mut fine = given(&["label", "memory"]);
    declared.fit_template(&mut fine, &BTreeMap::new()).unwrap();
    assert_eq!(fine.parameters.len(), 2, "kept as given");
    let err = declared
        .fit_template(&mut given(&["label", "batch"]), &BTreeMap::new())
        .unwrap_err();
    assert_eq!(err.field(), Some("parameters[1].name"));
    assert!(err.to_string().contains("epochs, label"), "{err}");
}

#[test]
fn a_notebook_run_saved_as_a_template_names_the_run_and_drops_the_runner() {
    let nb = notebook(json!([]));
    let declared = NotebookParameters::read("lab", "train.ipynb", 3, &nb);
    let spec = NotebookRunSpec {
        path: "train.ipynb".into(),
        ..Default::default()
    };
    let used = NotebookRunUse {
        notebook: "lab".into(),
        path: "train.ipynb".into(),
        version: 3,
        run: "ab".repeat(16),
        values: BTreeMap::new(),
    };
    let job = spec
        .job(used, "team/env".into(), "train-abc".into())
        .unwrap();
    let form = crate::models::TemplateForm::from_job(&job);
    assert_eq!(form.notebook_job, "train-abc");
    assert!(!form.job.contains("notebook_run"), "{}", form.job);
    assert!(
        !form.job.contains("paddlecloud.notebook_run"),
        "{}",
        form.job
    );
    assert!(
        form.description.contains("train.ipynb"),
        "{}",
        form.description
    );
    let mut template = form.to_spec().unwrap();
    declared
        .fit_template(&mut template, &BTreeMap::new())
        .unwrap();
    assert_eq!(
        template.notebook.as_ref().unwrap().job.as_deref(),
        Some("train-abc")
    );
    template.validate().unwrap();
}
