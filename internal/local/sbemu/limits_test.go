package sbemu_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/offpath/offpath/internal/local/sbemu"
)

func TestSend_Limits(t *testing.T) {
	t.Parallel()
	b := newBroker(t, nil, sbemu.Options{})
	q := queueName(t)
	many := map[string]any{}
	for i := range 3 {
		many[fmt.Sprintf("p%d", i)] = strings.Repeat("v", 30*1024)
	}
	tests := []struct {
		name    string
		m       sbemu.Message
		wantErr error
		wantMsg []string
	}{
		{
			name:    "body over 256 KiB",
			m:       sbemu.Message{Body: make([]byte, 300*1024)},
			wantErr: sbemu.ErrTooLarge,
			wantMsg: []string{fmt.Sprintf("message to %q is 300.", q), "over Service Bus Standard's 256 KiB limit"},
		},
		{
			name:    "one byte over with properties counted",
			m:       sbemu.Message{Body: make([]byte, sbemu.MaxMessageSize-64-3), MessageID: "abc", Subject: "x"},
			wantErr: sbemu.ErrTooLarge,
			wantMsg: []string{"(262145 bytes)", "256 KiB limit"},
		},
		{
			name:    "property over 32 KiB",
			m:       sbemu.Message{ApplicationProperties: map[string]any{"doc": strings.Repeat("x", 33*1024)}},
			wantErr: sbemu.ErrTooLarge,
			wantMsg: []string{`application property "doc" of 33.0 KiB`, "32 KiB limit per property"},
		},
		{
			name:    "properties over 64 KiB together",
			m:       sbemu.Message{ApplicationProperties: many},
			wantErr: sbemu.ErrTooLarge,
			wantMsg: []string{"(92262 bytes) of properties", "64 KiB limit for all properties"},
		},
		{
			name:    "message id over 128 characters",
			m:       sbemu.Message{MessageID: strings.Repeat("é", 129)},
			wantErr: sbemu.ErrInvalidMessage,
			wantMsg: []string{"MessageId of 129 characters"},
		},
		{
			name:    "nested property",
			m:       sbemu.Message{ApplicationProperties: map[string]any{"obj": map[string]any{"a": 1}}},
			wantErr: sbemu.ErrInvalidMessage,
			wantMsg: []string{`application property "obj" has type map[string]interface {}`},
		},
		{
			name:    "NaN property",
			m:       sbemu.Message{ApplicationProperties: map[string]any{"score": math.NaN()}},
			wantErr: sbemu.ErrInvalidMessage,
			wantMsg: []string{`"score"`},
		},
		{
			name:    "invalid UTF-8 property",
			m:       sbemu.Message{ApplicationProperties: map[string]any{"name": "\xff"}},
			wantErr: sbemu.ErrInvalidMessage,
			wantMsg: []string{"UTF-8"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := b.Send(context.Background(), q, tc.m)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Send error = %v, want %v", err, tc.wantErr)
			}
			for _, s := range tc.wantMsg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Send error = %q, want it to mention %q", err, s)
				}
			}
		})
	}
	// Nothing refused reached the queue.
	if active, dead := counts(t, b, q); active != 0 || dead != 0 {
		t.Errorf("Count = %d, %d; want 0, 0", active, dead)
	}
}

func TestSend_LargestMessageRoundTrips(t *testing.T) {
	t.Parallel()
	b := newBroker(t, nil, sbemu.Options{})
	q := queueName(t)
	body := make([]byte, sbemu.MaxMessageSize-64-3) // exactly 256 KiB with the 3-byte MessageID
	for i := range body {
		body[i] = byte(i * 7)
	}
	mustSend(t, b, q, sbemu.Message{Body: body, MessageID: "big"})
	d := receiveWithin(t, b, q, 10*time.Second)
	if !bytes.Equal(d.Body, body) || d.MessageID != "big" {
		t.Fatalf("received %d bytes as %q, want the %d sent as %q", len(d.Body), d.MessageID, len(body), "big")
	}
	if err := b.Complete(context.Background(), d); err != nil {
		t.Fatalf("Complete: %v", err)
	}
}
