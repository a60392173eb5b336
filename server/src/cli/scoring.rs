//! `paddlecloud score start|show|retry`: batch scoring a dataset version
//! with a model version into a new version of an output dataset.

use app::models::{ScoringForm, ScoringProgress};
use clap::{Args, Subcommand};

use super::remote::RemoteArgs;
use crate::api_client::ApiClient;

/// `paddlecloud score …`.
#[derive(Debug, Subcommand)]
pub enum ScoreCommand {
    /// Score a dataset version with a model version, e.g.
    /// `paddlecloud score start tiny@production rows:1 scores --replicas 2`.
    Start(StartArgs),
    /// How far a scoring job got.
    Show(JobArgs),
    /// Try a scoring again after it failed: only the files not scored.
    Retry(JobArgs),
}

/// `paddlecloud score start`.
#[derive(Debug, Args)]
pub struct StartArgs {
    /// The model: `name`, `owner/name`, with `:N` or `@alias` (none: its
    /// newest ready version).
    pub model: String,
    /// The dataset version: `name:N`, `owner/name:N` (without `:N`: its
    /// newest saved version).
    pub dataset: String,
    /// The output dataset (made if it does not exist).
    pub output: String,
    /// Replicas sharing the files.
    #[arg(long, default_value_t = 1)]
    pub replicas: u32,
    /// CPU per replica.
    #[arg(long, default_value = "1")]
    pub cpu: String,
    /// Memory per replica.
    #[arg(long, default_value = "2Gi")]
    pub memory: String,
    /// The environment (default: paddlecloud/paddle-cpu).
    #[arg(long, default_value = "")]
    pub environment: String,
    /// Python hooks, as serving takes them (`load(model_dir)`,
    /// `predict(state, inputs)`): the model need not be a PaddlePaddle inference model.
    #[arg(long)]
    pub script: Option<std::path::PathBuf>,
    /// The job's name (default: score- and the model's name).
    #[arg(long = "job-name", default_value = "")]
    pub job_name: String,
    /// Wait until the job ends and print how far it got; exit non-zero
    /// unless every file is scored.
    #[arg(long)]
    pub wait: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// A scoring job, for `show` and `retry`.
#[derive(Debug, Args)]
pub struct JobArgs {
    /// The scoring's job.
    pub job: String,
    /// (`retry`) Wait for the new try and print how far it got.
    #[arg(long)]
    pub wait: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// Runs `paddlecloud score …`.
pub fn run(command: ScoreCommand) -> anyhow::Result<()> {
    match command {
        ScoreCommand::Start(args) => {
            let client = args.remote.client()?;
            let script = match &args.script {
                Some(path) => std::fs::read_to_string(path)
                    .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?,
                None => String::new(),
            };
            let form = ScoringForm {
                name: args.job_name,
                model: args.model,
                dataset: args.dataset,
                output: args.output,
                replicas: Some(args.replicas),
                cpu: args.cpu,
                memory: args.memory,
                environment: args.environment,
                script,
            };
            let job = client.start_scoring(&form)?;
            started(&client, &job.name, args.wait)
        }
        ScoreCommand::Show(args) => {
            let progress = args.remote.client()?.scoring(&args.job)?;
            println!("{}", progress_text(&progress));
            Ok(())
        }
        ScoreCommand::Retry(args) => {
            let client = args.remote.client()?;
            let job = client.retry_scoring(&args.job)?;
            started(&client, &job.name, args.wait)
        }
    }
}

/// Says what started; with `wait`, waits for it and says how far it got.
fn started(client: &ApiClient, job: &str, wait: bool) -> anyhow::Result<()> {
    let progress = client.scoring(job)?;
    println!(
        "submitted {job}: {} over {} into {}",
        progress.model,
        progress.used.dataset,
        progress.used.output_version()
    );
    if !wait {
        return Ok(());
    }
    let waited = super::remote::wait_for_job(client, job);
    println!("{}", progress_text(&client.scoring(job)?));
    waited
}

/// `score-tiny-x (succeeded): 2 of 3 files scored into acme/scores:1 (uploading)`.
pub fn progress_text(p: &ScoringProgress) -> String {
    let mut text = format!(
        "{} ({}): {} into {} ({}) by {} over {}",
        p.job,
        p.status.as_str(),
        p.headline(),
        p.used.output_version(),
        p.output_state,
        p.model,
        p.used.dataset
    );
    if p.may_retry() {
        text.push_str(&format!("\nthe rest: paddlecloud score retry {}", p.job));
    }
    text
}
