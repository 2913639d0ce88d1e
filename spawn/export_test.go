package spawn

// The C recipe lookup for the external tests (recipestore_test.go, package
// spawn_test: they use runstate, which uses this package).
var (
	LookupRecipeC  = lookupRecipeC
	SetRecipeBaseC = setRecipeBaseC
)
