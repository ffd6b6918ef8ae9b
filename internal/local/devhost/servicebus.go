package devhost

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/offpath/offpath/internal/local/sbemu"
)

// processQueue runs a serviceBusTrigger function: PeekLock receive with up to
// maxConcurrentCalls invocations in flight, complete on success, abandon on
// failure (the broker dead-letters after MaxDeliveryCount).
func (h *Host) processQueue(ctx context.Context, fn *Function) error {
	t := fn.Trigger()
	return h.opts.broker.Process(ctx, t.QueueName, sbemu.ProcessOptions{
		MaxConcurrentCalls: h.app.Host.MaxConcurrentCalls,
		MaxAutoLockRenewal: h.app.Host.MaxAutoLockRenewal,
		Settled: func(s sbemu.Settlement) {
			h.record(Event{Kind: Settled, Function: fn.Name, Outcome: s.Outcome, Queue: s.Queue, MessageID: s.MessageID, DeliveryCount: s.DeliveryCount})
		},
	}, func(ctx context.Context, d *sbemu.Delivery) error {
		_, err := h.execute(ctx, fn, h.serviceBusEnvelope(fn, d), nil, deliveryEvent(d))
		return err
	})
}

func deliveryEvent(d *sbemu.Delivery) Event {
	return Event{Queue: d.Queue, MessageID: d.MessageID, DeliveryCount: d.DeliveryCount}
}

// serviceBusEnvelope encodes a message as the Service Bus extension 5.x
// binding data reaches a custom handler.
func (h *Host) serviceBusEnvelope(fn *Function, d *sbemu.Delivery) envelope {
	t := fn.Trigger()
	env := newEnvelope(fn.Name, h.opts.Now())
	if strings.EqualFold(t.DataType, "binary") {
		env.Data[t.Name] = hostBytes(d.Body)
	} else {
		env.Data[t.Name] = hostString(string(d.Body))
	}
	m := env.Metadata
	m["DeliveryCount"] = hostNumber(int64(d.DeliveryCount))
	m["LockToken"] = hostString(d.LockToken)
	m["ExpiresAtUtc"] = hostDateTime(d.ExpiresAt)
	m["ExpiresAt"] = hostDateTimeOffset(d.ExpiresAt)
	m["EnqueuedTimeUtc"] = hostDateTime(d.EnqueuedTime)
	m["EnqueuedTime"] = hostDateTimeOffset(d.EnqueuedTime)
	m["MessageId"] = hostString(d.MessageID)
	m["SequenceNumber"] = hostNumber(d.SequenceNumber)
	for key, v := range map[string]string{
		"ContentType": d.ContentType, "CorrelationId": d.CorrelationID,
		"Subject": d.Subject, "Label": d.Subject,
	} {
		if v != "" { // null values are omitted
			m[key] = hostString(v)
		}
	}
	props := d.ApplicationProperties
	if props == nil {
		props = map[string]any{}
	}
	m["ApplicationProperties"] = mustJSON(props)
	m["UserProperties"] = mustJSON(props)
	// SDK objects the host cannot make useful to a custom handler arrive as
	// inert JSON; they are here so handlers learn to ignore them.
	m["MessageActions"] = json.RawMessage(`{}`)
	m["Client"] = mustJSON(map[string]any{"FullyQualifiedNamespace": "devhost.servicebus.local", "IsClosed": false, "Identifier": h.opts.HostID})
	return env
}
