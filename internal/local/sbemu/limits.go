package sbemu

import (
	"fmt"
	"slices"
	"unicode/utf8"
)

// Service Bus Standard limits.
const (
	// MaxMessageSize bounds body plus all properties.
	MaxMessageSize = 256 * 1024
	// MaxHeaderSize bounds all properties, system and application.
	MaxHeaderSize = 64 * 1024
	// MaxPropertySize bounds one application property, name plus value.
	MaxPropertySize = 32 * 1024
	// MaxMessageIDLength bounds MessageID, in characters.
	MaxMessageIDLength = 128

	// systemPropertiesSize approximates the system properties the broker
	// adds (sequence number, enqueued time, lock token, delivery count…).
	systemPropertiesSize = 64
	// maxDescription caps DeadLetterErrorDescription, in bytes.
	maxDescription = 4096
)

// check validates m, whose MessageID is already set, against Service Bus
// Standard's rules for the queue path, and returns its size.
func check(path string, m *Message) (int, error) {
	if n := utf8.RuneCountInString(m.MessageID); n > MaxMessageIDLength {
		return 0, fmt.Errorf("%w: message to %q has a MessageId of %d characters, over Service Bus' %d",
			ErrInvalidMessage, path, n, MaxMessageIDLength)
	}
	for _, s := range []string{m.MessageID, m.CorrelationID, m.ContentType, m.Subject} {
		if !utf8.ValidString(s) {
			return 0, fmt.Errorf("%w: message to %q has a property that is not valid UTF-8", ErrInvalidMessage, path)
		}
	}
	header := systemPropertiesSize + len(m.MessageID) + len(m.CorrelationID) + len(m.ContentType) + len(m.Subject)
	keys := make([]string, 0, len(m.ApplicationProperties))
	for k := range m.ApplicationProperties {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same error for the same message
	for _, k := range keys {
		size, err := checkProperty(k, m.ApplicationProperties[k])
		if err != nil {
			return 0, fmt.Errorf("message to %q: %w", path, err)
		}
		if s, ok := m.ApplicationProperties[k].(string); (ok && !utf8.ValidString(s)) || !utf8.ValidString(k) {
			return 0, fmt.Errorf("%w: message to %q: application property %q is not valid UTF-8", ErrInvalidMessage, path, k)
		}
		if size > MaxPropertySize {
			return 0, fmt.Errorf("%w: message to %q has application property %q of %s, over Service Bus Standard's %s limit per property",
				ErrTooLarge, path, k, sizeOf(size), sizeOf(MaxPropertySize))
		}
		header += size
	}
	if header > MaxHeaderSize {
		return 0, fmt.Errorf("%w: message to %q has %s of properties, over Service Bus Standard's %s limit for all properties",
			ErrTooLarge, path, sizeOf(header), sizeOf(MaxHeaderSize))
	}
	total := len(m.Body) + header
	if total > MaxMessageSize {
		return 0, fmt.Errorf("%w: message to %q is %s (body %s, properties %s), over Service Bus Standard's %s limit",
			ErrTooLarge, path, sizeOf(total), sizeOf(len(m.Body)), sizeOf(header), sizeOf(MaxMessageSize))
	}
	return total, nil
}

// sizeOf formats a byte count: "256 KiB", "300.5 KiB", "812 bytes".
func sizeOf(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	case n%1024 == 0:
		return fmt.Sprintf("%d KiB", n/1024)
	default:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/1024, n)
	}
}

// truncate cuts s after at most n bytes, on a rune boundary, and marks the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
