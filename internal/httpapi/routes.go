package httpapi

import (
	"net/http"

	"switchboard/internal/auth"
)

// table lists every route of the API. The OpenAPI document must describe
// each one (a test checks).
func (s *Server) table() []route {
	return []route{
		{method: http.MethodGet, path: "/v1/calls", scope: auth.CallsRead, h: s.listCalls},
		{method: http.MethodPost, path: "/v1/calls/initiate", scope: auth.CallsWrite, body: jsonBody, create: true, publishable: true, h: s.initiateWebCall},
		{method: http.MethodPost, path: "/v1/calls/phone/initiate", scope: auth.CallsWrite, body: jsonBody, create: true, h: s.initiatePhoneCall},
		{method: http.MethodGet, path: "/v1/calls/{id}", scope: auth.CallsRead, h: s.getCall},
		{method: http.MethodGet, path: "/v1/calls/{id}/transcripts", scope: auth.CallsRead, h: s.getTranscripts},
		{method: http.MethodGet, path: "/v1/calls/{id}/analysis", scope: auth.CallsRead, h: s.getAnalysis},
		{method: http.MethodGet, path: "/v1/calls/{id}/recording", scope: auth.CallsRead, h: s.getRecording},
		{method: http.MethodPost, path: "/v1/calls/{id}/end", scope: auth.CallsWrite, h: s.endCall},
		{method: http.MethodPost, path: "/v1/calls/{id}/say", scope: auth.CallsWrite, body: jsonBody, h: s.sayOnCall},
		{method: http.MethodPost, path: "/v1/calls/{id}/transfer", scope: auth.CallsWrite, body: jsonBody, h: s.transferCall},
		{method: http.MethodPost, path: "/v1/sandbox/calls", scope: auth.CallsWrite, body: jsonBody, h: s.sandboxCallIn},

		{method: http.MethodGet, path: "/v1/phone/numbers", scope: auth.PhoneRead, h: s.listNumbers},
		{method: http.MethodGet, path: "/v1/phone/connections", scope: auth.PhoneRead, h: s.listConnections},
		{method: http.MethodPost, path: "/v1/phone/connections", scope: auth.PhoneWrite, body: jsonBody, create: true, secretBody: true, h: s.createConnection},
		{method: http.MethodGet, path: "/v1/phone/connections/{id}", scope: auth.PhoneRead, h: s.getConnection},
		{method: http.MethodDelete, path: "/v1/phone/connections/{id}", scope: auth.PhoneWrite, h: s.deleteConnection},
		{method: http.MethodGet, path: "/v1/phone/purchases", scope: auth.PhoneRead, h: s.listPurchases},
		{method: http.MethodPost, path: "/v1/phone/purchases", scope: auth.PhoneWrite, body: jsonBody, create: true, h: s.createPurchase},
		{method: http.MethodDelete, path: "/v1/phone/purchases/{id}", scope: auth.PhoneWrite, h: s.releasePurchase},
		{method: http.MethodGet, path: "/v1/phone/contacts/{id}", scope: auth.PhoneRead, h: s.listContacts},
		{method: http.MethodPost, path: "/v1/phone/contacts/{id}", scope: auth.PhoneWrite, body: jsonOrCSVBody, create: true, h: s.addContacts},
		{method: http.MethodDelete, path: "/v1/phone/contacts/{id}/{contactId}", scope: auth.PhoneWrite, h: s.deleteContact},
		{method: http.MethodPost, path: "/v1/phone/allocate-assistant", scope: auth.PhoneWrite, body: jsonBody, h: s.allocateAssistant},
		{method: http.MethodPost, path: "/v1/phone/schedule-call", scope: auth.PhoneWrite, body: jsonBody, create: true, h: s.scheduleCall},
		{method: http.MethodGet, path: "/v1/phone/schedules", scope: auth.PhoneRead, h: s.listSchedules},
		{method: http.MethodGet, path: "/v1/phone/schedules/{id}", scope: auth.PhoneRead, h: s.getSchedule},
		{method: http.MethodPost, path: "/v1/phone/schedules/{id}/cancel", scope: auth.PhoneWrite, body: optionalJSONBody, h: s.cancelSchedule},
		{method: http.MethodPost, path: "/v1/phone/schedules/{id}/pause", scope: auth.PhoneWrite, body: optionalJSONBody, h: s.pauseSchedule},
		{method: http.MethodPost, path: "/v1/phone/schedules/{id}/resume", scope: auth.PhoneWrite, body: optionalJSONBody, h: s.resumeSchedule},
		{method: http.MethodGet, path: "/v1/organization", scope: auth.PhoneRead, h: s.getOrganization},
		{method: http.MethodPatch, path: "/v1/organization", scope: auth.PhoneWrite, body: jsonBody, h: s.updateOrganization},
		{method: http.MethodGet, path: "/v1/phone/dnc", scope: auth.PhoneRead, h: s.listDNC},
		{method: http.MethodPost, path: "/v1/phone/dnc", scope: auth.PhoneWrite, body: jsonBody, create: true, h: s.addDNC},
		{method: http.MethodDelete, path: "/v1/phone/dnc/{number}", scope: auth.PhoneWrite, h: s.deleteDNC},

		{method: http.MethodGet, path: "/v1/assistants", scope: auth.AssistantsRead, h: s.listAssistants},
		{method: http.MethodPost, path: "/v1/assistants", scope: auth.AssistantsWrite, body: jsonBody, create: true, h: s.createAssistant},
		{method: http.MethodGet, path: "/v1/assistants/{id}", scope: auth.AssistantsRead, h: s.getAssistant},
		{method: http.MethodPatch, path: "/v1/assistants/{id}", scope: auth.AssistantsWrite, body: jsonBody, h: s.updateAssistant},
		{method: http.MethodDelete, path: "/v1/assistants/{id}", scope: auth.AssistantsWrite, h: s.deleteAssistant},
		{method: http.MethodGet, path: "/v1/providers", scope: auth.AssistantsRead, h: s.listProviders},

		{method: http.MethodGet, path: "/v1/webhooks", scope: auth.WebhooksRead, h: s.listWebhooks},
		{method: http.MethodPost, path: "/v1/webhooks", scope: auth.WebhooksWrite, body: jsonBody, create: true, h: s.createWebhook},
		{method: http.MethodDelete, path: "/v1/webhooks/{id}", scope: auth.WebhooksWrite, h: s.deleteWebhook},
		{method: http.MethodPost, path: "/v1/webhooks/{id}/rotate-secret", scope: auth.WebhooksWrite, body: optionalJSONBody, h: s.rotateWebhookSecret},
		{method: http.MethodGet, path: "/v1/webhooks/{id}/deliveries", scope: auth.WebhooksRead, h: s.listDeliveries},
		{method: http.MethodPost, path: "/v1/webhooks/{id}/deliveries/{messageId}/redeliver", scope: auth.WebhooksWrite, body: optionalJSONBody, h: s.redeliver},
		{method: http.MethodGet, path: "/v1/webhooks/{id}/listen", scope: auth.WebhooksWrite, h: s.listenWebhook},

		{method: http.MethodGet, path: "/v1/public-keys", scope: auth.KeysRead, h: s.listPublicKeys},
		{method: http.MethodPost, path: "/v1/public-keys", scope: auth.KeysWrite, body: jsonBody, h: s.createPublicKey},
		{method: http.MethodGet, path: "/v1/public-keys/{id}", scope: auth.KeysRead, h: s.getPublicKey},
		{method: http.MethodDelete, path: "/v1/public-keys/{id}", scope: auth.KeysWrite, h: s.revokePublicKey},

		{method: http.MethodGet, path: "/v1/openapi.json", h: s.openAPI},
	}
}
