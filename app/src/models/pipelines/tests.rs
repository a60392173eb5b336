use serde_json::json;

use super::*;

fn spec(value: Value) -> PipelineSpec {
    serde_json::from_value(value).unwrap()
}

fn field_and_message(err: AppError) -> (String, String) {
    match err {
        AppError::Invalid { field, message } => (field.unwrap_or_default(), message),
        other => panic!("not a 400: {other:?}"),
    }
}

/// prep → (train, check) → report, each a tiny job.
fn diamond(fail_fast: bool) -> PipelineSpec {
    let job = json!({"command": ["true"], "num_trainers": 1});
    spec(json!({
        "name": "diamond",
        "fail_fast": fail_fast,
        "nodes": [
            {"name": "prep", "job": job},
            {"name": "train", "job": job, "after": ["prep"]},
            {"name": "check", "job": job, "after": ["prep"]},
            {"name": "report", "job": job, "after": ["train", "check"]},
        ]
    }))
}

fn state(name: &str, status: NodeStatus) -> NodeState {
    NodeState {
        name: name.into(),
        status,
        message: String::new(),
        attempt: u32::from(status != NodeStatus::Pending),
        job: (status != NodeStatus::Pending).then(|| format!("run-{name}")),
        not_before: None,
        started_at: None,
        finished_at: None,
    }
}

fn states(spec: &PipelineSpec, given: &[(&str, NodeStatus)]) -> Vec<NodeState> {
    spec.nodes
        .iter()
        .map(|n| {
            let s = given
                .iter()
                .find(|(name, _)| *name == n.name)
                .map_or(NodeStatus::Pending, |(_, s)| *s);
            state(&n.name, s)
        })
        .collect()
}

fn started(steps: &[Step], spec: &PipelineSpec) -> Vec<String> {
    steps
        .iter()
        .filter_map(|s| match s {
            Step::Start { node, .. } => Some(spec.nodes[*node].name.clone()),
            _ => None,
        })
        .collect()
}

fn skipped(steps: &[Step], spec: &PipelineSpec) -> Vec<(String, String)> {
    steps
        .iter()
        .filter_map(|s| match s {
            Step::Skip { node, why } => Some((spec.nodes[*node].name.clone(), why.clone())),
            _ => None,
        })
        .collect()
}

fn end(steps: &[Step]) -> Option<RunStatus> {
    steps.iter().find_map(|s| match s {
        Step::End { status, .. } => Some(*status),
        _ => None,
    })
}

#[test]
fn a_cycle_is_refused_naming_it() {
    let job = json!({"command": ["true"], "num_trainers": 1});
    let s = spec(json!({"name": "loop", "nodes": [
        {"name": "a", "job": job},
        {"name": "b", "job": job, "after": ["a", "d"]},
        {"name": "c", "job": job, "after": ["b"]},
        {"name": "d", "job": job, "after": ["c.finished"]},
    ]}));
    let (field, message) = field_and_message(s.validate().unwrap_err());
    assert_eq!(field, "nodes");
    assert!(message.contains("b → d → c → b"), "{message}");
    let selfish = spec(json!({"name": "me", "nodes": [{"name": "a", "job": job, "after": ["a"]}]}));
    let (_, message) = field_and_message(selfish.validate().unwrap_err());
    assert!(message.contains("a → a"), "{message}");
}

#[test]
fn bad_nodes_are_refused_naming_the_field() {
    let job = json!({"command": ["true"], "num_trainers": 1});
    for (nodes, want, says) in [
        (
            json!([{"name": "a", "job": job, "after": ["b"]}]),
            "nodes[0].after",
            "no node “b”",
        ),
        (
            json!([{"name": "a", "job": job, "after": ["a.maybe"]}]),
            "nodes[0].after",
            "not a dependency",
        ),
        (
            json!([{"name": "a", "job": job}, {"name": "a", "job": job}]),
            "nodes[1].name",
            "Two nodes",
        ),
        (
            json!([{"name": "A", "job": job}]),
            "nodes[0].name",
            "lower-case",
        ),
        (
            json!([{"name": "a-very-long-node-name", "job": job}]),
            "nodes[0].name",
            "at most 18",
        ),
        (
            json!([{"name": "a"}]),
            "nodes[0]",
            "either a job or a template",
        ),
        (
            json!([{"name": "a", "job": "python x.py"}]),
            "nodes[0].job",
            "job spec",
        ),
        (
            json!([{"name": "a", "job": job, "retries": 10}]),
            "nodes[0].retries",
            "at most 9",
        ),
        (
            json!([{"name": "a", "job": {"command": ["{{params.nope}}"]}}]),
            "nodes[0]",
            "no parameter “nope”",
        ),
        (
            json!([{"name": "a", "job": {"command": ["{{nodes.b.model}}"]}}, {"name": "b", "job": job}]),
            "nodes[0]",
            "not a node that “a” waits for",
        ),
        (
            json!([{"name": "a", "job": {"command": ["{{lr}}"]}}]),
            "nodes[0]",
            "not a placeholder",
        ),
        (json!([]), "nodes", "at least one"),
    ] {
        let s = spec(json!({"name": "p", "nodes": nodes}));
        let (field, message) = field_and_message(s.validate().unwrap_err());
        assert_eq!(field, want, "{nodes}: {message}");
        assert!(message.contains(says), "{nodes}: {message}");
    }
    let long =
        spec(json!({"name": "a-pipeline-name-too-long", "nodes": [{"name": "a", "job": job}]}));
    assert_eq!(field_and_message(long.validate().unwrap_err()).0, "name");
}

#[test]
fn placeholders_may_read_parameters_and_nodes_upstream() {
    let s = spec(
        json!({"name": "chain", "parameters": {"lr": 0.1}, "nodes": [
            {"name": "train", "job": {"command": ["python", "t.py", "--lr", "{{params.lr}}"], "num_trainers": 1}},
            {"name": "gate", "job": {"command": ["true"], "num_trainers": 1}, "after": ["train"]},
            {"name": "eval", "template": {"name": "evaluate-a-line", "owner": "paddlecloud",
                "values": {"model": "{{nodes.train.model}}", "samples": "{{nodes.train.metrics.loss}}"}},
             "after": ["gate"]},
        ]}),
    );
    s.validate().unwrap();
    assert_eq!(
        Placeholder::parse("nodes.train.metrics.vdl/train/loss"),
        Some(Placeholder::Node(
            "train".into(),
            Output::Metric("vdl/train/loss".into())
        ))
    );
    assert_eq!(Placeholder::parse("nodes.train.metrics."), None);
}

#[test]
fn a_long_chain_and_a_wide_fan_out_validate_without_recursion() {
    let job = json!({"command": ["true"], "num_trainers": 1});
    let chain: Vec<Value> = (0..MAX_NODES)
        .map(|i| {
            let after: Vec<String> = if i == 0 {
                vec![]
            } else {
                vec![format!("n{}", i - 1)]
            };
            json!({"name": format!("n{i}"), "job": job, "after": after})
        })
        .collect();
    spec(json!({"name": "chain", "nodes": chain}))
        .validate()
        .unwrap();
    let mut fan = vec![json!({"name": "root", "job": job})];
    fan.extend(
        (0..1000).map(|i| json!({"name": format!("leaf{i}"), "job": job, "after": ["root"]})),
    );
    let fan = spec(json!({"name": "fan", "nodes": fan}));
    fan.validate().unwrap();
    let mut nodes = states(&fan, &[("root", NodeStatus::Succeeded)]);
    assert_eq!(started(&next_steps(&fan, &nodes, 0), &fan).len(), 1000);
    nodes[0].status = NodeStatus::Failed;
    assert_eq!(skipped(&next_steps(&fan, &nodes, 0), &fan).len(), 1000);
}

#[test]
fn a_diamond_starts_each_node_once_what_it_waits_for_succeeded() {
    let s = diamond(true);
    s.validate().unwrap();
    let steps = next_steps(&s, &states(&s, &[]), 0);
    assert_eq!(started(&steps, &s), ["prep"]);
    let steps = next_steps(&s, &states(&s, &[("prep", NodeStatus::Running)]), 0);
    assert!(steps.is_empty(), "{steps:?}");
    let steps = next_steps(&s, &states(&s, &[("prep", NodeStatus::Succeeded)]), 0);
    assert_eq!(started(&steps, &s), ["train", "check"]);
    let all = [
        ("prep", NodeStatus::Succeeded),
        ("train", NodeStatus::Succeeded),
        ("check", NodeStatus::Succeeded),
    ];
    assert_eq!(
        started(&next_steps(&s, &states(&s, &all), 0), &s),
        ["report"]
    );
    let done = [
        ("prep", NodeStatus::Succeeded),
        ("train", NodeStatus::Succeeded),
        ("check", NodeStatus::Succeeded),
        ("report", NodeStatus::Succeeded),
    ];
    assert_eq!(
        end(&next_steps(&s, &states(&s, &done), 0)),
        Some(RunStatus::Succeeded)
    );
}

#[test]
fn fail_fast_skips_what_has_not_started_and_lets_running_nodes_end() {
    let s = diamond(true);
    let nodes = states(
        &s,
        &[
            ("prep", NodeStatus::Succeeded),
            ("train", NodeStatus::Failed),
            ("check", NodeStatus::Running),
        ],
    );
    let steps = next_steps(&s, &nodes, 0);
    let skips = skipped(&steps, &s);
    assert_eq!(skips.len(), 1);
    assert_eq!(skips[0].0, "report");
    assert!(
        skips[0]
            .1
            .contains("“train” failed and the pipeline fails fast"),
        "{skips:?}"
    );
    assert_eq!(end(&steps), None, "check still runs");
    let nodes = states(
        &s,
        &[
            ("prep", NodeStatus::Succeeded),
            ("train", NodeStatus::Failed),
            ("check", NodeStatus::Succeeded),
            ("report", NodeStatus::Skipped),
        ],
    );
    assert_eq!(end(&next_steps(&s, &nodes, 0)), Some(RunStatus::Failed));
}

#[test]
fn without_fail_fast_other_branches_go_on_and_the_run_still_fails() {
    let mut s = diamond(false);
    s.nodes.push(
        serde_json::from_value(
            json!({"name": "side", "job": {"command": ["true"]}, "after": ["prep"]}),
        )
        .unwrap(),
    );
    let nodes = states(
        &s,
        &[
            ("prep", NodeStatus::Succeeded),
            ("train", NodeStatus::Failed),
        ],
    );
    let steps = next_steps(&s, &nodes, 0);
    assert_eq!(started(&steps, &s), ["check", "side"]);
    let skips = skipped(&steps, &s);
    assert_eq!(
        skips,
        [(
            "report".to_owned(),
            "It waited for “train” to succeed, which failed.".to_owned()
        )]
    );
    let finished = states(
        &s,
        &[
            ("prep", NodeStatus::Succeeded),
            ("train", NodeStatus::Failed),
            ("check", NodeStatus::Succeeded),
            ("report", NodeStatus::Skipped),
            ("side", NodeStatus::Succeeded),
        ],
    );
    let steps = next_steps(&s, &finished, 0);
    assert!(
        matches!(&steps[..], [Step::End { status: RunStatus::Failed, message }] if message.contains("“train”"))
    );
}

#[test]
fn a_handler_runs_on_failure_and_is_skipped_on_success_and_skips_cascade() {
    let job = json!({"command": ["true"], "num_trainers": 1});
    let s = spec(json!({"name": "handled", "fail_fast": false, "nodes": [
        {"name": "train", "job": job},
        {"name": "alert", "job": job, "after": ["train.failed"]},
        {"name": "after-alert", "job": job, "after": ["alert"]},
        {"name": "cleanup", "job": job, "after": ["train.finished", "alert.finished"]},
    ]}));
    s.validate().unwrap();
    let ok = next_steps(&s, &states(&s, &[("train", NodeStatus::Succeeded)]), 0);
    let skips: Vec<String> = skipped(&ok, &s).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        skips,
        ["alert", "after-alert"],
        "the skip cascades in one call"
    );
    assert_eq!(started(&ok, &s), ["cleanup"], "a skipped node has finished");
    let bad = next_steps(&s, &states(&s, &[("train", NodeStatus::Failed)]), 0);
    assert_eq!(started(&bad, &s), ["alert"]);
    assert!(skipped(&bad, &s).is_empty());
}

#[test]
fn a_retry_waits_for_its_backoff_and_is_not_a_failure_yet() {
    let s = diamond(true);
    let mut nodes = states(
        &s,
        &[
            ("prep", NodeStatus::Succeeded),
            ("check", NodeStatus::Running),
        ],
    );
    // train failed its first try and waits until t=5000 for the second.
    nodes[1].attempt = 1;
    nodes[1].job = Some("run-train".into());
    nodes[1].not_before = Some(5000);
    assert!(next_steps(&s, &nodes, 4999).is_empty());
    let steps = next_steps(&s, &nodes, 5000);
    assert_eq!(
        steps,
        [Step::Start {
            node: 1,
            attempt: 2
        }]
    );
    assert_eq!(
        node_job_name("diamond-x1", "train", 2),
        "diamond-x1-train-r2"
    );
    assert_eq!(node_job_name("diamond-x1", "train", 1), "diamond-x1-train");
}

#[test]
fn the_graph_puts_each_node_after_what_it_waits_for_and_collapses_a_wide_fan_out() {
    let s = diamond(true);
    let g = layout::layout(
        &s,
        &states(
            &s,
            &[
                ("prep", NodeStatus::Succeeded),
                ("train", NodeStatus::Failed),
            ],
        ),
    );
    let column = |name: &str| g.boxes.iter().find(|b| b.label == name).unwrap().x;
    assert!(column("prep") < column("train"));
    assert_eq!(column("train"), column("check"));
    assert!(column("check") < column("report"));
    assert_eq!(g.edges.len(), 4);
    assert_eq!(
        g.boxes.iter().find(|b| b.label == "train").unwrap().status,
        NodeStatus::Failed
    );

    let job = json!({"command": ["true"], "num_trainers": 1});
    let mut nodes = vec![json!({"name": "root", "job": job})];
    nodes.extend(
        (0..1000).map(|i| json!({"name": format!("leaf{i}"), "job": job, "after": ["root"]})),
    );
    let leaves: Vec<String> = (0..1000).map(|i| format!("leaf{i}")).collect();
    nodes.push(json!({"name": "join", "job": job, "after": leaves}));
    let fan = spec(json!({"name": "fan", "nodes": nodes}));
    let mut given = vec![
        ("root", NodeStatus::Succeeded),
        ("leaf7", NodeStatus::Failed),
    ];
    given.push(("leaf8", NodeStatus::Running));
    let g = layout::layout(&fan, &states(&fan, &given));
    assert_eq!(
        g.boxes.len(),
        3,
        "{:?}",
        g.boxes.iter().map(|b| &b.label).collect::<Vec<_>>()
    );
    let group = &g.boxes[1];
    assert_eq!(group.nodes.len(), 1000);
    assert_eq!(group.label, "leaf0 … leaf999 (1000)");
    assert_eq!(group.counts["failed"], 1);
    assert_eq!(group.counts["running"], 1);
    assert_eq!(group.counts["pending"], 998);
    assert_eq!(group.status, NodeStatus::Failed, "a group shows its worst");
    assert_eq!(g.edges, [(0, 1), (1, 2)]);
}
