package store

import (
	"context"

	"switchboard/internal/phone"
)

// DoNotCall is the do-not-call list (phone.DNCEntry), one entry per
// (organization, number).
type DoNotCall interface {
	// AddDNC lists the entries' numbers (E.164, each once) for orgID in
	// one transaction. A number already listed keeps its first entry (its
	// index is in Listed). It takes the lock CreateCall's check takes on
	// each number, in sorted order, and reports the calls to the added
	// numbers that were live (not ended) then: every dial of them claimed
	// later is suppressed.
	AddDNC(ctx context.Context, orgID string, entries []phone.DNCEntry) (DNCAdded, error)

	// ListDNC returns a page of the organization's list, newest first, and
	// its total; search, when not empty, keeps the numbers that contain it.
	ListDNC(ctx context.Context, orgID, search string, p Page) ([]phone.DNCEntry, int, error)

	// DeleteDNC takes number off the organization's list; NotFound when
	// it is not on it.
	DeleteDNC(ctx context.Context, orgID, number string) error
}

// DNCAdded is what AddDNC did.
type DNCAdded struct {
	// Added are the entries stored, in the order given.
	Added []phone.DNCEntry
	// Listed are the indexes of the entries whose number was already listed.
	Listed []int
	// LiveCalls are, by added number, the ids of its calls that were not
	// ended when it was added (a call in progress is not cut; the caller
	// may end it).
	LiveCalls map[string][]string
}
