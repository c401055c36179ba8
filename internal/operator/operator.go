// Package operator is the people who sign in to the dashboard (/ui): an
// operator belongs to one organization and sees only its data. It holds
// their validation (emails, passwords), password hashing (bcrypt) and the
// session record; the dashboard (internal/ui) decides the session policy,
// the store keeps both.
package operator

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"switchboard/internal/apperr"
)

// IDPrefix starts every operator id (id.New(IDPrefix)).
const IDPrefix = "op"

// Password bounds. bcrypt reads at most 72 bytes; a longer password would
// be cut silently by other implementations and is refused by this one, so
// the limit is said up front.
const (
	MinPasswordLen   = 12 // characters
	MaxPasswordBytes = 72
)

// DefaultCost is the bcrypt cost of new hashes: about a quarter of a second
// on a server core, which is what slows an offline guess, and what a
// sign-in costs (the refusal budget bounds how often one may be tried).
const DefaultCost = 12

// Operator is a dashboard account.
type Operator struct {
	ID    string
	OrgID string
	// Email is normalized (NormalizeEmail) and unique across organizations:
	// it is how a sign-in finds the account and so its organization.
	Email        string
	Name         string
	PasswordHash []byte
	CreatedAt    time.Time
}

// Session is a signed-in browser. The token itself lives only in the
// browser's cookie; the store keeps its SHA-256 (TokenHash), so a copy of
// the database signs no one in.
type Session struct {
	// TokenHash is HashToken of the cookie's token, hex.
	TokenHash  string
	OperatorID string
	OrgID      string
	CreatedAt  time.Time
	// IdleUntil is when the session ends unless used again (each use moves
	// it, never past ExpiresAt); ExpiresAt is when it ends regardless.
	IdleUntil time.Time
	ExpiresAt time.Time
}

// Live reports whether the session is usable at now.
func (s Session) Live(now time.Time) bool {
	return now.Before(s.IdleUntil) && now.Before(s.ExpiresAt)
}

// Ends is when the session ends if it is not used again: the earlier of
// IdleUntil and ExpiresAt.
func (s Session) Ends() time.Time {
	if s.ExpiresAt.Before(s.IdleUntil) {
		return s.ExpiresAt
	}
	return s.IdleUntil
}

// HashToken is the stored form of a session token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NormalizeEmail trims and lower-cases an address and checks that it is a
// bare address (no display name), so that one mailbox is one account
// whatever case it is typed in.
func NormalizeEmail(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return "", apperr.New(apperr.Invalid, "email is required")
	}
	if len(s) > 254 {
		return "", apperr.New(apperr.Invalid, "email must be at most 254 characters")
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return "", apperr.New(apperr.Invalid, "email %q is not an address such as ops@example.com", s)
	}
	return s, nil
}

// CheckPassword says what is wrong with a new password, if anything.
func CheckPassword(pw string) error {
	if !utf8.ValidString(pw) {
		return apperr.New(apperr.Invalid, "password must be valid UTF-8 text")
	}
	if n := utf8.RuneCountInString(pw); n < MinPasswordLen {
		return apperr.New(apperr.Invalid, "password must be at least %d characters (got %d)", MinPasswordLen, n)
	}
	if len(pw) > MaxPasswordBytes {
		return apperr.New(apperr.Invalid, "password must be at most %d bytes (bcrypt reads no more)", MaxPasswordBytes)
	}
	return nil
}

// HashPassword checks pw (CheckPassword) and hashes it with bcrypt at cost
// (DefaultCost when 0).
func HashPassword(pw string, cost int) ([]byte, error) {
	if err := CheckPassword(pw); err != nil {
		return nil, err
	}
	if cost == 0 {
		cost = DefaultCost
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), cost)
	if err != nil {
		return nil, fmt.Errorf("operator: hash password: %w", err)
	}
	return h, nil
}

// dummyHash is a bcrypt hash, at DefaultCost, of 24 random bytes that were
// thrown away: no password matches it. It is a constant, not made at
// start-up, so that the first unknown email costs one bcrypt like every
// other sign-in (a hash made on first use would cost that one sign-in two).
const dummyHash = "$2a$12$hugCqCOf8FbdpGDW0Zw0Y.KwXH3cJXJuyjKPAwZIS3F9/prEqCEYC"

func dummy() []byte { return []byte(dummyHash) }

// Verify reports whether pw matches hash. With a nil hash (no such
// operator) it still runs bcrypt against a dummy hash of the default cost
// and reports false, so a sign-in takes as long whether the email is known
// or not.
func Verify(hash []byte, pw string) bool {
	if hash == nil {
		_ = bcrypt.CompareHashAndPassword(dummy(), []byte(pw))
		return false
	}
	err := bcrypt.CompareHashAndPassword(hash, []byte(pw))
	return err == nil
}
