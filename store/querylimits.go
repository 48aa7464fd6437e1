package store

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// QueryLimits bound what one analyst's query (tally query) may take.
type QueryLimits struct {
	// MemoryBytes is DuckDB's memory_limit for the query; 0 means
	// DefaultQueryMemory. A query that needs more fails with an error
	// naming the limit: nothing spills to disk.
	MemoryBytes int64
}

// Floor and fallback of DefaultQueryMemory.
const (
	minQueryMemory      = 256 << 20
	fallbackQueryMemory = 1 << 30
)

// DefaultQueryMemory is a quarter of the memory this process may use: the
// machine's (MemTotal of /proc/meminfo) or its container's (the cgroup's
// memory.max), whichever is smaller; at least 256 MiB, and 1 GiB where
// neither can be read. DuckDB's own default, 80 % of the machine, lets one
// careless query push the nightly job and everything else into swap.
func DefaultQueryMemory() int64 {
	total := memTotal()
	if c := cgroupLimit(); c > 0 && (total == 0 || c < total) {
		total = c
	}
	if total == 0 {
		return fallbackQueryMemory
	}
	return max(total/4, minQueryMemory)
}

func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// cgroupLimit is the cgroup v2 memory.max of this process, 0 for none.
func cgroupLimit() int64 {
	b, err := os.ReadFile("/sys/fs/cgroup/memory.max")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0 // "max"
	}
	return n
}

// ParseSize reads a memory size as people write it: a number with an
// optional unit B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB
// (powers of 1024), case and spaces aside: "2GiB", "512 MB".
func ParseSize(s string) (int64, bool) {
	t := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), " ", ""))
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], t[i:]
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 {
		return 0, false
	}
	mult := map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}[unit]
	if mult == 0 || f*mult >= 1<<62 {
		return 0, false
	}
	return int64(f * mult), true
}

// FormatSize writes n bytes in the largest binary unit that keeps one
// decimal: "1.5 GiB".
func FormatSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatInt(n, 10) + " B"
	}
	return strings.TrimSuffix(strconv.FormatFloat(f, 'f', 1, 64), ".0") + " " + units[i]
}
