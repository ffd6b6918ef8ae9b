package azopenai

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"unicode"
)

// parseSummary reads the model's reply: the JSON object it was asked for
// (also inside a code fence or after some chatter), keywords as an array or
// a comma-separated string. Anything else is taken as the summary itself,
// with keywords from a "Keywords:" line if it has one, else derived from
// input, the summarised text; structured reports which happened.
func parseSummary(reply, input string, maxKeywords int) (summary string, keywords []string, structured bool) {
	if start, end := strings.IndexByte(reply, '{'), strings.LastIndexByte(reply, '}'); start >= 0 && end > start {
		var obj struct {
			Summary  string          `json:"summary"`
			Keywords json.RawMessage `json:"keywords"`
		}
		if json.Unmarshal([]byte(reply[start:end+1]), &obj) == nil && strings.TrimSpace(obj.Summary) != "" {
			return strings.TrimSpace(obj.Summary), cleanKeywords(keywordList(obj.Keywords), maxKeywords), true
		}
	}
	text := strings.TrimSpace(reply)
	if before, after, ok := cutFold(text, "keywords:"); ok {
		return strings.TrimSpace(before), cleanKeywords(strings.Split(after, ","), maxKeywords), false
	}
	return text, deriveKeywords(input, maxKeywords), false
}

func keywordList(raw json.RawMessage) []string {
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return list
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.Split(s, ",")
	}
	return nil
}

// cleanKeywords trims, drops empties and duplicates (case-insensitively),
// and keeps at most n.
func cleanKeywords(in []string, n int) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range in {
		k = strings.Trim(strings.TrimSpace(k), `"'.;`)
		if k == "" || len(k) > 100 || seen[strings.ToLower(k)] {
			continue
		}
		seen[strings.ToLower(k)] = true
		if out = append(out, k); len(out) == n {
			break
		}
	}
	return out
}

// cutFold is strings.Cut with an ASCII case-insensitive separator.
func cutFold(s, sep string) (before, after string, ok bool) {
	if i := strings.Index(strings.ToLower(s), sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// deriveKeywords picks the most frequent words of four letters or more that
// are not common function words, ties broken by first appearance.
func deriveKeywords(text string, n int) []string {
	type word struct {
		w     string
		count int
		first int
	}
	counts := map[string]*word{}
	stop := stopWords()
	for i, f := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(f)) < 4 || stop[f] {
			continue
		}
		if w := counts[f]; w != nil {
			w.count++
		} else {
			counts[f] = &word{w: f, count: 1, first: i}
		}
	}
	words := make([]*word, 0, len(counts))
	for _, w := range counts {
		words = append(words, w)
	}
	slices.SortFunc(words, func(a, b *word) int { return cmp.Or(cmp.Compare(b.count, a.count), cmp.Compare(a.first, b.first)) })
	var out []string
	for _, w := range words[:min(n, len(words))] {
		out = append(out, w.w)
	}
	return out
}

func stopWords() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("that this with from have been were they their them then than there these those which would could should about into over after also only most more some such what when where while will your other because very just like even many well back made look give first time year good work") {
		m[w] = true
	}
	return m
}
