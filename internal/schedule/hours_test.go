package schedule_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/schedule"
	"switchboard/internal/sip"
	"switchboard/internal/twilio"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

func utc(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return v
}

func hours(start, end string, days ...string) schedule.CallingHours {
	if len(days) == 0 {
		days = schedule.DefaultHours().Days
	}
	return schedule.CallingHours{Start: start, End: end, Days: days}
}

// TestNextOpening covers the days a zone changes its offset (spring
// forward and fall back, in New York and Berlin), a half-hour zone
// (Kolkata), days of the week and the end of the day.
func TestNextOpening(t *testing.T) {
	weekdays := []string{"mon", "tue", "wed", "thu", "fri"}
	tests := []struct {
		name string
		zone string
		h    schedule.CallingHours
		at   string
		want string
	}{
		// New York springs forward on 2026-03-08 at 02:00 EST (07:00Z) to 03:00 EDT.
		{"NY spring: start in the gap opens when the gap ends", "America/New_York", hours("02:30", "04:00"), "2026-03-08T05:00:00Z", "2026-03-08T07:00:00Z"},
		{"NY spring: inside after the gap", "America/New_York", hours("02:30", "04:00"), "2026-03-08T07:30:00Z", "2026-03-08T07:30:00Z"},
		{"NY spring: at the end, the next day", "America/New_York", hours("02:30", "04:00"), "2026-03-08T08:00:00Z", "2026-03-09T06:30:00Z"},
		{"NY spring: a usual window the day before (EST)", "America/New_York", hours("08:00", "21:00"), "2026-03-07T12:00:00Z", "2026-03-07T13:00:00Z"},
		{"NY spring: a usual window that day (EDT)", "America/New_York", hours("08:00", "21:00"), "2026-03-08T11:00:00Z", "2026-03-08T12:00:00Z"},
		// New York falls back on 2026-11-01 at 02:00 EDT (06:00Z) to 01:00 EST.
		{"NY fall: start in the repeated hour is its first occurrence", "America/New_York", hours("01:30", "03:00"), "2026-11-01T04:00:00Z", "2026-11-01T05:30:00Z"},
		{"NY fall: the repeated hour's second pass is inside once", "America/New_York", hours("01:30", "03:00"), "2026-11-01T06:10:00Z", "2026-11-01T06:10:00Z"},
		{"NY fall: end after the repeat (03:00 EST)", "America/New_York", hours("01:30", "03:00"), "2026-11-01T08:00:00Z", "2026-11-02T06:30:00Z"},
		{"NY fall: a window inside the repeated hour counts once", "America/New_York", hours("01:00", "01:30"), "2026-11-01T06:10:00Z", "2026-11-02T06:00:00Z"},
		{"NY fall: a usual window that day (EST)", "America/New_York", hours("08:00", "21:00"), "2026-11-01T02:00:00Z", "2026-11-01T13:00:00Z"},
		// Berlin springs forward on 2026-03-29 at 02:00 CET (01:00Z) to 03:00 CEST.
		{"Berlin spring: a window inside the gap is empty that day", "Europe/Berlin", hours("02:15", "02:45"), "2026-03-28T23:30:00Z", "2026-03-30T00:15:00Z"},
		{"Berlin spring: start in the gap opens when the gap ends", "Europe/Berlin", hours("02:30", "05:00"), "2026-03-28T23:30:00Z", "2026-03-29T01:00:00Z"},
		{"Berlin spring: a usual window that day (CEST)", "Europe/Berlin", hours("08:00", "21:00"), "2026-03-29T05:00:00Z", "2026-03-29T06:00:00Z"},
		// Berlin falls back on 2026-10-25 at 03:00 CEST (01:00Z) to 02:00 CET.
		{"Berlin fall: start in the repeated hour is its first occurrence", "Europe/Berlin", hours("02:30", "04:00"), "2026-10-24T23:00:00Z", "2026-10-25T00:30:00Z"},
		{"Berlin fall: the second pass is inside once", "Europe/Berlin", hours("02:30", "04:00"), "2026-10-25T01:45:00Z", "2026-10-25T01:45:00Z"},
		{"Berlin fall: at the end (04:00 CET), the next day", "Europe/Berlin", hours("02:30", "04:00"), "2026-10-25T03:00:00Z", "2026-10-26T01:30:00Z"},
		{"Berlin fall: a window inside the repeated hour counts once", "Europe/Berlin", hours("02:00", "02:30"), "2026-10-25T01:10:00Z", "2026-10-26T01:00:00Z"},
		// Kolkata is UTC+05:30 all year.
		{"Kolkata: before opening", "Asia/Kolkata", hours("09:00", "18:00", weekdays...), "2026-11-27T03:29:00Z", "2026-11-27T03:30:00Z"},
		{"Kolkata: inside", "Asia/Kolkata", hours("09:00", "18:00", weekdays...), "2026-11-27T12:29:00Z", "2026-11-27T12:29:00Z"},
		{"Kolkata: Friday after closing waits for Monday", "Asia/Kolkata", hours("09:00", "18:00", weekdays...), "2026-11-27T13:00:00Z", "2026-11-30T03:30:00Z"},
		{"Kolkata: Saturday waits for Monday", "Asia/Kolkata", hours("09:00", "18:00", weekdays...), "2026-11-28T06:00:00Z", "2026-11-30T03:30:00Z"},
		{"Kolkata: a UTC date that is the next local date", "Asia/Kolkata", hours("08:00", "21:00", "sat"), "2026-11-27T19:00:00Z", "2026-11-28T02:30:00Z"},
		// The end of the day and the any-time zero value.
		{"24:00 end: the last minute of the day is inside", "UTC", hours("00:00", "24:00"), "2026-11-27T23:59:30Z", "2026-11-27T23:59:30Z"},
		{"zero hours: any time", "UTC", schedule.CallingHours{}, "2026-11-27T03:00:00Z", "2026-11-27T03:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc := zone(t, tt.zone)
			got := schedule.NextOpening(utc(t, tt.at), loc, tt.h)
			if want := utc(t, tt.want); !got.Equal(want) {
				t.Errorf("NextOpening(%s, %s, %+v) = %s (%s), want %s (%s)", tt.at, tt.zone, tt.h,
					got.UTC().Format(time.RFC3339), got.In(loc).Format("Mon 15:04 MST"), tt.want, want.In(loc).Format("Mon 15:04 MST"))
			}
			if in := schedule.Inside(got, loc, tt.h); !in {
				t.Errorf("Inside(NextOpening(...)) = false for %s", got)
			}
		})
	}
}

// TestNextOpeningIsInsideAndFirst checks, every 7 minutes over a year in
// several zones, that NextOpening's answer is inside the window read on
// the wall clock and that no instant between t and it is.
func TestNextOpeningIsInsideAndFirst(t *testing.T) {
	h := hours("01:30", "02:30", "sun", "mon", "wed")
	for _, name := range []string{"America/New_York", "Europe/Berlin", "Asia/Kolkata", "America/Los_Angeles", "Australia/Lord_Howe"} {
		loc := zone(t, name)
		inWall := func(u time.Time) bool {
			l := u.In(loc)
			m := l.Hour()*60 + l.Minute()
			return slices.Contains(h.Days, schedule.DayNames[l.Weekday()]) && m >= 90 && m < 150
		}
		for at := utc(t, "2026-01-01T00:00:00Z"); at.Before(utc(t, "2027-01-01T00:00:00Z")); at = at.Add(7 * time.Minute) {
			got := schedule.NextOpening(at, loc, h)
			if got.Before(at) || got.Sub(at) > 8*24*time.Hour {
				t.Fatalf("%s: NextOpening(%s) = %s, not within a week after", name, at, got)
			}
			if inWall(at) && !got.Equal(at) && !secondPass(at, loc) {
				t.Fatalf("%s: NextOpening(%s) = %s, but %s is inside (wall %s)", name, at, got, at, at.In(loc))
			}
			if !got.Equal(at) && !inWall(got) && !inWall(got.Add(time.Minute)) {
				// An opening at the end of a gap reads past the start: the
				// first minute after it is inside.
				t.Fatalf("%s: NextOpening(%s) = %s (wall %s), not inside", name, at, got, got.In(loc))
			}
		}
	}
}

// secondPass reports whether at's wall clock in loc already read the
// same an hour or less before (the repeated hour of a fall back), where
// the window counts once.
func secondPass(at time.Time, loc *time.Location) bool {
	_, off := at.In(loc).Zone()
	_, before := at.Add(-3 * time.Hour).In(loc).Zone()
	if before <= off {
		return false
	}
	earlier := at.Add(-time.Duration(before-off) * time.Second).In(loc)
	return earlier.Format("2006-01-02 15:04") == at.In(loc).Format("2006-01-02 15:04")
}

func TestCallingHoursValidate(t *testing.T) {
	tests := []struct {
		h      schedule.CallingHours
		fields []string
	}{
		{schedule.DefaultHours(), nil},
		{hours("00:00", "24:00"), nil},
		{hours("8:00", "21:00"), []string{"callingHours.start"}},
		{hours("08:00", "25:00"), []string{"callingHours.end"}},
		{hours("24:00", "24:00"), []string{"callingHours.start"}},
		{hours("08:60", "21:00"), []string{"callingHours.start"}},
		{hours("21:00", "08:00"), []string{"callingHours.end"}},
		{hours("08:00", "08:00"), []string{"callingHours.end"}},
		{hours("+8:00", "-9:00"), []string{"callingHours.start", "callingHours.end"}},
		{schedule.CallingHours{Start: "08:00", End: "21:00"}, []string{"callingHours.days"}},
		{hours("08:00", "21:00", "mon", "Mon", "mon"), []string{"callingHours.days[1]", "callingHours.days[2]"}},
	}
	for _, tt := range tests {
		var got []string
		for _, e := range tt.h.Validate("callingHours.") {
			got = append(got, e.Field)
			if e.Message == "" {
				t.Errorf("Validate(%+v): %s has no message", tt.h, e.Field)
			}
		}
		if !slices.Equal(got, tt.fields) {
			t.Errorf("Validate(%+v) fields = %v, want %v", tt.h, got, tt.fields)
		}
	}
}

// TestNextTry: what maxAttempts counts, per outcome; failed only when
// retryable; fractional minutes.
func TestNextTry(t *testing.T) {
	p := schedule.DefaultRetry()
	end := utc(t, "2026-11-27T12:00:00Z")
	busy := schedule.Try{Outcome: "busy"}
	noAnswer := schedule.Try{Outcome: "no-answer"}
	tests := []struct {
		name    string
		earlier []schedule.Try
		outcome string
		reason  string
		want    time.Duration // -1: no retry
	}{
		{"first busy", nil, "busy", call.ReasonCustomerBusy, 15 * time.Minute},
		{"second busy", []schedule.Try{busy}, "busy", call.ReasonCustomerBusy, 15 * time.Minute},
		{"third busy: two retries spent", []schedule.Try{busy, busy}, "busy", call.ReasonCustomerBusy, -1},
		{"outcomes count apart", []schedule.Try{busy, busy}, "no-answer", call.ReasonCustomerNoAnswer, time.Hour},
		{"third no-answer", []schedule.Try{noAnswer, busy, noAnswer}, "no-answer", call.ReasonCustomerNoAnswer, -1},
		{"voicemail: none", nil, "voicemail", call.ReasonCustomerVoicemail, -1},
		{"completed never", nil, "completed", call.ReasonCustomerEnded, -1},
		{"canceled never", nil, "canceled", call.ReasonAPIEnded, -1},
		{"failed retryable", nil, "failed", sip.ReasonProviderFailed, 15 * time.Minute},
		{"failed not retryable", nil, "failed", sip.ReasonInvalidNumber, -1},
		{"failed lost", nil, "failed", call.ReasonSystemCallLost, -1},
	}
	for _, tt := range tests {
		got, ok := p.NextTry(tt.earlier, tt.outcome, tt.reason, end)
		switch {
		case tt.want < 0 && ok:
			t.Errorf("%s: NextTry = %s, want no retry", tt.name, got)
		case tt.want >= 0 && (!ok || !got.Equal(end.Add(tt.want))):
			t.Errorf("%s: NextTry = %s, %v; want %s", tt.name, got, ok, end.Add(tt.want))
		}
	}
	frac := schedule.RetryPolicy{Busy: schedule.Retry{AfterMinutes: 0.025, MaxAttempts: 1}}
	if got, ok := frac.NextTry(nil, "busy", call.ReasonCustomerBusy, end); !ok || got.Sub(end) != 1500*time.Millisecond {
		t.Errorf("NextTry with afterMinutes 0.025 = %s, %v; want 1.5s after the end", got.Sub(end), ok)
	}
	bad := schedule.RetryPolicy{Busy: schedule.Retry{AfterMinutes: -1, MaxAttempts: 11}, Voicemail: schedule.Retry{AfterMinutes: 1e9}}
	var fields []string
	for _, e := range bad.Validate("retry.") {
		fields = append(fields, e.Field)
	}
	if want := []string{"retry.busy.afterMinutes", "retry.busy.maxAttempts", "retry.voicemail.afterMinutes"}; !slices.Equal(fields, want) {
		t.Errorf("Validate(%+v) = %v, want %v", bad, fields, want)
	}
}

// TestRetryableFailureMatchesProviders: the one table of retryable
// failures agrees with every provider's own classification, for every
// failure that ends a call failed.
func TestRetryableFailureMatchesProviders(t *testing.T) {
	check := func(src string, e interface{ Error() string }, outcome, reason string, retryable bool) {
		if outcome != string(call.Failed) {
			return
		}
		if got := schedule.RetryableFailure(reason); got != retryable {
			t.Errorf("%s: RetryableFailure(%q) = %v, but the provider says retryable %v (%v)", src, reason, got, retryable, e)
		}
	}
	for status := 0; status < 700; status++ {
		for _, auth := range []bool{false, true} {
			if e := sip.Classify(status, auth); e != nil {
				check("sip.Classify", e, e.Outcome, e.Reason, e.Retryable)
			}
		}
	}
	for _, st := range []string{"queued", "initiated", "ringing", "in-progress", "busy", "no-answer", "failed", "canceled", "completed"} {
		for _, stream := range []bool{false, true} {
			if c := twilio.ClassifyStatus(st, stream); c.End != nil {
				check("twilio.ClassifyStatus("+st+")", c.End, c.End.Outcome, c.End.Reason, c.End.Retryable)
			}
		}
	}
	// Twilio's refused create requests (placeError): unavailable and
	// rate limited are retryable; the rest are the account's or number's.
	if !schedule.RetryableFailure(twilio.ReasonProviderFailed) {
		t.Errorf("RetryableFailure(%q) = false, want true (Twilio unavailable)", twilio.ReasonProviderFailed)
	}
	for _, r := range []string{twilio.ReasonAuthFailed, twilio.ReasonInvalidNumber, twilio.ReasonInvalidFrom, twilio.ReasonCallRejected, twilio.ReasonMediaTimeout, sip.ReasonMediaTimeout} {
		if schedule.RetryableFailure(r) {
			t.Errorf("RetryableFailure(%q) = true, want false", r)
		}
	}
	if !schedule.RetryableFailure(call.ReasonProviderFailed) || strings.Contains(call.ReasonProviderFailed, " ") {
		t.Errorf("RetryableFailure(%q) = false, want true (the sandbox's failure)", call.ReasonProviderFailed)
	}
}

func TestCounters(t *testing.T) {
	now := utc(t, "2026-11-27T12:00:00Z")
	as := []schedule.Attempt{
		{State: schedule.Pending},
		{State: schedule.Pending, LeasedUntil: now.Add(time.Second)},
		{State: schedule.Pending, LeasedUntil: now.Add(-time.Second)},
		{State: schedule.Dialed, CallStatus: int(call.InProgress)},
		{State: schedule.Dialed, CallStatus: int(call.Ended), CallOutcome: "busy"},
		{State: schedule.Dialed, CallStatus: int(call.Ended), CallOutcome: "completed"},
		{State: schedule.Dialed, CallStatus: int(call.Ended), CallOutcome: "completed"},
		{State: schedule.Canceled}, {State: schedule.Failed}, {State: "suppressed"},
	}
	c := schedule.Count(as, now)
	if c.Pending != 2 || c.Dialing != 2 || c.Completed["busy"] != 1 || c.Completed["completed"] != 2 || c.Canceled != 1 || c.Failed != 1 || c.Suppressed != 1 {
		t.Errorf("Count = %+v", c)
	}
	if got := (schedule.Caps{PerOrg: 10}).Lower(schedule.Caps{PerOrg: 3, PerNumber: 2}); got != (schedule.Caps{PerOrg: 3, PerNumber: 2}) {
		t.Errorf("Caps.Lower = %+v", got)
	}
}
