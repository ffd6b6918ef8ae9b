package ingest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offpath/offpath/internal/claimcheck"
	"github.com/offpath/offpath/internal/ingest"
)

// TestFunctionJSON_AgreesWithTheCode: the function folders bind what the
// functions read and write, by name, on the queues the claim-check rules
// route to; the blob trigger defers its content and ships with the Event
// Grid source spelt as `make app BLOB_TRIGGER_SOURCE=...` rewrites it.
func TestFunctionJSON_AgreesWithTheCode(t *testing.T) {
	t.Parallel()
	type binding struct {
		Type, Direction, Name, Path, QueueName, Connection, Source, DataType string
		Properties                                                           map[string]any
	}
	read := func(fn string) ([]binding, string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("../../functions", fn, "function.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct{ Bindings []binding }
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Bindings, string(b)
	}
	enq, raw := read(ingest.EnqueueFunction)
	if len(enq) != 3 {
		t.Fatalf("%s: %d bindings, want the trigger and two outputs", ingest.EnqueueFunction, len(enq))
	}
	tr := enq[0]
	if tr.Type != "blobTrigger" || tr.Name != ingest.BlobBinding || tr.Path != claimcheck.DefaultContainer+"/{name}" ||
		tr.Connection != "AzureWebJobsStorage" || tr.Properties["supportsDeferredBinding"] != true {
		t.Errorf("blob trigger = %+v", tr)
	}
	if !strings.Contains(raw, `"source": "EventGrid"`) {
		t.Errorf(`%s lacks "source": "EventGrid" as the Makefile's BLOB_TRIGGER_SOURCE switch spells it`, ingest.EnqueueFunction)
	}
	outs := map[string]string{}
	for _, b := range enq[1:] {
		if b.Type != "serviceBus" || b.Direction != "out" || b.Connection != "ServiceBus" || b.DataType == "binary" {
			t.Errorf("output = %+v", b)
		}
		outs[b.Name] = b.QueueName
	}
	if outs[ingest.LightOutput] != claimcheck.DefaultLightQueue || outs[ingest.HeavyOutput] != claimcheck.DefaultHeavyQueue {
		t.Errorf("outputs = %v", outs)
	}
	for fn, queue := range map[string]string{ingest.ProcessFunction: claimcheck.DefaultLightQueue, ingest.ProcessHeavyFunction: claimcheck.DefaultHeavyQueue} {
		bs, _ := read(fn)
		if len(bs) != 1 || bs[0].Type != "serviceBusTrigger" || bs[0].Name != ingest.MessageBinding || bs[0].QueueName != queue ||
			bs[0].DataType != "binary" || bs[0].Connection != "ServiceBus" {
			t.Errorf("%s: %+v", fn, bs)
		}
	}
}
