package ice

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/tally-dev/tally/lake"
)

// Files lists the data files of the table's current snapshot by
// partition, for a reader that reads them itself (usage.source lake). A
// table the catalog lacks is not an error: Found says so.
func (l *Lake) Files(ctx context.Context, name string) (lake.Files, error) {
	out := lake.Files{Table: l.namespace + "." + name}
	t, err := l.cat.LoadTable(ctx, l.ident(name))
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("load table %s: %w", out.Table, err)
	}
	out.Found = true
	snap := t.CurrentSnapshot()
	if snap == nil {
		return out, nil
	}
	out.SnapshotID = snap.SnapshotID
	orgID, monthID := partitionFieldIDs(t)
	tasks, err := t.Scan().PlanFiles(ctx)
	if err != nil {
		return out, fmt.Errorf("plan the files of %s: %w", out.Table, err)
	}
	byKey := map[string]*lake.PartitionFiles{}
	for _, task := range tasks {
		// A delete file would change what a data file holds: Tally's
		// commits write none, and a reader of bare files would get such a
		// table wrong, so it is refused rather than misread.
		if len(task.DeleteFiles) > 0 {
			return out, fmt.Errorf("table %s holds delete files (another writer's row-level deletes): read it through an Iceberg engine", out.Table)
		}
		pv := task.File.Partition()
		org, ok1 := pv[orgID].(string)
		month, ok2 := pv[monthID].(int32)
		if !ok1 || !ok2 {
			return out, fmt.Errorf("table %s: file %s has no organization and month partition", out.Table, task.File.FilePath())
		}
		k := partKey(org, month)
		p := byKey[k]
		if p == nil {
			p = &lake.PartitionFiles{Partition: lake.Partition{Organization: org, Month: time.Date(1970, time.Month(1+month), 1, 0, 0, 0, 0, time.UTC)}}
			byKey[k] = p
		}
		p.Files = append(p.Files, task.File.FilePath())
		p.Rows += task.File.Count()
	}
	for _, p := range byKey {
		slices.Sort(p.Files)
		out.Partitions = append(out.Partitions, *p)
	}
	slices.SortFunc(out.Partitions, func(a, b lake.PartitionFiles) int {
		if c := a.Month.Compare(b.Month); c != 0 {
			return c
		}
		return strings.Compare(a.Organization, b.Organization)
	})
	return out, nil
}
