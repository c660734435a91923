package payload

// The macOS battery's payloads (mac.go) are airlock's payloads on a Mac.
func init() {
	for name, f := range macPayloads {
		Register(name, f)
	}
}
