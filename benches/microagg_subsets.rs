//! Column generation on CASC subsets (the column-generation paper's experiment):
//! `cargo bench --profile bench-release --bench microagg_subsets -- census 3 "30 40 50 100" 2`.
use sdcflow::microagg::colgen::{column_generation, ColGenParams};
use sdcflow::microagg::mdav::mdav;
use sdcflow::microagg::standardise::{standardise, Standardisation};
use sdcflow::microagg::vmdav::vmdav;
use sdcflow::microagg::PointSet;
use sdcflow::rng::Rng;
use std::time::Instant;

fn load(name: &str) -> (usize, usize, Vec<f64>) {
    let text = std::fs::read_to_string(format!("../shared/data/casc_{name}.csv")).unwrap();
    let mut lines = text.lines();
    let cols = lines.next().unwrap().split(',').count();
    let mut v = Vec::new();
    let mut rows = 0;
    for l in lines.filter(|l| !l.trim().is_empty()) {
        v.extend(l.split(',').map(|f| f.trim().parse::<f64>().unwrap()));
        rows += 1;
    }
    (rows, cols, v)
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let name = a[1].as_str();
    let k: usize = a[2].parse().unwrap();
    let sizes: Vec<usize> = a[3].split_whitespace().map(|s| s.parse().unwrap()).collect();
    let reps: usize = a[4].parse().unwrap();
    let (rows, cols, values) = load(name);
    let (zall, _) = standardise(&values, rows, cols, Standardisation::ZScore);
    let mut by_norm: Vec<usize> = (0..rows).collect();
    let norm = |i: usize| zall[i * cols..(i + 1) * cols].iter().map(|x| x * x).sum::<f64>();
    by_norm.sort_by(|&x, &y| norm(x).total_cmp(&norm(y)).then(x.cmp(&y)));
    println!("| n | k | type | MDAV gap % | V-MDAV gap % | CG gap % | exact | iters | time s |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for &n in &sizes {
        for kind in ["cons", "rand", "L2n"] {
            let (mut gm, mut gv, mut gc, mut t_all, mut bounded, mut exact, mut it) = (0.0, 0.0, 0.0, 0.0, 0, 0, 0);
            for rep in 0..reps {
                let mut rng = Rng::for_stream(7, (n * 100 + rep) as u64);
                let start = rng.index(rows - n);
                let idx: Vec<usize> = match kind {
                    "cons" => (start..start + n).collect(),
                    "rand" => {
                        let mut all: Vec<usize> = (0..rows).collect();
                        rng.shuffle(&mut all);
                        all.truncate(n);
                        all
                    }
                    _ => by_norm[start..start + n].to_vec(),
                };
                let sub: Vec<f64> = idx.iter().flat_map(|&i| values[i * cols..(i + 1) * cols].to_vec()).collect();
                let (z, _) = standardise(&sub, n, cols, Standardisation::ZScore);
                let p = PointSet::new(cols, &z, None);
                let (m, v) = (mdav(&p, k), vmdav(&p, k, 0.2));
                let (sm, sv) = (p.partition_sse(&m), p.partition_sse(&v));
                let t = Instant::now();
                let budget: u64 = a.get(5).map_or(30_000_000, |s| s.parse().unwrap());
                let params = ColGenParams { node_limit: 20_000_000, node_budget: budget, ..ColGenParams::default() };
                let out = column_generation(&p, k, &[m, v], &params).unwrap();
                t_all += t.elapsed().as_secs_f64();
                it += out.iterations;
                if let Some(lb) = out.lower_bound {
                    bounded += 1;
                    gm += 100.0 * (sm - lb) / sm;
                    gv += 100.0 * (sv - lb) / sv;
                    gc += 100.0 * (out.sse - lb) / out.sse;
                    if out.sse - lb < 1e-6 * out.sse {
                        exact += 1;
                    }
                }
            }
            let b = bounded.max(1) as f64;
            println!(
                "| {n} | {k} | {kind} | {:.1} | {:.1} | {:.2} | {exact}/{bounded} bounded of {reps} | {} | {:.2} |",
                gm / b,
                gv / b,
                gc / b,
                it / reps,
                t_all / reps as f64
            );
        }
    }
}
