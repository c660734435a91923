package changes

import (
	"encoding/json"

	"github.com/airlock-sandbox/airlock/internal/rawtext"
)

// fileChangeJSON is FileChange's JSON form: its path names (and the reason
// for an omission, which may quote one) carried byte for byte, a plain
// JSON string when valid UTF-8 and {"base64":"…"} otherwise
// (docs/changes.md, "The manifest"). The shallower fields win over the
// embedded struct's of the same name, and keep FileChange's order.
type fileChangeJSON struct {
	Path    rawtext.String `json:"path"`
	OldPath rawtext.String `json:"oldPath,omitempty"`
	fileChangeFields
	Omitted rawtext.String `json:"omitted,omitempty"`
}

// fileChangeFields is FileChange without its methods.
type fileChangeFields FileChange

// MarshalJSON writes f with its names byte for byte: a path that is not
// valid UTF-8 is {"base64":"…"}, never U+FFFD.
func (f FileChange) MarshalJSON() ([]byte, error) {
	return json.Marshal(fileChangeJSON{rawtext.String(f.Path), rawtext.String(f.OldPath), fileChangeFields(f), rawtext.String(f.Omitted)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (f *FileChange) UnmarshalJSON(b []byte) error {
	return json.Unmarshal(b, &struct {
		Path    *rawtext.String `json:"path"`
		OldPath *rawtext.String `json:"oldPath,omitempty"`
		*fileChangeFields
		Omitted *rawtext.String `json:"omitted,omitempty"`
	}{(*rawtext.String)(&f.Path), (*rawtext.String)(&f.OldPath), (*fileChangeFields)(f), (*rawtext.String)(&f.Omitted)})
}
