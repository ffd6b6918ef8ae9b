package azopenai

import (
	"encoding/json"
	"maps"
	"strings"
	"time"

	"github.com/offpath/offpath/internal/batch"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"
)

// fromSDKBatch reads a batch off the wire.
func fromSDKBatch(ob *openai.Batch) batch.AzureBatch {
	b := batch.AzureBatch{
		ID: ob.ID, Status: batch.AzureStatus(strings.ToLower(string(ob.Status))), Endpoint: ob.Endpoint,
		InputFileID: ob.InputFileID, OutputFileID: ob.OutputFileID, ErrorFileID: ob.ErrorFileID,
		RequestCounts: batch.RequestCounts{Total: ob.RequestCounts.Total, Completed: ob.RequestCounts.Completed, Failed: ob.RequestCounts.Failed},
		CreatedAt:     unixOrISO(ob.CreatedAt, ob.JSON.CreatedAt),
		InProgressAt:  unixOrISO(ob.InProgressAt, ob.JSON.InProgressAt),
		ExpiresAt:     unixOrISO(ob.ExpiresAt, ob.JSON.ExpiresAt),
		FinalizingAt:  unixOrISO(ob.FinalizingAt, ob.JSON.FinalizingAt),
		CompletedAt:   unixOrISO(ob.CompletedAt, ob.JSON.CompletedAt),
		FailedAt:      unixOrISO(ob.FailedAt, ob.JSON.FailedAt),
		ExpiredAt:     unixOrISO(ob.ExpiredAt, ob.JSON.ExpiredAt),
		CancellingAt:  unixOrISO(ob.CancellingAt, ob.JSON.CancellingAt),
		CancelledAt:   unixOrISO(ob.CancelledAt, ob.JSON.CancelledAt),
		Metadata:      maps.Clone(map[string]string(ob.Metadata)),
	}
	for _, e := range ob.Errors.Data {
		b.Errors = append(b.Errors, batch.BatchError{Code: e.Code, Message: e.Message, Param: e.Param, Line: e.Line})
	}
	return b
}

// unixOrISO reads a unix-seconds timestamp, or an ISO-8601 string (which
// openai-go decodes as 0, keeping the raw text), or nothing.
func unixOrISO(v int64, f respjson.Field) time.Time {
	if v != 0 {
		return time.Unix(v, 0).UTC()
	}
	raw := f.Raw()
	if !strings.HasPrefix(raw, `"`) {
		return time.Time{}
	}
	var s string
	if json.Unmarshal([]byte(raw), &s) != nil {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}
