//! `paddlecloud alias …`: list, set, move and delete a model's aliases
//! (`owner/model@production`), and read their history.

use anyhow::{bail, Context};
use app::models::time::format_utc_seconds;
use app::models::{AliasForm, ModelRef};
use clap::{Args, Subcommand};

use super::remote::RemoteArgs;

/// The alias subcommands.
#[derive(Debug, Subcommand)]
pub enum AliasCommand {
    /// A model's aliases (`--history`: every set, move and delete), e.g.
    /// `paddlecloud alias list vision/resnet`.
    List(ListArgs),
    /// Point an alias at a version, creating or moving it, e.g.
    /// `paddlecloud alias set vision/resnet@production 3`.
    Set(SetArgs),
    /// Delete an alias (its history stays), e.g.
    /// `paddlecloud alias delete vision/resnet@candidate`.
    Delete(DeleteArgs),
}

/// `paddlecloud alias list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// The model: `name` (your account's) or `owner/name`.
    pub model: String,
    /// Print what happened to them instead, newest first.
    #[arg(long)]
    pub history: bool,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud alias set`.
#[derive(Debug, Args)]
pub struct SetArgs {
    /// `[owner/]model@alias`.
    pub alias: String,
    /// The version it names.
    pub version: u32,
    /// Protect it (only the account's owners move or delete it): `true`
    /// or `false`; left out, as it was.
    #[arg(long)]
    pub protected: Option<bool>,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `paddlecloud alias delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// `[owner/]model@alias`.
    pub alias: String,
    /// Which console.
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// The model's owner (the key's account when left out), its name and the
/// alias `text` names (`None` without `@`).
fn split(
    client: &crate::api_client::ApiClient,
    text: &str,
) -> anyhow::Result<(String, String, Option<String>)> {
    let r = ModelRef::parse(text, "model").map_err(|e| anyhow::anyhow!("{e}"))?;
    if r.version.is_some() {
        bail!("name an alias with @, not a version with a colon: {text}");
    }
    let owner = match r.owner {
        Some(owner) => owner,
        None => client.me().context("reading your account")?.account.name,
    };
    Ok((owner, r.name, r.alias))
}

/// Runs one alias subcommand.
pub fn run_alias(command: AliasCommand) -> anyhow::Result<()> {
    match command {
        AliasCommand::List(args) => {
            let client = args.remote.client()?;
            let (owner, name, alias) = split(&client, &args.model)?;
            if alias.is_some() {
                bail!("list takes a model, without @alias: {}", args.model);
            }
            if args.history {
                for c in client.alias_history(&owner, &name)? {
                    let shield = if c.protected { " (protected)" } else { "" };
                    println!(
                        "{}  @{} {}{shield} by {}",
                        format_utc_seconds(c.at),
                        c.alias,
                        c.describe(),
                        c.by
                    );
                }
            } else {
                for a in client.aliases(&owner, &name)? {
                    let shield = if a.protected { "  protected" } else { "" };
                    println!("@{}  v{}{shield}", a.alias, a.version);
                }
            }
        }
        AliasCommand::Set(args) => {
            let client = args.remote.client()?;
            let (owner, name, alias) = split(&client, &args.alias)?;
            let Some(alias) = alias else {
                bail!("say which alias: {}@production", args.alias);
            };
            let form = AliasForm {
                version: args.version,
                protected: args.protected,
            };
            let set = client.set_alias(&owner, &name, &alias, &form)?;
            println!("{owner}/{name}@{} -> v{}", set.alias, set.version);
        }
        AliasCommand::Delete(args) => {
            let client = args.remote.client()?;
            let (owner, name, alias) = split(&client, &args.alias)?;
            let Some(alias) = alias else {
                bail!("say which alias: {}@candidate", args.alias);
            };
            client.delete_alias(&owner, &name, &alias)?;
            println!("deleted {owner}/{name}@{alias}");
        }
    }
    Ok(())
}
