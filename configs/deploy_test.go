package configs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The deploy recipes in configs/deploy parse, and say what the README
// promises: one run at a time, the token from a secret and never in a
// file, a time missed while down caught up, and a stop that leaves time
// for schedule.grace.

// tokenLike finds a value that looks like a pasted token.
var tokenLike = regexp.MustCompile(`(?i)(token|secret|password)\s*[:=]\s*["']?[A-Za-z0-9_\-]{16,}`)

func readDeploy(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("deploy", rel))
	if err != nil {
		t.Fatal(err)
	}
	if m := tokenLike.Find(b); m != nil {
		t.Errorf("%s holds what looks like a token: %q", rel, m)
	}
	return b
}

func TestDeployCrontab(t *testing.T) {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(readDeploy(t, "crontab")))
	env := regexp.MustCompile(`^[A-Z_]+=`)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || env.MatchString(line) {
			continue
		}
		lines = append(lines, line)
	}
	if len(lines) != 1 {
		t.Fatalf("%d crontab entries, want 1: %q", len(lines), lines)
	}
	f := strings.Fields(lines[0])
	if len(f) < 6 {
		t.Fatalf("crontab line %q: want 5 time fields and a command", lines[0])
	}
	spec := strings.Join(f[:5], " ")
	if _, err := ParseCron(spec); err != nil {
		t.Fatalf("crontab times: %v", err)
	}
	cmd := strings.Join(f[5:], " ")
	if !strings.HasPrefix(f[5], "/") || !strings.Contains(cmd, "tally run --config ") || !strings.Contains(cmd, "--job nightly") {
		t.Fatalf("crontab command %q: want the absolute path of tally run --config … --job nightly", cmd)
	}
	// The same time as the job the config names, so tally status is right.
	if want := strings.TrimPrefix(deployConfig(t, "kubernetes/cronjob.yaml").Schedule.Jobs[0].Cron, "CRON_TZ=UTC "); spec != want {
		t.Errorf("crontab time %q, the job's cron %q", spec, want)
	}
}

// unit is a systemd unit file: section → key → values (a key may repeat).
type unit map[string]map[string][]string

// parseUnit reads systemd's unit-file syntax: [Section] headers, Key=Value
// lines, # and ; comments, a trailing backslash continuing a line. Anything
// else is an error, as systemd would log it.
func parseUnit(r io.Reader) (unit, error) {
	u := unit{}
	section := ""
	sc := bufio.NewScanner(r)
	var cont string
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if cont != "" {
			line = cont + " " + line
			cont = ""
		}
		if strings.HasSuffix(line, `\`) {
			cont = strings.TrimSuffix(line, `\`)
			continue
		}
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			if !strings.HasSuffix(line, "]") || len(line) < 3 {
				return nil, errors.New("line " + line + ": bad section header")
			}
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		default:
			k, v, ok := strings.Cut(line, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" || strings.ContainsAny(k, " \t") {
				return nil, errors.New("line " + line + ": not Key=Value")
			}
			if section == "" {
				return nil, errors.New("line " + line + ": key outside any section")
			}
			u[section][k] = append(u[section][k], strings.TrimSpace(v))
		}
	}
	if cont != "" {
		return nil, errors.New("file ends in a continued line")
	}
	return u, sc.Err()
}

func (u unit) get(section, key string) string {
	if v := u[section][key]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

func TestDeploySystemd(t *testing.T) {
	service, err := parseUnit(bytes.NewReader(readDeploy(t, "systemd/tally-nightly.service")))
	if err != nil {
		t.Fatal(err)
	}
	timer, err := parseUnit(bytes.NewReader(readDeploy(t, "systemd/tally-nightly.timer")))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Unit", "Service"} {
		if service[s] == nil {
			t.Errorf("service lacks [%s]", s)
		}
	}
	for _, s := range []string{"Unit", "Timer", "Install"} {
		if timer[s] == nil {
			t.Errorf("timer lacks [%s]", s)
		}
	}
	if got := service.get("Service", "Type"); got != "oneshot" {
		t.Errorf("Type=%s, want oneshot", got)
	}
	exec := service.get("Service", "ExecStart")
	if !strings.HasPrefix(exec, "/") || !strings.Contains(exec, "tally run --config ") || !strings.Contains(exec, "--job nightly") {
		t.Errorf("ExecStart=%s", exec)
	}
	if service.get("Service", "EnvironmentFile") == "" && service.get("Service", "LoadCredential") == "" {
		t.Error("the service reads the token from neither an EnvironmentFile nor a credential")
	}
	for _, e := range service["Service"]["Environment"] {
		if strings.Contains(strings.ToUpper(e), "TOKEN") {
			t.Errorf("the token is set in the unit: Environment=%s", e)
		}
	}
	// A bare number is seconds to systemd.
	stop := service.get("Service", "TimeoutStopSec")
	if d, err := time.ParseDuration(stop + "s"); err != nil || d <= DefaultGrace {
		t.Errorf("TimeoutStopSec=%q must leave more than schedule.grace (%s) before SIGKILL", stop, DefaultGrace)
	}
	if got := timer.get("Timer", "Persistent"); got != "true" {
		t.Errorf("Persistent=%q, want true: a time missed while the machine was off must run when it is back", got)
	}
	if got := timer.get("Timer", "OnCalendar"); got != "*-*-* 02:30:00 UTC" {
		t.Errorf("OnCalendar=%q, want the job's time, 02:30 UTC", got)
	}
	if got := timer.get("Timer", "Unit"); got != "tally-nightly.service" {
		t.Errorf("Unit=%q", got)
	}
	if got := timer.get("Install", "WantedBy"); got != "timers.target" {
		t.Errorf("WantedBy=%q", got)
	}
}

func TestParseUnitRefuses(t *testing.T) {
	for _, bad := range []string{"Key=1\n", "[Unit\nA=1\n", "[Unit]\njust words\n", "[Unit]\nA=1 \\\n"} {
		if _, err := parseUnit(strings.NewReader(bad)); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
}

// yamlDocs decodes every document of a multi-document YAML file.
func yamlDocs(t *testing.T, rel string) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(readDeploy(t, rel)))
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		docs = append(docs, d)
	}
}

// dig walks maps and lists: dig(d, "spec", "containers", 0, "name").
func dig(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %q: %T is not a mapping (path %v)", k, v, path)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("at [%d]: %T is not a list that long (path %v)", k, v, path)
			}
			v = l[k]
		}
	}
	return v
}

func byKind(t *testing.T, docs []map[string]any, kind string) map[string]any {
	t.Helper()
	for _, d := range docs {
		if d["kind"] == kind {
			return d
		}
	}
	t.Fatalf("no %s", kind)
	return nil
}

// deployConfig is the tally.yaml of a manifest's ConfigMap, loaded as
// tally would.
func deployConfig(t *testing.T, rel string) *Config {
	t.Helper()
	cm := byKind(t, yamlDocs(t, rel), "ConfigMap")
	text, _ := dig(t, cm, "data", "tally.yaml").(string)
	cfg, err := Parse([]byte(text), "/etc/tally", func(string) string { return "" })
	if err != nil {
		t.Fatalf("%s: the ConfigMap's tally.yaml: %v", rel, err)
	}
	return cfg
}

// checkPod checks what both manifests' pods must do: the token from the
// Secret, the database on the claimed volume, the config from the
// ConfigMap, time to stop within the grace. It returns the container.
func checkPod(t *testing.T, docs []map[string]any, pod map[string]any, cfg *Config) map[string]any {
	t.Helper()
	c := dig(t, pod, "containers", 0).(map[string]any)
	var fromSecret bool
	for _, e := range dig(t, c, "env").([]any) {
		e := e.(map[string]any)
		if e["name"] != cfg.API.TokenEnv {
			continue
		}
		if _, literal := e["value"]; literal {
			t.Errorf("%s has a literal value", e["name"])
		}
		ref := dig(t, e, "valueFrom", "secretKeyRef").(map[string]any)
		fromSecret = ref["name"] != nil && ref["key"] != nil
	}
	if !fromSecret {
		t.Errorf("the token (%s) does not come from a secretKeyRef", cfg.API.TokenEnv)
	}
	mounts := map[string]string{}
	for _, m := range dig(t, c, "volumeMounts").([]any) {
		m := m.(map[string]any)
		mounts[m["name"].(string)] = m["mountPath"].(string)
	}
	volumes := map[string]map[string]any{}
	for _, v := range dig(t, pod, "volumes").([]any) {
		v := v.(map[string]any)
		volumes[v["name"].(string)] = v
	}
	pvc := byKind(t, docs, "PersistentVolumeClaim")
	dataMount := ""
	for name, path := range mounts {
		if claim, ok := volumes[name]["persistentVolumeClaim"].(map[string]any); ok && claim["claimName"] == dig(t, pvc, "metadata", "name") {
			dataMount = path
		}
	}
	if dataMount == "" || !strings.HasPrefix(cfg.Store.Path, dataMount+"/") || !strings.HasPrefix(cfg.Reports.Dir, dataMount+"/") {
		t.Errorf("store.path %s and reports.dir %s are not on the claimed volume (mounted at %q)", cfg.Store.Path, cfg.Reports.Dir, dataMount)
	}
	args := dig(t, c, "args").([]any)
	i := slices.Index(args, any("--config"))
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("args %v lack --config", args)
	}
	cfgFile := args[i+1].(string)
	cmName := dig(t, byKind(t, docs, "ConfigMap"), "metadata", "name")
	if m, ok := mounts["config"]; !ok || cfgFile != m+"/tally.yaml" || dig(t, volumes["config"], "configMap", "name") != cmName {
		t.Errorf("--config %s is not the ConfigMap's tally.yaml", cfgFile)
	}
	if g, ok := pod["terminationGracePeriodSeconds"].(int); !ok || float64(g) <= cfg.Schedule.Grace.Seconds() {
		t.Errorf("terminationGracePeriodSeconds %v leaves no room for schedule.grace %s", pod["terminationGracePeriodSeconds"], cfg.Schedule.Grace)
	}
	return c
}

func TestDeployKubernetesCronJob(t *testing.T) {
	docs := yamlDocs(t, "kubernetes/cronjob.yaml")
	cfg := deployConfig(t, "kubernetes/cronjob.yaml")
	cj := byKind(t, docs, "CronJob")
	if v := dig(t, cj, "apiVersion"); v != "batch/v1" {
		t.Errorf("apiVersion %v", v)
	}
	if p := dig(t, cj, "spec", "concurrencyPolicy"); p != "Forbid" {
		t.Errorf("concurrencyPolicy %v, want Forbid", p)
	}
	spec, _ := dig(t, cj, "spec", "schedule").(string)
	if _, err := ParseCron("CRON_TZ=" + dig(t, cj, "spec", "timeZone").(string) + " " + spec); err != nil {
		t.Errorf("schedule: %v", err)
	}
	if want := strings.TrimPrefix(cfg.Schedule.Jobs[0].Cron, "CRON_TZ=UTC "); spec != want {
		t.Errorf("CronJob schedule %q, the job's cron %q", spec, want)
	}
	pod := dig(t, cj, "spec", "jobTemplate", "spec", "template", "spec").(map[string]any)
	if pod["restartPolicy"] != "Never" {
		t.Errorf("restartPolicy %v", pod["restartPolicy"])
	}
	c := checkPod(t, docs, pod, cfg)
	var args []string
	for _, a := range dig(t, c, "args").([]any) {
		args = append(args, a.(string))
	}
	if args[0] != "run" || !slices.Contains(args, "--job") || args[slices.Index(args, "--job")+1] != cfg.Schedule.Jobs[0].Name {
		t.Errorf("args %v: want run --job %s", args, cfg.Schedule.Jobs[0].Name)
	}
}

func TestDeployKubernetesDeployment(t *testing.T) {
	docs := yamlDocs(t, "kubernetes/deployment.yaml")
	cfg := deployConfig(t, "kubernetes/deployment.yaml")
	d := byKind(t, docs, "Deployment")
	if r := dig(t, d, "spec", "replicas"); r != 1 {
		t.Errorf("replicas %v, want 1", r)
	}
	if s := dig(t, d, "spec", "strategy", "type"); s != "Recreate" {
		t.Errorf("strategy %v, want Recreate: two schedulers must not overlap in a rollout", s)
	}
	pod := dig(t, d, "spec", "template", "spec").(map[string]any)
	c := checkPod(t, docs, pod, cfg)
	args := dig(t, c, "args").([]any)
	if args[0] != "schedule" {
		t.Errorf("args %v: want tally schedule", args)
	}
	i := slices.Index(args, any("--health-addr"))
	if i < 0 || !strings.HasSuffix(args[i+1].(string), ":9090") {
		t.Fatalf("args %v: want --health-addr :9090", args)
	}
	port := dig(t, c, "ports", 0).(map[string]any)
	probe := dig(t, c, "readinessProbe", "httpGet").(map[string]any)
	if port["containerPort"] != 9090 || probe["path"] != "/healthz" || probe["port"] != port["name"] {
		t.Errorf("readiness probe %v on port %v", probe, port)
	}
	for _, j := range cfg.Schedule.Jobs {
		if _, err := ParseCron(j.Cron); err != nil {
			t.Errorf("job %s: %v", j.Name, err)
		}
	}
}

// The sharded CronJob: an Indexed Job whose pod i runs shard i of as many
// as it has completions (TALLY_SHARD "/N" read as tally reads it, with the
// index Kubernetes gives each pod), every organization's token from a
// Secret, and each shard's store, workbooks and export in a folder of its
// own on the shared volume.
func TestDeployKubernetesShards(t *testing.T) {
	const rel = "kubernetes/shards.yaml"
	docs := yamlDocs(t, rel)
	cfg := deployConfig(t, rel)
	if !cfg.Grouped() || len(cfg.Organizations) < 2 {
		t.Fatalf("the shards' config lists %d organizations; sharding needs organizations:", len(cfg.Organizations))
	}
	cj := byKind(t, docs, "CronJob")
	if p := dig(t, cj, "spec", "concurrencyPolicy"); p != "Forbid" {
		t.Errorf("concurrencyPolicy %v, want Forbid: a shard's store has one writer", p)
	}
	spec, _ := dig(t, cj, "spec", "schedule").(string)
	if want := strings.TrimPrefix(cfg.Schedule.Jobs[0].Cron, "CRON_TZ=UTC "); spec != want {
		t.Errorf("CronJob schedule %q, the job's cron %q", spec, want)
	}
	js := dig(t, cj, "spec", "jobTemplate", "spec").(map[string]any)
	if js["completionMode"] != "Indexed" {
		t.Errorf("completionMode %v, want Indexed", js["completionMode"])
	}
	n, _ := js["completions"].(int)
	if n < 2 || js["parallelism"] != n {
		t.Errorf("completions %v, parallelism %v: want the same count of shards, at least 2", js["completions"], js["parallelism"])
	}
	if _, ok := js["backoffLimitPerIndex"].(int); !ok {
		t.Error("no backoffLimitPerIndex: a failed shard would be retried with the others, or not at all")
	}
	rule := dig(t, js, "podFailurePolicy", "rules", 0).(map[string]any)
	if rule["action"] != "FailIndex" || !slices.Contains(dig(t, rule, "onExitCodes", "values").([]any), any(2)) {
		t.Errorf("podFailurePolicy %v: exit 2 (refused) must fail its shard without retries", rule)
	}
	pod := dig(t, js, "template", "spec").(map[string]any)
	if pod["restartPolicy"] != "Never" {
		t.Errorf("restartPolicy %v", pod["restartPolicy"])
	}
	if g, ok := pod["terminationGracePeriodSeconds"].(int); !ok || float64(g) <= cfg.Schedule.Grace.Seconds() {
		t.Errorf("terminationGracePeriodSeconds %v leaves no room for schedule.grace %s", pod["terminationGracePeriodSeconds"], cfg.Schedule.Grace)
	}
	c := dig(t, pod, "containers", 0).(map[string]any)
	var args []string
	for _, a := range dig(t, c, "args").([]any) {
		args = append(args, a.(string))
	}
	if args[0] != "run" || !slices.Contains(args, "--job") || args[slices.Index(args, "--job")+1] != cfg.Schedule.Jobs[0].Name || slices.Contains(args, "--shard") {
		t.Errorf("args %v: want run --job %s, the shard from TALLY_SHARD", args, cfg.Schedule.Jobs[0].Name)
	}
	i := slices.Index(args, "--config")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("args %v lack --config", args)
	}

	env := map[string]map[string]any{}
	for _, e := range dig(t, c, "env").([]any) {
		e := e.(map[string]any)
		env[e["name"].(string)] = e
	}
	spec8, _ := env[ShardEnv]["value"].(string)
	if got := dig(t, env[ShardIndexEnv], "valueFrom", "fieldRef", "fieldPath"); got != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("%s from %v, want the pod's completion index", ShardIndexEnv, got)
	}
	// Pod i is shard i of n, as tally reads its environment; together
	// they take every organization once.
	taken := map[string]int{}
	idle := 0
	for i := range n {
		s, err := ParseShard("", func(k string) string {
			return map[string]string{ShardEnv: spec8, ShardIndexEnv: fmt.Sprint(i)}[k]
		})
		if err != nil || s.Index != i || s.Count != n {
			t.Fatalf("pod %d: %s %q reads as %+v, %v; want shard %d/%d", i, ShardEnv, spec8, s, err, i, n)
		}
		shard := *cfg
		if err := shard.TakeShard(s); err != nil {
			t.Fatal(err)
		}
		for _, o := range shard.Organizations {
			taken[o.Name]++
		}
		if len(shard.Organizations) == 0 {
			idle++
		}
	}
	for _, o := range cfg.Organizations {
		if taken[o.Name] != 1 {
			t.Errorf("organization %s is taken by %d shards", o.Name, taken[o.Name])
		}
	}
	if text := string(readDeploy(t, rel)); !strings.Contains(text, "with the six organizations below, shards 2, 6 and 7") || idle != 3 || len(cfg.Organizations) != 6 {
		t.Errorf("the manifest's comment on the shards that take none is out of date: %d of %d shards take none of %d organizations", idle, n, len(cfg.Organizations))
	}

	// Every organization's token comes from the Secret, none is written.
	var fromSecret bool
	for _, f := range dig(t, c, "envFrom").([]any) {
		if ref, ok := f.(map[string]any)["secretRef"].(map[string]any); ok && ref["name"] != nil {
			fromSecret = true
		}
	}
	for _, o := range cfg.Organizations {
		if o.TokenEnv == "" {
			t.Errorf("organization %s reads no token variable", o.Name)
		}
		if e, ok := env[o.TokenEnv]; ok {
			if _, literal := e["value"]; literal {
				t.Errorf("%s has a literal value", o.TokenEnv)
			}
		} else if !fromSecret {
			t.Errorf("organization %s's token (%s) comes from no Secret", o.Name, o.TokenEnv)
		}
	}

	// Each shard's own folder of the shared volume.
	volumes := map[string]map[string]any{}
	for _, v := range dig(t, pod, "volumes").([]any) {
		v := v.(map[string]any)
		volumes[v["name"].(string)] = v
	}
	pvc := byKind(t, docs, "PersistentVolumeClaim")
	if modes := dig(t, pvc, "spec", "accessModes").([]any); !slices.Contains(modes, any("ReadWriteMany")) {
		t.Errorf("the shards' volume is %v: a night's pods run on several nodes at once, ReadWriteMany", modes)
	}
	var dataMount string
	lakeMount := ""
	if cfg.Lake.OnS3() {
		lakeMount = cfg.Lake.Warehouse // every pod reaches the bucket
	}
	mounts := map[string]string{}
	for _, m := range dig(t, c, "volumeMounts").([]any) {
		m := m.(map[string]any)
		mounts[m["name"].(string)] = m["mountPath"].(string)
		claim, ok := volumes[m["name"].(string)]["persistentVolumeClaim"].(map[string]any)
		if !ok || claim["claimName"] != dig(t, pvc, "metadata", "name") {
			continue
		}
		// The lake's warehouse is the one folder every shard shares: the
		// same path in each pod, as the catalog's file paths name it.
		if m["mountPath"] == cfg.Lake.Warehouse {
			if _, per := m["subPathExpr"]; per {
				t.Errorf("the lake's warehouse %s is mounted per shard: the shards' files would be in different folders", cfg.Lake.Warehouse)
			}
			lakeMount = cfg.Lake.Warehouse
			continue
		}
		if sub, _ := m["subPathExpr"].(string); !strings.Contains(sub, "$("+ShardIndexEnv+")") {
			t.Errorf("the shared volume is mounted at %s with subPathExpr %q: every shard would share one store", m["mountPath"], sub)
		}
		dataMount = m["mountPath"].(string)
	}
	// The export commits to one table in a catalog and a warehouse every
	// pod reaches.
	if cfg.Export.Format != ExportIceberg || cfg.Lake.Postgres == "" || cfg.Lake.PasswordEnv == "" || lakeMount == "" {
		t.Errorf("the shards export %s to catalog %q (password %q) with warehouse %q (reached at %q): want iceberg in a shared PostgreSQL catalog, its password from the environment, the warehouse on S3 or the shared volume",
			cfg.Export.Format, cfg.Lake.Postgres, cfg.Lake.PasswordEnv, cfg.Lake.Warehouse, lakeMount)
	}
	for key, p := range map[string]string{"store.path": cfg.Store.Path, "reports.dir": cfg.Reports.Dir, "export.dir": cfg.Export.Dir} {
		if dataMount == "" || !strings.HasPrefix(p, dataMount+"/") {
			t.Errorf("%s %s is not in the shard's folder (mounted at %q)", key, p, dataMount)
		}
	}
	cmName := dig(t, byKind(t, docs, "ConfigMap"), "metadata", "name")
	if m, ok := mounts["config"]; !ok || args[i+1] != m+"/tally.yaml" || dig(t, volumes["config"], "configMap", "name") != cmName {
		t.Errorf("--config %s is not the ConfigMap's tally.yaml", args[i+1])
	}
}
