package twilio

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // Twilio's webhook signature is HMAC-SHA1 ("Webhooks security")
	"encoding/base64"
	"net/http"
	"net/url"
	"sort"

	twclient "github.com/twilio/twilio-go/client"
)

// SignatureHeader carries Twilio's signature of a webhook request or of a
// Media Streams websocket upgrade ("Webhooks security",
// https://www.twilio.com/docs/usage/webhooks/webhooks-security).
const SignatureHeader = "X-Twilio-Signature"

// Sign computes the X-Twilio-Signature of a request to fullURL with POST
// parameters params under token: base64 of HMAC-SHA1, keyed by the auth
// token, of the full URL followed by each parameter name immediately
// followed by its value, the names sorted ("Webhooks security"). Repeated
// names are signed value by value in the order given. A GET request (the
// websocket upgrade) has no parameters: the URL alone is signed.
//
// Switchboard only checks signatures; Sign serves tests and twiliotest.
func Sign(token, fullURL string, params url.Values) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	mac := hmac.New(sha1.New, []byte(token))
	mac.Write([]byte(fullURL))
	for _, k := range keys {
		for _, v := range params[k] {
			mac.Write([]byte(k))
			mac.Write([]byte(v))
		}
	}
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// ValidSignature reports whether signature is Twilio's signature of a
// request to fullURL with POST parameters params under token. It uses
// twilio-go's client.RequestValidator, which compares in constant time and
// accepts the URL with and without its port (Twilio signs some requests
// with the port and some without, as the helper libraries note). A
// parameter given more than once is checked with its first value, as
// twilio-go does; Twilio's voice webhooks repeat none.
func ValidSignature(token, fullURL string, params url.Values, signature string) bool {
	if token == "" || signature == "" {
		return false
	}
	m := make(map[string]string, len(params))
	for k, v := range params {
		if len(v) > 0 {
			m[k] = v[0]
		}
	}
	rv := twclient.NewRequestValidator(token)
	return rv.Validate(fullURL, m, signature)
}

// validRequest checks r's signature as a request to publicURL (the URL
// Twilio was given, which the request's own Host and scheme may not show
// behind a proxy). For POST, the form must have been parsed.
func validRequest(r *http.Request, token, publicURL string) bool {
	var params url.Values
	if r.Method == http.MethodPost {
		params = r.PostForm
	}
	return ValidSignature(token, publicURL, params, r.Header.Get(SignatureHeader))
}
