//! Progress reporting: a bar per stage on a terminal, timestamped lines otherwise.
//!
//! Batch jobs run for minutes to hours, often under a scheduler that captures stderr; bars are
//! noise in a log file, so they are only drawn when stderr is a terminal. `-q` silences
//! everything but errors, `-v` adds engine details.
//!
//! Long solver phases (cleanup, repair, tabu search, the optimal method's cutting loop,
//! column generation) run inside pure solvers, often on an executor, with no reporter handed
//! down: they call [`solver_progress`], which prints through the reporter the binary installed
//! ([`Progress::install_for_solvers`]) at most once every [`solver_interval`], whatever the
//! number of phases and threads. Nothing is printed in library use, and no output file
//! depends on it.

use std::io::IsTerminal;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

/// How much to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    /// Errors only.
    Quiet,
    /// Stages.
    Normal,
    /// Stages and details.
    Verbose,
}

/// The progress reporter handed to every stage.
#[derive(Debug, Clone)]
pub struct Progress {
    verbosity: Verbosity,
    bars: Option<MultiProgress>,
}

impl Progress {
    /// A reporter writing to stderr: bars on a terminal, lines otherwise.
    pub fn new(verbosity: Verbosity) -> Self {
        let bars = (verbosity > Verbosity::Quiet && std::io::stderr().is_terminal()).then(MultiProgress::new);
        Self { verbosity, bars }
    }

    /// A silent reporter (tests, library use).
    pub fn quiet() -> Self {
        Self { verbosity: Verbosity::Quiet, bars: None }
    }

    /// Makes this reporter print the solvers' periodic progress lines ([`solver_progress`]);
    /// the first reporter installed stays.
    pub fn install_for_solvers(&self) {
        let _ = SOLVER_REPORTER.set(self.clone());
    }

    /// Logs a line (suppressed by `-q`).
    pub fn info(&self, msg: &str) {
        if self.verbosity >= Verbosity::Normal {
            self.line(msg);
        }
    }

    /// Logs a detail line (only with `-v`).
    pub fn detail(&self, msg: &str) {
        if self.verbosity >= Verbosity::Verbose {
            self.line(msg);
        }
    }

    /// Logs a warning (shown unless `-q`).
    pub fn warn(&self, msg: &str) {
        if self.verbosity >= Verbosity::Normal {
            self.line(&format!("warning: {msg}"));
        }
    }

    fn line(&self, msg: &str) {
        let stamped = format!("[{}] {msg}", chrono::Local::now().format("%H:%M:%S"));
        match &self.bars {
            Some(m) => {
                let _ = m.println(stamped);
            }
            None => eprintln!("{stamped}"),
        }
    }

    /// Starts a stage of `len` steps.
    pub fn stage(&self, name: &str, len: u64) -> Stage {
        let bar = self.bars.as_ref().map(|m| {
            let b = m.add(ProgressBar::new(len));
            b.set_style(
                ProgressStyle::with_template("{spinner} {msg:50} [{bar:30}] {pos}/{len} {elapsed}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            b.set_message(name.to_string());
            b
        });
        if bar.is_none() {
            self.info(&format!("{name} …"));
        }
        Stage { bar, name: name.to_string(), start: Instant::now(), progress: self.clone() }
    }
}

static SOLVER_REPORTER: OnceLock<Progress> = OnceLock::new();

/// When the last solver progress line was printed (or the first phase asked, so that quick
/// solves print nothing).
static LAST_SOLVER_LINE: Mutex<Option<Instant>> = Mutex::new(None);

/// Least time between two solver progress lines: 5 s, or `SDCFLOW_PROGRESS_INTERVAL_S`
/// (seconds, for tests and very long jobs).
pub fn solver_interval() -> Duration {
    static INTERVAL: OnceLock<Duration> = OnceLock::new();
    *INTERVAL.get_or_init(|| {
        std::env::var("SDCFLOW_PROGRESS_INTERVAL_S")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map_or(Duration::from_secs(5), Duration::from_secs_f64)
    })
}

/// Reports the state of a long solver phase (`phase: what`, e.g. its current cost and bound)
/// when a line is due: at most one line per [`solver_interval`] across every phase and thread.
/// `what` is only evaluated then, so it may be costly. Silent unless a reporter is installed.
pub fn solver_progress(phase: &str, what: impl FnOnce() -> String) {
    let Some(p) = SOLVER_REPORTER.get() else { return };
    if p.verbosity < Verbosity::Normal {
        return;
    }
    let now = Instant::now();
    {
        let Ok(mut last) = LAST_SOLVER_LINE.lock() else { return };
        match *last {
            Some(t) if now.duration_since(t) >= solver_interval() => *last = Some(now),
            Some(_) => return,
            None => {
                *last = Some(now);
                if !solver_interval().is_zero() {
                    return;
                }
            }
        }
    }
    p.line(&format!("{phase}: {}", what()));
}

/// Prints a warning through the installed reporter (e.g. a cluster query run again after an
/// executor was lost), so that code below the stages can tell the user without a reporter of
/// its own. Silent unless a reporter is installed.
pub fn warn_installed(msg: &str) {
    if let Some(p) = SOLVER_REPORTER.get() {
        p.warn(msg);
    }
}

/// One running stage.
#[derive(Debug)]
pub struct Stage {
    bar: Option<ProgressBar>,
    name: String,
    start: Instant,
    progress: Progress,
}

impl Stage {
    /// Advances by `n` steps.
    pub fn inc(&self, n: u64) {
        if let Some(b) = &self.bar {
            b.inc(n);
        }
    }

    /// Ends the stage, reporting its duration.
    pub fn finish(self) {
        let secs = self.start.elapsed().as_secs_f64();
        match &self.bar {
            Some(b) => b.finish_with_message(format!("{} ({secs:.1} s)", self.name)),
            None => self.progress.info(&format!("{} done in {secs:.1} s", self.name)),
        }
    }
}
