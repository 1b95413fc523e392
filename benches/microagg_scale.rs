//! Scale run: `cargo bench --profile bench-release --bench microagg_scale -- N K ROUNDS GA(0/1) CG(0/1) IMPROVE_PASSES`.
use sdcflow::microagg::{microaggregate, MicroaggParams, NumericData};
use sdcflow::rng::Rng;
use std::time::Instant;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let arg = |i: usize, d: usize| a.get(i).map_or(d, |s| s.parse().unwrap());
    let (n, k, rounds, ga, cg, passes) = (arg(1, 1_000_000), arg(2, 5), arg(3, 1), arg(4, 0), arg(5, 1), arg(6, 30));
    let d = 5;
    let mut rng = Rng::new(42);
    // mixture of 50 Gaussian clusters with different spreads, plus a skewed variable
    let centres: Vec<f64> = (0..50 * d).map(|_| rng.normal() * 4.0).collect();
    let mut values = Vec::with_capacity(n * d);
    for _ in 0..n {
        let c = rng.index(50);
        let s = 0.3 + (c % 5) as f64 * 0.3;
        for j in 0..d {
            let v = centres[c * d + j] + rng.normal() * s;
            values.push(if j == d - 1 { v.exp() } else { v });
        }
    }
    let data = NumericData::new(n, d, values);
    let mut p = MicroaggParams { k, exact_bound_max_records: 0, ..MicroaggParams::default() };
    p.two_step.rounds = rounds;
    if ga == 0 {
        p.two_step.genetic = None;
    }
    if cg == 0 {
        p.two_step.column_generation = None;
    }
    p.two_step.improve_passes = passes;
    let t = Instant::now();
    let r = microaggregate(&data, &p).unwrap();
    println!(
        "n={n} d={d} k={k} rounds={rounds} ga={ga} cg={cg} passes={passes} threads={}: SSE {:.1} step1(MDAV in macro-groups) {:.1} ({:+.2} %) IL {:.3} % groups {} opt_groups {:?} wall {:.1}s {:?}",
        rayon::current_num_threads(), r.sse, r.step1_sse.unwrap(), 100.0 * (r.sse / r.step1_sse.unwrap() - 1.0), r.information_loss, r.n_groups, r.optimisation_groups, t.elapsed().as_secs_f64(), r.timings
    );
}
