package initproc

import (
	"encoding/json"

	"github.com/airlock-sandbox/airlock/internal/rawtext"
)

// The JSON methods below send every string the init acts on as a
// rawtext string: encoding/json alone writes U+FFFD for each byte that is
// not UTF-8, so `/bin/echo $'\xff'` would run as `echo \ufffd` after the
// command gate decided on `\xff`, and two workspace names would collapse
// into one. Each shadows the struct's own members of the same JSON name
// (a shallower member wins), so the Go types keep plain strings.

// MarshalJSON writes c with its strings byte for byte.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	return json.Marshal(struct {
		plain
		Path      rawtext.String  `json:"path"`
		Tree      rawtext.String  `json:"tree,omitempty"`
		Args      rawtext.Strings `json:"args"`
		Env       rawtext.Strings `json:"env"`
		Dir       rawtext.String  `json:"dir"`
		Hostname  rawtext.String  `json:"hostname"`
		ReadOnly  rawtext.Strings `json:"readOnly"`
		ReadWrite rawtext.Strings `json:"readWrite"`
		Hide      rawtext.Strings `json:"hide"`
		RootPath  rawtext.String  `json:"rootPath,omitempty"`
		Network   rawtext.String  `json:"network,omitempty"`
	}{plain(c), rawtext.String(c.Path), rawtext.String(c.Tree), c.Args, c.Env, rawtext.String(c.Dir), rawtext.String(c.Hostname),
		c.ReadOnly, c.ReadWrite, c.Hide, rawtext.String(c.RootPath), rawtext.String(c.Network)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config
	return json.Unmarshal(b, &struct {
		*plain
		Path      *rawtext.String  `json:"path"`
		Tree      *rawtext.String  `json:"tree,omitempty"`
		Args      *rawtext.Strings `json:"args"`
		Env       *rawtext.Strings `json:"env"`
		Dir       *rawtext.String  `json:"dir"`
		Hostname  *rawtext.String  `json:"hostname"`
		ReadOnly  *rawtext.Strings `json:"readOnly"`
		ReadWrite *rawtext.Strings `json:"readWrite"`
		Hide      *rawtext.Strings `json:"hide"`
		RootPath  *rawtext.String  `json:"rootPath,omitempty"`
		Network   *rawtext.String  `json:"network,omitempty"`
	}{(*plain)(c), (*rawtext.String)(&c.Path), (*rawtext.String)(&c.Tree), (*rawtext.Strings)(&c.Args), (*rawtext.Strings)(&c.Env),
		(*rawtext.String)(&c.Dir), (*rawtext.String)(&c.Hostname), (*rawtext.Strings)(&c.ReadOnly),
		(*rawtext.Strings)(&c.ReadWrite), (*rawtext.Strings)(&c.Hide), (*rawtext.String)(&c.RootPath),
		(*rawtext.String)(&c.Network)})
}

// MarshalJSON writes e with its strings byte for byte.
func (e ExecStep) MarshalJSON() ([]byte, error) {
	type plain ExecStep
	return json.Marshal(struct {
		plain
		Path rawtext.String  `json:"path"`
		Tree rawtext.String  `json:"tree,omitempty"`
		Args rawtext.Strings `json:"args"`
		Env  rawtext.Strings `json:"env"`
		Dir  rawtext.String  `json:"dir"`
	}{plain(e), rawtext.String(e.Path), rawtext.String(e.Tree), e.Args, e.Env, rawtext.String(e.Dir)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *ExecStep) UnmarshalJSON(b []byte) error {
	type plain ExecStep
	return json.Unmarshal(b, &struct {
		*plain
		Path *rawtext.String  `json:"path"`
		Tree *rawtext.String  `json:"tree,omitempty"`
		Args *rawtext.Strings `json:"args"`
		Env  *rawtext.Strings `json:"env"`
		Dir  *rawtext.String  `json:"dir"`
	}{(*plain)(e), (*rawtext.String)(&e.Path), (*rawtext.String)(&e.Tree), (*rawtext.Strings)(&e.Args), (*rawtext.Strings)(&e.Env), (*rawtext.String)(&e.Dir)})
}

// MarshalJSON writes m with the path a step runs byte for byte (a
// workspace program's name is the agent's).
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	return json.Marshal(struct {
		plain
		Path rawtext.String `json:"path,omitempty"`
	}{plain(m), rawtext.String(m.Path)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (m *Message) UnmarshalJSON(b []byte) error {
	type plain Message
	return json.Unmarshal(b, &struct {
		*plain
		Path *rawtext.String `json:"path,omitempty"`
	}{(*plain)(m), (*rawtext.String)(&m.Path)})
}

// MarshalJSON writes b with its paths byte for byte.
func (b Bind) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Host   rawtext.String `json:"Host"`
		Inside rawtext.String `json:"Inside"`
	}{rawtext.String(b.Host), rawtext.String(b.Inside)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (b *Bind) UnmarshalJSON(data []byte) error {
	return json.Unmarshal(data, &struct {
		Host   *rawtext.String `json:"Host"`
		Inside *rawtext.String `json:"Inside"`
	}{(*rawtext.String)(&b.Host), (*rawtext.String)(&b.Inside)})
}

// MarshalJSON writes e with its name and link target byte for byte.
func (e Entry) MarshalJSON() ([]byte, error) {
	type plain Entry
	return json.Marshal(struct {
		plain
		Type rawtext.String `json:"type"`
		Name rawtext.String `json:"name"`
		Link rawtext.String `json:"link,omitempty"`
	}{plain(e), rawtext.String(e.Type), rawtext.String(e.Name), rawtext.String(e.Link)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *Entry) UnmarshalJSON(b []byte) error {
	type plain Entry
	return json.Unmarshal(b, &struct {
		*plain
		Type *rawtext.String `json:"type"`
		Name *rawtext.String `json:"name"`
		Link *rawtext.String `json:"link,omitempty"`
	}{(*plain)(e), (*rawtext.String)(&e.Type), (*rawtext.String)(&e.Name), (*rawtext.String)(&e.Link)})
}
