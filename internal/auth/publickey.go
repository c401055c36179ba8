package auth

import (
	"crypto/subtle"
	"slices"
	"strings"
	"time"

	"switchboard/internal/id"
)

// PublicKeyPrefix starts every publishable key. A publishable key is the
// key a web page may hold: it can do exactly one thing, start a web call
// (POST /v1/calls/initiate) for one of its assistants from one of its
// origins. Like a secret key it is "pk_" + a public lookup part + "_" + a
// secret, and only its SHA-256 is stored.
const PublicKeyPrefix = "pk_"

// Bounds of a publishable key's lists.
const (
	MaxPublicKeyAssistants = 50
	MaxPublicKeyOrigins    = 50
)

// publicShownPrefix is how many characters of a publishable key its
// listings show (KeyPrefix): "pk_" and the first 8 characters of the
// lookup part, which is public anyway (it is the key's id).
const publicShownPrefix = len(PublicKeyPrefix) + 8

// PublicKey is a stored publishable key. The key string is never stored.
type PublicKey struct {
	ID           string // "pkey_" + lookup part; shown in listings, used to revoke
	OrgID        string
	Name         string
	AssistantIDs []string
	// Origins are normalized web origins (NormalizeOrigin); a request's
	// Origin must be one of them.
	Origins   []string
	Hash      []byte // SHA-256 of the whole key string
	KeyPrefix string // the first characters of the key string, to recognize it
	CreatedAt time.Time
	RevokedAt time.Time
}

// NewPublicKey makes a publishable key; it returns the record to store and
// the key string to show once. origins must already be normalized.
func NewPublicKey(orgID, name string, assistantIDs, origins []string, now time.Time) (PublicKey, string) {
	kid := id.New(id.PublicKey) // its 128 random bits are the lookup part
	lookup := strings.TrimPrefix(kid, id.PublicKey+"_")
	secret := id.Random(20) // 160 bits of secret
	full := PublicKeyPrefix + lookup + "_" + secret
	return PublicKey{
		ID:           kid,
		OrgID:        orgID,
		Name:         name,
		AssistantIDs: slices.Clone(assistantIDs),
		Origins:      slices.Clone(origins),
		Hash:         Hash(full),
		KeyPrefix:    full[:publicShownPrefix],
		CreatedAt:    now.UTC(),
	}, full
}

// IsPublicKey reports whether presented claims to be a publishable key
// (by its prefix alone; PublicLookupID checks its shape).
func IsPublicKey(presented string) bool { return strings.HasPrefix(presented, PublicKeyPrefix) }

// PublicLookupID extracts the key id from a presented publishable key, or
// "" when the string is not shaped like one (so it is refused before any
// query).
func PublicLookupID(key string) string {
	rest, ok := strings.CutPrefix(key, PublicKeyPrefix)
	if !ok {
		return ""
	}
	lookup, secret, ok := strings.Cut(rest, "_")
	if !ok || len(secret) != 32 || !id.Base32(secret) || !id.Valid(id.PublicKey, id.PublicKey+"_"+lookup) {
		return ""
	}
	return id.PublicKey + "_" + lookup
}

// Matches reports in constant time whether presented is the key k was made from.
func (k *PublicKey) Matches(presented string) bool {
	return subtle.ConstantTimeCompare(Hash(presented), k.Hash) == 1
}

// Revoked reports whether the key was revoked.
func (k *PublicKey) Revoked() bool { return !k.RevokedAt.IsZero() }

// AllowsOrigin reports whether origin (a request's Origin header, as sent)
// is one of the key's origins. Browsers send origins already in the
// normalized form; one that is not (or "null") matches nothing.
func (k *PublicKey) AllowsOrigin(origin string) bool {
	return origin != "" && slices.Contains(k.Origins, origin)
}

// AllowsAssistant reports whether the key may start calls for the assistant.
func (k *PublicKey) AllowsAssistant(assistantID string) bool {
	return slices.Contains(k.AssistantIDs, assistantID)
}
