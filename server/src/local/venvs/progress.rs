//! Waiting for a build with words for the one who waits: what is being
//! prepared, and how far pip is (read from the build's log), so that a
//! notebook, a serving instance or a job that waits minutes for PyPI says
//! more than "Pending".

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::Venvs;

/// How often a wait says how far the build is (when that changed).
pub const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// How a wait for something ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Waited<T> {
    /// It is there.
    Ready(T),
    /// What waited was stopped first.
    Stopped,
    /// It could not be made: why, in words for the waiting thing's message.
    Failed(String),
}

impl<T> Waited<T> {
    /// The ready value mapped by `f`; the other outcomes as they are.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Waited<U> {
        match self {
            Waited::Ready(value) => Waited::Ready(f(value)),
            Waited::Stopped => Waited::Stopped,
            Waited::Failed(why) => Waited::Failed(why),
        }
    }
}

/// What a wait is for, in words: "its environment paddlecloud/paddle-cpu:1"
/// or "JupyterLab", and a note on where to read more.
#[derive(Clone, Debug)]
pub struct Waiting {
    /// What is prepared, as it reads after "Preparing".
    pub what: String,
    /// Where its log is, or how long it takes, in parentheses.
    pub note: String,
}

impl Waiting {
    /// The waiting thing's message: "Preparing X (note)…", then with how
    /// far the build is once its log says.
    pub fn words(&self, progress: Option<&BuildProgress>) -> String {
        match progress.filter(|p| !p.is_empty()) {
            None => format!("Preparing {} ({})…", self.what, self.note),
            Some(p) => format!("Preparing {} ({}): {}", self.what, self.note, p.words()),
        }
    }

    /// Why it failed, as the waiting thing's message says it.
    pub fn failed(&self, why: &str) -> String {
        let mut what = self.what.clone();
        if let Some(first) = what.get(..1) {
            what.replace_range(..1, &first.to_uppercase());
        }
        format!("{what} could not be built: {why}")
    }
}

/// How far a build is, as its log says: the packages pip has collected so
/// far and the step it is at.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildProgress {
    /// Packages pip has named with "Collecting".
    pub collected: usize,
    /// The latest step: pip's last "Collecting", "Downloading",
    /// "Installing collected packages" line, or the build's own "==>" step.
    pub now: String,
}

/// The longest a step's words may be in a message.
const NOW_MAX: usize = 120;

impl BuildProgress {
    /// Read from the text of a build log.
    pub fn of_log(text: &str) -> Self {
        let mut progress = Self::default();
        for line in text.lines().map(str::trim) {
            if line.starts_with("Collecting ") {
                progress.collected += 1;
            }
            let step = line.strip_prefix("==> ").or_else(|| {
                [
                    "Collecting ",
                    "Downloading ",
                    "Installing collected packages",
                    "Building wheel",
                ]
                .iter()
                .any(|p| line.starts_with(p))
                .then_some(line)
            });
            if let Some(step) = step {
                progress.now = shortened(step);
            }
        }
        progress
    }

    /// Read from the build log at `path` (nothing yet when there is none).
    pub async fn read(path: &Path) -> Self {
        match tokio::fs::read(path).await {
            Ok(bytes) => Self::of_log(&String::from_utf8_lossy(&bytes)),
            Err(_) => Self::default(),
        }
    }

    /// Whether the log says nothing yet.
    pub fn is_empty(&self) -> bool {
        self.collected == 0 && self.now.is_empty()
    }

    /// "12 packages collected; now: Downloading numpy-2.3.1-….whl (16.7 MB)".
    pub fn words(&self) -> String {
        match self.collected {
            0 => self.now.clone(),
            1 => format!("1 package collected; now: {}", self.now),
            n => format!("{n} packages collected; now: {}", self.now),
        }
    }
}

/// `line` cut to [`NOW_MAX`] characters, with "…" where it was cut.
fn shortened(line: &str) -> String {
    match line.char_indices().nth(NOW_MAX) {
        None => line.to_owned(),
        Some((at, _)) => format!("{}…", &line[..at]),
    }
}

impl Venvs {
    /// The build of `requirements` once it is ready (building it first if
    /// need be), unless `stop` turns true first. Unless it is built
    /// already, `told` hears what is waited for at once and then how far
    /// the build is every [`PROGRESS_EVERY`] while that changes (a build
    /// quicker than that may say nothing more).
    pub async fn wait<E, Told>(
        self: &Arc<Self>,
        requirements: &[String],
        waiting: &Waiting,
        stop: &mut watch::Receiver<bool>,
        mut told: impl FnMut(String) -> Told,
    ) -> Result<Waited<std::path::PathBuf>, E>
    where
        Told: std::future::Future<Output = Result<(), E>>,
    {
        let quiet = self.state(requirements) == app::models::BuildState::Ready;
        let log = self.log_path(&self.hash(requirements));
        let built = self.ready(requirements);
        tokio::pin!(built);
        let mut said = String::new();
        if !quiet {
            said = waiting.words(None);
            told(said.clone()).await?;
        }
        let mut tick = tokio::time::interval(PROGRESS_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                built = &mut built => return Ok(match built {
                    Ok(dir) => Waited::Ready(dir),
                    Err(why) => Waited::Failed(waiting.failed(&why)),
                }),
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        return Ok(Waited::Stopped);
                    }
                }
                _ = tick.tick(), if !quiet => {
                    let words = waiting.words(Some(&BuildProgress::read(&log).await));
                    if words != said {
                        told(words.clone()).await?;
                        said = words;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PIP: &str = "Building a Python environment with python3\n\
        Requirements:\n  jupyterlab==4.6.6\n\n\
        ==> Making the virtualenv\n\
        ==> Installing the requirements from PyPI\n\
        Collecting jupyterlab==4.6.6 (from -r requirements.txt (line 1))\n\
        \x20 Downloading jupyterlab-4.6.6-py3-none-any.whl.metadata (16 kB)\n\
        Collecting async-lru>=1.0.0 (from jupyterlab==4.6.6)\n\
        \x20 Using cached async_lru-2.0.5-py3-none-any.whl.metadata (4.5 kB)\n";

    #[test]
    fn a_pip_log_reads_as_packages_collected_and_the_step_it_is_at() {
        let progress = BuildProgress::of_log(PIP);
        assert_eq!(progress.collected, 2);
        assert_eq!(
            progress.now,
            "Collecting async-lru>=1.0.0 (from jupyterlab==4.6.6)"
        );
        assert_eq!(
            progress.words(),
            "2 packages collected; now: Collecting async-lru>=1.0.0 (from jupyterlab==4.6.6)"
        );
        let installing = format!(
            "{PIP}Installing collected packages: {}\n",
            "pkg, ".repeat(100)
        );
        let progress = BuildProgress::of_log(&installing);
        assert!(progress
            .now
            .starts_with("Installing collected packages: pkg, pkg"));
        assert!(progress.now.ends_with('…'), "{}", progress.now);
        assert_eq!(progress.now.chars().count(), NOW_MAX + 1);
    }

    #[test]
    fn a_build_that_has_not_begun_says_only_what_is_prepared() {
        let waiting = Waiting {
            what: "JupyterLab".into(),
            note: "once per machine".into(),
        };
        assert_eq!(
            waiting.words(None),
            "Preparing JupyterLab (once per machine)…"
        );
        let nothing = BuildProgress::of_log("Building a Python environment with python3\n");
        assert!(nothing.is_empty());
        assert_eq!(
            waiting.words(Some(&nothing)),
            "Preparing JupyterLab (once per machine)…"
        );
        let started = BuildProgress::of_log("==> Making the virtualenv\n");
        assert_eq!(
            waiting.words(Some(&started)),
            "Preparing JupyterLab (once per machine): Making the virtualenv"
        );
        let its = Waiting {
            what: "its environment a/b:1".into(),
            note: String::new(),
        };
        assert_eq!(
            its.failed("pip said no"),
            "Its environment a/b:1 could not be built: pip said no"
        );
    }
}
