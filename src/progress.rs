//! Progress reporting: a bar per stage on a terminal, timestamped lines otherwise.
//!
//! Batch jobs run for minutes to hours, often under a scheduler that captures stderr; bars are
//! noise in a log file, so they are only drawn when stderr is a terminal. `-q` silences
//! everything but errors, `-v` adds engine details.

use std::io::IsTerminal;
use std::time::Instant;

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
