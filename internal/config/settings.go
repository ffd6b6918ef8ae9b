package config

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"
)

// httpsURL says whether s is an absolute https URL, or http on loopback.
func httpsURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Host != "" && (u.Scheme == "https" || u.Scheme == "http" && isLoopback(u.Hostname()))
}

// urlPath is s's path ("" when s is not a URL).
func urlPath(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Path
}

func isLoopback(host string) bool { return host == "127.0.0.1" || host == "localhost" || host == "::1" }

// positiveDurations reads each named setting that is set into its
// destination, refusing anything but a positive duration.
func positiveDurations(getenv func(string) string, dst map[string]*time.Duration) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(dst)) {
		if s := getenv(name); s != "" {
			if v, err := time.ParseDuration(s); err != nil || v <= 0 {
				errs = append(errs, fmt.Errorf("%s %q: must be a positive duration", name, s))
			} else {
				*dst[name] = v
			}
		}
	}
	return errs
}

// duration reads a duration setting in [lo, hi]; zero when unset.
func duration(getenv func(string) string, name string, lo, hi time.Duration) (time.Duration, error) {
	s := getenv(name)
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < lo || d > hi {
		return 0, fmt.Errorf("%s %q: must be a duration from %v to %v", name, s, lo, hi)
	}
	return d, nil
}

func list(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
