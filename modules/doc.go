// Package modules holds no code: it is the home of the Go tests for the Nix
// side of the project, the flake (flake.nix, with modules/package.nix,
// modules/checks.nix and modules/vllm.nix) and the NixOS module
// (modules/nixos), so that `go test ./...` checks them too.
//
// What runs, with nix-instantiate (Debian's nix-bin is enough) and nixpkgs'
// lib from VLLM_TIMINGS_NIXPKGS_LIB or ../shared/nixpkgs-lib (nixgen/nixtest;
// with CI=true a missing tool or lib is a failure, elsewhere a skip):
//   - every .nix file in the repository must pass `nix-instantiate --parse`;
//   - the module is evaluated with lib.evalModules by
//     modules/nixos/tests/eval.nix, every check in it must be true, and the
//     result must equal modules/nixos/tests/expected.json (-update rewrites
//     it);
//   - the module's strings and mkModel entries are compared with what the
//     built binary's `nix fragments` and `nix model` print for the same input.
//
// The flake's own checks (`nix flake check`) run the same eval.nix and
// expected.json, and also build the package; they need a full nixpkgs.
package modules
