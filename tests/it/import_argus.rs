//! `sdcflow import-argus` (issue 15): tau-Argus batch files written by rtauargus's writers
//! (via pytauargus, `tests/data/argus/make_fixtures.py`) translate without manual edits, and the
//! translated jobs give the same primary cells as tau-Argus gave on the same data
//! (`tests/data/argus/expected/*.csv`, written by tau-Argus's engine through pytauargus).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common::*;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/argus")
}

/// Translates `batch` into `dir/job.toml` and runs it; returns the translation's stderr.
fn import_and_run(dir: &Path, batch: &str) -> String {
    let arb = fixtures().join(batch);
    let (code, out, err) = run(&["import-argus", arb.to_str().unwrap(), "--out", "job.toml"], dir);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("job written to job.toml"), "{out}");
    let (code, out, rerr) = run(&["run", "job.toml"], dir);
    assert_eq!(code, 0, "{out}{rerr}");
    err
}

/// Cells tau-Argus made primary (status 3..=9: unsafe by a rule, or manually) in a
/// `<WRITETABLE>` type 2 file with `AS+`, by their codes.
fn argus_primaries(file: &str, dims: usize) -> BTreeSet<Vec<String>> {
    let text = std::fs::read_to_string(fixtures().join("expected").join(file)).unwrap();
    let mut out = BTreeSet::new();
    for line in text.lines().skip(1) {
        let f: Vec<String> = line.split(',').map(|s| s.trim_matches('"').to_string()).collect();
        let status: u32 = f.last().unwrap().parse().unwrap();
        if (3..=9).contains(&status) {
            out.insert(f[..dims].to_vec());
        }
    }
    out
}

fn sdcflow_primaries(dir: &Path, table: &str, dims: usize) -> BTreeSet<Vec<String>> {
    let cells = read_cells(&dir.join("sdcflow-out/confidential").join(table).join("cells.parquet"), dims);
    cells.into_iter().filter(|(_, c)| c.status == "U").map(|(k, _)| k).collect()
}

#[test]
fn issue_15_magnitude_batch_with_apriori_gives_tau_argus_primaries() {
    let d = tempfile::tempdir().unwrap();
    import_and_run(d.path(), "salary.arb");
    let job = std::fs::read_to_string(d.path().join("job.toml")).unwrap();
    // Hierarchies from <HIERLEVELS> and <HIERCODELIST>, the a-priori file, MOD → modular with
    // its time limit (5 minutes) and singleton options.
    for want in [
        "levels = [1, 1]",
        "nace.hrc",
        "lead = \"@\"",
        "safety = \"NK(1,85)|FREQ(3,10)|P(10,1)|MAN(20)\"",
        "method = \"modular\", time_limit_s = 300, singleton = true",
        "salary.hst",
    ] {
        assert!(job.contains(want), "{want} missing from\n{job}");
    }
    let expected = argus_primaries("salary.csv", 3);
    assert_eq!(expected.len(), 62, "fixture: 61 primaries by rule + 1 manual");
    assert_eq!(sdcflow_primaries(d.path(), "salary", 3), expected);
}

#[test]
fn issue_15_two_table_batch_gives_tau_argus_primaries_and_lists_what_it_ignores() {
    let d = tempfile::tempdir().unwrap();
    let err = import_and_run(d.path(), "counts.arb");
    let job = std::fs::read_to_string(d.path().join("job.toml")).unwrap();
    assert!(job.contains("name = \"counts\"") && job.contains("name = \"nace\""), "{job}");
    assert!(job.contains("method = \"optimal\", time_limit_s = 300"), "{job}");
    // <GOINTERACTIVE> is ignored silently; <WRITETABLE>'s format is reported.
    assert!(!err.contains("GOINTERACTIVE") && err.contains("<WRITETABLE>"), "{err}");
    let counts = argus_primaries("counts.csv", 2);
    assert_eq!(counts.len(), 10);
    assert_eq!(sdcflow_primaries(d.path(), "counts", 2), counts);
    let nace = argus_primaries("nace.csv", 2);
    assert_eq!(nace.len(), 1);
    assert_eq!(sdcflow_primaries(d.path(), "nace", 2), nace);
}

#[test]
fn issue_15_weighted_frequency_batch_translates_and_runs() {
    let d = tempfile::tempdir().unwrap();
    let err = import_and_run(d.path(), "freq.arb");
    let job = std::fs::read_to_string(d.path().join("job.toml")).unwrap();
    assert!(job.contains("weight = \"w\"") && !job.contains("response ="), "{job}");
    assert!(job.contains("safety = \"FREQ(3,20)\"") && job.contains("method = \"fast\""), "{job}");
    assert!(err.contains("GH translated to sdcflow's `fast`"), "{err}");
    assert!(d.path().join("sdcflow-out/publish/freq/published.csv").exists());
}

/// Commands and rules without a counterpart are named, with their line, in the output and at
/// the top of the job; nothing is dropped silently.
#[test]
fn issue_15_untranslatable_commands_are_listed() {
    let d = tempfile::tempdir().unwrap();
    let fx = fixtures();
    for f in ["persons.asc", "persons.rda", "nace.hrc"] {
        std::fs::copy(fx.join(f), d.path().join(f)).unwrap();
    }
    std::fs::write(
        d.path().join("b.arb"),
        "<OPENMICRODATA> \"persons.asc\"\n<OPENMETADATA> \"persons.rda\"\n\
         <SPECIFYTABLE> \"geo\"\"sex\"|\"salary\"|\"w\"|\n<SAFETYRULE> NK(3,75)|MIS(1)\n<READMICRODATA>\n\
         <CTA>\n<SUPPRESS> RND(1,5,0,1,0,0)\n",
    )
    .unwrap();
    let (code, out, err) = run(&["import-argus", "b.arb", "--out", "job.toml"], d.path());
    assert_eq!(code, 0, "{out}{err}");
    let job = std::fs::read_to_string(d.path().join("job.toml")).unwrap();
    for want in [
        "b.arb:4: MIS",
        "b.arb:6: <CTA> not translated",
        "b.arb:7: <SUPPRESS> RND not translated",
        "b.arb:3: shadow variable `w` not translated",
    ] {
        assert!(err.contains(want), "{want} not reported:\n{err}");
        assert!(job.contains(want), "{want} not in the job's header:\n{job}");
    }
    // The translated job is valid as it stands.
    sdcflow::job::Job::load(&d.path().join("job.toml")).unwrap();
}

#[test]
fn issue_15_bad_batches_exit_2_naming_the_file() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("a.arb"), "<OPENMETADATA> \"nowhere.rda\"\n").unwrap();
    let (code, _, err) = run(&["import-argus", "a.arb"], d.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nowhere.rda") && err.contains("no such file"), "{err}");
    assert!(!d.path().join("job.toml").exists());

    let fx = fixtures();
    std::fs::write(
        d.path().join("b.arb"),
        format!(
            "<OPENMICRODATA> \"{}\"\n<OPENMETADATA> \"{}\"\n<SPECIFYTABLE> \"region\"|\"salary\"||\n<SAFETYRULE> FREQ(3,10)\n",
            fx.join("persons.asc").display(),
            fx.join("persons.rda").display()
        ),
    )
    .unwrap();
    let (code, _, err) = run(&["import-argus", "b.arb"], d.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`region` is not in") && err.contains("persons.rda"), "{err}");

    // An existing file that the importer did not write is never replaced.
    std::fs::write(d.path().join("mine.toml"), "precious").unwrap();
    let arb = fx.join("freq.arb");
    let (code, _, err) =
        run(&["import-argus", arb.to_str().unwrap(), "--out", "mine.toml", "--microdata", "x.parquet"], d.path());
    assert_eq!(code, 2, "{err}");
    assert_eq!(std::fs::read_to_string(d.path().join("mine.toml")).unwrap(), "precious");
}

/// The conversion never replaces a file it did not write, and replaces its own.
#[test]
fn issue_15_conversion_replaces_only_its_own_parquet() {
    let d = tempfile::tempdir().unwrap();
    let arb = fixtures().join("freq.arb");
    std::fs::write(d.path().join("persons.parquet"), "not mine").unwrap();
    let (code, _, err) = run(&["import-argus", arb.to_str().unwrap()], d.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("persons.parquet") && err.contains("was not converted"), "{err}");
    assert_eq!(std::fs::read_to_string(d.path().join("persons.parquet")).unwrap(), "not mine");
    assert!(!d.path().join("job.toml").exists());
    std::fs::remove_file(d.path().join("persons.parquet")).unwrap();
    for _ in 0..2 {
        let (code, out, err) = run(&["import-argus", arb.to_str().unwrap()], d.path());
        assert_eq!(code, 0, "{out}{err}");
    }
}
