// Package id makes resource identifiers: a short type prefix and 128 random
// bits in lowercase base32. A web call's id is the only credential its
// gateway URL carries, so ids must be unguessable, not merely unique.
package id

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
	"time"
)

var enc = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Prefixes of each resource type, so an id says what it names.
const (
	Org = "org"
	Key = "key"
	// PublicKey is a publishable key (pk_…), the key a browser may hold.
	PublicKey = "pkey"
	Assistant = "asst"
	Call      = "call"
	Purchase  = "pn"
	// Connection is a phone connection (a SIP trunk) of an organization.
	Connection = "conn"
	Contact    = "ct"
	Schedule   = "sch"
	Attempt    = "att"
	Webhook    = "wh"
	Message    = "msg" // a webhook message (the outbox row every delivery attempt of an event shares)
	Delivery   = "dlv" // one delivery attempt of a webhook message
	Request    = "req"
)

// New returns prefix + "_" + 26 characters holding 128 random bits.
func New(prefix string) string {
	return prefix + "_" + Random(16)
}

// Random returns n random bytes in lowercase base32.
func Random(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("id: crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	return enc.EncodeToString(b)
}

// Valid reports whether s looks like an id of the given prefix: every id
// the service has issued is prefix + "_" + 26 lowercase base32 characters.
// Handlers use it to answer 404 for anything else without a database round
// trip (PostgreSQL refuses NUL and invalid UTF-8 in a query; SQLite would
// look such ids up).
func Valid(prefix, s string) bool {
	rest, ok := strings.CutPrefix(s, prefix+"_")
	return ok && len(rest) == 26 && Base32(rest)
}

// Base32 reports whether s is made only of the characters Random uses.
func Base32(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// Now is the service's clock: UTC, truncated to the millisecond the store
// keeps, so a resource reads back exactly as it was returned on creation.
func Now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }
