package tickets

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkParse measures decoding and validating one 4 KB ticket, the CPU
// side of collecting (Azurite's speed dominates BenchmarkCollect).
func BenchmarkParse(b *testing.B) {
	body := strings.Repeat("The printer \"HP-4\" fails since Monday; café réunion.\n", 75)
	doc, err := json.Marshal(map[string]any{
		"id": "T-1042", "subject": "Printer fails", "body": body, "customer": "ACME",
		"created_at": "2026-03-14T09:30:00Z", "priority": "normal", "tags": []string{"printer"},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, reason := parse(doc); reason != "" {
			b.Fatal(reason)
		}
	}
}
