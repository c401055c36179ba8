// Package migrations embeds the schema migrations (goose format). One set of
// files serves SQLite and PostgreSQL: the SQL sticks to what both accept.
package migrations

import "embed"

// FS holds the *.sql migrations.
//
//go:embed *.sql
var FS embed.FS
