//! `paddlecloud notify …`: follow a job, a pipeline run, an experiment, a
//! serving instance or the whole account by email or webhook; list what
//! you follow; send a test; unsubscribe; read the log of deliveries.

use app::models::time::format_utc_seconds;
use app::models::{Channel, NotifyEvent, NotifySubject, SubscriptionSpec, WebhookFormat};
use clap::{Args, Subcommand};

use super::remote::RemoteArgs;
use super::serving::ListArgs;

/// The notify subcommands.
#[derive(Debug, Subcommand)]
pub enum NotifyCommand {
    /// Follow something, e.g. `paddlecloud notify add --job train-1 --on failed,succeeded`
    /// (by email) or `--webhook https://… [--slack]`.
    Add(AddArgs),
    /// List what you follow (a webhook's signing secret with it).
    List(ListArgs),
    /// Send a test through a subscription now.
    Test(IdArgs),
    /// Stop following (its log goes with it).
    Remove(IdArgs),
    /// The log of what was sent, newest first.
    Log(LogArgs),
}

/// `notify add`: exactly one of `--job`, `--pipeline`, `--experiment`,
/// `--serving`, `--account`.
#[derive(Debug, Clone, Args)]
#[command(group = clap::ArgGroup::new("subject").required(true).args(["job", "pipeline", "experiment", "serving", "account"]))]
pub struct AddArgs {
    /// A job.
    #[arg(long)]
    pub job: Option<String>,
    /// A pipeline run.
    #[arg(long)]
    pub pipeline: Option<String>,
    /// An experiment.
    #[arg(long)]
    pub experiment: Option<String>,
    /// A serving instance.
    #[arg(long)]
    pub serving: Option<String>,
    /// Everything of the account.
    #[arg(long)]
    pub account: bool,
    /// The events: failed, succeeded, over_quota (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "failed")]
    pub on: Vec<String>,
    /// POST to this URL instead of mailing you.
    #[arg(long)]
    pub webhook: Option<String>,
    /// Shape the webhook's body as Slack's incoming webhooks take it.
    #[arg(long, requires = "webhook")]
    pub slack: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// A subscription by id.
#[derive(Debug, Clone, Args)]
pub struct IdArgs {
    /// The subscription's id (`notify list`).
    pub id: i64,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `notify log`.
#[derive(Debug, Clone, Args)]
pub struct LogArgs {
    /// Only this status: pending, delivered, failed.
    #[arg(long)]
    pub status: Option<String>,
    /// Only through this subscription.
    #[arg(long)]
    pub subscription: Option<i64>,
    /// Only older than this delivery id (the next page).
    #[arg(long)]
    pub before: Option<i64>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

impl AddArgs {
    fn spec(&self) -> anyhow::Result<SubscriptionSpec> {
        let subject = match (&self.job, &self.pipeline, &self.experiment, &self.serving) {
            (Some(name), ..) => NotifySubject::Job { name: name.clone() },
            (_, Some(name), ..) => NotifySubject::Pipeline { name: name.clone() },
            (_, _, Some(name), _) => NotifySubject::Experiment { name: name.clone() },
            (.., Some(name)) => NotifySubject::Serving { name: name.clone() },
            _ => NotifySubject::Account,
        };
        let events = self
            .on
            .iter()
            .map(|e| {
                NotifyEvent::parse(e.trim())
                    .filter(|e| NotifyEvent::SUBSCRIBABLE.contains(e))
                    .ok_or_else(|| {
                        anyhow::anyhow!(
                            "--on: “{e}” is not an event: failed, succeeded, over_quota"
                        )
                    })
            })
            .collect::<anyhow::Result<_>>()?;
        let channel = match &self.webhook {
            None => Channel::Email,
            Some(url) => Channel::Webhook {
                url: url.clone(),
                format: if self.slack {
                    WebhookFormat::Slack
                } else {
                    WebhookFormat::Json
                },
            },
        };
        Ok(SubscriptionSpec {
            subject,
            events,
            channel,
        })
    }
}

/// Runs one notify subcommand.
pub fn run_notify(command: NotifyCommand) -> anyhow::Result<()> {
    match command {
        NotifyCommand::Add(args) => {
            let s = args.remote.client()?.subscribe(&args.spec()?)?;
            println!(
                "subscription {}: {} when it {}, by {}",
                s.id,
                s.spec.subject.label(),
                s.events_label(),
                s.spec.channel.label()
            );
            if let Some(secret) = &s.secret {
                println!("signing secret (Standard Webhooks): {secret}");
            }
        }
        NotifyCommand::List(args) => {
            let list = args.remote.client()?.subscriptions()?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&list)?);
                return Ok(());
            }
            for s in list {
                println!(
                    "{:>5}  {}  when it {}  by {}",
                    s.id,
                    s.spec.subject.label(),
                    s.events_label(),
                    s.spec.channel.label()
                );
            }
        }
        NotifyCommand::Test(args) => {
            let d = args.remote.client()?.test_subscription(args.id)?;
            println!(
                "test queued (delivery {}); see `paddlecloud notify log --subscription {}`",
                d.id, args.id
            );
        }
        NotifyCommand::Remove(args) => {
            args.remote.client()?.unsubscribe(args.id)?;
            println!("unsubscribed {}", args.id);
        }
        NotifyCommand::Log(args) => {
            let log = args.remote.client()?.deliveries(
                args.status.as_deref(),
                args.subscription,
                args.before,
            )?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&log)?);
                return Ok(());
            }
            for d in log {
                let why = d.last_error.clone().unwrap_or_default();
                println!(
                    "{:>6}  {}  {:<9} {} tr{}  {}  {}",
                    d.id,
                    format_utc_seconds(d.created_at),
                    d.status.as_str(),
                    d.attempts,
                    if d.attempts == 1 { "y" } else { "ies" },
                    d.notice.headline(),
                    why
                );
            }
        }
    }
    Ok(())
}
