package secret

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func mustSealer(t *testing.T, key []byte) *Sealer {
	t.Helper()
	s, err := New(key)
	if err != nil {
		t.Fatalf("New(%d-byte key): %v", len(key), err)
	}
	return s
}

func TestSealOpen(t *testing.T) {
	s := mustSealer(t, NewKey())
	plain := []byte("hunter2 trunk password")
	aad := []byte("conn_abc")
	a, b := s.Seal(plain, aad), s.Seal(plain, aad)
	if bytes.Equal(a, b) {
		t.Errorf("Seal twice gave the same bytes; want a fresh nonce each time")
	}
	if bytes.Contains(a, plain) {
		t.Errorf("Seal(%q) = %x holds the plain text", plain, a)
	}
	if a[0] != version1 {
		t.Errorf("Seal: first byte = %d, want version %d", a[0], version1)
	}
	for _, sealed := range [][]byte{a, b} {
		got, err := s.Open(sealed, aad)
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("Open(Seal(%q)) = %q, %v; want the plain text", plain, got, err)
		}
	}
	empty := s.Seal(nil, aad)
	if got, err := s.Open(empty, aad); err != nil || len(got) != 0 {
		t.Errorf("Open(Seal(empty)) = %q, %v; want empty, nil", got, err)
	}
}

func TestOpenRefuses(t *testing.T) {
	key := NewKey()
	s := mustSealer(t, key)
	sealed := s.Seal([]byte("secret"), []byte("conn_a"))
	flipped := bytes.Clone(sealed)
	flipped[len(flipped)-1] ^= 1
	version := bytes.Clone(sealed)
	version[0] = 2
	for name, tc := range map[string]struct {
		s      *Sealer
		sealed []byte
		aad    string
	}{
		"another key":       {mustSealer(t, NewKey()), sealed, "conn_a"},
		"another context":   {s, sealed, "conn_b"},
		"altered":           {s, flipped, "conn_a"},
		"unknown version":   {s, version, "conn_a"},
		"truncated":         {s, sealed[:10], "conn_a"},
		"empty":             {s, nil, "conn_a"},
		"version byte only": {s, []byte{version1}, "conn_a"},
	} {
		got, err := tc.s.Open(tc.sealed, []byte(tc.aad))
		if !errors.Is(err, ErrOpen) {
			t.Errorf("Open(%s) = %q, %v; want an error wrapping ErrOpen", name, got, err)
		}
	}
}

func TestNewKeySize(t *testing.T) {
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := New(make([]byte, n)); err == nil {
			t.Errorf("New(%d-byte key) = nil error; want an error naming the size", n)
		}
	}
}

func TestParseKey(t *testing.T) {
	k := NewKey()
	got, err := ParseKey("  " + EncodeKey(k) + "\n")
	if err != nil || !bytes.Equal(got, k) {
		t.Errorf("ParseKey(EncodeKey(k)) = %x, %v; want %x", got, err, k)
	}
	for _, bad := range []string{"", "not base64!", EncodeKey(make([]byte, 16)), EncodeKey(make([]byte, 33))} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) = nil error; want an error", bad)
		}
	}
}

func TestLoadKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "switchboard.key")
	if _, _, err := LoadKeyFile(path, false); err == nil {
		t.Fatalf("LoadKeyFile(missing, create=false) = nil error; want an error")
	}
	k, created, err := LoadKeyFile(path, true)
	if err != nil || !created || len(k) != KeySize {
		t.Fatalf("LoadKeyFile(missing, create=true) = %d bytes, created %v, %v; want a new 32-byte key", len(k), created, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("new key file mode = %v, want 0600", fi.Mode().Perm())
	}
	again, created, err := LoadKeyFile(path, true)
	if err != nil || created || !bytes.Equal(again, k) {
		t.Errorf("LoadKeyFile(existing) = %x, created %v, %v; want the same key, not created", again, created, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d files after creating the key, want 1 (no temporary file left)", len(entries))
	}

	bad := filepath.Join(dir, "bad.key")
	if err := os.WriteFile(bad, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadKeyFile(bad, true); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("LoadKeyFile(bad content) = %v; want an error naming the file", err)
	}
}

// TestLoadKeyFileRace: processes starting together on one database all
// end up with the same key.
func TestLoadKeyFileRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "switchboard.key")
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, _, err := LoadKeyFile(path, true)
			if err != nil {
				t.Errorf("LoadKeyFile #%d: %v", i, err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for i := range keys {
		if !bytes.Equal(keys[i], keys[0]) {
			t.Errorf("LoadKeyFile #%d got another key than #0", i)
		}
	}
}

func TestDigest(t *testing.T) {
	key := NewKey()
	s, t2 := mustSealer(t, key), mustSealer(t, key)
	other := mustSealer(t, NewKey())
	data := []byte(`POST /v1/phone/connections?\n{"sip":{"password":"hunter2"}}`)
	d := s.Digest(data)
	if !bytes.Equal(d, t2.Digest(data)) {
		t.Errorf("Digest differs between two Sealers of one key; nodes sharing a key must agree")
	}
	if bytes.Equal(d, other.Digest(data)) {
		t.Errorf("Digest is the same under another key")
	}
	if bytes.Equal(d, s.Digest(append(data, ' '))) {
		t.Errorf("Digest is the same for other data")
	}
	plain := sha256.Sum256(data)
	if bytes.Equal(d, plain[:]) || len(d) != sha256.Size {
		t.Errorf("Digest = %x; want a %d-byte keyed hash, not the plain SHA-256", d, sha256.Size)
	}
}
