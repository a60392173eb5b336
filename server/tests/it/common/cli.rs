//! The `paddlecloud` binary run as an operator runs it in a script.

use std::io::Write;
use std::process::{Command, Stdio};

/// Runs `paddlecloud ARGS` with `stdin` as its input: whether it succeeded,
/// its stdout and its stderr.
pub fn paddlecloud(args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_paddlecloud"));
    command.args(args).env_remove("DATABASE_URL");
    let out = piped(command, stdin);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `command` with `stdin` as its input, its output read whole.
pub fn piped(mut command: Command, stdin: &str) -> std::process::Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}
