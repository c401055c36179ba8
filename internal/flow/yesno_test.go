package flow

import "testing"

func TestParseYesNo(t *testing.T) {
	const (
		neither = iota
		yes
		no
	)
	tests := []struct {
		in   string
		want int
	}{
		{"yes", yes},
		{"Yes.", yes},
		{"yeah", yes},
		{"yep", yes},
		{"yup", yes},
		{"sure", yes},
		{"sure thing", yes},
		{"correct", yes},
		{"right", yes},
		{"that's right", yes},
		{"That’s right", yes},
		{"that is right", yes},
		{"absolutely", yes},
		{"of course", yes},
		{"ok", yes},
		{"okay then", yes},
		{"alright", yes},
		{"yes please", yes},
		{"sounds good", yes},
		{"go ahead", yes},
		{"uh huh", yes},
		{"I think so", yes},
		{"no problem", yes},
		{"I don't mind", yes},
		{"yeah, Tuesday is fine", yes},

		{"no", no},
		{"No!", no},
		{"nope", no},
		{"nah", no},
		{"not really", no},
		{"wrong", no},
		{"incorrect", no},
		{"negative", no},
		{"no, not that", no},
		{"yes no", no}, // no wins
		{"yes... no wait", no},
		{"okay no", no},
		{"absolutely not", no},
		{"of course not", no},
		{"that's not right", no},
		{"that is not correct", no},
		{"not at all", no},
		{"no thank you", no},
		{"I don't think so", no},
		{"don't", no},
		{"never", no},

		{"", neither},
		{"maybe", neither},
		{"I'm not sure", neither},
		{"not sure", neither},
		{"I don't know", neither},
		{"no idea", neither},
		{"I know", neither},
		{"know", neither},
		{"nobody", neither},
		{"yesterday", neither},
		{"Tuesday", neither},
		{"rightly", neither},
	}
	for _, tt := range tests {
		v, ok := ParseYesNo(tt.in)
		got := neither
		switch {
		case ok && v:
			got = yes
		case ok && !v:
			got = no
		}
		if got != tt.want {
			t.Errorf("ParseYesNo(%q) = %v, %v; want %s", tt.in, v, ok, map[int]string{yes: "yes", no: "no", neither: "neither (ok=false)"}[tt.want])
		}
	}
}
