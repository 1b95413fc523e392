//! Phase timings of the suppression heuristics on stderr, for benchmarks: switched on by the
//! environment variable `SDCFLOW_SUPPRESS_TRACE`; nothing here reaches an output.

/// Prints phase timings of the suppression methods to stderr when the environment variable
/// `SDCFLOW_SUPPRESS_TRACE` is set (benchmarks only; the figures are not part of any output).
pub(crate) fn trace(what: std::fmt::Arguments) {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *ON.get_or_init(|| std::env::var_os("SDCFLOW_SUPPRESS_TRACE").is_some()) {
        eprintln!("[suppress] {what}");
    }
}
