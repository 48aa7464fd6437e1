package sql

import (
	"reflect"
	"testing"
)

func TestComments(t *testing.T) {
	text := `-- 0009: a file header, not a table's description.

-- One row per thing.
-- Second line.
--
-- For the SQL's readers only.
CREATE TABLE things (
    id    UUID NOT NULL, -- the thing's id
    "end" DATE,          -- day after, exclusive
    plain VARCHAR,
    PRIMARY KEY (id)     -- not a column
);

CREATE TABLE bare (x INT);

-- thing_view: what each thing is.
CREATE OR REPLACE VIEW thing_view AS
SELECT id, -- same id
       u.name AS label,   -- shown to people
       sum(cost) AS cost, -- exact
       plain
FROM things u; -- not a column
`
	want := []Comment{
		{"TABLE", "things", "", "One row per thing. Second line."},
		{"TABLE", "things", "id", "the thing's id"},
		{"TABLE", "things", "end", "day after, exclusive"},
		{"VIEW", "thing_view", "", "what each thing is."},
		{"VIEW", "thing_view", "id", "same id"},
		{"VIEW", "thing_view", "label", "shown to people"},
		{"VIEW", "thing_view", "cost", "exact"},
	}
	if got := Comments(text); !reflect.DeepEqual(got, want) {
		t.Errorf("Comments:\n%+v\nwant\n%+v", got, want)
	}
}
