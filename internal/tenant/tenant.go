package tenant

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/offpath/offpath/internal/catalog"
)

// Errors. Adapters translate their own errors into these; callers test with
// errors.Is.
var (
	// ErrNotFound: no such tenant or credential.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the tenant (or an application id) exists already, or a
	// concurrent change won.
	ErrConflict = errors.New("conflict")
	// ErrSuspended: the tenant exists but may not call offpath.
	ErrSuspended = errors.New("tenant is suspended")
	// ErrInvalid: a value breaks the rules below; the message names the field.
	ErrInvalid = errors.New("invalid")
)

// Limits that keep one tenant's records (and their index rows, written in
// one Table Storage transaction of at most 100 entities) small.
const (
	MaxKeys           = 10
	MaxAppIDs         = 20
	MaxAliases        = 50
	MaxDisplayNameLen = 200
)

// State is whether a tenant may call offpath.
type State string

// The states. A suspended tenant's credentials still authenticate (so the
// caller learns it is suspended, with 403, rather than being told its key is
// wrong), but nothing is admitted.
const (
	Active    State = "active"
	Suspended State = "suspended"
)

// ParseState returns the State named s.
func ParseState(s string) (State, error) {
	switch st := State(s); st {
	case Active, Suspended:
		return st, nil
	}
	return "", fmt.Errorf("%w: state %q: must be %q or %q", ErrInvalid, clip(s), Active, Suspended)
}

// Tenant is a team or application that spends tokens through offpath.
type Tenant struct {
	// ID is the tenant's permanent name, see ValidateID.
	ID string
	// DisplayName is for people; free text without control characters.
	DisplayName string
	// Aliases are the model aliases the tenant may use (see package catalog);
	// empty means none.
	Aliases []string
	// MonthlyTokenBudget caps prompt plus completion tokens per calendar
	// month (UTC); zero means no budget.
	MonthlyTokenBudget int64
	// DataZone, if set, is the data zone the tenant's batch work must stay
	// in ("eu", "us"): only batch deployments of that zone serve it (see
	// package catalog). Empty: any deployment.
	DataZone string
	State    State
	// AppIDs are Entra ID application (client) ids whose tokens authenticate
	// as this tenant: lowercase GUIDs, each mapped to one tenant only.
	AppIDs []string
	// Keys are the tenant's API keys, current and overlapping.
	Keys    []Key
	Created time.Time
	Updated time.Time
}

// New returns an active tenant created at now. Call Validate before storing
// it.
func New(id, displayName string, now time.Time) Tenant {
	now = now.UTC()
	return Tenant{ID: id, DisplayName: displayName, State: Active, Created: now, Updated: now}
}

// Allows reports whether the tenant may use the model alias.
func (t *Tenant) Allows(alias string) bool { return slices.Contains(t.Aliases, alias) }

// Validate checks every field and reports every problem, each naming its
// field.
func (t *Tenant) Validate() error {
	var errs []error
	if err := ValidateID(t.ID); err != nil {
		errs = append(errs, err)
	}
	if n := utf8.RuneCountInString(t.DisplayName); n > MaxDisplayNameLen || !utf8.ValidString(t.DisplayName) {
		errs = append(errs, fmt.Errorf("%w: display_name: must be valid UTF-8 of at most %d characters", ErrInvalid, MaxDisplayNameLen))
	} else if strings.ContainsFunc(t.DisplayName, isControl) {
		errs = append(errs, fmt.Errorf("%w: display_name: must not contain control characters", ErrInvalid))
	}
	if len(t.Aliases) > MaxAliases {
		errs = append(errs, fmt.Errorf("%w: aliases: at most %d", ErrInvalid, MaxAliases))
	}
	for i, a := range t.Aliases {
		if err := validName(a); err != nil {
			errs = append(errs, fmt.Errorf("%w: aliases[%d] %q: %v", ErrInvalid, i, clip(a), err))
		} else if slices.Index(t.Aliases, a) != i {
			errs = append(errs, fmt.Errorf("%w: aliases[%d] %q: listed twice", ErrInvalid, i, a))
		}
	}
	if t.MonthlyTokenBudget < 0 {
		errs = append(errs, fmt.Errorf("%w: monthly_token_budget: must be ≥ 0 (0: no budget)", ErrInvalid))
	}
	if z := t.DataZone; z != "" && !catalog.ValidDataZone(z) {
		errs = append(errs, fmt.Errorf("%w: data_zone %q: must be 2 to 16 lowercase letters (e.g. eu, us), or empty", ErrInvalid, clip(z)))
	}
	if _, err := ParseState(string(t.State)); err != nil {
		errs = append(errs, err)
	}
	if len(t.AppIDs) > MaxAppIDs {
		errs = append(errs, fmt.Errorf("%w: app_ids: at most %d", ErrInvalid, MaxAppIDs))
	}
	for i, a := range t.AppIDs {
		if !IsAppID(a) {
			errs = append(errs, fmt.Errorf("%w: app_ids[%d] %q: must be a lowercase GUID", ErrInvalid, i, clip(a)))
		} else if slices.Index(t.AppIDs, a) != i {
			errs = append(errs, fmt.Errorf("%w: app_ids[%d] %q: listed twice", ErrInvalid, i, a))
		}
	}
	if t.Created.IsZero() || t.Updated.IsZero() {
		errs = append(errs, fmt.Errorf("%w: created, updated: are required (use New)", ErrInvalid))
	}
	if len(t.Keys) > MaxKeys {
		errs = append(errs, fmt.Errorf("%w: keys: at most %d (let old keys expire or revoke them)", ErrInvalid, MaxKeys))
	}
	for i, k := range t.Keys {
		if !isKeyID(k.ID) || len(k.Hash) != 32 || len(k.Salt) != saltBytes || k.Created.IsZero() {
			errs = append(errs, fmt.Errorf("%w: keys[%d]: malformed (make keys with NewKey)", ErrInvalid, i))
		}
	}
	return errors.Join(errs...)
}

// ValidateID checks a tenant id: 2 to 63 characters, lowercase ASCII
// letters, digits and hyphens, starting with a letter. That keeps every
// character Table Storage forbids in keys (/ \ # ? and control characters)
// out, as well as quotes, spaces, separators and anything that would need
// escaping in a URL, an OData filter or a CSV cell.
func ValidateID(id string) error {
	if err := validName(id); err != nil {
		return fmt.Errorf("%w: tenant id %q: %v", ErrInvalid, clip(id), err)
	}
	return nil
}

// validName is the rule for tenant ids and model aliases.
func validName(s string) error {
	if len(s) < 2 || len(s) > 63 {
		return errors.New("must be 2 to 63 characters")
	}
	if s[0] < 'a' || s[0] > 'z' {
		return errors.New("must start with a lowercase letter")
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return errors.New("may contain only lowercase letters, digits and hyphens")
		}
	}
	return nil
}

// ValidName reports whether s is acceptable as a tenant id or model alias.
func ValidName(s string) bool { return validName(s) == nil }

// IsAppID reports whether s is a lowercase GUID, the form of an Entra ID
// application (client) id.
func IsAppID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) }

// clip keeps hostile input short when an error message quotes it.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
