// Package secret seals the few secrets the service must keep in plain text
// to use them (a SIP trunk's digest password cannot be hashed): AES-256-GCM
// under the server's secret key, with a random nonce and a version byte in
// front of every sealed value so that a later key can be added without
// making the stored values unreadable.
//
// The key is 32 random bytes. It lives outside the database (a file next to
// the SQLite database, or given to every PostgreSQL node), so that a copy of
// the database alone does not reveal the secrets.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the length of a key in bytes (AES-256).
const KeySize = 32

// version1 is the first byte of every value sealed under the one key a
// Sealer has today.
const version1 = 1

// ErrOpen is wrapped by Open's error when a value does not open: it was
// sealed under another key or for another context, or it was altered.
var ErrOpen = errors.New("secret: the value does not open with this key")

// Sealer seals and opens values under one key. It is safe for concurrent use.
type Sealer struct {
	aead cipher.AEAD
	// macKey keys Digest: derived from the key, never the key itself.
	macKey []byte
}

// New returns a Sealer for a 32-byte key.
func New(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret: the key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	derive := hmac.New(sha256.New, key)
	derive.Write([]byte("switchboard digest v1"))
	return &Sealer{aead: aead, macKey: derive.Sum(nil)}, nil
}

// Digest is a keyed hash of data (HMAC-SHA256 under a key derived from the
// secret key): the same data always gives the same digest, and without the
// key a digest cannot be checked against guesses. It is what to store to
// recognize a request that held a secret (an Idempotency-Key's request),
// where a plain hash would let a copy of the database test passwords.
func (s *Sealer) Digest(data []byte) []byte {
	m := hmac.New(sha256.New, s.macKey)
	m.Write(data)
	return m.Sum(nil)
}

// Seal encrypts plain for the context aad (say, the id of the row that
// keeps it, so that a sealed value copied to another row does not open):
// version byte, 12-byte random nonce, ciphertext and tag.
func (s *Sealer) Seal(plain, aad []byte) []byte {
	out := make([]byte, 1+s.aead.NonceSize(), 1+s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	out[0] = version1
	if _, err := rand.Read(out[1:]); err != nil {
		panic("secret: crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	return s.aead.Seal(out, out[1:], plain, aad)
}

// Open decrypts a value Seal returned for the same aad.
func (s *Sealer) Open(sealed, aad []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < 1+n+s.aead.Overhead() {
		return nil, fmt.Errorf("%w: %d bytes is too short", ErrOpen, len(sealed))
	}
	if sealed[0] != version1 {
		return nil, fmt.Errorf("%w: unknown key version %d", ErrOpen, sealed[0])
	}
	plain, err := s.aead.Open(nil, sealed[1:1+n], sealed[1+n:], aad)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}

// NewKey returns a new random key.
func NewKey() []byte {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		panic("secret: crypto/rand failed: " + err.Error())
	}
	return k
}

// ParseKey decodes a key written in standard base64 (what
// `openssl rand -base64 32` prints); surrounding white space is ignored.
func ParseKey(s string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("secret: the key is not base64: %w", err)
	}
	if len(k) != KeySize {
		return nil, fmt.Errorf("secret: the key must be %d bytes (base64 of %d random bytes, e.g. `openssl rand -base64 32`), got %d", KeySize, KeySize, len(k))
	}
	return k, nil
}

// EncodeKey is the text form of a key that ParseKey reads.
func EncodeKey(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

// LoadKeyFile reads the key file at path (the base64 text ParseKey reads).
// When the file does not exist and create is set, it writes a new random
// key there, readable by its owner only (0600), and reports created. The
// new file appears whole or not at all (written aside, then linked), so a
// process starting at the same moment reads either no file or the key.
func LoadKeyFile(path string, create bool) (key []byte, created bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && create {
		key = NewKey()
		if err := writeNew(path, EncodeKey(key)+"\n"); errors.Is(err, fs.ErrExist) {
			return LoadKeyFile(path, false) // another process wrote it first
		} else if err != nil {
			return nil, false, fmt.Errorf("secret: create key file %s: %w", path, err)
		}
		return key, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("secret: read key file: %w", err)
	}
	key, err = ParseKey(string(b))
	if err != nil {
		return nil, false, fmt.Errorf("key file %s: %w", path, err)
	}
	return key, false, nil
}

// writeNew writes text to a new file at path, mode 0600; an error wrapping
// fs.ErrExist when path exists.
func writeNew(path, text string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(text)
	if err := tmp.Chmod(0o600); werr == nil {
		werr = err
	}
	if err := tmp.Sync(); werr == nil {
		werr = err
	}
	if err := tmp.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		return werr
	}
	return os.Link(tmp.Name(), path)
}
