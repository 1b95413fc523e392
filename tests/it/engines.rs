//! The same job on local DataFusion and on Ballista standalone gives byte-identical outputs.

use crate::common::*;

#[test]
fn local_and_standalone_give_identical_cells() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    generate_data(&data, 5000, 3, 1500, 8.0);
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
[[table]]
name = "salary"
explanatory = ["geo", "nace", "sex"]
response = "salary"
contributor = "ent_id"
safety = "NK(1,85)|P(10)|FREQ(3,10)"
secondary = {{ method = "none" }}
[[table]]
name = "counts"
explanatory = ["geo", "age_band"]
weight = "w"
safety = "FREQ(3,10)"
secondary = {{ method = "none" }}
[output]
dir = "out"
"#,
        data = data.display()
    );
    write_job(d.path(), &job);
    let (code, _, err) = run(&["run", "job.toml", "--out", "local"], d.path());
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&["run", "job.toml", "--standalone", "--out", "standalone"], d.path());
    assert_eq!(code, 0, "{err}");
    for t in ["salary", "counts"] {
        for f in [format!("confidential/{t}/cells/part-00000.parquet"), format!("publish/{t}/published/part-00000.csv")]
        {
            let a = std::fs::read(d.path().join("local").join(&f)).unwrap();
            let b = std::fs::read(d.path().join("standalone").join(&f)).unwrap();
            assert!(a == b, "{t}/{f} differs between local and standalone");
        }
    }
    // And a second local run is byte-identical too (determinism).
    let (code, _, _) = run(&["run", "job.toml", "--out", "local2", "-q"], d.path());
    assert_eq!(code, 0);
    let a = std::fs::read(d.path().join("local/confidential/salary/cells/part-00000.parquet")).unwrap();
    let b = std::fs::read(d.path().join("local2/confidential/salary/cells/part-00000.parquet")).unwrap();
    assert_eq!(a, b);
}
