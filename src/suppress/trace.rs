//! Phase timings of the suppression heuristics on stderr, for benchmarks: switched on by the
//! environment variable `SDCFLOW_SUPPRESS_TRACE`; nothing here reaches an output.

/// Prints phase timings of the suppression methods to stderr when the environment variable
/// `SDCFLOW_SUPPRESS_TRACE` is set (benchmarks only; the figures are not part of any output).
/// Each line carries the process's resident set then, so that a trace says which phase holds
/// the memory (the peak alone, from `time -v`, does not).
pub(crate) fn trace(what: std::fmt::Arguments) {
    if enabled() {
        eprintln!("[suppress] {what} [rss {:.2} GB]", rss_gb());
    }
}

/// Whether [`trace`] prints (so that a trace line's figures are only gathered when it does).
pub(crate) fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("SDCFLOW_SUPPRESS_TRACE").is_some())
}

/// Resident set of this process in GB (`VmRSS` of `/proc/self/status`; 0 elsewhere).
fn rss_gb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    kb / 1_048_576.0
}

/// CPU seconds of this process so far (user + system, from `/proc/self/stat`; 0 elsewhere):
/// benchmark traces compare work on a loaded machine by it.
pub(crate) fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let tick = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}
