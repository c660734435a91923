package selftest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// planFindingsHooks: the payload leaves a git hook, a setuid script and a
// bare repository's shape in /findings. On the host nothing may come out
// executable, setuid or setgid, nothing named .git, and no HEAD beside
// objects and refs: git run in the findings directory must find no
// repository whose hooks or config it would run (docs/sandbox.md,
// "Findings").
func planFindingsHooks(fx *fixtures) (*plan, error) {
	out, err := fx.dir("findings")
	if err != nil {
		return nil, err
	}
	req := payloadRequest(toolPayload, taskNone, "findings-hooks")
	req.Findings = out
	return &plan{req: req, judge: func(o *observation) verdict {
		if _, v := ran(o); v != nil {
			return *v
		}
		var bad []string
		files := 0
		err := filepath.Walk(out, func(p string, fi os.FileInfo, err error) error {
			if err != nil || p == out {
				return err
			}
			rel, _ := filepath.Rel(out, p)
			switch {
			case strings.EqualFold(fi.Name(), ".git"):
				bad = append(bad, rel+" is named .git")
			case fi.Name() == "HEAD" && filepath.Base(filepath.Dir(p)) == "bare":
				bad = append(bad, rel+" makes a bare repository")
			case fi.Mode().IsRegular() && fi.Mode()&(0o111|os.ModeSetuid|os.ModeSetgid) != 0:
				bad = append(bad, fmt.Sprintf("%s has mode %v", rel, fi.Mode()))
			}
			if fi.Mode().IsRegular() {
				files++
			}
			return nil
		})
		switch {
		case err != nil:
			return broken("read the findings: " + err.Error())
		case len(bad) > 0:
			return escaped(strings.Join(bad, "; "))
		case files != 3:
			return broken(fmt.Sprintf("the findings hold %d files, want the hook, the script and HEAD, renamed as data", files))
		case o.res.ExitCode != 0:
			return broken(fmt.Sprintf("the run exited %d: a rename or a mode change is not a loss", o.res.ExitCode))
		}
		return contained(fmt.Sprintf("copied as data: no exec or set-id bit, .git and HEAD renamed (%d notes in findingsSkipped)", len(o.res.FindingsSkipped)))
	}}, nil
}
