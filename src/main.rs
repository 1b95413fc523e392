//! The `sdcflow` command line: `main` starts the runtime, races the command against SIGINT and
//! SIGTERM, and prints the error chain once; the commands are in [`cli`], the work in the
//! library.

mod cli;

use std::process::ExitCode;

use clap::Parser;

use sdcflow::progress::Verbosity;

/// mimalloc instead of glibc's allocator, for Rust and (the crate's `override` feature) for
/// HiGHS's C++ alike. Why: the suppression solves thousands of small LPs and MIPs, and HiGHS
/// allocates and frees its work vectors in each; on CASC EIA `malloc` and `free`, nearly all
/// under `operator new`, took ~8 % of the samples. Measured (release builds, 2 cores, the same
/// output files): CPU time EIA 1.97 → 1.84 s, Adult 3.34 → 3.14 s; the 3.6 M-cell c5-geo3
/// peaks at 6.4 GiB instead of 7.5 (mimalloc returns free pages by itself, where glibc kept
/// them until `malloc_trim`). BENCHMARKS.md, "Session 78".
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    no_transparent_huge_pages();
    let cli = cli::Cli::parse();
    let verbosity = if cli.quiet {
        Verbosity::Quiet
    } else if cli.verbose {
        Verbosity::Verbose
    } else {
        Verbosity::Normal
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(async {
        tokio::select! {
            r = cli::run(cli.command, verbosity) => Ok(r),
            s = interrupted() => Err(s),
        }
    });
    let result = match outcome {
        Ok(r) => r,
        Err((name, code)) => {
            // Staged outputs and solver scratch hold unprotected cells: remove them, leave any
            // previous output as it was, and exit at once (solver threads are not waited for).
            sdcflow::store::remove_active();
            eprintln!("error: interrupted by {name}: nothing was published; any previous output is unchanged");
            std::process::exit(code);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            let code =
                e.chain().find_map(|c| c.downcast_ref::<sdcflow::Error>()).map(sdcflow::Error::exit_code).unwrap_or(1);
            ExitCode::from(code)
        }
    }
}

/// Transparent huge pages off for this process (and the executors it starts), as
/// `MIMALLOC_ALLOW_THP=0` does. Why: mimalloc's arenas are eligible for them, so the kernel
/// zeroes a whole fresh 2 MB page at the first touch of any of its bytes, while HiGHS allocates
/// and frees its factor and presolve arrays solve after solve — on CASC EIA that zeroing was
/// ~20 % of the run's samples. Measured without (release builds, 2 cores, the same files):
/// EIA 1.49 → 1.26 s, c4-persons 2.08 → 1.86 s, Adult 6.40 → 6.09 s (medians), and no loss
/// from 4 KB pages on the million-cell c4-geo3 (279 and 233 s → 243 and 237 s, peak RSS
/// 2.0 → 1.9 GB; BENCHMARKS.md, "Session 93"). Best effort: without the switch nothing changes.
#[cfg(target_os = "linux")]
fn no_transparent_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE only sets a flag on this process; no memory is touched.
    let _ = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
}

#[cfg(not(target_os = "linux"))]
fn no_transparent_huge_pages() {}

/// Waits for SIGINT or SIGTERM; returns the signal's name and the conventional exit code.
async fn interrupted() -> (&'static str, i32) {
    use tokio::signal::unix::{signal, SignalKind};
    match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
        (Ok(mut int), Ok(mut term)) => tokio::select! {
            _ = int.recv() => ("SIGINT", 130),
            _ = term.recv() => ("SIGTERM", 143),
        },
        _ => std::future::pending().await,
    }
}
