//! `paddlecloud template …` and `paddlecloud env …`: list, show, save and
//! run templates; list, show, save (and wait for the build of)
//! environments, with the credentials file the other remote commands use.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use app::models::{BuildState, EnvironmentSpec, TemplateRun, TemplateSpec};
use clap::{Args, Subcommand};

use super::remote::{wait_for_job, RemoteArgs};
use super::serving::ListArgs;

/// The template subcommands.
#[derive(Debug, Subcommand)]
pub enum TemplateCommand {
    /// List the account's templates and published ones.
    List(ListArgs),
    /// Print one template as JSON (the form `save` reads).
    Show(ShowArgs),
    /// Save a template from a JSON file as the next version of its name.
    Save(FileArgs),
    /// Run a template, e.g.
    /// `paddlecloud template run fit-a-line --owner paddlecloud --set epochs=10 --wait`.
    Run(RunArgs),
}

/// The environment subcommands.
#[derive(Debug, Subcommand)]
pub enum EnvCommand {
    /// List the environments the account can use, with their builds.
    List(ListArgs),
    /// Print one environment as JSON, with its build's state (and `--log`).
    Show(EnvShowArgs),
    /// Save an environment as the next version of its name, e.g.
    /// `paddlecloud env save nlp --requirement paddlenlp==3.0.0 --wait`.
    Save(EnvSaveArgs),
}

/// `template show`.
#[derive(Debug, Clone, Args)]
pub struct ShowArgs {
    /// Its name.
    pub name: String,
    /// The account whose published template it is.
    #[arg(long)]
    pub owner: Option<String>,
    /// The version (default: the newest).
    #[arg(long)]
    pub version: Option<u32>,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `template save`.
#[derive(Debug, Clone, Args)]
pub struct FileArgs {
    /// A JSON file: `name`, `description`, `parameters`, `job`.
    pub file: PathBuf,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `template run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The template.
    pub template: String,
    /// The account whose published template it is.
    #[arg(long)]
    pub owner: Option<String>,
    /// The version (default: the newest).
    #[arg(long)]
    pub version: Option<u32>,
    /// The job's name (default: the template's and a suffix).
    #[arg(long)]
    pub name: Option<String>,
    /// A parameter's value, `NAME=VALUE` (repeatable); read as the
    /// parameter's type by the console.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Wait until the job ends; exit non-zero unless it succeeded.
    #[arg(long)]
    pub wait: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `env show`.
#[derive(Debug, Clone, Args)]
pub struct EnvShowArgs {
    /// Its name.
    pub name: String,
    /// The account whose published environment it is.
    #[arg(long)]
    pub owner: Option<String>,
    /// The version (default: the newest).
    #[arg(long)]
    pub version: Option<u32>,
    /// Print the build's log instead.
    #[arg(long)]
    pub log: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `env save`.
#[derive(Debug, Clone, Args)]
pub struct EnvSaveArgs {
    /// Its name.
    pub name: String,
    /// What it is for.
    #[arg(long, default_value = "")]
    pub description: String,
    /// The image pods run on Kubernetes.
    #[arg(long, default_value = "")]
    pub image: String,
    /// A pip requirement (repeatable).
    #[arg(long = "requirement", short = 'r', value_name = "REQUIREMENT")]
    pub requirements: Vec<String>,
    /// A requirements.txt to read requirements from (package lines only).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Wait for its build on the console's machine; exit non-zero if it fails.
    #[arg(long)]
    pub wait: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `NAME=VALUE` pairs as the run's values (text; the console reads each as
/// its parameter's type).
pub(super) fn values(pairs: &[String]) -> anyhow::Result<BTreeMap<String, serde_json::Value>> {
    pairs
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) if !name.trim().is_empty() => Ok((
                name.trim().to_owned(),
                serde_json::Value::String(value.to_owned()),
            )),
            _ => bail!("--set wants NAME=VALUE, got {pair:?}"),
        })
        .collect()
}

/// Runs one template subcommand.
pub fn run_template(command: TemplateCommand) -> anyhow::Result<()> {
    match command {
        TemplateCommand::List(args) => {
            let list = args.remote.client()?.templates()?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&list)?);
                return Ok(());
            }
            for t in &list.templates {
                let params: Vec<&str> = t.spec.parameters.iter().map(|p| p.name.as_str()).collect();
                println!(
                    "{:<32} v{:<4} {}",
                    format!("{}/{}", t.owner, t.spec.name),
                    t.version,
                    params.join(", ")
                );
            }
            Ok(())
        }
        TemplateCommand::Show(args) => {
            let t =
                args.remote
                    .client()?
                    .template(&args.name, args.owner.as_deref(), args.version)?;
            println!("{}", serde_json::to_string_pretty(&t)?);
            Ok(())
        }
        TemplateCommand::Save(args) => {
            let text = std::fs::read_to_string(&args.file)
                .with_context(|| format!("reading {}", args.file.display()))?;
            let spec: TemplateSpec = serde_json::from_str(&text)
                .with_context(|| format!("{} is not a template", args.file.display()))?;
            let saved = args.remote.client()?.save_template(&spec)?;
            println!("saved {} v{}", saved.spec.name, saved.version);
            Ok(())
        }
        TemplateCommand::Run(args) => {
            let client = args.remote.client()?;
            let run = TemplateRun {
                owner: args.owner,
                name: args.name,
                version: args.version,
                values: values(&args.set)?,
            };
            let job = client.run_template(&args.template, &run)?;
            let from = job
                .spec
                .template
                .as_ref()
                .map(|t| {
                    format!(
                        " from {}/{} v{} ({})",
                        t.owner,
                        t.name,
                        t.version,
                        t.values_text()
                    )
                })
                .unwrap_or_default();
            println!("submitted {}{from}", job.name);
            if args.wait {
                wait_for_job(&client, &job.name)?;
            }
            Ok(())
        }
    }
}

/// Runs one environment subcommand.
pub fn run_env(command: EnvCommand) -> anyhow::Result<()> {
    match command {
        EnvCommand::List(args) => {
            let list = args.remote.client()?.environments()?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&list)?);
                return Ok(());
            }
            for e in &list.environments {
                let env = &e.environment;
                println!(
                    "{:<32} v{:<4} {:<14} {}",
                    format!("{}/{}", env.owner, env.spec.name),
                    env.version,
                    e.state.label(),
                    env.spec.requirements.join(" ")
                );
            }
            Ok(())
        }
        EnvCommand::Show(args) => {
            let detail = args.remote.client()?.environment(
                &args.name,
                args.owner.as_deref(),
                args.version,
            )?;
            if args.log {
                print!("{}", detail.build.log);
            } else {
                println!("{}", serde_json::to_string_pretty(&detail)?);
            }
            Ok(())
        }
        EnvCommand::Save(args) => {
            let mut requirements = args.requirements.clone();
            if let Some(file) = &args.file {
                let text = std::fs::read_to_string(file)
                    .with_context(|| format!("reading {}", file.display()))?;
                requirements.extend(
                    text.lines()
                        .map(|l| l.split('#').next().unwrap_or("").trim().to_owned())
                        .filter(|l| !l.is_empty()),
                );
            }
            let client = args.remote.client()?;
            let saved = client.save_environment(&EnvironmentSpec {
                name: args.name.clone(),
                description: args.description,
                image: args.image,
                requirements,
                setup_notes: String::new(),
            })?;
            println!(
                "saved {} (use it as \"{}\")",
                saved.pinned(),
                saved.pinned()
            );
            if !args.wait {
                return Ok(());
            }
            let start = Instant::now();
            let mut shown = 0;
            loop {
                let detail = client.environment(&saved.spec.name, None, Some(saved.version))?;
                // The log as it grows.
                if detail.build.log.len() > shown {
                    eprint!("{}", &detail.build.log[shown.min(detail.build.log.len())..]);
                    shown = detail.build.log.len();
                }
                match detail.build.state {
                    BuildState::Ready => {
                        println!("{} is ready", saved.pinned());
                        return Ok(());
                    }
                    BuildState::Failed => bail!(
                        "{} could not be built: {}",
                        saved.pinned(),
                        detail.build.message
                    ),
                    _ if start.elapsed() > Duration::from_secs(1800) => {
                        bail!("{} is still building after 30 minutes", saved.pinned())
                    }
                    _ => std::thread::sleep(Duration::from_millis(1000)),
                }
            }
        }
    }
}
