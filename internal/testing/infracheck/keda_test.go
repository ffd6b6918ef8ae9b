package infracheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"sigs.k8s.io/yaml"
)

const kedaGroupVersion = "keda.sh/v1alpha1"

func isKEDA(doc document) bool { return doc.api == kedaGroupVersion }

// kedaValidator validates KEDA resources against schemas generated from the
// CRDs: each CRD's v1alpha1 openAPIV3Schema, with additionalProperties false
// added to every object that lists its properties (and does not preserve
// unknown fields), so that a misspelt field fails as it would not in the
// cluster's own (pruning) validation.
type kedaValidator map[string]*jsonschema.Schema // by kind

func newKEDAValidator(crdDir string) (kedaValidator, error) {
	files, err := filepath.Glob(filepath.Join(crdDir, "keda.sh_*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no keda.sh_*.yaml CRDs in %s", crdDir)
	}
	v := kedaValidator{}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft4)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var crd struct {
			Spec struct {
				Names struct {
					Kind string `json:"kind"`
				} `json:"names"`
				Versions []struct {
					Name   string `json:"name"`
					Schema struct {
						OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
					} `json:"schema"`
				} `json:"versions"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, ver := range crd.Spec.Versions {
			if ver.Name != "v1alpha1" || ver.Schema.OpenAPIV3Schema == nil {
				continue
			}
			closeObjects(ver.Schema.OpenAPIV3Schema)
			doc, err := jsonValue(ver.Schema.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			url := "file:///keda/" + strings.ToLower(crd.Spec.Names.Kind) + ".json"
			if err := c.AddResource(url, doc); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if v[crd.Spec.Names.Kind], err = c.Compile(url); err != nil {
				return nil, fmt.Errorf("compile the schema of %s: %w", crd.Spec.Names.Kind, err)
			}
		}
	}
	return v, nil
}

// closeObjects adds additionalProperties: false to every schema node that
// has properties, keeps x-kubernetes-preserve-unknown-fields nodes open, and
// descends into every nested schema.
func closeObjects(node any) {
	switch n := node.(type) {
	case map[string]any:
		_, hasProps := n["properties"]
		_, hasAdditional := n["additionalProperties"]
		if preserve, _ := n["x-kubernetes-preserve-unknown-fields"].(bool); hasProps && !hasAdditional && !preserve {
			n["additionalProperties"] = false
		}
		for _, child := range n {
			closeObjects(child)
		}
	case []any:
		for _, child := range n {
			closeObjects(child)
		}
	}
}

// jsonValue turns a decoded document into what the jsonschema package
// validates (numbers as json.Number).
func jsonValue(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(data))
}

func (kv kedaValidator) validate(doc document) error {
	sch, ok := kv[doc.kind]
	if !ok {
		return fmt.Errorf("%s: no KEDA schema for kind %s", doc.file, doc.kind)
	}
	data, err := yaml.YAMLToJSON(doc.raw)
	if err != nil {
		return fmt.Errorf("%s: %w", doc.file, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: %w", doc.file, err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("%s: %s %q: %w", doc.file, doc.kind, doc.name, err)
	}
	return nil
}

// The azure-servicebus scaler's trigger metadata keys (KEDA 2.x's scaler
// documentation, and pkg/scalers/azure_servicebus_scaler.go in KEDA's
// repository). The CRD types metadata as
// map[string]string, so the schema cannot catch a wrong key.
var serviceBusMetadataKeys = map[string]bool{
	"queueName": true, "topicName": true, "subscriptionName": true, "namespace": true,
	"messageCount": true, "activationMessageCount": true, "useRegex": true, "operation": true,
	"cloud": true, "endpointSuffix": true, "connectionFromEnv": true,
}

type scaledObject struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		ScaleTargetRef struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
		} `json:"scaleTargetRef"`
		MinReplicaCount *int `json:"minReplicaCount"`
		MaxReplicaCount *int `json:"maxReplicaCount"`
		Advanced        struct {
			HPAConfig struct {
				Behavior *struct {
					ScaleUp *json.RawMessage `json:"scaleUp"`
				} `json:"behavior"`
			} `json:"horizontalPodAutoscalerConfig"`
		} `json:"advanced"`
		Triggers []struct {
			Type              string         `json:"type"`
			Name              string         `json:"name"`
			Metadata          map[string]any `json:"metadata"`
			AuthenticationRef *struct {
				Name string `json:"name"`
				Kind string `json:"kind"`
			} `json:"authenticationRef"`
		} `json:"triggers"`
	} `json:"spec"`
}

type triggerAuthentication struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		PodIdentity *struct {
			Provider   string  `json:"provider"`
			IdentityID *string `json:"identityId"`
		} `json:"podIdentity"`
	} `json:"spec"`
}

// checkScaling checks what the schemas cannot: the Service Bus triggers'
// metadata, their workload-identity authentication, scale to zero with an
// explicit cap and a ramped scale-up, and that no HorizontalPodAutoscaler
// targets a workload a ScaledObject scales (KEDA's webhook does not stop an
// HPA created after the ScaledObject).
func checkScaling(docs []document) error {
	var errs []error
	auths := map[string]triggerAuthentication{}
	var objects []scaledObject
	var hpas []autoscalingv2.HorizontalPodAutoscaler
	for _, doc := range docs {
		switch {
		case doc.api == kedaGroupVersion && doc.kind == "TriggerAuthentication":
			var ta triggerAuthentication
			if err := yaml.Unmarshal(doc.raw, &ta); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", doc.file, err))
				continue
			}
			auths[ta.Metadata.Name] = ta
		case doc.api == kedaGroupVersion && doc.kind == "ScaledObject":
			var so scaledObject
			if err := yaml.Unmarshal(doc.raw, &so); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", doc.file, err))
				continue
			}
			objects = append(objects, so)
		case doc.kind == "HorizontalPodAutoscaler":
			var hpa autoscalingv2.HorizontalPodAutoscaler
			if err := yaml.Unmarshal(doc.raw, &hpa); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", doc.file, err))
				continue
			}
			hpas = append(hpas, hpa)
		}
	}
	for _, so := range objects {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("ScaledObject %q: %s", so.Metadata.Name, fmt.Sprintf(format, args...)))
		}
		if so.Spec.MinReplicaCount == nil || *so.Spec.MinReplicaCount != 0 {
			bad("minReplicaCount must be 0 (scale to zero)")
		}
		if so.Spec.MaxReplicaCount == nil {
			bad("maxReplicaCount is not set (KEDA's default is 100): derive it from the deployment's quota")
		}
		if so.Spec.Advanced.HPAConfig.Behavior == nil || so.Spec.Advanced.HPAConfig.Behavior.ScaleUp == nil {
			bad("no advanced.horizontalPodAutoscalerConfig.behavior.scaleUp: ramp scale-up so cold pods do not burst the RPM window")
		}
		for _, tr := range so.Spec.Triggers {
			if tr.Type != "azure-servicebus" {
				continue
			}
			for _, k := range sortedKeys(tr.Metadata) {
				v, isString := tr.Metadata[k].(string)
				if !serviceBusMetadataKeys[k] {
					bad("trigger %q: metadata key %q is not one the azure-servicebus scaler reads", tr.Name, k)
				}
				if !isString {
					bad("trigger %q: metadata %s = %v is not a string (quote it)", tr.Name, k, tr.Metadata[k])
				}
				if k == "namespace" && strings.Contains(v, ".") {
					bad("trigger %q: namespace %q must be the short name; the scaler appends .servicebus.windows.net", tr.Name, v)
				}
			}
			if _, ok := tr.Metadata["queueName"]; !ok {
				bad("trigger %q: no queueName", tr.Name)
			}
			if tr.AuthenticationRef == nil {
				bad("trigger %q: no authenticationRef (local auth is disabled on the namespace: workload identity is the only way in)", tr.Name)
				continue
			}
			if _, ok := tr.Metadata["connectionFromEnv"]; ok {
				bad("trigger %q: connectionFromEnv needs a SAS connection string; the namespace has local auth disabled", tr.Name)
			}
			if _, ok := tr.Metadata["namespace"]; !ok {
				bad("trigger %q: namespace is required with pod identity", tr.Name)
			}
			ta, ok := auths[tr.AuthenticationRef.Name]
			switch {
			case tr.AuthenticationRef.Kind != "" && tr.AuthenticationRef.Kind != "TriggerAuthentication":
				// A ClusterTriggerAuthentication lives elsewhere; not checked here.
			case !ok:
				bad("trigger %q: TriggerAuthentication %q is not among the manifests", tr.Name, tr.AuthenticationRef.Name)
			case ta.Spec.PodIdentity == nil || ta.Spec.PodIdentity.Provider != "azure-workload":
				bad("trigger %q: TriggerAuthentication %q must use podIdentity provider azure-workload", tr.Name, ta.Metadata.Name)
			case ta.Spec.PodIdentity.IdentityID == nil || *ta.Spec.PodIdentity.IdentityID == "":
				bad("trigger %q: TriggerAuthentication %q must name the KEDA identity in identityId", tr.Name, ta.Metadata.Name)
			}
		}
		target := so.Spec.ScaleTargetRef
		kind := target.Kind
		if kind == "" {
			kind = "Deployment"
		}
		for _, h := range hpas {
			ref := h.Spec.ScaleTargetRef
			if ref.Name == target.Name && ref.Kind == kind {
				errs = append(errs, fmt.Errorf("HorizontalPodAutoscaler %q targets %s %q, which ScaledObject %q scales: two HPAs would fight", h.Name, kind, target.Name, so.Metadata.Name))
			}
		}
	}
	return errors.Join(errs...)
}

func TestManifests_KEDAResources(t *testing.T) {
	t.Parallel()
	validators := kedaValidators(t)
	docs := loadManifests(t, k8sDir)
	kinds := map[string]int{}
	for _, doc := range docs {
		if !isKEDA(doc) {
			continue
		}
		kinds[doc.kind]++
		for _, version := range sortedKeys(validators) {
			if err := validators[version].validate(doc); err != nil {
				t.Errorf("KEDA %s: %v", version, err)
			}
		}
	}
	if kinds["ScaledObject"] == 0 || kinds["TriggerAuthentication"] == 0 {
		t.Errorf("want a ScaledObject and a TriggerAuthentication in %s, found %v", k8sDir, kinds)
	}
	if err := checkScaling(docs); err != nil {
		t.Error(err)
	}
}

func TestManifests_BrokenKEDAResourcesFail(t *testing.T) {
	t.Parallel()
	validators := kedaValidators(t)
	tests := []struct {
		file string
		want string
	}{
		{"scaledobject-misspelt-field.yaml", "pollingIntervall"},
		{"scaledobject-integer-messagecount.yaml", "messageCount"},
		{"scaledobject-string-maxreplicacount.yaml", "maxReplicaCount"},
		{"scaledobject-unknown-metadata-key.yaml", `"queueLength" is not one the azure-servicebus scaler reads`},
		{"scaledobject-fqdn-namespace.yaml", "must be the short name"},
		{"scaledobject-connection-string.yaml", "connectionFromEnv"},
		{"scaledobject-default-max.yaml", "maxReplicaCount is not set"},
		{"triggerauthentication-empty-identity.yaml", "must name the KEDA identity"},
		{"hpa-on-scaled-deployment.yaml", "two HPAs would fight"},
	}
	for _, tt := range tests {
		for _, version := range sortedKeys(validators) {
			t.Run(version+"/"+tt.file, func(t *testing.T) {
				t.Parallel()
				docs, err := splitDocuments(tt.file, readFile(t, "testdata/keda/"+tt.file))
				if err != nil {
					t.Fatal(err)
				}
				var errs []error
				for _, doc := range docs {
					if isKEDA(doc) {
						errs = append(errs, validators[version].validate(doc))
					}
				}
				errs = append(errs, checkScaling(docs))
				if err := errors.Join(errs...); err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("checking %s against KEDA %s: error = %v, want one containing %q", tt.file, version, err, tt.want)
				}
			})
		}
	}
}
