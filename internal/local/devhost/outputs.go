package devhost

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue/queueerror"

	"github.com/offpath/offpath/internal/local/sbemu"
)

// deliver hands each output value to its binding as the host would. A
// failing output binding fails the invocation (and so retries the trigger).
func (h *Host) deliver(ctx context.Context, fn *Function, r *reply, tokens map[string]string) error {
	var errs []error
	for _, b := range fn.Outputs() {
		raw, ok := r.Outputs[b.Name]
		if b.Name == "$return" {
			raw, ok = r.ReturnValue, len(r.ReturnValue) > 0
		}
		if !ok || strings.EqualFold(b.Type, "http") {
			continue
		}
		var err error
		switch strings.ToLower(b.Type) {
		case "servicebus":
			for _, it := range outputItems(b, raw, true) {
				// The id sbemu would generate, made here so the event can name it.
				m := sbemu.Message{Body: it.messageBody(), MessageID: strings.ReplaceAll(newID(), "-", "")}
				if err = h.opts.broker.Send(ctx, b.QueueName, m); err != nil {
					break
				}
				h.recordSent(fn.Name, b.QueueName, m)
			}
		case "queue":
			err = h.enqueue(ctx, b, outputItems(b, raw, true))
		case "blob":
			err = h.writeBlob(ctx, b, outputItems(b, raw, false), tokens)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("output binding %q (%s): %w", b.Name, b.Type, err))
		}
	}
	return errors.Join(errs...)
}

// enqueue writes storage-queue messages base64-encoded, the queue
// extension's default messageEncoding.
func (h *Host) enqueue(ctx context.Context, b Binding, items []outputItem) error {
	q := h.opts.queues.NewQueueClient(b.QueueName)
	if _, err := q.Create(ctx, nil); err != nil && !queueerror.HasCode(err, queueerror.QueueAlreadyExists) {
		return fmt.Errorf("create queue %q: %w", b.QueueName, err)
	}
	for _, it := range items {
		if _, err := q.EnqueueMessage(ctx, base64.StdEncoding.EncodeToString(it.messageBody()), nil); err != nil {
			return fmt.Errorf("enqueue to %q: %w", b.QueueName, err)
		}
	}
	return nil
}

func (h *Host) writeBlob(ctx context.Context, b Binding, items []outputItem, tokens map[string]string) error {
	if len(items) == 0 {
		return nil
	}
	path, err := resolvePath(b.Path, tokens)
	if err != nil {
		return err
	}
	container, name, ok := strings.Cut(path, "/")
	if !ok || name == "" {
		return fmt.Errorf("blob path %q has no blob name", path)
	}
	body := items[0].blobBody()
	_, err = h.opts.blobs.UploadBuffer(ctx, container, name, body, &blockblob.UploadBufferOptions{})
	if err != nil {
		return fmt.Errorf("write blob %s: %w", path, err)
	}
	return nil
}

// resolvePath fills binding expressions such as {name} from the trigger's
// binding data, plus {rand-guid}; an unknown expression is an error, as the
// host refuses to index such a function.
func resolvePath(path string, tokens map[string]string) (string, error) {
	var missing []string
	re := regexp.MustCompile(`\{([^{}]+)\}`)
	out := re.ReplaceAllStringFunc(path, func(m string) string {
		key := m[1 : len(m)-1]
		if key == "rand-guid" {
			return newID()
		}
		for k, v := range tokens {
			if strings.EqualFold(k, key) {
				return v
			}
		}
		missing = append(missing, key)
		return m
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("blob path %q: no binding data for %s", path, strings.Join(missing, ", "))
	}
	return out, nil
}
