package catalog

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Money is an amount in US dollars, in integer nano-dollars (1e-9 USD).
type Money int64

// Dollars formats m with six decimals (micro-dollar precision, rounded half
// away from zero), e.g. "12.345679".
func (m Money) Dollars() string {
	neg := m < 0
	n := int64(m)
	if neg {
		n = -n
	}
	micros := (n + 500) / 1000
	s := fmt.Sprintf("%d.%06d", micros/1_000_000, micros%1_000_000)
	if neg && micros != 0 {
		s = "-" + s
	}
	return s
}

// MarshalJSON writes m as a JSON number in dollars with six decimals.
func (m Money) MarshalJSON() ([]byte, error) { return []byte(m.Dollars()), nil }

// UnmarshalJSON reads a JSON number of dollars (at most nine decimals).
func (m *Money) UnmarshalJSON(b []byte) error {
	s := string(b)
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if len(frac) > 9 || whole == "" || strings.ContainsAny(s, "eE+") {
		return fmt.Errorf("money %q: want dollars with at most 9 decimals", s)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > math.MaxInt64/1_000_000_000-1 {
		return fmt.Errorf("money %q: want dollars with at most 9 decimals", s)
	}
	var f int64
	if frac != "" {
		if f, err = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil || f < 0 {
			return fmt.Errorf("money %q: want dollars with at most 9 decimals", s)
		}
	}
	v := w*1_000_000_000 + f
	if neg {
		v = -v
	}
	*m = Money(v)
	return nil
}

// Rate is a price per million tokens, in micro-dollars per million tokens
// (so that "$0.075 per 1M tokens" is exactly 75000).
type Rate int64

// ParseRate parses a decimal dollar amount with at most six decimals, as
// written in models.json ("0.075", "2.5", "10").
func ParseRate(s string) (Rate, error) {
	if s == "" || strings.ContainsAny(s, "eE+") {
		return 0, errors.New("must be a plain decimal number of dollars")
	}
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if len(frac) > 6 {
		return 0, errors.New("must have at most 6 decimals")
	}
	if whole == "" {
		whole = "0"
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > 1_000_000 {
		return 0, errors.New("must be a plain decimal number of dollars below 1,000,000")
	}
	var f int64
	if frac != "" {
		if f, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64); err != nil || strings.HasPrefix(frac, "-") {
			return 0, errors.New("must be a plain decimal number of dollars")
		}
	}
	r := Rate(w*1_000_000 + f)
	if neg {
		r = -r
	}
	return r, nil
}

// String formats r as dollars, trimming trailing zeros ("0.075").
func (r Rate) String() string {
	s := fmt.Sprintf("%d.%06d", int64(r)/1_000_000, int64(r)%1_000_000)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// MarshalJSON writes r as a JSON number of dollars.
func (r Rate) MarshalJSON() ([]byte, error) { return []byte(r.String()), nil }

// Of returns the cost of n tokens at r: n × r micro-dollars per million
// tokens is n × r / 1000 nano-dollars, rounded half up. It saturates rather
// than wraps on absurd inputs.
func (r Rate) Of(n int64) Money {
	if n <= 0 || r <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(n), uint64(r))
	if hi != 0 {
		return Money(math.MaxInt64)
	}
	lo, carry := bits.Add64(lo, 500, 0)
	if carry != 0 {
		return Money(math.MaxInt64)
	}
	q := lo / 1000
	if q > math.MaxInt64 {
		return Money(math.MaxInt64)
	}
	return Money(q)
}

// Price is what a deployment costs per million tokens.
type Price struct {
	Input       Rate `json:"input_per_1m"`
	CachedInput Rate `json:"cached_input_per_1m"`
	Output      Rate `json:"output_per_1m"`
}

// Cost estimates the price of one unit of usage. Cached tokens are part of
// the prompt tokens (as Azure OpenAI reports them) and are charged at the
// cached rate instead; reasoning tokens are part of the completion tokens
// and charged as output.
func (p Price) Cost(prompt, cached, completion int64) Money {
	cached = min(max(cached, 0), max(prompt, 0))
	return sat(sat(p.Input.Of(prompt-cached), p.CachedInput.Of(cached)), p.Output.Of(completion))
}

// sat adds two non-negative amounts, saturating at the maximum.
func sat(a, b Money) Money {
	if a > math.MaxInt64-b {
		return Money(math.MaxInt64)
	}
	return a + b
}
