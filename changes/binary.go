package changes

import (
	"bytes"
	"compress/zlib"
	"strconv"
)

// Git's binary patch, written by hand: git apply reads a "literal" hunk
// as zlib-deflated content in git's own base85 (base85.c: its alphabet,
// big-endian groups of four bytes, no 'z' shorthand — not
// encoding/ascii85's), in lines of at most 52 bytes, each led by its
// length ('A'..'Z' for 1..26, 'a'..'z' for 27..52). No Go library writes
// it. Only literal hunks are written, never git's delta hunks, which git
// apply reads just as well.

// base85 is git's alphabet.
const base85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

// encode85 appends git's base85 of data (at most 52 bytes: one line's) to
// b: five characters per group of four bytes, the last group padded with
// zeros.
func encode85(b *bytes.Buffer, data []byte) {
	for len(data) > 0 {
		var acc uint32
		for i := 0; i < 4; i++ {
			acc <<= 8
			if i < len(data) {
				acc |= uint32(data[i])
			}
		}
		var out [5]byte
		for i := 4; i >= 0; i-- {
			out[i] = base85[acc%85]
			acc /= 85
		}
		b.Write(out[:])
		data = data[min(4, len(data)):]
	}
}

// writeLiteral appends one "literal" hunk of content to b.
func writeLiteral(b *bytes.Buffer, content []byte) error {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	if _, err := zw.Write(content); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	b.WriteString("literal ")
	b.WriteString(strconv.Itoa(len(content)))
	b.WriteByte('\n')
	data := z.Bytes()
	for len(data) > 0 {
		n := min(52, len(data))
		if n <= 26 {
			b.WriteByte(byte('A' + n - 1))
		} else {
			b.WriteByte(byte('a' + n - 27))
		}
		encode85(b, data[:n])
		b.WriteByte('\n')
		data = data[n:]
	}
	b.WriteByte('\n')
	return nil
}

// writeBinary appends a GIT binary patch from old to new to b: the
// forward hunk, and the reverse one when reverse is set (git apply -R
// needs it; git apply does not).
func writeBinary(b *bytes.Buffer, old, new []byte, reverse bool) error {
	b.WriteString("GIT binary patch\n")
	if err := writeLiteral(b, new); err != nil {
		return err
	}
	if reverse {
		return writeLiteral(b, old)
	}
	return nil
}
