//! A-priori files (tau-Argus `.hst`) in job files, and `sdcflow audit` of written tables.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, Float64Array, RecordBatch, StringArray};
use arrow::datatypes::Float64Type;
use parquet::arrow::ArrowWriter;

use crate::common::*;

/// Generated microdata (5000 rows, seed 9) and a view with a 4-character `dept` code for the
/// three first regions. Returns the data directory.
pub fn setup(dir: &Path) -> PathBuf {
    let data = dir.join("data");
    generate_data(&data, 5000, 9, 5000, default_enterprise_size());
    std::fs::write(
        dir.join("prep.sql"),
        "CREATE VIEW v AS SELECT *, substr(geo, 1, 4) AS dept FROM microdata WHERE substr(geo, 1, 2) IN ('01', '02', '03');",
    )
    .unwrap();
    data
}

/// A `dept × sex` table job; `extra` goes into the `[[table]]` section.
fn job(data: &Path, out: &str, extra: &str) -> String {
    format!(
        "{}{}{extra}\n[output]\ndir = \"{out}\"\n",
        dept_job_head(data),
        salary_table(
            "t",
            &["dept", "sex"],
            "NK(1,85)|FREQ(3,10)",
            r#"{ method = "fast", seed = 3, time_limit_s = 120 }"#
        )
    )
}

fn key(a: &str, b: &str) -> Vec<String> {
    vec![a.to_string(), b.to_string()]
}

/// Copies `src` to `dst`, letting `edit(codes, status, lpl, upl)` change each cell.
pub fn rewrite_cells(src: &Path, dst: &Path, dims: usize, edit: impl Fn(&[String], &mut String, &mut f64, &mut f64)) {
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    let batches = read_parquet(src);
    let f = std::fs::File::create(dst).unwrap();
    let mut w = ArrowWriter::try_new(f, batches[0].schema(), None).unwrap();
    for b in batches {
        let s = b.schema();
        let idx = |n: &str| s.index_of(n).unwrap();
        let (si, li, ui) = (idx("status"), idx("lpl"), idx("upl"));
        let mut status: Vec<String> = b.column(si).as_string::<i32>().iter().map(|v| v.unwrap().to_string()).collect();
        let mut lpl: Vec<f64> = b.column(li).as_primitive::<Float64Type>().values().to_vec();
        let mut upl: Vec<f64> = b.column(ui).as_primitive::<Float64Type>().values().to_vec();
        for r in 0..b.num_rows() {
            let codes: Vec<String> = (0..dims).map(|d| b.column(d).as_string::<i32>().value(r).to_string()).collect();
            edit(&codes, &mut status[r], &mut lpl[r], &mut upl[r]);
        }
        let mut cols: Vec<ArrayRef> = b.columns().to_vec();
        cols[si] = Arc::new(StringArray::from(status));
        cols[li] = Arc::new(Float64Array::from(lpl));
        cols[ui] = Arc::new(Float64Array::from(upl));
        w.write(&RecordBatch::try_new(s.clone(), cols).unwrap()).unwrap();
    }
    w.close().unwrap();
}

#[test]
fn apriori_file_forces_suppressed_and_published_cells() {
    let d = tempfile::tempdir().unwrap();
    let data = setup(d.path());
    write_job(d.path(), &job(&data, "base", ""));
    let (code, _, err) = run(&["run", "job.toml"], d.path());
    assert_eq!(code, 0, "{err}");
    let base = read_cells(&d.path().join("base/confidential/t/cells.parquet"), 2);
    // Last year's suppressions: two cells this year's pattern publishes.
    let last_year = [key("0102", "1"), key("0103", "Total")];
    for k in &last_year {
        assert_eq!(base[k].status, "S", "{k:?}");
    }
    // A cell this year's pattern chose as secondary is forced published instead.
    let forced_published = key("0205", "1");
    assert_eq!(base[&forced_published].status, "M");
    std::fs::write(d.path().join("last.hst"), "# last year's suppressions\n0102;1;M\n0103;;ML\n\n0205;1;P\n").unwrap();
    write_job(d.path(), &job(&data, "out", "apriori = \"last.hst\"\napriori_separator = \";\""));
    let (code, out, err) = run(&["run", "job.toml"], d.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("audit: passed"), "{out}");
    let cells = read_cells(&d.path().join("out/confidential/t/cells.parquet"), 2);
    for k in &last_year {
        assert_eq!(cells[k].status, "M", "{k:?} must stay suppressed");
    }
    assert_eq!(cells[&forced_published].status, "P");
    let csv = std::fs::read_to_string(d.path().join("out/publish/t/published.csv")).unwrap();
    let v = cells[&forced_published].value;
    assert!(csv.lines().any(|l| l == format!("0205,1,{v}")), "forced-published cell must carry its value");
    assert!(csv.lines().any(|l| l == "0102,1,"), "last year's suppression must be blank");
    // Primaries are unchanged and the independent audit of the written output is clean.
    for (k, c) in &base {
        assert_eq!(c.status == "U", cells[k].status == "U", "{k:?}");
    }
    let (code, out, err) = run(&["audit", "out/confidential/t/cells.parquet", "--job", "job.toml"], d.path());
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("0 under-protected"), "{out}");
    // Issue 13 item 13: the audit shows its stages while it works.
    assert!(err.contains("t: attacker LPs over") && err.contains("done in"), "no progress: {err}");
}

#[test]
fn bad_apriori_rows_exit_2_naming_file_line_and_code() {
    let d = tempfile::tempdir().unwrap();
    let data = setup(d.path());
    let cases = [
        ("0102,1,M\n0999,1,M\n", vec!["bad.hst:2", "\"0999\"", "`dept`"]),
        ("0102,1,Q\n", vec!["bad.hst:1", "unknown change \"Q\""]),
        ("0102,1,C\n", vec!["bad.hst:1", "takes [1] numbers"]),
        ("0102,9,M\n", vec!["bad.hst:1", "\"9\"", "`sex`"]),
        ("0102,1,U\n", vec!["bad.hst:1", "MAN(r)"]),
    ];
    for (text, wants) in cases {
        std::fs::write(d.path().join("bad.hst"), text).unwrap();
        write_job(d.path(), &job(&data, "out", "apriori = \"bad.hst\""));
        let (code, _, err) = run(&["run", "job.toml"], d.path());
        assert_eq!(code, 2, "{text}: {err}");
        for w in wants {
            assert!(err.contains(w), "{text}: want {w:?} in {err}");
        }
        assert!(!d.path().join("out").exists(), "nothing may be published");
    }
    // Forcing a primary to be published is refused, naming the line.
    write_job(d.path(), &job(&data, "base", ""));
    assert_eq!(run(&["run", "job.toml"], d.path()).0, 0);
    let base = read_cells(&d.path().join("base/confidential/t/cells.parquet"), 2);
    let (k, _) = base.iter().find(|(_, c)| c.status == "U").unwrap();
    std::fs::write(d.path().join("bad.hst"), format!("0102,1,C,5\n{},{},P\n", k[0], k[1])).unwrap();
    write_job(d.path(), &job(&data, "out", "apriori = \"bad.hst\""));
    let (code, _, err) = run(&["run", "job.toml"], d.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.hst:2") && err.contains("is primary"), "{err}");
}

#[test]
fn audit_command_passes_a_good_output_and_names_a_tampered_cell() {
    let d = tempfile::tempdir().unwrap();
    let data = setup(d.path());
    write_job(d.path(), &job(&data, "out", ""));
    assert_eq!(run(&["run", "job.toml"], d.path()).0, 0);
    let (code, out, err) =
        run(&["audit", "out/confidential/t/cells.parquet", "--job", "job.toml", "--out", "iv.json"], d.path());
    assert_eq!(code, 0, "{out}\n{err}");
    let cells = read_cells(&d.path().join("out/confidential/t/cells.parquet"), 2);
    let iv: serde_json::Value = serde_json::from_slice(&std::fs::read(d.path().join("iv.json")).unwrap()).unwrap();
    let primaries = cells.values().filter(|c| c.status == "U").count();
    let list = iv["intervals"].as_array().unwrap();
    assert_eq!(list.len(), primaries);
    for c in list {
        let (v, lo, hi, lpl) = (
            c["value"].as_f64().unwrap(),
            c["lo"].as_f64().unwrap(),
            c["hi"].as_f64().unwrap(),
            c["lpl"].as_f64().unwrap(),
        );
        assert!(lo <= v - lpl + 1e-6 * v.abs().max(1.0) && hi >= v, "{c}");
        assert_eq!(c["protected"], true);
    }
    // Flip every secondary of one relation to published: the primaries they covered are exposed.
    let flipped: Vec<Vec<String>> =
        cells.iter().filter(|(_, c)| c.status == "M").map(|(k, _)| k.clone()).take(1).collect();
    assert_eq!(flipped.len(), 1);
    rewrite_cells(
        &d.path().join("out/confidential/t/cells.parquet"),
        &d.path().join("tampered/confidential/t/cells.parquet"),
        2,
        |codes, s, _, _| {
            if codes == flipped[0].as_slice() {
                *s = "S".into();
            }
        },
    );
    let (code, out, err) =
        run(&["audit", "tampered/confidential/t/cells.parquet", "--job", "job.toml", "--out", "iv.csv"], d.path());
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("under-protected") || err.contains("singleton"), "{err}");
    let csv = std::fs::read_to_string(d.path().join("iv.csv")).unwrap();
    let bad: Vec<&str> = csv.lines().filter(|l| l.ends_with(",false")).collect();
    assert!(!bad.is_empty(), "{csv}");
    for l in &bad {
        let f: Vec<&str> = l.split(',').collect();
        assert!(err.contains(&format!("({}, {})", f[0], f[1])), "{l} not named in {err}");
    }
    // A primary flipped to published is named as a published sensitive cell.
    let p = cells.iter().find(|(_, c)| c.status == "U").unwrap().0.clone();
    rewrite_cells(
        &d.path().join("out/confidential/t/cells.parquet"),
        &d.path().join("tampered2/confidential/t/cells.parquet"),
        2,
        |codes, s, _, _| {
            if codes == p.as_slice() {
                *s = "S".into();
            }
        },
    );
    let (code, _, err) = run(&["audit", "tampered2/confidential/t/cells.parquet", "--job", "job.toml"], d.path());
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("flag are published") && err.contains(&format!("({}, {})", p[0], p[1])), "{err}");
}

/// Issue 13 item 6: `PL;0;0` on a primary keeps the rules' level (an a-priori level may raise
/// protection, never lower it), a larger `PL` raises it, and the output passes `sdcflow audit`.
#[test]
fn issue_13_apriori_protection_levels_never_lower_the_rules_levels() {
    let d = tempfile::tempdir().unwrap();
    let data = setup(d.path());
    write_job(d.path(), &job(&data, "base", ""));
    assert_eq!(run(&["run", "job.toml"], d.path()).0, 0);
    let base = read_cells(&d.path().join("base/confidential/t/cells.parquet"), 2);
    let mut primaries = base.iter().filter(|(_, c)| c.status == "U" && c.lpl > 0.0).map(|(k, c)| (k.clone(), c.lpl));
    let (lowered, rule_level) = primaries.next().expect("a primary");
    let (raised, raised_level) = primaries.next().expect("a second primary");
    let higher = raised_level * 2.0 + 1.0;
    std::fs::write(
        d.path().join("pl.hst"),
        format!("{};{};PL;0;0\n{};{};PL;{higher};{higher}\n", lowered[0], lowered[1], raised[0], raised[1]),
    )
    .unwrap();
    write_job(d.path(), &job(&data, "out", "apriori = \"pl.hst\"\napriori_separator = \";\""));
    let (code, out, err) = run(&["run", "job.toml"], d.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("audit: passed"), "{out}");
    let cells = read_cells(&d.path().join("out/confidential/t/cells.parquet"), 2);
    assert_eq!(cells[&lowered].status, "U");
    assert_eq!(cells[&lowered].lpl, rule_level, "PL;0;0 must not lower the rules' level");
    assert_eq!(cells[&raised].lpl, higher, "a larger PL raises the level");
    // The run's audit and `sdcflow audit` agree: the written output passes.
    let (code, out, err) = run(&["audit", "out/confidential/t/cells.parquet", "--job", "job.toml"], d.path());
    assert_eq!(code, 0, "{out}\n{err}");
}

/// Issue 13 item 13: `sdcflow audit` reports a running count inside its attacker-LP loop (on
/// stderr, counts only: never a cell value), and the count changes no output.
#[test]
fn issue_13_audit_reports_a_running_count_of_checked_bounds() {
    let d = tempfile::tempdir().unwrap();
    let data = setup(d.path());
    write_job(d.path(), &job(&data, "out", ""));
    let (code, _, err) = run(&["run", "job.toml", "-q"], d.path());
    assert_eq!(code, 0, "{err}");
    let mut outputs = Vec::new();
    for (interval, file) in [("0", "a.json"), ("3600", "b.json")] {
        let o = sdcflow()
            .args(["audit", "out/confidential/t/cells.parquet", "--job", "job.toml", "--out", file])
            .env("SDCFLOW_PROGRESS_INTERVAL_S", interval)
            .current_dir(d.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success(), "{err}");
        let counts: Vec<&str> = err.lines().filter(|l| l.contains("] audit: ")).collect();
        if interval == "0" {
            assert!(!counts.is_empty(), "no running count: {err}");
            for l in &counts {
                // `[hh:mm:ss] audit: N of M protection bounds of sensitive cells checked`
                let rest = l.split_once("] audit: ").unwrap().1;
                let words: Vec<&str> = rest.split(' ').collect();
                assert_eq!(words[1], "of", "{l}");
                assert!(words[0].parse::<u64>().is_ok() && words[2].parse::<u64>().is_ok(), "{l}");
                assert_eq!(words[3..].join(" "), "protection bounds of sensitive cells checked", "{l}");
            }
            let last = counts.last().unwrap().split(' ').collect::<Vec<_>>();
            assert_eq!(last[2], last[4], "the count ends at the total: {err}");
        } else {
            assert!(counts.is_empty(), "{err}");
        }
        outputs.push((String::from_utf8_lossy(&o.stdout).to_string(), std::fs::read(d.path().join(file)).unwrap()));
    }
    assert_eq!(outputs[0], outputs[1], "progress lines changed the audit's output");
}
