//! sdcflow's error type and the exit-code contract.
//!
//! Expected problems (a bad job file, an unknown hierarchy code, a missing column) are separated
//! from I/O, engine and protection failures because they map to different exit codes
//! (DESIGN.md): 2 for bad input, 1 for everything else. [`Error::Internal`] is reserved for broken
//! invariants — a bug in sdcflow, never a user mistake.

use std::path::PathBuf;

/// Result alias used across sdcflow.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure sdcflow reports.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The job file is malformed or a key has a bad value.
    #[error("{path}: {message}")]
    Job {
        /// Job file.
        path: PathBuf,
        /// What is wrong, naming the key and what was expected.
        message: String,
    },
    /// Several independent input errors, reported together.
    #[error("{} errors:\n{}", .0.len(), .0.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n"))]
    Collection(Vec<Error>),
    /// A hierarchy file or specification is malformed, or data codes do not fit it.
    #[error("hierarchy of `{variable}`{}: {message}", location(.path, .line))]
    Hierarchy {
        /// Explanatory variable.
        variable: String,
        /// Hierarchy file, when there is one.
        path: Option<PathBuf>,
        /// 1-based line in that file.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// A safety rule string could not be parsed or has invalid parameters.
    #[error("safety rule `{rule}`: {message}")]
    Rule {
        /// The offending rule text.
        rule: String,
        /// What is wrong and what is accepted.
        message: String,
    },
    /// The input data does not match what the job needs (missing column, wrong type, NULLs,
    /// negative contributions for a dominance rule, unreadable file).
    #[error("input {source_name}: {message}")]
    Data {
        /// File, URL or view.
        source_name: String,
        /// What is wrong, naming the column or key.
        message: String,
    },
    /// The output location may not be written: a file, a directory or prefix holding data that
    /// sdcflow did not write, or one of the job's inputs.
    #[error("output {location}: {message}")]
    Output {
        /// Output directory or URL.
        location: String,
        /// Why it is refused and what to do instead.
        message: String,
    },
    /// Reading or writing a local file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// DataFusion / Ballista failed while planning or executing.
    #[error("query engine: {0}")]
    Engine(String),
    /// An object store operation failed.
    #[error("object store {url}: {message}")]
    Store {
        /// Location.
        url: String,
        /// Underlying error.
        message: String,
    },
    /// Protection could not be achieved or the audit rejected the publication.
    #[error("protection of table `{table}` failed: {message}")]
    Protection {
        /// Table name.
        table: String,
        /// Which cells / why.
        message: String,
    },
    /// A broken invariant inside sdcflow (a bug).
    #[error("internal error (a bug in sdcflow, please report it): {0}")]
    Internal(String),
}

fn location(path: &Option<PathBuf>, line: &Option<usize>) -> String {
    match (path, line) {
        (Some(p), Some(l)) => format!(" ({}:{l})", p.display()),
        (Some(p), None) => format!(" ({})", p.display()),
        _ => String::new(),
    }
}

impl Error {
    /// Process exit code for this error: 2 for bad input (job, hierarchy, rule, data), 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Job { .. }
            | Error::Hierarchy { .. }
            | Error::Rule { .. }
            | Error::Data { .. }
            | Error::Output { .. } => 2,
            Error::Collection(errs) => errs.iter().map(Error::exit_code).max().unwrap_or(1),
            _ => 1,
        }
    }

    /// Builds a [`Error::Job`].
    pub fn job(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::Job { path: path.into(), message: message.into() }
    }

    /// Builds a [`Error::Data`].
    pub fn data(source_name: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Data { source_name: source_name.into(), message: message.into() }
    }

    /// Builds an [`Error::Io`].
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }

    /// Why a local input file (job, `.hrc`, mapping, SQL, a-priori) could not be read, said
    /// once and in words: the caller names the file, so the OS text is not repeated.
    pub fn unreadable_reason(e: &std::io::Error) -> String {
        use std::io::ErrorKind::*;
        match e.kind() {
            NotFound => "not found".into(),
            PermissionDenied => "cannot be read: permission denied".into(),
            InvalidData => "is not UTF-8 text (save it as UTF-8)".into(),
            IsADirectory => "is a directory, not a file".into(),
            _ => format!("cannot be read: {e}"),
        }
    }

    /// An input file that cannot be read or is not UTF-8 text: an input error (exit 2) naming
    /// the file; a hierarchy file keeps its "hierarchy of `x`" prefix via [`Error::Hierarchy`].
    pub fn unreadable(path: &std::path::Path, e: &std::io::Error) -> Self {
        Error::data(path.display().to_string(), Self::unreadable_reason(e))
    }

    /// Folds a list of errors: none → `Ok`, one → itself, several → [`Error::Collection`].
    pub fn collect(mut errs: Vec<Error>) -> Result<()> {
        match errs.len() {
            0 => Ok(()),
            1 => Err(errs.remove(0)),
            _ => Err(Error::Collection(errs)),
        }
    }
}

impl From<datafusion::error::DataFusionError> for Error {
    fn from(e: datafusion::error::DataFusionError) -> Self {
        Error::Engine(e.to_string())
    }
}

impl From<arrow::error::ArrowError> for Error {
    fn from(e: arrow::error::ArrowError) -> Self {
        Error::Engine(e.to_string())
    }
}

impl From<parquet::errors::ParquetError> for Error {
    fn from(e: parquet::errors::ParquetError) -> Self {
        Error::Engine(format!("parquet: {e}"))
    }
}

/// Closest candidate to `word` among `choices` by edit distance, for "did you mean" hints.
pub fn nearest<'a>(word: &str, choices: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    choices
        .into_iter()
        .map(|c| (levenshtein(word, c), c))
        .filter(|(d, c)| *d <= (c.len().max(word.len()) / 2).max(1))
        .min()
        .map(|(_, c)| c)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_contract() {
        assert_eq!(Error::job("j.toml", "x").exit_code(), 2);
        assert_eq!(Error::data("f", "x").exit_code(), 2);
        assert_eq!(Error::Engine("x".into()).exit_code(), 1);
        assert_eq!(Error::Collection(vec![Error::Engine("a".into()), Error::job("j", "b")]).exit_code(), 2);
    }

    #[test]
    fn nearest_suggests_close_names() {
        assert_eq!(nearest("respons", ["response", "weight"]), Some("response"));
        assert_eq!(nearest("zzzzzz", ["response", "weight"]), None);
    }

    #[test]
    fn error_stays_small() {
        assert!(std::mem::size_of::<Error>() <= 96, "{}", std::mem::size_of::<Error>());
    }
}
