//! S3 round trip against a real S3 API on loopback (`moto_server`, installed by `.ci/run`).

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

pub(crate) struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts moto on a free loopback port; `None` (with a message) when it is not installed, unless
/// `SDCFLOW_REQUIRE_MOTO` is set (CI), where its absence fails the test.
pub(crate) fn start_moto() -> Option<(Server, u16)> {
    let port = free_port();
    let child = Command::new("moto_server")
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let child = match child {
        Ok(c) => c,
        Err(e) => {
            assert!(
                std::env::var_os("SDCFLOW_REQUIRE_MOTO").is_none(),
                "moto_server is required (pip install 'moto[server]'): {e}"
            );
            eprintln!("SKIPPED s3 round trip: moto_server not found ({e}); pip install 'moto[server]'");
            return None;
        }
    };
    let server = Server(child);
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < Duration::from_secs(30), "moto_server did not start on port {port}");
        std::thread::sleep(Duration::from_millis(100));
    }
    Some((server, port))
}

pub(crate) fn python(endpoint: &str, script: &str) {
    let full = format!("import boto3, os, sys\ns3 = boto3.client('s3', endpoint_url='{endpoint}', aws_access_key_id='test', aws_secret_access_key='test', region_name='us-east-1')\n{script}");
    let o = Command::new("python3").args(["-c", &full]).output().unwrap();
    assert!(o.status.success(), "python failed: {}", String::from_utf8_lossy(&o.stderr));
}

/// Creates bucket `census` and uploads `parts` under `micro/`.
pub(crate) fn upload_to_census(endpoint: &str, parts: &[std::path::PathBuf]) {
    let uploads: Vec<String> = parts
        .iter()
        .map(|p| {
            format!("s3.upload_file('{}', 'census', 'micro/{}')", p.display(), p.file_name().unwrap().to_string_lossy())
        })
        .collect();
    python(endpoint, &format!("s3.create_bucket(Bucket='census')\n{}", uploads.join("\n")));
}

pub(crate) fn with_s3_env(cmd: &mut Command, endpoint: &str) {
    cmd.env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL", endpoint);
}

/// Downloads the output published at `s3://bucket/prefix` by following its manifest into
/// `dest` (one file per manifest entry, at its relative path). With `strict`, also asserts that
/// nothing but the manifest and the published run's objects is left below the prefix (no stale
/// or partial runs). Returns the published run id.
pub(crate) fn download_output(endpoint: &str, bucket: &str, prefix: &str, dest: &Path) -> String {
    download_output_checked(endpoint, bucket, prefix, dest, true)
}

pub(crate) fn download_output_checked(endpoint: &str, bucket: &str, prefix: &str, dest: &Path, strict: bool) -> String {
    std::fs::create_dir_all(dest).unwrap();
    let run_file = dest.join("_run_id");
    python(
        endpoint,
        &format!(
            r#"import json
m = json.loads(s3.get_object(Bucket='{bucket}', Key='{prefix}/_sdcflow_manifest.json')['Body'].read())
assert m['written_by'] == 'sdcflow', m
root = '{prefix}/runs/' + m['run'] + '/'
for rel, size in m['files'].items():
    os.makedirs(os.path.dirname(os.path.join('{dest}', rel)) or '.', exist_ok=True)
    s3.download_file('{bucket}', root + rel, os.path.join('{dest}', rel))
    assert os.path.getsize(os.path.join('{dest}', rel)) == size, rel
keys = sorted(o['Key'] for o in s3.list_objects_v2(Bucket='{bucket}', Prefix='{prefix}/').get('Contents', []))
expected = sorted(['{prefix}/_sdcflow_manifest.json'] + [root + r for r in m['files']])
if {strict}:
    assert keys == expected, (keys, expected)
else:
    assert set(expected) <= set(keys), (keys, expected)
open('{run}', 'w').write(m['run'])"#,
            dest = dest.display(),
            run = run_file.display(),
            strict = if strict { "True" } else { "False" },
        ),
    );
    std::fs::read_to_string(run_file).unwrap()
}

#[test]
fn s3_round_trip_matches_local() {
    let Some((_server, port)) = start_moto() else { return };
    let endpoint = format!("http://127.0.0.1:{port}");
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    upload_to_census(&endpoint, &generate_data(&data, 2000, 5, 800, 8.0));
    let job = |input: &str, out: &str| {
        format!(
            r#"
[input]
microdata = "{input}"
[[hierarchy]]
variable = "geo"
levels = [2, 2, 2]
[[table]]
name = "salary"
explanatory = ["geo", "sex"]
response = "salary"
contributor = "ent_id"
safety = "NK(1,85)|FREQ(3,10)"
secondary = {{ method = "none" }}
[output]
dir = "{out}"
"#
        )
    };
    std::fs::write(d.path().join("s3.toml"), job("s3://census/micro/", "s3://census/results/run1")).unwrap();
    std::fs::write(d.path().join("local.toml"), job(&data.display().to_string(), "local")).unwrap();
    let mut cmd = sdcflow();
    cmd.args(["run", "s3.toml"]).current_dir(d.path());
    with_s3_env(&mut cmd, &endpoint);
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (code, _, err) = run(&["run", "local.toml"], d.path());
    assert_eq!(code, 0, "{err}");
    let dl = d.path().join("dl");
    download_output(&endpoint, "census", "results/run1", &dl);
    for f in ["confidential/salary/cells/part-00000.parquet", "publish/salary/published/part-00000.csv"] {
        let a = std::fs::read(dl.join(f)).unwrap();
        let b = std::fs::read(d.path().join("local").join(f)).unwrap();
        assert!(a == b, "{f} differs from the local run");
    }
    assert!(dl.join("report.json").exists());
    // `sdcflow audit` reads the published table through the manifest.
    let mut cmd = sdcflow();
    cmd.args(["audit", "s3://census/results/run1/confidential/salary/cells/part-00000.parquet", "--job", "s3.toml"])
        .current_dir(d.path());
    with_s3_env(&mut cmd, &endpoint);
    let o = cmd.output().unwrap();
    assert!(o.status.code() != Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("audit of table salary"), "{out}\n{err}");

    // A failing job writes nothing to the bucket.
    std::fs::write(
        d.path().join("bad.toml"),
        job("s3://census/micro/", "s3://census/results/bad")
            .replace("\"salary\"\ncontributor", "\"salry\"\ncontributor"),
    )
    .unwrap();
    let mut cmd = sdcflow();
    cmd.args(["run", "bad.toml"]).current_dir(d.path());
    with_s3_env(&mut cmd, &endpoint);
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    python(
        &endpoint,
        "r = s3.list_objects_v2(Bucket='census', Prefix='results/bad')\nassert r.get('KeyCount', 0) == 0, r",
    );
}

/// What the fault proxy does with uploads of a run's objects (`PUT …/runs/…`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Fault {
    /// Forward everything.
    Pass,
    /// Forward the first `n` run uploads, answer the rest with 403 (not retried by clients).
    FailAfter(usize),
    /// Forward the first `n` run uploads, never answer the rest.
    HangAfter(usize),
}

/// A loopback HTTP proxy in front of moto that injects upload faults: one request per
/// connection, forwarded with `Connection: close`.
pub(crate) struct FaultProxy {
    pub port: u16,
    state: std::sync::Arc<std::sync::Mutex<(Fault, usize, usize)>>,
}

impl FaultProxy {
    pub(crate) fn start(upstream: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = std::sync::Arc::new(std::sync::Mutex::new((Fault::Pass, 0usize, 0usize)));
        let st = state.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { break };
                let st = st.clone();
                std::thread::spawn(move || proxy_one(conn, upstream, &st));
            }
        });
        Self { port, state }
    }

    pub(crate) fn set(&self, f: Fault) {
        *self.state.lock().unwrap() = (f, 0, 0);
    }

    /// Run uploads refused or held so far.
    pub(crate) fn faults(&self) -> usize {
        self.state.lock().unwrap().2
    }
}

fn proxy_one(mut client: std::net::TcpStream, upstream: u16, st: &std::sync::Mutex<(Fault, usize, usize)>) {
    use std::io::{Read, Write};
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if client.read(&mut byte).unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head).to_string();
    let mut lines = text.split("\r\n");
    let request = lines.next().unwrap_or_default().to_string();
    let mut len = 0usize;
    let mut headers = Vec::new();
    for l in lines.filter(|l| !l.is_empty()) {
        let lower = l.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        assert!(!lower.starts_with("transfer-encoding:"), "the fault proxy does not handle {l}");
        if !lower.starts_with("connection:") {
            headers.push(l.to_string());
        }
    }
    let mut body = vec![0u8; len];
    if client.read_exact(&mut body).is_err() {
        return;
    }
    let is_run_upload = request.starts_with("PUT ") && request.contains("/runs/");
    let action = {
        let mut s = st.lock().unwrap();
        let (fault, seen, _) = *s;
        let limit = match fault {
            Fault::Pass => usize::MAX,
            Fault::FailAfter(n) | Fault::HangAfter(n) => n,
        };
        if is_run_upload {
            s.1 += 1;
        }
        if is_run_upload && seen >= limit {
            s.2 += 1;
            fault
        } else {
            Fault::Pass
        }
    };
    match action {
        Fault::FailAfter(_) => {
            let msg = "<Error><Code>AccessDenied</Code><Message>injected by the test</Message></Error>";
            let _ = write!(client, "HTTP/1.1 403 Forbidden\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{msg}", msg.len());
            return;
        }
        Fault::HangAfter(_) => {
            std::thread::sleep(Duration::from_secs(600));
            return;
        }
        Fault::Pass => {}
    }
    let Ok(mut up) = std::net::TcpStream::connect(("127.0.0.1", upstream)) else { return };
    let mut out = format!("{request}\r\n{}\r\nConnection: close\r\n\r\n", headers.join("\r\n")).into_bytes();
    out.extend_from_slice(&body);
    if up.write_all(&out).is_err() {
        return;
    }
    let _ = std::io::copy(&mut up, &mut client);
}

/// The job of the S3 fault tests: local microdata, output on the bucket.
fn fault_job(data: &Path, out: &str, safety: &str) -> String {
    format!(
        r#"
[input]
microdata = "{}"
[[hierarchy]]
variable = "geo"
levels = [2, 2, 2]
[[table]]
name = "salary"
explanatory = ["geo", "sex"]
response = "salary"
contributor = "ent_id"
safety = "{safety}"
secondary = {{ method = "none" }}
[[table]]
name = "counts"
explanatory = ["geo", "nace"]
safety = "FREQ(3,10)"
secondary = {{ method = "none" }}
[output]
dir = "{out}"
"#,
        data.display()
    )
}

/// Sets up moto + proxy, generates data and publishes a first complete output at
/// `s3://census/results/f` (NK(1,85) rule); returns what the tests need.
fn publish_first(d: &Path) -> Option<(Server, u16, FaultProxy, String)> {
    let (server, port) = start_moto()?;
    let proxy = FaultProxy::start(port);
    let endpoint = format!("http://127.0.0.1:{}", proxy.port);
    python(&endpoint, "s3.create_bucket(Bucket='census')");
    let data = d.join("data");
    generate_data(&data, 3000, 9, 1000, 8.0);
    std::fs::write(d.join("first.toml"), fault_job(&data, "s3://census/results/f", "NK(1,85)")).unwrap();
    std::fs::write(d.join("second.toml"), fault_job(&data, "s3://census/results/f", "NK(1,60)|FREQ(4,10)")).unwrap();
    std::fs::write(d.join("first_local.toml"), fault_job(&data, "first_local", "NK(1,85)")).unwrap();
    let mut cmd = sdcflow();
    cmd.args(["run", "first.toml", "-q"]).current_dir(d);
    with_s3_env(&mut cmd, &endpoint);
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (code, _, err) = run(&["run", "first_local.toml", "-q"], d);
    assert_eq!(code, 0, "{err}");
    Some((server, port, proxy, endpoint))
}

/// The published output equals the first run's, file for file.
fn assert_first_output_published(d: &Path, endpoint: &str, dl: &str, strict: bool) {
    let dl = d.join(dl);
    download_output_checked(endpoint, "census", "results/f", &dl, strict);
    for f in [
        "confidential/salary/cells/part-00000.parquet",
        "publish/salary/published/part-00000.csv",
        "publish/counts/published/part-00000.csv",
    ] {
        let a = std::fs::read(dl.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        let b = std::fs::read(d.join("first_local").join(f)).unwrap();
        assert!(a == b, "{f}: readers see a mix of two runs");
    }
}

#[test]
fn issue_13_s3_failed_upload_leaves_the_previous_output() {
    let d = tempfile::tempdir().unwrap();
    let Some((_server, _port, proxy, endpoint)) = publish_first(d.path()) else { return };
    proxy.set(Fault::FailAfter(2));
    let mut cmd = sdcflow();
    cmd.args(["run", "second.toml", "-q"]).current_dir(d.path());
    with_s3_env(&mut cmd, &endpoint);
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("object store"), "{err}");
    assert!(proxy.faults() >= 1, "no upload was refused");
    // The failed run removed what it had uploaded: only the first run is left.
    proxy.set(Fault::Pass);
    assert_first_output_published(d.path(), &endpoint, "dl", true);
}

#[test]
fn issue_13_s3_kill_mid_upload_leaves_a_complete_output() {
    let d = tempfile::tempdir().unwrap();
    let Some((_server, _port, proxy, endpoint)) = publish_first(d.path()) else { return };
    proxy.set(Fault::HangAfter(2));
    let mut cmd = sdcflow();
    cmd.args(["run", "second.toml", "-q"]).current_dir(d.path()).stdout(Stdio::null()).stderr(Stdio::null());
    with_s3_env(&mut cmd, &endpoint);
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    while proxy.faults() == 0 {
        assert!(start.elapsed() < Duration::from_secs(120), "the second run never reached its upload");
        assert!(child.try_wait().unwrap().is_none(), "the second run ended before its upload");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    proxy.set(Fault::Pass);
    // Readers still see the first run, complete (the killed run's objects are unreferenced).
    assert_first_output_published(d.path(), &endpoint, "dl1", false);
    // The next run publishes and removes the killed run's leftovers.
    let mut cmd = sdcflow();
    cmd.args(["run", "first.toml", "-q"]).current_dir(d.path());
    with_s3_env(&mut cmd, &endpoint);
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_first_output_published(d.path(), &endpoint, "dl2", true);
}

#[test]
fn issue_13_s3_prefix_with_foreign_objects_is_refused() {
    let Some((_server, port)) = start_moto() else { return };
    let endpoint = format!("http://127.0.0.1:{port}");
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    generate_data(&data, 500, 2, 500, 8.0);
    python(
        &endpoint,
        "s3.create_bucket(Bucket='census')\ns3.put_object(Bucket='census', Key='shared/notes.txt', Body=b'keep me')",
    );
    std::fs::write(d.path().join("j.toml"), fault_job(&data, "s3://census/shared", "NK(1,85)")).unwrap();
    let mut cmd = sdcflow();
    cmd.args(["run", "j.toml", "-q"]).current_dir(d.path());
    with_s3_env(&mut cmd, &endpoint);
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("did not write"), "{err}");
    python(
        &endpoint,
        "keys = sorted(o['Key'] for o in s3.list_objects_v2(Bucket='census')['Contents'])\nassert keys == ['shared/notes.txt'], keys\nassert s3.get_object(Bucket='census', Key='shared/notes.txt')['Body'].read() == b'keep me'",
    );
}

/// Issue 13 item 12: the Parquet part checks hold for an `s3://` prefix too (the parts as the
/// object store lists them): an empty part, then a part missing columns, is one input error
/// naming the part by its `s3://` URL; nothing is published.
#[test]
fn issue_13_s3_parquet_part_checks() {
    let Some((_server, port)) = start_moto() else { return };
    let endpoint = format!("http://127.0.0.1:{port}");
    let d = tempfile::tempdir().unwrap();
    upload_to_census(&endpoint, &generate_data(&d.path().join("data"), 500, 2, 500, default_enterprise_size()));
    let narrow = d.path().join("narrow.parquet");
    write_parquet(&narrow, vec![Col::Str("geo", vec!["110101".into()]), Col::Str("sex", vec!["1".into()])]);
    let job = fault_job(Path::new("s3://census/micro/"), "out", "NK(1,85)");
    std::fs::write(d.path().join("j.toml"), job).unwrap();
    for (put, want) in [
        ("s3.put_object(Bucket='census', Key='micro/zz.parquet', Body=b'')", "the Parquet part is empty (0 bytes)"),
        (
            &format!("s3.upload_file('{}', 'census', 'micro/zz.parquet')", narrow.display()) as &str,
            "the Parquet part has no column \"",
        ),
    ] {
        python(&endpoint, put);
        let mut cmd = sdcflow();
        cmd.args(["run", "j.toml", "-q"]).current_dir(d.path());
        with_s3_env(&mut cmd, &endpoint);
        let o = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("s3://census/micro/zz.parquet: {want}")), "{err}");
        assert_eq!(err.matches("zz.parquet").count(), 1, "one error naming the part: {err}");
        assert!(!d.path().join("out").exists(), "nothing may be published");
    }
}
