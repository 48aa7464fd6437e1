package export

import (
	"embed"
	"fmt"
)

// sqlFiles are the export's own SQL: the FOCUS 1.3 mapping over the focus
// view's rows (the 1.2 mapping, sql/views/focus.sql), the session
// variables it looks up and the macros it shares.
//
//go:embed sql/*.sql
var sqlFiles embed.FS

// sqlText is the text of the export's SQL file name. The files are
// embedded in the binary; a name that is not among them is a mistake in
// this package, which its tests catch at once.
func sqlText(name string) string {
	b, err := sqlFiles.ReadFile("sql/" + name)
	if err != nil {
		panic(fmt.Sprintf("export: no SQL file %s: %v", name, err))
	}
	return string(b)
}
