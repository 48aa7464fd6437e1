package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tally-dev/tally"
)

// A group serves each organization's own data to its own token, refuses a
// token of none (401) and a request naming another organization's payment
// method (403), and its organizations' usage differs.
func TestGroupServesEachOrganizationToItsToken(t *testing.T) {
	start := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return time.Date(2026, 10, 15, 0, 0, 0, 0, time.UTC) }
	north := New(Options{Token: "tok-north", Seed: 11, Start: start, Now: now, OrgName: "Media North"})
	south := New(Options{Token: "tok-south", Seed: 12, Start: start, Now: now, OrgName: "Media South"})
	g, err := NewGroup(north, south)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewGroup(north, New(Options{Token: "tok-north", Seed: 13})); err == nil {
		t.Fatal("two organizations with one token were grouped")
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	get := func(token, path string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/"+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %q is not JSON", path, b)
		}
		return resp.StatusCode, v
	}
	for _, o := range []*Server{north, south} {
		code, v := get(o.Token(), "organization")
		md, _ := v["metadata"].(map[string]any)
		if code != 200 || md["name"] != o.OrgName() || md["id"] != o.OrgID() {
			t.Fatalf("organization for %s: %d %v", o.OrgName(), code, v)
		}
		code, v = get(o.Token(), "organization/paymentMethods")
		items, _ := v["value"].([]any)
		if code != 200 || len(items) == 0 {
			t.Fatalf("payment methods for %s: %d %v", o.OrgName(), code, v)
		}
		other := south
		if o == south {
			other = north
		}
		if raw, _ := json.Marshal(v); !strings.Contains(string(raw), o.OrgID()) || strings.Contains(string(raw), other.OrgID()) {
			t.Errorf("%s's payment methods do not name its own organization alone:\n%s", o.OrgName(), raw)
		}
	}
	if north.OrgID() == south.OrgID() {
		t.Fatal("the two organizations share an id")
	}
	if code, _ := get("tok-nobody", "organization"); code != http.StatusUnauthorized {
		t.Errorf("a token of no organization: %d, want 401", code)
	}
	southPM := south.cat.pms[0].id
	code, v := get(north.Token(), "organization/paymentMethods/"+southPM+"/rateCard")
	e, _ := v["error"].(map[string]any)
	if code != http.StatusForbidden || !strings.Contains(e["detail"].(string), "Media North") {
		t.Errorf("north's token on south's rate card: %d %v, want 403 naming the token's organization", code, v)
	}
	q := tally.UsageQuery{Window: tally.Window{Start: start, End: start.AddDate(0, 1, 0), Granularity: tally.Day}}
	if a, b := north.Truth(q), south.Truth(q); a.Rows == 0 || b.Rows == 0 || sameCost(a.Cost, b.Cost) {
		t.Errorf("the organizations' usage does not differ: %v and %v", a.Cost, b.Cost)
	}
}
