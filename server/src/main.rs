//! `paddlecloud`: the console's server and admin tool.

use clap::Parser;

/// mimalloc rather than glibc's malloc: see `server/Cargo.toml`.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
