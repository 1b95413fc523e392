//! Measures MDAV / V-MDAV / two-step on the CASC files: `cargo bench --profile bench-release --bench microagg_casc -- census 3 two-step` (reads ../shared/data).
use sdcflow::microagg::{microaggregate, Method, MicroaggParams, NumericData};
use std::time::Instant;

fn load(name: &str) -> NumericData {
    let path = format!("../shared/data/casc_{name}.csv");
    let text = std::fs::read_to_string(&path).expect("read csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let wanted: Vec<usize> = if name == "eia" {
        let cols = [
            "UTILITYID",
            "RESREVENUE",
            "RESSALES",
            "COMREVENUE",
            "COMSALES",
            "INDREVENUE",
            "INDSALES",
            "OTHREVENUE",
            "OTHRSALES",
            "TOTREVENUE",
            "TOTSALES",
        ];
        cols.iter().map(|c| header.iter().position(|h| h == c).unwrap()).collect()
    } else {
        (0..header.len()).collect()
    };
    let mut values = Vec::new();
    let mut rows = 0;
    for l in lines {
        if l.trim().is_empty() {
            continue;
        }
        // EIA has a quoted-free name column without commas? split naive
        let f: Vec<&str> = l.split(',').collect();
        let off = f.len() - header.len();
        for &j in &wanted {
            let jj = if j >= 2 { j + off } else { j };
            values.push(f[jj].trim().parse::<f64>().expect("number"));
        }
        rows += 1;
    }
    NumericData::new(rows, wanted.len(), values)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map(String::as_str).unwrap_or("census");
    let k: usize = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(3);
    let method = match args.get(3).map(String::as_str).unwrap_or("mdav") {
        "mdav" => Method::Mdav,
        "vmdav" => Method::Vmdav,
        _ => Method::TwoStep,
    };
    let data = load(name);
    let mut params = MicroaggParams { k, method, exact_bound_max_records: 0, ..MicroaggParams::default() };
    if let Some(r) = args.get(4) {
        params.two_step.rounds = r.parse().unwrap();
    }
    if let Some(r) = args.get(5) {
        params.two_step.optimisation_group_records = r.parse().unwrap();
    }
    if let Some(r) = args.get(6) {
        params.two_step.macro_group_max = r.parse().unwrap();
    }
    let t = Instant::now();
    let r = microaggregate(&data, &params).unwrap();
    println!(
        "{name} n={} d={} k={k} {:?}: SSE {:.2} SST {:.1} IL {:.3} % step1 {:?} groups {} sizes {:?} opt_groups {:?} restricted_bound {:?} time {:.2}s timings {:?} warnings {}",
        data.rows, data.cols, method, r.sse, r.sst, r.information_loss, r.step1_sse.map(|v| (v * 100.0).round() / 100.0), r.n_groups, r.group_sizes, r.optimisation_groups, r.restricted_bound, t.elapsed().as_secs_f64(), r.timings, r.warnings.len()
    );
}
