//! Suppression figures for BENCHMARKS.md:
//! `cargo bench --profile bench-release --bench suppress -- <small|mid|big|big5|big6> <methods> <limit_s> [cleanup|nocleanup] [auto|closure|hypercube]`
//! (`SDCFLOW_SUPPRESS_TRACE=1` prints phase timings to stderr).
use sdcflow::suppress::*;
use sdcflow::table::synth::{generate, SynthSpec};
use sdcflow::table::CellStatus;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).map(|s| s.as_str()).unwrap_or("mid");
    let methods = args.get(2).cloned().unwrap_or("fast".into());
    let limit: f64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(120.0);
    let cleanup = args.get(4).map(|s| s != "nocleanup").unwrap_or(true);
    let construction = match args.get(5).map(|s| s.as_str()) {
        Some("closure") => Construction::Closure,
        Some("hypercube") => Construction::Hypercube,
        _ => Construction::Auto,
    };
    let spec = match which {
        "small" => SynthSpec {
            dims: vec![vec![4, 4], vec![2, 4]],
            density: 0.9,
            mean_freq: 6.0,
            min_freq: 3,
            protection: 0.10,
            seed: 3,
        },
        "mid" => SynthSpec {
            dims: vec![vec![5, 6], vec![4, 5], vec![12]],
            density: 0.9,
            mean_freq: 7.0,
            min_freq: 3,
            protection: 0.10,
            seed: 42,
        },
        "big6" => SynthSpec {
            dims: vec![vec![4, 5], vec![3, 4], vec![12], vec![2, 3], vec![6], vec![4]],
            density: 0.5,
            mean_freq: 12.0,
            min_freq: 3,
            protection: 0.10,
            seed: 13,
        },
        "big5" => SynthSpec {
            dims: vec![vec![5, 8], vec![4, 6], vec![20], vec![3, 4], vec![6]],
            density: 0.35,
            mean_freq: 20.0,
            min_freq: 2,
            protection: 0.10,
            seed: 11,
        },
        _ => SynthSpec {
            dims: vec![vec![3, 4], vec![2, 5], vec![10], vec![4], vec![2, 3], vec![3], vec![2]],
            density: 0.6,
            mean_freq: 8.0,
            min_freq: 3,
            protection: 0.10,
            seed: 7,
        },
    };
    let t0 = Instant::now();
    let t = generate(&spec).unwrap();
    let prim = t.cells().iter().filter(|c| c.status == CellStatus::Primary).count();
    println!(
        "table {which}: {} dims, {} cells, {} primaries, {} relations, built in {:.1}s",
        t.dims().len(),
        t.cells().len(),
        prim,
        t.relations().len(),
        t0.elapsed().as_secs_f64()
    );
    for m in methods.split(',') {
        let method = match m {
            "fast" => Method::Fast,
            "modular" => Method::Modular,
            "tabu" => Method::Tabu,
            "optimal" => Method::Optimal,
            _ => panic!("method {m}"),
        };
        let o = ProtectOptions {
            method,
            seed: 1,
            time_limit_s: limit,
            cleanup,
            construction,
            tabu_iterations: 100_000,
            ..Default::default()
        };
        let t1 = Instant::now();
        match protect(&t, &o) {
            Ok(p) => {
                let relaxed = p.subtables.iter().filter(|s| s.status != SubtableStatus::Solved).count();
                println!(
                    "{m:8} {:7.1}s secondaries {:6} secondary_cost {:12.0} suppressed_share {:.4} audit {:.1}s/{} LPs/{} pairs by witness subtables {} (not solved as is: {relaxed})",
                    t1.elapsed().as_secs_f64(),
                    p.secondaries,
                    p.secondary_cost,
                    p.suppressed_value_share,
                    p.audit.seconds,
                    p.audit.lps_solved,
                    p.audit.witnessed,
                    p.subtables.len()
                );
            }
            Err(e) => println!("{m:8} {:7.1}s ERROR {e}", t1.elapsed().as_secs_f64()),
        }
    }
}
