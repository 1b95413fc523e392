//! Microaggregation jobs end to end: masked.parquet in input order, k-anonymous, with the
//! report's figures; the CASC reference data where available.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::common::*;

/// `../shared/data` next to the repository, when present.
fn shared_data(file: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data").join(file);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("SKIPPED: {} not found (the CASC / Adult data live in ../shared/data)", p.display());
        None
    }
}

const CENSUS_VARS: &str = r#"["AFNLWGT","AGI","EMCONTRB","FEDTAX","PTOTVAL","STATETAX","TAXINC","POTHVAL","INTVAL","PEARNVAL","FICA","WSALVAL","ERNVAL"]"#;

#[test]
fn census_mdav_reproduces_the_reference_sse_through_a_job() {
    let Some(census) = shared_data("casc_census.csv") else { return };
    let d = tempfile::tempdir().unwrap();
    let job = format!(
        "[input]\nmicrodata = \"{}\"\n[[microaggregation]]\nname = \"census\"\nvariables = {CENSUS_VARS}\nk = 3\nmethod = \"mdav\"\n[output]\ndir = \"out\"\n",
        census.display()
    );
    write_job(d.path(), &job);
    let (code, out, err) = run(&["run", "job.toml"], d.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("microaggregation census: 1080 rows, k = 3, SSE 799.18"), "{out}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("out/report.json")).unwrap()).unwrap();
    let m = &report["microaggregations"][0];
    assert!((m["sse"].as_f64().unwrap() - 799.18).abs() < 0.01, "{m}");
    assert!((m["information_loss_percent"].as_f64().unwrap() - 5.69).abs() < 0.01, "{m}");
    // Masked rows: same count, other columns untouched, every vector ≥ 3 times.
    let masked = read_parquet(&d.path().join("out/publish/census/masked.parquet"));
    let agi = floats(&masked, "AGI");
    assert_eq!(agi.len(), 1080);
    let mut counts: HashMap<Vec<u64>, usize> = HashMap::new();
    let cols: Vec<Vec<f64>> = ["AFNLWGT", "AGI", "FICA"].iter().map(|c| floats(&masked, c)).collect();
    for r in 0..agi.len() {
        *counts.entry(cols.iter().map(|c| c[r].to_bits()).collect()).or_default() += 1;
    }
    assert!(counts.values().all(|&n| n >= 3));
}

#[test]
fn two_step_keeps_input_order_and_strata_on_generated_parts() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    // Several parts: input order is part order, then row order.
    generate_data(&data, 900, 2, 250, 10.0);
    let job = format!(
        "[input]\nmicrodata = \"{}\"\n[[microaggregation]]\nname = \"people\"\nvariables = [\"salary\", \"w\"]\nk = 4\nstrata = [\"sex\"]\n[output]\ndir = \"out\"\n",
        data.display()
    );
    write_job(d.path(), &job);
    let (code, _, err) = run(&["run", "job.toml", "-q"], d.path());
    assert_eq!(code, 0, "{err}");
    let masked = read_parquet(&d.path().join("out/publish/people/masked.parquet"));
    let ids: Vec<f64> = floats(&masked, "person_id");
    assert_eq!(ids, (0..900).map(|i| i as f64).collect::<Vec<_>>(), "rows must stay in input order");
    let sex = strings(&masked, "sex");
    let sal = floats(&masked, "salary");
    let w = floats(&masked, "w");
    let mut counts: HashMap<(String, u64, u64), usize> = HashMap::new();
    for i in 0..sal.len() {
        *counts.entry((sex[i].clone(), sal[i].to_bits(), w[i].to_bits())).or_default() += 1;
    }
    assert!(counts.values().all(|&n| n >= 4), "every masked vector occurs ≥ k times within its stratum");
    // The same job again gives the same bytes.
    let (code, _, _) = run(&["run", "job.toml", "-q", "--out", "again"], d.path());
    assert_eq!(code, 0);
    assert_eq!(
        std::fs::read(d.path().join("out/publish/people/masked.parquet")).unwrap(),
        std::fs::read(d.path().join("again/publish/people/masked.parquet")).unwrap()
    );
}

#[test]
fn microaggregation_bad_input() {
    let d = tempfile::tempdir().unwrap();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    write_parquet(
        &d.path().join("m.parquet"),
        vec![Col::Str("name", s(&["a", "b", "c", "d"])), Col::F64("x", vec![1.0, 2.0, 3.0, 4.0])],
    );
    for (extra, want) in [
        ("variables = [\"name\"]\nk = 2", "must be numeric"),
        ("variables = [\"x\"]\nk = 5", "k = 5"),
        ("variables = [\"x\"]\nk = 1", "at least 2"),
        ("variables = [\"y\"]\nk = 2", "\"y\" not found"),
        ("variables = [\"x\"]\nk = 2\nmethod = \"mdv\"", "did you mean \"mdav\""),
    ] {
        let job = format!("[input]\nmicrodata = \"m.parquet\"\n[[microaggregation]]\nname = \"m\"\n{extra}\n[output]\ndir = \"out\"\n");
        write_job(d.path(), &job);
        let (code, _, err) = run(&["run", "job.toml"], d.path());
        assert_eq!(code, 2, "{extra}: {err}");
        assert!(err.contains(want), "{extra}: expected {want:?} in {err}");
        assert!(!d.path().join("out").exists());
    }
}

#[test]
fn nominal_two_step_is_k_anonymous_without_new_combinations() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    generate_data(&data, 400, 4, 400, 10.0);
    let job = format!(
        "[input]\nmicrodata = \"{}\"\n[[microaggregation]]\nname = \"cat\"\nkind = \"nominal\"\nvariables = [\"sex\", \"age_band\", \"contract\", \"size_class\"]\nk = 3\n[output]\ndir = \"out\"\n",
        data.display()
    );
    write_job(d.path(), &job);
    let (code, _, err) = run(&["run", "job.toml", "-q"], d.path());
    assert_eq!(code, 0, "{err}");
    let vars = ["sex", "age_band", "contract", "size_class"];
    let mut original_batches = Vec::new();
    for e in std::fs::read_dir(&data).unwrap() {
        original_batches.extend(read_parquet(&e.unwrap().path()));
    }
    let orig: Vec<Vec<String>> = vars.iter().map(|v| strings(&original_batches, v)).collect();
    let masked = read_parquet(&d.path().join("out/publish/cat/masked.parquet"));
    let new: Vec<Vec<String>> = vars.iter().map(|v| strings(&masked, v)).collect();
    let rows = |cols: &Vec<Vec<String>>| -> Vec<Vec<String>> {
        (0..cols[0].len()).map(|r| cols.iter().map(|c| c[r].clone()).collect()).collect()
    };
    let (orig_rows, new_rows) = (rows(&orig), rows(&new));
    assert_eq!(new_rows.len(), 400);
    let existing: std::collections::HashSet<&Vec<String>> = orig_rows.iter().collect();
    let mut counts: HashMap<&Vec<String>, usize> = HashMap::new();
    for r in &new_rows {
        assert!(existing.contains(r), "new combination {r:?}");
        *counts.entry(r).or_default() += 1;
    }
    assert!(counts.values().all(|&n| n >= 3));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("out/report.json")).unwrap()).unwrap();
    assert_eq!(report["microaggregations"][0]["kind"], "nominal");
}

#[test]
fn one_line_microaggregate_matches_the_job() {
    let Some(census) = shared_data("casc_census.csv") else { return };
    let d = tempfile::tempdir().unwrap();
    let vars = "AFNLWGT,AGI,EMCONTRB,FEDTAX,PTOTVAL,STATETAX,TAXINC,POTHVAL,INTVAL,PEARNVAL,FICA,WSALVAL,ERNVAL";
    let (code, out, err) = run(
        &[
            "microaggregate",
            census.to_str().unwrap(),
            "--variables",
            vars,
            "--k",
            "3",
            "--method",
            "mdav",
            "--name",
            "census",
            "--out",
            "one",
        ],
        d.path(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("SSE 799.18"), "{out}");
    let (code, _, err) =
        run(&["microaggregate", census.to_str().unwrap(), "--variables", "AGI", "--k", "1", "--out", "bad"], d.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("at least 2"), "{err}");
}
