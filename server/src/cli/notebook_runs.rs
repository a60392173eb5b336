//! `paddlecloud notebook params|run|output`: a notebook file's parameters,
//! a run of it as a job (papermill) with `--set NAME=VALUE`, and the run's
//! executed notebook.

use std::io::Write;
use std::path::PathBuf;

use app::models::{NotebookRunReport, NotebookRunSpec, ReplicaResources};
use clap::Args;

use super::remote::RemoteArgs;
use crate::api_client::notebooks::RunFile;

/// `paddlecloud notebook params`.
#[derive(Debug, Args)]
pub struct ParamsArgs {
    /// The notebook's name.
    pub name: String,
    /// The file's path in its workspace.
    pub path: String,
    /// The version's id (default: the file's newest).
    #[arg(long)]
    pub version: Option<i64>,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud notebook run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The notebook's name.
    pub name: String,
    /// The file's path in its workspace.
    pub path: String,
    /// The version's id (default: the file's newest).
    #[arg(long)]
    pub version: Option<i64>,
    /// A parameter's value, `NAME=VALUE` (repeat; read as the parameter's type).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// The job's name (default: the file's name and a random suffix).
    #[arg(long = "job-name")]
    pub job_name: Option<String>,
    /// The environment (default: the notebook's, else paddlecloud/minimal).
    #[arg(long)]
    pub environment: Option<String>,
    /// CPU of its replica.
    #[arg(long, default_value = "1")]
    pub cpu: String,
    /// Memory of its replica.
    #[arg(long, default_value = "1Gi")]
    pub memory: String,
    /// GPUs of its replica.
    #[arg(long, default_value_t = 0)]
    pub gpu: u32,
    /// A dataset it reads (repeat).
    #[arg(long = "dataset", value_name = "DATASET")]
    pub datasets: Vec<String>,
    /// Wait until the job ends, print how far the notebook got, and exit
    /// non-zero unless every cell ran.
    #[arg(long)]
    pub wait: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud notebook output`.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// The run's job.
    pub job: String,
    /// Its page (nbconvert's HTML) instead of the .ipynb.
    #[arg(long)]
    pub html: bool,
    /// The notebook as the run took it, before it ran.
    #[arg(long, conflicts_with = "html")]
    pub input: bool,
    /// Write it here instead of to stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// Prints a file's parameters, one per line: name, type, default, comment.
pub fn params(args: ParamsArgs) -> anyhow::Result<()> {
    let read = args
        .remote
        .client()?
        .notebook_parameters(&args.name, &args.path, args.version)?;
    match read.cell {
        None => println!(
            "{} (version #{}) has no cell tagged \"parameters\": it runs as it is.",
            read.path, read.version
        ),
        Some(cell) => println!("{} (version #{}), cell {cell}:", read.path, read.version),
    }
    for p in &read.parameters {
        let kind = serde_json::to_value(&p.param.kind)
            .ok()
            .and_then(|v| v["type"].as_str().map(str::to_owned))
            .unwrap_or_default();
        let comment = if p.param.description.is_empty() {
            String::new()
        } else {
            format!("  # {}", p.param.description)
        };
        println!("  {}: {kind} = {}{comment}", p.param.name, p.written);
    }
    Ok(())
}

/// Runs a notebook file as a job; with `--wait`, waits and reports.
pub fn run(args: RunArgs) -> anyhow::Result<()> {
    let client = args.remote.client()?;
    let spec = NotebookRunSpec {
        path: args.path.clone(),
        version: args.version,
        name: args.job_name.clone(),
        values: super::catalog::values(&args.set)?,
        resources: ReplicaResources {
            cpu: args.cpu.clone(),
            memory: args.memory.clone(),
            gpu: args.gpu,
        },
        environment: args.environment.clone(),
        datasets: args.datasets.clone(),
    };
    let job = client.run_notebook(&args.name, &spec)?;
    let run = job.spec.notebook_run.as_ref();
    println!(
        "submitted {}: {} version #{} ({})",
        job.name,
        args.path,
        run.map_or(0, |r| r.version),
        job.status.as_str()
    );
    if !args.wait {
        return Ok(());
    }
    let waited = super::remote::wait_for_job(&client, &job.name);
    let detail = client.job_detail(&job.name)?;
    if let Some(report) = &detail.notebook_run {
        println!("{}", report_text(report));
    }
    waited
}

/// How far a run got, and the failed cell's error and source.
pub fn report_text(report: &NotebookRunReport) -> String {
    let mut out = report.headline();
    if let Some(failed) = &report.failed {
        out.push_str(&format!(": {}\n", failed.error));
        for line in failed.source.lines() {
            out.push_str(&format!("  > {line}\n"));
        }
    }
    out.trim_end().to_owned()
}

/// Writes a run's executed notebook (or its page, or its input).
pub fn output(args: OutputArgs) -> anyhow::Result<()> {
    let which = if args.html {
        RunFile::Page
    } else if args.input {
        RunFile::Input
    } else {
        RunFile::Output
    };
    let bytes = args.remote.client()?.notebook_run_file(&args.job, which)?;
    match &args.output {
        Some(path) => {
            std::fs::write(path, &bytes)?;
            println!("wrote {}", path.display());
        }
        None => std::io::stdout().write_all(&bytes)?,
    }
    Ok(())
}
