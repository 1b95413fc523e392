//! `report.html` (issue 15): one self-contained page per run, checked with a real HTML parser
//! against `report.json`, and re-rendered byte for byte by `sdcflow report OUT`.

use scraper::{Html, Selector};
use sdcflow::report_html::num;
use serde_json::Value;

use crate::common::*;

fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap()
}

/// The text of the element matching `css` below `scope`.
fn text_of(scope: scraper::ElementRef<'_>, css: &str) -> String {
    let e = scope.select(&sel(css)).next().unwrap_or_else(|| panic!("{css} missing"));
    e.text().collect::<String>()
}

#[test]
fn issue_15_report_html_shows_report_json() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    generate_data(&data, 3000, 2, 3000, default_enterprise_size());
    let job = format!(
        "[input]\nmicrodata = \"{}\"\n[[hierarchy]]\nvariable = \"geo\"\nlevels = [2, 2, 2]\n{}\
         [[microaggregation]]\nname = \"num\"\nvariables = [\"salary\", \"w\"]\nk = 3\nmethod = \"mdav\"\n\n\
         [[microaggregation]]\nname = \"nom\"\nkind = \"nominal\"\nvariables = [\"occupation\", \"contract\", \"sex\"]\nk = 3\n\n\
         [output]\ndir = \"out\"\n",
        data.display(),
        salary_table("t", &["geo", "sex"], "NK(1,85)|FREQ(3,10)", "{ method = \"fast\", seed = 1 }")
    );
    write_job(d.path(), &job);
    let (code, out, err) = run(&["run", "job.toml"], d.path());
    assert_eq!(code, 0, "{out}{err}");
    let page = std::fs::read_to_string(d.path().join("out/report.html")).unwrap();
    let report: Value = serde_json::from_slice(&std::fs::read(d.path().join("out/report.json")).unwrap()).unwrap();

    // Self-contained: no scripts, nothing fetched.
    let doc = Html::parse_document(&page);
    assert_eq!(doc.select(&sel("script")).count(), 0);
    let external: Vec<String> = doc.select(&sel("[src], [href], link")).map(|e| e.html()).collect();
    assert!(external.is_empty(), "external references: {external:?}");

    // The table: every figure equals report.json's.
    let t = &report["tables"][0];
    let section = doc.select(&sel("section.table[data-table=\"t\"]")).next().expect("table section");
    for field in ["cells", "primaries", "secondaries", "total_value", "suppressed_value"] {
        let want = num(t[field].as_f64().unwrap());
        assert_eq!(text_of(section, &format!("td[data-field=\"{field}\"]")), want, "{field}");
    }
    for (letter, n) in t["status_counts"].as_object().unwrap() {
        assert_eq!(text_of(section, &format!("td[data-field=\"status_counts.{letter}\"]")), n.to_string());
    }
    assert!(t["secondaries"].as_u64().unwrap() > 0, "the table must have a pattern to show");
    for (var, levels) in t["suppressed_by_level"].as_object().unwrap() {
        assert!(section.select(&sel(&format!("div[data-chart=\"level-{var}\"] svg"))).next().is_some(), "{var}");
        for l in levels.as_array().unwrap() {
            let f = format!("td[data-field=\"suppressed_by_level.{var}.{}.suppressed\"]", l["level"]);
            assert_eq!(text_of(section, &f), l["suppressed"].to_string());
        }
    }
    let heat = section.select(&sel("div[data-chart=\"heat-map\"] svg")).next().expect("heat map");
    let hm = &t["heat_map"];
    // One square per (row, column) of the map.
    let squares = hm["x_codes"].as_array().unwrap().len() * hm["y_codes"].as_array().unwrap().len();
    assert!(heat.select(&sel("rect")).count() >= squares, "heat map squares");

    // The microaggregations.
    let micro =
        |name: &str| report["microaggregations"].as_array().unwrap().iter().find(|m| m["name"] == name).unwrap();
    let m = micro("num");
    let s = doc.select(&sel("section.microaggregation[data-micro=\"num\"]")).next().expect("numeric section");
    assert_eq!(text_of(s, "td[data-field=\"sse\"]"), num(m["sse"].as_f64().unwrap()));
    assert_eq!(text_of(s, "td[data-field=\"mdav_sse\"]"), num(m["mdav_sse"].as_f64().unwrap()));
    for c in ["group-sizes", "per-variable"] {
        assert!(s.select(&sel(&format!("div[data-chart=\"{c}\"] svg"))).next().is_some(), "{c}");
    }
    for v in m["per_variable"].as_array().unwrap() {
        let f = format!("td[data-field=\"per_variable.{}.sse\"]", v["variable"].as_str().unwrap());
        assert_eq!(text_of(s, &f), num(v["sse"].as_f64().unwrap()));
    }
    let m = micro("nom");
    let s = doc.select(&sel("section.microaggregation[data-micro=\"nom\"]")).next().expect("nominal section");
    assert!(s.select(&sel("div[data-chart=\"chi2\"] svg")).next().is_some());
    for d in m["reports"][0]["per_dimension"].as_array().unwrap() {
        let f = format!("td[data-field=\"reports.0.per_dimension.{}.control.chi2\"]", d["dimension"]);
        assert_eq!(text_of(s, &f), num(d["control"]["chi2"].as_f64().unwrap()));
    }

    // `sdcflow report OUT` renders the same page from report.json alone.
    std::fs::remove_file(d.path().join("out/report.html")).unwrap();
    let (code, out, err) = run(&["report", "out"], d.path());
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(std::fs::read_to_string(d.path().join("out/report.html")).unwrap(), page);
}

/// Issue 13: `sdcflow report` on a directory without `report.json` (or on no directory at all)
/// is an input error (exit 2) saying what it expects, and writes nothing.
#[test]
fn issue_13_report_without_report_json_is_an_input_error() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("notes")).unwrap();
    std::fs::write(d.path().join("notes/a.txt"), "keep").unwrap();
    for dir in ["notes", "missing", "notes/a.txt"] {
        let (code, _, err) = run(&["report", dir], d.path());
        assert_eq!(code, 2, "{dir}: {err}");
        let want = format!("{dir}/report.json: not found: {dir} is not the output directory of a sdcflow run");
        assert!(err.contains(&want), "{dir}: want {want:?} in {err}");
    }
    let left: Vec<_> = std::fs::read_dir(d.path().join("notes")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("a.txt")], "nothing written");
    assert!(!d.path().join("missing").exists());
}
