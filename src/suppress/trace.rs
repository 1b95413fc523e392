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

/// CPU seconds of this process so far (user + system, from `/proc/self/stat`; 0 elsewhere):
/// benchmark traces compare work on a loaded machine by it.
pub(crate) fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let tick = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}
