//! The `paddlecloud` command line: `serve`, `admin …`, and the commands that
//! talk to a running console (`submit`, `jobs`, `logs`, `stop`, `delete`).
//!
//! This file holds the command tree and its dispatch; `serve` is in
//! `serve.rs` (running the console) and `serve_args.rs` (its flags, made into
//! a [`Config`](crate::console::Config)), `admin …` in `admin.rs`, and each
//! client command in the file named for it.

mod admin;
mod alerts;
mod aliases;
mod catalog;
mod describe;
mod experiments;
mod files;
mod lineage;
mod local_run;
mod notebook_runs;
mod notebooks;
mod notifications;
mod pipelines;
mod remote;
mod schedules;
mod scoring;
mod secrets;
mod serve;
mod serve_args;
mod serving;
mod sign_in_args;
mod spec_file;
mod spool;
mod startup_pages;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use self::admin::{AdminCommand, CreateAccountArgs, CreateKeyArgs, GrantArgs};
/// How `paddlecloud pipeline run -f FILE` reads its file; public for the
/// fuzz target `pipeline_spec` (`fuzz/src/lib.rs`).
pub use self::pipelines::parse as parse_pipeline_file;
pub use self::remote::{ClusterArgs, JobNameArgs, JobsArgs, LogsArgs, RemoteArgs, SubmitArgs};
pub use self::serve::site_options;
pub use self::serve_args::{inherited_env, ServeArgs};
use crate::storage::db;

/// PaddleCloud Console: run, watch and serve PaddlePaddle work on a cluster.
#[derive(Debug, Parser)]
#[command(name = "paddlecloud", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the web console.
    Serve(Box<ServeArgs>),
    /// Administrative tasks for scripted set-up.
    Admin {
        /// The task.
        #[command(subcommand)]
        command: AdminCommand,
    },
    /// Submit a training job to a console, e.g.
    /// `paddlecloud submit mnist --ps 1 --trainers 2 -- python train.py`.
    Submit(SubmitArgs),
    /// List your account's jobs.
    Jobs(JobsArgs),
    /// Print a pod's log (`-f` to follow it).
    Logs(LogsArgs),
    /// What a job is, did and made: its facts, replicas, the history of
    /// its status and theirs with the reasons, the model versions it
    /// registered.
    Describe(describe::DescribeArgs),
    /// What a dataset, job, model version or serving instance came from
    /// and what came of it, e.g. `paddlecloud lineage model:acme/mnist:3`.
    Lineage(lineage::LineageArgs),
    /// Stop a job (its record and logs stay).
    Stop(JobNameArgs),
    /// A stack dump of every running replica's Python threads (py-spy),
    /// also written into their logs: what a stalled job is doing.
    Dump(JobNameArgs),
    /// Delete a job and its logs.
    Delete(JobNameArgs),
    /// Where jobs run: its CPUs, memory and GPUs, what is held, what waits.
    Cluster(ClusterArgs),
    /// What waits for room, in the order it will be taken, what each waits
    /// for and whose running work holds it.
    Queue(remote::QueueArgs),
    /// Who your credentials act as, in which account and role, and your
    /// other accounts (`--account NAME` acts in one of them).
    Whoami(remote::WhoamiArgs),
    /// Upload files and folders into a dataset, or as a new model version, e.g.
    /// `paddlecloud upload dataset mnist ./mnist-data`.
    Upload(files::UploadArgs),
    /// A model's aliases (`owner/model@production`): `list`, `set`,
    /// `delete`.
    Alias {
        /// The task.
        #[command(subcommand)]
        command: aliases::AliasCommand,
    },
    /// Serving instances: `launch`, `list`, `scale`, `stop`, `delete`.
    Serving {
        /// The task.
        #[command(subcommand)]
        command: serving::ServingCommand,
    },
    /// Experiment templates: `list`, `show`, `save`, `run`.
    Template {
        /// The task.
        #[command(subcommand)]
        command: catalog::TemplateCommand,
    },
    /// Environment profiles: `list`, `show`, `save`.
    Env {
        /// The task.
        #[command(subcommand)]
        command: catalog::EnvCommand,
    },
    /// Run a program here as a local run, tracked like a cluster job (its
    /// output, parameters, where it ran and how it ended), e.g.
    /// `paddlecloud run --param lr=0.1 -- python train.py --lr 0.1`.
    Run(local_run::LocalRunArgs),
    /// Send the reports of local runs the console could not be reached for.
    Sync(RemoteArgs),
    /// Notebooks and the versions of their files: `list`, `start`, `stop`,
    /// `history`, `show`, `diff`, `restore`.
    Notebook {
        /// The task.
        #[command(subcommand)]
        command: notebooks::NotebookCommand,
    },
    /// Pipeline runs: `run -f FILE`, `list`, `show`, `stop`, `retry`.
    Pipeline {
        /// The task.
        #[command(subcommand)]
        command: pipelines::PipelineCommand,
    },
    /// Metric alerts: `add NAME --tag T --above X|--below X|--not-finite|--silent-minutes N`,
    /// `rules`, `delete`, `list`.
    Alert {
        /// The task.
        #[command(subcommand)]
        command: alerts::AlertCommand,
    },
    /// The account's secrets: `set NAME` (value from stdin or
    /// `--from-file`), `list`, `delete`.
    Secret {
        /// The task.
        #[command(subcommand)]
        command: secrets::SecretCommand,
    },
    /// Notifications: `add`, `list`, `test`, `remove`, `log`.
    Notify {
        /// The task.
        #[command(subcommand)]
        command: notifications::NotifyCommand,
    },
    /// Schedules: `create -f FILE`, `list`, `show`, `pause`, `resume`,
    /// `delete`.
    Schedule {
        /// The task.
        #[command(subcommand)]
        command: schedules::ScheduleCommand,
    },
    /// Experiments: `create -f FILE`, `list`, `show`, `stop`, `pause`,
    /// `resume`, `extend`, `retry`.
    Experiment {
        /// The task.
        #[command(subcommand)]
        command: experiments::ExperimentCommand,
    },
    /// Batch scoring: `start MODEL DATASET:N OUTPUT`, `show JOB`, `retry JOB`.
    Score {
        /// The task.
        #[command(subcommand)]
        command: scoring::ScoreCommand,
    },
    /// Download a dataset or a model version (or one file or folder of it),
    /// resuming cut-off files, e.g. `paddlecloud download model vision/resnet --version 2`.
    Download(files::DownloadArgs),
}

/// Where the console keeps its state.
#[derive(Debug, Clone, Args)]
pub struct StorageArgs {
    /// Directory for the embedded database, job files and logs.
    #[arg(long, env = "PADDLECLOUD_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
    /// Database URL: `sqlite://PATH` or `postgres://USER:PASS@HOST/DB`.
    /// Default: a SQLite file `paddlecloud.db` in the data directory.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: Option<String>,
}

impl StorageArgs {
    /// The database URL to use.
    pub fn database_url(&self) -> String {
        self.database_url
            .clone()
            .unwrap_or_else(|| db::default_url(&self.data_dir))
    }
}

/// Runs the parsed command line.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => serve::serve(*args).await,
        Command::Admin { command } => admin::run(command).await,
        // Blocking HTTP (ureq): off the async workers.
        Command::Submit(args) => blocking(move || remote::submit(args)).await,
        Command::Jobs(args) => blocking(move || remote::jobs(args)).await,
        Command::Logs(args) => blocking(move || remote::logs(args)).await,
        Command::Describe(args) => blocking(move || describe::describe(args)).await,
        Command::Lineage(args) => blocking(move || lineage::lineage(args)).await,
        Command::Stop(args) => blocking(move || remote::stop(args)).await,
        Command::Dump(args) => blocking(move || remote::dump(args)).await,
        Command::Delete(args) => blocking(move || remote::delete(args)).await,
        Command::Cluster(args) => blocking(move || remote::cluster(args)).await,
        Command::Queue(args) => blocking(move || remote::queue(args)).await,
        Command::Whoami(args) => blocking(move || remote::whoami(args)).await,
        Command::Upload(args) => blocking(move || files::upload(args)).await,
        Command::Download(args) => blocking(move || files::download(args)).await,
        Command::Alias { command } => blocking(move || aliases::run_alias(command)).await,
        Command::Serving { command } => blocking(move || serving::run(command)).await,
        Command::Template { command } => blocking(move || catalog::run_template(command)).await,
        Command::Env { command } => blocking(move || catalog::run_env(command)).await,
        Command::Notebook { command } => blocking(move || notebooks::run(command)).await,
        Command::Pipeline { command } => blocking(move || pipelines::run_pipeline(command)).await,
        Command::Schedule { command } => blocking(move || schedules::run_schedule(command)).await,
        Command::Alert { command } => blocking(move || alerts::run_alert(command)).await,
        Command::Secret { command } => blocking(move || secrets::run_secret(command)).await,
        Command::Notify { command } => blocking(move || notifications::run_notify(command)).await,
        Command::Experiment { command } => {
            blocking(move || experiments::run_experiment(command)).await
        }
        Command::Run(args) => {
            // The program's exit status is this process's.
            blocking(move || std::process::exit(local_run::run_local(args)?)).await
        }
        Command::Score { command } => blocking(move || scoring::run(command)).await,
        Command::Sync(args) => blocking(move || local_run::run_sync(args)).await,
    }
}

async fn blocking(
    work: impl FnOnce() -> anyhow::Result<()> + Send + 'static,
) -> anyhow::Result<()> {
    tokio::task::spawn_blocking(work).await?
}
