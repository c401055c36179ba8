// Package auth is organizations, API keys and scopes. A key is
// "sbk_" + a public lookup part + "_" + a secret; only its SHA-256 is stored,
// and it is compared in constant time after a lookup by the public part.
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"slices"
	"strings"
	"time"

	"switchboard/internal/id"
)

// Scopes a key can hold. Each operation needs exactly one.
const (
	CallsRead       = "calls:read"
	CallsWrite      = "calls:write"
	PhoneRead       = "phone:read"
	PhoneWrite      = "phone:write"
	AssistantsRead  = "assistants:read"
	AssistantsWrite = "assistants:write"
	WebhooksRead    = "webhooks:read"
	WebhooksWrite   = "webhooks:write"
	// KeysRead and KeysWrite manage publishable keys (publickey.go).
	KeysRead  = "keys:read"
	KeysWrite = "keys:write"
)

// AllScopes lists every scope, in documentation order.
var AllScopes = []string{CallsRead, CallsWrite, PhoneRead, PhoneWrite, AssistantsRead, AssistantsWrite, WebhooksRead, WebhooksWrite, KeysRead, KeysWrite}

// ValidScope reports whether s names a scope.
func ValidScope(s string) bool { return slices.Contains(AllScopes, s) }

// ParseScopes splits a comma-separated list and rejects unknown or empty entries.
func ParseScopes(list string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !ValidScope(s) {
			return nil, fmt.Errorf("unknown scope %q (known: %s)", s, strings.Join(AllScopes, ","))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scopes given (known: %s)", strings.Join(AllScopes, ","))
	}
	return out, nil
}

// Org is a tenant: every resource belongs to exactly one.
type Org struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// Key is a stored API key. The secret itself is never stored.
type Key struct {
	ID         string // "key_" + lookup part; shown in listings, used to revoke
	OrgID      string
	Name       string
	Scopes     []string
	Hash       []byte // SHA-256 of the whole key string
	Last4      string
	CreatedAt  time.Time
	LastUsedAt time.Time
	RevokedAt  time.Time
}

// Has reports whether the key holds scope.
func (k *Key) Has(scope string) bool { return slices.Contains(k.Scopes, scope) }

// Revoked reports whether the key was revoked.
func (k *Key) Revoked() bool { return !k.RevokedAt.IsZero() }

// KeyPrefix starts every key, so scanners and people can recognize one.
const KeyPrefix = "sbk_"

// NewKey makes a key for org with scopes; it returns the record to store and
// the secret string to show once.
func NewKey(orgID, name string, scopes []string, now time.Time) (Key, string) {
	lookup := id.Random(10) // 80 bits, only for lookup
	secret := id.Random(20) // 160 bits of secret
	full := KeyPrefix + lookup + "_" + secret
	return Key{
		ID:        id.Key + "_" + lookup,
		OrgID:     orgID,
		Name:      name,
		Scopes:    scopes,
		Hash:      Hash(full),
		Last4:     full[len(full)-4:],
		CreatedAt: now.UTC(),
	}, full
}

// Hash is the stored form of a key string.
func Hash(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// LookupID extracts the key id from a presented key string, or "" when the
// string is not shaped like a key.
func LookupID(key string) string {
	rest, ok := strings.CutPrefix(key, KeyPrefix)
	if !ok {
		return ""
	}
	lookup, secret, ok := strings.Cut(rest, "_")
	if !ok || len(lookup) != 16 || len(secret) != 32 || !id.Base32(lookup) {
		return "" // not made by NewKey: no lookup (PostgreSQL refuses NUL and invalid UTF-8 in one)
	}
	return id.Key + "_" + lookup
}

// Matches reports in constant time whether presented is the key k was made from.
func (k *Key) Matches(presented string) bool {
	return subtle.ConstantTimeCompare(Hash(presented), k.Hash) == 1
}
