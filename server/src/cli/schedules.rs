//! `paddlecloud schedule …`: save a schedule from a YAML or JSON file, list
//! them, show one with its runs, pause, resume, delete.

use std::path::PathBuf;

use app::models::time::format_utc_seconds;
use app::models::{Schedule, ScheduleSpec};
use clap::{Args, Subcommand};

use super::remote::RemoteArgs;
use super::serving::{ListArgs, NameArgs};

/// The schedule subcommands.
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Save a schedule from a file, e.g. `paddlecloud schedule create -f nightly.yaml`
    /// (`name`, `cron`, `timezone`, `overlap`, `catch_up`, `target`: a
    /// `template`, a `pipeline` or a `notebook` file).
    Create(CreateArgs),
    /// List the account's schedules.
    List(ListArgs),
    /// Print one schedule and its newest runs.
    Show(NameArgs),
    /// Pause a schedule: no tick runs until it is resumed.
    Pause(NameArgs),
    /// Resume a schedule (ticks missed while paused are not caught up).
    Resume(NameArgs),
    /// Delete a schedule (what its runs started stays).
    Delete(NameArgs),
}

/// `schedule create`.
#[derive(Debug, Clone, Args)]
pub struct CreateArgs {
    /// The schedule: YAML (`.yaml`, `.yml`) or JSON.
    #[arg(short = 'f', long = "file")]
    pub file: PathBuf,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

fn next_of(s: &Schedule) -> String {
    if s.paused {
        return "paused".into();
    }
    s.next_at
        .map(format_utc_seconds)
        .unwrap_or_else(|| "never".into())
}

/// Runs one schedule subcommand.
pub fn run_schedule(command: ScheduleCommand) -> anyhow::Result<()> {
    match command {
        ScheduleCommand::Create(args) => {
            let spec: ScheduleSpec = super::spec_file::read(&args.file, "a schedule")?;
            let s = args.remote.client()?.create_schedule(&spec)?;
            println!(
                "saved {}: {} at {} ({}); next {}",
                s.spec.name,
                s.spec.target.label(),
                s.spec.cron,
                s.spec.timezone,
                next_of(&s)
            );
        }
        ScheduleCommand::List(args) => {
            let list = args.remote.client()?.schedules()?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&list)?);
                return Ok(());
            }
            for s in list {
                println!(
                    "{}  {}  {} ({})  next {}",
                    s.spec.name,
                    s.spec.target.label(),
                    s.spec.cron,
                    s.spec.timezone,
                    next_of(&s)
                );
            }
        }
        ScheduleCommand::Show(args) => {
            let s = args.remote.client()?.schedule(&args.name)?;
            println!("{}: {}", s.spec.name, s.spec.target.label());
            println!("when:     {} ({})", s.spec.cron, s.spec.timezone);
            println!("next:     {}", next_of(&s));
            println!(
                "overlap:  {}  catch-up: {}",
                s.spec.overlap.as_str(),
                s.spec.catch_up.as_str()
            );
            for r in &s.runs {
                println!(
                    "  {}  {:<8} {} {} {}",
                    format_utc_seconds(r.tick),
                    r.outcome.as_str(),
                    r.started.clone().unwrap_or_default(),
                    r.status.clone().unwrap_or_default(),
                    r.message
                );
            }
        }
        ScheduleCommand::Pause(args) => {
            let s = args.remote.client()?.schedule_action(&args.name, "pause")?;
            println!("{} paused", s.spec.name);
        }
        ScheduleCommand::Resume(args) => {
            let s = args
                .remote
                .client()?
                .schedule_action(&args.name, "resume")?;
            println!("{} resumed; next {}", s.spec.name, next_of(&s));
        }
        ScheduleCommand::Delete(args) => {
            args.remote.client()?.delete_schedule(&args.name)?;
            println!("deleted {}", args.name);
        }
    }
    Ok(())
}
