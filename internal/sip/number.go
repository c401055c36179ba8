package sip

import (
	"strings"

	"github.com/emiago/sipgo/sip"
)

// maxUserLen bounds the user part kept from a peer's URI: numbers are at
// most 16 characters in E.164, and anything much longer is not a number.
const maxUserLen = 64

// uriUser is the user part of u as the peer wrote it, without user
// parameters (";npdi;rn=…", which number-portability databases add) and
// with %-escapes decoded. A tel: URI's user is its number. The result is
// at most maxUserLen bytes.
func uriUser(u sip.Uri) string {
	user := u.User
	if u.Scheme == "tel" {
		user = u.Raw()
	}
	if i := strings.IndexByte(user, ';'); i >= 0 {
		user = user[:i]
	}
	user = unescapeUser(user)
	if len(user) > maxUserLen {
		user = user[:maxUserLen]
	}
	return user
}

// unescapeUser decodes %XX escapes (carriers write "+" as "%2B"); a
// malformed escape is kept as written.
func unescapeUser(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				b.WriteByte(hi<<4 | lo)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// NormalizeNumber returns the E.164 form of a number as a peer wrote it in
// a URI's user part, or "" when it cannot say which number it is. Carriers
// write the same number in several ways; these are accepted:
//
//   - "+16175550100" (E.164, what Twilio and most trunks send);
//   - "0016175550100" (the international prefix 00 instead of +);
//   - "16175550100" or "447700900123": 11 to 15 digits without a prefix
//     are taken as a full international number missing its "+" (what
//     Telnyx and many PBXs send);
//
// with visual separators ("-", ".", " ", "(", ")") ignored. A national
// number such as "6175550100" (10 digits) is NOT guessed into a country:
// the same digits are valid in several, so it stays unknown and the call is
// refused as an unknown number rather than routed to the wrong one. E.164
// allows 8 to 15 digits after the "+" here (the shortest real numbers have
// 8 digits with their country code).
func NormalizeNumber(user string) string {
	digits := make([]byte, 0, 16)
	plus := false
	for i := 0; i < len(user); i++ {
		c := user[i]
		switch {
		case c >= '0' && c <= '9':
			if len(digits) == 16 {
				return "" // longer than any E.164 number
			}
			digits = append(digits, c)
		case c == '+' && i == 0:
			plus = true
		case c == '-' || c == '.' || c == ' ' || c == '(' || c == ')':
		default:
			return ""
		}
	}
	switch {
	case plus:
	case len(digits) > 2 && digits[0] == '0' && digits[1] == '0':
		digits = digits[2:]
	case len(digits) >= 11:
	default:
		return ""
	}
	if len(digits) < 8 || len(digits) > 15 || digits[0] == '0' {
		return "" // country codes never start with 0
	}
	return "+" + string(digits)
}

// dialedNumber is the number an inbound INVITE is for: the request-URI's
// user part if it is a number, else the To header's (a proxy may rewrite
// the request-URI to a trunk account name but keep the dialed number in
// To). When neither is a number, it is the request-URI's user as written,
// which no purchase matches, so the call is refused with 404.
func dialedNumber(req *sip.Request) string {
	ruri := uriUser(req.Recipient)
	if n := NormalizeNumber(ruri); n != "" {
		return n
	}
	if to := req.To(); to != nil {
		if n := NormalizeNumber(uriUser(to.Address)); n != "" {
			return n
		}
	}
	return ruri
}

// callerNumber is the caller's number from the From header in E.164 when it
// is one, else the user part as written ("anonymous", an extension).
func callerNumber(req *sip.Request) string {
	from := req.From()
	if from == nil {
		return ""
	}
	user := uriUser(from.Address)
	if n := NormalizeNumber(user); n != "" {
		return n
	}
	return user
}
