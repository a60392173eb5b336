//! The `paddlecloud` binary as a user drives it: a real console started with
//! `paddlecloud serve`, a key from `paddlecloud admin create-key`, and the
//! commands `submit`, `jobs`, `logs`, `stop`, `delete` against it. Also what
//! happens to a running job when the console is killed and started again.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_paddlecloud");

/// A `paddlecloud serve` process on a free port.
pub(crate) struct Console {
    child: Child,
    pub(crate) url: String,
}

impl Console {
    pub(crate) fn start(data: &Path) -> Self {
        // Its jobs ask for more than a 2-core CI machine has.
        Self::start_with(data, &["--local-cpus", "64", "--local-memory", "256Gi"])
    }

    /// `paddlecloud serve` with `extra` flags.
    pub(crate) fn start_with(data: &Path, extra: &[&str]) -> Self {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut child = Command::new(BIN)
            .args(["serve", "--addr", "127.0.0.1:0", "--stop-grace", "1"])
            .args(extra)
            .arg("--data-dir")
            .arg(data)
            .current_dir(&repo)
            .env_remove("DATABASE_URL")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("the console exited before saying where it listens")
                .unwrap();
            if let Some(rest) = line.strip_prefix("PaddleCloud Console: ") {
                break rest.split_whitespace().next().unwrap().to_owned();
            }
        };
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Self { child, url }
    }

    /// Stops the console as an operator or Kubernetes does (SIGTERM) and
    /// waits for it to exit, at most `within`.
    pub(crate) fn terminate(mut self, within: Duration) -> std::process::ExitStatus {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                start.elapsed() < within,
                "the console did not exit within {within:?} of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Ends the console the hard way: no chance to clean up.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn run(args: &[&str], credentials: &Path, stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("PADDLECLOUD_CREDENTIALS", credentials)
        .env_remove("PADDLECLOUD_SERVER")
        .env_remove("DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(text) = stdin {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    } else {
        drop(child.stdin.take());
    }
    child.wait_with_output().unwrap()
}

pub(crate) fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn failed(out: &Output) -> String {
    assert!(
        !out.status.success(),
        "expected a failure; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8(out.stderr.clone()).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    err
}

/// An account `vision` with owner ann, and her credentials file for `url`.
pub(crate) fn set_up(data: &Path, url: &str) -> PathBuf {
    let credentials = data.join("home/credentials.json");
    let data_dir = data.to_str().unwrap();
    ok(&run(
        &[
            "admin",
            "create-account",
            "--name",
            "vision",
            "--email",
            "ann@example.com",
            "--password-stdin",
            "--data-dir",
            data_dir,
        ],
        &credentials,
        Some("a long password\n"),
    ));
    let out = ok(&run(
        &[
            "admin",
            "create-key",
            "--account",
            "vision",
            "--user",
            "ann@example.com",
            "--server",
            url,
            "--credentials-out",
            credentials.to_str().unwrap(),
            "--data-dir",
            data_dir,
        ],
        &credentials,
        None,
    ));
    assert!(out.contains("wrote"), "{out}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&credentials)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the credentials file is private");
    credentials
}

/// Points the credentials at a console started again (on a new port).
pub(crate) fn point_at(credentials: &Path, url: &str) {
    let mut moved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(credentials).unwrap()).unwrap();
    moved["server"] = url.into();
    std::fs::write(credentials, moved.to_string()).unwrap();
}

/// Uploads the model `tiny` (an empty exported program): what a serving
/// instance with its own server needs.
pub(crate) fn upload_tiny_model(data: &Path, credentials: &Path) {
    let model = data.join("export");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::write(model.join("inference.json"), "{}").unwrap();
    ok(&run(
        &["upload", "model", "tiny", model.to_str().unwrap()],
        credentials,
        None,
    ));
}

/// Submits job `name`: one trainer of `cpu` and 256Mi running `sh -c
/// script`.
pub(crate) fn submit_sh(credentials: &Path, name: &str, cpu: &str, script: &str) -> String {
    ok(&run(
        &[
            "submit",
            name,
            "--trainers",
            "1",
            "--trainer-cpu",
            cpu,
            "--trainer-memory",
            "256Mi",
            "--",
            "sh",
            "-c",
            script,
        ],
        credentials,
        None,
    ))
}

pub(crate) fn job_json(credentials: &Path, name: &str) -> serde_json::Value {
    let out = ok(&run(&["jobs", "--json", "--name", name], credentials, None));
    let page: serde_json::Value = serde_json::from_str(&out).unwrap();
    page["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} not listed: {out}"))
}

pub(crate) fn wait_status(credentials: &Path, name: &str, status: &str) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let job = job_json(credentials, name);
        if job["status"] == status {
            return job;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{name} stayed {} (wanted {status})",
            job["status"]
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_user_submits_watches_reads_logs_stops_and_deletes_jobs_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let console = Console::start(dir.path());
    let creds = set_up(dir.path(), &console.url);

    // A job that succeeds, waited for.
    let out = ok(&run(
        &[
            "submit",
            "hello",
            "--ps",
            "1",
            "--trainers",
            "2",
            "--trainer-memory",
            "512Mi",
            "--env",
            "GREETING=hi there",
            "--wait",
            "--",
            "sh",
            "-c",
            "echo \"$GREETING from $TRAINING_ROLE $PADDLE_TRAINER_ID\"; \
             [ \"$TRAINING_ROLE\" = PSERVER ] && sleep 30; exit 0",
        ],
        &creds,
        None,
    ));
    assert!(
        out.contains("submitted hello: 1 parameter server(s), 2 trainer(s)"),
        "{out}"
    );
    assert!(out.trim_end().ends_with("hello succeeded"), "{out}");

    // The table.
    let table = ok(&run(&["jobs"], &creds, None));
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "STATUS",
            "PS",
            "TRAINERS",
            "SUCCEEDED",
            "FAILED",
            "AGE",
            "WHERE"
        ]
    );
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(row[..3], ["hello", "succeeded", "0/1"]);
    assert_eq!(row[3], "0/2");
    assert_eq!(row[4], "2", "both trainers exited 0");
    assert_eq!(row[7], "local");

    // Logs: the first pod (the parameter server) by default, a named pod, the tail.
    let log = ok(&run(&["logs", "hello"], &creds, None));
    assert!(log.starts_with("hi there from PSERVER"), "{log}");
    let log = ok(&run(&["logs", "hello", "trainer-0"], &creds, None));
    assert_eq!(log, "hi there from TRAINER 0\n");
    let log = ok(&run(
        &["logs", "hello", "trainer-1", "--timestamps"],
        &creds,
        None,
    ));
    assert!(log.ends_with("Z hi there from TRAINER 1\n"), "{log}");
    assert!(log.starts_with("20"), "{log}");

    // A failing job makes `--wait` fail, with the reason.
    let err = failed(&run(
        &["submit", "broken", "--wait", "--", "sh", "-c", "exit 3"],
        &creds,
        None,
    ));
    assert!(err.contains("job broken ended failed"), "{err}");
    // `describe` tells its story: the facts, the replica, what happened.
    let told = ok(&run(&["describe", "broken"], &creds, None));
    for part in [
        "Status:     failed",
        "Command:    sh -c 'exit 3'",
        "trainer-0   failed exit 3",
        "trainer-0 failed (exit 3)",
    ] {
        assert!(told.contains(part), "{part} not in {told}");
    }
    let history = told.split("History:\n").nth(1).unwrap_or_default();
    assert!(
        history
            .lines()
            .next()
            .unwrap_or_default()
            .ends_with("Pending"),
        "{told}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&ok(&run(&["describe", "broken", "--json"], &creds, None))).unwrap();
    assert_eq!(json["job"]["status"], "failed", "{json}");
    assert!(
        json["history"].as_array().is_some_and(|h| h.len() >= 3),
        "{json}"
    );
    let missing = failed(&run(&["describe", "nope"], &creds, None));
    assert!(missing.contains("Job “nope”"), "{missing}");

    // A long job, followed, then stopped from another command.
    ok(&run(
        &[
            "submit",
            "long",
            "--",
            "sh",
            "-c",
            "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done",
        ],
        &creds,
        None,
    ));
    wait_status(&creds, "long", "running");
    let follower = {
        let mut cmd = Command::new(BIN);
        cmd.args(["logs", "long", "-f"])
            .env("PADDLECLOUD_CREDENTIALS", &creds)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.spawn().unwrap()
    };
    std::thread::sleep(Duration::from_millis(800));
    let out = ok(&run(&["stop", "long"], &creds, None));
    assert_eq!(out, "long stopped\n");
    // Following ends by itself once the pod has ended.
    let followed = follower.wait_with_output().unwrap();
    assert!(followed.status.success());
    let text = String::from_utf8(followed.stdout).unwrap();
    assert!(text.starts_with("tick 0\ntick 1\n"), "{text}");

    ok(&run(&["delete", "long"], &creds, None));
    let err = failed(&run(&["logs", "long"], &creds, None));
    assert!(err.contains("Job “long” not found."), "{err}");
}

#[test]
fn mistakes_get_clear_messages_and_a_failing_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let console = Console::start(dir.path());
    let creds = set_up(dir.path(), &console.url);

    let err = failed(&run(&["submit", "Bad_Name", "--", "true"], &creds, None));
    assert!(err.contains("name: "), "{err}");

    let err = failed(&run(
        &["submit", "x", "--trainers", "0", "--", "true"],
        &creds,
        None,
    ));
    assert!(
        err.contains("num_trainers: A job needs at least one trainer."),
        "{err}"
    );

    let err = failed(&run(
        &["submit", "x", "--env", "NOEQUALS", "--", "true"],
        &creds,
        None,
    ));
    assert!(err.contains("--env wants NAME=VALUE"), "{err}");

    let err = failed(&run(&["stop", "nope"], &creds, None));
    assert!(err.contains("Job “nope” not found."), "{err}");

    // A key that was revoked, or never existed.
    let mut forged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&creds).unwrap()).unwrap();
    forged["key"] = format!("pck_{}", "0".repeat(64)).into();
    let forged_path = dir.path().join("forged.json");
    std::fs::write(&forged_path, forged.to_string()).unwrap();
    let err = failed(&run(&["jobs"], &forged_path, None));
    assert!(err.contains("The access key was refused"), "{err}");

    // A read-only key (`admin create-key --scope read`) lists, and a submit
    // with it says what the key may do.
    let read_only = dir.path().join("read-only.json");
    ok(&run(
        &[
            "admin",
            "create-key",
            "--account",
            "vision",
            "--user",
            "ann@example.com",
            "--scope",
            "read",
            "--expires-in-days",
            "30",
            "--server",
            &console.url,
            "--credentials-out",
            read_only.to_str().unwrap(),
            "--data-dir",
            dir.path().to_str().unwrap(),
        ],
        &read_only,
        None,
    ));
    ok(&run(&["jobs"], &read_only, None));
    let err = failed(&run(&["submit", "x", "--", "true"], &read_only, None));
    assert!(
        err.contains("This access key's scope is “read” (read only): it may not POST /api/v1/jobs"),
        "{err}"
    );

    let err = failed(&run(&["jobs"], &dir.path().join("missing.json"), None));
    assert!(err.contains("No credentials file at"), "{err}");

    // Nothing listening.
    let mut gone: serde_json::Value = forged.clone();
    gone["server"] = "http://127.0.0.1:9".into();
    std::fs::write(&forged_path, gone.to_string()).unwrap();
    let err = failed(&run(&["jobs"], &forged_path, None));
    assert!(
        err.contains("Could not reach the PaddleCloud Console at http://127.0.0.1:9"),
        "{err}"
    );
}

#[test]
fn a_job_running_when_the_console_is_killed_is_marked_failed_after_restart_with_its_log_kept() {
    let dir = tempfile::tempdir().unwrap();
    let console = Console::start(dir.path());
    let creds = set_up(dir.path(), &console.url);
    ok(&run(
        &[
            "submit",
            "orphan",
            "--",
            "sh",
            "-c",
            "echo started; echo pid $$; exec sleep 300",
        ],
        &creds,
        None,
    ));
    wait_status(&creds, "orphan", "running");
    let pid: i32 = {
        let start = Instant::now();
        loop {
            let log = ok(&run(&["logs", "orphan"], &creds, None));
            if let Some(pid) = log.lines().find_map(|l| l.strip_prefix("pid ")) {
                break pid.trim().parse().unwrap();
            }
            assert!(start.elapsed() < Duration::from_secs(10), "{log}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    console.kill();
    assert!(
        Path::new(&format!("/proc/{pid}")).exists(),
        "the replica outlives a killed console (its own process group)"
    );

    let console = Console::start(dir.path());
    point_at(&creds, &console.url);

    let job = job_json(&creds, "orphan");
    assert_eq!(job["status"], "failed", "{job}");
    assert!(
        job["message"].as_str().unwrap().contains("restarted"),
        "{job}"
    );
    let log = ok(&run(&["logs", "orphan"], &creds, None));
    assert!(log.starts_with("started\n"), "{log}");
    let start = Instant::now();
    while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    }) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the leftover replica was not ended"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every file under `root`, by relative path, with its bytes.
fn tree(root: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_owned();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

#[test]
fn a_user_uploads_a_folder_saves_a_version_a_job_reads_it_and_downloads_resume_where_they_stopped()
{
    let dir = tempfile::tempdir().unwrap();
    let console = Console::start(dir.path());
    let creds = set_up(dir.path(), &console.url);

    // A folder with nested files and one of 6 MB (several chunks).
    let src = dir.path().join("mnist-data");
    std::fs::create_dir_all(src.join("train/images")).unwrap();
    std::fs::write(src.join("train/labels.txt"), "7\n2\n1\n").unwrap();
    std::fs::write(src.join("README.md"), "# MNIST\n").unwrap();
    let big: Vec<u8> = (0..6_000_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(src.join("train/images/all.bin"), &big).unwrap();
    let src_str = src.to_str().unwrap();
    let out = ok(&run(
        &[
            "upload",
            "dataset",
            "mnist",
            src_str,
            "--description",
            "digits",
        ],
        &creds,
        None,
    ));
    assert!(
        out.contains("dataset vision/mnist: uploaded 3 files"),
        "{out}"
    );

    // A job reads it where the executor says it is.
    ok(&run(
        &[
            "submit",
            "reader",
            "--dataset",
            "mnist",
            "--wait",
            "--",
            "sh",
            "-c",
            "cat \"$PADDLE_DATASET_DIR/train/labels.txt\"; cat \"$PADDLE_DATASET_DIR_MNIST/README.md\"",
        ],
        &creds,
        None,
    ));
    let log = ok(&run(&["logs", "reader"], &creds, None));
    assert!(
        log.contains("7\n2\n1\n") && log.contains("# MNIST"),
        "{log}"
    );
    // A dataset the account cannot read is refused at submit.
    let err = failed(&run(
        &[
            "submit",
            "nosuch",
            "--dataset",
            "other/secret",
            "--",
            "true",
        ],
        &creds,
        None,
    ));
    assert!(err.contains("other/secret"), "{err}");

    // Downloaded back, byte for byte.
    let dest = dir.path().join("copy");
    let out = ok(&run(
        &[
            "download",
            "dataset",
            "vision/mnist",
            "--out",
            dest.to_str().unwrap(),
        ],
        &creds,
        None,
    ));
    assert!(out.contains("downloaded 3 files"), "{out}");
    assert_eq!(tree(&dest), tree(&src));

    // A download cut off halfway continues from its .part file, and files
    // already there are kept.
    let all = dest.join("train/images/all.bin");
    std::fs::remove_file(&all).unwrap();
    std::fs::write(dest.join("train/images/all.bin.part"), &big[..2_500_000]).unwrap();
    let run_out = run(
        &[
            "download",
            "dataset",
            "mnist",
            "--out",
            dest.to_str().unwrap(),
        ],
        &creds,
        None,
    );
    ok(&run_out);
    let progress = String::from_utf8_lossy(&run_out.stderr).into_owned();
    assert!(progress.contains("README.md  up to date"), "{progress}");
    assert_eq!(std::fs::read(&all).unwrap(), big);
    assert!(!dest.join("train/images/all.bin.part").exists());

    // A dataset's files saved as a version with the upload; the working
    // README changes after, version 1 keeps the old one, and a job reads it.
    let readme = dir.path().join("README.md");
    std::fs::write(&readme, "# MNIST, v1\n").unwrap();
    let out = ok(&run(
        &[
            "upload",
            "dataset",
            "mnist",
            readme.to_str().unwrap(),
            "--save-version",
            "the first README",
        ],
        &creds,
        None,
    ));
    assert!(
        out.contains("dataset vision/mnist v1: 3 files") && out.contains("read it as mnist:1"),
        "{out}"
    );
    std::fs::write(&readme, "# MNIST, changed\n").unwrap();
    ok(&run(
        &["upload", "dataset", "mnist", readme.to_str().unwrap()],
        &creds,
        None,
    ));
    let v1 = dir.path().join("v1");
    ok(&run(
        &[
            "download",
            "dataset",
            "mnist",
            "--version",
            "1",
            "--out",
            v1.to_str().unwrap(),
        ],
        &creds,
        None,
    ));
    assert_eq!(
        std::fs::read_to_string(v1.join("README.md")).unwrap(),
        "# MNIST, v1\n"
    );
    ok(&run(
        &[
            "submit",
            "reader-v1",
            "--dataset",
            "mnist:1",
            "--wait",
            "--",
            "sh",
            "-c",
            "cat \"$PADDLE_DATASET_DIR_MNIST/README.md\"",
        ],
        &creds,
        None,
    ));
    let log = ok(&run(&["logs", "reader-v1"], &creds, None));
    assert!(log.contains("# MNIST, v1"), "{log}");
    let err = failed(&run(
        &[
            "upload",
            "model",
            "resnet",
            readme.to_str().unwrap(),
            "--save-version",
            "x",
        ],
        &creds,
        None,
    ));
    assert!(err.contains("--save-version is for datasets"), "{err}");

    // A model: each upload is a version; download takes the newest.
    let model = dir.path().join("model");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::write(model.join("inference.pdmodel"), "v1").unwrap();
    let out = ok(&run(
        &[
            "upload",
            "model",
            "resnet",
            model.to_str().unwrap(),
            "--tags",
            "candidate",
        ],
        &creds,
        None,
    ));
    assert!(out.contains("model vision/resnet v1"), "{out}");
    std::fs::write(model.join("inference.pdmodel"), "v2").unwrap();
    let out = ok(&run(
        &["upload", "model", "resnet", model.to_str().unwrap()],
        &creds,
        None,
    ));
    assert!(out.contains("v2"), "{out}");
    let got = dir.path().join("got");
    ok(&run(
        &[
            "download",
            "model",
            "resnet",
            "--out",
            got.to_str().unwrap(),
        ],
        &creds,
        None,
    ));
    assert_eq!(
        std::fs::read_to_string(got.join("inference.pdmodel")).unwrap(),
        "v2"
    );
    let got1 = dir.path().join("got1");
    ok(&run(
        &[
            "download",
            "model",
            "resnet",
            "--version",
            "1",
            "--out",
            got1.to_str().unwrap(),
        ],
        &creds,
        None,
    ));
    assert_eq!(
        std::fs::read_to_string(got1.join("inference.pdmodel")).unwrap(),
        "v1"
    );

    // Bad input is refused with a reason, never a panic.
    let err = failed(&run(
        &["upload", "dataset", "Bad Name", src_str],
        &creds,
        None,
    ));
    assert!(err.contains("name"), "{err}");
    let err = failed(&run(&["download", "dataset", "vision/none"], &creds, None));
    assert!(err.contains("vision/none"), "{err}");
}

#[test]
fn a_user_launches_scales_lists_stops_and_deletes_a_serving_instance_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let console = Console::start(dir.path());
    let creds = set_up(dir.path(), &console.url);
    upload_tiny_model(dir.path(), &creds);

    // Its own server instead of the default predict server: any HTTP answer
    // below 500 at /healthz counts as ready. The second replica starts 3 s
    // after the first: --wait goes on through "degraded" (one of two ready).
    let first = dir.path().join("first-replica");
    let command = format!(
        "mkdir {} 2>/dev/null || sleep 3; exec python3 -m http.server \"$PORT\" --bind 127.0.0.1",
        first.display()
    );
    let out = ok(&run(
        &[
            "serving",
            "launch",
            "tiny-api",
            "--model",
            "tiny",
            "--replicas",
            "2",
            "--cpu",
            "250m",
            "--memory",
            "128Mi",
            "--wait",
            "--",
            "sh",
            "-c",
            &command,
        ],
        &creds,
        None,
    ));
    assert!(out.contains("/serve/vision/tiny-api"), "{out}");
    assert!(out.trim_end().ends_with("tiny-api ready"), "{out}");
    let listed = ok(&run(&["serving", "list"], &creds, None));
    assert!(
        listed.contains("tiny-api") && listed.contains("2/2") && listed.contains("vision/tiny v1"),
        "{listed}"
    );

    let scaled = ok(&run(
        &["serving", "scale", "tiny-api", "--replicas", "1"],
        &creds,
        None,
    ));
    assert!(scaled.contains("tiny-api"), "{scaled}");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&run(&["serving", "list", "--json"], &creds, None))).unwrap();
    assert_eq!(json["instances"][0]["spec"]["replicas"], 1);

    let err = failed(&run(
        &["serving", "scale", "tiny-api", "--autoscale", "4:2:70"],
        &creds,
        None,
    ));
    assert!(err.contains("at least the fewest"), "{err}");
    let err = failed(&run(
        &["serving", "launch", "x", "--model", "nosuch"],
        &creds,
        None,
    ));
    assert!(err.contains("no model “nosuch”"), "{err}");

    // A canary of a second version, its tracks and calls, rolled back; the
    // lineage of the first version names the instance serving it.
    upload_tiny_model(dir.path(), &creds);
    let canary = ok(&run(
        &[
            "serving",
            "canary",
            "tiny-api",
            "--version",
            "2",
            "--percent",
            "50",
        ],
        &creds,
        None,
    ));
    assert!(canary.contains("canary v2 at 50%"), "{canary}");
    assert!(canary.contains("canary  v2"), "{canary}");
    let versions = ok(&run(&["serving", "versions", "tiny-api"], &creds, None));
    assert!(
        versions.contains("main") && versions.contains("canary"),
        "{versions}"
    );
    let err = failed(&run(
        &[
            "serving",
            "canary",
            "tiny-api",
            "--version",
            "2",
            "--percent",
            "100",
        ],
        &creds,
        None,
    ));
    assert!(err.contains("from 1 to 99"), "{err}");
    let back = ok(&run(&["serving", "rollback", "tiny-api"], &creds, None));
    assert!(back.contains("roll back the canary"), "{back}");
    let err = failed(&run(&["serving", "promote", "tiny-api"], &creds, None));
    assert!(err.contains("no canary"), "{err}");
    let lineage = ok(&run(&["lineage", "model:vision/tiny:1"], &creds, None));
    assert!(
        lineage.contains("model:vision/tiny:1 (ready) * --served by--> serving:vision/tiny-api"),
        "{lineage}"
    );
    let err = failed(&run(&["lineage", "model:tiny"], &creds, None));
    assert!(err.contains("names nothing"), "{err}");

    let stopped = ok(&run(&["serving", "stop", "tiny-api"], &creds, None));
    assert_eq!(stopped.trim(), "tiny-api stopped");
    ok(&run(&["serving", "delete", "tiny-api"], &creds, None));
    assert_eq!(
        ok(&run(&["serving", "list"], &creds, None)).trim(),
        "No serving instances."
    );
}

#[test]
fn the_command_line_shows_the_machine_the_queue_and_why_a_job_waits() {
    let dir = tempfile::tempdir().unwrap();
    // One CPU and one (simulated: this machine has none) GPU.
    let console = Console::start_with(
        dir.path(),
        &[
            "--local-cpus",
            "1",
            "--local-memory",
            "4Gi",
            "--local-gpus",
            "1",
        ],
    );
    let creds = set_up(dir.path(), &console.url);
    let idle = ok(&run(&["cluster"], &creds, None));
    assert!(idle.starts_with("local\n"), "{idle}");
    assert!(idle.contains("CPU     0 of 1 held"), "{idle}");
    assert!(idle.contains("gpu 0  simulated\n"), "{idle}");
    assert!(idle.contains("waiting: 0"), "{idle}");

    // More than the machine: refused with the numbers, nothing recorded.
    let err = failed(&run(
        &[
            "submit",
            "huge",
            "--trainers",
            "1",
            "--trainer-gpu",
            "2",
            "--",
            "true",
        ],
        &creds,
        None,
    ));
    assert!(err.contains("2 GPUs") && err.contains("1 GPU"), "{err}");

    let submit = |name: &str, script: &str| submit_sh(&creds, name, "1", script);
    submit("holder", "sleep 30");
    wait_status(&creds, "holder", "running");
    submit("waiter", "echo ran");
    let start = Instant::now();
    let table = loop {
        let table = ok(&run(&["jobs"], &creds, None));
        if table.contains("waiter is pending: waiting for 1 CPU: 0 free") {
            break table;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{table}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(table.lines().next().unwrap().starts_with("NAME"), "{table}");
    let busy = ok(&run(&["cluster"], &creds, None));
    assert!(busy.contains("CPU     1 of 1 held"), "{busy}");
    assert!(busy.contains("waiting: 1"), "{busy}");

    ok(&run(&["stop", "holder"], &creds, None));
    wait_status(&creds, "waiter", "succeeded");
}

#[test]
fn whoami_names_the_account_and_account_picks_its_credentials_file() {
    let tmp = tempfile::tempdir().unwrap();
    let console = Console::start(tmp.path());
    let credentials = set_up(tmp.path(), &console.url);
    let data_dir = tmp.path().to_str().unwrap();

    // Ann's second account, made by an admin with no password given: she
    // is the same user, so her own password stays and nothing is generated.
    let out = ok(&run(
        &[
            "admin",
            "create-account",
            "--name",
            "speech",
            "--email",
            "ann@example.com",
            "--data-dir",
            data_dir,
        ],
        &credentials,
        None,
    ));
    assert!(out.contains("already had a user"), "{out}");
    // A new user's generated password is printed once, to be changed.
    let out = ok(&run(
        &[
            "admin",
            "create-account",
            "--name",
            "audio",
            "--email",
            "cy@example.com",
            "--data-dir",
            data_dir,
        ],
        &credentials,
        None,
    ));
    assert!(out.contains("generated password (shown once"), "{out}");

    let out = ok(&run(&["whoami"], &credentials, None));
    assert!(
        out.starts_with("ann@example.com (owner) in account vision\n"),
        "{out}"
    );
    assert!(
        out.contains("also a member of:\n  speech (owner)\n"),
        "{out}"
    );

    // A key made in `speech`, saved where --account looks for it.
    let home = tmp.path().join("home");
    let speech = home.join(".config/paddlecloud/credentials-speech.json");
    ok(&run(
        &[
            "admin",
            "create-key",
            "--account",
            "speech",
            "--user",
            "ann@example.com",
            "--server",
            &console.url,
            "--credentials-out",
            speech.to_str().unwrap(),
            "--data-dir",
            data_dir,
        ],
        &credentials,
        None,
    ));
    let out = ok(&Command::new(BIN)
        .args(["whoami", "--account", "speech", "--json"])
        .env("HOME", &home)
        .env_remove("PADDLECLOUD_CREDENTIALS")
        .env_remove("PADDLECLOUD_SERVER")
        .output()
        .unwrap());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["me"]["account"]["name"], "speech");
    assert_eq!(v["accounts"].as_array().unwrap().len(), 2);
    let err = failed(
        &Command::new(BIN)
            .args(["whoami", "--account", "nowhere"])
            .env("HOME", &home)
            .env_remove("PADDLECLOUD_CREDENTIALS")
            .output()
            .unwrap(),
    );
    assert!(err.contains("credentials-nowhere.json"), "{err}");
}

#[test]
fn a_user_saves_an_environment_and_a_template_and_runs_it_in_that_environment_from_the_command_line(
) {
    let dir = tempfile::tempdir().unwrap();
    let console = Console::start(dir.path());
    let creds = set_up(dir.path(), &console.url);
    // An environment with what the console's Python lacks, built with its log.
    let requirements = dir.path().join("requirements.txt");
    std::fs::write(&requirements, "# for TOML\ntomli-w==1.0.0\n").unwrap();
    let out = run(
        &[
            "env",
            "save",
            "toml",
            "--file",
            requirements.to_str().unwrap(),
            "--wait",
        ],
        &creds,
        None,
    );
    let saved = ok(&out);
    assert!(saved.contains("saved vision/toml:1"), "{saved}");
    assert!(saved.contains("vision/toml:1 is ready"), "{saved}");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("Successfully installed tomli-w-1.0.0"),
        "{log}"
    );
    let list = ok(&run(&["env", "list"], &creds, None));
    assert!(
        list.contains("vision/toml") && list.contains("Ready"),
        "{list}"
    );
    assert!(list.contains("paddlecloud/paddle-cpu"), "{list}");
    let failed_save = failed(&run(&["env", "save", "bad", "-r=-e ."], &creds, None));
    assert!(failed_save.contains("requirements[0]"), "{failed_save}");

    // A template whose job runs in an environment it takes as a parameter.
    let template = dir.path().join("toml.json");
    std::fs::write(
        &template,
        serde_json::json!({
            "name": "dump",
            "parameters": [
                {"name": "key", "type": "string", "pattern": "[a-z]+", "default": "a"},
                {"name": "env", "type": "environment", "default": "toml"}
            ],
            "job": {
                "command": ["python", "-c", "import sys, tomli_w; print(tomli_w.dumps({sys.argv[1]: 1}))", "{{key}}"],
                "num_trainers": 1,
                "trainer": {"cpu": "500m", "memory": "256Mi"},
                "environment": "{{env}}"
            }
        })
        .to_string(),
    )
    .unwrap();
    let saved = ok(&run(
        &["template", "save", template.to_str().unwrap()],
        &creds,
        None,
    ));
    assert!(saved.contains("saved dump v1"), "{saved}");
    let list = ok(&run(&["template", "list"], &creds, None));
    assert!(
        list.contains("vision/dump") && list.contains("key, env"),
        "{list}"
    );
    assert!(list.contains("paddlecloud/fit-a-line"), "{list}");
    let ran = ok(&run(
        &[
            "template",
            "run",
            "dump",
            "--name",
            "dumped",
            "--set",
            "key=answer",
            "--wait",
        ],
        &creds,
        None,
    ));
    assert!(
        ran.contains("submitted dumped from vision/dump v1 (env=toml, key=answer)"),
        "{ran}"
    );
    assert!(ran.contains("dumped succeeded"), "{ran}");
    let log = ok(&run(&["logs", "dumped"], &creds, None));
    assert!(log.contains("answer = 1"), "{log}");
    let refused = failed(&run(
        &["template", "run", "dump", "--set", "key=Not OK"],
        &creds,
        None,
    ));
    assert!(
        refused.contains("values.key") || refused.contains("key must match"),
        "{refused}"
    );
    let job = job_json(&creds, "dumped");
    assert_eq!(job["spec"]["environment"], "vision/toml:1", "{job}");
}

#[test]
fn a_user_runs_a_pipeline_from_a_yaml_file_watches_it_and_retries_it_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let console = Console::start(dir.path());
    let creds = set_up(dir.path(), &console.url);
    let gate = dir.path().join("gate");
    let file = dir.path().join("nightly.yaml");
    std::fs::write(
        &file,
        format!(
            "name: nightly\nparameters:\n  trainers: 1\nnodes:\n  - name: prep\n    job:\n      command: [sh, -c, echo prepared]\n      num_trainers: \"{{{{params.trainers}}}}\"\n  - name: gated\n    after: [prep]\n    job:\n      command: [sh, -c, \"test -f {}\"]\n      num_trainers: 1\n",
            gate.display()
        ),
    )
    .unwrap();
    let out = run(
        &[
            "pipeline",
            "run",
            "-f",
            file.to_str().unwrap(),
            "--name",
            "night",
            "--set",
            "trainers=1",
            "--wait",
        ],
        &creds,
        None,
    );
    let why = failed(&out);
    assert!(why.contains("the run failed"), "{why}");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains("submitted night (2 nodes)"), "{printed}");
    assert!(printed.contains("night failed"), "{printed}");
    let shown = ok(&run(&["pipeline", "show", "night"], &creds, None));
    assert!(
        shown.contains("prep") && shown.contains("succeeded"),
        "{shown}"
    );
    assert!(
        shown.contains("night-gated") && shown.contains("exited with code 1"),
        "{shown}"
    );
    std::fs::write(&gate, "").unwrap();
    let retried = ok(&run(&["pipeline", "retry", "night"], &creds, None));
    assert!(retried.contains("night running"), "{retried}");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let list = ok(&run(&["pipeline", "list"], &creds, None));
        if list.contains("succeeded") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{list}");
        std::thread::sleep(Duration::from_millis(300));
    }
    // A cycle is refused with the cycle named.
    std::fs::write(
        &file,
        "name: loop\nnodes:\n  - {name: a, after: [b], job: {command: [\"true\"], num_trainers: 1}}\n  - {name: b, after: [a], job: {command: [\"true\"], num_trainers: 1}}\n",
    )
    .unwrap();
    let refused = failed(&run(
        &["pipeline", "run", "-f", file.to_str().unwrap()],
        &creds,
        None,
    ));
    assert!(refused.contains("a → b → a"), "{refused}");
}

/// `paddlecloud run` with `PADDLECLOUD_SPOOL` set to `spool`.
fn run_spooled(args: &[&str], credentials: &Path, spool: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("PADDLECLOUD_CREDENTIALS", credentials)
        .env("PADDLECLOUD_SPOOL", spool)
        .env_remove("PADDLECLOUD_SERVER")
        .env_remove("DATABASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

#[test]
fn a_program_in_any_language_runs_as_a_local_run_from_the_command_line_even_offline() {
    let data = tempfile::tempdir().unwrap();
    let console = Console::start(data.path());
    let credentials = set_up(data.path(), &console.url);
    let spool = data.path().join("spool");

    // A shell program that fails: its exit status is the command's, its
    // output still reaches the terminal and the log console.
    let script = "echo out; echo err >&2; exit 3";
    let args = [
        "run", "--name", "shell", "--param", "lr=0.1", "--", "sh", "-c", script,
    ];
    let out = run_spooled(&args, &credentials, &spool).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("err\n"));
    let job = job_json(&credentials, "shell");
    assert_eq!(
        (&job["status"], &job["source"], &job["message"]),
        (
            &"failed".into(),
            &"local".into(),
            &"It exited with code 3.".into()
        )
    );
    let log = ok(&run(&["logs", "shell", "trainer-0"], &credentials, None));
    assert!(log.contains("out\n") && log.contains("err\n"), "{log}");

    let out = run_spooled(
        &["run", "--", "sh", "-c", "echo fine"],
        &credentials,
        &spool,
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(job_json(&credentials, "sh")["status"], "succeeded");

    // SIGTERM to `paddlecloud run` reaches the program; the run is stopped.
    let mut slow = run_spooled(
        &[
            "run",
            "--name",
            "slow",
            "--",
            "sh",
            "-c",
            "echo started; sleep 30",
        ],
        &credentials,
        &spool,
    )
    .spawn()
    .unwrap();
    let mut first = String::new();
    BufReader::new(slow.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "started\n");
    let pid = nix::unistd::Pid::from_raw(slow.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = slow.wait().unwrap();
    assert!(!status.success());
    let job = wait_status(&credentials, "slow", "stopped");
    assert!(job["finished_at"].is_i64());

    // Stop on the console: the next heartbeat ends the program with SIGTERM.
    let mut asked = run_spooled(
        &[
            "run",
            "--name",
            "asked",
            "--",
            "sh",
            "-c",
            "echo working; sleep 30",
        ],
        &credentials,
        &spool,
    )
    .env("PADDLECLOUD_HEARTBEAT_SECS", "0.5")
    .spawn()
    .unwrap();
    let mut first = String::new();
    BufReader::new(asked.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "working\n");
    ok(&run(&["stop", "asked"], &credentials, None));
    let status = asked.wait().unwrap();
    assert!(!status.success());
    let job = wait_status(&credentials, "asked", "stopped");
    assert_eq!(job["message"], "Stopped from the console.");

    // The console out of reach: the run still runs, its reports are
    // spooled, and `paddlecloud sync` sends them once, later.
    let away = [
        "run",
        "--server",
        "http://127.0.0.1:9",
        "--name",
        "away",
        "--",
        "sh",
        "-c",
        "echo offline",
    ];
    let out = run_spooled(&away, &credentials, &spool).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("paddlecloud sync"));
    let synced = run_spooled(&["sync"], &credentials, &spool)
        .output()
        .unwrap();
    assert!(synced.status.success(), "{synced:?}");
    assert_eq!(job_json(&credentials, "away")["status"], "succeeded");
    let log = ok(&run(&["logs", "away", "trainer-0"], &credentials, None));
    assert_eq!(log, "offline\n");
    assert_eq!(
        std::fs::read_dir(&spool).unwrap().count(),
        0,
        "nothing left spooled"
    );
    drop(console);
}

#[test]
fn a_user_starts_an_experiment_from_a_yaml_file_waits_for_it_and_reads_its_best_trial_from_the_command_line(
) {
    let Some(python) = crate::common::metric_logs::python() else {
        eprintln!("skipping: no test venv (run scripts/setup.sh test)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let console = Console::start(dir.path());
    let creds = set_up(dir.path(), &console.url);
    let sdk = concat!(env!("CARGO_MANIFEST_DIR"), "/../sdk/python");
    let template = dir.path().join("dip.json");
    std::fs::write(
        &template,
        serde_json::json!({
            "name": "dip",
            "parameters": [{"name": "x", "type": "float", "min": 0.0, "max": 1.0, "default": 0.5}],
            "job": {
                "command": [python, "-c",
                    "import paddlecloud\npaddlecloud.draw_board(({{x}} - 0.3) ** 2, 'loss', step=0)\nassert paddlecloud.flush_board()\n"],
                "num_trainers": 1,
                "trainer": {"cpu": "250m", "memory": "128Mi"},
                "env": [{"name": "PYTHONPATH", "value": sdk}],
            },
        })
        .to_string(),
    )
    .unwrap();
    ok(&run(
        &["template", "save", template.to_str().unwrap()],
        &creds,
        None,
    ));
    let file = dir.path().join("dip-search.yaml");
    std::fs::write(
        &file,
        "name: dip-search\ntemplate: dip\nparameters:\n  - {name: x, type: float, min: 0.0, max: 1.0}\nobjective: {metric: loss, direction: minimize}\nalgorithm: {type: random}\nmax_trials: 3\nparallel_trials: 2\n",
    )
    .unwrap();
    let out = ok(&run(
        &[
            "experiment",
            "create",
            "-f",
            file.to_str().unwrap(),
            "--wait",
        ],
        &creds,
        None,
    ));
    assert!(
        out.contains("created dip-search (3 trials of dip, 2 at once)"),
        "{out}"
    );
    assert!(
        out.contains("dip-search succeeded All 3 trials ran."),
        "{out}"
    );
    assert!(out.contains("best: trial "), "{out}");
    let shown = ok(&run(&["experiment", "show", "dip-search"], &creds, None));
    let lines: Vec<&str> = shown.lines().collect();
    assert!(lines[1].starts_with("TRIAL"), "{shown}");
    assert!(
        lines[2].contains('*'),
        "the best trial comes first, marked: {shown}"
    );
    assert_eq!(lines.len(), 5, "{shown}");
    let list = ok(&run(&["experiment", "list"], &creds, None));
    assert!(
        list.contains("dip-search") && list.contains("3/3") && list.contains("loss = "),
        "{list}"
    );
    // Bad input: the field is named, nothing is created.
    std::fs::write(
        &file,
        "name: dip-wide\ntemplate: dip\nparameters:\n  - {name: x, type: float, min: 0.0, max: 2.0}\nobjective: {metric: loss, direction: minimize}\n",
    )
    .unwrap();
    let refused = failed(&run(
        &["experiment", "create", "-f", file.to_str().unwrap()],
        &creds,
        None,
    ));
    assert!(refused.contains("parameters[0].max"), "{refused}");
    let stopped = failed(&run(&["experiment", "stop", "dip-search"], &creds, None));
    assert!(stopped.contains("has ended already"), "{stopped}");
}

#[test]
fn an_owner_sets_a_secret_from_standard_input_and_a_job_submitted_with_it_gets_its_value() {
    let dir = tempfile::tempdir().unwrap();
    let console = Console::start(dir.path());
    let creds = set_up(dir.path(), &console.url);
    // From standard input (the newline `echo` adds is not part of it), and
    // from a file of bytes that are not text.
    let set = ok(&run(
        &[
            "secret",
            "set",
            "hf-token",
            "--description",
            "Hub read token",
        ],
        &creds,
        Some("hf-secret-value-42\n"),
    ));
    assert_eq!(
        set,
        "set hf-token (18 bytes); its value is not shown again\n"
    );
    let blob = dir.path().join("key.bin");
    std::fs::write(&blob, [0u8, 255, 1, 2]).unwrap();
    let from_file = [
        "secret",
        "set",
        "blob",
        "--from-file",
        blob.to_str().unwrap(),
    ];
    assert!(ok(&run(&from_file, &creds, None)).starts_with("set blob (4 bytes)"));
    let listed = ok(&run(&["secret", "list"], &creds, None));
    assert!(
        listed.contains("hf-token  18 bytes") && listed.contains("Hub read token"),
        "{listed}"
    );
    assert!(!listed.contains("hf-secret-value-42"), "{listed}");
    let err = failed(&run(&["secret", "set", "Bad_Name"], &creds, Some("x")));
    assert!(err.contains("not a secret name"), "{err}");

    ok(&run(
        &[
            "submit", "reads-it", "--trainers", "1", "--trainer-cpu", "100m",
            "--trainer-memory", "64Mi", "--secret", "HF_TOKEN=hf-token",
            "--secret", "file:key.bin=blob", "--", "sh", "-c",
            "echo \"len ${#HF_TOKEN}\"; echo \"as is $HF_TOKEN\"; wc -c < \"$PADDLECLOUD_SECRETS_DIR/key.bin\"",
        ],
        &creds,
        None,
    ));
    wait_status(&creds, "reads-it", "succeeded");
    let log = ok(&run(&["logs", "reads-it"], &creds, None));
    assert!(log.contains("len 18"), "{log}");
    assert!(log.contains("as is ***"), "{log}");
    assert!(log.lines().any(|l| l.trim() == "4"), "{log}");
    let err = failed(&run(
        &["submit", "bad", "--secret", "nope", "--", "true"],
        &creds,
        None,
    ));
    assert!(
        err.contains("--secret") && err.contains("does not say where"),
        "{err}"
    );
    assert_eq!(
        ok(&run(&["secret", "delete", "blob"], &creds, None)),
        "deleted blob\n"
    );
}
