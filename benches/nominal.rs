//! Benchmarks for nominal microaggregation.
//! Usage: `cargo bench --profile bench-release --bench nominal -- adult <k> [dim] [methods]`, or: bench adult <k> [dim] | bench synth <rows> <share> <k> [seed] [methods]
use std::time::Instant;

use sdcflow::microagg::nominal::synth::{generate, SyntheticSpec};
use sdcflow::microagg::nominal::*;

fn adult() -> NominalData {
    let text = std::fs::read_to_string("../shared/data/adult/adult.csv").expect("adult.csv");
    adult_from_csv(&text).expect("adult.csv has 9 columns per row")
}

fn show(label: &str, r: &NominalResult) {
    let rep = &r.report;
    println!(
        "{label}: method={} exact={:?} control_chi2={:.2} weight={} clusters={} blocks={} new_comb_rows={} times(ms) part={:.0} aggr={:.0} verify={:.0} report={:.0}",
        rep.method,
        rep.exact_status,
        rep.control_chi2,
        rep.clustering_weight,
        rep.n_clusters,
        rep.n_blocks,
        rep.verify.new_combination_rows,
        rep.timings.partition_ms,
        rep.timings.aggregate_ms,
        rep.timings.verify_ms,
        rep.timings.report_ms
    );
    println!("  dim | ctrl chi2 | ctrl maxabs | ctrl maxrel | all chi2 | all maxabs | all maxrel | tables | new cells");
    for d in &rep.per_dimension {
        println!(
            "  {} | {:.2} | {} | {:.3} | {:.2} | {} | {:.3} | {} | {}",
            d.dim,
            d.control.chi2,
            d.control.max_abs,
            d.control.max_rel,
            d.all.chi2,
            d.all.max_abs,
            d.all.max_rel,
            d.all.tables,
            d.all.new_cells
        );
    }
}

fn run(data: &NominalData, mut params: NominalParams, methods: &[RepresentativeMethod]) {
    if let Ok(b) = std::env::var("BLOCK") {
        params.options.max_block_units = b.parse().unwrap();
    }
    if let Ok(c) = std::env::var("CLUSTERING") {
        params.options.clustering = match c.as_str() {
            "greedy" => ClusteringMethod::Greedy,
            "local" => ClusteringMethod::LocalSearch,
            _ => ClusteringMethod::ColumnGeneration,
        };
    }
    if let Ok(b) = std::env::var("COLGEN_ROWS") {
        params.options.colgen_max_rows = b.parse().unwrap();
    }
    let t = Instant::now();
    let part = partition(data, &params).unwrap();
    println!(
        "partition: {:.1} s, weight {}, clusters {}, blocks {}, colgen rows {}, colgen LP {:?}",
        t.elapsed().as_secs_f64(),
        part.weight,
        part.clusters.len(),
        part.n_blocks,
        part.colgen_rows,
        part.colgen_lp_value
    );
    for &m in methods {
        params.options.representatives = m;
        let t = Instant::now();
        let r = aggregate(data, &part, &params).unwrap();
        show(&format!("{m:?} ({:.1} s)", t.elapsed().as_secs_f64()), &r);
    }
}

fn parse_method(s: &str) -> RepresentativeMethod {
    match s {
        "greedy" => RepresentativeMethod::Greedy,
        "clique" => RepresentativeMethod::Clique,
        "exact" => RepresentativeMethod::Exact,
        "auto" => RepresentativeMethod::Auto,
        "mode" => RepresentativeMethod::ClusterMode,
        "random" => RepresentativeMethod::RandomMember,
        _ => panic!("method {s}"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let default_methods = "auto,mode,random".to_string();
    match args[1].as_str() {
        "adult" => {
            let k: usize = args[2].parse().unwrap();
            let dim: usize = args.get(3).map_or(2, |s| s.parse().unwrap());
            let methods: Vec<RepresentativeMethod> =
                args.get(4).unwrap_or(&default_methods).split(',').map(parse_method).collect();
            let t = Instant::now();
            let data = adult();
            println!("adult loaded: {} rows in {:.2} s", data.n_rows(), t.elapsed().as_secs_f64());
            let mut p = NominalParams::new(k);
            p.control = ControlTables::UpToDimension(dim);
            if let Some(c) = args.get(5) {
                p.options.clustering = match c.as_str() {
                    "greedy" => ClusteringMethod::Greedy,
                    "local" => ClusteringMethod::LocalSearch,
                    _ => ClusteringMethod::ColumnGeneration,
                };
            }
            run(&data, p, &methods);
        }
        "synth" => {
            let rows: usize = args[2].parse().unwrap();
            let share: f64 = args[3].parse().unwrap();
            let k: usize = args[4].parse().unwrap();
            let seed: u64 = args.get(5).map_or(1, |s| s.parse().unwrap());
            let methods: Vec<RepresentativeMethod> =
                args.get(6).unwrap_or(&default_methods).split(',').map(parse_method).collect();
            let dim: usize = args.get(7).map_or(3, |s| s.parse().unwrap());
            let mut spec = SyntheticSpec::thesis(share);
            spec.rows = rows;
            spec.k = k;
            if rows > 200 {
                // Scale the value space so that new records remain easy to draw (≥ 4 n).
                let mut f = 1u32;
                while spec.cardinalities.iter().map(|&c| (c * f) as f64).product::<f64>() < 4.0 * rows as f64 {
                    f += 1;
                }
                spec.cardinalities = spec.cardinalities.iter().map(|&c| c * f).collect();
            }
            let t = Instant::now();
            let data = generate(&spec, seed).unwrap();
            println!("synthetic {:?} generated in {:.2} s", spec, t.elapsed().as_secs_f64());
            let mut p = NominalParams::new(k);
            p.control = ControlTables::UpToDimension(dim);
            p.seed = seed;
            run(&data, p, &methods);
        }
        "thesis" => {
            // Averages over seeds of the thesis scenarios 200m5_{2,20,100}percent, k = 3,
            // control tables = all tables up to dimension 3 (as in thesis §6.2.5).
            let seeds: u64 = args.get(2).map_or(10, |s| s.parse().unwrap());
            let methods = [
                RepresentativeMethod::Greedy,
                RepresentativeMethod::Clique,
                RepresentativeMethod::Exact,
                RepresentativeMethod::ClusterMode,
                RepresentativeMethod::RandomMember,
            ];
            for share in [0.02, 0.2, 1.0] {
                let mut w = 0.0;
                let mut lpv = 0.0;
                let mut tp = 0.0;
                let mut acc: Vec<(f64, f64, f64, f64, f64, usize)> = vec![(0.0, 0.0, 0.0, 0.0, 0.0, 0); methods.len()];
                for seed in 1..=seeds {
                    let data = generate(&SyntheticSpec::thesis(share), seed).unwrap();
                    let mut p = NominalParams::new(3);
                    p.control = ControlTables::UpToDimension(3);
                    p.seed = seed;
                    p.options.exact_time_limit_s = Some(60.0);
                    let part = partition(&data, &p).unwrap();
                    w += part.weight as f64;
                    lpv += part.colgen_lp_value.unwrap_or(f64::NAN);
                    tp += part.millis / 1e3;
                    for (i, &m) in methods.iter().enumerate() {
                        p.options.representatives = m;
                        let r = aggregate(&data, &part, &p).unwrap();
                        let all: f64 = r.report.per_dimension.iter().map(|d| d.all.chi2).sum();
                        let d1 = r.report.per_dimension[0].all.max_abs;
                        acc[i].0 += r.report.control_chi2;
                        acc[i].1 += all;
                        acc[i].2 += d1;
                        acc[i].3 += r.report.timings.aggregate_ms / 1e3;
                        acc[i].4 += r.report.verify.new_combination_rows as f64;
                        acc[i].5 += usize::from(r.report.exact_status == ExactStatus::Optimal);
                    }
                }
                let s = seeds as f64;
                println!(
                    "200m5 p={share}: mean weight {:.1}, mean LP {:.1}, mean partition time {:.2} s",
                    w / s,
                    lpv / s,
                    tp / s
                );
                for (i, m) in methods.iter().enumerate() {
                    let a = &acc[i];
                    println!(
                        "  {m:?}: control chi2 {:.1} | all-tables chi2 {:.1} | max abs err dim1 {:.1} | time {:.2} s | new-comb rows {:.1} | exact optimal {}/{}",
                        a.0 / s, a.1 / s, a.2 / s, a.3 / s, a.4 / s, a.5, seeds
                    );
                }
            }
        }
        _ => panic!("usage"),
    }
}
