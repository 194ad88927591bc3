"""Offline validation of deploy/kubernetes/*.yaml (nothing reaches a cluster).

1. Every document parses (PyYAML) and deserializes into the `kubernetes` client's model for its
   kind (V1Job, V1Deployment, V1Secret) with client-side validation on (required fields).
   Deserialization silently drops unknown fields, so each document is also serialized back and
   compared with the YAML: a misspelled or misplaced field fails.
2. What the manifests promise: non-root user = the image's uid, read-only root, no privilege
   escalation, the key from a Secret volume as a file (never an environment variable), stats
   JSON on stdout, no shell anywhere; the soak Jobs: backoffLimit 0, restartPolicy Never and a
   memory limit equal to --memory-budget; the Deployment: Recreate, a grace period above
   broadcast's 2 s stop, no --duration.
3. The container args are accepted by the real CLI: `broadcast ARGS --print-memory-plan` with
   the key file swapped for a local one and the budget the pod would get (exit 0, "fits").
"""
from __future__ import annotations

import inspect
import json
import re
import subprocess
import tempfile
import unittest
from pathlib import Path

from support import BROADCAST_BIN, REPO_ROOT

MANIFEST_DIR = REPO_ROOT / "deploy" / "kubernetes"
APP_UID = 10001
MODELS = {("batch/v1", "Job"): "V1Job", ("apps/v1", "Deployment"): "V1Deployment", ("v1", "Secret"): "V1Secret",
          ("v1", "Namespace"): "V1Namespace"}
NAMESPACE = "broadcast"
SHELLS = re.compile(r"(^|/)(sh|bash|dash|ash|busybox)$")

try:
    import yaml
    import kubernetes.client
except ImportError as e:  # a missing dependency is a failure, never a skip
    yaml = None
    IMPORT_ERROR = f"{e} (add PyYAML and kubernetes: scripts/bootstrap installs requirements.txt)"
else:
    IMPORT_ERROR = ""


def quantity_bytes(q: str) -> int:
    """A Kubernetes memory quantity ("50Mi", "64M") or a broadcast SIZE ("50M" = MiB) in bytes."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|K|M|G|k)?", str(q))
    assert m, f"unsupported quantity {q!r}"
    scale = {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "k": 1000, "K": 1000, "M": 10**6, "G": 10**9}
    return int(float(m.group(1)) * scale[m.group(2)])


def broadcast_size(s: str) -> int:
    """broadcast's SIZE: binary units (50M = 50 MiB)."""
    m = re.fullmatch(r"(\d+)([KMG])?(i?B)?", s)
    assert m, s
    return int(m.group(1)) * {None: 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]


def qos_class(pod_spec) -> str:
    """Kubernetes' QoS class of a pod: Guaranteed when every container limits CPU and memory and
    requests (when given) equal the limits; BestEffort with no requests or limits; else Burstable."""
    containers = pod_spec.containers
    if all(not (c.resources and (c.resources.limits or c.resources.requests)) for c in containers):
        return "BestEffort"
    for c in containers:
        limits = (c.resources.limits or {}) if c.resources else {}
        requests = (c.resources.requests or {}) if c.resources else {}
        for r in ("cpu", "memory"):
            if r not in limits or quantity_value(requests.get(r, limits[r])) != quantity_value(limits[r]):
                return "Burstable"
    return "Guaranteed"


def quantity_value(q) -> float:
    """A CPU or memory quantity as a number ("2", "500m", "50Mi")."""
    q = str(q)
    if q.endswith("m"):
        return float(q[:-1]) / 1000
    return float(quantity_bytes(q))


def readme_kubernetes() -> tuple[dict, list[str]]:
    """docs/containers.md's Kubernetes section: the file table (file -> its row) and the kubectl lines."""
    text = (REPO_ROOT / "docs" / "containers.md").read_text()
    section = text[text.index("## Kubernetes (`deploy/kubernetes/`)"):]
    section = section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([a-z0-9.-]+\.yaml)` \|.*$", section, re.M)}
    lines = [l.strip() for l in section.splitlines() if l.strip().startswith("kubectl ")]
    return rows, lines


def load_documents() -> list[tuple[Path, dict]]:
    docs = []
    for path in sorted(MANIFEST_DIR.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is not None:
                docs.append((path, doc))
    return docs


class _Response:
    def __init__(self, data: dict):
        self.data = json.dumps(data)


def to_model(doc: dict):
    model = MODELS.get((doc.get("apiVersion"), doc.get("kind")))
    if model is None:
        raise AssertionError(f"unexpected apiVersion/kind {doc.get('apiVersion')}/{doc.get('kind')}")
    api = kubernetes.client.ApiClient()
    params = inspect.signature(api.deserialize).parameters
    if "content_type" in params:  # newer clients: (text, type, content_type)
        return api, api.deserialize(json.dumps(doc), model, "application/json")
    return api, api.deserialize(_Response(doc), model)  # older clients: (response, type)


def probe_exec(probe):
    if probe is None:
        return None
    return getattr(probe, "_exec", None) or getattr(probe, "var_exec", None)


def unknown_fields(original, roundtrip, path="") -> list[str]:
    """Keys present in the YAML but lost by the model round trip (unknown to the API)."""
    lost = []
    if isinstance(original, dict):
        if not isinstance(roundtrip, dict):
            return [path or "/"]
        for k, v in original.items():
            if k not in roundtrip:
                lost.append(f"{path}/{k}")
            else:
                lost += unknown_fields(v, roundtrip[k], f"{path}/{k}")
    elif isinstance(original, list):
        if not isinstance(roundtrip, list) or len(roundtrip) != len(original):
            return [path]
        for i, (a, b) in enumerate(zip(original, roundtrip)):
            lost += unknown_fields(a, b, f"{path}[{i}]")
    return lost


def arg_value(args: list[str], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args else None


class ManifestTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if IMPORT_ERROR:
            raise AssertionError(IMPORT_ERROR)
        if not MANIFEST_DIR.is_dir():
            raise AssertionError(f"{MANIFEST_DIR} missing")
        cls.docs = load_documents()
        cls.workloads = [(p, d) for p, d in cls.docs if d.get("kind") in ("Job", "Deployment")]
        cls.secrets = {d["metadata"]["name"]: d for _, d in cls.docs if d.get("kind") == "Secret"}

    def test_expected_manifests_present(self):
        kinds = sorted((p.name, d["kind"], d["metadata"]["name"]) for p, d in self.docs)
        self.assertIn(("deployment.yaml", "Deployment", "broadcast-live"), kinds)
        self.assertIn(("soak-job.yaml", "Job", "broadcast-soak"), kinds)
        self.assertIn(("soak-indexed-job.yaml", "Job", "broadcast-soak-fleet"), kinds)
        self.assertIn("broadcast-stream-key", self.secrets)

    def test_namespace_manifest_and_readme_commands_name_it(self):
        namespaces = [d for _, d in self.docs if d.get("kind") == "Namespace"]
        self.assertEqual([d["metadata"]["name"] for d in namespaces], [NAMESPACE], "a Namespace manifest")
        for path, doc in self.docs:
            if doc.get("kind") != "Namespace":
                with self.subTest(file=path.name, name=doc["metadata"]["name"]):
                    self.assertEqual(doc["metadata"].get("namespace"), NAMESPACE)
        rows, lines = readme_kubernetes()
        self.assertIn("namespace.yaml", rows, "the README lists the Namespace manifest")
        self.assertTrue(lines, "the README shows kubectl commands")
        self.assertEqual(lines[0], "kubectl apply -f deploy/kubernetes/namespace.yaml", "the namespace comes first")
        for line in lines[1:]:
            with self.subTest(line=line):
                self.assertRegex(line, rf"^kubectl (-n|--namespace) {NAMESPACE} ")

    def test_qos_statements_are_true(self):
        rows, _ = readme_kubernetes()
        claims = 0
        for path, doc in self.workloads:
            _, obj = to_model(doc)
            qos = qos_class(obj.spec.template.spec)
            row = rows.get(path.name, "")
            for cls in ("Guaranteed", "Burstable", "BestEffort"):
                if f"{cls} QoS" in row:
                    claims += 1
                    with self.subTest(file=path.name):
                        self.assertEqual(qos, cls, f"the README says {cls} QoS for {path.name}")
            if doc["kind"] == "Job":
                with self.subTest(file=path.name):
                    self.assertEqual(qos, "Guaranteed", "a soak run is measured on guaranteed CPU and memory")
        self.assertGreaterEqual(claims, 2, "the README states the QoS of the workloads")
        # The rule itself, on the case the README got wrong: CPU requested without a CPU limit.
        pod = kubernetes.client.V1PodSpec(containers=[kubernetes.client.V1Container(
            name="c", resources=kubernetes.client.V1ResourceRequirements(
                requests={"cpu": "2", "memory": "50Mi"}, limits={"memory": "50Mi"}))])
        self.assertEqual(qos_class(pod), "Burstable")

    def test_models_deserialize_without_unknown_fields(self):
        for path, doc in self.docs:
            with self.subTest(file=path.name, name=doc.get("metadata", {}).get("name")):
                api, obj = to_model(doc)
                self.assertIsNotNone(obj.metadata and obj.metadata.name, "metadata.name is required")
                back = api.sanitize_for_serialization(obj)
                self.assertEqual(unknown_fields(doc, back), [], "fields unknown to the Kubernetes API")
                if doc["kind"] == "Namespace":
                    continue
                if doc["kind"] in ("Job", "Deployment"):
                    spec = obj.spec.template.spec
                    self.assertTrue(spec.containers, "a pod needs containers")
                    for c in spec.containers:
                        self.assertTrue(c.name and c.image, "container name and image are required")
                if doc["kind"] == "Deployment":
                    labels = obj.spec.template.metadata.labels or {}
                    for k, v in obj.spec.selector.match_labels.items():
                        self.assertEqual(labels.get(k), v, "the selector must match the template labels")

    def test_validator_catches_mistakes(self):
        """The checks above can fail: a misspelled field, a misplaced one, a missing required one."""
        import copy
        (_, job), = [(p, d) for p, d in self.workloads if d["metadata"]["name"] == "broadcast-soak"]
        typo = copy.deepcopy(job)
        typo["spec"]["backofLimit"] = typo["spec"].pop("backoffLimit")
        typo["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFileSystem"] = True
        api, obj = to_model(typo)
        lost = unknown_fields(typo, api.sanitize_for_serialization(obj))
        self.assertIn("/spec/backofLimit", lost)
        self.assertTrue(any(p.endswith("/securityContext/readOnlyRootFileSystem") for p in lost), lost)
        nameless = copy.deepcopy(job)
        del nameless["spec"]["template"]["spec"]["containers"][0]["name"]
        with self.assertRaises(Exception):
            to_model(nameless)

    def test_pod_security_and_key_as_file(self):
        for path, doc in self.workloads:
            with self.subTest(file=path.name):
                _, obj = to_model(doc)
                pod = obj.spec.template.spec
                psc = pod.security_context
                self.assertTrue(psc.run_as_non_root)
                self.assertEqual(psc.run_as_user, APP_UID, "the image's numeric user")
                self.assertFalse(pod.automount_service_account_token)
                (c,) = pod.containers
                sc = c.security_context
                self.assertTrue(sc.read_only_root_filesystem)
                self.assertFalse(sc.allow_privilege_escalation)
                self.assertIn("ALL", sc.capabilities.drop)
                # No shell: the image has none, so nothing may try to run one.
                probes = [probe_exec(p) for p in (c.liveness_probe, c.readiness_probe, c.startup_probe)]
                for argv in [c.command or [], *[e.command for e in probes if e]]:
                    self.assertFalse(argv and SHELLS.search(argv[0]), f"a shell in {argv}")
                if c.command:
                    self.assertEqual(c.command[0], "/usr/local/bin/broadcast")
                # The key: a file from a Secret volume; never an environment variable.
                for env in c.env or []:
                    self.assertNotIn(env.name, ("STREAM_KEY", "BROADCAST_URL"))
                    self.assertFalse(env.value_from and env.value_from.secret_key_ref,
                                     f"secret as environment variable: {env.name}")
                self.assertFalse(c.env_from, "envFrom would put secrets into the environment")
                key_file = arg_value(c.args, "--key-file")
                self.assertIsNotNone(key_file, "--key-file")
                self.assertNotIn("--key", c.args, "--key on the command line is visible to ps")
                mounts = {m.mount_path: m for m in c.volume_mounts}
                mount = next((m for p, m in mounts.items() if key_file.startswith(p.rstrip("/") + "/")), None)
                self.assertIsNotNone(mount, f"{key_file} is on no volume mount")
                self.assertTrue(mount.read_only)
                vol = next(v for v in pod.volumes if v.name == mount.name)
                self.assertIsNotNone(vol.secret, "the key volume must be a Secret")
                self.assertLessEqual(vol.secret.default_mode, 0o440, "the key file is not world-readable")
                self.assertEqual(psc.fs_group, APP_UID, "fsGroup lets the non-root user read the key")
                # stats for the log collector
                self.assertEqual(arg_value(c.args, "--stats-json"), "/dev/stdout")
                # Read-only root: /tmp is a (small) emptyDir.
                self.assertIn("/tmp", mounts)

    def test_soak_jobs(self):
        jobs = [(p, d) for p, d in self.workloads if d["kind"] == "Job"]
        self.assertTrue(jobs)
        for path, doc in jobs:
            with self.subTest(file=path.name):
                _, job = to_model(doc)
                self.assertEqual(job.spec.backoff_limit, 0, "the first exit code is the Job's result")
                pod = job.spec.template.spec
                self.assertEqual(pod.restart_policy, "Never")
                (c,) = pod.containers
                budget = arg_value(c.args, "--memory-budget")
                self.assertIsNotNone(budget, "a soak run states its budget")
                limit = c.resources.limits["memory"]
                self.assertEqual(quantity_bytes(limit), broadcast_size(budget),
                                 f"memory limit {limit} must equal --memory-budget {budget}")
                self.assertEqual(c.resources.requests["memory"], limit, "Guaranteed memory")
                self.assertIsNotNone(arg_value(c.args, "--duration"), "a soak run ends by itself")
                self.assertGreater(job.spec.active_deadline_seconds, int(arg_value(c.args, "--duration")))
                if job.spec.completion_mode == "Indexed":
                    self.assertIn("$(JOB_COMPLETION_INDEX)", arg_value(c.args, "--key-file"))
                    self.assertEqual(job.spec.parallelism, job.spec.completions)
                    vol = next(v for v in pod.volumes if v.secret)
                    keys = self.secrets[vol.secret.secret_name]["stringData"]
                    for i in range(job.spec.completions):
                        self.assertIn(f"key-{i}", keys, f"no key for index {i}")

    def test_deployment(self):
        (path, doc), = [(p, d) for p, d in self.workloads if d["kind"] == "Deployment"]
        _, dep = to_model(doc)
        self.assertEqual(dep.spec.replicas, 1)
        self.assertEqual(dep.spec.strategy.type, "Recreate", "two publishers of one key would collide")
        pod = dep.spec.template.spec
        self.assertGreaterEqual(pod.termination_grace_period_seconds, 5, "broadcast stops in <= 2 s")
        (c,) = pod.containers
        self.assertNotIn("--duration", c.args)
        self.assertIn("memory", c.resources.limits)
        # Liveness without a shell: the stream bumps --heartbeat, the probe is the same binary
        # checking that file, which sits on a writable volume (the root filesystem is read-only).
        beat = arg_value(c.args, "--heartbeat")
        self.assertIsNotNone(beat, "--heartbeat")
        probe = probe_exec(c.liveness_probe).command
        self.assertEqual(probe[:3], ["/usr/local/bin/broadcast", "--check-heartbeat", beat])
        self.assertIn(probe[3:], ([], ["--max-age", probe[-1]]))
        self.assertTrue(any(beat.startswith(m.mount_path.rstrip("/") + "/") and not m.read_only
                            for m in c.volume_mounts), f"{beat} is on no writable volume")
        if BROADCAST_BIN.exists():
            with tempfile.TemporaryDirectory() as tmp:
                argv = [str(BROADCAST_BIN)] + probe[1:]
                argv[2] = str(Path(tmp) / "heartbeat")
                missing = subprocess.run(argv, capture_output=True, text=True, timeout=30)
                self.assertEqual(missing.returncode, 1, missing.stderr)
                Path(argv[2]).write_text("1\n")
                fresh = subprocess.run(argv, capture_output=True, text=True, timeout=30)
                self.assertEqual((fresh.returncode, fresh.stderr), (0, ""))
        # Secret items referenced by the volumes exist in the example Secret.
        for v in pod.volumes:
            if v.secret:
                data = self.secrets[v.secret.secret_name]["stringData"]
                for item in v.secret.items or []:
                    self.assertIn(item.key, data)

    def test_args_accepted_by_the_cli(self):
        if not BROADCAST_BIN.exists():
            self.fail(f"{BROADCAST_BIN} not built (run scripts/build)")
        with tempfile.TemporaryDirectory() as tmp:
            keyfile = Path(tmp) / "key"
            keyfile.write_text("manifest-check-not-a-key\n")
            for path, doc in self.workloads:
                with self.subTest(file=path.name):
                    _, obj = to_model(doc)
                    (c,) = obj.spec.template.spec.containers
                    args = list(c.args)
                    args[args.index("--key-file") + 1] = str(keyfile)
                    if "--memory-budget" not in args:
                        # What the pod gets from its cgroup: min(50 MB, limit - 1.5 MB of kernel
                        # memory - 4 MB per recording) (MemoryBudget.resolve).
                        limit = quantity_bytes(c.resources.limits["memory"])
                        recordings = args.count("--record")
                        budget = min(50 << 20, limit - (3 << 19) - recordings * (4 << 20))
                        args += ["--memory-budget", str(budget)]
                    r = subprocess.run([str(BROADCAST_BIN), *args, "--print-memory-plan"], capture_output=True,
                                       text=True, timeout=60)
                    self.assertEqual(r.returncode, 0, f"{path.name}: {r.stderr}{r.stdout}")
                    self.assertIn("fits", r.stdout, r.stdout)


if __name__ == "__main__":
    unittest.main()
