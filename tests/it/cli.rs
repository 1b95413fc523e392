//! The command line: the one-line `protect` form, SQL sources and preludes, the report, and a
//! clear error for an unreachable cluster.

use std::time::{Duration, Instant};

use crate::common::*;

fn small_data(dir: &std::path::Path) -> std::path::PathBuf {
    let data = dir.join("data");
    generate_data(&data, 1500, 11, 1500, 10.0);
    data
}

#[test]
fn protect_one_liner_matches_the_job_file() {
    let d = tempfile::tempdir().unwrap();
    let data = small_data(d.path());
    let (code, out, err) = run(
        &[
            "protect",
            data.to_str().unwrap(),
            "--tables",
            "geo,sex",
            "--response",
            "salary",
            "--contributor",
            "ent_id",
            "--safety",
            "NK(1,85)|FREQ(3,10)",
            "--hierarchy",
            "geo=levels:2,2,2",
            "--out",
            "one",
        ],
        d.path(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("table geo_sex:") && out.contains("output written to one"), "{out}");
    // Both defaults (no --secondary, no `secondary`) are `auto`: protected, the choice reported.
    let job = format!(
        "[input]\nmicrodata = \"{}\"\n[[hierarchy]]\nvariable = \"geo\"\nlevels = [2, 2, 2]\n[[table]]\nname = \"geo_sex\"\nexplanatory = [\"geo\", \"sex\"]\nresponse = \"salary\"\ncontributor = \"ent_id\"\nsafety = \"NK(1,85)|FREQ(3,10)\"\n[output]\ndir = \"two\"\n",
        data.display()
    );
    write_job(d.path(), &job);
    let (code, _, err) = run(&["run", "job.toml", "-q"], d.path());
    assert_eq!(code, 0, "{err}");
    let a = std::fs::read(d.path().join("one/confidential/geo_sex/cells.parquet")).unwrap();
    let b = std::fs::read(d.path().join("two/confidential/geo_sex/cells.parquet")).unwrap();
    assert_eq!(a, b);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("one/report.json")).unwrap()).unwrap();
    let t = &report["tables"][0];
    assert_eq!(t["protected_against_recalculation"], true, "{t}");
    let cells = t["cells"].as_u64().unwrap() as usize;
    let primaries = t["primaries"].as_u64().unwrap() as usize;
    let chosen = sdcflow::job::SecondaryMethod::solver_name(sdcflow::protect::auto_method(cells, primaries, true));
    assert_eq!(t["method"], format!("auto ({chosen})"), "{t}");
    assert!(t["secondaries"].as_u64().unwrap() > 0, "{t}");
    // A malformed --hierarchy is bad input.
    let (code, _, err) = run(
        &[
            "protect",
            data.to_str().unwrap(),
            "--tables",
            "geo",
            "--safety",
            "FREQ(3,10)",
            "--hierarchy",
            "geo=lvls:2",
            "--out",
            "x",
        ],
        d.path(),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("VAR=levels:W,W"), "{err}");
}

#[test]
fn preludes_sql_sources_and_report() {
    let d = tempfile::tempdir().unwrap();
    let data = small_data(d.path());
    std::fs::write(
        d.path().join("prep.sql"),
        "CREATE VIEW emp AS SELECT *, substr(geo, 1, 2) AS region FROM microdata;\n",
    )
    .unwrap();
    std::fs::write(d.path().join("women.sql"), "SELECT * FROM emp WHERE sex = '2'").unwrap();
    let job = format!(
        r#"
[input]
microdata = "{data}"
sql = ["prep.sql"]
[[table]]
name = "all"
explanatory = ["region"]
safety = "FREQ(3,10)"
secondary = {{ method = "none" }}
[[table]]
name = "women"
explanatory = ["region"]
source = "women.sql"
safety = "FREQ(3,10)"
secondary = {{ method = "none" }}
[output]
dir = "out"
"#,
        data = data.display()
    );
    write_job(d.path(), &job);
    let (code, _, err) = run(&["run", "job.toml"], d.path());
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("NOT protected against recalculation"), "{err}");
    let all = read_cells(&d.path().join("out/confidential/all/cells/part-00000.parquet"), 1);
    let women = read_cells(&d.path().join("out/confidential/women/cells/part-00000.parquet"), 1);
    let total = |m: &std::collections::BTreeMap<Vec<String>, OutCell>| m[&vec!["Total".to_string()]].value;
    assert_eq!(total(&all), 1500.0);
    assert!(total(&women) > 500.0 && total(&women) < 1000.0);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.path().join("out/report.json")).unwrap()).unwrap();
    let t = &report["tables"][0];
    assert_eq!(t["name"], "all");
    assert_eq!(t["protected_against_recalculation"], false);
    assert_eq!(t["cells"].as_u64().unwrap() as usize, all.len());
    let primaries = all.values().filter(|c| c.status == "U").count();
    assert_eq!(t["primaries"].as_u64().unwrap() as usize, primaries);
    assert_eq!(report["warnings"].as_array().unwrap().len(), 2);
}

#[test]
fn unreachable_cluster_fails_fast() {
    let d = tempfile::tempdir().unwrap();
    let data = small_data(d.path());
    let job = format!(
        "[input]\nmicrodata = \"{}\"\n[[table]]\nname = \"t\"\nexplanatory = [\"sex\"]\nsafety = \"FREQ(3,10)\"\nsecondary = {{ method = \"none\" }}\n[output]\ndir = \"out\"\n",
        data.display()
    );
    write_job(d.path(), &job);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let start = Instant::now();
    let (code, _, err) = run(&["run", "job.toml", "--cluster", &format!("df://127.0.0.1:{port}")], d.path());
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("unreachable"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(20));
    assert!(!d.path().join("out").exists());
}

/// Issue 13: `-q` prints nothing on success (no progress, no summary), and the outputs are
/// byte-identical to those of a run that prints every progress line.
#[test]
fn issue_13_quiet_run_is_silent_with_identical_outputs() {
    let d = tempfile::tempdir().unwrap();
    let data = small_data(d.path());
    write_job(
        d.path(),
        &format!(
            "[input]\nmicrodata = \"{}\"\n[[hierarchy]]\nvariable = \"geo\"\nlevels = [2, 2, 2]\n{}[output]\ndir = \"unused\"\n",
            data.display(),
            salary_table("t", &["geo", "sex"], "NK(1,85)|FREQ(3,10)", "{ method = \"fast\", seed = 1 }")
        ),
    );
    // Files of a run's output, by path below it (report.json holds timings, so not compared).
    let files = |out: &str| -> Vec<(String, Vec<u8>)> {
        let mut v = Vec::new();
        for part in ["confidential", "publish"] {
            let mut stack = vec![d.path().join(out).join(part)];
            while let Some(dir) = stack.pop() {
                for e in std::fs::read_dir(&dir).unwrap() {
                    let p = e.unwrap().path();
                    if p.is_dir() {
                        stack.push(p);
                    } else {
                        let rel = p.strip_prefix(d.path().join(out)).unwrap().display().to_string();
                        v.push((rel, std::fs::read(&p).unwrap()));
                    }
                }
            }
        }
        v.sort();
        v
    };
    let loud = sdcflow()
        .args(["run", "job.toml", "--out", "loud"])
        .env("SDCFLOW_PROGRESS_INTERVAL_S", "0")
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(loud.status.success(), "{}", String::from_utf8_lossy(&loud.stderr));
    assert!(!loud.stderr.is_empty() && !loud.stdout.is_empty(), "the progress run prints");
    let quiet = sdcflow()
        .args(["run", "job.toml", "--out", "quiet", "-q"])
        .env("SDCFLOW_PROGRESS_INTERVAL_S", "0")
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(quiet.status.success(), "{}", String::from_utf8_lossy(&quiet.stderr));
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "", "-q prints nothing on stderr");
    assert_eq!(String::from_utf8_lossy(&quiet.stdout), "", "-q prints nothing on stdout");
    let (a, b) = (files("loud"), files("quiet"));
    assert!(a.len() >= 2, "{:?}", a.iter().map(|f| &f.0).collect::<Vec<_>>());
    assert!(a == b, "-q changed the outputs");
}
