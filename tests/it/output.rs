//! Where sdcflow may write (issue 13): only over its own previous output, never over or inside
//! an input, never over a file; staging of interrupted or killed runs does not survive them;
//! a run that fails publishes nothing.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;

/// Generated microdata in `dir/data` and a job writing a `geo × sex` table to `out`.
fn setup(dir: &Path, rows: u64, out: &str, method: &str) -> PathBuf {
    let data = dir.join("data");
    generate_data(&data, rows, 4, rows.min(50_000), default_enterprise_size());
    let job = format!(
        "[input]\nmicrodata = \"{}\"\n[[hierarchy]]\nvariable = \"geo\"\nlevels = [2, 2, 2]\n{}[output]\ndir = \"{out}\"\n",
        data.display(),
        salary_table("t", &["geo", "sex"], "NK(1,85)|FREQ(3,10)", &format!("{{ method = \"{method}\", seed = 1 }}"))
    );
    write_job(dir, &job);
    data
}

/// Every file below `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Entries of `dir` whose names contain `sdcflow-` (staging or replaced outputs).
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.contains("sdcflow-") || n.ends_with(".old"))
        .collect()
}

#[test]
fn issue_13_unrelated_directory_is_refused_and_kept() {
    let d = tempfile::tempdir().unwrap();
    setup(d.path(), 2000, "mine", "none");
    std::fs::create_dir_all(d.path().join("mine/sub")).unwrap();
    std::fs::write(d.path().join("mine/thesis.tex"), "years of work").unwrap();
    std::fs::write(d.path().join("mine/sub/data.csv"), "a,b\n1,2\n").unwrap();
    let before = snapshot(&d.path().join("mine"));
    let (code, _, err) = run(&["run", "job.toml"], d.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("output mine") && err.contains("did not write"), "{err}");
    assert_eq!(snapshot(&d.path().join("mine")), before);
    assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
}

#[test]
fn issue_13_output_over_or_inside_an_input_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let data = setup(d.path(), 2000, "out", "none");
    let before = snapshot(&data);
    let job_before = std::fs::read(d.path().join("job.toml")).unwrap();
    let cases = [
        data.display().to_string(),
        format!("{}/../data", data.display()),
        d.path().display().to_string(),
        ".".to_string(),
        data.join("inside").display().to_string(),
        "job.toml".to_string(),
    ];
    for out in cases {
        let (code, _, err) = run(&["run", "job.toml", "--out", &out], d.path());
        assert_eq!(code, 2, "--out {out}: {err}");
        assert!(err.contains("input"), "--out {out}: {err}");
        assert_eq!(snapshot(&data), before, "--out {out} touched the input");
        assert_eq!(std::fs::read(d.path().join("job.toml")).unwrap(), job_before);
    }
    assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
}

#[test]
fn issue_13_output_that_is_a_file_is_refused() {
    let d = tempfile::tempdir().unwrap();
    setup(d.path(), 2000, "out", "none");
    std::fs::write(d.path().join("notes.txt"), "mine").unwrap();
    let (code, _, err) = run(&["run", "job.toml", "--out", "notes.txt"], d.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is a file"), "{err}");
    assert_eq!(std::fs::read_to_string(d.path().join("notes.txt")).unwrap(), "mine");
    assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
}

#[test]
fn issue_13_previous_output_and_empty_directories_are_replaced() {
    let d = tempfile::tempdir().unwrap();
    setup(d.path(), 2000, "out", "none");
    std::fs::create_dir(d.path().join("out")).unwrap();
    let (code, _, err) = run(&["run", "job.toml", "-q"], d.path());
    assert_eq!(code, 0, "{err}");
    let first = snapshot(&d.path().join("out"));
    assert!(d.path().join("out/.sdcflow-output").is_file());
    assert!(d.path().join("out/confidential/t/cells/part-00000.parquet").is_file());
    assert!(d.path().join("out/publish/t/published/part-00000.csv").is_file());
    // Nothing confidential in the folder meant for release.
    let published: Vec<_> = snapshot(&d.path().join("out/publish")).into_iter().map(|(p, _)| p).collect();
    assert!(published.iter().all(|p| p.extension().is_some_and(|e| e == "csv")), "{published:?}");
    let (code, _, err) = run(&["run", "job.toml", "-q"], d.path());
    assert_eq!(code, 0, "{err}");
    let second = snapshot(&d.path().join("out"));
    let names = |s: &[(PathBuf, Vec<u8>)]| s.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
    assert_eq!(names(&first), names(&second));
    assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
}

#[test]
fn issue_13_stale_staging_of_a_killed_run_is_removed() {
    let d = tempfile::tempdir().unwrap();
    setup(d.path(), 2000, "out", "none");
    // What a killed run leaves: a staging directory named for a process that is gone.
    let stale = d.path().join(".out.sdcflow-staging-4194303-1-17");
    std::fs::create_dir_all(stale.join("confidential/t")).unwrap();
    std::fs::write(stale.join(".sdcflow-output"), "").unwrap();
    std::fs::write(stale.join("confidential/t/cells.parquet"), "partial").unwrap();
    // Look-alikes sdcflow did not write are left alone.
    let foreign = d.path().join(".out.sdcflow-staging-4194303-1-18");
    std::fs::create_dir_all(&foreign).unwrap();
    let (code, _, err) = run(&["run", "job.toml", "-q"], d.path());
    assert_eq!(code, 0, "{err}");
    assert!(!stale.exists());
    assert!(foreign.exists());
}

/// Starts a run that takes a while, waits until its staging directory exists, sends `signal`
/// and checks that the run ends with `code`, leaving the previous output as it was and no
/// staging behind.
fn interrupt(signal: &str, code: i32) {
    let d = tempfile::tempdir().unwrap();
    setup(d.path(), 60_000, "out", "fast");
    std::fs::write(d.path().join("small.toml"), std::fs::read_to_string(d.path().join("job.toml")).unwrap()).unwrap();
    let (c, _, err) = run(&["run", "job.toml", "-q"], d.path());
    assert_eq!(c, 0, "{err}");
    let before = snapshot(&d.path().join("out"));
    let mut child = sdcflow()
        .args(["run", "job.toml", "-q"])
        .current_dir(d.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while leftovers(d.path()).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(120), "no staging directory appeared");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it could be interrupted");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    let status = std::process::Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
    assert_eq!(snapshot(&d.path().join("out")), before);
}

#[test]
fn issue_13_sigterm_removes_staging_and_keeps_the_previous_output() {
    interrupt("-TERM", 143);
}

#[test]
fn issue_13_sigint_removes_staging_and_keeps_the_previous_output() {
    interrupt("-INT", 130);
}

#[test]
fn issue_13_failed_protection_publishes_nothing() {
    let d = tempfile::tempdir().unwrap();
    setup(d.path(), 2000, "out", "none");
    let (code, _, err) = run(&["run", "job.toml", "-q"], d.path());
    assert_eq!(code, 0, "{err}");
    let before = snapshot(&d.path().join("out"));
    // A sensitive cell whose partners in its row are all forced published cannot be protected.
    let cells = read_cells(&d.path().join("out/confidential/t/cells/part-00000.parquet"), 2);
    let row = |k: &Vec<String>| {
        cells
            .iter()
            .filter(|(o, _)| o[0] == k[0] && *o != k)
            .map(|(o, c)| (o.clone(), c.status.clone()))
            .collect::<Vec<_>>()
    };
    let (key, _) = cells
        .iter()
        .find(|(k, c)| c.status == "U" && k[1] != "Total" && row(k).iter().all(|(_, s)| s != "U"))
        .expect("a primary whose row partners are not sensitive");
    let mut hst = String::new();
    for (k, _) in row(key) {
        hst.push_str(&format!("{},{},P\n", k[0], k[1]));
    }
    std::fs::write(d.path().join("pub.hst"), hst).unwrap();
    let job = std::fs::read_to_string(d.path().join("job.toml")).unwrap().replace(
        "secondary = { method = \"none\", seed = 1 }",
        "secondary = { method = \"fast\", seed = 1 }\napriori = \"pub.hst\"",
    );
    std::fs::write(d.path().join("job.toml"), job).unwrap();
    let (code, _, err) = run(&["run", "job.toml", "-q"], d.path());
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("protection"), "{err}");
    assert_eq!(snapshot(&d.path().join("out")), before);
    assert!(leftovers(d.path()).is_empty(), "{:?}", leftovers(d.path()));
}

/// Issue 13 item 10: what a run and `sdcflow audit` print (the logs of the cluster's pods) holds
/// no cell value: none of the suppressed cells' values, the confidential ones, appears in either
/// stream, written with 2 decimals as `published.csv` would, or as sdcflow's float formatting.
#[test]
fn issue_13_logs_hold_no_cell_values() {
    let d = tempfile::tempdir().unwrap();
    setup(d.path(), 20_000, "out", "modular");
    let (code, out, err) = run(&["run", "job.toml"], d.path());
    assert_eq!(code, 0, "{out}{err}");
    let cells = read_cells(&d.path().join("out/confidential/t/cells.parquet"), 2);
    let (acode, aout, aerr) = run(&["audit", "out/confidential/t/cells.parquet", "--job", "job.toml"], d.path());
    assert_eq!(acode, 0, "{aout}{aerr}");
    let logs = format!("{out}{err}{aerr}");
    let suppressed: Vec<f64> = cells.values().filter(|c| c.status == "U" || c.status == "M").map(|c| c.value).collect();
    assert!(suppressed.len() > 5, "the table must have suppressed cells: {}", suppressed.len());
    for v in suppressed {
        for text in [format!("{v:.2}"), format!("{v}")] {
            // Short numbers (a few digits) occur in any log by chance: check distinctive ones.
            if text.len() >= 6 {
                assert!(!logs.contains(&text), "a suppressed value {text} is in the logs:\n{logs}");
            }
        }
    }
}
