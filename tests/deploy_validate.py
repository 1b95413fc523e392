#!/usr/bin/env python3
"""Validates the Kubernetes manifests in deploy/k8s offline.

1. Every resource against the Kubernetes JSON schemas shipped by the PyPI package
   `kubernetes-validate` (strict: unknown fields are errors), for one Kubernetes version.
2. Project rules, with PyYAML: every container of a Deployment/Job/CronJob has resource requests
   and limits (limits >= requests), runs as uid 10001 without privileges on a read-only root with
   an emptyDir /tmp; Deployments have readiness and liveness probes; Jobs/CronJobs are bounded and
   use the ConfigMap and Secret of this directory (keys included) and a scheduler Service that
   exists; kustomization.yaml lists every file; the ConfigMap's job.toml is configs/cluster.toml.
3. Network access (Ballista has no authentication): a default-deny NetworkPolicy covers every pod
   of the namespace, and evaluating all policies admits exactly the client (run) pods and the
   executors to the scheduler's port, exactly scheduler, executors and client to the executors'
   ports, nothing to the client pods, and nothing from outside the namespace; the object-store
   Secret is mounted only in the scheduler, executor and client containers (no init container).

Usage: python3 tests/deploy_validate.py [--dir DIR] [--kubernetes-version 1.30]
Needs: pip install kubernetes-validate==1.37.0 pyyaml   (no network at run time)
Exit 0 when everything is valid; 1 with one line per problem otherwise; 2 when a dependency is
missing. The last line is `deploy manifests: N files valid` on success.
"""

import argparse
import os
import re
import sys

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

try:
    import yaml
    import kubernetes_validate
    from kubernetes_validate.utils import SchemaNotFoundError, VersionNotSupportedError
except ImportError as e:
    print(f"deploy_validate: missing dependency ({e}); run: pip install kubernetes-validate==1.37.0 pyyaml",
          file=sys.stderr)
    sys.exit(2)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMESPACE = "sdcflow"
UID = 10001
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob")
CLUSTER_SCOPED = ("Namespace", "ClusterRole", "ClusterRoleBinding", "PersistentVolume", "StorageClass")

# Job-file schema (src/job.rs: unknown keys are rejected by serde).
JOB_KEYS = {
    "": {"input", "hierarchy", "table", "microaggregation", "output", "engine"},
    "input": {"microdata", "sql", "csv_delimiter"},
    "hierarchy": {"variable", "levels", "file", "mapping", "lead"},
    "table": {"name", "explanatory", "response", "contributor", "weight", "safety", "secondary", "source"},
    "secondary": {"method", "seed", "time_limit_s"},
    "microaggregation": {"name", "variables", "k", "kind", "method", "strata", "weight", "standardise", "seed",
                         "gamma", "control", "control_tables", "source"},
    "output": {"dir"},
    "engine": {"mode", "cluster", "target_partitions", "memory_limit_mb"},
}

problems = []


def problem(where, msg):
    problems.append(f"{where}: {msg}")


def quantity(q):
    """A Kubernetes quantity as a float (CPU in cores, memory in bytes); None if unparsable."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?", str(q))
    if not m:
        return None
    n, unit = float(m.group(1)), m.group(2) or ""
    mult = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
            "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}[unit]
    return n * mult


def pod_spec(doc):
    """(pod template spec, path) of a workload."""
    kind, spec = doc["kind"], doc.get("spec") or {}
    if kind == "CronJob":
        return ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template", {}).get("spec") or {}, \
            "spec.jobTemplate.spec.template.spec"
    return (spec.get("template") or {}).get("spec") or {}, "spec.template.spec"


def job_spec(doc):
    if doc["kind"] == "CronJob":
        return (doc.get("spec") or {}).get("jobTemplate", {}).get("spec") or {}
    return doc.get("spec") or {}


def check_container(where, c, pod, volumes, init):
    res = c.get("resources") or {}
    req, lim = res.get("requests") or {}, res.get("limits") or {}
    for r in ("cpu", "memory"):
        if r not in req:
            problem(where, f"resources.requests.{r} is missing")
        if r not in lim:
            problem(where, f"resources.limits.{r} is missing")
    for r in set(req) & set(lim):
        a, b = quantity(req[r]), quantity(lim[r])
        if a is None or b is None:
            problem(where, f"resources {r}: cannot read quantity {req[r]!r} / {lim[r]!r}")
        elif a > b:
            problem(where, f"resources {r}: request {req[r]} exceeds limit {lim[r]}")
    sc = c.get("securityContext") or {}
    if sc.get("allowPrivilegeEscalation") is not False:
        problem(where, "securityContext.allowPrivilegeEscalation must be false")
    if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
        problem(where, "securityContext.capabilities.drop must contain ALL")
    if sc.get("readOnlyRootFilesystem") is not True:
        problem(where, "securityContext.readOnlyRootFilesystem must be true")
    elif not init:
        tmp = [m for m in c.get("volumeMounts") or [] if m.get("mountPath") == "/tmp"]
        if not tmp or "emptyDir" not in volumes.get(tmp[0].get("name"), {}):
            problem(where, "a read-only root needs an emptyDir mounted at /tmp")
    for m in c.get("volumeMounts") or []:
        if m.get("name") not in volumes:
            problem(where, f"volumeMount {m.get('name')!r} has no volume")
    if pod.get("securityContext", {}).get("runAsUser") != UID and sc.get("runAsUser") != UID:
        problem(where, f"must run as uid {UID} (the image's user)")


def pod_labels_by_component(docs):
    """{component: pod template labels} of every workload (a CronJob's pods included)."""
    out = {}
    for _, _, doc in docs:
        if doc["kind"] not in WORKLOADS:
            continue
        spec = doc.get("spec") or {}
        tmpl = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") if doc["kind"] == "CronJob" \
            else spec.get("template")
        labels = ((tmpl or {}).get("metadata") or {}).get("labels") or {}
        out[labels.get("app.kubernetes.io/component", doc["metadata"]["name"])] = labels
    return out


def selects(selector, labels):
    """Whether a label selector (matchLabels only; matchExpressions are not used here) selects."""
    if selector.get("matchExpressions"):
        return False
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


# Who must reach which ports: {target component: ({ports}, {source components})}.
ALLOWED_INGRESS = {
    "scheduler": ({50050}, {"run", "executor"}),
    "executor": ({50051, 50052}, {"scheduler", "executor", "run"}),
    "run": (set(), set()),
}


def check_network(docs, comps):
    """Evaluates the NetworkPolicies the way the API server defines them (union of every policy
    that selects a pod) and compares the result with ALLOWED_INGRESS."""
    policies = [(w, d) for w, _, d in docs if d["kind"] == "NetworkPolicy"]
    deny = [w for w, d in policies
            if (d.get("spec") or {}).get("podSelector") == {}
            and {"Ingress", "Egress"} <= set((d.get("spec") or {}).get("policyTypes") or [])
            and not (d.get("spec") or {}).get("ingress") and not (d.get("spec") or {}).get("egress")]
    if not deny:
        problem("deploy/k8s", "no default-deny NetworkPolicy (podSelector {}, Ingress and Egress, no rules)")
    for target, labels in comps.items():
        allowed = {}  # port -> set of source components
        for where, d in policies:
            spec = d.get("spec") or {}
            if "Ingress" not in (spec.get("policyTypes") or []) or not selects(spec.get("podSelector") or {}, labels):
                continue
            for rule in spec.get("ingress") or []:
                peers, ports = rule.get("from"), rule.get("ports")
                if not peers:
                    problem(where, f"an ingress rule without `from` admits every pod to {target}")
                    continue
                if not ports:
                    problem(where, f"an ingress rule without `ports` opens every port of {target}")
                    continue
                for peer in peers:
                    if "namespaceSelector" in peer or "ipBlock" in peer:
                        problem(where, f"ingress to {target} admits peers outside the namespace")
                        continue
                    sel = peer.get("podSelector") or {}
                    if "app.kubernetes.io/component" not in (sel.get("matchLabels") or {}):
                        # Selects by something other than the pipeline's roles: any pod that
                        # carries those labels (or, with {}, every pod of the namespace) gets in.
                        problem(where, f"ingress to {target} admits pods that are not a component of sdcflow")
                        continue
                    sources = {c for c, l in comps.items() if selects(sel, l)}
                    for p in ports:
                        allowed.setdefault(p.get("port"), set()).update(sources)
        want_ports, want_sources = ALLOWED_INGRESS.get(target, (set(), set()))
        for port, sources in allowed.items():
            if port not in want_ports:
                problem("deploy/k8s", f"NetworkPolicies open port {port} of {target}, which needs none")
            elif sources != want_sources:
                problem("deploy/k8s", f"NetworkPolicies admit {sorted(sources)} to {target}:{port}; "
                        f"must be exactly {sorted(want_sources)}")
        for port in want_ports - set(allowed):
            problem("deploy/k8s", f"no NetworkPolicy admits {sorted(want_sources)} to {target}:{port}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=os.path.join(ROOT, "deploy", "k8s"), help="manifest directory")
    ap.add_argument("--kubernetes-version", default="1.30", help="schema version (default 1.30)")
    ap.add_argument("--job", default=os.path.join(ROOT, "configs", "cluster.toml"),
                    help="job file the ConfigMap must hold (default configs/cluster.toml)")
    args = ap.parse_args()
    d = args.dir
    rel = lambda p: os.path.relpath(p, ROOT) if p.startswith(ROOT) else p  # noqa: E731
    if not os.path.isdir(d):
        print(f"deploy_validate: {d}: not a directory", file=sys.stderr)
        return 1
    files = sorted(f for f in os.listdir(d) if f.endswith((".yaml", ".yml")))
    if not files:
        print(f"deploy_validate: {d}: no manifests", file=sys.stderr)
        return 1

    # Load everything; resources keyed by (kind, name).
    docs, kustomization = [], None
    for f in files:
        path = os.path.join(d, f)
        try:
            with open(path) as fh:
                loaded = [x for x in yaml.safe_load_all(fh) if x is not None]
        except yaml.YAMLError as e:
            problem(rel(path), "not valid YAML: " + " ".join(str(e).split()))
            continue
        if not loaded:
            problem(rel(path), "no document")
        for i, doc in enumerate(loaded):
            where = f"{rel(path)}#{i}"
            if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
                problem(where, "not a Kubernetes object (apiVersion and kind are required)")
                continue
            if doc["kind"] == "Kustomization":
                kustomization = (f, doc)
                continue
            name = (doc.get("metadata") or {}).get("name")
            if not name:
                problem(where, "metadata.name is missing")
                continue
            docs.append((f"{rel(path)}: {doc['kind']}/{name}", f, doc))

    # 1. Schemas (strict: unknown fields rejected).
    for where, _, doc in docs:
        try:
            kubernetes_validate.validate(doc, args.kubernetes_version, strict=True)
        except kubernetes_validate.ValidationError as e:
            at = ".".join(str(p) for p in e.path) or "(top level)"
            problem(where, f"schema (Kubernetes {e.version}): {at}: {e.message}")
        except SchemaNotFoundError as e:
            problem(where, e.message)
        except VersionNotSupportedError as e:
            print(f"deploy_validate: {e.message}", file=sys.stderr)
            return 2

    by = {}
    for where, f, doc in docs:
        key = (doc["kind"], doc["metadata"]["name"])
        if key in by:
            problem(where, "defined twice")
        by[key] = (where, doc)
        ns = doc["metadata"].get("namespace")
        if doc["kind"] not in CLUSTER_SCOPED and ns != NAMESPACE:
            problem(where, f"metadata.namespace must be {NAMESPACE!r}, got {ns!r}")

    # 2. kustomization.yaml lists every file, and only existing ones.
    if kustomization is None:
        problem(rel(d), "no kustomization.yaml")
    else:
        kf, k = kustomization
        listed = k.get("resources") or []
        others = [f for f in files if f != kf]
        for f in others:
            if f not in listed:
                problem(f"{rel(d)}/{kf}", f"resources does not list {f}")
        for f in listed:
            if f not in files:
                problem(f"{rel(d)}/{kf}", f"resources lists {f}, which does not exist")
        if k.get("namespace") != NAMESPACE:
            problem(f"{rel(d)}/{kf}", f"namespace must be {NAMESPACE!r}")

    configmaps = {n: doc for (kind, n), (_, doc) in by.items() if kind == "ConfigMap"}
    secrets = {n: doc for (kind, n), (_, doc) in by.items() if kind == "Secret"}
    services = {n: doc for (kind, n), (_, doc) in by.items() if kind == "Service"}
    secret_keys = {n: set((s.get("data") or {})) | set((s.get("stringData") or {})) for n, s in secrets.items()}

    def service_port(host, port):
        svc = services.get(host.split(".")[0])
        return svc is not None and any(p.get("port") == port for p in (svc.get("spec") or {}).get("ports") or [])

    # 3. Workloads.
    pod_labels = []
    for where, _, doc in docs:
        kind = doc["kind"]
        if kind not in WORKLOADS:
            continue
        pod, _ = pod_spec(doc)
        if kind == "Deployment":
            tmpl = (doc.get("spec") or {}).get("template") or {}
            labels = (tmpl.get("metadata") or {}).get("labels") or {}
            pod_labels.append(labels)
            sel = ((doc.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            if not sel or any(labels.get(k) != v for k, v in sel.items()):
                problem(where, "spec.selector.matchLabels does not match the pod template labels")
        psc = pod.get("securityContext") or {}
        if psc.get("runAsNonRoot") is not True:
            problem(where, "pod securityContext.runAsNonRoot must be true")
        volumes = {v.get("name"): v for v in pod.get("volumes") or []}
        containers = pod.get("containers") or []
        if not containers:
            problem(where, "no containers")
        refs_cm, refs_secret = set(), set()
        for init, c in [(True, c) for c in pod.get("initContainers") or []] + [(False, c) for c in containers]:
            cw = f"{where}: container {c.get('name')}"
            check_container(cw, c, pod, volumes, init)
            if kind in ("Deployment", "StatefulSet", "DaemonSet") and not init:
                for probe in ("readinessProbe", "livenessProbe"):
                    if probe not in c:
                        problem(cw, f"{probe} is missing")
            uses_secret = any("secretRef" in e for e in c.get("envFrom") or []) or any(
                "secretKeyRef" in (e.get("valueFrom") or {}) for e in c.get("env") or [])
            if init and uses_secret:
                problem(cw, "an init container must not get the object-store Secret")
            for e in c.get("envFrom") or []:
                if "secretRef" in e:
                    refs_secret.add((e["secretRef"].get("name"), None))
                if "configMapRef" in e:
                    refs_cm.add((e["configMapRef"].get("name"), None))
            for e in c.get("env") or []:
                vf = e.get("valueFrom") or {}
                if "secretKeyRef" in vf:
                    refs_secret.add((vf["secretKeyRef"].get("name"), vf["secretKeyRef"].get("key")))
                if "configMapKeyRef" in vf:
                    refs_cm.add((vf["configMapKeyRef"].get("name"), vf["configMapKeyRef"].get("key")))
            a = [str(x) for x in (c.get("args") or [])]
            if "--scheduler-host" in a and "--scheduler-port" in a:
                h, p = a[a.index("--scheduler-host") + 1], a[a.index("--scheduler-port") + 1]
                if not (p.isdigit() and service_port(h, int(p))):
                    problem(cw, f"--scheduler-host {h} --scheduler-port {p}: no such Service port here")
            if a[:1] == ["run"] and not init:
                if "--cluster" in a:
                    m = re.fullmatch(r"df://([^:/]+):(\d+)", a[a.index("--cluster") + 1])
                    if not m or not service_port(m.group(1), int(m.group(2))):
                        problem(cw, f"--cluster {a[a.index('--cluster') + 1]}: no such Service port here")
                if len(a) < 2 or not any(
                        a[1].startswith(mnt.get("mountPath", "").rstrip("/") + "/")
                        and "configMap" in volumes.get(mnt.get("name"), {})
                        for mnt in c.get("volumeMounts") or []):
                    problem(cw, "the job file given to `run` is not on a ConfigMap mount")
        for v in volumes.values():
            if "configMap" in v:
                cm = v["configMap"]
                refs_cm.add((cm.get("name"), None))
                for it in cm.get("items") or []:
                    refs_cm.add((cm.get("name"), it.get("key")))
            if "secret" in v:
                refs_secret.add((v["secret"].get("secretName"), None))
        for name, key in refs_cm:
            if name not in configmaps:
                problem(where, f"references ConfigMap {name!r}, which is not defined here")
            elif key is not None and key not in ((configmaps[name].get("data") or {})):
                problem(where, f"references key {key!r} of ConfigMap {name!r}, which it does not have")
        for name, key in refs_secret:
            if name not in secrets:
                problem(where, f"references Secret {name!r}, which is not defined here")
            elif key is not None and key not in secret_keys[name]:
                problem(where, f"references key {key!r} of Secret {name!r}, which it does not have")
        if kind in ("Job", "CronJob"):
            if not refs_cm:
                problem(where, "uses no ConfigMap (the job file)")
            if not refs_secret:
                problem(where, "uses no Secret (object-store credentials)")
            js = job_spec(doc)
            if pod.get("restartPolicy") not in ("Never", "OnFailure"):
                problem(where, "restartPolicy must be Never or OnFailure")
            for field in ("backoffLimit", "activeDeadlineSeconds"):
                if field not in js:
                    problem(where, f"job spec has no {field}")
            if kind == "CronJob" and (doc.get("spec") or {}).get("concurrencyPolicy") != "Forbid":
                problem(where, "concurrencyPolicy must be Forbid (two runs must not write the same output)")

    # Services select some Deployment's pods.
    for where, _, doc in docs:
        if doc["kind"] == "Service":
            sel = (doc.get("spec") or {}).get("selector") or {}
            if not any(all(l.get(k) == v for k, v in sel.items()) for l in pod_labels) or not sel:
                problem(where, "spec.selector matches no Deployment's pods")

    check_network(docs, pod_labels_by_component(docs))

    # Secret templates hold placeholders only.
    for n, s in secrets.items():
        where = by[("Secret", n)][0]
        for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            v = (s.get("stringData") or {}).get(k)
            if k in (s.get("data") or {}) or (v is not None and "REPLACE" not in str(v)):
                problem(where, f"{k} must be a REPLACE-ME placeholder: real credentials come from the secret store")

    # The ConfigMap's job file is configs/cluster.toml, with only known keys.
    for n, cm in configmaps.items():
        where = by[("ConfigMap", n)][0]
        for key, text in (cm.get("data") or {}).items():
            if not key.endswith(".toml"):
                continue
            if os.path.exists(args.job):
                with open(args.job) as fh:
                    if fh.read() != text:
                        problem(where, f"data[{key!r}] differs from {rel(args.job)}")
            if tomllib is None:
                continue
            try:
                job = tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                problem(where, f"data[{key!r}]: not valid TOML: {e}")
                continue
            for section, body in job.items():
                if section not in JOB_KEYS[""]:
                    problem(where, f"data[{key!r}]: unknown section [{section}]")
                    continue
                for entry in body if isinstance(body, list) else [body]:
                    for k2, v2 in entry.items():
                        if k2 not in JOB_KEYS[section]:
                            problem(where, f"data[{key!r}]: unknown key {section}.{k2}")
                        elif k2 == "secondary" and isinstance(v2, dict):
                            for k3 in v2:
                                if k3 not in JOB_KEYS["secondary"]:
                                    problem(where, f"data[{key!r}]: unknown key {section}.secondary.{k3}")

    if problems:
        for p in dict.fromkeys(problems):
            print(p)
        print(f"deploy manifests: {len(dict.fromkeys(problems))} problem(s) in {len(files)} files under {rel(d)}")
        return 1
    print(f"deploy manifests: {len(files)} files valid ({len(docs)} resources, Kubernetes "
          f"{args.kubernetes_version} schemas, kubernetes-validate {kubernetes_validate.version.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
