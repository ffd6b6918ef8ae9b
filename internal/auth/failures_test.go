package auth

import (
	"net/http/httptest"
	"testing"
)

func TestSource(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"peer only", "192.0.2.1:4242", nil, "192.0.2.1"},
		{"front end's entry, with a port", "127.0.0.1:1", []string{"203.0.113.9:51234"}, "203.0.113.9"},
		{"forged entries before it", "127.0.0.1:1", []string{"10.0.0.1, 1.2.3.4, 203.0.113.9"}, "203.0.113.9"},
		{"several headers: the last", "127.0.0.1:1", []string{"1.2.3.4", "203.0.113.9"}, "203.0.113.9"},
		{"IPv6 by its /64", "127.0.0.1:1", []string{"[2001:db8:1:2:aaaa::1]:443"}, "2001:db8:1:2::/64"},
		{"IPv6 neighbour in the /64", "127.0.0.1:1", []string{"2001:db8:1:2:bbbb::7"}, "2001:db8:1:2::/64"},
		{"IPv4-mapped IPv6", "[::ffff:192.0.2.1]:80", nil, "192.0.2.1"},
		{"not an address", "127.0.0.1:1", []string{"unknown"}, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.remote
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := source(r); got != tt.want {
				t.Errorf("source() = %q, want %q", got, tt.want)
			}
		})
	}
}
