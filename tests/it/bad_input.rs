//! Bad input: a clear error naming the culprit, exit code 2, and nothing left in the output
//! location.

use std::path::Path;

use crate::common::*;

fn sample(dir: &Path) {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    write_parquet(
        &dir.join("m.parquet"),
        vec![
            Col::Str("geo", s(&["1101", "1102", "1201", "1201"])),
            Col::Str("sex", s(&["1", "2", "1", "2"])),
            Col::F64("salary", vec![100.0, 200.0, -5.0, 50.0]),
            Col::Str("label", s(&["a", "b", "c", "d"])),
        ],
    );
    std::fs::write(dir.join("geo.hrc"), "11\n@1101\n@1102\n12\n@1201\n").unwrap();
}

fn job(micro: &str, table_extra: &str, hierarchy: &str, safety: &str) -> String {
    format!(
        r#"
[input]
microdata = "{micro}"
{hierarchy}
[[table]]
name = "t"
explanatory = ["geo", "sex"]
safety = "{safety}"
secondary = {{ method = "none" }}
{table_extra}
[output]
dir = "out"
"#
    )
}

/// Runs the job and checks exit 2, a message containing every `want`, and no output left.
fn expect_input_error(dir: &Path, text: &str, want: &[&str]) {
    write_job(dir, text);
    let (code, _out, err) = run(&["run", "job.toml"], dir);
    assert_eq!(code, 2, "stderr: {err}");
    for w in want {
        assert!(err.contains(w), "expected {w:?} in: {err}");
    }
    let leftovers: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n == "out" || n.contains("sdcflow-staging"))
        .collect();
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
}

const HRC: &str = "[[hierarchy]]\nvariable = \"geo\"\nfile = \"geo.hrc\"";

#[test]
fn missing_microdata_file() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    expect_input_error(
        d.path(),
        &job("nope.parquet", "response = \"salary\"", "", "FREQ(3,10)"),
        &["nope.parquet", "not found"],
    );
}

#[test]
fn unreadable_parquet() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    std::fs::write(d.path().join("bad.parquet"), "this is not parquet").unwrap();
    expect_input_error(
        d.path(),
        &job("bad.parquet", "response = \"salary\"", "", "FREQ(3,10)"),
        &["bad.parquet", "Parquet"],
    );
}

#[test]
fn missing_column_suggests_nearest() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    expect_input_error(
        d.path(),
        &job("m.parquet", "response = \"salry\"", "", "FREQ(3,10)"),
        &["\"salry\" not found", "did you mean \"salary\""],
    );
}

#[test]
fn non_numeric_response() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    expect_input_error(
        d.path(),
        &job("m.parquet", "response = \"label\"", "", "FREQ(3,10)"),
        &["\"label\" must be numeric"],
    );
}

#[test]
fn unknown_hierarchy_code_is_listed() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    std::fs::write(d.path().join("geo.hrc"), "11\n@1101\n@1102\n").unwrap();
    expect_input_error(
        d.path(),
        &job("m.parquet", "response = \"salary\"", HRC, "FREQ(3,10)"),
        &["geo", "1 codes in the data are not in the hierarchy", "\"1201\""],
    );
}

#[test]
fn malformed_hrc_names_the_line() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    std::fs::write(d.path().join("geo.hrc"), "11\n@@1101\n").unwrap();
    expect_input_error(
        d.path(),
        &job("m.parquet", "response = \"salary\"", HRC, "FREQ(3,10)"),
        &["geo.hrc:2", "skipped"],
    );
}

#[test]
fn bad_rule_string() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    expect_input_error(
        d.path(),
        &job("m.parquet", "response = \"salary\"", "", "NK(1,85)|FRQ(3,10)"),
        &["job.toml", "safety", "unknown rule FRQ", "did you mean FREQ"],
    );
}

#[test]
fn unknown_job_key() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    expect_input_error(
        d.path(),
        &job("m.parquet", "respnse = \"salary\"", "", "FREQ(3,10)"),
        &["job.toml", "unknown field `respnse`"],
    );
}

#[test]
fn negative_contributions_rejected_for_dominance_rules() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    expect_input_error(
        d.path(),
        &job("m.parquet", "response = \"salary\"", "", "NK(1,85)"),
        &["\"salary\" has 1 negative values", "dominance"],
    );
    // Without a dominance rule negative values are allowed.
    write_job(d.path(), &job("m.parquet", "response = \"salary\"", "", "FREQ(2,10)"));
    let (code, out, err) = run(&["run", "job.toml"], d.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("table t:"), "{out}");
}

#[test]
fn unknown_secondary_method_lists_known_ones() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    let text = job("m.parquet", "response = \"salary\"", "", "FREQ(3,10)")
        .replace("method = \"none\"", "method = \"hypercube\"");
    expect_input_error(d.path(), &text, &["unknown method \"hypercube\"", "known methods: auto, none"]);
}
