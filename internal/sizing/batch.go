package sizing

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/offpath/offpath/internal/batchfile"
	"github.com/offpath/offpath/internal/catalog"
)

// DefaultBatchUtilisation is the share of a Global Batch deployment's
// enqueued-token quota offpath admits up to by default: the rest is
// headroom for the estimate's error (Azure counts characters its own way)
// and for batches submitted to the deployment outside offpath.
const DefaultBatchUtilisation = 0.9

// BatchQuota is the enqueued-token limit offpath should keep to on one
// Global Batch deployment.
type BatchQuota struct {
	Deployment string `json:"deployment"`
	// Granted is the deployment's quota in Azure, as the catalog states it.
	Granted int64 `json:"granted"`
	// Setting is what OFFPATH_BATCH_QUOTA should say: Granted × utilisation.
	Setting int64 `json:"setting"`
	// PartsAtOnce is how many full-size parts (Azure's 200 MB, about a
	// quarter as many tokens) fit the setting at once; 0 means a part is
	// lowered to fit it alone.
	PartsAtOnce int64 `json:"parts_at_once"`
}

// BatchPlan derives the OFFPATH_BATCH_QUOTA setting from the enqueued-token
// quotas the catalog states, one entry per batch deployment that states
// one, sorted by name; the deployments that state none are returned apart.
func BatchPlan(c *catalog.Catalog, utilisation float64) (plan []BatchQuota, unstated []string, err error) {
	if utilisation == 0 {
		utilisation = DefaultBatchUtilisation
	}
	if math.IsNaN(utilisation) || utilisation <= 0 || utilisation > 1 {
		return nil, nil, fmt.Errorf("batch utilisation %v: must be within (0, 1]", utilisation)
	}
	seen := map[string]bool{}
	for _, a := range c.Aliases() {
		for _, d := range a.Batch {
			if seen[d.Name] {
				continue
			}
			seen[d.Name] = true
			if d.EnqueuedTokenQuota <= 0 {
				unstated = append(unstated, d.Name)
				continue
			}
			set := int64(float64(d.EnqueuedTokenQuota) * utilisation)
			plan = append(plan, BatchQuota{Deployment: d.Name, Granted: d.EnqueuedTokenQuota, Setting: set,
				PartsAtOnce: set / (batchfile.DefaultMaxBytes / 4)})
		}
	}
	if len(plan) == 0 && len(unstated) == 0 {
		return nil, nil, errors.New("the catalog has no batch deployments")
	}
	slices.SortFunc(plan, func(a, b BatchQuota) int { return strings.Compare(a.Deployment, b.Deployment) })
	slices.Sort(unstated)
	return plan, unstated, nil
}

// BatchSetting formats a plan as the OFFPATH_BATCH_QUOTA value.
func BatchSetting(plan []BatchQuota) string {
	parts := make([]string, len(plan))
	for i, q := range plan {
		parts[i] = q.Deployment + "=" + strconv.FormatInt(q.Setting, 10)
	}
	return strings.Join(parts, ",")
}
