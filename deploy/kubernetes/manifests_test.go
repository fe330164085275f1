// Package kubernetes holds the Kubernetes recipes for fleet verify and
// drills; its test decodes them strictly into the official API types.
package kubernetes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// decodeStrict converts YAML to JSON and decodes it into v, refusing
// unknown fields (a misspelt or misplaced key is an error, not ignored).
func decodeStrict(t *testing.T, name string, doc []byte, v any) {
	t.Helper()
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// TestManifestsDecodeStrictly: every manifest decodes into the type of its
// kind with no unknown field, and says what the README promises.
func TestManifestsDecodeStrictly(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	kinds := map[string]int{}
	var cronJobs []*batchv1.CronJob
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			kinds[meta.Kind]++
			switch meta.APIVersion + " " + meta.Kind {
			case "batch/v1 CronJob":
				var c batchv1.CronJob
				decodeStrict(t, f, doc, &c)
				cronJobs = append(cronJobs, &c)
			case "v1 ServiceAccount":
				var sa corev1.ServiceAccount
				decodeStrict(t, f, doc, &sa)
			case "monitoring.coreos.com/v1 PrometheusRule":
				var r prometheusRule
				decodeStrict(t, f, doc, &r)
				checkRules(t, f, &r)
			default:
				t.Errorf("%s: unexpected %s %s", f, meta.APIVersion, meta.Kind)
			}
		}
	}
	if kinds["CronJob"] != 3 || kinds["ServiceAccount"] != 1 || kinds["PrometheusRule"] != 1 || len(kinds) != 3 {
		t.Errorf("manifests: %v", kinds)
	}
	byContainer := map[string]*batchv1.CronJob{}
	for _, c := range cronJobs {
		if cs := c.Spec.JobTemplate.Spec.Template.Spec.Containers; len(cs) > 0 {
			byContainer[cs[0].Name] = c
		}
	}
	shards, merge, drill := byContainer["verify"], byContainer["report"], byContainer["drill"]
	if shards == nil || merge == nil || drill == nil {
		t.Fatalf("want the verify, merge (report) and drill CronJobs: %v", byContainer)
	}
	checkVerifyJob(t, shards.Name, &shards.Spec.JobTemplate.Spec)
	checkMerge(t, shards, merge)
	checkDrill(t, drill)
}

// prometheusRule is the part of the Prometheus Operator's PrometheusRule
// (monitoring.coreos.com/v1) the recipe uses, decoded strictly: a field
// the operator does not know is an error here too.
type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace,omitempty"`
		Labels    map[string]string `json:"labels,omitempty"`
	} `json:"metadata"`
	Spec struct {
		Groups []struct {
			Name     string `json:"name"`
			Interval string `json:"interval,omitempty"`
			Rules    []struct {
				Alert       string            `json:"alert,omitempty"`
				Record      string            `json:"record,omitempty"`
				Expr        string            `json:"expr"`
				For         string            `json:"for,omitempty"`
				Labels      map[string]string `json:"labels,omitempty"`
				Annotations map[string]string `json:"annotations,omitempty"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// metricName matches the pbsdirect metric names in an expression.
var metricName = regexp.MustCompile(`pbsdirect_[a-z_]+`)

// checkRules: every rule is an alert with an expression and a severity,
// and every pbsdirect metric it names is one the metrics package writes.
func checkRules(t *testing.T, f string, r *prometheusRule) {
	t.Helper()
	var src []byte
	for _, p := range []string{"../../metrics/metrics.go"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	alerts := 0
	for _, g := range r.Spec.Groups {
		for _, rule := range g.Rules {
			alerts++
			if rule.Alert == "" || rule.Expr == "" || rule.Labels["severity"] == "" || rule.Annotations["summary"] == "" {
				t.Errorf("%s: rule %+v: want alert, expr, a severity and a summary", f, rule)
			}
			names := metricName.FindAllString(rule.Expr, -1)
			if len(names) == 0 {
				t.Errorf("%s: %s names no pbsdirect metric: %s", f, rule.Alert, rule.Expr)
			}
			for _, n := range names {
				if !bytes.Contains(src, []byte(`"`+n+`"`)) && !bytes.Contains(src, []byte(`"`+strings.TrimPrefix(strings.TrimPrefix(n, "pbsdirect_drill"), "pbsdirect_verify")+`"`)) {
					t.Errorf("%s: %s names %s, which pbsdirect does not write", f, rule.Alert, n)
				}
			}
		}
	}
	if alerts == 0 {
		t.Errorf("%s: no alerts", f)
	}
}

// dailyAt returns the minute of the day of a daily schedule "M H * * *".
func dailyAt(t *testing.T, c *batchv1.CronJob) int {
	t.Helper()
	var m, h int
	var rest string
	if n, _ := fmt.Sscanf(c.Spec.Schedule, "%d %d %s", &m, &h, &rest); n != 3 || !strings.HasSuffix(c.Spec.Schedule, " * * *") {
		t.Fatalf("%s: schedule %q is not daily M H * * *", c.Name, c.Spec.Schedule)
	}
	return h*60 + m
}

// checkMerge: the merge step runs after the shards' Job has ended (its
// activeDeadlineSeconds after its schedule), merges exactly the reports
// the shards write, and pushes the metrics.
func checkMerge(t *testing.T, shards, merge *batchv1.CronJob) {
	t.Helper()
	checkPod(t, merge.Name, &merge.Spec.JobTemplate.Spec.Template.Spec, "report")
	js := shards.Spec.JobTemplate.Spec
	if js.ActiveDeadlineSeconds == nil {
		t.Fatalf("%s: no activeDeadlineSeconds: the merge could run before the shards end", shards.Name)
	}
	if start, end := dailyAt(t, shards), dailyAt(t, merge); end < start+int(*js.ActiveDeadlineSeconds/60) {
		t.Errorf("merge at minute %d runs before the shards' deadline (start %d + %ds)", end, start, *js.ActiveDeadlineSeconds)
	}
	var report string
	for _, a := range js.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--report="); ok {
			report = v
		}
	}
	var want []string
	for i := range *js.Completions {
		want = append(want, strings.ReplaceAll(report, "$(JOB_COMPLETION_INDEX)", itoa(i)))
	}
	args := merge.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args
	var files []string
	for _, a := range args[2:] {
		if !strings.HasPrefix(a, "-") {
			files = append(files, a)
		}
	}
	if report == "" || args[1] != "merge" || !slices.Equal(files, want) {
		t.Errorf("%s: merges %v, want the shards' reports %v", merge.Name, files, want)
	}
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--metrics-push=http") }) {
		t.Errorf("%s: args %v do not push the metrics", merge.Name, args)
	}
}

// checkDrill: the drill covers a namespace tree and pushes its metrics;
// the boot check is there as a documented, commented variant.
func checkDrill(t *testing.T, c *batchv1.CronJob) {
	t.Helper()
	checkPod(t, c.Name, &c.Spec.JobTemplate.Spec.Template.Spec, "drill")
	args := c.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args
	tree := slices.Contains(args, "--all-namespaces") || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--max-depth=") })
	push := slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--metrics-push=http") })
	if !tree || !push || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--metrics-textfile") }) {
		t.Errorf("%s: args %v: want a namespace tree and --metrics-push (no textfile on the pod's volume)", c.Name, args)
	}
	b, err := os.ReadFile("drill-cronjob.yaml")
	if err != nil || !bytes.Contains(b, []byte("# - --boot")) {
		t.Errorf("drill-cronjob.yaml: no commented --boot variant (%v)", err)
	}
	// What --boot does in a fleet drill (each snapshot's boot disk, not
	// every disk) and what the image needs for it, in both places.
	readme, _ := os.ReadFile("README.md")
	for name, text := range map[string][]byte{"drill-cronjob.yaml": b, "README.md": readme} {
		flat := strings.Join(strings.Fields(strings.ReplaceAll(string(text), "#", "")), " ")
		for _, want := range []string{"boot disk", "qemu-system-x86", "qemu-utils", "ovmf"} {
			if !strings.Contains(flat, want) {
				t.Errorf("%s: the boot check's notes lack %q", name, want)
			}
		}
		if strings.Contains(flat, "each restored disk is also started") {
			t.Errorf("%s: says every restored disk is booted", name)
		}
	}
}

func checkPod(t *testing.T, f string, p *corev1.PodSpec, command string) {
	t.Helper()
	if p.RestartPolicy != corev1.RestartPolicyNever || len(p.Containers) != 1 || p.Containers[0].Name != command {
		t.Errorf("%s: restartPolicy %q, containers %d", f, p.RestartPolicy, len(p.Containers))
		return
	}
	c := p.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != command || len(c.Command) != 0 {
		t.Errorf("%s: args %v", f, c.Args)
	}
	for _, e := range c.Env {
		if strings.Contains(strings.ToUpper(e.Name), "PASSWORD") && e.Value != "" && !strings.HasSuffix(e.Name, "_FILE") {
			t.Errorf("%s: secret in the manifest: %s", f, e.Name)
		}
	}
}

// checkVerifyJob: an Indexed Job whose --shard auto/N matches its
// completions, with the exit-code policy of README.md.
func checkVerifyJob(t *testing.T, f string, s *batchv1.JobSpec) {
	t.Helper()
	checkPod(t, f, &s.Template.Spec, "verify")
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || s.Completions == nil || s.BackoffLimitPerIndex == nil {
		t.Fatalf("%s: not an Indexed Job with backoffLimitPerIndex", f)
	}
	args := s.Template.Spec.Containers[0].Args
	if want := "--shard=auto/" + itoa(*s.Completions); !slices.Contains(args, want) {
		t.Errorf("%s: args %v lack %s", f, args, want)
	}
	if s.PodFailurePolicy == nil {
		t.Fatalf("%s: no podFailurePolicy", f)
	}
	actions := map[int32]batchv1.PodFailurePolicyAction{}
	for _, r := range s.PodFailurePolicy.Rules {
		if r.OnExitCodes == nil {
			continue
		}
		for _, v := range r.OnExitCodes.Values {
			actions[v] = r.Action
		}
	}
	if actions[1] != batchv1.PodFailurePolicyActionFailIndex || actions[3] != batchv1.PodFailurePolicyActionCount {
		t.Errorf("%s: exit code actions %v: want FailIndex for 1, Count (retry) for 3", f, actions)
	}
}

func itoa(n int32) string {
	b, _ := json.Marshal(n)
	return string(b)
}
