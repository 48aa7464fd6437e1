package fetch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/tally-dev/tally"
)

// The fast JSON reader must give exactly what the careful decoder gives:
// the same rows, the same next link, the same error text, for any input.
// These tests run both over the same bytes and compare.

type pageResult struct {
	rows []tally.MeterData
	next string
	err  string
}

func readPage(r io.Reader, careful bool) pageResult {
	p := newUsagePage(context.Background(), io.NopCloser(r), nil, false)
	if careful {
		p.fast, p.env = nil, newEnvelope(r)
	}
	var res pageResult
	for range 1000 {
		md, ok, err := p.next()
		if err != nil {
			res.err = err.Error()
			return res
		}
		if !ok {
			res.next = p.nextLink()
			return res
		}
		res.rows = append(res.rows, md)
	}
	res.err = "too many rows"
	return res
}

// compareReaders reads body with the fast reader and the careful decoder,
// whole and in the chunks of each of splits, and fails on any difference.
func compareReaders(t *testing.T, body []byte, splits ...func(io.Reader) io.Reader) {
	t.Helper()
	want := readPage(bytes.NewReader(body), true)
	if got := readPage(bytes.NewReader(body), false); !reflect.DeepEqual(got, want) {
		t.Fatalf("fast and careful differ on %q:\nfast    %+v\ncareful %+v", body, got, want)
	}
	for i, split := range splits {
		if got := readPage(split(bytes.NewReader(body)), false); !reflect.DeepEqual(got, want) {
			t.Fatalf("split %d: fast and careful differ on %q:\nfast    %+v\ncareful %+v", i, body, got, want)
		}
	}
	// A connection that fails half way: the same read error, or the same
	// error of the answer before it.
	cut := func() io.Reader {
		return io.MultiReader(bytes.NewReader(body[:len(body)/2]), iotest.ErrReader(io.ErrClosedPipe))
	}
	if got, want := readPage(cut(), false), readPage(cut(), true); !reflect.DeepEqual(got, want) {
		t.Fatalf("cut: fast and careful differ on %q:\nfast    %+v\ncareful %+v", body, got, want)
	}
}

var scanSeedBodies = []string{
	`{"value":[` + fullRowJSON + `,` + fullRowJSON + `],"supplemental":{"records":2,"pagination":{"total":9}},"@odata.nextLink":"/next?a=1\u0026b=2"}`,
	`{"@odata.nextLink":"/p2","supplemental":{"x":[1,{"y":2}]},"value":[{"date":"2026-10-01","meterName":"m","cost":"1","currency":"EUR","quantity":1}]}`,
	`{"value":[{"quantity":3,"currency":"USD","cost":9.9,"meterName":"z","date":"2026-10-01T00:00:00+02:00","price":"1e3","unit":"caf\u00e9","project":"naïve"}]}`,
	`{"kind":"x","value":[{"extra":{"a":[1,2,{"b":null}]},"date":"2026-10-01T00:00:00Z","meterName":"m","more":[[]],"cost":"1","currency":"EUR","quantity":-0.5e-3,"flag":true}],"other":"y"}`,
	`{"value":null,"@odata.nextLink":null}`,
	` {"value":[]} `,
	`{"value":[{"date":"2026-02-30T00:00:00Z","meterName":"m","cost":"1","currency":"EUR","quantity":1}]}`,
	`{"value":[{"date":"2026-10-01T00:00:00Z","meterName":"m","cost":"1","currency":"EUR","quantity":1,"meterName":null}]}`,
	`{"value":[{"date":"2026-10-01T00:00:00Z","meterName":"m","cost":"123456789012345678901234.5","currency":"EUR","quantity":12345678901234567890}]}`,
}

func TestFastJSONMatchesCareful(t *testing.T) {
	for i, body := range scanSeedBodies {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			compareReaders(t, []byte(body), iotest.OneByteReader, iotest.HalfReader)
		})
	}
}

// Every cut, and every byte replaced by one that breaks or bends the
// syntax, of the seed bodies.
func TestFastJSONMatchesCarefulMutated(t *testing.T) {
	subs := []byte{'"', '\\', ',', ':', '}', ']', '{', '[', ' ', 'x', '0', '-', '.', 'e', 'n', 0x01, 0xff}
	seeds := append([]string{`{"value":[` + fullRowJSON + `],"supplemental":{"records":1},"@odata.nextLink":"/n\u0026x"}`}, scanSeedBodies[1:4]...)
	for i, seed := range seeds {
		body := []byte(seed)
		for n := 0; n <= len(body); n++ {
			compareReaders(t, body[:n], iotest.OneByteReader)
		}
		for pos := range body {
			for _, c := range subs {
				m := bytes.Clone(body)
				m[pos] = c
				compareReaders(t, m)
			}
			compareReaders(t, append(bytes.Clone(body[:pos]), body[pos+1:]...))
		}
		if t.Failed() {
			t.Fatalf("seed %d", i)
		}
	}
}

// A page of many rows, longer than the fast reader's buffer, with a row
// the fast reader does not take in the middle.
func TestFastJSONHandsOffMidPage(t *testing.T) {
	page := benchPageJSON(0, 500, "/next")
	odd := bytes.Replace(page, []byte(`"project":"project-1050"`), []byte(`"project":{"nested":true}`), 1)
	if bytes.Equal(odd, page) {
		t.Fatal("no row to bend")
	}
	for _, body := range [][]byte{page, odd, bytes.Replace(page, []byte(`"unit":"minutes"`), []byte(`"unit":"min\u00fctes"`), -1)} {
		compareReaders(t, body, iotest.OneByteReader, iotest.HalfReader)
	}
	if res := readPage(bytes.NewReader(page), false); len(res.rows) != 500 || res.next != "/next" || res.err != "" {
		t.Fatalf("rows %d next %q err %q", len(res.rows), res.next, res.err)
	}
	if res := readPage(bytes.NewReader(odd), false); !strings.Contains(res.err, `"project"`) || len(res.rows) != 300 {
		t.Fatalf("rows %d err %q, want 300 rows then the project's error", len(res.rows), res.err)
	}
}

func FuzzFastJSONMatchesCareful(f *testing.F) {
	for _, b := range scanSeedBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) { compareReaders(t, body, iotest.OneByteReader) })
}

// A syntax error deep in a page is placed at its byte of the answer, read
// fast up to the row and carefully from there.
func TestFastJSONSyntaxErrorAtItsByte(t *testing.T) {
	page := benchPageJSON(0, 300, "")
	at := bytes.Index(page, []byte(`"project":"project-1040"`)) + len(`"project":`)
	bad := bytes.Clone(page)
	bad[at] = '\\'
	for _, r := range []io.Reader{bytes.NewReader(bad), iotest.OneByteReader(bytes.NewReader(bad))} {
		res := readPage(r, false)
		want := fmt.Sprintf(`malformed JSON at byte %d, in field "project"`, at)
		if !strings.Contains(res.err, want) {
			t.Fatalf("err %q, want it to say %q", res.err, want)
		}
	}
}

// Pages as Python's json.dump writes them (", " and ": ", one line) and
// rows cycling through many project–meter pairs stay with the fast reader
// to the end, and read as the careful decoder reads them; a text holding a
// replacement character fails the same way whether or not its field's
// other texts were seen before.
func TestFastJSONTakesPythonLayoutAndManyPairs(t *testing.T) {
	for _, style := range []benchStyle{{python: true}, {pairs: 1360}, {pairs: 300, python: true}} {
		page := benchPageJSONStyle(0, 900, "/next", style)
		compareReaders(t, page, iotest.HalfReader)
		p := newUsagePage(context.Background(), io.NopCloser(bytes.NewReader(page)), nil, false)
		n := 0
		for {
			_, ok, err := p.next()
			if err != nil {
				t.Fatalf("%+v: %v", style, err)
			}
			if !ok {
				break
			}
			n++
		}
		if n != 900 || p.fast == nil || p.env != nil {
			t.Fatalf("%+v: %d rows, fast reader to the end %v, want 900 rows without a handoff", style, n, p.fast != nil && p.env == nil)
		}
		bad := bytes.Replace(page, []byte(`"project-1003"`), []byte("\"project-1003\uFFFD\""), 1)
		if bytes.Equal(bad, page) {
			t.Fatalf("%+v: no project to bend", style)
		}
		compareReaders(t, bad)
		if res := readPage(bytes.NewReader(bad), false); !strings.Contains(res.err, "project") {
			t.Fatalf("%+v: rows %d err %q, want the project's error", style, len(res.rows), res.err)
		}
	}
}
