package ui

import "net/http"

// routes is the dashboard: one row per page or action. To add a page,
// add its handler (a file per concept: calls.go, …), its template
// (templates/NAME.html defining "content"), and a row here; a section of
// the navigation is a row of nav. Every row but the public ones requires a
// signed-in operator, and every method but GET requires the form's CSRF
// token from this site (wrap), so handlers only read r.op.OrgID and
// scope every store call with it.
func (s *Server) routes() []route {
	return []route{
		{pattern: "GET /ui/{$}", h: func(w http.ResponseWriter, r *request) error {
			http.Redirect(w, r.Request, "/ui/overview", http.StatusSeeOther)
			return nil
		}},
		{pattern: "GET /ui/static/{file}", public: true, h: s.static},
		{pattern: "GET /ui/login", public: true, h: s.loginPage},
		{pattern: "POST /ui/login", public: true, h: s.login},
		{pattern: "POST /ui/logout", h: s.logout},
		{pattern: "GET /ui/events", h: s.events},

		{pattern: "GET /ui/overview", h: s.overview},
		{pattern: "GET /ui/calls", h: s.listCalls},
		{pattern: "GET /ui/calls.csv", h: s.exportCalls},
		{pattern: "GET /ui/calls/{id}", h: s.showCall},
		{pattern: "GET /ui/test-call", h: s.testCall},
		{pattern: "POST /ui/test-call/phone", h: s.placeTestPhoneCall},
		{pattern: "POST /ui/test-call/web", h: s.startTestWebCall},
		{pattern: "GET /ui/calls/{id}/recording", h: s.callRecording},

		{pattern: "GET /ui/contacts", h: s.listContactNumbers},
		{pattern: "GET /ui/contacts/{id}", h: s.showContacts},
		{pattern: "POST /ui/contacts/{id}", h: s.addContact},
		{pattern: "POST /ui/contacts/{id}/import", maxForm: maxContactsUpload, upload: true, h: s.importContacts},
		{pattern: "POST /ui/contacts/{id}/{contact}/delete", h: s.deleteContact},

		{pattern: "GET /ui/schedules", h: s.listSchedules},
		{pattern: "GET /ui/schedules/{id}", h: s.showSchedule},
		{pattern: "POST /ui/schedules/{id}/cancel", h: s.cancelSchedule},

		{pattern: "GET /ui/webhooks", h: s.listWebhooks},
		{pattern: "POST /ui/webhooks", h: s.createWebhook},
		{pattern: "GET /ui/webhooks/{id}", h: s.showWebhook},
		{pattern: "POST /ui/webhooks/{id}/delete", h: s.deleteWebhook},
		{pattern: "POST /ui/webhooks/{id}/deliveries/{message}/redeliver", h: s.redeliver},

		{pattern: "GET /ui/keys", h: s.listKeys},
		{pattern: "POST /ui/keys", h: s.createKey},
		{pattern: "POST /ui/keys/{id}/revoke", h: s.revokeKey},
		{pattern: "GET /ui/public-keys", h: s.listPublicKeys},
		{pattern: "POST /ui/public-keys", h: s.createPublicKey},
		{pattern: "POST /ui/public-keys/{id}/revoke", h: s.revokePublicKey},

		{pattern: "GET /ui/numbers", h: s.listNumbers},
		{pattern: "POST /ui/numbers/buy", h: s.buyNumber},
		{pattern: "POST /ui/numbers/{id}/allocate", h: s.allocate},
		{pattern: "POST /ui/numbers/{id}/release", h: s.releaseNumber},
		{pattern: "POST /ui/connections", h: s.createConnection},
		{pattern: "POST /ui/connections/{id}/delete", h: s.deleteConnection},
		{pattern: "POST /ui/routing", h: s.saveRouting},
		{pattern: "POST /ui/routing/remove", h: s.removeRouting},

		{pattern: "GET /ui/assistants", h: s.listAssistants},
		{pattern: "GET /ui/assistants/new", h: s.newAssistant},
		{pattern: "POST /ui/assistants", maxForm: maxAssistantForm, h: s.saveAssistant},
		{pattern: "GET /ui/assistants/{id}", h: s.showAssistant},
		{pattern: "POST /ui/assistants/{id}", maxForm: maxAssistantForm, h: s.saveAssistant},
		{pattern: "POST /ui/assistants/{id}/delete", h: s.deleteAssistant},
		{pattern: "POST /ui/assistants/{id}/talk", h: s.talkToAssistant},
	}
}

// navItem is a section of the navigation bar.
type navItem struct {
	Key, Label, Path string
}

// nav is the navigation bar, in order; view.Nav names the current item.
var nav = []navItem{
	{"overview", "Overview", "/ui/overview"},
	{"calls", "Calls", "/ui/calls"},
	{"assistants", "Assistants", "/ui/assistants"},
	{"numbers", "Numbers", "/ui/numbers"},
	{"contacts", "Contacts", "/ui/contacts"},
	{"schedules", "Schedules", "/ui/schedules"},
	{"webhooks", "Webhooks", "/ui/webhooks"},
	{"keys", "API keys", "/ui/keys"},
	{"publickeys", "Publishable keys", "/ui/public-keys"},
}
