package store

import (
	"context"

	"switchboard/internal/phone"
)

// Contacts is the people a purchased number calls (phone.Contact).
type Contacts interface {
	// AddContacts adds contacts to a purchase in one transaction. Contacts
	// whose number is already on the purchase (or earlier in the batch) are
	// not added; their indexes in cs are returned as duplicates.
	AddContacts(ctx context.Context, orgID, purchaseID string, cs []phone.Contact) (created []phone.Contact, duplicates []int, err error)
	ListContacts(ctx context.Context, orgID, purchaseID string, p Page) ([]phone.Contact, int, error)
	DeleteContact(ctx context.Context, orgID, purchaseID, contactID string) error
	GetContact(ctx context.Context, orgID, id string) (phone.Contact, error)
	// ContactByNumber returns the purchase's contact whose phone number is
	// number (E.164); NotFound when it has none. A phone call's variables
	// name the contact it reaches (or that calls in).
	ContactByNumber(ctx context.Context, orgID, purchaseID, number string) (phone.Contact, error)

	// ContactZones returns the timezone of each id in ids that is a
	// contact of the purchase ("" when it has none); other ids are absent
	// (docs/ARCHITECTURE.md, "Campaign settings").
	ContactZones(ctx context.Context, orgID, purchaseID string, ids []string) (map[string]string, error)
}
