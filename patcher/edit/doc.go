// Package edit is the patcher's text layer: edits as values, the marker
// comments that wrap every inserted block, and the edits of the older
// patch_timings scripts.
//
// An Edit replaces a byte range; Apply applies a list of them and refuses
// overlaps. Insertion renders code as a marked block, Blocks finds the
// marked blocks of a file and Strip removes them, so that planning always
// starts from the file as vLLM shipped it. Owned and WithHeader are the
// header of the files the patcher creates. HasLegacy and RemoveLegacy
// recognise and remove, exactly, what the older scripts inserted
// (legacy.go says how). Nothing here reads or writes a file.
package edit
