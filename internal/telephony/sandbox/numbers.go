package sandbox

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nyaruka/phonenumbers"

	"switchboard/internal/phone"

	"switchboard/internal/telephony"
)

// areas are the area codes the default inventory covers, in ascending order
// so that DefaultNumbers comes out sorted without a sort.
var areas = []struct {
	code     string
	locality string
}{
	{"212", "New York, NY"},
	{"312", "Chicago, IL"},
	{"415", "San Francisco, CA"},
}

// DefaultNumbers returns the sandbox's default inventory: the 555-0100 through
// 555-0199 numbers of area codes 212 (New York), 312 (Chicago) and 415 (San
// Francisco), 300 in all, sorted by their E.164 form. NANPA reserves
// 555-0100…0199 for fictional use, so these numbers look real to validators
// yet can never reach an actual subscriber. Each call returns a fresh slice
// the caller may modify.
func DefaultNumbers() []telephony.Number {
	nums := make([]telephony.Number, 0, len(areas)*100)
	for _, a := range areas {
		for line := 100; line <= 199; line++ {
			nums = append(nums, telephony.Number{
				Number:       fmt.Sprintf("+1%s555%04d", a.code, line),
				Provider:     providerName,
				Region:       "US",
				Locality:     a.locality,
				Capabilities: []string{"voice"},
			})
		}
	}
	return nums
}

// ParseNumbers reads a comma-separated list of numbers in international
// form (the --sandbox-numbers flag) into an inventory, sorted and without
// duplicates. Every number must be valid for its country code.
func ParseNumbers(list string) ([]telephony.Number, error) {
	seen := map[string]bool{}
	var out []telephony.Number
	for _, raw := range strings.Split(list, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		n, err := phone.NormalizeE164(raw)
		if err != nil {
			return nil, fmt.Errorf("sandbox number %q %v", raw, err)
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		pn, _ := phonenumbers.Parse(n, "")
		out = append(out, telephony.Number{Number: n, Provider: providerName, Region: phonenumbers.GetRegionCodeForNumber(pn), Capabilities: []string{"voice"}})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sandbox numbers: the list is empty")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out, nil
}
