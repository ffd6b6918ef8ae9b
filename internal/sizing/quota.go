package sizing

import (
	"encoding/json"
	"fmt"
	"os"
)

// Deployment is one entry of infra/model-deployments.json, the Azure OpenAI
// deployments the Bicep creates.
type Deployment struct {
	Name    string `json:"name"`
	Model   string `json:"model"`
	Version string `json:"version"`
	SKU     string `json:"sku"`
	// Capacity is sku.capacity: thousands of tokens per minute for online
	// SKUs; the enqueued-token quota for GlobalBatch.
	Capacity int `json:"capacity"`
	// RPMPerThousandTPM is the model's requests-per-minute ratio (6 for most
	// chat models, 1 for o3 and o4-mini, ...); online SKUs only.
	RPMPerThousandTPM float64 `json:"rpmPerThousandTpm"`
	// Use is "queue" (online calls) or "batch" (Global Batch).
	Use string `json:"use"`
}

// Quota reads the deployment called name from the deployments file at path
// and returns its TPM and RPM, for Inputs.
func Quota(path, name string) (tpm, rpm int, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("read deployments: %w", err)
	}
	return QuotaOf(data, path, name)
}

// QuotaOf is Quota on a deployments document already read; source names it
// in errors.
func QuotaOf(data []byte, source, name string) (tpm, rpm int, err error) {
	var ds []Deployment
	if err := json.Unmarshal(data, &ds); err != nil {
		return 0, 0, fmt.Errorf("read deployments %s: %w", source, err)
	}
	for _, d := range ds {
		if d.Name != name {
			continue
		}
		if d.Use != "queue" || d.RPMPerThousandTPM <= 0 || d.Capacity <= 0 {
			return 0, 0, fmt.Errorf("deployment %q in %s is not an online deployment with capacity and rpmPerThousandTpm", name, source)
		}
		return d.Capacity * 1000, int(float64(d.Capacity) * d.RPMPerThousandTPM), nil
	}
	return 0, 0, fmt.Errorf("no deployment %q in %s", name, source)
}
