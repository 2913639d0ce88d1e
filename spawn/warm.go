package spawn

import "encoding/binary"

// StoredRecipe is the body of a stored recipe as the warm path reads it
// (warm.c's struct se_stored_head): the decision's filesystem dependencies
// (fsdeps' encoding), the recipe, and the service record Go serves the run
// from should the runner call on it, each 8-aligned.
func StoredRecipe(deps, recipe, record []byte) []byte {
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, uint32(len(deps)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(recipe)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(record)))
	b = binary.LittleEndian.AppendUint32(b, 0)
	for _, part := range [][]byte{deps, recipe, record} {
		for len(b)%8 != 0 {
			b = append(b, 0)
		}
		b = append(b, part...)
	}
	return b
}
