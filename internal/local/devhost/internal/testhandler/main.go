// Command testhandler is a custom handler for the dev host's end-to-end
// tests, built on offpath's own protocol layer. It records every invocation
// it receives as a JSON line in $TESTHANDLER_LOG and behaves by input:
//
//   - sb-fn (Service Bus, queue "work"): fails while the body contains
//     "fail" or $TESTHANDLER_FAIL is set; exits the process on "crash";
//     otherwise writes "done" to its serviceBus output "out";
//   - blob-fn (blob, "incoming/{tenant}/{name}"): records tokens and content;
//   - timer-fn (timer): records IsPastDue and the schedule status;
//   - echo (HTTP envelope mode): answers 201 with the request body;
//   - api (HTTP forwarding mode): /api/v1/hello answers JSON.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/offpath/offpath/internal/invoke"
)

type record struct {
	Function      string            `json:"function"`
	Body          string            `json:"body,omitempty"`
	DeliveryCount int               `json:"deliveryCount,omitempty"`
	MessageID     string            `json:"messageId,omitempty"`
	Tokens        map[string]string `json:"tokens,omitempty"`
	Properties    json.RawMessage   `json:"properties,omitempty"`
	IsPastDue     bool              `json:"isPastDue,omitempty"`
	HasStatus     bool              `json:"hasStatus,omitempty"`
	Query         string            `json:"query,omitempty"`
}

func main() {
	logPath := os.Getenv("TESTHANDLER_LOG")
	var mu sync.Mutex
	write := func(r record) error {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		b, _ := json.Marshal(r)
		_, err = f.Write(append(b, '\n'))
		return err
	}
	m := invoke.NewMux(zerolog.New(os.Stdout), invoke.Options{})
	m.Handle("sb-fn", invoke.ServiceBusTrigger, func(_ context.Context, r *invoke.Request) (invoke.Result, error) {
		msg, err := r.ServiceBus("message")
		if err != nil {
			return invoke.Result{}, err
		}
		body := string(msg.Body)
		if err := write(record{Function: "sb-fn", Body: body, DeliveryCount: msg.DeliveryCount, MessageID: msg.MessageID}); err != nil {
			return invoke.Result{}, err
		}
		if body == "crash" {
			os.Exit(3)
		}
		if strings.Contains(body, "fail") || os.Getenv("TESTHANDLER_FAIL") != "" {
			return invoke.Result{}, errors.New("asked to fail")
		}
		return invoke.Result{Outputs: map[string]invoke.Output{"out": invoke.Text("done")}}, nil
	})
	blob := func(_ context.Context, r *invoke.Request) (invoke.Result, error) {
		// The content alone: the version is the dev host's to report
		// (its events), as the 5.x Properties carry no usable ETag.
		data, _ := r.Data("blob")
		content, err := data.Bytes()
		if err != nil {
			return invoke.Result{}, err
		}
		tenant, _ := r.Meta("tenant")
		name, _ := r.Meta("name")
		ts, _ := tenant.String()
		ns, _ := name.String()
		props, _ := r.Meta("Properties")
		rec := record{Function: "blob-fn", Body: string(content), Tokens: map[string]string{"tenant": ts, "name": ns}, Properties: json.RawMessage(props)}
		if err := write(rec); err != nil {
			return invoke.Result{}, err
		}
		if strings.Contains(string(content), "fail") {
			return invoke.Result{}, errors.New("asked to fail")
		}
		return invoke.Result{}, nil
	}
	m.Handle("blob-fn", invoke.BlobTrigger, blob)
	m.Handle("blob-eg", invoke.BlobTrigger, blob)
	m.Handle("timer-fn", invoke.TimerTrigger, func(_ context.Context, r *invoke.Request) (invoke.Result, error) {
		t, err := r.Timer("timer")
		if err != nil {
			return invoke.Result{}, err
		}
		return invoke.Result{}, write(record{Function: "timer-fn", IsPastDue: t.IsPastDue, HasStatus: !t.Next.IsZero()})
	})
	m.Handle("echo", invoke.HTTPTrigger, func(_ context.Context, r *invoke.Request) (invoke.Result, error) {
		req, err := r.HTTP("req")
		if err != nil {
			return invoke.Result{}, err
		}
		if err := write(record{Function: "echo", Body: string(req.Body), Query: req.Query.Get("q")}); err != nil {
			return invoke.Result{}, err
		}
		res := invoke.HTTPResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "text/plain"}, Body: "echo:" + string(req.Body)}
		return invoke.Result{Outputs: map[string]invoke.Output{"res": invoke.Response(res)}}, nil
	})
	m.Forward("/api/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q,"invocation":%q}`, r.URL.Path, r.Header.Get("X-Azure-Functions-InvocationId"))
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("FUNCTIONS_CUSTOMHANDLER_PORT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = http.Serve(ln, m)
}
