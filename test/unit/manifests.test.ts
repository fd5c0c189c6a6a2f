// `appstack manifests`: the install program rendered to YAML by the pinned engine and provider, with
// no cluster: what it holds (every object of the install, no credential, the Secrets named), the
// order kubectl needs, and that it leaves nothing behind (no stack file beside the program, no
// temporary folder). Applying it to a real node is test/real-node/in-cluster.test.ts's.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import yaml from "js-yaml";
import { ruleGroups } from "../../components/prometheus-rule.ts";
import { repoRoot } from "../../toolchain/tools.ts";
import { installReaderRole } from "../helpers/metrics-reader.ts";

type Manifest = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; spec?: Record<string, unknown> };

// The command's temporary folders go to a folder of this file's own (TMPDIR), so that another test
// rendering at the same time (cluster install on a real node) cannot be taken for a leftover.
const scratch = mkdtempSync(join(tmpdir(), "manifests-test-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

function manifests(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [join(repoRoot, "operator/cmd/appstack.mjs"), "manifests", ...args], { cwd: repoRoot, encoding: "utf8", env: { ...process.env, KUBECONFIG: "/nonexistent", TMPDIR: scratch } });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const leftovers = () => readdirSync(scratch).filter((name) => name.startsWith("appstack-manifests-"));

test("a rendered install holds every object of the install in the order kubectl needs, refers to the user's Secret and holds no credential", () => {
  const before = leftovers();
  const rendered = manifests("--passphrase-secret", "team-credentials", "--watch-namespaces", "team-a,team-b", "--image", "registry.example/appstack:0.1.0");
  assert.equal(rendered.status, 0, rendered.stderr);
  assert.match(rendered.stdout, /^# appstack \S+: the install, rendered by `appstack manifests --passphrase-secret team-credentials --watch-namespaces team-a,team-b --image registry\.example\/appstack:0\.1\.0`\.\n# It refers to Secrets you make in namespace appstack-system: team-credentials \(key passphrase\)\./);
  const objects = yaml.loadAll(rendered.stdout) as Manifest[];
  const names = objects.map((object) => `${object.kind} ${object.metadata.namespace ?? ""}/${object.metadata.name}`);
  assert.deepEqual(names.filter((name) => name.startsWith("CustomResourceDefinition")), ["CustomResourceDefinition /apps.appstack.dev", "CustomResourceDefinition /memcacheds.appstack.dev"]);
  for (const expected of ["Namespace /appstack-system", "ServiceAccount appstack-system/appstack-operator", "Deployment appstack-system/appstack-operator", "PersistentVolumeClaim appstack-system/appstack-operator-state", "RoleBinding team-a/appstack-operator-appstack", "RoleBinding team-b/appstack-operator-appstack", "ValidatingAdmissionPolicy /appstack.dev-ownership", "ValidatingAdmissionPolicy /appstack.dev-approve"]) {
    assert.ok(names.includes(expected), `${expected} in ${names.join(", ")}`);
  }
  // CRDs, then the namespace, before anything that lives in it.
  const firstNamespaced = objects.findIndex((object) => object.metadata.namespace === "appstack-system");
  assert.ok(names.indexOf("Namespace /appstack-system") < firstNamespaced);
  assert.equal(objects.findIndex((object) => object.kind !== "CustomResourceDefinition"), 2);
  // No Secret: the passphrase comes from the user's.
  assert.ok(!objects.some((object) => object.kind === "Secret"), names.join(", "));
  const deployment = objects.find((object) => object.kind === "Deployment")!;
  const podSpec = (deployment.spec as { template: { spec: { volumes: { name: string; secret?: { secretName: string } }[]; containers: { image: string; env: { name: string; value?: string; valueFrom?: unknown }[] }[] } } }).template.spec;
  const container = podSpec.containers[0]!;
  assert.equal(container.image, "registry.example/appstack:0.1.0");
  // The user's Secret, mounted as a file: no variable holds the passphrase.
  assert.equal(container.env.find((e) => e.name === "APPSTACK_PASSPHRASE"), undefined);
  assert.equal(container.env.find((e) => e.name === "APPSTACK_PASSPHRASE_FILE")?.value, "/etc/appstack/passphrase/passphrase");
  assert.equal(podSpec.volumes.find((volume) => volume.name === "passphrase")?.secret?.secretName, "team-credentials");
  // Off by default: no metrics per object, no metrics Service, no ServiceMonitor.
  assert.equal(container.env.find((e) => e.name === "APPSTACK_OBJECT_METRICS"), undefined);
  // /metrics over HTTPS on its own port, with a self-signed certificate (no folder named); the
  // operator may review tokens and access (the reviews are not namespaced: a ClusterRoleBinding even
  // for a list of namespaces), and a reader ClusterRole is there to bind a scraper to.
  assert.equal((container.env.find((e) => e.name === "APPSTACK_METRICS_ADDR") as { value?: string } | undefined)?.value, ":8443");
  assert.equal(container.env.find((e) => e.name === "APPSTACK_METRICS_CERT_DIR"), undefined);
  type Role = Manifest & { rules: { apiGroups?: string[]; resources?: string[]; nonResourceURLs?: string[]; verbs: string[] }[] };
  const role = (name: string) => objects.find((object) => object.kind === "ClusterRole" && object.metadata.name === name) as Role | undefined;
  assert.deepEqual(role("appstack-operator-appstack-metrics-auth")?.rules, [
    { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
    { apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"], verbs: ["create"] },
  ]);
  const authBinding = objects.find((object) => object.kind === "ClusterRoleBinding" && object.metadata.name === "appstack-operator-appstack-metrics-auth") as unknown as { subjects: { name: string; namespace: string }[] };
  assert.deepEqual(authBinding.subjects.map((subject) => `${subject.namespace}/${subject.name}`), ["appstack-system/appstack-operator"]);
  assert.deepEqual(role(installReaderRole)?.rules, [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }]);
  assert.ok(!objects.some((object) => object.kind === "Service" || object.kind === "ServiceMonitor" || object.kind === "PrometheusRule"), names.join(", "));
  // Nothing left: no stack configuration beside the program, no temporary folder.
  assert.ok(!existsSync(join(repoRoot, "Pulumi.manifests.yaml")));
  assert.deepEqual(leftovers(), before);
});

test("with a database: the URL from the user's Secret, no state volume, replicas rolling; with --service-monitor a metrics Service and a ServiceMonitor that scrapes every replica; with --network-policy the operator's NetworkPolicy; with --prometheus-rule the alerts; bad options refused before anything is rendered", () => {
  const rendered = manifests("--passphrase-secret", "creds", "--backend-secret", "db", "--replicas", "2", "--service-monitor", "true", "--object-metrics", "true", "--default-service-account", "appstack-tenant", "--network-policy", "true", "--prometheus-rule", "true");
  assert.equal(rendered.status, 0, rendered.stderr);
  const objects = yaml.loadAll(rendered.stdout) as Manifest[];
  assert.ok(!objects.some((object) => object.kind === "PersistentVolumeClaim" || object.kind === "Secret"));
  const spec = objects.find((object) => object.kind === "Deployment")!.spec as { replicas: number; strategy: { type: string }; template: { spec: { containers: { env: { name: string; value?: string; valueFrom?: unknown }[] }[] } } };
  assert.equal(spec.replicas, 2);
  assert.equal(spec.strategy.type, "RollingUpdate");
  const env = spec.template.spec.containers[0]!.env;
  assert.deepEqual(env.find((e) => e.name === "APPSTACK_BACKEND_URL")?.valueFrom, { secretKeyRef: { name: "db", key: "backendUrl" } });
  assert.equal(env.find((e) => e.name === "APPSTACK_SHARDING")?.value, "true");
  assert.equal(env.find((e) => e.name === "APPSTACK_OBJECT_METRICS")?.value, "true");
  // Tenant identities: the setting, and a ClusterRole that impersonates ServiceAccounts and only reads the children.
  assert.equal(env.find((e) => e.name === "APPSTACK_DEFAULT_SERVICE_ACCOUNT")?.value, "appstack-tenant");
  const rules = (objects.find((object) => object.kind === "ClusterRole" && object.metadata.name === "appstack-operator-appstack") as unknown as { rules: { resources: string[]; verbs: string[] }[] }).rules;
  const verbsOn = (resource: string) => rules.filter((rule) => rule.resources.includes(resource)).flatMap((rule) => rule.verbs);
  assert.deepEqual(verbsOn("serviceaccounts"), ["impersonate"]);
  assert.deepEqual(verbsOn("deployments"), ["get", "list", "watch"]);

  // The Service selects the operator's pods and names their metrics port; the ServiceMonitor selects
  // that Service by its labels, and scrapes its port by name over HTTPS with Prometheus's own token,
  // not verifying the self-signed certificate (kubebuilder's scaffold).
  type Labelled = Manifest & { metadata: { labels: Record<string, string> } };
  const service = objects.find((object) => object.kind === "Service") as Labelled & { spec: { selector: Record<string, string>; ports: { name: string; port: number; targetPort: string }[] } };
  const monitor = objects.find((object) => object.kind === "ServiceMonitor") as Labelled & { spec: { selector: { matchLabels: Record<string, string> }; namespaceSelector: { matchNames: string[] }; endpoints: Record<string, unknown>[] } };
  assert.ok(service && monitor, objects.map((object) => object.kind).join(", "));
  assert.equal(monitor.apiVersion, "monitoring.coreos.com/v1");
  const podLabels = (spec as unknown as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
  assert.deepEqual(service.spec.selector, podLabels);
  const metricsPort = (spec.template.spec.containers[0] as unknown as { ports: { name: string; containerPort: number }[] }).ports.find((port) => port.name === "metrics")!;
  assert.deepEqual(service.spec.ports.map((port) => [port.name, port.port, port.targetPort]), [["metrics", metricsPort.containerPort, metricsPort.name]]);
  assert.deepEqual(monitor.spec.selector.matchLabels, service.metadata.labels);
  assert.deepEqual(monitor.spec.namespaceSelector.matchNames, [service.metadata.namespace]);
  assert.deepEqual(monitor.spec.endpoints, [{ port: "metrics", path: "/metrics", scheme: "https", bearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token", tlsConfig: { insecureSkipVerify: true } }]);
  // No other Service of the install carries the label the ServiceMonitor selects.
  assert.equal(objects.filter((object) => object.kind === "Service").length, 1);
  // The Service after the namespace, the ServiceMonitor and the PrometheusRule (whose CRDs the Prometheus operator brings) last.
  assert.deepEqual(objects.slice(-2).map((object) => object.kind), ["ServiceMonitor", "PrometheusRule"]);
  // The alerts, for this install's namespace, as components/prometheus-rule.ts has them (test/unit/prometheus-rule.test.ts checks the rules).
  const alerts = objects.at(-1)!;
  assert.deepEqual([alerts.apiVersion, alerts.metadata.namespace, alerts.metadata.name], ["monitoring.coreos.com/v1", "appstack-system", "appstack-operator-alerts"]);
  assert.deepEqual(alerts.spec, ruleGroups("appstack-system"));
  // The NetworkPolicy selects the operator's pods; a database behind a Secret is let out on PostgreSQL's port.
  const policy = objects.find((object) => object.kind === "NetworkPolicy") as Manifest & { spec: { podSelector: { matchLabels: Record<string, string> }; egress: { ports: { port: number }[] }[] } };
  assert.deepEqual(policy.spec.podSelector.matchLabels, podLabels);
  assert.ok(policy.spec.egress.some((rule) => rule.ports.some((port) => port.port === 5432)));

  const noPassphrase = manifests("--replicas", "1");
  assert.equal(noPassphrase.status, 1);
  assert.match(noPassphrase.stderr, /--passphrase-secret is required/);
  assert.match(noPassphrase.stderr, /usage: appstack manifests/);
  // The install's own checks, in its words: two replicas need a database.
  const onVolume = manifests("--passphrase-secret", "creds", "--replicas", "2");
  assert.equal(onVolume.status, 1);
  assert.match(onVolume.stderr, /appstack:replicas 2 needs a PostgreSQL/);
  assert.equal(onVolume.stdout, "");
});

test("with --metrics-cert-secret: the Secret mounted and named to the operator, and the ServiceMonitor verifies the certificate with its CA for the Service's name", () => {
  const rendered = manifests("--passphrase-secret", "creds", "--service-monitor", "true", "--metrics-cert-secret", "metrics-tls");
  assert.equal(rendered.status, 0, rendered.stderr);
  assert.match(rendered.stdout, /It refers to Secrets you make in namespace appstack-system: creds \(key passphrase\), metrics-tls \(type kubernetes\.io\/tls\)\./);
  const objects = yaml.loadAll(rendered.stdout) as Manifest[];
  type Pod = { containers: { env: { name: string; value?: string }[]; volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[] }[]; volumes: { name: string; secret?: { secretName: string } }[] };
  const pod = (objects.find((object) => object.kind === "Deployment")!.spec as { template: { spec: Pod } }).template.spec;
  const container = pod.containers[0]!;
  const certDir = container.env.find((e) => e.name === "APPSTACK_METRICS_CERT_DIR")?.value;
  const mount = container.volumeMounts.find((m) => m.mountPath === certDir);
  assert.ok(mount?.readOnly, JSON.stringify(container.volumeMounts));
  assert.equal(pod.volumes.find((volume) => volume.name === mount.name)?.secret?.secretName, "metrics-tls");
  const monitor = objects.find((object) => object.kind === "ServiceMonitor") as Manifest & { spec: { endpoints: { tlsConfig: unknown }[] } };
  assert.deepEqual(monitor.spec.endpoints[0]?.tlsConfig, { serverName: "appstack-operator-metrics.appstack-system.svc", ca: { secret: { name: "metrics-tls", key: "ca.crt" } } });
});
