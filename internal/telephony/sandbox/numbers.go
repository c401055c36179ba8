package sandbox

import (
	"fmt"

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
