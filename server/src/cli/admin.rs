//! `paddlecloud admin …`: scripted set-up on the database itself (no
//! console needs to run): accounts, access keys, site admins.

use std::io::BufRead;
use std::path::PathBuf;

use anyhow::{bail, Context};
use app::models::{Credentials, SignUpForm};
use clap::{Args, Subcommand};

use super::StorageArgs;
use crate::access_keys::SqlAccessKeys;
use crate::accounts::{AccountMail, SqlAccounts};
use crate::storage::db;

/// Administrative subcommands.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create an account and its owner (same rules as the sign-up form).
    CreateAccount(CreateAccountArgs),
    /// Create an access key for a user and print it (or write a credentials file).
    CreateKey(CreateKeyArgs),
    /// Make a user a site admin, who may set any account's quota
    /// (`--revoke` takes it back).
    Grant(GrantArgs),
}

/// `paddlecloud admin grant`.
#[derive(Debug, Clone, Args)]
pub struct GrantArgs {
    /// The user's email (in every account they belong to).
    pub email: String,
    /// Take the role away instead.
    #[arg(long)]
    pub revoke: bool,
    /// Storage settings.
    #[command(flatten)]
    pub storage: StorageArgs,
}

/// `paddlecloud admin create-account`.
#[derive(Debug, Clone, Args)]
pub struct CreateAccountArgs {
    /// Account name (becomes the namespace `pc-NAME`).
    #[arg(long)]
    pub name: String,
    /// The owner's email.
    #[arg(long)]
    pub email: String,
    /// Read the password from the first line of standard input. Without
    /// it, a password is generated and printed once, and the owner must
    /// choose a new one when they first sign in.
    #[arg(long)]
    pub password_stdin: bool,
    /// Make the owner a site admin (who sets every account's quota). The
    /// first user of an empty database is one anyway.
    #[arg(long)]
    pub site_admin: bool,
    /// Storage settings.
    #[command(flatten)]
    pub storage: StorageArgs,
}

/// `paddlecloud admin create-key`.
#[derive(Debug, Clone, Args)]
pub struct CreateKeyArgs {
    /// The account.
    #[arg(long)]
    pub account: String,
    /// The user's email.
    #[arg(long)]
    pub user: String,
    /// What to call the key (shown on the Account page).
    #[arg(long, default_value = "created by paddlecloud admin")]
    pub name: String,
    /// What the key may do: `full` (everything the user may), `read`,
    /// `metrics` (read and write metrics) or `submit` (read, submit and
    /// stop jobs).
    #[arg(long, default_value = "full", value_parser = ["full", "read", "metrics", "submit"])]
    pub scope: String,
    /// Days until the key expires (default: never).
    #[arg(long)]
    pub expires_in_days: Option<u32>,
    /// Write a credentials file (mode 0600) here instead of printing the key;
    /// needs `--server`.
    #[arg(long, requires = "server")]
    pub credentials_out: Option<PathBuf>,
    /// The console's URL to put in the credentials file.
    #[arg(long)]
    pub server: Option<String>,
    /// Storage settings.
    #[command(flatten)]
    pub storage: StorageArgs,
}

/// Runs an administrative subcommand.
pub(super) async fn run(command: AdminCommand) -> anyhow::Result<()> {
    match command {
        AdminCommand::CreateAccount(args) => create_account(args).await,
        AdminCommand::CreateKey(args) => create_key(args).await,
        AdminCommand::Grant(args) => grant(args).await,
    }
}

async fn create_key(args: CreateKeyArgs) -> anyhow::Result<()> {
    let pool = db::connect(&args.storage.database_url()).await?;
    let terms = app::models::KeyTerms {
        scope: app::models::KeyScope::parse(&args.scope).map_err(|err| anyhow::anyhow!("{err}"))?,
        expires_in_days: args.expires_in_days,
    };
    let created = SqlAccessKeys::new(pool)
        .create_for(&args.account, &args.user, &args.name, terms)
        .await
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    let (Some(path), Some(server)) = (args.credentials_out, args.server) else {
        println!("{}", created.key);
        return Ok(());
    };
    let credentials = Credentials {
        server,
        account: args.account.trim().to_ascii_lowercase(),
        user: args.user.trim().to_lowercase(),
        key: created.key,
    };
    write_private(&path, &credentials.to_json())
        .with_context(|| format!("writing {}", path.display()))?;
    println!("wrote {} (key {}…)", path.display(), created.info.prefix);
    Ok(())
}

async fn grant(args: GrantArgs) -> anyhow::Result<()> {
    let pool = db::connect(&args.storage.database_url()).await?;
    let users = crate::quota::SqlQuotas::new(pool, None)
        .grant_site_admin(&args.email, !args.revoke)
        .await
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    if users == 0 {
        bail!("no user has the email {}", args.email);
    }
    let what = if args.revoke {
        "is no longer"
    } else {
        "is now"
    };
    println!("{} {what} a site admin", args.email.trim().to_lowercase());
    Ok(())
}

/// Writes a file only its owner can read: it holds a secret.
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    crate::secrets::seal::write_private(path, text.as_bytes())
}

async fn create_account(args: CreateAccountArgs) -> anyhow::Result<()> {
    let (password, generated) = if args.password_stdin {
        let mut password = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut password)
            .context("reading the password from standard input")?;
        (password.trim_end_matches(['\r', '\n']).to_owned(), false)
    } else {
        // 24 hex digits: 96 random bits, to be replaced at first sign-in.
        (
            crate::storage::tokens::random_token()[..24].to_owned(),
            true,
        )
    };
    let pool = db::connect(&args.storage.database_url()).await?;
    // Nothing is mailed: whoever runs this vouches for the address.
    let accounts = SqlAccounts::new(pool, AccountMail::outbox_of(&args.storage.data_dir)?);
    let me = accounts
        .create_confirmed(
            SignUpForm {
                account: args.name,
                email: args.email,
                password: password.clone(),
            },
            args.site_admin,
            generated,
        )
        .await
        .map_err(|err| match err.field() {
            Some(field) => anyhow::anyhow!("{field}: {err}"),
            None => anyhow::anyhow!("{err}"),
        })?;
    println!(
        "created account {} (namespace {}) with owner {}{}",
        me.account.name,
        me.account.namespace,
        me.email,
        if args.site_admin {
            ", a site admin"
        } else {
            ""
        }
    );
    if me.must_change_password {
        println!(
            "generated password (shown once; a new one is asked for at first sign-in): {password}"
        );
    } else if generated {
        println!(
            "{} already had a user: they sign in with their own password",
            me.email
        );
    }
    Ok(())
}
