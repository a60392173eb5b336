//! The commands that talk to a running console over its REST API:
//! `paddlecloud submit|jobs|logs|stop|delete`.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use app::models::time::format_age;
use app::models::{EnvVar, Job, JobSort, JobSpec, JobStatus, ReplicaResources};
use clap::Args;

use crate::api_client::{credentials_path, ApiClient};

/// Which console, as whom.
#[derive(Debug, Clone, Args)]
pub struct RemoteArgs {
    /// Credentials file (server, account, user, key), as downloaded from the Account page.
    /// Default: `~/.config/paddlecloud/credentials.json`.
    #[arg(long, env = "PADDLECLOUD_CREDENTIALS")]
    pub credentials: Option<PathBuf>,
    /// The console's URL, overriding the credentials file's.
    #[arg(long, env = "PADDLECLOUD_SERVER")]
    pub server: Option<String>,
    /// Act in this account: reads `credentials-ACCOUNT.json` beside the
    /// default credentials file (a key works in the account it was made in).
    #[arg(long, env = "PADDLECLOUD_ACCOUNT")]
    pub account: Option<String>,
}

impl RemoteArgs {
    pub(crate) fn client(&self) -> anyhow::Result<ApiClient> {
        let path = credentials_path(self.credentials.as_deref(), self.account.as_deref());
        Ok(ApiClient::from_credentials(&path, self.server.as_deref())?)
    }
}

/// `paddlecloud submit`.
#[derive(Debug, Clone, Args)]
pub struct SubmitArgs {
    /// The job's name (lower-case letters, digits and `-`; unique in the account).
    pub name: String,
    /// Trainers.
    #[arg(long, default_value_t = 1)]
    pub trainers: u32,
    /// Parameter servers (0 for a trainer-only job).
    #[arg(long, default_value_t = 0)]
    pub ps: u32,
    /// CPU per trainer (`500m`, `2`).
    #[arg(long, default_value = "1")]
    pub trainer_cpu: String,
    /// Memory per trainer (`512Mi`, `4Gi`).
    #[arg(long, default_value = "1Gi")]
    pub trainer_memory: String,
    /// GPUs per trainer.
    #[arg(long, default_value_t = 0)]
    pub trainer_gpu: u32,
    /// CPU per parameter server.
    #[arg(long, default_value = "1")]
    pub ps_cpu: String,
    /// Memory per parameter server.
    #[arg(long, default_value = "1Gi")]
    pub ps_memory: String,
    /// Container image (used on Kubernetes).
    #[arg(long, default_value = "")]
    pub image: String,
    /// Working directory, relative to the job's directory.
    #[arg(long, default_value = "")]
    pub workdir: String,
    /// Extra environment for every replica, `NAME=VALUE` (repeatable).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// One of the account's secrets for every replica: `VARIABLE=secret`
    /// for a variable, `file:name=secret` for a file in
    /// `$PADDLECLOUD_SECRETS_DIR` (repeatable). Its value never leaves the console.
    #[arg(long = "secret", value_name = "VARIABLE=SECRET")]
    pub secrets: Vec<String>,
    /// A dataset the job reads, `name` or `owner/name` (repeatable); the
    /// first is at `$PADDLE_DATASET_DIR`, each at `$PADDLE_DATASET_DIR_<NAME>`.
    #[arg(long = "dataset", value_name = "DATASET")]
    pub datasets: Vec<String>,
    /// A model version the job reads, `name`, `owner/name`, either with
    /// `:version` (none: the newest finished one; repeatable); the first is
    /// at `$PADDLE_MODEL_DIR`, each at `$PADDLE_MODEL_DIR_<NAME>`.
    #[arg(long = "model", value_name = "MODEL")]
    pub models: Vec<String>,
    /// The environment it runs in: `name`, `owner/name`, either with
    /// `:version` (e.g. `paddlecloud/paddle-cpu`).
    #[arg(long)]
    pub environment: Option<String>,
    /// `low`, `normal` or `high` (owners, and members an owner allowed):
    /// the order among the account's own waiting work.
    #[arg(long, default_value = "normal", value_parser = parse_priority)]
    pub priority: app::models::Priority,
    /// Its time limit once running, e.g. `90m`, `2h` (`s`, `m`, `h`, `d`):
    /// past it the job is stopped and fails.
    #[arg(long)]
    pub max_runtime: Option<String>,
    /// Wait until the job ends; exit non-zero unless it succeeded.
    #[arg(long)]
    pub wait: bool,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud jobs`.
#[derive(Debug, Clone, Args)]
pub struct JobsArgs {
    /// Only jobs in this status: pending, running, succeeded, failed, stopped.
    #[arg(long)]
    pub status: Option<String>,
    /// Only jobs whose name contains this.
    #[arg(long)]
    pub name: Option<String>,
    /// Submitted on or after this day (YYYY-MM-DD, UTC).
    #[arg(long)]
    pub from: Option<String>,
    /// Submitted on or before this day (YYYY-MM-DD, UTC).
    #[arg(long)]
    pub to: Option<String>,
    /// Order: newest, oldest, name, status.
    #[arg(long)]
    pub sort: Option<String>,
    /// Page (1-based).
    #[arg(long)]
    pub page: Option<u32>,
    /// Jobs per page (at most 200).
    #[arg(long)]
    pub per_page: Option<u32>,
    /// Print the page as JSON, as the API returns it.
    #[arg(long)]
    pub json: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud logs`.
#[derive(Debug, Clone, Args)]
pub struct LogsArgs {
    /// The job.
    pub job: String,
    /// The pod (`trainer-0`, `ps-1`); default: the job's first pod, as in the log console.
    pub pod: Option<String>,
    /// Keep printing new lines until the pod ends.
    #[arg(short, long)]
    pub follow: bool,
    /// Only the last N lines.
    #[arg(long)]
    pub tail: Option<usize>,
    /// Start each line with its RFC 3339 timestamp.
    #[arg(long)]
    pub timestamps: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud stop` and `paddlecloud delete`.
#[derive(Debug, Clone, Args)]
pub struct JobNameArgs {
    /// The job.
    pub job: String,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

fn env_var(pair: &str) -> anyhow::Result<EnvVar> {
    match pair.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok(EnvVar {
            name: name.to_owned(),
            value: value.to_owned(),
        }),
        _ => bail!("--env wants NAME=VALUE, got {pair:?}"),
    }
}

fn roles(job: &Job) -> String {
    let ps = if job.spec.num_ps > 0 {
        format!("{} parameter server(s), ", job.spec.num_ps)
    } else {
        String::new()
    };
    format!("{ps}{} trainer(s)", job.spec.num_trainers)
}

/// Submits a job; with `--wait`, waits for its end.
pub fn submit(args: SubmitArgs) -> anyhow::Result<()> {
    let client = args.remote.client()?;
    let spec = JobSpec {
        priority: args.priority,
        max_runtime: args.max_runtime,
        secrets: app::models::parse_secret_uses(&args.secrets.join("\n"))
            .map_err(|e| anyhow::anyhow!("--secret: {e}"))?,
        notebook: None,
        template: None,
        pipeline: None,
        experiment: None,
        notebook_run: None,
        scoring: None,
        environment: args.environment,
        environment_use: None,
        name: args.name,
        image: args.image,
        command: args.command,
        args: Vec::new(),
        working_dir: args.workdir,
        env: args
            .env
            .iter()
            .map(|pair| env_var(pair))
            .collect::<anyhow::Result<_>>()?,
        num_ps: args.ps,
        num_trainers: args.trainers,
        ps: ReplicaResources {
            cpu: args.ps_cpu,
            memory: args.ps_memory,
            gpu: 0,
        },
        trainer: ReplicaResources {
            cpu: args.trainer_cpu,
            memory: args.trainer_memory,
            gpu: args.trainer_gpu,
        },
        datasets: args.datasets,
        models: args.models,
    };
    let job = client.submit(&spec)?;
    println!(
        "submitted {}: {} ({}) on {}",
        job.name,
        roles(&job),
        job.status.as_str(),
        job.cluster
    );
    if !args.wait {
        return Ok(());
    }
    wait_for_job(&client, &job.name)
}

/// Waits for job `name` to end, saying why it waits as that changes;
/// an error unless it succeeded.
pub fn wait_for_job(client: &crate::api_client::ApiClient, name: &str) -> anyhow::Result<()> {
    let mut said = String::new();
    let job = loop {
        let job = client.job(name)?;
        if !job.status.is_active() {
            break job;
        }
        // Why it waits (the queue, the scheduler), each time that changes.
        if job.status == JobStatus::Pending && !job.message.is_empty() && job.message != said {
            eprintln!("{}: {}", job.name, job.message);
            said = job.message.clone();
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    println!("{} {}", job.name, job.status.as_str());
    if job.status != JobStatus::Succeeded {
        bail!(
            "job {} ended {}{}",
            job.name,
            job.status.as_str(),
            if job.message.is_empty() {
                String::new()
            } else {
                format!(": {}", job.message)
            }
        );
    }
    Ok(())
}

/// The job table as text.
pub fn render_jobs(jobs: &[Job], now: i64) -> String {
    let header = [
        "NAME",
        "STATUS",
        "PS",
        "TRAINERS",
        "SUCCEEDED",
        "FAILED",
        "AGE",
        "WHERE",
    ];
    let rows: Vec<[String; 8]> = jobs
        .iter()
        .map(|j| {
            [
                j.name.clone(),
                j.status.as_str().to_owned(),
                format!("{}/{}", j.ps.ready, j.ps.total),
                format!("{}/{}", j.trainers.ready, j.trainers.total),
                j.succeeded().to_string(),
                j.failed().to_string(),
                format_age(now - j.created_at),
                j.cluster.clone(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_owned() + "\n"
    };
    let mut out = line(header.to_vec());
    for row in &rows {
        out += &line(row.iter().map(String::as_str).collect());
    }
    // Why pending jobs wait, under the table.
    for j in jobs {
        if j.status == JobStatus::Pending && !j.message.is_empty() {
            out += &format!("{} is pending: {}\n", j.name, j.message);
        }
    }
    out
}

/// Lists jobs.
pub fn jobs(args: JobsArgs) -> anyhow::Result<()> {
    let client = args.remote.client()?;
    if let Some(sort) = &args.sort {
        // The API would refuse it too; saying the choices here is kinder.
        if JobSort::parse(sort).as_str() != sort {
            bail!("--sort is one of newest, oldest, name, status");
        }
    }
    let filters: Vec<(&str, String)> = [
        ("status", args.status),
        ("name", args.name),
        ("from", args.from),
        ("to", args.to),
        ("sort", args.sort),
        ("page", args.page.map(|p| p.to_string())),
        ("per_page", args.per_page.map(|p| p.to_string())),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .collect();
    let page = client.jobs(&filters)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&page)?);
        return Ok(());
    }
    if page.jobs.is_empty() {
        println!("No jobs match.");
        return Ok(());
    }
    print!("{}", render_jobs(&page.jobs, page.now));
    if page.pages() > 1 {
        eprintln!(
            "page {} of {} ({} jobs); --page N for more",
            page.page,
            page.pages(),
            page.total
        );
    }
    Ok(())
}

/// Prints a pod's log; `-f` follows it.
pub fn logs(args: LogsArgs) -> anyhow::Result<()> {
    let client = args.remote.client()?;
    let pod = match args.pod {
        Some(pod) => pod,
        None => {
            let pods = client.pods(&args.job)?;
            pods.first()
                .map(|p| p.name.clone())
                .context("the job has no pods")?
        }
    };
    let mut reader = client.log(&args.job, &pod, args.tail, args.follow, args.timestamps)?;
    let mut stdout = std::io::stdout().lock();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = reader.read(&mut buf).context("reading the log")?;
        if n == 0 {
            break;
        }
        match stdout.write_all(&buf[..n]).and_then(|()| stdout.flush()) {
            Ok(()) => {}
            // `paddlecloud logs job | head` closes the pipe early: not an error.
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => break,
            Err(err) => return Err(err.into()),
        }
    }
    Ok(())
}

/// A priority as `--priority` names it.
fn parse_priority(raw: &str) -> Result<app::models::Priority, String> {
    app::models::Priority::parse(raw).map_err(|e| e.to_string())
}

/// `paddlecloud queue`.
#[derive(Debug, Clone, Args)]
pub struct QueueArgs {
    /// Print the JSON the API returns instead of text.
    #[arg(long)]
    pub json: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// What waits for room, in order, what each waits for and behind whom.
pub fn queue(args: QueueArgs) -> anyhow::Result<()> {
    let q = args.remote.client()?.queue()?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&q)?);
        return Ok(());
    }
    print!("{}", render_queue(&q));
    Ok(())
}

/// The queue as text: one line per waiting request, then the shares.
pub fn render_queue(q: &app::models::QueueView) -> String {
    let mut out = format!("{}: ", q.cluster);
    if q.waiting.is_empty() {
        out += "nothing waits for room\n";
    } else {
        out += &format!("{} waiting\n", q.waiting.len());
    }
    for w in &q.waiting {
        let behind = if w.held_by.is_empty() {
            String::new()
        } else {
            let who: Vec<String> = w.held_by.iter().map(|h| h.describe()).collect();
            format!(" (held by {})", who.join(", "))
        };
        let starts = w
            .starts_by
            .map(|at| format!("; starts by {}", app::models::time::format_utc(at)))
            .unwrap_or_default();
        out += &format!(
            "  {:>3}. {} [{}] {}{}{}\n",
            w.position,
            w.work.describe(),
            w.priority.as_str(),
            w.reason,
            behind,
            starts
        );
    }
    let preempted: Vec<String> = q
        .running
        .iter()
        .filter(|h| h.preempted)
        .map(|h| h.work.describe())
        .collect();
    if !preempted.is_empty() {
        out += &format!(
            "preempted, giving their room back: {}\n",
            preempted.join(", ")
        );
    }
    if !q.shares.is_empty() {
        let shares: Vec<String> = q
            .shares
            .iter()
            .map(|s| format!("{} {:.0}%", s.account, s.share * 100.0))
            .collect();
        out += &format!("shares: {}\n", shares.join(", "));
    }
    out
}

/// `paddlecloud cluster`.
#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// Print the JSON the API returns instead of text.
    #[arg(long)]
    pub json: bool,
    /// List the running jobs of every account whose GPUs have been idle
    /// (under 5% utilisation) instead: site admins.
    #[arg(long)]
    pub idle_gpus: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// Where jobs run: its room, what replicas hold, its GPUs and its queue.
pub fn cluster(args: ClusterArgs) -> anyhow::Result<()> {
    if args.idle_gpus {
        let jobs = args.remote.client()?.idle_gpu_jobs()?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&jobs)?);
        } else if jobs.is_empty() {
            println!("no job holds idle GPUs");
        } else {
            for j in jobs {
                println!(
                    "{}/{}  {} GPU{}  idle since {}  ({})",
                    j.account,
                    j.job,
                    j.gpus,
                    if j.gpus == 1 { "" } else { "s" },
                    app::models::time::format_utc_seconds(j.since),
                    j.submitted_by
                );
            }
        }
        return Ok(());
    }
    let c = args.remote.client()?.cluster()?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&c)?);
        return Ok(());
    }
    print!("{}", render_cluster(&c));
    Ok(())
}

/// The cluster's room as text.
pub fn render_cluster(c: &app::models::ClusterCapacity) -> String {
    use app::models::quantity::{format_cpu, format_memory};
    let mut out = format!("{}\n", c.cluster);
    if let (Some(total), Some(used)) = (c.total, c.used) {
        out += &format!(
            "  CPU     {} of {} held\n  memory  {} of {} held\n  GPU     {} of {} held\n",
            format_cpu(used.cpu_millis),
            format_cpu(total.cpu_millis),
            format_memory(used.memory_bytes),
            format_memory(total.memory_bytes),
            used.gpu,
            total.gpu
        );
    }
    for g in &c.gpus {
        out += &format!(
            "  gpu {}  {}{}\n",
            g.index,
            if g.simulated {
                "simulated"
            } else {
                g.name.as_str()
            },
            if g.in_use { "  (held)" } else { "" }
        );
    }
    out += &format!(
        "  waiting: {}\n  {}\n  {}\n",
        c.queued,
        c.limits.describe(),
        c.source
    );
    out
}

/// `paddlecloud whoami`.
#[derive(Debug, Clone, Args)]
pub struct WhoamiArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Which console, as whom.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// Who the credentials act as, in which account and role, and the user's
/// other accounts with how to act in them.
pub fn whoami(args: WhoamiArgs) -> anyhow::Result<()> {
    let client = args.remote.client()?;
    let me = client.me()?;
    let accounts = client.my_accounts()?;
    if args.json {
        let out = serde_json::json!({"me": me, "accounts": accounts});
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    print!("{}", render_whoami(&me, &accounts));
    Ok(())
}

/// `whoami` as text.
pub fn render_whoami(me: &app::models::Me, accounts: &[app::models::Membership]) -> String {
    let mut out = format!(
        "{} ({}) in account {}\n",
        me.email,
        me.role.as_str(),
        me.account.name
    );
    let others: Vec<_> = accounts
        .iter()
        .filter(|m| m.account != me.account.name)
        .collect();
    if !others.is_empty() {
        out += "also a member of:\n";
        for m in &others {
            out += &format!("  {} ({})\n", m.account, m.role.as_str());
        }
        out += "to act there, save a key made in that account as \
                ~/.config/paddlecloud/credentials-ACCOUNT.json and pass --account ACCOUNT\n";
    }
    out
}

/// Stops a job.
pub fn stop(args: JobNameArgs) -> anyhow::Result<()> {
    let job = args.remote.client()?.stop(&args.job)?;
    println!("{} {}", job.name, job.status.as_str());
    Ok(())
}

/// Prints a stack dump of each running replica of a job (or why there is
/// none), as the log console shows it.
pub fn dump(args: JobNameArgs) -> anyhow::Result<()> {
    let dumps = args.remote.client()?.stack_dump(&args.job)?;
    for d in dumps {
        println!("== {} ==", d.pod);
        match d.error {
            Some(why) => println!("({why})"),
            None => print!("{}", d.text),
        }
    }
    Ok(())
}

/// Deletes a job.
pub fn delete(args: JobNameArgs) -> anyhow::Result<()> {
    args.remote.client()?.delete(&args.job)?;
    println!("deleted {}", args.job);
    Ok(())
}
