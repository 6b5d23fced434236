package docs

import (
	"fmt"
	"io"
	"strings"

	"github.com/airgap/airgap/dist"
)

// MaxTerminalPage bounds the bytes of a page 'airgap docs' prints.
const MaxTerminalPage = 4 << 20

// printable is text from a bundle made safe for a terminal: tabs become
// spaces, and every other control or format character, and invalid
// UTF-8, is shown escaped (dist.PrintableLines), so a page cannot move
// the cursor, set the title or hide text.
func printable(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\t", "    ")
	return dist.PrintableLines(s)
}

// WriteList writes the pages of a docs tar by category, one a line, as
// 'airgap docs ADDRESS' prints them: the names to give it.
func WriteList(w io.Writer, ix *Index) {
	for _, c := range Categories {
		pages := ix.Pages(c.Name)
		if len(pages) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s (%d):\n", c.Title, len(pages))
		for _, e := range pages {
			fmt.Fprintf(w, "  %s/%s\n", c.Name, printable(e.Name))
		}
	}
}

// WritePage writes a page for a terminal: its title and subcategory from
// the front matter, then its markdown, escaped (printable).
func WritePage(w io.Writer, src []byte) {
	fm, body := SplitFrontMatter(src)
	if fm.Title != "" {
		fmt.Fprintf(w, "%s\n", printable(fm.Title))
	}
	if fm.Subcategory != "" {
		fmt.Fprintf(w, "(%s)\n", printable(fm.Subcategory))
	}
	if fm.Title != "" || fm.Subcategory != "" {
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, strings.TrimRight(printable(string(body)), "\n"))
}

// WriteModule writes a module's documentation for a terminal: README,
// then inputs, outputs, required providers and submodules.
func WriteModule(w io.Writer, md *dist.ModuleDocs) {
	q := printable
	if md.Readme != "" {
		fmt.Fprintln(w, strings.TrimRight(q(md.Readme), "\n"))
		fmt.Fprintln(w)
	}
	writeInputs(w, "Inputs", md.Inputs)
	writeOutputs(w, "Outputs", md.Outputs)
	if len(md.Providers) > 0 {
		fmt.Fprintf(w, "Required providers (%d):\n", len(md.Providers))
		for _, p := range md.Providers {
			fmt.Fprintf(w, "  %s  %s %s\n", q(p.Name), q(p.Source), q(p.Versions))
		}
	}
	for _, s := range md.Submodules {
		fmt.Fprintf(w, "\nSubmodule %s\n", q(s.Path))
		writeInputs(w, "  Inputs", s.Inputs)
		writeOutputs(w, "  Outputs", s.Outputs)
	}
}

func writeInputs(w io.Writer, title string, ins []dist.ModuleInput) {
	fmt.Fprintf(w, "%s (%d):\n", title, len(ins))
	for _, in := range ins {
		def := "required"
		if !in.Required {
			def = "default " + in.Default
		}
		fmt.Fprintf(w, "  %s  %s, %s\n", printable(in.Name), printable(cmpOr(in.Type, "any")), printable(def))
		if in.Description != "" {
			fmt.Fprintf(w, "      %s\n", strings.ReplaceAll(printable(in.Description), "\n", "\n      "))
		}
	}
}

func writeOutputs(w io.Writer, title string, outs []dist.ModuleOutput) {
	fmt.Fprintf(w, "%s (%d):\n", title, len(outs))
	for _, o := range outs {
		fmt.Fprintf(w, "  %s\n", printable(o.Name))
		if o.Description != "" {
			fmt.Fprintf(w, "      %s\n", strings.ReplaceAll(printable(o.Description), "\n", "\n      "))
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
