//! `paddlecloud describe JOB`: what the job's page shows, as text: its
//! facts, its replicas, what happened to it and them, and what it
//! registered (`--json`: the API's answer as it is).

use app::models::time::{format_age, format_utc_seconds};
use app::models::{join_command, origin_of, JobDetail};

use clap::Args;

use super::remote::RemoteArgs;
use crate::time::now_ms;

/// `paddlecloud describe`.
#[derive(Debug, Clone, Args)]
pub struct DescribeArgs {
    /// The job.
    pub job: String,
    /// Print it as JSON, as the API returns it.
    #[arg(long)]
    pub json: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// Prints the job's detail.
pub fn describe(args: DescribeArgs) -> anyhow::Result<()> {
    let detail = args.remote.client()?.job_detail(&args.job)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&detail)?);
    } else {
        print!("{}", render_detail(&detail, now_ms()));
    }
    Ok(())
}

/// The job's detail as `kubectl describe` would lay it out.
pub fn render_detail(d: &JobDetail, now: i64) -> String {
    let job = &d.job;
    let mut out = String::new();
    let mut fact = |k: &str, v: String| {
        if !v.is_empty() {
            out += &format!("{:<12}{v}\n", format!("{k}:"));
        }
    };
    fact("Name", job.name.clone());
    fact("Status", job.status.as_str().to_owned());
    fact("Message", job.message.clone());
    fact(
        "Stalled",
        job.stalled()
            .map(|since| {
                format!(
                    "{} (paddlecloud dump {} shows what it is doing)",
                    app::models::stall_message(since, now),
                    job.name
                )
            })
            .unwrap_or_default(),
    );
    fact("Where", job.cluster.clone());
    fact("From", origin_of(job));
    if let Some(t) = &job.spec.template {
        fact("Values", t.values_text());
    }
    fact(
        "Submitted",
        format!(
            "{} ({} ago)",
            format_utc_seconds(job.created_at),
            format_age(now - job.created_at)
        ),
    );
    fact(
        "Started",
        job.started_at.map(format_utc_seconds).unwrap_or_default(),
    );
    fact(
        "Ended",
        job.finished_at.map(format_utc_seconds).unwrap_or_default(),
    );
    fact("Image", job.spec.image.clone());
    let command: Vec<String> = job
        .spec
        .command
        .iter()
        .chain(&job.spec.args)
        .cloned()
        .collect();
    fact("Command", join_command(&command));
    fact("Datasets", job.spec.datasets.join(", "));
    fact("Models", job.spec.models.join(", "));
    out += "\nReplicas:\n";
    for pod in &d.pods {
        let exit = pod
            .exit_code
            .map(|c| format!(" exit {c}"))
            .unwrap_or_default();
        let why = if pod.message.is_empty() {
            String::new()
        } else {
            format!("  {}", pod.message)
        };
        out += &format!("  {:<12}{}{exit}{why}\n", pod.name, pod.phase.as_str());
    }
    out += "\nHistory:\n";
    for e in &d.history {
        let why = if e.message.is_empty() {
            String::new()
        } else {
            format!(": {}", e.message)
        };
        out += &format!("  {}  {}{why}\n", format_utc_seconds(e.at), e.headline());
    }
    let open: Vec<_> = d.alerts.iter().filter(|a| a.is_open()).collect();
    if !open.is_empty() {
        out += "\nAlerts:\n";
        for a in open {
            out += &format!(
                "  {}  {} ({})\n",
                format_utc_seconds(a.raised_at),
                a.message,
                a.rule
            );
        }
    }
    if let Some(p) = &d.scoring {
        out += &format!("\nBatch scoring: {}\n", super::scoring::progress_text(p));
    }
    if !d.registered.is_empty() {
        out += "\nRegistered:\n";
        for v in &d.registered {
            out += &format!("  {} ({})\n", v.reference(), v.state);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::models::{
        Job, JobHistoryEntry, JobSource, JobSpec, JobStatus, Pod, PodPhase, RegisteredVersion,
        RoleCounts,
    };

    #[test]
    fn a_described_job_lists_its_replicas_history_and_registered_versions() {
        let mut spec = JobSpec::recorded(
            "fit",
            vec!["python".into(), "train.py".into()],
            String::new(),
            1,
        );
        spec.datasets = vec!["mnist".into()];
        let detail = JobDetail {
            owner: "team".into(),
            job: Job {
                name: "fit".into(),
                spec,
                status: JobStatus::Failed,
                cluster: "local".into(),
                created_at: 1_000,
                started_at: Some(2_000),
                finished_at: Some(3_000),
                ps: RoleCounts::default(),
                trainers: RoleCounts::default(),
                message: "trainer-0 exited with 1".into(),
                source: JobSource::Console,
                ran_on: None,
                stalled_since: None,
                gpus_idle_since: None,
            },
            pods: vec![Pod {
                name: "trainer-0".into(),
                role: app::models::JobRole::Trainer,
                index: 0,
                phase: PodPhase::Failed,
                exit_code: Some(1),
                started_at: Some(2_000),
                finished_at: Some(3_000),
                message: String::new(),
                gpus: vec![],
            }],
            history: vec![JobHistoryEntry {
                at: 3_000,
                pod: Some("trainer-0".into()),
                state: "failed".into(),
                message: "Traceback".into(),
                exit_code: Some(1),
            }],
            registered: vec![RegisteredVersion {
                owner: "team".into(),
                name: "fit".into(),
                version: 2,
                state: "ready".into(),
                created_at: 2_500,
            }],
            notebook_run: None,
            scoring: None,
            alerts: Vec::new(),
            now: 10_000,
        };
        let text = render_detail(&detail, 10_000);
        assert!(text.contains("Status:     failed"), "{text}");
        assert!(text.contains("Command:    python train.py"), "{text}");
        assert!(text.contains("trainer-0   failed exit 1"), "{text}");
        assert!(
            text.contains("trainer-0 failed (exit 1): Traceback"),
            "{text}"
        );
        assert!(text.contains("team/fit:2 (ready)"), "{text}");
    }
}
