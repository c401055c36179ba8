// Package house checks the house rules of docs/CONTRIBUTING.md over the
// whole module: the layering of imports, the size of files, and that
// docs/ARCHITECTURE.md names every package. It holds tests only; each
// test logs the figure it checks (go test -v), so that the review figures
// of docs/CONTRIBUTING.md are commands anyone can rerun.
package house
