package devhost

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"
)

// The host builds each Data and Metadata value with
// JsonConvert.SerializeObject and sends the result as a JSON string
// (primitives become their text, strings their JSON text). These helpers
// reproduce each case exactly, so a handler that works here meets the same
// quirks it will meet in Azure.

// envelope is the request body {"Data": {...}, "Metadata": {...}}.
type envelope struct {
	Data     map[string]json.RawMessage `json:"Data"`
	Metadata map[string]json.RawMessage `json:"Metadata"`
}

func newEnvelope(function string, now time.Time) envelope {
	return envelope{
		Data: map[string]json.RawMessage{},
		Metadata: map[string]json.RawMessage{
			"sys": mustJSON(map[string]string{
				"MethodName": function,
				"UtcNow":     now.UTC().Format("2006-01-02T15:04:05.9999999Z"),
				"RandGuid":   newID(),
			}),
		},
	}
}

// hostString is a .NET string: JSON-encoded, then sent as a JSON string
// (abc → "\"abc\"").
func hostString(s string) json.RawMessage { return mustJSON(string(mustJSON(s))) }

// hostNumber is a .NET number: its text, sent as a JSON string (3 → "3").
func hostNumber(n int64) json.RawMessage { return mustJSON(strconv.FormatInt(n, 10)) }

// hostBool is a .NET bool: "true" or "false" as a JSON string.
func hostBool(b bool) json.RawMessage { return mustJSON(strconv.FormatBool(b)) }

// hostDateTime is a .NET DateTime after the host's ToString round trip:
// no fraction, no zone (2025-03-01T10:20:30).
func hostDateTime(t time.Time) json.RawMessage {
	return mustJSON(t.UTC().Format("2006-01-02T15:04:05"))
}

// hostDateTimeOffset is a .NET DateTimeOffset: +00:00, no fraction.
func hostDateTimeOffset(t time.Time) json.RawMessage {
	return mustJSON(t.UTC().Format("2006-01-02T15:04:05") + "+00:00")
}

// hostBytes is a byte[]: one base64 string.
func hostBytes(b []byte) json.RawMessage { return mustJSON(base64.StdEncoding.EncodeToString(b)) }

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("devhost: marshal host value: " + err.Error()) // only for values built here
	}
	return b
}
