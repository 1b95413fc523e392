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

/// Bytes that are not UTF-8 text.
const NOT_UTF8: &[u8] = &[0xff, 0xfe, b'1', b'1', b'\n'];

#[test]
fn issue_13_freq_range_above_100_percent() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    expect_input_error(
        d.path(),
        &job("m.parquet", "response = \"salary\"", "", "FREQ(3,150)"),
        &["job.toml", "FREQ(3,150)", "percentage in [0, 100], got 150"],
    );
}

#[test]
fn issue_13_response_also_explanatory() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    let text = job("m.parquet", "response = \"sex\"", "", "FREQ(3,10)");
    expect_input_error(d.path(), &text, &["job.toml", "response: \"sex\" is also an explanatory variable"]);
}

#[test]
fn issue_13_duplicate_microaggregation_variables() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    let text = format!(
        "{}\n[[microaggregation]]\nname = \"persons\"\nvariables = [\"salary\", \"salary\"]\nk = 2\nmethod = \"mdav\"\n",
        job("m.parquet", "response = \"salary\"", "", "FREQ(3,10)")
    );
    expect_input_error(d.path(), &text, &["job.toml", "microaggregation[0]", "\"salary\" is listed twice"]);
}

#[test]
fn issue_13_input_without_rows() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    write_parquet(
        &d.path().join("empty.parquet"),
        vec![Col::Str("geo", vec![]), Col::Str("sex", vec![]), Col::F64("salary", vec![])],
    );
    expect_input_error(
        d.path(),
        &job("empty.parquet", "response = \"salary\"", "", "FREQ(3,10)"),
        &["empty.parquet", "table `t` has no records (0 rows"],
    );
}

#[test]
fn issue_13_generate_zero_rows_per_part() {
    let d = tempfile::tempdir().unwrap();
    let (code, _, err) = run(&["generate", "--out", "gen", "--rows", "10", "--rows-per-part", "0"], d.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--rows-per-part") && err.contains("0"), "{err}");
    assert!(!d.path().join("gen").exists(), "nothing may be generated");
}

#[test]
fn issue_13_non_utf8_hrc_keeps_the_hierarchy_prefix() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    std::fs::write(d.path().join("geo.hrc"), NOT_UTF8).unwrap();
    expect_input_error(
        d.path(),
        &job("m.parquet", "response = \"salary\"", HRC, "FREQ(3,10)"),
        &["hierarchy of `geo` (geo.hrc): is not UTF-8 text"],
    );
    let (_, _, err) = run(&["run", "job.toml"], d.path());
    assert_eq!(err.matches("not UTF-8").count(), 1, "said once: {err}");
}

#[test]
fn issue_13_non_utf8_mapping() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    std::fs::write(d.path().join("geo.csv"), NOT_UTF8).unwrap();
    let mapping = "[[hierarchy]]\nvariable = \"geo\"\nmapping = \"geo.csv\"";
    expect_input_error(
        d.path(),
        &job("m.parquet", "response = \"salary\"", mapping, "FREQ(3,10)"),
        &["hierarchy of `geo` (geo.csv): is not UTF-8 text"],
    );
}

#[test]
fn issue_13_non_utf8_sql_file() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    std::fs::write(d.path().join("prep.sql"), NOT_UTF8).unwrap();
    let text = job("m.parquet", "response = \"salary\"", "", "FREQ(3,10)")
        .replace("microdata = \"m.parquet\"", "microdata = \"m.parquet\"\nsql = [\"prep.sql\"]");
    expect_input_error(d.path(), &text, &["input prep.sql: is not UTF-8 text"]);
}

#[test]
fn issue_13_non_utf8_job_file() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("job.toml"), NOT_UTF8).unwrap();
    let (code, _, err) = run(&["run", "job.toml"], d.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("job.toml: the job file is not UTF-8 text"), "{err}");
    assert_eq!(err.matches("not UTF-8").count(), 1, "said once: {err}");
    assert!(!d.path().join("out").exists());
}

#[test]
fn issue_13_non_finite_response_and_weight() {
    let d = tempfile::tempdir().unwrap();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    write_parquet(
        &d.path().join("m.parquet"),
        vec![
            Col::Str("geo", s(&["1101", "1102", "1201", "1201"])),
            Col::Str("sex", s(&["1", "2", "1", "2"])),
            Col::F64("salary", vec![f64::NAN, 200.0, f64::INFINITY, f64::NEG_INFINITY]),
            // Otherwise constant: Parquet statistics leave out NaN, and min = max must not hide it.
            Col::F64("w", vec![1.0, f64::NAN, 1.0, 1.0]),
        ],
    );
    expect_input_error(
        d.path(),
        &job("m.parquet", "response = \"salary\"\nweight = \"w\"", "", "FREQ(3,10)"),
        &["table `t`: column \"salary\" has 3 NaN or infinite values", "column \"w\" has 1 NaN"],
    );
}

#[test]
fn issue_13_empty_parquet_part() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    std::fs::create_dir(d.path().join("parts")).unwrap();
    std::fs::rename(d.path().join("m.parquet"), d.path().join("parts/a.parquet")).unwrap();
    std::fs::write(d.path().join("parts/b.parquet"), "").unwrap();
    write_job(d.path(), &job("parts", "response = \"salary\"", "", "FREQ(3,10)"));
    let (_, _, err) = run(&["run", "job.toml"], d.path());
    assert_eq!(err.matches("b.parquet").count(), 1, "one error naming the part: {err}");
    expect_input_error(
        d.path(),
        &job("parts", "response = \"salary\"", "", "FREQ(3,10)"),
        &["parts/b.parquet", "the Parquet part is empty (0 bytes)"],
    );
}

#[test]
fn issue_13_parquet_part_missing_a_column() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    std::fs::create_dir(d.path().join("parts")).unwrap();
    std::fs::rename(d.path().join("m.parquet"), d.path().join("parts/a.parquet")).unwrap();
    write_parquet(
        &d.path().join("parts/b.parquet"),
        vec![Col::Str("geo", vec!["1101".into()]), Col::Str("sex", vec!["1".into()])],
    );
    expect_input_error(
        d.path(),
        &job("parts", "response = \"salary\"", "", "FREQ(3,10)"),
        &["parts/b.parquet", "has no column \"salary\", \"label\" (present in", "a.parquet"],
    );
}

/// The part checks also hold when the microdata is a glob (`parts/*.parquet`): the empty
/// part, then a part missing columns, is one input error naming the part.
#[test]
fn issue_13_parquet_part_checks_hold_for_a_glob() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    std::fs::create_dir(d.path().join("parts")).unwrap();
    std::fs::rename(d.path().join("m.parquet"), d.path().join("parts/a.parquet")).unwrap();
    std::fs::write(d.path().join("parts/b.parquet"), "").unwrap();
    let text = job("parts/*.parquet", "response = \"salary\"", "", "FREQ(3,10)");
    write_job(d.path(), &text);
    let (_, _, err) = run(&["run", "job.toml"], d.path());
    assert_eq!(err.matches("b.parquet").count(), 1, "one error naming the part: {err}");
    expect_input_error(d.path(), &text, &["parts/b.parquet", "the Parquet part is empty (0 bytes)"]);
    write_parquet(
        &d.path().join("parts/b.parquet"),
        vec![Col::Str("geo", vec!["1101".into()]), Col::Str("sex", vec!["1".into()])],
    );
    expect_input_error(
        d.path(),
        &text,
        &["parts/b.parquet", "has no column \"salary\", \"label\" (present in", "parts/a.parquet"],
    );
}

#[test]
fn issue_13_audit_of_a_nan_value_is_an_input_error() {
    let d = tempfile::tempdir().unwrap();
    sample(d.path());
    write_job(d.path(), &job("m.parquet", "response = \"salary\"", "", "FREQ(3,10)"));
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    std::fs::create_dir_all(d.path().join("cells/t")).unwrap();
    let n = |v: f64| vec![v; 4];
    write_parquet(
        &d.path().join("cells/t/cells.parquet"),
        vec![
            Col::Str("geo", s(&["Total", "Total", "1101", "1101"])),
            Col::Str("sex", s(&["Total", "1", "Total", "1"])),
            Col::F64("freq", n(5.0)),
            Col::F64("value", vec![10.0, 10.0, 10.0, f64::NAN]),
            Col::F64("top1", n(1.0)),
            Col::F64("top2", n(1.0)),
            Col::Str("status", s(&["S", "S", "S", "S"])),
            Col::F64("lpl", n(0.0)),
            Col::F64("upl", n(0.0)),
        ],
    );
    let (code, out, err) = run(&["audit", "cells/t/cells.parquet", "--job", "job.toml", "--out", "iv.csv"], d.path());
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("cells.parquet") && err.contains("column `value` has 1 NaN or infinite values"), "{err}");
    assert!(err.contains("cell (geo=1101, sex=1)"), "{err}");
    assert!(!d.path().join("iv.csv").exists(), "nothing written");
    assert!(!d.path().join("out").exists());
}
