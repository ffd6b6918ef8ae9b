package webhook

import (
	"bytes"
	"testing"
)

// TestSign_SpecificationVector: the signature of the Standard Webhooks
// specification's example message.
func TestSign_SpecificationVector(t *testing.T) {
	got, err := Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
	for _, bad := range []string{"", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_!!"} {
		if _, err := Sign(bad, "m", 1, nil); err == nil {
			t.Errorf("Sign with secret %q: no error", bad)
		}
	}
	s, err := NewSecret(bytes.NewReader(make([]byte, 24)))
	if err != nil || s != "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" {
		t.Errorf("NewSecret = %q, %v", s, err)
	}
}
