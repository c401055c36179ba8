package store

import (
	"context"

	"switchboard/internal/assistant"
)

// Assistants is the organizations' assistants.
type Assistants interface {
	CreateAssistant(ctx context.Context, a assistant.Assistant) error

	// AssistantNames gives the names of the organization's assistants
	// among ids, by id (an id not the organization's is absent).
	AssistantNames(ctx context.Context, orgID string, ids []string) (map[string]string, error)
	GetAssistant(ctx context.Context, orgID, id string) (assistant.Assistant, error)
	ListAssistants(ctx context.Context, orgID string, p Page) ([]assistant.Assistant, int, error)
	UpdateAssistant(ctx context.Context, a assistant.Assistant) error

	// DeleteAssistant is a Conflict while a purchased number uses the assistant.
	DeleteAssistant(ctx context.Context, orgID, id string) error
}
