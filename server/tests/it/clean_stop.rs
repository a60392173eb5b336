//! A clean stop (issue 44): `paddlecloud serve` told SIGTERM, as an
//! operator or Kubernetes stops it, leaves nothing unsupervised. A running
//! job's replica gets SIGTERM (its trap runs) and the job fails saying the
//! console stopped; a job waiting for room stays queued and runs after the
//! next start; a serving replica is stopped and the next start brings the
//! instance back; the console itself exits 0 within the grace period.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::cli_remote::{
    job_json, ok, point_at, run, set_up, submit_sh, upload_tiny_model, wait_status, Console,
};

/// Whether process `pid` still runs (a zombie has ended).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// What `args` print once `done` says so, within 30 s.
fn until(creds: &Path, args: &[&str], done: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let out = ok(&run(args, creds, None));
        if done(&out) {
            return out;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{args:?}: {out}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_console_told_sigterm_stops_its_replicas_and_the_next_start_brings_back_what_should_run() {
    let dir = tempfile::tempdir().unwrap();
    let flags = ["--local-cpus", "2", "--local-memory", "4Gi"];
    let console = Console::start_with(dir.path(), &flags);
    let creds = set_up(dir.path(), &console.url);

    // A serving replica that writes its pid (each start adds a line).
    upload_tiny_model(dir.path(), &creds);
    let pids = dir.path().join("serving-pids");
    let command = format!(
        "echo $$ >> {}; exec python3 -m http.server \"$PORT\" --bind 127.0.0.1",
        pids.display()
    );
    let launch = [
        "serving", "launch", "api", "--model", "tiny", "--cpu", "250m", "--memory", "128Mi",
        "--wait", "--", "sh", "-c", &command,
    ];
    ok(&run(&launch, &creds, None));
    let serving_pid: i32 = std::fs::read_to_string(&pids)
        .unwrap()
        .trim()
        .parse()
        .unwrap();

    // A job that says when it is told to stop, and one that waits for room.
    let job = |name: &str, cpu: &str, script: &str| submit_sh(&creds, name, cpu, script);
    job(
        "long",
        "1",
        "echo pid $$; trap 'echo got TERM; exit 143' TERM; while :; do sleep 0.1; done",
    );
    wait_status(&creds, "long", "running");
    let log = until(&creds, &["logs", "long"], |log| log.contains("pid "));
    let pid: i32 = log
        .lines()
        .find_map(|l| l.strip_prefix("pid "))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    job("waiter", "1500m", "echo ran");
    until(&creds, &["jobs"], |table| {
        table.contains("waiter is pending: waiting for")
    });

    // The stop: within the grace period (1 s here) and a little more.
    let status = console.terminate(Duration::from_secs(20));
    assert!(status.success(), "the console exited with {status}");
    assert!(!alive(pid), "the job's replica outlived the console");
    assert!(
        !alive(serving_pid),
        "the serving replica outlived the console"
    );

    // The next start: the job failed saying why, its replica got SIGTERM;
    // the waiting job runs; the serving instance is back.
    let console = Console::start_with(dir.path(), &flags);
    point_at(&creds, &console.url);
    let long = job_json(&creds, "long");
    assert_eq!(long["status"], "failed", "{long}");
    assert!(
        long["message"]
            .as_str()
            .unwrap()
            .contains("The console stopped while this job ran"),
        "{long}"
    );
    let log = ok(&run(&["logs", "long"], &creds, None));
    assert!(
        log.contains("got TERM"),
        "the replica was asked first: {log}"
    );
    wait_status(&creds, "waiter", "succeeded");
    until(&creds, &["serving", "list"], |list| list.contains("1/1"));
    let started = std::fs::read_to_string(&pids).unwrap();
    assert_eq!(started.lines().count(), 2, "started again once: {started}");
}
