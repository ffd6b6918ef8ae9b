package batchfile

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/offpath/offpath/internal/ledger"
)

// Wire shapes of an output line (OpenAI's BatchRequestOutput, with Azure's
// content-filter annotations). Only the fields offpath reads are declared;
// everything else is ignored.
type wireLine struct {
	CustomID *string       `json:"custom_id"`
	Response *wireResponse `json:"response"`
	Error    *wireError    `json:"error"`
}

type wireResponse struct {
	StatusCode *int       `json:"status_code"`
	RequestID  flexString `json:"request_id"`
	Body       *wireBody  `json:"body"`
}

type wireError struct {
	Code       flexString `json:"code"`
	Message    flexString `json:"message"`
	InnerError *wireInner `json:"innererror"`  // real service responses
	InnerSpec  *wireInner `json:"inner_error"` // 2024-10-21 REST spec
}

// wireInner carries the filter verdicts under any of the three spellings
// seen: content_filter_result (service), content_filter_results (docs and
// spec).
type wireInner struct {
	Code    flexString                `json:"code"`
	Result  map[string]jsontext.Value `json:"content_filter_result"`
	Results map[string]jsontext.Value `json:"content_filter_results"`
}

type wireBody struct {
	Choices []wireChoice `json:"choices"`
	Usage   *wireUsage   `json:"usage"`
	Error   *wireError   `json:"error"`
	// Responses API: a response object. "incomplete" with
	// incomplete_details.reason "content_filter" is the completion refused
	// (the chat form's finish_reason "content_filter"); Azure may annotate
	// the verdicts in content_filters.
	Status            string         `json:"status"`
	Output            []wireOutput   `json:"output"`
	IncompleteDetails jsontext.Value `json:"incomplete_details"`
	ContentFilters    jsontext.Value `json:"content_filters"`
}

type wireChoice struct {
	FinishReason flexString `json:"finish_reason"`
	Message      struct {
		Content *string `json:"content"`
	} `json:"message"`
	// Filters is decoded only for a filtered choice: most lines never need it.
	Filters jsontext.Value `json:"content_filter_results"`
}

type wireOutput struct {
	Type    string `json:"type"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

type wireUsage struct {
	PromptTokens      *int64           `json:"prompt_tokens"`
	CompletionTokens  *int64           `json:"completion_tokens"`
	InputTokens       *int64           `json:"input_tokens"`
	OutputTokens      *int64           `json:"output_tokens"`
	TotalTokens       *int64           `json:"total_tokens"`
	PromptDetails     *cachedDetail    `json:"prompt_tokens_details"`
	InputDetails      *cachedDetail    `json:"input_tokens_details"`
	CompletionDetails *reasoningDetail `json:"completion_tokens_details"`
	OutputDetails     *reasoningDetail `json:"output_tokens_details"`
}

type cachedDetail struct {
	CachedTokens *int64 `json:"cached_tokens"`
}

type reasoningDetail struct {
	ReasoningTokens *int64 `json:"reasoning_tokens"`
}

// flexString reads a JSON string, or the text of a number, or null. Azure
// writes codes such as "429" as strings, but a number must not make the
// whole line unreadable.
type flexString string

func (f *flexString) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case '"', '0': // a number's text as written
		*f = flexString(tok.String())
	case 'n':
		*f = ""
	default:
		return fmt.Errorf("expected a string, got %v", tok.Kind())
	}
	return nil
}

// lineOptions decode output and index lines as leniently as encoding/json
// did (names in any case, a repeated name's last value, invalid UTF-8
// replaced), in one pass that validates as it decodes.
var lineOptions = json.JoinOptions(json.MatchCaseInsensitiveNames(true),
	jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

func decode(raw []byte, v any) error { return json.Unmarshal(raw, v, lineOptions) }

func parseLine(d *lineDecoder, raw []byte, n int) (Result, error) {
	// One decoding pass over the whole line; a line whose shape is wrong
	// anywhere is reported, with its custom_id when that much is readable.
	var w wireLine
	if err := d.decodeLine(raw, &w); err != nil {
		return Result{}, &LineError{Line: n, CustomID: salvageCustomID(raw), Reason: "not a JSON object of the output schema: " + shortErr(err)}
	}
	if w.CustomID == nil || *w.CustomID == "" {
		return Result{}, &LineError{Line: n, Reason: "no custom_id string"}
	}
	id := *w.CustomID
	res := Result{Line: n, CustomID: id}
	bad := func(reason string) (Result, error) {
		return Result{}, &LineError{Line: n, CustomID: id, Reason: reason}
	}
	switch {
	case w.Error != nil:
		// A request that never produced an HTTP response (batch_expired,
		// internal errors), or Azure's top-level error spelling.
		res.Code, res.Message = string(w.Error.Code), string(w.Error.Message)
		res.Outcome = Failed
		if cats, refused := w.Error.refusal(); refused {
			res.Outcome, res.RefusedBy, res.Categories = Refused, RefusedPrompt, cats
		}
		return res, nil
	case w.Response == nil:
		return bad("neither response nor error")
	case w.Response.StatusCode == nil:
		return bad("response without status_code")
	}
	res.StatusCode, res.RequestID = *w.Response.StatusCode, string(w.Response.RequestID)
	var body wireBody
	if w.Response.Body != nil {
		body = *w.Response.Body
	}
	if body.Usage != nil {
		u, err := body.Usage.usage()
		if err != nil {
			return bad(err.Error())
		}
		res.Usage = u
	}
	if res.StatusCode < 200 || res.StatusCode > 299 || body.Error != nil {
		res.Outcome = Failed
		if body.Error != nil {
			res.Code, res.Message = string(body.Error.Code), string(body.Error.Message)
			if cats, refused := body.Error.refusal(); refused {
				res.Outcome, res.RefusedBy, res.Categories = Refused, RefusedPrompt, cats
			}
		}
		return res, nil
	}
	res.Outcome = OK
	body.answer(&res)
	return res, nil
}

// answer fills the text and finish reason, and marks a completion refusal.
func (b *wireBody) answer(res *Result) {
	for i, ch := range b.Choices {
		if i == 0 {
			res.FinishReason = string(ch.FinishReason)
			if ch.Message.Content != nil {
				res.Text = *ch.Message.Content
			}
		}
		if ch.FinishReason == "content_filter" {
			res.Outcome, res.RefusedBy = Refused, RefusedCompletion
			var m map[string]jsontext.Value
			if decode(ch.Filters, &m) == nil {
				res.Categories = mergeCategories(res.Categories, filtered(m))
			}
		}
	}
	if len(b.Choices) == 0 && (len(b.Output) > 0 || b.Status != "") {
		var sb strings.Builder
		for _, o := range b.Output {
			for _, c := range o.Content {
				if c.Type == "output_text" {
					sb.WriteString(c.Text)
				}
			}
		}
		res.Text, res.FinishReason = sb.String(), b.Status
		if r := incompleteReason(b.IncompleteDetails); b.Status == "incomplete" && r != "" {
			res.FinishReason = r
		}
		if res.FinishReason == "content_filter" {
			res.Outcome, res.RefusedBy = Refused, RefusedCompletion
			res.Categories = mergeCategories(res.Categories, responseFilters(b.ContentFilters))
		}
	}
}

// incompleteReason reads incomplete_details: {"reason": "..."} as
// documented, or a bare string; anything else says nothing.
func incompleteReason(raw jsontext.Value) string {
	var d struct {
		Reason flexString `json:"reason"`
	}
	if decode(raw, &d) == nil {
		return string(d.Reason)
	}
	var s string
	if decode(raw, &s) == nil {
		return s
	}
	return ""
}

// responseFilters lists the categories marked filtered in a Responses
// body's content_filters annotations ([{"source_type", "blocked",
// "content_filter_results": {category: {filtered, …}}}]); any other shape
// yields none: the verdicts are advisory, the refusal is the status.
func responseFilters(raw jsontext.Value) []string {
	var entries []struct {
		Results map[string]jsontext.Value `json:"content_filter_results"`
	}
	if len(raw) == 0 || decode(raw, &entries) != nil {
		return nil
	}
	var cats []string
	for _, e := range entries {
		cats = mergeCategories(cats, filtered(e.Results))
	}
	return cats
}

// refusal reports whether an error is a content-filter refusal, and the
// categories that tripped.
func (e *wireError) refusal() ([]string, bool) {
	refused := e.Code == "content_filter"
	var cats []string
	for _, in := range []*wireInner{e.InnerError, e.InnerSpec} {
		if in == nil {
			continue
		}
		if in.Code == "ResponsibleAIPolicyViolation" {
			refused = true
		}
		cats = mergeCategories(cats, filtered(in.Result))
		cats = mergeCategories(cats, filtered(in.Results))
	}
	return cats, refused
}

// filtered lists the categories whose verdict says filtered: true. Entries of
// other shapes (an "error" entry when the filter did not run) are skipped.
func filtered(m map[string]jsontext.Value) []string {
	var out []string
	for cat, raw := range m {
		var v struct {
			Filtered bool `json:"filtered"`
		}
		if decode(raw, &v) == nil && v.Filtered {
			out = append(out, cat)
		}
	}
	slices.Sort(out)
	return out
}

func mergeCategories(a, b []string) []string {
	for _, c := range b {
		if !slices.Contains(a, c) {
			a = append(a, c)
		}
	}
	slices.Sort(a)
	return a
}

// usage converts the reported usage, refusing negative counts.
func (u *wireUsage) usage() (ledger.Usage, error) {
	// total_tokens is checked, not kept: it is prompt plus completion
	// tokens (ledger.Usage.TotalTokens).
	var out ledger.Usage
	var total int64
	pick := func(dst *int64, name string, vals ...*int64) error {
		for _, v := range vals {
			if v == nil {
				continue
			}
			if *v < 0 {
				return fmt.Errorf("negative %s", name)
			}
			*dst = *v
			return nil
		}
		return nil
	}
	var cachedP, cachedI, reasonC, reasonO *int64
	if u.PromptDetails != nil {
		cachedP = u.PromptDetails.CachedTokens
	}
	if u.InputDetails != nil {
		cachedI = u.InputDetails.CachedTokens
	}
	if u.CompletionDetails != nil {
		reasonC = u.CompletionDetails.ReasoningTokens
	}
	if u.OutputDetails != nil {
		reasonO = u.OutputDetails.ReasoningTokens
	}
	for _, err := range []error{
		pick(&out.PromptTokens, "prompt tokens", u.PromptTokens, u.InputTokens),
		pick(&out.CompletionTokens, "completion tokens", u.CompletionTokens, u.OutputTokens),
		pick(&total, "total tokens", u.TotalTokens),
		pick(&out.CachedTokens, "cached tokens", cachedP, cachedI),
		pick(&out.ReasoningTokens, "reasoning tokens", reasonC, reasonO),
	} {
		if err != nil {
			return ledger.Usage{}, err
		}
	}
	return out, nil
}

// salvageCustomID pulls a custom_id string out of a line that does not
// decode as a whole, so the caller can still mark the item.
func salvageCustomID(raw []byte) string {
	var v struct {
		CustomID string `json:"custom_id"`
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw), lineOptions)
	if err := json.UnmarshalDecode(dec, &v, lineOptions); err != nil {
		return ""
	}
	return v.CustomID
}

// shortErr keeps decoder messages bounded: they may quote line content.
func shortErr(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
