//! `paddlecloud serving …`: launch, list, scale, stop and delete serving
//! instances of a console, and release versions by degrees (canary,
//! shadow, promote, roll back), with the credentials file the other remote
//! commands use.

use std::time::{Duration, Instant};

use anyhow::bail;
use app::models::quantity::{format_cpu, format_memory};
use app::models::{
    merge_traffic, Autoscale, Canary, Release, ReplicaResources, Scale, ServingInstance,
    ServingSpec, ServingStatus, Shadow,
};
use clap::{Args, Subcommand};

use super::remote::RemoteArgs;

/// The serving subcommands.
#[derive(Debug, Subcommand)]
pub enum ServingCommand {
    /// Serve a model version over HTTP, e.g.
    /// `paddlecloud serving launch mnist-api --model mnist --replicas 2 --wait`.
    Launch(Box<LaunchArgs>),
    /// List the account's serving instances with their traffic.
    List(ListArgs),
    /// Change the number of replicas (or the autoscaler's bounds).
    Scale(ScaleArgs),
    /// Stop every replica (the record and its traffic stay).
    Stop(NameArgs),
    /// Delete an instance's record (stopping it first).
    Delete(NameArgs),
    /// Serve another version beside the main one for a share of the calls,
    /// e.g. `paddlecloud serving canary mnist-api --version 4 --percent 10`.
    Canary(TrackArgs),
    /// Send another version a copy of a share of the calls; its answers are
    /// recorded, never returned (`paddlecloud serving versions` shows them).
    Shadow(TrackArgs),
    /// Make the canary's version the main one (the replicas roll to it one
    /// by one; an alias the instance follows moves to it).
    Promote(NameArgs),
    /// End the canary: every call goes to the main version again.
    Rollback(NameArgs),
    /// End the shadow.
    EndShadow(NameArgs),
    /// The instance's tracks with the last hour's calls by version, and the
    /// newest calls mirrored to its shadow.
    Versions(VersionsArgs),
}

/// `paddlecloud serving canary|shadow`.
#[derive(Debug, Clone, Args)]
pub struct TrackArgs {
    /// The instance.
    pub name: String,
    /// The version of its model to serve.
    #[arg(long)]
    pub version: u32,
    /// Percent of the calls (a canary: 1-99; a shadow: 1-100, default 100).
    #[arg(long)]
    pub percent: Option<u32>,
    /// Its replicas.
    #[arg(long, default_value_t = 1)]
    pub replicas: u32,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud serving versions`.
#[derive(Debug, Clone, Args)]
pub struct VersionsArgs {
    /// The instance.
    pub name: String,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud serving launch`.
#[derive(Debug, Clone, Args)]
pub struct LaunchArgs {
    /// The instance's name.
    pub name: String,
    /// The model: `name` or `owner/name`.
    #[arg(long)]
    pub model: String,
    /// Its version (default: the newest ready one).
    #[arg(long)]
    pub version: Option<u32>,
    /// A `.tar.gz` inside the version to serve.
    #[arg(long, default_value = "")]
    pub file: String,
    /// One of the account's secrets for every replica: `VARIABLE=secret`
    /// or `file:name=secret` (repeatable).
    #[arg(long = "secret", value_name = "VARIABLE=SECRET")]
    pub secrets: Vec<String>,
    /// A Python serving script (`load(model_dir)`, `predict(state, inputs)`).
    #[arg(long)]
    pub script: Option<std::path::PathBuf>,
    /// Replicas.
    #[arg(long, default_value_t = 1)]
    pub replicas: u32,
    /// CPU per replica.
    #[arg(long, default_value = "1")]
    pub cpu: String,
    /// Memory per replica.
    #[arg(long, default_value = "1Gi")]
    pub memory: String,
    /// GPUs per replica.
    #[arg(long, default_value_t = 0)]
    pub gpu: u32,
    /// Autoscale between MIN and MAX replicas at a CPU target: `MIN:MAX:PERCENT`.
    #[arg(long)]
    pub autoscale: Option<String>,
    /// Container image (Kubernetes).
    #[arg(long, default_value = "")]
    pub image: String,
    /// The environment its replicas run in: `name`, `owner/name`, either
    /// with `:version` (it must have paddlepaddle for the default server).
    #[arg(long)]
    pub environment: Option<String>,
    /// Wait until it is ready (or failed).
    #[arg(long)]
    pub wait: bool,
    /// Your own server program instead of the default predict server.
    #[arg(last = true)]
    pub command: Vec<String>,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud serving list` (and `template list`, `env list`).
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud serving scale`.
#[derive(Debug, Clone, Args)]
pub struct ScaleArgs {
    /// The instance.
    pub name: String,
    /// Replicas to run.
    #[arg(long, conflicts_with = "autoscale")]
    pub replicas: Option<u32>,
    /// Autoscale: `MIN:MAX:PERCENT`.
    #[arg(long)]
    pub autoscale: Option<String>,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud serving stop|delete`.
#[derive(Debug, Clone, Args)]
pub struct NameArgs {
    /// The instance.
    pub name: String,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

fn autoscale(raw: &str) -> anyhow::Result<Autoscale> {
    let parts: Vec<&str> = raw.split(':').collect();
    let [min, max, percent] = parts[..] else {
        bail!("--autoscale is MIN:MAX:PERCENT, e.g. 1:4:70");
    };
    let n = |s: &str| -> anyhow::Result<u32> {
        s.trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("--autoscale is MIN:MAX:PERCENT, e.g. 1:4:70"))
    };
    Ok(Autoscale {
        min: n(min)?,
        max: n(max)?,
        cpu_percent: n(percent)?,
    })
}

fn line(s: &ServingInstance) -> String {
    let per = s.spec.per_replica().unwrap_or_default();
    let traffic = s.recent.map_or("–".to_owned(), |r| {
        format!(
            "{:.1}/s p50 {:.1} ms p99 {:.1} ms",
            r.qps(),
            r.p50_ms,
            r.p99_ms
        )
    });
    format!(
        "{:<24} {:<9} {:>3}/{:<3} {:<24} {:<18} {}",
        s.name,
        s.status.as_str(),
        s.ready,
        s.spec.replicas,
        format!("{} v{}", s.model, s.version),
        format!(
            "{} CPU {}",
            format_cpu(per.cpu_millis),
            format_memory(per.memory_bytes)
        ),
        traffic
    )
}

/// Runs one serving subcommand.
pub fn run(command: ServingCommand) -> anyhow::Result<()> {
    match command {
        ServingCommand::Launch(args) => {
            let client = args.remote.client()?;
            let script = match &args.script {
                Some(path) => std::fs::read_to_string(path)
                    .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?,
                None => String::new(),
            };
            let spec = ServingSpec {
                name: args.name.clone(),
                model: args.model,
                version: args.version,
                file: args.file,
                script,
                command: args.command,
                image: args.image,
                env: vec![],
                replicas: args.replicas,
                resources: ReplicaResources {
                    cpu: args.cpu,
                    memory: args.memory,
                    gpu: args.gpu,
                },
                autoscale: args.autoscale.as_deref().map(autoscale).transpose()?,
                environment: args.environment,
                environment_use: None,
                canary: None,
                shadow: None,
                secrets: app::models::parse_secret_uses(&args.secrets.join("\n"))
                    .map_err(|e| anyhow::anyhow!("--secret: {e}"))?,
            };
            let mut instance = client.launch_serving(&spec)?;
            println!(
                "{} {} at {}{}",
                instance.name,
                instance.status.as_str(),
                client.server(),
                instance.endpoint
            );
            if args.wait {
                let start = Instant::now();
                // Degraded while the first replicas answer and the rest still
                // start: only every replica answering (or a failure) ends it.
                while matches!(
                    instance.status,
                    ServingStatus::Pending | ServingStatus::Degraded
                ) {
                    if start.elapsed() > Duration::from_secs(600) {
                        bail!(
                            "{} is still {} after 10 minutes",
                            instance.name,
                            instance.status.as_str()
                        );
                    }
                    std::thread::sleep(Duration::from_millis(500));
                    instance = client.serving(&args.name)?;
                }
                println!("{} {}", instance.name, instance.status.as_str());
                if instance.status == ServingStatus::Failed {
                    bail!("{}", instance.message);
                }
            }
            Ok(())
        }
        ServingCommand::List(args) => {
            let list = args.remote.client()?.serving_list()?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else if list.instances.is_empty() {
                println!("No serving instances.");
            } else {
                for s in &list.instances {
                    println!("{}", line(s));
                }
            }
            Ok(())
        }
        ServingCommand::Scale(args) => {
            let scale = Scale {
                replicas: args.replicas,
                autoscale: args.autoscale.as_deref().map(autoscale).transpose()?,
            };
            let s = args.remote.client()?.scale_serving(&args.name, &scale)?;
            println!("{}", line(&s));
            Ok(())
        }
        ServingCommand::Stop(args) => {
            let s = args.remote.client()?.stop_serving(&args.name)?;
            println!("{} {}", s.name, s.status.as_str());
            Ok(())
        }
        ServingCommand::Delete(args) => {
            args.remote.client()?.delete_serving(&args.name)?;
            println!("deleted {}", args.name);
            Ok(())
        }
        ServingCommand::Canary(args) => {
            let release = Release::Canary(Canary {
                version: args.version,
                percent: args.percent.unwrap_or(10),
                replicas: args.replicas,
            });
            released(&args.remote, &args.name, &release)
        }
        ServingCommand::Shadow(args) => {
            let release = Release::Shadow(Shadow {
                version: args.version,
                percent: args.percent.unwrap_or(100),
                replicas: args.replicas,
            });
            released(&args.remote, &args.name, &release)
        }
        ServingCommand::Promote(args) => released(&args.remote, &args.name, &Release::Promote),
        ServingCommand::Rollback(args) => released(&args.remote, &args.name, &Release::Rollback),
        ServingCommand::EndShadow(args) => released(&args.remote, &args.name, &Release::EndShadow),
        ServingCommand::Versions(args) => versions(&args),
    }
}

/// Carries out `release` and prints the instance's tracks.
fn released(remote: &RemoteArgs, name: &str, release: &Release) -> anyhow::Result<()> {
    let s = remote.client()?.release_serving(name, release)?;
    println!("{}: {}", s.name, release.describe());
    print_tracks(&s);
    Ok(())
}

fn print_tracks(s: &ServingInstance) {
    for t in &s.tracks {
        let share = t.share();
        println!(
            "  {:<7} v{:<5} {:<13} {} replica(s)",
            t.track.as_str(),
            t.version,
            share,
            t.replicas
        );
    }
    if !s.message.is_empty() {
        println!("  {}", s.message);
    }
}

/// `paddlecloud serving versions NAME`.
fn versions(args: &VersionsArgs) -> anyhow::Result<()> {
    let client = args.remote.client()?;
    let traffic = client.serving_traffic(&args.name)?;
    let calls = client.shadow_calls(&args.name, 20)?;
    if args.json {
        let out = serde_json::json!({ "tracks": traffic.instance.tracks,
                                      "versions": traffic.versions, "shadow_calls": calls });
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let s = &traffic.instance;
    let follows = s
        .spec
        .alias()
        .map(|a| format!(" (follows @{a})"))
        .unwrap_or_default();
    println!("{} · {}{follows} · {}", s.name, s.model, s.status.as_str());
    print_tracks(s);
    println!("calls over the last hour:");
    for v in &traffic.versions {
        let Some(p) = merge_traffic(&v.points, 1).first().copied() else {
            continue;
        };
        println!(
            "  v{:<5} {:<7} {:>8} calls {:>6.1}% errors p50 {:.1} ms p99 {:.1} ms",
            v.version,
            if v.shadow { "shadow" } else { "" },
            p.requests,
            p.error_percent(),
            p.p50_ms,
            p.p99_ms
        );
    }
    if !calls.is_empty() {
        let agree = calls.iter().filter(|c| c.agrees).count();
        println!(
            "shadow: {agree} of the last {} answers agree with the main version's",
            calls.len()
        );
        for c in calls.iter().take(5) {
            println!(
                "  v{} {} {:.1} ms → {} | main {} {:.1} ms → {}",
                c.version,
                c.shadow_status,
                c.shadow_ms,
                c.shadow,
                c.primary_status,
                c.primary_ms,
                c.primary
            );
        }
    }
    Ok(())
}
