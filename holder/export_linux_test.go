package holder

import (
	"net"
	"os"

	"github.com/airlock-sandbox/airlock/holder/step"
)

// RawStep sends, on c, the request of a step of session id that runs the
// shell script, with files as its pipes, as a client of its own making
// might, and returns the holder's error, "" for none (then once the step
// ran).
func RawStep(c *net.UnixConn, id, script string, files ...*os.File) (string, error) {
	req := request{Op: opStep, Step: &step.Request{Session: id, Tool: "shell", Argv: []string{"sh", "-c", script}}}
	if err := writeMsg(c, req, files...); err != nil {
		return "", err
	}
	var a step.Answer
	if _, err := readMsg(c, &a, maxResponse); err != nil || !a.Accepted {
		return a.Error, err
	}
	_, err := readMsg(c, &a, maxResponse)
	return a.Error, err
}

// PoolInfo asks the pool holder in dir about its pool.
func PoolInfo(dir string) (Info, error) {
	c, err := dial(dir, PoolID)
	if err != nil {
		return Info{}, err
	}
	return c.Info()
}
