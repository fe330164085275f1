// Package kubernetes holds the Kubernetes recipes for fleet verify and
// drills; its test decodes them strictly into the official API types.
package kubernetes

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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
			case "batch/v1 Job":
				var j batchv1.Job
				decodeStrict(t, f, doc, &j)
				checkVerifyJob(t, f, &j)
			case "batch/v1 CronJob":
				var c batchv1.CronJob
				decodeStrict(t, f, doc, &c)
				checkPod(t, f, &c.Spec.JobTemplate.Spec.Template.Spec, "drill")
			case "v1 ServiceAccount":
				var sa corev1.ServiceAccount
				decodeStrict(t, f, doc, &sa)
			default:
				t.Errorf("%s: unexpected %s %s", f, meta.APIVersion, meta.Kind)
			}
		}
	}
	if kinds["Job"] != 1 || kinds["CronJob"] != 1 || kinds["ServiceAccount"] != 1 {
		t.Errorf("manifests: %v", kinds)
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
func checkVerifyJob(t *testing.T, f string, j *batchv1.Job) {
	t.Helper()
	s := j.Spec
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
