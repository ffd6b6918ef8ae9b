package devhost

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/local/blobwatch"
)

// blobCreated is the Event Grid event type of a new or replaced blob.
const blobCreated = "Microsoft.Storage.BlobCreated"

// maxEventBody bounds an Event Grid delivery (Event Grid sends at most 1 MB).
const maxEventBody = 1 << 20

// gridEvent is an Event Grid event in either schema: Event Grid's
// (eventType, subject, data) or CloudEvents 1.0 (type, subject, data).
type gridEvent struct {
	EventType string `json:"eventType"`
	Type      string `json:"type"`
	Subject   string `json:"subject"`
	Data      struct {
		URL            string `json:"url"`
		ValidationCode string `json:"validationCode"`
	} `json:"data"`
}

func (e gridEvent) kind() string { return e.EventType + e.Type }

// serveBlobWebhook is the Storage extension's Event Grid endpoint,
//
//	POST /runtime/webhooks/blobs?functionName=Host.Functions.{name}&code={key}
//
// where an Event Grid subscription delivers BlobCreated events for a
// blobTrigger with source EventGrid (locally the master key stands for the
// blobs_extension system key). It answers the subscription validation
// handshake, and for each BlobCreated event of a blob the trigger's path
// matches it answers 202 and runs the function in the background, binding
// the blob as the extension does (invokeBlob). A delivery Event Grid sends
// here is not retried by the dev host; blobs written to Azurite are found
// by the container scan anyway, which stands in for Storage's events.
func (h *Host) serveBlobWebhook(w http.ResponseWriter, r *http.Request) {
	if !h.keys.allows(r, "admin") {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(r.URL.Query().Get("functionName"), "Host.Functions.")
	fn := h.function(name)
	if fn == nil || !strings.EqualFold(fn.Trigger().Type, "blobTrigger") || !h.eventGrid(fn) {
		http.Error(w, "no blob trigger with the Event Grid source named "+strings.TrimSpace(name), http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxEventBody+1))
	if err != nil || len(body) > maxEventBody {
		http.Error(w, "an Event Grid delivery is at most 1 MB", http.StatusRequestEntityTooLarge)
		return
	}
	events, err := parseGridEvents(body)
	if err != nil {
		http.Error(w, "body is not an Event Grid event or an array of them: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(events) == 1 && strings.EqualFold(r.Header.Get("aeg-event-type"), "SubscriptionValidation") {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"validationResponse": events[0].Data.ValidationCode})
		return
	}
	p, err := blobwatch.ParsePath(fn.Trigger().Path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	for _, e := range events {
		if e.kind() != blobCreated {
			continue // the extension ignores other event types
		}
		container, blob, ok := subjectBlob(e.Subject)
		if !ok {
			container, blob, ok = urlBlob(e.Data.URL)
		}
		if !ok || container != p.Container() {
			continue
		}
		tokens, ok := p.Match(blob)
		if !ok {
			continue
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), max(h.invoker.timeout, time.Minute))
			defer cancel()
			if err := h.invokeBlob(ctx, fn, container, blob, tokens, ""); err != nil {
				h.logger.Warn().Err(err).Str("function", fn.Name).Str("blob", container+"/"+blob).Msg("Event Grid blob trigger failed")
			}
		}()
	}
	w.WriteHeader(http.StatusAccepted)
}

// parseGridEvents reads one event or an array of them.
func parseGridEvents(body []byte) ([]gridEvent, error) {
	var events []gridEvent
	trimmed := strings.TrimSpace(string(body))
	if strings.HasPrefix(trimmed, "{") {
		var e gridEvent
		if err := json.Unmarshal(body, &e); err != nil {
			return nil, err
		}
		return []gridEvent{e}, nil
	}
	if err := json.Unmarshal(body, &events); err != nil {
		return nil, err
	}
	return events, nil
}

// subjectBlob reads /blobServices/default/containers/{c}/blobs/{name}.
func subjectBlob(subject string) (container, name string, ok bool) {
	rest, ok := strings.CutPrefix(subject, "/blobServices/default/containers/")
	if !ok {
		return "", "", false
	}
	container, name, ok = strings.Cut(rest, "/blobs/")
	return container, name, ok && container != "" && name != ""
}

// urlBlob reads a blob URL, host-style or path-style (Azurite's, with the
// account first).
func urlBlob(raw string) (container, name string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", false
	}
	path := strings.TrimPrefix(u.Path, "/")
	if h := u.Hostname(); h == "127.0.0.1" || h == "localhost" {
		_, path, _ = strings.Cut(path, "/")
	}
	container, name, ok = strings.Cut(path, "/")
	return container, name, ok && container != "" && name != ""
}
