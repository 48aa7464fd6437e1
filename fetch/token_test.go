package fetch

import (
	"encoding/base64"
	"testing"
	"time"
)

func jwt(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc([]byte(payload)) + "." + enc([]byte("signature"))
}

func TestTokenExpiry(t *testing.T) {
	exp := time.Date(2027, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		token string
		want  time.Time
		ok    bool
	}{
		{"JWT with exp", jwt(`{"sub":"u","org":"o","exp":1809172800}`), exp, true},
		{"exp as a float", jwt(`{"exp":1809172800.0}`), exp, true},
		{"JWT without exp", jwt(`{"sub":"u"}`), time.Time{}, false},
		{"exp not a number", jwt(`{"exp":"tomorrow"}`), time.Time{}, false},
		{"opaque token", "tok-S3CRET-5f3c9a1e77", time.Time{}, false},
		{"two parts", "a.b", time.Time{}, false},
		{"payload not base64", "a.@@@.c", time.Time{}, false},
		{"payload not JSON", "a." + base64.RawURLEncoding.EncodeToString([]byte("not json")) + ".c", time.Time{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := TokenExpiry(c.token)
			if ok != c.ok || !got.Equal(c.want) {
				t.Errorf("TokenExpiry = %v, %v; want %v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}
