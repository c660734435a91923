package policy_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/approval"
	"github.com/airlock-sandbox/airlock/policy"
)

func TestApprovalConfig(t *testing.T) {
	got := policy.Default().ApprovalConfig()
	if got.Decider != nil || got.TTL != approval.DefaultTTL || got.DeciderTimeout != approval.DefaultDeciderTimeout {
		t.Errorf("defaults: %+v", got)
	}
	l, err := policy.Load("testdata/approvals.json")
	if err != nil {
		t.Fatal(err)
	}
	want := policy.EffectiveApprovals{Decider: []string{"/usr/local/bin/decide", "--team", "infra"}, DeciderTimeout: 5 * time.Second, TTL: 10 * time.Minute}
	if got := l.ApprovalConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestApprovalsValidation(t *testing.T) {
	for _, c := range []struct{ section, want string }{
		{`{"decider": []}`, "approvals.decider: empty decider"},
		{`{"decider": ["decide"]}`, `decider "decide" is not a clean absolute path`},
		{`{"decider": ["/usr/bin/../bin/decide"]}`, "not a clean absolute path"},
		{`{"decider": ["/usr/bin/decide", "a\u0000b"]}`, "approvals.decider[1]: argument has a NUL byte"},
		{`{"ttlSeconds": 0}`, "ttlSeconds must be in (0, 86400]"},
		{`{"ttlSeconds": 86401}`, "ttlSeconds must be in (0, 86400]"},
		{`{"deciderTimeoutSeconds": 3601}`, "deciderTimeoutSeconds must be in (0, 3600]"},
	} {
		_, err := policy.Parse("p.json", []byte(`{"toolScopes": {}, "approvals": `+c.section+`}`))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "p.json:1:") {
			t.Errorf("%s: got %v, want an error at p.json:1 containing %q", c.section, err, c.want)
		}
	}
}
