#!/usr/bin/env bash
# Performance bench (issue 7): Tally measured side by side with what the
# same work costs without it, alternating runs, medians, ratios, peak RSS.
#
#   fetch        tally fetch of ROWS usage rows served as pages of 10,000 over
#                loopback, end to end into an on-disk database, against
#                DuckDB's own read_json loading the same page files from disk.
#   report       tally report of that month, against excelize's StreamWriter
#                writing the same Detail cells and nothing else (up to
#                1,048,575 rows: one sheet's worth).
#   incremental  the nightly run (tally run) with two years loaded and with two
#                months loaded, against the simulated interface; and the
#                backfill's requests against the planner's windows.
#   scale        (not in the default set) a month's work with MONTHS of history
#                against the same work with that month alone: one month of
#                ROWS hourly rows is loaded by tally fetch (ledger, snapshots,
#                published copy), then copied to each of the MONTHS months up to
#                the current one (benchtool history: dates and ledger windows
#                shifted). Times the current month's workbook with and without
#                a budget, tally status, tally alerts --dry-run, a count(*) of
#                every view in sql/views, every named query in sql/queries, and
#                the nightly tally run (lookback fetch from the simulated
#                interface, the current month's workbook, alerts), and
#                tally export --format iceberg: the whole history into a new
#                lake before the nightly run, then what the night changed
#                (issue 41: within 1.2x of the month alone), and the
#                Parquet export of the whole history beside the lake's first
#                commit of it (issue 41: at most 1.5x at one month); prints
#                seconds, peak RSS and the ratio history/alone.
#   lake         (not in the default set) eight shards, each its own store,
#                committing at once into one new catalog, SQLite and then
#                PostgreSQL (the export package's BenchmarkShardsCommitAtOnce):
#                every one lands; the redos after lost races per shard.
#
# Usage: scripts/bench.sh [--rows N] [--runs N] [--windows N] [--months N] [--only fetch,report,incremental,scale,lake,orgs]
#                         [--sep compact|python] [--pairs PROJECTSxMETERS] [--page N] [--content-length]
#   --rows 5000000 --only fetch              the memory check at five million rows
#   --sep python --pairs 34x40 --content-length --only fetch
#                                            pages as Python's json.dump writes them (", " and ": ",
#                                            one line), 1,360 project-meter pairs, served with
#                                            Content-Length as Go's file server does
#   --only scale --months 24                 24 months of 1,000,000 rows (24M rows)
#   --only scale --months 24 --rows 250000   the same at a quarter of the size
#   --only orgs                              50 and 200 organizations, 30 and 120 days of history each
#
# The page files: --sep compact (the default) writes a row a line with ","
# and ":"; --pairs PxM cycles the rows through P projects × M meters (by
# default each hour has as many projects of six meters as its rows need);
# --page sets the rows a page (10,000); --content-length serves them with
# their length (http.ServeContent) instead of chunked.
#
# Everything goes under bench-out/ (git-ignored): binaries, page files (about
# 465 bytes a row), databases, workbooks, logs.
set -euo pipefail
cd "$(dirname "$0")/.."

rows=1000000
runs=3
windows=1
months=24
only=fetch,report,incremental
sep=compact
pairs=""
page=10000
content_length=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) rows=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --windows) windows=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --months) months=$2; shift 2 ;;
    --sep) sep=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --page) page=$2; shift 2 ;;
    --content-length) content_length=-content-length; shift ;;
    -h|--help) sed -n '2,45p' "$0"; exit 0 ;;
    *) echo "bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
wants() { case ",$only," in *",$1,"*) return 0 ;; esac; return 1; }

out=bench-out
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [ ! -x /usr/bin/time ]; then
  echo "== installing GNU time (peak RSS comes from /usr/bin/time -v)"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q time
fi

echo "== build"
go build -o "$out/tally" ./cmd/tally
go build -o "$out/tally-lake" ./cmd/tally-lake # beside tally, where it finds it
go build -o "$out/benchtool" ./scripts/benchtool
export TALLY_BENCH_TOKEN=bench-token # the benchtool server's token (scripts/benchtool)

# measure LOG CMD...: runs CMD, its output to LOG, and prints "seconds peak_kb".
measure() {
  local log=$1; shift
  local t="$log.time"
  if ! /usr/bin/time -v -o "$t" "$@" >"$log" 2>&1; then
    echo "bench: $* failed; see $log" >&2
    tail -5 "$log" >&2
    exit 1
  fi
  local wall kb
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$t")
  kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$t")
  # h:mm:ss or m:ss.ss to seconds
  echo "$wall" | awk -F: -v kb="$kb" '{s=0; for (i=1; i<=NF; i++) s=s*60+$i; printf "%.2f %d\n", s, kb}'
}

# cpu LOG: the user+system CPU seconds of the last measure of LOG.
cpu() { awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f\n", s}' "$1.time"; }

median() { sort -n | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else printf "%.2f\n", (v[NR/2]+v[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }
mb() { awk -v k="$1" 'BEGIN {printf "%.0f", k/1024}'; }

server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap stop_server EXIT

# start_server ADDRFILE ARGS...: starts benchtool serve, waits for its address.
start_server() {
  local addr=$1; shift
  rm -f "$addr"
  "$out/benchtool" serve -addr-file "$addr" "$@" >"$addr.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do
    [ -s "$addr" ] && return 0
    sleep 0.1
  done
  echo "bench: the server did not start; see $addr.log" >&2
  exit 1
}

gen_args=(-sep "$sep" -page "$page")
pages="$out/pages-$rows-w$windows"
[ "$sep" != compact ] && pages="$pages-$sep"
[ "$page" != 10000 ] && pages="$pages-p$page"
if [ -n "$pairs" ]; then
  case "$pairs" in
    *x*) gen_args+=(-projects "${pairs%x*}" -meters "${pairs#*x}") ;;
    *) echo "bench: --pairs $pairs: give projects x meters, such as 34x40" >&2; exit 2 ;;
  esac
  pages="$pages-$pairs"
fi
month=2026-01
cfg="$out/bench.yaml"
results="$out/results-$rows.txt"
: >"$results"

fetch_once() { # a fresh database, one tally fetch; prints "seconds peak_kb"
  rm -rf "$out/fetch"
  mkdir -p "$out/fetch"
  local m
  m=$(measure "$out/fetch.log" "$out/tally" fetch --config "$cfg" --from "$month-01" --to 2026-02-01 --log-format json)
  if ! grep -q "^rows: $rows " "$out/fetch.log"; then
    echo "bench: tally fetch did not load $rows rows; see $out/fetch.log" >&2
    exit 1
  fi
  echo "$m"
}

if wants fetch || wants report || wants scale; then
  echo "== pages: $rows rows, $windows window(s), pages of $page, $sep separators${pairs:+, $pairs project-meter pairs}${content_length:+, served with Content-Length}"
  "$out/benchtool" gen -dir "$pages" -rows "$rows" -windows "$windows" -month "$month" "${gen_args[@]}"
  start_server "$out/serve.addr" -dir "$pages" $content_length
  base=$(cat "$out/serve.addr")
  window=""
  [ "$windows" -gt 1 ] && window=$(( (31 + windows - 1) / windows ))d
  cat >"$cfg" <<EOF
api:
  base_url: $base
  token_env: TALLY_BENCH_TOKEN
  concurrency: 4
usage:
  granularity: hour
  start: $month-01
  window: "$window"
store:
  path: fetch/tally.duckdb
reports:
  dir: reports
EOF
fi

if wants fetch; then
  echo "== fetch: DuckDB read_json (anchor) and tally fetch, alternating, $runs runs each"
  : >"$out/anchor.times"; : >"$out/fetch.times"; : >"$out/anchor.cpu"; : >"$out/fetch.cpu"; : >"$out/fetch.ratios"
  for i in $(seq "$runs"); do
    rm -f "$out/anchor.duckdb" "$out/anchor.duckdb.wal"
    a=$(measure "$out/anchor.log" "$out/benchtool" anchor -dir "$pages" -db "$out/anchor.duckdb")
    cpu "$out/anchor.log" >>"$out/anchor.cpu"
    f=$(fetch_once)
    cpu "$out/fetch.log" >>"$out/fetch.cpu"
    echo "$a" >>"$out/anchor.times"; echo "$f" >>"$out/fetch.times"
    ratio "$(tail -1 "$out/fetch.cpu")" "$(tail -1 "$out/anchor.cpu")" >>"$out/fetch.ratios"; echo >>"$out/fetch.ratios"
    echo "   run $i: anchor ${a% *} s ($(tail -1 "$out/anchor.cpu") s CPU), $(mb "${a#* }") MB   tally fetch ${f% *} s ($(tail -1 "$out/fetch.cpu") s CPU), $(mb "${f#* }") MB   CPU ratio $(tail -1 "$out/fetch.ratios")"
  done
  # CPU seconds (user + system) vary less than wall time when other work
  # shares the machine. They still drift by a tenth and more over minutes,
  # so each run's ratio is taken against the anchor run just before it,
  # and their median is printed beside the ratio of the medians.
  ac=$(median <"$out/anchor.cpu"); fc=$(median <"$out/fetch.cpu"); pr=$(median <"$out/fetch.ratios")
  at=$(cut -d' ' -f1 "$out/anchor.times" | median); ft=$(cut -d' ' -f1 "$out/fetch.times" | median)
  am=$(cut -d' ' -f2 "$out/anchor.times" | median); fm=$(cut -d' ' -f2 "$out/fetch.times" | median)
  fmax=$(cut -d' ' -f2 "$out/fetch.times" | sort -n | tail -1)
  {
    echo "fetch $rows rows ($sep separators, ${pairs:-default} pairs, pages of $page${content_length:+, Content-Length}): tally $ft s (peak $(mb "$fm") MB median, $(mb "$fmax") MB max), anchor read_json $at s (peak $(mb "$am") MB); time ratio $(ratio "$ft" "$at"); CPU $fc s against $ac s, ratio $(ratio "$fc" "$ac"), median of the runs' ratios $pr"
  } | tee -a "$results"
fi

if wants report; then
  if [ "$rows" -gt 1048575 ]; then
    echo "== report: skipped, $rows rows are more than one Detail sheet holds (the floor writes one sheet)"
  else
    [ -s "$out/fetch/tally.published.duckdb" ] && grep -q "^rows: $rows " "$out/fetch.log" 2>/dev/null || fetch_once >/dev/null
    echo "== report: excelize StreamWriter floor and tally report, alternating, $runs runs each"
    : >"$out/floor.times"; : >"$out/report.times"
    for i in $(seq "$runs"); do
      rm -f "$out/floor.xlsx" "$out/report.xlsx"
      fl=$(measure "$out/floor.log" "$out/benchtool" floor -dir "$pages" -out "$out/floor.xlsx")
      r=$(measure "$out/report.log" "$out/tally" report --config "$cfg" --month "$month" --out "$out/report.xlsx")
      echo "$fl" >>"$out/floor.times"; echo "$r" >>"$out/report.times"
      echo "   run $i: floor ${fl% *} s, $(mb "${fl#* }") MB   tally report ${r% *} s, $(mb "${r#* }") MB"
    done
    flt=$(cut -d' ' -f1 "$out/floor.times" | median); rt=$(cut -d' ' -f1 "$out/report.times" | median)
    flm=$(cut -d' ' -f2 "$out/floor.times" | median); rm_=$(cut -d' ' -f2 "$out/report.times" | median)
    rmax=$(cut -d' ' -f2 "$out/report.times" | sort -n | tail -1)
    echo "report $rows rows: tally $rt s (peak $(mb "$rm_") MB median, $(mb "$rmax") MB max), StreamWriter floor $flt s (peak $(mb "$flm") MB); time ratio $(ratio "$rt" "$flt")" | tee -a "$results"
  fi
fi

if wants scale; then
  echo "== scale: $months months of $rows rows a month against the month alone"
  rm -rf "$out/scale"; mkdir -p "$out/scale/base"
  sed "s#path: fetch/tally.duckdb#path: base/tally.duckdb#" "$cfg" >"$out/scale/base.yaml"
  (cd "$out/scale" && "$out/tally" fetch --config base.yaml --from "$month-01" --to 2026-02-01 --log-format json >base.log 2>&1) ||
    { echo "bench: the scale fixture's fetch failed; see $out/scale/base.log" >&2; exit 1; }
fi
stop_server

if wants scale; then
  cur=$(date -u +%Y-%m)
  start_server "$out/scale/serve.addr" -sim-start "$(date -u -d "$cur-01 - $months months" +%F)"
  : >"$out/scale/times"
  for m in 1 "$months"; do
    dir="$out/scale/m$m"
    rm -rf "$dir"; cp -r "$out/scale/base" "$dir"
    "$out/benchtool" history -db "$dir/tally.duckdb" -month "$month" -months "$m" 2>"$dir.history.log" ||
      { echo "bench: benchtool history failed; see $dir.history.log" >&2; exit 1; }
    first=$(date -u -d "$cur-01 - $((m - 1)) months" +%F)
    for b in plain budget; do
      cat >"$dir-$b.yaml" <<EOF
api:
  base_url: $(cat "$out/scale/serve.addr")
  token_env: TALLY_BENCH_TOKEN
usage:
  granularity: hour
  start: $first
store:
  path: m$m/tally.duckdb
reports:
  dir: m$m-reports
  months: [current] # the same work whatever the history: the month alone has no previous month
EOF
      if [ "$b" = budget ]; then
        cat >>"$dir-$b.yaml" <<EOF
budgets:
  - name: platform
    scope: all
    currency: USD
    amount: 5000
    actual: [80, 100]
    forecast: [100]
EOF
      fi
    done
    rec() { # rec NAME CMD...: one timing, recorded as "MONTHS NAME seconds kb"
      local name=$1; shift
      local r
      r=$(cd "$out/scale" && measure "$dir.${name// /_}.log" "$@")
      echo "$m $name $r" >>"$out/scale/times"
    }
    for i in $(seq "$runs"); do
      rec "report" "$out/tally" report --config "$dir-plain.yaml" --month "$cur" --out "$dir-plain.xlsx"
      rec "report+budget" "$out/tally" report --config "$dir-budget.yaml" --month "$cur" --out "$dir-budget.xlsx"
    done
    rec "status" "$out/tally" status --config "$dir-budget.yaml"
    rec "alerts --dry-run" "$out/tally" alerts --config "$dir-budget.yaml" --dry-run
    for v in sql/views/*.sql; do
      v=$(basename "$v" .sql)
      rec "view $v" "$out/tally" query --config "$dir-budget.yaml" "SELECT count(*) FROM $v"
    done
    for q in sql/queries/*.sql; do
      q=$(basename "$q" .sql)
      rec "query $q" "$out/tally" query --config "$dir-budget.yaml" --name "$q"
    done
    # Last: the nightly run fetches the lookback from the simulated interface
    # and so changes the store. The lake gets the whole history before it
    # and what the night changed after it.
    # The lake's first commit against the Parquet export of the same rows
    # (issue 41: at most 1.5x at one month of 1,000,000 hourly rows).
    rec "export parquet, whole" "$out/tally" export --config "$dir-budget.yaml" --format parquet --to "m$m-parquet"
    rec "export iceberg, whole" "$out/tally" export --config "$dir-budget.yaml" --format iceberg --to "m$m-lake"
    rec "nightly run" "$out/tally" run --config "$dir-budget.yaml" --log-format json
    rec "export iceberg, the night" "$out/tally" export --config "$dir-budget.yaml" --format iceberg --to "m$m-lake"
    grep -q "partition(s) replaced" "$dir.export_iceberg,_the_night.log" ||
      { echo "bench: the night's iceberg export committed nothing; see $dir.export_iceberg,_the_night.log" >&2; exit 1; }
  done
  stop_server
  # One line per work: the month alone, the months of history, the ratios.
  awk -v months="$months" -v rows="$rows" '
    { key = $2; for (i = 3; i < NF - 1; i++) key = key " " $i
      t = $(NF - 1); kb = $NF
      n[$1, key]++; s[$1, key, n[$1, key]] = t; k[$1, key, n[$1, key]] = kb
      if (!(key in seen)) { seen[key] = 1; order[++nk] = key } }
    function med(m, key,   c, i, j, a, tmp) {
      c = n[m, key]; for (i = 1; i <= c; i++) a[i] = s[m, key, i]
      for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { tmp = a[i]; a[i] = a[j]; a[j] = tmp }
      return a[int((c + 1) / 2)] }
    function maxkb(m, key,   c, i, x) { c = n[m, key]; x = 0; for (i = 1; i <= c; i++) if (k[m, key, i] > x) x = k[m, key, i]; return x }
    BEGIN { printf "scale: %d rows a month; %s months against 1 (seconds median, peak RSS MB max)\n", rows, months
            printf "%-40s %9s %8s %9s %8s %7s %7s\n", "work", "1 month", "MB", months " months", "MB", "time x", "mem x" }
    END { for (i = 1; i <= nk; i++) { key = order[i]
            a = med(1, key); b = med(months, key); am = maxkb(1, key) / 1024; bm = maxkb(months, key) / 1024
            printf "%-40s %9.2f %8.0f %9.2f %8.0f %7.2f %7.2f\n", key, a, am, b, bm, (a > 0 ? b / a : 0), (am > 0 ? bm / am : 0) } }
  ' "$out/scale/times" | tee -a "$results"
fi

if wants lake; then
  # Eight shards, each its own store, commit at once into one new catalog
  # (SQLite, then a PostgreSQL server the benchmark starts): every one must
  # land; the redos after lost races are reported per shard.
  echo "== lake: 8 shards committing at once, $runs rounds"
  go test ./export -run '^$' -bench ShardsCommitAtOnce -benchtime "${runs}x" -v 2>&1 |
    grep -E 'Benchmark|shards committed|FAIL|ok' | tee -a "$results"
fi

if wants incremental; then
  echo "== incremental: nightly tally run with two years and with two months loaded, $runs runs each"
  for days in 730 61; do
    start=$(date -u -d "today - $days days" +%F)
    dir="$out/inc-$days"
    rm -rf "$dir"; mkdir -p "$dir"
    start_server "$dir/serve.addr" -sim-start "$start"
    cat >"$dir/tally.yaml" <<EOF
api:
  base_url: $(cat "$dir/serve.addr")
  token_env: TALLY_BENCH_TOKEN
usage:
  granularity: hour
  start: $start
store:
  path: tally.duckdb
reports:
  dir: reports
  months: [previous, current]
EOF
    planned=$("$out/tally" plan --config "$dir/tally.yaml" --format json | grep -o '"start"' | wc -l)
    b=$(measure "$dir/backfill.log" "$out/tally" fetch --config "$dir/tally.yaml" --log-format json)
    breq=$(awk '/^rows:/ {print $4}' "$dir/backfill.log")
    brows=$(awk '/^rows:/ {print $2}' "$dir/backfill.log")
    # The fewest hour windows: 31 days each at most, from start to tomorrow.
    fewest=$(( (days + 1 + 30) / 31 ))
    : >"$dir/nightly.times"; : >"$dir/nightly.requests"
    for i in $(seq "$runs"); do
      n=$(measure "$dir/nightly-$i.log" "$out/tally" run --config "$dir/tally.yaml" --log-format json)
      echo "$n" >>"$dir/nightly.times"
      awk '/^rows:/ {print $4}' "$dir/nightly-$i.log" >>"$dir/nightly.requests"
    done
    nt=$(cut -d' ' -f1 "$dir/nightly.times" | median); nm=$(cut -d' ' -f2 "$dir/nightly.times" | median)
    nreq=$(median <"$dir/nightly.requests")
    echo "history $days days ($brows rows): backfill $breq usage requests for $planned planned windows (fewest possible $fewest), ${b% *} s; nightly run $nreq usage requests, $nt s, peak $(mb "$nm") MB (medians)" | tee -a "$results"
    stop_server
  done
fi

if wants orgs; then
  # Several organizations (issue 27): N simulated organizations behind one
  # address, each its own token and data, a day-granularity config listing
  # them all. The backfill loads each organization's history; a nightly
  # fetch then plans each organization's fewest windows (its lookback: one
  # window) and reads its reference data. Time should grow with the
  # organizations, not with their history; memory should stay flat.
  for norgs in 50 200; do
    for days in 30 120; do
      dir="$out/orgs-$norgs-$days"
      rm -rf "$dir"; mkdir -p "$dir"
      "$out/benchtool" orgs -n "$norgs" -days "$days" -dir "$dir" -addr-file "$dir/addr" >"$dir/serve.log" 2>&1 &
      server_pid=$!
      for _ in $(seq 100); do [ -s "$dir/addr" ] && break; sleep 0.1; done
      # shellcheck disable=SC1091
      . "$dir/tokens.env"
      b=$(measure "$dir/backfill.log" "$out/tally" fetch --config "$dir/tally.yaml" --log-format json)
      brows=$(awk '/^rows:/ {print $2}' "$dir/backfill.log")
      planned=$("$out/tally" plan --config "$dir/tally.yaml" --format json | grep -c '"organization"')
      n=$(measure "$dir/nightly.log" "$out/tally" fetch --config "$dir/tally.yaml" --log-format json)
      nreq=$(awk '/^rows:/ {print $4}' "$dir/nightly.log")
      echo "organizations $norgs, history $days days ($brows rows): backfill ${b% *} s, peak $(mb "${b#* }") MB; nightly fetch: $planned windows planned ($norgs organizations x 1, the fewest), $nreq requests (windows and each organization's reference data), ${n% *} s, peak $(mb "${n#* }") MB" | tee -a "$results"
      stop_server
    done
  done
fi

echo "== results ($results)"
cat "$results"
