package cgroups

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && os.Geteuid() == 0 {
		if left := leftovers(); len(left) > 0 {
			fmt.Fprintln(os.Stderr, "cgroups: the tests left cgroups behind:", left)
			code = 1
		}
	}
	os.Exit(code)
}

// leftovers lists groups named after this test process in the default
// parents.
func leftovers() []string {
	h, err := Detect()
	if err != nil {
		return nil
	}
	prefix := NamePrefix + strconv.Itoa(os.Getpid()) + "-"
	var parents []string
	if h.V2 != nil {
		if p, err := PlaceV2(h.V2, "", os.Geteuid()); err == nil {
			parents = append(parents, p.Parent)
		}
	}
	for i := range h.V1 {
		if p, err := h.V1[i].Dir(h.V1[i].Own); err == nil {
			parents = append(parents, p)
		}
	}
	var left []string
	for _, p := range parents {
		ents, _ := os.ReadDir(p)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix) {
				left = append(left, p+"/"+e.Name())
			}
		}
	}
	return left
}
