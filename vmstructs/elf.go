package vmstructs

import (
	"fmt"
	"io"

	"github.com/jvmkit/jvmkit/internal/elfsym"
)

// libSymbols reads libjvm's dynamic symbols and, with data, the data symbols of its .symtab (libjvm's
// tables are all exported; .symtab is read lazily, when a name is missing: see JVM.moreSyms).
func libSymbols(r io.ReaderAt, data bool) (*elfsym.File, map[string]uint64, error) {
	f, err := elfsym.Open(r)
	if err != nil {
		return nil, nil, fmt.Errorf("vmstructs: %w", err)
	}
	syms, err := f.Symbols(data)
	if err != nil {
		return nil, nil, fmt.Errorf("vmstructs: %w", err)
	}
	return f, syms, nil
}
