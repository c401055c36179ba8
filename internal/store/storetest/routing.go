package storetest

import (
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/phone"
	"switchboard/internal/routing"
)

// testAssistantRequests: an organization has at most one routing
// endpoint, replaced by a second set and gone after a delete; another
// organization sees none of it. DNCListed answers for one number of one
// organization.
func testAssistantRequests(t *testing.T, open Opener) {
	t.Run("SetGetDelete", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		_, err := s.GetAssistantRequest(ctx, o.ID)
		wantKind(t, "GetAssistantRequest(none set)", err, apperr.NotFound)
		e := routing.Endpoint{OrgID: o.ID, URL: "https://route.example.com/a", Timeout: 1500 * time.Millisecond, Secret: "whsec_a", UpdatedAt: at(time.Second)}
		must(t, "SetAssistantRequest", s.SetAssistantRequest(ctx, e))
		got, err := s.GetAssistantRequest(ctx, o.ID)
		must(t, "GetAssistantRequest", err)
		got.UpdatedAt = msTime(got.UpdatedAt)
		e.UpdatedAt = msTime(e.UpdatedAt)
		equal(t, "GetAssistantRequest after Set", got, e)
		e2 := routing.Endpoint{OrgID: o.ID, URL: "https://route.example.com/b", Timeout: 300 * time.Millisecond, Secret: "whsec_b", UpdatedAt: at(2 * time.Second)}
		must(t, "SetAssistantRequest (replace)", s.SetAssistantRequest(ctx, e2))
		got, err = s.GetAssistantRequest(ctx, o.ID)
		must(t, "GetAssistantRequest", err)
		if got.URL != e2.URL || got.Timeout != e2.Timeout || got.Secret != e2.Secret {
			t.Errorf("GetAssistantRequest after a second Set = %+v, want %+v", got, e2)
		}
		_, err = s.GetAssistantRequest(ctx, other.ID)
		wantKind(t, "GetAssistantRequest(other org)", err, apperr.NotFound)
		must(t, "DeleteAssistantRequest(other org)", s.DeleteAssistantRequest(ctx, other.ID))
		must(t, "DeleteAssistantRequest", s.DeleteAssistantRequest(ctx, o.ID))
		_, err = s.GetAssistantRequest(ctx, o.ID)
		wantKind(t, "GetAssistantRequest after Delete", err, apperr.NotFound)
		must(t, "DeleteAssistantRequest (none left)", s.DeleteAssistantRequest(ctx, o.ID))
	})
	t.Run("DNCListed", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		mustAddDNC(t, s, o.ID, newDNC(number(1), "", phone.DNCSourceAPI, "", at(time.Second)))
		for _, tc := range []struct {
			org, number string
			want        bool
		}{{o.ID, number(1), true}, {o.ID, number(2), false}, {other.ID, number(1), false}} {
			got, err := s.DNCListed(ctx, tc.org, tc.number)
			must(t, "DNCListed", err)
			if got != tc.want {
				t.Errorf("DNCListed(%s, %s) = %v, want %v", tc.org, tc.number, got, tc.want)
			}
		}
	})
}
