package ice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"

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

// Download copies files, data files under the table's data folder (on S3,
// which tally cannot read), into the local folder dir, through the
// table's own IO, and says where each went. A file outside the data
// folder is refused before anything is copied.
func (l *Lake) Download(ctx context.Context, name string, files []string, dir string) (lake.Downloaded, error) {
	out := lake.Downloaded{Files: map[string]string{}}
	t, err := l.cat.LoadTable(ctx, l.ident(name))
	if err != nil {
		return out, fmt.Errorf("load table %s.%s: %w", l.namespace, name, err)
	}
	data := strings.TrimRight(t.Location(), "/") + "/data/"
	for _, f := range files {
		if !strings.HasPrefix(f, data) || strings.Contains(f[len(data):], "..") {
			return out, fmt.Errorf("download %s: not under the table's data folder %s", f, data)
		}
	}
	if !filepath.IsAbs(dir) {
		return out, fmt.Errorf("download: the folder %q must be an absolute path", dir)
	}
	fsys, err := t.FS(ctx)
	if err != nil {
		return out, fmt.Errorf("open the storage of %s: %w", t.Location(), err)
	}
	for i, f := range files {
		local := filepath.Join(dir, fmt.Sprintf("%05d-%s", i, path.Base(f)))
		if err := copyFrom(fsys, f, local); err != nil {
			return out, fmt.Errorf("download %s: %w", f, err)
		}
		out.Files[f] = local
	}
	return out, nil
}

func copyFrom(fsys iceio.IO, from, to string) error {
	in, err := fsys.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
