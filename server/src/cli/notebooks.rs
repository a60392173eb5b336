//! `paddlecloud notebook …`: the account's notebooks (list, start, stop)
//! and the versions of their files: a file's history, one version's file
//! or page, two versions compared cell by cell, a restore.

use std::io::Write;
use std::path::PathBuf;

use app::models::time::format_utc_seconds;
use app::models::{
    format_bytes, CellChange, LineChange, NotebookDiff, NotebookShareSpec, ShareAudience,
};
use clap::{Args, Subcommand};

use super::remote::RemoteArgs;

/// The notebook subcommands.
#[derive(Debug, Subcommand)]
pub enum NotebookCommand {
    /// The account's notebooks with their status.
    List(RemoteOnly),
    /// Start a stopped notebook (its workspace as it was).
    Start(NameArgs),
    /// Stop a notebook; its notebook files are kept as versions first.
    Stop(NameArgs),
    /// A notebook's versioned files and one file's versions, e.g.
    /// `paddlecloud notebook history lab --path sweep.ipynb`.
    History(HistoryArgs),
    /// Write one version's .ipynb (or with `--html` its page) to stdout or
    /// a file, e.g. `paddlecloud notebook show lab 12 -o sweep-12.ipynb`.
    Show(ShowArgs),
    /// Compare two versions cell by cell, e.g. `paddlecloud notebook diff lab 11 12`.
    Diff(DiffArgs),
    /// Put a version back into the running notebook's workspace (the file
    /// as it is is kept as a version first).
    Restore(VersionArgs),
    /// Share a notebook file read-only, e.g.
    /// `paddlecloud notebook share lab sweep.ipynb --with account --account acme`
    /// (`--with members`, or `--with link [--expires-days 7]`: the link is printed once).
    Share(ShareArgs),
    /// A notebook's shares.
    Shares(NameArgs),
    /// End a share (its id as `shares` lists it).
    Unshare(UnshareArgs),
    /// Notebook files others shared with you.
    Shared(RemoteOnly),
    /// Copy a shared file (a share id from `shared`, or a link) into a running
    /// notebook of yours, e.g. `paddlecloud notebook copy 4 --into lab`.
    Copy(CopyArgs),
    /// The parameters a notebook file declares (its cell tagged
    /// `parameters`), e.g. `paddlecloud notebook params lab train.ipynb`.
    Params(super::notebook_runs::ParamsArgs),
    /// Run a notebook file as a job with papermill, e.g.
    /// `paddlecloud notebook run lab train.ipynb --set epochs=5 --wait`.
    Run(super::notebook_runs::RunArgs),
    /// A run's executed notebook (`--html`: its page; `--input`: the
    /// notebook as it took it), e.g. `paddlecloud notebook output train-x1 -o out.ipynb`.
    Output(super::notebook_runs::OutputArgs),
}

/// `paddlecloud notebook share`.
#[derive(Debug, Args)]
pub struct ShareArgs {
    /// The notebook's name.
    pub name: String,
    /// The file's path in its workspace.
    pub path: String,
    /// `members` (the account's), `account` (name it with `--account`) or `link`.
    #[arg(long)]
    pub with: String,
    /// The account to share it with.
    #[arg(long)]
    pub account: Option<String>,
    /// A link stops working after this many days.
    #[arg(long)]
    pub expires_days: Option<u32>,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud notebook unshare`.
#[derive(Debug, Args)]
pub struct UnshareArgs {
    /// The notebook's name.
    pub name: String,
    /// The share's id.
    pub share: i64,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud notebook copy`.
#[derive(Debug, Args)]
pub struct CopyArgs {
    /// A share's id, or a link (`…/shared/notebooks/pcf_…`).
    pub share: String,
    /// Your running notebook to copy it into.
    #[arg(long)]
    pub into: String,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// A share's id, or the token of a link however it is given.
fn share_of(text: &str) -> Result<i64, &str> {
    match text.trim().parse::<i64>() {
        Ok(id) => Ok(id),
        Err(_) => Err(text
            .trim()
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(text)),
    }
}

/// Which console, alone.
#[derive(Debug, Args)]
pub struct RemoteOnly {
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// A notebook.
#[derive(Debug, Args)]
pub struct NameArgs {
    /// The notebook's name.
    pub name: String,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud notebook history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The notebook's name.
    pub name: String,
    /// The file (its path in the workspace); left out, the file changed last.
    #[arg(long)]
    pub path: Option<String>,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// A version of a notebook's file.
#[derive(Debug, Args)]
pub struct VersionArgs {
    /// The notebook's name.
    pub name: String,
    /// The version's id (as `history` lists it).
    pub version: i64,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud notebook show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The notebook's name.
    pub name: String,
    /// The version's id.
    pub version: i64,
    /// The page nbconvert made of it instead of the .ipynb.
    #[arg(long)]
    pub html: bool,
    /// Write it here instead of to stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud notebook diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The notebook's name.
    pub name: String,
    /// The older version's id.
    pub from: i64,
    /// The newer version's id.
    pub to: i64,
    /// Print the unchanged cells too.
    #[arg(long)]
    pub all: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// The comparison as text: a heading per cell, its lines marked `+`, `-`
/// or ` `, and its outputs before and after when they changed; unchanged
/// cells only with `all`.
pub fn diff_text(diff: &NotebookDiff, all: bool) -> String {
    let mut out = format!(
        "{} #{} ({}) -> #{} ({})\n",
        diff.to.path,
        diff.from.id,
        format_utc_seconds(diff.from.at),
        diff.to.id,
        format_utc_seconds(diff.to.at)
    );
    for cell in &diff.cells {
        if cell.change == CellChange::Same && !all {
            continue;
        }
        out.push_str(&format!("\n@@ {}\n", cell.title()));
        for line in &cell.lines {
            let mark = match line.change {
                LineChange::Same => ' ',
                LineChange::Added => '+',
                LineChange::Removed => '-',
            };
            out.push_str(&format!("{mark} {}\n", line.text));
        }
        if cell.outputs_changed {
            let joined = |t: &[String]| t.concat().trim_end().to_owned();
            out.push_str(&format!("  output before: {}\n", joined(&cell.old_outputs)));
            out.push_str(&format!("  output after:  {}\n", joined(&cell.new_outputs)));
        }
    }
    let unchanged = diff.count(CellChange::Same);
    if unchanged > 0 && !all {
        out.push_str(&format!(
            "\n({unchanged} unchanged cells; --all prints them)\n"
        ));
    }
    out
}

/// Runs one notebook subcommand.
pub fn run(command: NotebookCommand) -> anyhow::Result<()> {
    match command {
        NotebookCommand::List(args) => {
            let list = args.remote.client()?.notebooks()?;
            for n in list.notebooks {
                println!(
                    "{}  {}  {}  {}",
                    n.name,
                    n.status.as_str(),
                    n.owner,
                    n.message
                );
            }
        }
        NotebookCommand::Start(args) => {
            let n = args.remote.client()?.notebook_action(&args.name, "start")?;
            println!("{}  {}", n.name, n.status.as_str());
        }
        NotebookCommand::Stop(args) => {
            let n = args.remote.client()?.notebook_action(&args.name, "stop")?;
            println!("{}  {}", n.name, n.status.as_str());
        }
        NotebookCommand::History(args) => {
            let h = args
                .remote
                .client()?
                .notebook_history(&args.name, args.path.as_deref())?;
            if h.files.is_empty() {
                println!("No version yet: save a notebook in JupyterLab, or stop the notebook.");
                return Ok(());
            }
            println!("Files:");
            for f in &h.files {
                println!("  {}  ({} versions)", f.path, f.versions);
            }
            if let Some(path) = &h.path {
                println!("\nVersions of {path}:");
            }
            for v in &h.versions {
                let from = v
                    .restored_from
                    .map(|f| format!(" of #{f}"))
                    .unwrap_or_default();
                println!(
                    "  #{}  {}  {}{from}  {}  {} cells  {}",
                    v.id,
                    format_utc_seconds(v.at),
                    v.reason.label(),
                    v.author,
                    v.cells,
                    format_bytes(v.bytes)
                );
            }
        }
        NotebookCommand::Show(args) => {
            let bytes =
                args.remote
                    .client()?
                    .notebook_version(&args.name, args.version, args.html)?;
            match &args.output {
                Some(path) => {
                    std::fs::write(path, &bytes)?;
                    println!(
                        "wrote {} ({})",
                        path.display(),
                        format_bytes(bytes.len() as u64)
                    );
                }
                None => std::io::stdout().write_all(&bytes)?,
            }
        }
        NotebookCommand::Diff(args) => {
            let diff = args
                .remote
                .client()?
                .notebook_diff(&args.name, args.from, args.to)?;
            print!("{}", diff_text(&diff, args.all));
        }
        NotebookCommand::Restore(args) => {
            let v = args
                .remote
                .client()?
                .restore_notebook_version(&args.name, args.version)?;
            println!(
                "{} is version #{} again (kept as #{}); reload it in JupyterLab if it is open",
                v.path, args.version, v.id
            );
        }
        NotebookCommand::Share(args) => {
            let with = ShareAudience::parse(&args.with)
                .ok_or_else(|| anyhow::anyhow!("--with is members, account or link"))?;
            let spec = NotebookShareSpec {
                path: args.path.clone(),
                with,
                account: args.account.clone(),
                expires_days: args.expires_days,
            };
            let done = args
                .remote
                .client()?
                .share_notebook_file(&args.name, &spec)?;
            println!(
                "#{}  {} shared with {}",
                done.share.id,
                done.share.path,
                done.share.audience()
            );
            if let Some(link) = done.link {
                println!("{}{link}", args.remote.client()?.server());
                println!("(the link is not shown again)");
            }
        }
        NotebookCommand::Shares(args) => {
            for s in args.remote.client()?.notebook_shares(&args.name)? {
                let expires = s
                    .expires_at
                    .map(|t| format!("  expires {}", format_utc_seconds(t)))
                    .unwrap_or_default();
                println!(
                    "#{}  {}  with {}{expires}  by {}",
                    s.id,
                    s.path,
                    s.audience(),
                    s.created_by
                );
            }
        }
        NotebookCommand::Unshare(args) => {
            args.remote
                .client()?
                .revoke_notebook_share(&args.name, args.share)?;
            println!("revoked #{}", args.share);
        }
        NotebookCommand::Shared(args) => {
            for f in args.remote.client()?.shared_notebook_files()? {
                println!(
                    "#{}  {}  from {}/{}  by {}  saved {}",
                    f.share,
                    f.path,
                    f.owner_account,
                    f.notebook,
                    f.owner,
                    format_utc_seconds(f.version.at)
                );
            }
        }
        NotebookCommand::Params(args) => return super::notebook_runs::params(args),
        NotebookCommand::Run(args) => return super::notebook_runs::run(args),
        NotebookCommand::Output(args) => return super::notebook_runs::output(args),
        NotebookCommand::Copy(args) => {
            let v = args
                .remote
                .client()?
                .copy_shared_notebook(share_of(&args.share), &args.into)?;
            println!("copied into {}/{}", args.into, v.path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_is_named_by_its_id_or_by_a_link_however_given() {
        assert_eq!(share_of("4"), Ok(4));
        assert_eq!(share_of("pcf_abc"), Err("pcf_abc"));
        assert_eq!(
            share_of("http://c:3000/shared/notebooks/pcf_abc/"),
            Err("pcf_abc")
        );
    }
}
