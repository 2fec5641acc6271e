// Package quickstart holds the test that runs the README's Quickstart: the
// first shell block of its Quickstart section, extracted and run verbatim
// with bash -e at the root of the module, as a newcomer would run it in a
// fresh shell (TestQuickstart, Linux only: it looks for leftover processes
// in /proc).
package quickstart
