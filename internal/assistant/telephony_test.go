package assistant

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"switchboard/internal/apperr"
)

// TestCheckDestination: E.164 numbers exactly as written, and SIP URIs
// without passwords or headers, are transfer destinations; nothing else.
func TestCheckDestination(t *testing.T) {
	for _, ok := range []string{
		"+16175550123",
		"+442071838750",
		"sip:desk@pbx.example.com",
		"sips:desk@pbx.example.com",
		"SIP:desk@pbx.example.com",
		"sip:+16175550123@trunk.example.com:5060;transport=tcp",
		"sip:pbx.example.com",
		"sip:100@10.0.0.5",
		"sip:100@[2001:db8::1]:5061",
		"sip:sales%20desk@pbx.example.com;user=phone",
	} {
		if err := CheckDestination(ok); err != nil {
			t.Errorf("CheckDestination(%q) = %v; want nil", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"":                                       "is required",
		"16175550123":                            "E.164 form (+16175550123) or a SIP URI",
		"+1 617 555 0123":                        "without spaces or punctuation: +16175550123",
		"+1617555012":                            "not a valid phone number",
		"+0123":                                  "plus and 2 to 15 digits",
		"tel:+16175550123":                       "E.164 form (+16175550123) or a SIP URI",
		"https://example.com":                    "E.164 form (+16175550123) or a SIP URI",
		"sip:":                                   "must name a host",
		"sip:desk@":                              "must name a host",
		"sip:desk:secret@pbx.example.com":        "password",
		"sip:desk@pbx.example.com?Replaces=x":    "without headers",
		"sip:desk@pbx.example.com:0":             "port",
		"sip:desk@pbx.example.com:70000":         "port",
		"sip:desk@pbx.example.com:":              "port",
		"sip:desk@-pbx.example.com":              "must name a host",
		"sip:de sk@pbx.example.com":              "user part",
		"sip:desk@pbx.example.com;transport=x y": "parameter",
		"sip:desk@[::1":                          "IPv6",
		"sip:desk@[zz]:5060":                     "IPv6",
		"sip:" + strings.Repeat("a", 300) + "@b.com": "at most 256 bytes",
	} {
		err := CheckDestination(bad)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckDestination(%q) = %v; want an error containing %q", bad, err, want)
		}
	}
}

// FuzzCheckDestination: the check never panics, and what it accepts is a
// number or a sip(s) URI without spaces.
func FuzzCheckDestination(f *testing.F) {
	for _, s := range []string{"+16175550123", "sip:desk@pbx.example.com:5060;transport=tcp", "sips:[::1]", "sip:a@b?c", "sip:%zz@x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckDestination(s) != nil {
			return
		}
		l := strings.ToLower(s)
		if !strings.HasPrefix(s, "+") && !strings.HasPrefix(l, "sip:") && !strings.HasPrefix(l, "sips:") {
			t.Fatalf("CheckDestination(%q) accepted a destination that is neither a number nor a SIP URI", s)
		}
		if strings.ContainsAny(s, " \t\r\n?\x00") {
			t.Fatalf("CheckDestination(%q) accepted whitespace, a NUL or headers", s)
		}
	})
}

// TestValidateTelephony: transfer destinations, voicemail and recording are
// checked field by field, with the index of the destination at fault.
func TestValidateTelephony(t *testing.T) {
	long := strings.Repeat("x", MaxCallMessageLen+1)
	for _, tc := range []struct {
		name   string
		change func(a *Assistant)
		want   map[string]string
	}{
		{"defaults", func(a *Assistant) {}, nil},
		{"every setting", func(a *Assistant) {
			a.Transfer.Destinations = []TransferDestination{
				{Destination: "+16175550123", Description: "Sales desk", Message: "Transferring you to sales now."},
				{Destination: "sip:support@pbx.example.com", Description: "Support"},
			}
			a.Recording.Enabled = true
			a.Voicemail = Voicemail{Action: VoicemailLeaveMessage, Message: "Hi, this is Bright Smile Dental. Please call us back."}
		}, nil},
		{"an old assistant: empty voicemail action", func(a *Assistant) { a.Voicemail = Voicemail{} }, nil},
		{"bad destinations", func(a *Assistant) {
			a.Transfer.Destinations = []TransferDestination{
				{Destination: "617-555-0123"},
				{Destination: "+16175550123", Description: long, Message: long},
				{Destination: "+16175550123"},
			}
		}, map[string]string{
			"transfer.destinations[0].destination": "E.164 form (+16175550123) or a SIP URI",
			"transfer.destinations[1].description": "at most 1000 bytes",
			"transfer.destinations[1].message":     "at most 1000 bytes",
			"transfer.destinations[2].destination": `repeats transfer.destinations[1].destination "+16175550123"`,
		}},
		{"too many destinations", func(a *Assistant) {
			for i := range MaxTransferDestinations + 1 {
				a.Transfer.Destinations = append(a.Transfer.Destinations, TransferDestination{Destination: "sip:" + string(rune('a'+i)) + "@pbx.example.com"})
			}
		}, map[string]string{"transfer.destinations": "at most 10 destinations, not 11"}},
		{"leaveMessage without a message", func(a *Assistant) { a.Voicemail = Voicemail{Action: VoicemailLeaveMessage, Message: "  "} },
			map[string]string{"voicemail.message": `required and must not be blank when action is "leaveMessage"`}},
		{"unknown voicemail action and a long message", func(a *Assistant) { a.Voicemail = Voicemail{Action: "beep", Message: long} },
			map[string]string{"voicemail.action": `must be "hangup" or "leaveMessage", not "beep"`, "voicemail.message": "at most 1000 bytes"}},
		{"an HTTP tool named like a built-in", func(a *Assistant) {
			a.Tools = []Tool{{Name: "transferCall", URL: "https://tools.example.com", TimeoutSeconds: 10}}
		}, map[string]string{"tools[0].name": "not a built-in tool (endCall, sendDTMF, transferCall)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := valid(DefaultProviders())
			tc.change(&a)
			var f apperr.Fields
			a.Validate(DefaultProviders(), nil, &f)
			var got []string
			for _, e := range f {
				got = append(got, e.Field)
				if want, ok := tc.want[e.Field]; !ok {
					t.Errorf("Validate(%s): unexpected error on %s: %s", tc.name, e.Field, e.Message)
				} else if !strings.Contains(e.Message, want) {
					t.Errorf("Validate(%s): %s message = %q; want it to contain %q", tc.name, e.Field, e.Message, want)
				}
			}
			for field := range tc.want {
				if !slices.Contains(got, field) {
					t.Errorf("Validate(%s): no error on %s; got errors on %v", tc.name, field, got)
				}
			}
		})
	}
}

// TestTelephonyJSON: a new assistant shows the defaults; one stored before
// the settings existed decodes to them and shows the same.
func TestTelephonyJSON(t *testing.T) {
	want := `"transfer":{"destinations":[]},"recording":{"enabled":false},"voicemail":{"detect":false,"action":"hangup","message":""}`
	b, err := json.Marshal(Defaults(DefaultProviders()))
	if err != nil || !strings.Contains(string(b), want) {
		t.Errorf("json.Marshal(Defaults()) = %s, %v; want it to contain %s", b, err, want)
	}
	var old Assistant
	if err := json.Unmarshal([]byte(`{"id":"asst_x","name":"Old","model":{"provider":"flow"}}`), &old); err != nil {
		t.Fatal(err)
	}
	if old.Recording.Enabled || old.Voicemail.LeavesMessage() || len(old.Transfer.Destinations) != 0 {
		t.Errorf("an old assistant decodes to %+v %+v %+v; want no recording, hang up on voicemail, no destinations", old.Recording, old.Voicemail, old.Transfer)
	}
	b, _ = json.Marshal(old)
	if !strings.Contains(string(b), want) {
		t.Errorf("json.Marshal(old assistant) = %s; want it to contain %s", b, want)
	}
	if d, ok := (Transfer{Destinations: []TransferDestination{{Destination: "+16175550123", Message: "Hold on."}}}).Find("+16175550123"); !ok || d.Message != "Hold on." {
		t.Errorf("Transfer.Find = %+v, %v", d, ok)
	}
}
