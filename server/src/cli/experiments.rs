//! `paddlecloud experiment …`: start an experiment from a YAML or JSON
//! file, list experiments, show one trial by trial, and steer one (stop,
//! pause, resume, more trials, failed trials again).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use app::models::{Experiment, ExperimentSpec, ExperimentStatus};
use clap::{Args, Subcommand};

use super::remote::RemoteArgs;
use super::serving::{ListArgs, NameArgs};

/// The experiment subcommands.
#[derive(Debug, Subcommand)]
pub enum ExperimentCommand {
    /// Start an experiment from a file, e.g.
    /// `paddlecloud experiment create -f lr-search.yaml --wait`.
    Create(CreateArgs),
    /// List the account's experiments, with their best trial.
    List(ListArgs),
    /// Print one experiment's trials, best first (`--json`: all of it).
    Show(ShowArgs),
    /// Stop an experiment and its running trials.
    Stop(NameArgs),
    /// Start no new trial; those running go on.
    Pause(NameArgs),
    /// Start trials again after a pause.
    Resume(NameArgs),
    /// Run more trials, the search learning from those so far.
    Extend(ExtendArgs),
    /// Run each failed trial's values again.
    Retry(NameArgs),
}

/// `experiment create`.
#[derive(Debug, Clone, Args)]
pub struct CreateArgs {
    /// The experiment: YAML (`.yaml`, `.yml`) or JSON, with `name`,
    /// `template`, `parameters`, `objective` and the optional rest.
    #[arg(short = 'f', long = "file")]
    pub file: PathBuf,
    /// Its name (default: the file's).
    #[arg(long)]
    pub name: Option<String>,
    /// A fixed value of a template parameter, `NAME=VALUE` (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// Wait until it ends, printing each trial as it ends; the exit status
    /// says whether it succeeded.
    #[arg(long)]
    pub wait: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `experiment show`.
#[derive(Debug, Clone, Args)]
pub struct ShowArgs {
    /// The experiment.
    pub name: String,
    /// Print the whole experiment as JSON.
    #[arg(long)]
    pub json: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `experiment extend`.
#[derive(Debug, Clone, Args)]
pub struct ExtendArgs {
    /// The experiment.
    pub name: String,
    /// How many trials to add.
    #[arg(long, default_value_t = 10)]
    pub more: u32,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `a=0.1, b=32`: a trial's values on one line.
fn values_text(values: &BTreeMap<String, serde_json::Value>) -> String {
    values
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line per trial, the best first, then by number.
fn print_trials(e: &Experiment) {
    let best = e.best().map(|t| t.number);
    let mut trials: Vec<_> = e.trials.iter().collect();
    trials.sort_by_key(|t| (Some(t.number) != best, t.number));
    println!(
        "TRIAL  STATUS     {:>14}  {:<40} MESSAGE",
        e.spec.objective.metric, "VALUES"
    );
    for t in trials {
        let objective = t.objective.map_or("-".to_owned(), |v| format!("{v:.6}"));
        let mark = if Some(t.number) == best { "*" } else { " " };
        println!(
            "{:>4}{mark}  {:<10} {:>14}  {:<40} {}",
            t.number,
            t.status.as_str(),
            objective,
            values_text(&t.values),
            t.message
        );
    }
}

/// Runs one experiment subcommand.
pub fn run_experiment(command: ExperimentCommand) -> anyhow::Result<()> {
    match command {
        ExperimentCommand::Create(args) => {
            let client = args.remote.client()?;
            let mut spec: ExperimentSpec = super::spec_file::read(&args.file, "an experiment")?;
            if let Some(name) = args.name {
                spec.name = name;
            }
            spec.values.extend(super::pipelines::values(&args.set)?);
            let e = client.create_experiment(&spec)?;
            println!(
                "created {} ({} trials of {}, {} at once)",
                e.name, e.spec.max_trials, e.spec.template, e.spec.parallel_trials
            );
            if !args.wait {
                return Ok(());
            }
            let mut seen: BTreeMap<u32, String> = BTreeMap::new();
            loop {
                let e = client.experiment(&e.name)?;
                for t in &e.trials {
                    let now = format!("{} {}", t.status.as_str(), t.message);
                    if seen.get(&t.number) != Some(&now) {
                        let objective = t.objective.map_or(String::new(), |v| format!(" {v}"));
                        println!(
                            "trial {:<4} {now}{objective}  {}",
                            t.number,
                            values_text(&t.values)
                        );
                        seen.insert(t.number, now);
                    }
                }
                if !e.status.is_active() {
                    println!("{} {} {}", e.name, e.status.as_str(), e.message);
                    if let Some(best) = e.best() {
                        println!(
                            "best: trial {} ({} = {}) {}",
                            best.number,
                            e.spec.objective.metric,
                            best.objective.unwrap_or(f64::NAN),
                            values_text(&best.values)
                        );
                    }
                    if e.status != ExperimentStatus::Succeeded {
                        bail!("the experiment {}", e.status.as_str());
                    }
                    return Ok(());
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        ExperimentCommand::List(args) => {
            let all = args.remote.client()?.experiments()?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&all)?);
                return Ok(());
            }
            for e in &all {
                let done =
                    e.trials.succeeded + e.trials.failed + e.trials.pruned + e.trials.stopped;
                let best = e.best.as_ref().map_or("-".to_owned(), |b| {
                    format!(
                        "{} = {} (trial {})",
                        e.objective.metric,
                        b.objective.unwrap_or(f64::NAN),
                        b.number
                    )
                });
                println!(
                    "{:<28} {:<10} {:>4}/{:<4} trials  {}",
                    e.name,
                    e.status.as_str(),
                    done,
                    e.max_trials,
                    best
                );
            }
            Ok(())
        }
        ExperimentCommand::Show(args) => {
            let e = args.remote.client()?.experiment(&args.name)?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&e)?);
            } else {
                println!("{} {} {}", e.name, e.status.as_str(), e.message);
                print_trials(&e);
            }
            Ok(())
        }
        ExperimentCommand::Extend(args) => {
            let e = args
                .remote
                .client()?
                .extend_experiment(&args.name, args.more)?;
            println!(
                "{} {} ({} trials)",
                e.name,
                e.status.as_str(),
                e.spec.max_trials
            );
            Ok(())
        }
        ExperimentCommand::Stop(args) => action(args, "stop"),
        ExperimentCommand::Pause(args) => action(args, "pause"),
        ExperimentCommand::Resume(args) => action(args, "resume"),
        ExperimentCommand::Retry(args) => action(args, "retry"),
    }
}

fn action(args: NameArgs, action: &str) -> anyhow::Result<()> {
    let e = args
        .remote
        .client()?
        .experiment_action(&args.name, action)?;
    println!("{} {}", e.name, e.status.as_str());
    Ok(())
}
