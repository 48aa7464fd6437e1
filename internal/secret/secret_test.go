package secret

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// TestRedactForms registers a password, a token and a webhook address and
// looks for each in every form a peer may echo it, inside longer text.
func TestRedactForms(t *testing.T) {
	const pw = `s3cr3t-P@ss/word"x`
	const tok = "tok_Abc123XYZ.payload.sig"
	const hook = "https://hooks.example.com/services/T0001/B0002/AbCdEfGhIjKlMnOp?key=QwErTy12345"
	Register(pw, tok)
	RegisterURL(hook)
	u, _ := url.Parse(hook)
	var forms []string
	for _, s := range []string{pw, tok, u.Path, u.RawQuery, "QwErTy12345"} {
		forms = append(forms, s, strings.ToUpper(s), strings.ToLower(s), swapCase(s),
			url.QueryEscape(s), url.PathEscape(s), percentAll(s),
			base64.StdEncoding.EncodeToString([]byte(s)), base64.URLEncoding.EncodeToString([]byte(s)))
		j, _ := json.Marshal(s)
		forms = append(forms, string(j))
		// AUTH PLAIN with user names of each length modulo 3.
		for _, user := range []string{"u", "us", "use"} {
			forms = append(forms, base64.StdEncoding.EncodeToString([]byte("\x00"+user+"\x00"+s)))
		}
	}
	for _, f := range forms {
		text := "535 5.7.8 authentication failed for <" + f + "> please retry"
		got := Redact(text)
		for _, s := range []string{pw, tok, u.Path, u.RawQuery} {
			if strings.Contains(strings.ToLower(got), strings.ToLower(s)) {
				t.Errorf("Redact(%q) = %q: still holds %q", text, got, s)
			}
		}
		if !strings.Contains(got, Mask) || !strings.HasPrefix(got, "535 5.7.8 authentication failed for <") {
			t.Errorf("Redact(%q) = %q: want the text around the secret kept and %s in its place", text, got, Mask)
		}
		for _, s := range []string{pw, "QwErTy12345"} {
			b := base64.StdEncoding.EncodeToString([]byte(s))
			if strings.Contains(got, b[:len(b)-4]) {
				t.Errorf("Redact(%q) = %q: still holds base64 of %q", text, got, s)
			}
		}
	}
	if got := Redact("unknown key AbCdEfGhIjKlMnOp"); got != "unknown key "+Mask {
		t.Errorf("a path segment alone: %q", got)
	}
	if got := Redact("nothing to hide here: hooks.example.com/services"); got != "nothing to hide here: hooks.example.com/services" {
		t.Errorf("Redact changed innocent text: %q", got)
	}
}

func TestValueNeverFormats(t *testing.T) {
	v := New("value-that-is-secret")
	for _, s := range []string{fmt.Sprint(v), fmt.Sprintf("%v %s %q %+v %#v %x", v, v, v, v, v, v), fmt.Sprint(struct{ V Value }{v})} {
		if strings.Contains(s, "value-that-is-secret") {
			t.Errorf("formatted Value shows the secret: %s", s)
		}
	}
	if b, _ := json.Marshal(struct{ V Value }{v}); strings.Contains(string(b), "value-that") {
		t.Errorf("JSON of a Value shows the secret: %s", b)
	}
	if v.Reveal() != "value-that-is-secret" {
		t.Errorf("Reveal = %q", v.Reveal())
	}
}

func TestWriter(t *testing.T) {
	Register("writer-secret-42")
	var b strings.Builder
	w := Writer(&b)
	n, err := w.Write([]byte(`{"error":"denied for writer-secret-42"}` + "\n"))
	if err != nil || n != 40 {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if strings.Contains(b.String(), "writer-secret-42") || !strings.Contains(b.String(), Mask) {
		t.Errorf("Writer wrote %q", b.String())
	}
}

func swapCase(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = c - 32
		case 'A' <= c && c <= 'Z':
			b[i] = c + 32
		}
	}
	return string(b)
}

// BenchmarkRedactLogLine is the cost the redaction step adds to one JSON
// log line with five secrets registered: go test -bench RedactLogLine
// ./internal/secret.
func BenchmarkRedactLogLine(b *testing.B) {
	Register("bench-token-0123456789abcdef", "bench-smtp-pass", "bench-hook-secret")
	RegisterURL("https://hooks.example.com/services/T1/B2/benchpathsecret?key=benchkey123")
	line := `{"level":"debug","run_id":"01a21421-c9de-7d72-9af8-beb7aa32012d","method":"POST","url":"https://app.mk.io/api/v1/organization/reports/usage","status":200,"took":"412ms","time":"2026-11-25T19:14:50Z","message":"request done"}` + "\n"
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		Redact(line)
	}
}

// A webhook whose path is a word (/hook, /alerts) keeps its path secret
// where a peer echoes it, and leaves the words of Tally's own messages
// alone: "webhook" never becomes "web[redacted]".
func TestRedactKeepsOrdinaryWords(t *testing.T) {
	RegisterURL("https://receiver.example.com/hook")
	RegisterURL("http://127.0.0.1:9099/alerts")
	for _, text := range []string{
		"alerts not sent to webhook: receiver answered 500",
		"a webhook hooks into the alerts step",
	} {
		if got := Redact(text); got != text {
			t.Errorf("Redact(%q) = %q: an ordinary word was taken for a secret", text, got)
		}
	}
	got := Redact("POST https://receiver.example.com/hook: 404 no route /hook")
	if strings.Contains(got, "/hook") {
		t.Errorf("the webhook's path is still shown: %q", got)
	}
}
