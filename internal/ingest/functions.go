package ingest

import (
	"context"

	"github.com/offpath/offpath/internal/invoke"
)

// Function names and their bindings, as in functions/<name>/function.json.
const (
	EnqueueFunction      = "ingest-enqueue"
	ProcessFunction      = "ingest-process"
	ProcessHeavyFunction = "ingest-process-heavy"

	// BlobBinding is the enqueue function's blob trigger, on
	// "incoming/{name}" with deferred binding (the host sends no content).
	BlobBinding = "blob"
	// LightOutput and HeavyOutput are its Service Bus outputs, to the light
	// and the heavy queue.
	LightOutput = "light"
	HeavyOutput = "heavy"
	// MessageBinding is the process functions' Service Bus trigger.
	MessageBinding = "message"
)

// EnqueueFunc is the ingest-enqueue function: a blob trigger whose claim
// check leaves through the output binding of its queue. Of the envelope it
// takes only the blob's name: whatever the shape of its Properties, the
// older SDK's, the 5.x extension's, an Event Grid event or a deferred
// descriptor, the claim check is made from the blob as storage reports it.
func EnqueueFunc(e *Enqueuer) invoke.Func {
	policy := e.o.Rules.Policy()
	outputs := map[string]string{policy.LightQueue: LightOutput, policy.HeavyQueue: HeavyOutput}
	return func(ctx context.Context, req *invoke.Request) (invoke.Result, error) {
		b, err := req.Blob(BlobBinding)
		if err != nil {
			return invoke.Result{}, err
		}
		claim, err := e.Enqueue(ctx, b.Name, false)
		if err != nil || claim.Queue == "" {
			return invoke.Result{}, err
		}
		return invoke.Result{Outputs: map[string]invoke.Output{outputs[claim.Queue]: invoke.Bytes(claim.Body)}}, nil
	}
}

// ProcessFunc is ingest-process or ingest-process-heavy, the Service Bus
// trigger on queue.
func ProcessFunc(p *Processor, queue string) invoke.Func {
	return func(ctx context.Context, req *invoke.Request) (invoke.Result, error) {
		m, err := req.ServiceBus(MessageBinding)
		if err != nil {
			return invoke.Result{}, err
		}
		_, err = p.Process(ctx, Delivery{Body: m.Body, MessageID: m.MessageID, DeliveryCount: m.DeliveryCount, EnqueuedTime: m.EnqueuedTime, Queue: queue})
		return invoke.Result{}, err
	}
}
