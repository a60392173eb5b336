//! `paddlecloud`: the console's server and admin tool.

use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = server::cli::Cli::parse();
    match server::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("paddlecloud: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
