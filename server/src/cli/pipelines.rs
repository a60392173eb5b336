//! `paddlecloud pipeline …`: run a pipeline from a YAML or JSON file, list
//! runs, show one node by node, stop one, retry one from what failed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::bail;
use app::models::pipeline_form::typed_value;
use app::models::{PipelineRun, PipelineSpec, PipelineSubmit, RunStatus};
use clap::{Args, Subcommand};

use super::remote::RemoteArgs;
use super::serving::{ListArgs, NameArgs};

/// The pipeline subcommands.
#[derive(Debug, Subcommand)]
pub enum PipelineCommand {
    /// Run a pipeline from a file, e.g.
    /// `paddlecloud pipeline run -f nightly.yaml --set epochs=10 --wait`.
    Run(RunArgs),
    /// List the account's runs.
    List(ListArgs),
    /// Print one run's nodes (`--json`: the whole run).
    Show(ShowArgs),
    /// Stop a run: its running jobs, and what had not started.
    Stop(NameArgs),
    /// Run a failed or stopped run again from what did not succeed.
    Retry(NameArgs),
}

/// `pipeline run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The pipeline: YAML (`.yaml`, `.yml`) or JSON, with `name`, `nodes`,
    /// `parameters`, `fail_fast`.
    #[arg(short = 'f', long = "file")]
    pub file: PathBuf,
    /// The run's name (default: the pipeline's and a suffix).
    #[arg(long)]
    pub name: Option<String>,
    /// A parameter's value, `NAME=VALUE` (repeatable; a number or `true`
    /// stays one).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Wait until the run ends, printing each node's change; the exit
    /// status says whether it succeeded.
    #[arg(long)]
    pub wait: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `pipeline show`.
#[derive(Debug, Clone, Args)]
pub struct ShowArgs {
    /// The run.
    pub name: String,
    /// Print the whole run as JSON.
    #[arg(long)]
    pub json: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// Reads a pipeline file: YAML by its extension, else JSON.
fn read(file: &Path) -> anyhow::Result<PipelineSpec> {
    super::spec_file::read(file, "a pipeline")
}

/// A pipeline file's `text`, YAML or JSON; `shown` names the file in errors.
pub fn parse(text: &str, yaml: bool, shown: &str) -> anyhow::Result<PipelineSpec> {
    super::spec_file::parse(text, yaml, shown, "a pipeline")
}

/// `NAME=VALUE` pairs, a value that reads as JSON (a number, `true`) kept
/// typed, any other as text.
pub(super) fn values(pairs: &[String]) -> anyhow::Result<BTreeMap<String, serde_json::Value>> {
    pairs
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) if !name.trim().is_empty() => {
                Ok((name.trim().to_owned(), typed_value(value)))
            }
            _ => bail!("--set wants NAME=VALUE, got {pair:?}"),
        })
        .collect()
}

/// One line per node: name, status, tries, job, why.
fn print_nodes(run: &PipelineRun) {
    for n in &run.nodes {
        println!(
            "{:<20} {:<10} {:>2}  {:<34} {}",
            n.name,
            n.status.as_str(),
            n.attempt,
            n.job.as_deref().unwrap_or("-"),
            n.message
        );
    }
}

/// Runs one pipeline subcommand.
pub fn run_pipeline(command: PipelineCommand) -> anyhow::Result<()> {
    match command {
        PipelineCommand::Run(args) => {
            let client = args.remote.client()?;
            let submit = PipelineSubmit {
                pipeline: read(&args.file)?,
                name: args.name,
                values: values(&args.set)?,
            };
            let run = client.run_pipeline(&submit)?;
            println!("submitted {} ({} nodes)", run.name, run.nodes.len());
            if !args.wait {
                return Ok(());
            }
            let mut seen: BTreeMap<String, String> = BTreeMap::new();
            loop {
                let run = client.pipeline(&run.name)?;
                for n in &run.nodes {
                    let now = format!("{} {}", n.status.as_str(), n.message);
                    if seen.get(&n.name) != Some(&now) {
                        println!("{:<20} {now}", n.name);
                        seen.insert(n.name.clone(), now);
                    }
                }
                if run.status != RunStatus::Running {
                    println!("{} {} {}", run.name, run.status.as_str(), run.message);
                    if run.status != RunStatus::Succeeded {
                        bail!("the run {}", run.status.as_str());
                    }
                    return Ok(());
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        PipelineCommand::List(args) => {
            let runs = args.remote.client()?.pipelines()?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&runs)?);
                return Ok(());
            }
            for r in &runs {
                println!(
                    "{:<28} {:<10} {:>5} nodes  {}",
                    r.name,
                    r.status.as_str(),
                    r.spec.nodes.len(),
                    r.message
                );
            }
            Ok(())
        }
        PipelineCommand::Show(args) => {
            let run = args.remote.client()?.pipeline(&args.name)?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&run)?);
            } else {
                println!("{} {} {}", run.name, run.status.as_str(), run.message);
                print_nodes(&run);
            }
            Ok(())
        }
        PipelineCommand::Stop(args) => {
            let run = args.remote.client()?.pipeline_action(&args.name, "stop")?;
            println!("{} {}", run.name, run.status.as_str());
            Ok(())
        }
        PipelineCommand::Retry(args) => {
            let run = args.remote.client()?.pipeline_action(&args.name, "retry")?;
            println!("{} {}", run.name, run.status.as_str());
            Ok(())
        }
    }
}
