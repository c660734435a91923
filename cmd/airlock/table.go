package main

import (
	"io"
	"strings"
	"unicode/utf8"
)

// table lays text out in columns, as text/tabwriter does, but measures
// each cell by what it shows: a cell's colour is applied after its
// padding, so that escape sequences never count toward a column's width
// (tabwriter counts their bytes, and a coloured column goes out of line).
// Cells are shown as given: escape what the agent chose first.
type table struct {
	rows [][]cell
}

// cell is one cell of a table: its text and its SGR colour ("32", "31;1"),
// "" for none.
type cell struct {
	text, colour string
}

// paint is s in the SGR colour code ("" for none), when colour is true.
func paint(colour bool, code, s string) string {
	if !colour || code == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// plain is a row of cells without colour.
func plain(texts ...string) []cell {
	row := make([]cell, len(texts))
	for i, t := range texts {
		row[i] = cell{text: t}
	}
	return row
}

func (t *table) add(row []cell) { t.rows = append(t.rows, row) }

// write prints the table to w, columns gap spaces apart; the last cell of
// a row is not padded. With colour false, colours are left out.
func (t *table) write(w io.Writer, gap int, colour bool) error {
	var widths []int
	for _, row := range t.rows {
		for i, c := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c.text))
		}
	}
	var b strings.Builder
	for _, row := range t.rows {
		for i, c := range row {
			b.WriteString(paint(colour, c.colour, c.text))
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.text)+gap))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
