package httpapi

import "switchboard/internal/jsonobj"

// object reads a JSON body field by field (package jsonobj, shared with
// the dashboard), so every bad field is reported at once.
type object = jsonobj.Object

// parseObject parses a request body as a JSON object (jsonobj.Parse).
func parseObject(body []byte) (*object, error) { return jsonobj.Parse(body) }
