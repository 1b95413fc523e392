//! Linked tables in a job (`[[linked]]`): common cells get one status and the joint audit holds.

use crate::apriori::{rewrite_cells, setup};
use crate::common::*;

/// `a` = dept × sex with a manual primary on (0102, Total); `b` = dept × age_band. The cell
/// (0102, Total) is common to both. `linked` adds the `[[linked]]` group.
fn job(data: &std::path::Path, out: &str, method: &str, linked: bool) -> String {
    let link = if linked { "[[linked]]\ntables = [\"a\", \"b\"]\n" } else { "" };
    let secondary = format!("{{ method = \"{method}\", seed = 3, time_limit_s = 120 }}");
    format!(
        "{}{}apriori = \"man.hst\"\n{}{link}\n[output]\ndir = \"{out}\"\n",
        dept_job_head(data),
        salary_table("a", &["dept", "sex"], "NK(1,85)|FREQ(3,10)|MAN(10)", &secondary),
        salary_table("b", &["dept", "age_band"], "NK(1,85)|FREQ(3,10)", &secondary),
    )
}

#[test]
fn linked_tables_share_statuses_of_common_cells_and_pass_the_joint_audit() {
    let d = tempfile::tempdir().unwrap();
    let data = setup(d.path());
    std::fs::write(d.path().join("man.hst"), "0102,Total,U\n").unwrap();
    let common = vec!["0102".to_string(), "Total".to_string()];
    // Unlinked, table b knows nothing of a's manual primary and publishes the common cell.
    write_job(d.path(), &job(&data, "apart", "fast", false));
    let (code, _, err) = run(&["run", "job.toml"], d.path());
    assert_eq!(code, 0, "{err}");
    let b = read_cells(&d.path().join("apart/confidential/b/cells.parquet"), 2);
    assert_eq!(b[&common].status, "S");
    for method in ["fast", "modular"] {
        let out = format!("out_{method}");
        write_job(d.path(), &job(&data, &out, method, true));
        let (code, stdout, err) = run(&["run", "job.toml"], d.path());
        assert_eq!(code, 0, "{method}: {err}");
        assert!(stdout.contains("joint audit of linked tables a, b"), "{stdout}");
        let a = read_cells(&d.path().join(format!("{out}/confidential/a/cells.parquet")), 2);
        let b = read_cells(&d.path().join(format!("{out}/confidential/b/cells.parquet")), 2);
        assert_eq!(a[&common].status, "U");
        assert_eq!(b[&common].status, "M", "{method}: the common cell is suppressed in b too");
        // Every common cell (dept, Total) has one status (suppressed or not) in both tables.
        let mut n = 0;
        for (k, ca) in a.iter().filter(|(k, _)| k[1] == "Total") {
            let cb = &b[k];
            assert_eq!(ca.status == "U" || ca.status == "M", cb.status == "U" || cb.status == "M", "{method}: {k:?}");
            assert!((ca.value - cb.value).abs() < 1e-6 * ca.value.abs().max(1.0));
            n += 1;
        }
        assert!(n > 20);
        // Each table's own audit is clean...
        for t in ["a", "b"] {
            let (code, o, e) =
                run(&["audit", &format!("{out}/confidential/{t}/cells.parquet"), "--job", "job.toml"], d.path());
            assert_eq!(code, 0, "{method} {t}: {o}\n{e}");
        }
        // ...and b alone protects a's sensitive cell: mark it sensitive in b with a's levels and
        // audit b independently.
        let lpl = a[&common].lpl;
        assert!(lpl > 0.0);
        rewrite_cells(
            &d.path().join(format!("{out}/confidential/b/cells.parquet")),
            &d.path().join(format!("check_{method}/confidential/b/cells.parquet")),
            2,
            |codes, s, l, u| {
                if codes == common.as_slice() {
                    *s = "U".into();
                    *l = lpl;
                    *u = lpl;
                }
            },
        );
        let (code, o, e) =
            run(&["audit", &format!("check_{method}/confidential/b/cells.parquet"), "--job", "job.toml"], d.path());
        assert_eq!(code, 0, "{method}: b does not protect a's primary: {o}\n{e}");
    }
}

#[test]
fn linked_groups_are_validated() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("man.hst"), "").unwrap();
    std::fs::write(d.path().join("prep.sql"), "").unwrap();
    let base = job(std::path::Path::new("data"), "out", "fast", false);
    for (extra, want) in [
        ("[[linked]]\ntables = [\"a\", \"c\"]\n", "no [[table]] named \"c\""),
        ("[[linked]]\ntables = [\"a\"]\n", "at least two tables"),
        ("[[linked]]\ntables = [\"a\", \"b\"]\n[[linked]]\ntables = [\"b\", \"a\"]\n", "already in linked[0]"),
    ] {
        write_job(d.path(), &format!("{extra}\n{base}"));
        let (code, _, err) = run(&["run", "job.toml"], d.path());
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(want), "want {want:?} in {err}");
    }
    let text =
        format!("[[linked]]\ntables = [\"a\", \"b\"]\n{}", base.replacen("method = \"fast\"", "method = \"tabu\"", 1));
    write_job(d.path(), &text);
    let (code, _, err) = run(&["run", "job.toml"], d.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("different secondary methods"), "{err}");
}

/// Issue 13 item 7: a common cell of linked tables forced published (`P`) in one table's
/// a-priori file and suppressed (`M`) or primary (`U`) in the other's is an input error naming
/// both tables, the cell by its codes and both files and lines; nothing is published.
#[test]
fn issue_13_linked_apriori_conflicts_are_input_errors() {
    let d = tempfile::tempdir().unwrap();
    let data = setup(d.path());
    let text = job(&data, "out", "fast", true).replace("name = \"b\"\n", "name = \"b\"\napriori = \"b.hst\"\n");
    assert!(text.contains("b.hst"));
    write_job(d.path(), &text);
    for (a_line, b_line, why) in [
        ("0102,Total,P", "0102,Total,M", "suppressed by `M` (b.hst:2)"),
        ("0102,Total,U", "0102,Total,P", "primary by `U` (man.hst:1)"),
    ] {
        std::fs::write(d.path().join("man.hst"), format!("{a_line}\n")).unwrap();
        std::fs::write(d.path().join("b.hst"), format!("# last year\n{b_line}\n")).unwrap();
        let (code, _, err) = run(&["run", "job.toml"], d.path());
        assert_eq!(code, 2, "{a_line} / {b_line}: {err}");
        let publisher = if a_line.ends_with('P') { "man.hst:1" } else { "b.hst:2" };
        for want in [publisher, why, "`a`", "`b`", "(0102, Total)", "common cell"] {
            assert!(err.contains(want), "want {want:?} in {err}");
        }
        assert!(!d.path().join("out").exists(), "nothing may be published");
    }
}

/// Issue 13 item 12: when the joint protection of linked tables fails, the error names the
/// table and the cell by its codes, never a joint-model index (`cell 16 [5, 1]`).
#[test]
fn issue_13_linked_infeasibility_names_the_table_and_codes() {
    let d = tempfile::tempdir().unwrap();
    let data = setup(d.path());
    std::fs::write(d.path().join("man.hst"), "").unwrap();
    write_job(d.path(), &job(&data, "apart", "fast", false));
    let (code, _, err) = run(&["run", "job.toml", "-q"], d.path());
    assert_eq!(code, 0, "{err}");
    let a = read_cells(&d.path().join("apart/confidential/a/cells.parquet"), 2);
    let b = read_cells(&d.path().join("apart/confidential/b/cells.parquet"), 2);
    // A primary of `a` whose partners in its row (same dept: the other sex and the dept total,
    // common to `b`) are neither sensitive in `a` nor in `b`: forcing them published makes it
    // exactly recoverable.
    let row = |k: &Vec<String>| -> Vec<Vec<String>> { a.keys().filter(|o| o[0] == k[0] && *o != k).cloned().collect() };
    let (key, _) = a
        .iter()
        .find(|(k, c)| {
            c.status == "U"
                && k[1] != "Total"
                && row(k).iter().all(|o| a[o].status != "U")
                && b.get(&vec![k[0].clone(), "Total".to_string()]).is_some_and(|c| c.status != "U")
        })
        .expect("a primary whose row partners are not sensitive");
    let hst: String = row(key).iter().map(|o| format!("{},{},P\n", o[0], o[1])).collect();
    std::fs::write(d.path().join("man.hst"), hst).unwrap();
    let want = format!("cell (table \"a\": dept={}, sex={}) cannot be protected", key[0], key[1]);
    for method in ["fast", "modular"] {
        write_job(d.path(), &job(&data, "out", method, true));
        let (code, _, err) = run(&["run", "job.toml", "-q"], d.path());
        assert_eq!(code, 1, "{method}: {err}");
        assert!(err.contains(&want), "{method}: want {want:?} in {err}");
        assert!(!err.contains('['), "{method}: no solver indices in {err}");
        assert!(!d.path().join("out").exists(), "nothing may be published");
    }
}
