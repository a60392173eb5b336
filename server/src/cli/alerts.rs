//! `paddlecloud alert …`: metric alert rules on PaddleBoard tags, and the
//! alerts they raised.

use app::models::time::format_utc_seconds;
use app::models::{AlertCondition, AlertRuleSpec};
use clap::{Args, Subcommand};

use super::remote::RemoteArgs;
use super::serving::{ListArgs, NameArgs};

/// The alert subcommands.
#[derive(Debug, Subcommand)]
pub enum AlertCommand {
    /// Save a rule, e.g. `paddlecloud alert add diverged --tag loss --above 10`
    /// (or `--below X`, `--not-finite`, `--silent-minutes N`; `--job NAME` for one job).
    Add(AddArgs),
    /// List the account's rules.
    Rules(ListArgs),
    /// Delete a rule and its alerts.
    Delete(NameArgs),
    /// List the newest alerts, open first.
    List(ListAlertsArgs),
}

/// `alert add`: exactly one condition.
#[derive(Debug, Clone, Args)]
#[command(group = clap::ArgGroup::new("condition").required(true).args(["above", "below", "not_finite", "silent_minutes"]))]
pub struct AddArgs {
    /// The rule's name.
    pub name: String,
    /// The PaddleBoard tag it watches.
    #[arg(long)]
    pub tag: String,
    /// Only this job (default: every running job of the account).
    #[arg(long)]
    pub job: Option<String>,
    /// Fires when the newest value is above this.
    #[arg(long, allow_negative_numbers = true)]
    pub above: Option<f64>,
    /// Fires when the newest value is below this.
    #[arg(long, allow_negative_numbers = true)]
    pub below: Option<f64>,
    /// Fires when a value is NaN or infinite.
    #[arg(long)]
    pub not_finite: bool,
    /// Fires when a running job wrote no point for this many minutes.
    #[arg(long)]
    pub silent_minutes: Option<u32>,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `alert list`.
#[derive(Debug, Clone, Args)]
pub struct ListAlertsArgs {
    /// Only this job's.
    #[arg(long)]
    pub job: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

impl AddArgs {
    fn spec(&self) -> AlertRuleSpec {
        let condition = match (self.above, self.below, self.silent_minutes) {
            (Some(threshold), ..) => AlertCondition::Above { threshold },
            (_, Some(threshold), _) => AlertCondition::Below { threshold },
            (.., Some(minutes)) => AlertCondition::Silent { minutes },
            _ => AlertCondition::NotFinite,
        };
        AlertRuleSpec {
            name: self.name.clone(),
            tag: self.tag.clone(),
            job: self.job.clone(),
            condition,
        }
    }
}

/// Runs one alert subcommand.
pub fn run_alert(command: AlertCommand) -> anyhow::Result<()> {
    match command {
        AlertCommand::Add(args) => {
            let r = args.remote.client()?.create_alert_rule(&args.spec())?;
            println!("saved {}: {}", r.spec.name, r.spec.summary());
        }
        AlertCommand::Rules(args) => {
            let rules = args.remote.client()?.alert_rules()?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&rules)?);
                return Ok(());
            }
            for r in rules {
                println!("{}  {}  open {}", r.spec.name, r.spec.summary(), r.open);
            }
        }
        AlertCommand::Delete(args) => {
            args.remote.client()?.delete_alert_rule(&args.name)?;
            println!("deleted {}", args.name);
        }
        AlertCommand::List(args) => {
            let alerts = args.remote.client()?.alerts(args.job.as_deref())?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&alerts)?);
                return Ok(());
            }
            for a in alerts {
                let state = if a.is_open() { "open" } else { "resolved" };
                println!(
                    "{}  {:<8} {}  {}  ({})",
                    format_utc_seconds(a.raised_at),
                    state,
                    a.job,
                    a.message,
                    a.rule
                );
            }
        }
    }
    Ok(())
}
