package holder

import (
	"net"
	"os"

	"github.com/airlock-sandbox/airlock/internal/rawtext"
)

// RawExec sends, on c, an exec request for the shell script with files
// as its four pipes, as a client of its own making might, and returns
// the holder's error, "" for none.
func RawExec(c *net.UnixConn, script string, files ...*os.File) (string, error) {
	req := request{Op: opExec, Exec: &execRequest{Tool: "shell", Command: "sh", Args: rawtext.Strings{"-c", script}}}
	if err := writeMsg(c, req, files...); err != nil {
		return "", err
	}
	var resp response
	_, err := readMsg(c, &resp, maxResponse)
	return resp.Error, err
}
