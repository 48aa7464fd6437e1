package configs

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

type rawSchedule struct {
	Jobs     *[]rawJob `yaml:"jobs"` // nil: left out, so the default job
	LockWait yaml.Node `yaml:"lock_wait"`
	Grace    yaml.Node `yaml:"grace"`
}

type rawJob struct {
	Name yaml.Node `yaml:"name"`
	Cron yaml.Node `yaml:"cron"`
	Run  yaml.Node `yaml:"run"`
}

var jobSteps = []string{"fetch", "report", "close", "deliver", "alerts", "export"}

func (p *parser) schedule(r *rawSchedule, c *ScheduleConfig) {
	c.LockWait = p.duration(&r.LockWait, "schedule.lock_wait", DefaultLockWait, false, 24*time.Hour, "10m")
	c.Grace = p.duration(&r.Grace, "schedule.grace", DefaultGrace, false, time.Hour, "30s")
	if r.Jobs == nil {
		c.Jobs = DefaultJobs()
		return
	}
	c.Jobs = []Job{}
	names := map[string]bool{}
	for i := range *r.Jobs {
		rj := &(*r.Jobs)[i]
		path := fmt.Sprintf("schedule.jobs[%d]", i)
		if p.dropped[path] {
			continue
		}
		j := Job{
			Name: p.text(&rj.Name, path+".name", ""),
			Cron: strings.TrimSpace(p.text(&rj.Cron, path+".cron", "")),
		}
		switch {
		case j.Name == "":
			p.addf(deref(&rj.Name), path+".name", "missing; give the job a name, e.g. nightly")
		case names[j.Name]:
			p.addf(deref(&rj.Name), path+".name", "%q is the name of another job; names must be unique", j.Name)
		}
		names[j.Name] = true
		if j.Cron == "" {
			p.addf(deref(&rj.Cron), path+".cron", `missing; give a cron spec, e.g. "CRON_TZ=UTC 30 2 * * *"`)
		} else if _, err := ParseCron(j.Cron); err != nil {
			p.addf(deref(&rj.Cron), path+".cron", "job %q: %v", j.Name, err)
		}
		j.Run = p.list(&rj.Run, path+".run", func(s string) string {
			if !slices.Contains(jobSteps, s) {
				return "is not one of " + strings.Join(jobSteps, ", ")
			}
			return ""
		})
		if run := deref(&rj.Run); isNull(run) || (run.Kind == yaml.SequenceNode && len(run.Content) == 0) {
			p.addf(run, path+".run", "missing; list the steps, e.g. [fetch, report]")
		}
		c.Jobs = append(c.Jobs, j)
	}
}

type rawExport struct {
	Dir      yaml.Node `yaml:"dir"`
	Format   yaml.Node `yaml:"format"`
	FOCUSCSV yaml.Node `yaml:"focus_csv"`
	CSVRaw   yaml.Node `yaml:"csv_raw"`
}

func (p *parser) export(r *rawExport, c *ExportConfig) {
	c.Dir = p.path(p.text(&r.Dir, "export.dir", DefaultExportDir))
	c.Format = ExportParquet
	switch f := p.text(&r.Format, "export.format", ExportParquet); f {
	case ExportParquet, ExportFOCUS:
		c.Format = f
	default:
		p.addf(deref(&r.Format), "export.format", "%q is not one of parquet, focus", f)
	}
	c.FOCUSCSV = p.boolean(&r.FOCUSCSV, "export.focus_csv")
	c.CSVRaw = p.boolean(&r.CSVRaw, "export.csv_raw")
}
