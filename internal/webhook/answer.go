package webhook

import (
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Limits on reading a receiver's answer. Only an excerpt is kept, so the
// answer is never read whole: a large or endlessly inflating one (a gzip
// bomb) costs at most these many bytes.
const (
	maxAnswerRead     = 64 << 10 // decoded bytes read; enough for small answers to free the connection for reuse
	maxCompressedRead = 1 << 20  // compressed bytes fed to the decoder
	maxAnswerKept     = 2 << 10  // bytes of the excerpt in the delivery log
	maxErrKept        = 1 << 10  // bytes of Result.Err
	binaryHeadBytes   = 16       // bytes shown, in hex, of a binary answer
)

// readAnswer reads resp's body, bounded, and renders it for the delivery
// log (see excerpt). The error is the transport's, while reading; an answer
// that cannot be decoded is described in the excerpt instead.
//
// Deliveries ask for Accept-Encoding: identity, so Go's transport never
// decompresses on its own; a receiver may still answer gzip, which is
// decoded here (bounded like any answer) so the log stays readable. Other
// encodings (br, zstd, deflate…) are named, not decoded.
func readAnswer(resp *http.Response) (string, error) {
	contentType := resp.Header.Get("Content-Type")
	var body io.Reader = resp.Body
	gzipped := false
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(io.LimitReader(resp.Body, maxCompressedRead))
		switch {
		case errors.Is(err, io.EOF): // an empty body
			return "", nil
		case decodeError(err):
			return fmt.Sprintf("<gzip answer that could not be decoded: %s>", printable(err.Error(), 200)), nil
		case err != nil:
			return "", err
		}
		defer zr.Close()
		body, gzipped = zr, true
	default:
		n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerRead+1))
		return fmt.Sprintf("<%s-encoded answer: %s, not decoded>", printable(enc, 64), size(int(n))), err
	}
	data, err := io.ReadAll(io.LimitReader(body, maxAnswerRead+1))
	if gzipped && decodeError(err) { // a plain answer cut short is the connection's fault: err
		return fmt.Sprintf("<gzip answer that could not be decoded: %s>", printable(err.Error(), 200)), nil
	}
	return excerpt(data, contentType), err
}

// decodeError reports whether err is the gzip stream's fault rather than the
// connection's.
func decodeError(err error) bool {
	var corrupt flate.CorruptInputError
	return errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &corrupt)
}

// excerpt renders the (decoded) answer data for the delivery log. Text is
// kept as text, up to maxAnswerKept bytes, with what is not printable
// escaped (see printable). An answer that is mostly not text would be a
// wall of escapes, so it is summarized instead, with its size, its
// Content-Type and its first bytes in hex, which identify most formats:
// "<binary answer: 4096 bytes, image/png, starting 89 50 4e 47 …>".
func excerpt(data []byte, contentType string) string {
	if !looksBinary(data) {
		return printable(string(data), maxAnswerKept)
	}
	var b strings.Builder
	b.WriteString("<binary answer: " + size(len(data)))
	if contentType != "" {
		b.WriteString(", " + printable(contentType, 100))
	}
	fmt.Fprintf(&b, ", starting % x", data[:min(len(data), binaryHeadBytes)])
	if len(data) > binaryHeadBytes {
		b.WriteString(" …")
	}
	b.WriteString(">")
	return b.String()
}

// size says how many bytes were read: the count, or "more than" the read
// limit when the answer did not end within it.
func size(n int) string {
	if n > maxAnswerRead {
		return fmt.Sprintf("more than %d bytes", maxAnswerRead)
	}
	return fmt.Sprintf("%d bytes", n)
}

// looksBinary reports whether data is at least 32 bytes long and more than
// a quarter of its first 512 bytes would need escaping: random or compressed
// data (about 60%), not text with a stray NUL or a terminal escape. A shorter
// answer is shown escaped, which stays short.
func looksBinary(data []byte) bool {
	if len(data) < 32 {
		return false
	}
	s := string(data[:min(len(data), 512)])
	bad := 0
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		s = s[n:]
		if r == utf8.RuneError && n == 1 || isControl(r) && r != '\n' && r != '\t' && r != '\r' {
			bad++
		}
	}
	return bad*4 > min(len(data), 512)
}

// isControl reports the C0 and C1 control characters and DEL.
func isControl(r rune) bool { return r < 0x20 || r >= 0x7f && r <= 0x9f }

// printable returns s as text for the delivery log, at most max bytes (cut
// between characters, never inside an escape): valid UTF-8 with no control
// characters but newline and tab, so that PostgreSQL stores it and a
// terminal shows it as it is. Each byte of invalid UTF-8 and each other C0
// control or DEL becomes \xHH, each C1 control \u00HH, and CRLF becomes a
// newline. A literal backslash is left alone: "\x00" in the log may also
// have been those four characters.
func printable(s string, max int) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		piece := s[:n]
		switch {
		case r == utf8.RuneError && n == 1:
			piece = fmt.Sprintf(`\x%02x`, s[0])
		case r == '\r' && strings.HasPrefix(s[1:], "\n"):
			piece = ""
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f:
			piece = fmt.Sprintf(`\x%02x`, r)
		case isControl(r):
			piece = fmt.Sprintf(`\u%04x`, r)
		}
		if b.Len()+len(piece) > max {
			break
		}
		b.WriteString(piece)
		s = s[n:]
	}
	return b.String()
}
