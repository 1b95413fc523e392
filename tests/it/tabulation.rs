//! Tabulation checked cell by cell against a brute-force recomputation.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use sdcflow::job::Job;
use sdcflow::progress::Progress;

use crate::common::*;

async fn run_job_text(dir: &Path, text: &str) -> sdcflow::run::Summary {
    let p = write_job(dir, text);
    let job = Job::load(&p).unwrap();
    sdcflow::run::run_job(&job, None, None, &Progress::quiet()).await.unwrap()
}

/// Ancestors of a width-levels code at every level, plus the total.
fn level_codes(code: &str, widths: &[usize]) -> Vec<String> {
    let mut v = vec!["Total".to_string()];
    let mut end = 0;
    for w in widths {
        end += w;
        v.push(code[..end].to_string());
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hierarchies_with_contributors_match_brute_force() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    generate_data(&data, 3000, 7, 1000, 6.0);
    let job = format!(
        r#"
[input]
microdata = "{data}"
[[hierarchy]]
variable = "geo"
levels = [2, 2, 2]
[[hierarchy]]
variable = "nace"
levels = [1, 2]
[[hierarchy]]
variable = "occupation"
levels = [1, 1]
[[table]]
name = "t"
explanatory = ["geo", "nace", "occupation"]
response = "salary"
contributor = "ent_id"
safety = "NK(1,85)|FREQ(3,10)"
secondary = {{ method = "none" }}
[output]
dir = "{out}"
"#,
        data = data.display(),
        out = d.path().join("out").display()
    );
    run_job_text(d.path(), &job).await;
    let cells = read_cells(&d.path().join("out/confidential/t/cells/part-00000.parquet"), 3);

    // Brute force: (cell, contributor) sums over every level combination.
    let mut batches = Vec::new();
    for e in std::fs::read_dir(&data).unwrap() {
        batches.extend(read_parquet(&e.unwrap().path()));
    }
    let geo = strings(&batches, "geo");
    let nace = strings(&batches, "nace");
    let occ = strings(&batches, "occupation");
    let ent = strings(&batches, "ent_id");
    let sal = floats(&batches, "salary");
    let mut per: HashMap<Vec<String>, HashMap<String, (f64, u64)>> = HashMap::new();
    for i in 0..geo.len() {
        for g in level_codes(&geo[i], &[2, 2, 2]) {
            for n in level_codes(&nace[i], &[1, 2]) {
                for o in level_codes(&occ[i], &[1, 1]) {
                    let e = per.entry(vec![g.clone(), n.clone(), o]).or_default().entry(ent[i].clone()).or_default();
                    e.0 += sal[i];
                    e.1 += 1;
                }
            }
        }
    }
    assert_eq!(cells.len(), per.len(), "number of nonempty cells");
    let mut multi_cell_contributors = 0;
    for (key, contribs) in &per {
        let c = cells.get(key).unwrap_or_else(|| panic!("cell {key:?} missing"));
        let mut vals: Vec<f64> = contribs.values().map(|v| v.0).collect();
        vals.sort_by(|a, b| b.total_cmp(a));
        let value: f64 = vals.iter().sum();
        let records: u64 = contribs.values().map(|v| v.1).sum();
        assert_eq!(c.freq, contribs.len() as u64, "freq of {key:?}");
        assert_eq!(c.records, records, "records of {key:?}");
        assert!((c.value - value).abs() < 1e-6 * value.max(1.0), "value of {key:?}: {} vs {value}", c.value);
        assert!((c.top1 - vals[0]).abs() < 1e-6 * value.max(1.0), "top1 of {key:?}");
        let t2 = vals.get(1).copied().unwrap_or(0.0);
        assert!((c.top2 - t2).abs() < 1e-6 * value.max(1.0), "top2 of {key:?}: {} vs {t2}", c.top2);
        if key.iter().all(|k| k == "Total") {
            multi_cell_contributors = contribs.len();
        }
    }
    assert!(multi_cell_contributors > 100, "the data must have many contributors");
    // Rules were applied: some dominance / frequency primaries exist and are consistent.
    let primaries = cells.values().filter(|c| c.status == "U").count();
    assert!(primaries > 0);
    for c in cells.values() {
        let dominated = c.top1 > 0.85 * c.value;
        assert_eq!(c.status == "U", c.freq < 3 || dominated, "{c:?}");
    }
}

/// The worked example of the big-data tabu paper: one variable, a two-level hierarchy above the
/// raw codes (with trivial levels), a frequency table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paper_worked_example_cell_by_cell() {
    let d = tempfile::tempdir().unwrap();
    let v: Vec<String> = ["2", "2", "10", "9", "9", "9", "15"].iter().map(|s| s.to_string()).collect();
    write_parquet(&d.path().join("m.parquet"), vec![Col::Str("v", v)]);
    // V → V¹ → V² (codes made unique per level as tau-Argus requires).
    std::fs::write(d.path().join("v.csv"), "child,parent\n2,a0\n10,a2\n9,a1\n15,a3\na0,b0\na2,b0\na1,b1\na3,b1\n")
        .unwrap();
    let job = format!(
        r#"
[input]
microdata = "{m}"
[[hierarchy]]
variable = "v"
mapping = "{map}"
[[table]]
name = "freq"
explanatory = ["v"]
safety = "FREQ(1,10)"
secondary = {{ method = "none" }}
[output]
dir = "{out}"
"#,
        m = d.path().join("m.parquet").display(),
        map = d.path().join("v.csv").display(),
        out = d.path().join("out").display()
    );
    run_job_text(d.path(), &job).await;
    let cells = read_cells(&d.path().join("out/confidential/freq/cells/part-00000.parquet"), 1);
    let got: BTreeMap<String, f64> = cells.iter().map(|(k, c)| (k[0].clone(), c.value)).collect();
    let want: BTreeMap<String, f64> = [
        ("2", 2.0),
        ("10", 1.0),
        ("9", 3.0),
        ("15", 1.0),
        ("a0", 2.0),
        ("a2", 1.0),
        ("a1", 3.0),
        ("a3", 1.0),
        ("b0", 3.0),
        ("b1", 4.0),
        ("Total", 7.0),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), *v))
    .collect();
    assert_eq!(got, want);
    // Output order is the hierarchy's pre-order and published.csv carries the same values.
    let csv = std::fs::read_to_string(d.path().join("out/publish/freq/published/part-00000.csv")).unwrap();
    assert_eq!(csv.lines().next(), Some("v,value"));
    assert_eq!(csv.lines().nth(1), Some("Total,7"));
    assert_eq!(csv.lines().count(), 12);
}

/// Without a contributor column every record is a contributor; weights give the weighted value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_as_contributors_and_weights() {
    let d = tempfile::tempdir().unwrap();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    write_parquet(
        &d.path().join("m.parquet"),
        vec![
            Col::Str("a", s(&["x", "x", "x", "y"])),
            Col::F64("r", vec![10.0, 30.0, 5.5, 7.0]),
            Col::F64("w", vec![1.0, 2.0, 1.0, 3.0]),
        ],
    );
    let job = format!(
        r#"
[input]
microdata = "{m}"
[[table]]
name = "t"
explanatory = ["a"]
response = "r"
weight = "w"
safety = "P(10)"
secondary = {{ method = "none" }}
[output]
dir = "{out}"
"#,
        m = d.path().join("m.parquet").display(),
        out = d.path().join("out").display()
    );
    run_job_text(d.path(), &job).await;
    let cells = read_cells(&d.path().join("out/confidential/t/cells/part-00000.parquet"), 1);
    let x = &cells[&vec!["x".to_string()]];
    assert_eq!((x.freq, x.records), (3, 3));
    assert_eq!(x.value, 10.0 + 60.0 + 5.5);
    assert_eq!((x.top1, x.top2), (60.0, 10.0));
    // P(10): remainder 5.5 < 6 → unsafe with level 0.1·60 − 5.5 = 0.5, raised to the minimum
    // protection level of 1 (rules::MIN_PROTECTION)
    assert_eq!(x.status, "U");
    assert!((x.lpl - 1.0).abs() < 1e-9);
    let y = &cells[&vec!["y".to_string()]];
    assert_eq!((y.freq, y.value, y.status.as_str()), (1, 21.0, "U"));
    let b = read_parquet(&d.path().join("out/confidential/t/cells/part-00000.parquet"));
    assert_eq!(floats(&b, "weight"), vec![7.0, 4.0, 3.0]);
    let csv = std::fs::read_to_string(d.path().join("out/publish/t/published/part-00000.csv")).unwrap();
    assert_eq!(csv, "a,value\nTotal,96.5\nx,\ny,\n");
}

/// Published values are the exact sums, also above 2^53 where a float rounds them (issue 13),
/// and weighted totals use decimal, not float, products.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_published_values_are_exact_above_2_pow_53() {
    use arrow::array::{Int64Array, RecordBatch, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    let d = tempfile::tempdir().unwrap();
    let big = 1i64 << 52;
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Utf8, false),
        Field::new("r", DataType::Int64, false),
        Field::new("w", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec!["x", "x", "x", "y", "y", "y"])),
            Arc::new(Int64Array::from(vec![big + 1, big, 1, 1, 2, 4])),
            Arc::new(StringArray::from(vec!["0.1", "0.2", "0.7", "0.1", "0.1", "0.1"])),
        ],
    )
    .unwrap();
    let f = std::fs::File::create(d.path().join("m.parquet")).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(f, schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let job = |name: &str, weight: &str| {
        format!(
            "[[table]]\nname = \"{name}\"\nexplanatory = [\"a\"]\nresponse = \"r\"\n{weight}safety = \"FREQ(1,10)\"\nsecondary = {{ method = \"none\" }}\n"
        )
    };
    let text = format!(
        "[input]\nmicrodata = \"{}\"\nsql = [\"{}\"]\n{}{}[output]\ndir = \"{}\"\n",
        d.path().join("m.parquet").display(),
        d.path().join("w.sql").display(),
        job("plain", ""),
        job("weighted", "weight = \"wd\"\n"),
        d.path().join("out").display()
    );
    std::fs::write(d.path().join("w.sql"), "CREATE VIEW v AS SELECT *, CAST(w AS DECIMAL(10,1)) AS wd FROM microdata;")
        .unwrap();
    run_job_text(d.path(), &text).await;
    let csv = std::fs::read_to_string(d.path().join("out/publish/plain/published/part-00000.csv")).unwrap();
    // 2^53 + 2 + 7: a float gives 9007199254741000 for the total and 9007199254740994 for x.
    assert_eq!(csv, "a,value\nTotal,9007199254741001\nx,9007199254740994\ny,7\n");
    let csv = std::fs::read_to_string(d.path().join("out/publish/weighted/published/part-00000.csv")).unwrap();
    // x: 0.1·(2^52+1) + 0.2·2^52 + 0.7·1 = 0.3·2^52 + 0.8 exactly; y: 0.1·(1+2+4).
    assert_eq!(csv, "a,value\nTotal,1351079888211150.3\nx,1351079888211149.6\ny,0.7\n");
}
