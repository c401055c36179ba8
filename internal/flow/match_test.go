package flow

import (
	"reflect"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestMatch(t *testing.T) {
	tests := []struct {
		name   string
		match  Match
		in     string
		ok     bool
		value  any
		groups [][2]string
	}{
		{"keyword word", Match{Kind: "keywords", Any: []string{"cancel", "stop"}}, "I want to CANCEL.", true, "cancel", nil},
		{"keyword second", Match{Kind: "keywords", Any: []string{"cancel", "stop"}}, "please stop", true, "stop", nil},
		{"keyword list order wins", Match{Kind: "keywords", Any: []string{"stop", "cancel"}}, "cancel, stop", true, "stop", nil},
		{"keyword whole word only", Match{Kind: "keywords", Any: []string{"cancel"}}, "what is the cancellation policy", false, nil, nil},
		{"keyword phrase", Match{Kind: "keywords", Any: []string{"speak to a human"}}, "can I speak to a Human please", true, "speak to a human", nil},
		{"keyword phrase split", Match{Kind: "keywords", Any: []string{"speak to a human"}}, "speak to a nice human", false, nil, nil},
		{"keyword hyphen", Match{Kind: "keywords", Any: []string{"check-in"}}, "when is check in", true, "check-in", nil},
		{"keyword apostrophe", Match{Kind: "keywords", Any: []string{"don't call"}}, "Don’t call me again", true, "don't call", nil},

		{"regex insensitive", Match{Kind: "regex", Pattern: `order (?P<order>[a-z]\d+)`}, "ORDER A123 please", true, "ORDER A123", [][2]string{{"order", "A123"}}},
		{"regex sensitive", Match{Kind: "regex", Pattern: `order`, CaseSensitive: true}, "ORDER", false, nil, nil},
		{"regex optional group", Match{Kind: "regex", Pattern: `(?P<a>x)?y`}, "y", true, "y", nil},
		{"regex bad pattern never matches", Match{Kind: "regex", Pattern: `(`}, "(", false, nil, nil},

		{"yesno yes", Match{Kind: "yesno", Value: ptr(true)}, "yeah sure", true, true, nil},
		{"yesno yes refuses no", Match{Kind: "yesno", Value: ptr(true)}, "no", false, nil, nil},
		{"yesno no", Match{Kind: "yesno", Value: ptr(false)}, "nope", true, false, nil},
		{"yesno either", Match{Kind: "yesno"}, "no way", true, false, nil},
		{"yesno neither", Match{Kind: "yesno"}, "maybe", false, nil, nil},

		{"number", Match{Kind: "number"}, "twenty three", true, 23.0, nil},
		{"number in range", Match{Kind: "number", Min: ptr(1.0), Max: ptr(8.0)}, "we are 8", true, 8.0, nil},
		{"number above max", Match{Kind: "number", Min: ptr(1.0), Max: ptr(8.0)}, "nine", false, nil, nil},
		{"number below min", Match{Kind: "number", Min: ptr(1.0)}, "zero", false, nil, nil},

		{"date", Match{Kind: "date"}, "next Tuesday", true, "2026-12-01", nil},
		{"time", Match{Kind: "time"}, "half past three", true, "15:30", nil},
		{"datetime", Match{Kind: "datetime"}, "tomorrow at 9am", true, "2026-11-25T09:00", nil},
		{"datetime needs a time", Match{Kind: "datetime"}, "tomorrow", false, nil, nil},

		{"any", Match{Kind: "any"}, "  anything at all ", true, "anything at all", nil},
		{"any refuses blank", Match{Kind: "any"}, "   ", false, nil, nil},
		{"unknown kind", Match{Kind: "telepathy"}, "yes", false, nil, nil},
	}
	for _, tt := range tests {
		got, ok := compileMatch(tt.match).match(newAnswer(tt.in, tuesday, newYork))
		if ok != tt.ok || !reflect.DeepEqual(got.value, tt.value) || !reflect.DeepEqual(got.groups, tt.groups) {
			t.Errorf("%s: match(%+v, %q) = %#v, %v, groups %q; want %#v, %v, groups %q",
				tt.name, tt.match, tt.in, got.value, ok, got.groups, tt.value, tt.ok, tt.groups)
		}
	}
}
