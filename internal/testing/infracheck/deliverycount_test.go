package infracheck

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/claimcheck"
)

// deliveryCountSettings names the handler's setting of each queue's
// MaxDeliveryCount: the handler records a transient failure on a queue's
// last delivery as dead-lettered, so it must know where that is.
var deliveryCountSettings = map[string]string{
	claimcheck.DefaultLightQueue: "OFFPATH_INGEST_MAX_DELIVERY_COUNT",
	claimcheck.DefaultHeavyQueue: "OFFPATH_INGEST_HEAVY_MAX_DELIVERY_COUNT",
}

var (
	bicepQueueResource = regexp.MustCompile(`(?m)^resource \w+ 'Microsoft\.ServiceBus/namespaces/queues@[^']+' = \{`)
	bicepQueueNameVar  = regexp.MustCompile(`(?m)^var (\w+QueueName) = '([^']+)'`)
	bicepNameField     = regexp.MustCompile(`(?m)^\s+name: (\w+)\s*$`)
	bicepMaxDelivery   = regexp.MustCompile(`(?m)^\s+maxDeliveryCount: (\d+)\s*$`)
)

// queueDeliveryCounts reads each queue's maxDeliveryCount from
// servicebus.bicep's text.
func queueDeliveryCounts(serviceBus string) (map[string]int, error) {
	vars := map[string]string{}
	for _, m := range bicepQueueNameVar.FindAllStringSubmatch(serviceBus, -1) {
		vars[m[1]] = m[2]
	}
	counts := map[string]int{}
	for _, loc := range bicepQueueResource.FindAllStringIndex(serviceBus, -1) {
		body, _ := block(serviceBus[loc[0]:], "= {")
		name := bicepNameField.FindStringSubmatch(body)
		max := bicepMaxDelivery.FindStringSubmatch(body)
		if name == nil || vars[name[1]] == "" || max == nil {
			return nil, fmt.Errorf("servicebus.bicep: a queue without a name variable or a literal maxDeliveryCount: %.80q", body)
		}
		counts[vars[name[1]]], _ = strconv.Atoi(max[1])
	}
	if len(counts) == 0 {
		return nil, errors.New("servicebus.bicep: no queues")
	}
	return counts, nil
}

// checkDeliveryCounts: every place the handler runs sets each queue's
// delivery count setting to the queue's own maxDeliveryCount.
func checkDeliveryCounts(queues map[string]int, places []place) error {
	var errs []error
	for _, queue := range sortedKeys(queues) {
		setting, ok := deliveryCountSettings[queue]
		if !ok {
			errs = append(errs, fmt.Errorf("queue %s: no handler setting for its maxDeliveryCount", queue))
			continue
		}
		for _, p := range places {
			got, ok := p.settings[setting]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%s: %s is not set; the queue's maxDeliveryCount is %d (the handler would assume 10 and never record dead_lettered)", p.name, setting, queues[queue]))
			case strings.Trim(got, `'"`) != strconv.Itoa(queues[queue]):
				errs = append(errs, fmt.Errorf("%s: %s is %s, but queue %s's maxDeliveryCount is %d", p.name, setting, got, queue, queues[queue]))
			}
		}
	}
	return errors.Join(errs...)
}

// TestServiceBus_DeliveryCountsAgree: the Function App and the AKS workers
// tell the handler the queues' real maxDeliveryCount.
func TestServiceBus_DeliveryCountsAgree(t *testing.T) {
	t.Parallel()
	queues, err := queueDeliveryCounts(string(readFile(t, infraDir+"/modules/servicebus.bicep")))
	if err != nil {
		t.Fatal(err)
	}
	if len(queues) != 2 {
		t.Fatalf("queues %v: want doc-ingest and doc-ingest-heavy", queues)
	}
	appSettings, err := bicepSettings(string(readFile(t, infraDir+"/modules/functionapp.bicep")))
	if err != nil {
		t.Fatal(err)
	}
	worker, _ := workerEnv(t)
	places := []place{{"the Function App (functionapp.bicep)", appSettings}, {"infra/k8s/deployment.yaml", worker}}
	if err := checkDeliveryCounts(queues, places); err != nil {
		t.Error(err)
	}
}

func TestServiceBus_BrokenDeliveryCountsFail(t *testing.T) {
	t.Parallel()
	queues := map[string]int{"doc-ingest": 5, "doc-ingest-heavy": 8}
	good := map[string]string{"OFFPATH_INGEST_MAX_DELIVERY_COUNT": "'5'", "OFFPATH_INGEST_HEAVY_MAX_DELIVERY_COUNT": "8"}
	if err := checkDeliveryCounts(queues, []place{{"app", good}}); err != nil {
		t.Fatalf("agreeing settings: %v", err)
	}
	for name, c := range map[string]struct {
		queues   map[string]int
		settings map[string]string
	}{
		"missing":       {queues, map[string]string{"OFFPATH_INGEST_MAX_DELIVERY_COUNT": "5"}},
		"disagrees":     {queues, map[string]string{"OFFPATH_INGEST_MAX_DELIVERY_COUNT": "10", "OFFPATH_INGEST_HEAVY_MAX_DELIVERY_COUNT": "8"}},
		"swapped":       {queues, map[string]string{"OFFPATH_INGEST_MAX_DELIVERY_COUNT": "8", "OFFPATH_INGEST_HEAVY_MAX_DELIVERY_COUNT": "5"}},
		"unknown queue": {map[string]int{"doc-other": 5}, good},
	} {
		if err := checkDeliveryCounts(c.queues, []place{{"app", c.settings}}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	bicep := "var lightQueueName = 'doc-ingest'\nresource light 'Microsoft.ServiceBus/namespaces/queues@2024-01-01' = {\n  name: lightQueueName\n  properties: union(common, {\n    maxDeliveryCount: 7\n  })\n}\n"
	if got, err := queueDeliveryCounts(bicep); err != nil || got["doc-ingest"] != 7 {
		t.Errorf("queueDeliveryCounts = %v, %v; want doc-ingest 7", got, err)
	}
	if _, err := queueDeliveryCounts(strings.Replace(bicep, "maxDeliveryCount: 7", "maxDeliveryCount: count", 1)); err == nil {
		t.Error("a maxDeliveryCount that is not a literal: no error")
	}
}
