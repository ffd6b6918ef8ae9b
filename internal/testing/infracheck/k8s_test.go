package infracheck

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/offpath/offpath/internal/config"
)

// coreObject decodes a core (non-KEDA) document strictly into its k8s.io/api
// type: an unknown or misspelt field, or a value of the wrong type, fails.
func coreObject(doc document) (any, error) {
	var obj any
	switch doc.api + "/" + doc.kind {
	case "apps/v1/Deployment":
		obj = &appsv1.Deployment{}
	case "v1/ServiceAccount":
		obj = &corev1.ServiceAccount{}
	case "v1/ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1/Service":
		obj = &corev1.Service{}
	case "autoscaling/v2/HorizontalPodAutoscaler":
		obj = &autoscalingv2.HorizontalPodAutoscaler{}
	default:
		return nil, fmt.Errorf("%s: no strict decoder for %s %s: add its k8s.io/api type here", doc.file, doc.api, doc.kind)
	}
	if err := yaml.UnmarshalStrict(doc.raw, obj); err != nil {
		return nil, fmt.Errorf("%s: %s %q: %w", doc.file, doc.kind, doc.name, err)
	}
	return obj, nil
}

// checkWorkers checks what the AKS worker Deployments need beyond their
// schema: workload identity wired through a service account that exists,
// no fixed replica count (the HPA owns it), the Functions host restricted
// to named functions, identity-based connections that use the workload
// identity credential, and a grace period longer than functionTimeout.
func checkWorkers(objs []any, functionTimeout time.Duration) error {
	accounts := map[string]*corev1.ServiceAccount{}
	for _, o := range objs {
		if sa, ok := o.(*corev1.ServiceAccount); ok {
			accounts[sa.Name] = sa
		}
	}
	var errs []error
	for _, o := range objs {
		d, ok := o.(*appsv1.Deployment)
		if !ok {
			continue
		}
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("Deployment %q: %s", d.Name, fmt.Sprintf(format, args...)))
		}
		if d.Spec.Replicas != nil {
			bad("sets replicas; KEDA's HPA owns the count, re-applying a fixed value fights it")
		}
		pod := d.Spec.Template
		if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) == 0 {
			bad("has no selector.matchLabels")
		} else {
			for k, v := range d.Spec.Selector.MatchLabels {
				if pod.Labels[k] != v {
					bad("selector %s=%s does not match the pod template's labels", k, v)
				}
			}
		}
		if pod.Labels["azure.workload.identity/use"] != "true" {
			bad(`pod template lacks the label azure.workload.identity/use: "true" (it must be on the pod, not the Deployment)`)
		}
		sa := accounts[pod.Spec.ServiceAccountName]
		switch {
		case pod.Spec.ServiceAccountName == "":
			bad("runs as the default service account; workload identity needs its own")
		case sa == nil:
			bad("service account %q is not among the manifests", pod.Spec.ServiceAccountName)
		case sa.Annotations["azure.workload.identity/client-id"] == "":
			bad("service account %q has no azure.workload.identity/client-id annotation", sa.Name)
		}
		if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= functionTimeout {
			bad("terminationGracePeriodSeconds must exceed host.json functionTimeout %v so a scaled-in pod finishes its work", functionTimeout)
		}
		if len(pod.Spec.Containers) != 1 {
			bad("want one container (the Functions host), found %d", len(pod.Spec.Containers))
			continue
		}
		env := map[string]string{}
		for _, e := range pod.Spec.Containers[0].Env {
			if e.ValueFrom != nil {
				bad("env %s comes from %v; offpath passes no secrets", e.Name, e.ValueFrom)
			}
			env[e.Name] = e.Value
		}
		if env["AzureFunctionsJobHost__functions__0"] == "" {
			bad("AzureFunctionsJobHost__functions__0 is not set: the host would run every function")
		}
		if env["FUNCTIONS_WORKER_RUNTIME"] != "custom" {
			bad("FUNCTIONS_WORKER_RUNTIME must be custom (the base image says dotnet)")
		}
		for name, value := range env {
			if strings.HasSuffix(name, "__credential") && value != "workloadidentity" {
				bad("%s = %q: on AKS use workloadidentity (managedidentity asks the node's IMDS, not the pod's federated identity)", name, value)
			}
		}
	}
	return errors.Join(errs...)
}

func deploymentContainers(obj any) []corev1.Container {
	if d, ok := obj.(*appsv1.Deployment); ok {
		return d.Spec.Template.Spec.Containers
	}
	return nil
}

func hostFunctionTimeout(t *testing.T) time.Duration {
	t.Helper()
	var h struct {
		FunctionTimeout string `json:"functionTimeout"`
	}
	if err := yaml.Unmarshal(readFile(t, hostJSON), &h); err != nil {
		t.Fatal(err)
	}
	d, err := config.ParseTimeSpan(h.FunctionTimeout)
	if err != nil {
		t.Fatalf("host.json functionTimeout: %v", err)
	}
	if d == 0 {
		d = 30 * time.Minute
	}
	return d
}

func TestManifests_CoreKindsDecodeStrictly(t *testing.T) {
	t.Parallel()
	var objs []any
	for _, doc := range loadManifests(t, k8sDir) {
		if isKEDA(doc) {
			continue
		}
		obj, err := coreObject(doc)
		if err != nil {
			t.Error(err)
			continue
		}
		objs = append(objs, obj)
	}
	if err := checkWorkers(objs, hostFunctionTimeout(t)); err != nil {
		t.Error(err)
	}
}

// The checks fail on the mistakes they exist for.
func TestManifests_BrokenCoreManifestsFail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want string
	}{
		{"deployment-misspelt-field.yaml", `unknown field "replica"`},
		{"deployment-wrong-type.yaml", "cannot unmarshal"},
		{"deployment-replicas.yaml", "sets replicas"},
		{"deployment-no-workload-identity.yaml", "azure.workload.identity/use"},
		{"deployment-managedidentity.yaml", "use workloadidentity"},
		{"deployment-short-grace.yaml", "terminationGracePeriodSeconds"},
		{"deployment-all-functions.yaml", "AzureFunctionsJobHost__functions__0"},
		{"unknown-kind.yaml", "no strict decoder"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			docs, err := splitDocuments(tt.file, readFile(t, "testdata/k8s/"+tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var objs []any
			var errs []error
			for _, doc := range docs {
				obj, err := coreObject(doc)
				errs = append(errs, err)
				if obj != nil {
					objs = append(objs, obj)
				}
			}
			errs = append(errs, checkWorkers(objs, 10*time.Minute))
			if err := errors.Join(errs...); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("checking %s: error = %v, want one containing %q", tt.file, err, tt.want)
			}
		})
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	env := func(name string) (string, bool) { return map[string]string{"A": "x"}[name], name == "A" }
	if got, err := render([]byte("a: ${A}\n"), env); err != nil || string(got) != "a: x\n" {
		t.Errorf("render(${A}) = %q, %v", got, err)
	}
	for _, bad := range []string{"a: ${B}\n", "a: $A\n", "# costs $5\n"} {
		if _, err := render([]byte(bad), env); err == nil {
			t.Errorf("render(%q) succeeded, want an error", bad)
		}
	}
}
