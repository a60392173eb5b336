//! `paddlecloud secret …`: the account's secrets. A value is read from a
//! file or from standard input, never from the command line, where shell
//! history and `ps` would keep it.

use std::io::Read;

use app::models::time::format_utc_seconds;
use clap::{Args, Subcommand};

use super::remote::RemoteArgs;
use super::serving::{ListArgs, NameArgs};

/// The secret subcommands.
#[derive(Debug, Subcommand)]
pub enum SecretCommand {
    /// Set a secret (owners), its value from `--from-file` or standard
    /// input, e.g. `printf %s "$TOKEN" | paddlecloud secret set hf-token`.
    Set(SetArgs),
    /// List the account's secrets (names, sizes, dates; never values).
    List(ListArgs),
    /// Delete a secret (owners).
    Delete(NameArgs),
}

/// `secret set`.
#[derive(Debug, Clone, Args)]
pub struct SetArgs {
    /// The secret's name, e.g. `s3-key`.
    pub name: String,
    /// Read the value from this file (its bytes as they are); without it,
    /// from standard input.
    #[arg(long)]
    pub from_file: Option<std::path::PathBuf>,
    /// What it is for.
    #[arg(long, default_value = "")]
    pub description: String,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// Runs one secret subcommand.
pub fn run_secret(command: SecretCommand) -> anyhow::Result<()> {
    match command {
        SecretCommand::Set(args) => {
            let value = match &args.from_file {
                Some(path) => std::fs::read(path)
                    .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?,
                None => {
                    let mut value = Vec::new();
                    std::io::stdin().read_to_end(&mut value)?;
                    // A value piped from `echo` ends in a newline it does not mean.
                    if value.ends_with(b"\n") && std::str::from_utf8(&value).is_ok() {
                        value.pop();
                    }
                    value
                }
            };
            let set = args
                .remote
                .client()?
                .set_secret(&args.name, &value, &args.description)?;
            println!(
                "set {} ({} bytes); its value is not shown again",
                set.name, set.size
            );
        }
        SecretCommand::List(args) => {
            let secrets = args.remote.client()?.secrets()?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&secrets)?);
                return Ok(());
            }
            for s in secrets {
                let used = s
                    .last_used_at
                    .map(format_utc_seconds)
                    .unwrap_or_else(|| "never used".to_owned());
                println!(
                    "{}  {} bytes  set {} by {}  {}  {}",
                    s.name,
                    s.size,
                    format_utc_seconds(s.updated_at),
                    s.updated_by,
                    used,
                    s.description
                );
            }
        }
        SecretCommand::Delete(args) => {
            args.remote.client()?.delete_secret(&args.name)?;
            println!("deleted {}", args.name);
        }
    }
    Ok(())
}
