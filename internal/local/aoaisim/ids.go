package aoaisim

import (
	"fmt"
	"math/rand/v2"
	"net/http"
)

const idAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// newID returns prefix followed by n random alphanumerics. IDs need to be
// unique, not unpredictable, so the runtime's fast generator is enough.
func newID(prefix string, n int) string {
	b := make([]byte, len(prefix)+n)
	copy(b, prefix)
	for i := len(prefix); i < len(b); i++ {
		b[i] = idAlphabet[rand.IntN(len(idAlphabet))]
	}
	return string(b)
}

// newUUID returns a random version-4 UUID string.
func newUUID() string {
	hi, lo := rand.Uint64(), rand.Uint64()
	hi = hi&^0xf000 | 0x4000
	lo = lo&^(0xc<<60) | 0x8<<60
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", hi>>32, (hi>>16)&0xffff, hi&0xffff, lo>>48, lo&0xffffffffffff)
}

// newFileID returns an Azure-style file ID: "file-" and 32 hex digits.
func newFileID() string {
	return fmt.Sprintf("file-%016x%016x", rand.Uint64(), rand.Uint64())
}

// newBatchID returns an Azure-style batch ID: "batch_" and a UUID.
func newBatchID() string { return "batch_" + newUUID() }

// setRequestIDs sets the request-ID headers Azure sends on every reply.
func setRequestIDs(h http.Header) {
	id := newUUID()
	h.Set("apim-request-id", id)
	h.Set("x-request-id", id)
	h.Set("x-ms-region", "Simulated")
}
