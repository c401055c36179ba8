package app

import (
	"net/http"

	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/webhook"
)

// toolsFor makes the HTTP tool runner of an assistant.
func toolsFor(guard webhook.Guard) func(c call.Call, a assistant.Assistant) conversation.ToolRunner {
	client := &http.Client{Transport: guard.Transport()}
	return func(c call.Call, a assistant.Assistant) conversation.ToolRunner {
		return &conversation.HTTPTools{Tools: a.Tools, Secret: a.ToolSecret, CallID: c.ID, Client: client}
	}
}
