package phone

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // schedules and contacts name IANA zones; work without system tzdata
)

// CheckTimezone reports whether tz is an IANA time zone name a new
// contact or schedule may use: an Area/Location name such as
// "America/New_York" (links such as "US/Eastern" and "Etc/GMT+5" are
// names too), or "UTC". The zone database's legacy names without an area
// are refused even though time.LoadLocation knows them: abbreviations and
// POSIX rules (EST, a fixed UTC−5 that never observes daylight saving
// time, while PST is not in the database at all; EST5EDT, PST8PDT),
// country aliases (GB, Japan) and the spellings of UTC (GMT, Zulu). Their
// error names the IANA zone meant most often. "Local" and "" are refused.
//
// Values stored before this check keep their meaning: schedule.Zone still
// loads them.
func CheckTimezone(tz string) error {
	if tz == "" || tz == "Local" || strings.TrimSpace(tz) != tz {
		return fmt.Errorf("must be an IANA time zone name such as America/New_York")
	}
	if tz != "UTC" && !strings.Contains(tz, "/") {
		return legacyZone(tz)
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return fmt.Errorf("unknown time zone %q: use an IANA name such as America/New_York", tz)
	}
	return nil
}

// legacyZone is the error for a zone name without an area.
func legacyZone(tz string) error {
	up := strings.ToUpper(tz)
	if z, ok := abbreviations[up]; ok {
		return fmt.Errorf("%s is a legacy abbreviation, not an IANA time zone name: use an IANA name such as %s", tz, z)
	}
	if z, ok := aliases[tz]; ok {
		return fmt.Errorf("%s is a legacy alias, not an IANA time zone name: use the IANA name %s", tz, z)
	}
	return fmt.Errorf("%s is not an IANA time zone name: use an Area/Location name such as America/New_York, or UTC", tz)
}

// abbreviations are time zone abbreviations people write (some of them
// legacy names of the zone database, most not), with the zone meant most
// often.
var abbreviations = map[string]string{
	"EST": "America/New_York", "EDT": "America/New_York", "EST5EDT": "America/New_York",
	"CST": "America/Chicago", "CDT": "America/Chicago", "CST6CDT": "America/Chicago",
	"MST": "America/Denver (America/Phoenix keeps MST all year)", "MDT": "America/Denver", "MST7MDT": "America/Denver",
	"PST": "America/Los_Angeles", "PDT": "America/Los_Angeles", "PST8PDT": "America/Los_Angeles",
	"AKST": "America/Anchorage", "AKDT": "America/Anchorage", "HST": "Pacific/Honolulu",
	"GMT": "UTC", "GMT0": "UTC", "GMT+0": "UTC", "GMT-0": "UTC", "UCT": "UTC", "Z": "UTC",
	"BST": "Europe/London", "WET": "Europe/Lisbon", "CET": "Europe/Berlin", "CEST": "Europe/Berlin", "MET": "Europe/Berlin",
	"EET": "Europe/Athens", "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "KST": "Asia/Seoul",
	"AEST": "Australia/Sydney", "AEDT": "Australia/Sydney",
}

// aliases are the zone database's other names without an area, with the
// zone each links to.
var aliases = map[string]string{
	"Cuba": "America/Havana", "Egypt": "Africa/Cairo", "Eire": "Europe/Dublin", "GB": "Europe/London", "GB-Eire": "Europe/London",
	"Greenwich": "UTC", "Hongkong": "Asia/Hong_Kong", "Iceland": "Atlantic/Reykjavik", "Iran": "Asia/Tehran", "Israel": "Asia/Jerusalem",
	"Jamaica": "America/Jamaica", "Japan": "Asia/Tokyo", "Kwajalein": "Pacific/Kwajalein", "Libya": "Africa/Tripoli",
	"NZ": "Pacific/Auckland", "NZ-CHAT": "Pacific/Chatham", "Navajo": "America/Denver", "PRC": "Asia/Shanghai", "ROC": "Asia/Taipei",
	"ROK": "Asia/Seoul", "Poland": "Europe/Warsaw", "Portugal": "Europe/Lisbon", "Singapore": "Asia/Singapore", "Turkey": "Europe/Istanbul",
	"Universal": "UTC", "W-SU": "Europe/Moscow", "Zulu": "UTC", "Factory": "UTC",
}
